import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { heddleStatic, libp2pSeam, loadOrCreatePeerKey, peerIdOf, realTimers, seededRandom, sqliteStore, type HeddleNode, type Libp2pSeam } from "../src/index.ts";
import { startLibp2pSeams, sleep } from "@heddle/seam/testing";
import { FLAT, HUNGRY, conservation, e, g } from "./node-sim.ts";

async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(50);
  }
}

const config = (k: number, store: ReturnType<typeof sqliteStore>) => ({
  policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers: realTimers, random: seededRandom(240 + k), store, antiEntropyIntervalMs: 200,
});

describe("node.md §16 A24 over libp2p on 127.0.0.1 (the seam conformance suite runs in packages/seam/test)", () => {
  it("A24 A2 and A12 over three in-process libp2p seams, then one crash-restart with the same key and SQLite store", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-a24-"));
    const { seams, keys } = await startLibp2pSeams(3);
    const ids = seams.map((s) => s.self);
    const supply = new Map(ids.map((id) => [ReplicaId(id), 100n]));
    const start = (seam: Libp2pSeam, k: number) =>
      heddleStatic({ seam, self: ReplicaId(seam.self), root: GroupId("root"), supply, topology: FLAT, config: config(k, sqliteStore(join(dir, `${k}.db`))) });
    const all: { seam: Libp2pSeam; node: HeddleNode }[] = seams.map((seam, k) => ({ seam, node: start(seam, k) }));
    const equal = () => all.every((p) => p.node.ledger.get().encode() === all[0]!.node.ledger.get().encode());
    try {
      await until(() => seams.every((s) => s.peers.get().size === 2), "full mesh");
      // A12 part: partition peer 0 from 1 and 2 on both sides, schedule everywhere.
      all[0]!.seam.setBlocked([ids[1]!, ids[2]!]);
      all[1]!.seam.setBlocked([ids[0]!]);
      all[2]!.seam.setBlocked([ids[0]!]);
      await until(() => all[0]!.seam.peers.get().size === 0, "partition");
      for (const p of all) for (const x of ["e1", "e2"]) p.node.advertise(e(x), HUNGRY);
      await sleep(300);
      for (const p of all) expect(p.node.schedule(g("root")).grants.length).toBe(10);
      await sleep(500);
      expect(equal()).toBe(false);
      for (const p of all) expect(p.node.boundMetrics(g("root")).isConsistent).toBe(true);
      for (const p of all) p.seam.setBlocked([]);
      await until(equal, "convergence after heal");
      // A2 outcome: every peer split its 100 evenly.
      let l = all[0]!.node.ledger.get();
      expect([l.edge(e("e1"))!.issued, l.edge(e("e2"))!.issued]).toEqual([150n, 150n]);

      // Work, then crash peer 2 (no graceful shutdown of its store) and restart it with the same key and store.
      const res = all[2]!.node.reserve(g("g1"), 10n);
      if (!res.ok) throw new Error(res.refusal.kind);
      await all[2]!.seam.close();
      const seam = await libp2pSeam({
        privateKey: keys[2]!, listen: ["/ip4/127.0.0.1/tcp/0"], roster: all.slice(0, 2).map((p) => ({ id: p.seam.self, addrs: p.seam.addrs() })),
        allowOnlyRoster: true, timers: realTimers, random: seededRandom(99), redialMinMs: 100, redialMaxMs: 1_000,
      });
      const old = all[2]!.node;
      await old.shutdown();
      all[2] = { seam, node: start(seam, 2) };
      expect(all[2]!.node.epoch).toBe(2);
      expect(all[2]!.node.earmarked(g("g1"))).toBe(10n);
      expect(all[2]!.node.complete(res.id, 6n)).toEqual({ ok: true, charged: 6n, outcome: "charged" });
      await until(equal, "convergence after restart");
      l = all[0]!.node.ledger.get();
      expect(l.edge(e("e1"))!.spent).toBe(6n);
      expect(l.validate()).toEqual([]);
      const k = conservation(l);
      expect(k.minted).toBe(k.held + k.leafSpent);
    } finally {
      for (const p of all) {
        await p.node.shutdown();
        await p.seam.close();
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("A24 three heddleStatic nodes as separate OS processes over libp2p converge (A2's outcome)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-a24p-"));
    const script = join(import.meta.dirname, "fixtures", "node-process.ts");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(peerIdOf(await loadOrCreatePeerKey(join(dir, `peer-${i}.key`))));
    const procs = ids.map((_, i) => {
      const child = spawn(process.execPath, [script, dir, String(i), JSON.stringify(ids)], { stdio: ["pipe", "pipe", "pipe"] });
      const lines: string[] = [];
      let stderr = "";
      createInterface({ input: child.stdout }).on("line", (l) => lines.push(l));
      child.stderr.on("data", (d) => (stderr += String(d)));
      return { child, lines, err: () => stderr };
    });
    const wait = async (i: number, prefix: string, ms = 60_000) => {
      const end = Date.now() + ms;
      for (;;) {
        const k = procs[i]!.lines.findIndex((l) => l.startsWith(prefix));
        if (k >= 0) return procs[i]!.lines.splice(k, 1)[0]!;
        if (Date.now() > end) throw new Error(`peer ${i}: timed out waiting for ${prefix}; stderr: ${procs[i]!.err().slice(-2000)}`);
        await sleep(50);
      }
    };
    try {
      const addrs = await Promise.all(procs.map(async (_, i) => (await wait(i, "ready")).split(" ")[2]!));
      procs.forEach((p, i) => ids.forEach((id, j) => i !== j && p.child.stdin.write(`addr ${id} ${addrs[j]}\n`)));
      for (const p of procs) p.child.stdin.write("work\n");
      await Promise.all(procs.map((_, i) => wait(i, "worked")));
      const end = Date.now() + 60_000;
      let ds: string[][] = [];
      for (;;) {
        for (const p of procs) p.child.stdin.write("digest\n");
        ds = await Promise.all(procs.map(async (_, i) => (await wait(i, "digest")).split(" ")));
        if (ds.every((d) => d[1] === ds[0]![1])) break;
        if (Date.now() > end) throw new Error(`no convergence: ${JSON.stringify(ds)}`);
        await sleep(300);
      }
      // digest <hash> <issued e1> <issued e2> <leafSpent> <conserved> <conflicts>
      expect(ds[0]!.slice(2)).toEqual(["150", "150", "15", "true", "0"]);
    } finally {
      for (const p of procs) p.child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
