import { describe, expect, it } from "vitest";
import { libp2pSeam, realTimers, seededRandom, type Libp2pSeam } from "../src/index.ts";
import { startLibp2pSeams, sleep } from "@heddle/seam/testing";
import { conserved, randomMutation } from "./libp2p-peers.ts";
import { replicaOn, simGenesis, type SeamReplica } from "./replication-sim.ts";

async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(50);
  }
}

describe("replication over real libp2p on 127.0.0.1 (in one process)", () => {
  it("5 peers converge after concurrent mutations, and again after one peer is stopped and restarted with the same key", async () => {
    const { seams, keys } = await startLibp2pSeams(5);
    const ids = seams.map((s) => s.self);
    const genesis = simGenesis(ids);
    const start = (seam: Libp2pSeam, k: number, incarnation = 1, initial = genesis) =>
      replicaOn(seam, { genesis, initial, incarnation, timers: realTimers, random: seededRandom(50 + k), config: { antiEntropyIntervalMs: 250 } });
    const all: { seam: Libp2pSeam; peer: SeamReplica }[] = seams.map((seam, k) => ({ seam, peer: start(seam, k) }));
    const equal = () => all.every((p) => p.peer.ledger.get().equals(all[0]!.peer.ledger.get()));
    try {
      await until(() => seams.every((s) => s.peers.get().size === 4), "full mesh");
      const rnd = seededRandom(77);
      let spent = 0n;
      for (let round = 0; round < 30; round++) {
        for (const p of all) spent += randomMutation(p.peer, rnd);
        await sleep(5);
      }
      await until(equal, "convergence after concurrent mutations");
      let l = all[0]!.peer.ledger.get();
      expect(l.validate()).toEqual([]);
      expect(conserved(l)).toBe(true);
      expect(l.leafSpentTotal()).toBe(spent);

      // Stop peer 4, keep mutating elsewhere, restart it from its saved state with the same key.
      const saved = all[4]!.peer.ledger.get();
      await all[4]!.peer.shutdown();
      await all[4]!.seam.close();
      for (let round = 0; round < 20; round++) for (const p of all.slice(0, 4)) spent += randomMutation(p.peer, rnd);
      const seam = await libp2pSeam({
        privateKey: keys[4]!, listen: ["/ip4/127.0.0.1/tcp/0"], roster: all.slice(0, 4).map((p) => ({ id: p.seam.self, addrs: p.seam.addrs() })),
        allowOnlyRoster: true, timers: realTimers, random: seededRandom(99), redialMinMs: 100, redialMaxMs: 1_000,
      });
      expect(seam.self).toBe(ids[4]);
      const peer = start(seam, 9, 2, saved);
      all[4] = { seam, peer };
      for (let round = 0; round < 10; round++) for (const p of all) spent += randomMutation(p.peer, rnd);
      await until(equal, "convergence after restart");
      l = all[0]!.peer.ledger.get();
      expect(l.validate()).toEqual([]);
      expect(conserved(l)).toBe(true);
      expect(l.leafSpentTotal()).toBe(spent);
      for (const p of all) expect(p.peer.rejections.total()).toBe(0);
    } finally {
      for (const p of all) {
        await p.peer.shutdown();
        await p.seam.close();
      }
    }
  });
});
