/**
 * The governed control plane over real libp2p on 127.0.0.1 with SQLite, as separate OS processes: 3 voters and 2
 * learners. Mints and a reshape go through while a voter is SIGKILLed and a learner is cut off; the killed voter
 * restarts from its stores; in the end every peer has applied the same prefix, holds an equal `ControlState` and a
 * byte-identical ledger. Then leadership moves by transfer while every other peer keeps minting, and no proposal
 * fails.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GovProcessCluster, sleep } from "./support/governed-processes.ts";
import type { GovProcess, Reply } from "./support/governed-processes.ts";

const applied = (r: Reply): void => {
  expect(r.ok, JSON.stringify(r)).toBe(true);
  expect((r.outcome as { kind: string }).kind, JSON.stringify(r)).toBe("applied");
};

describe("governed peers as OS processes over libp2p + SQLite (3 voters, 2 learners)", () => {
  it("mint and reshape while a voter is SIGKILLed and a learner is cut off; the voter restarts from its store; everyone converges; leadership moves by transfer without a failed proposal", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-governed-procs-"));
    const c = await GovProcessCluster.create(dir, 3, 2, 8);
    try {
      for (let i = 0; i < 5; i++) await c.start(i);
      const first = await c.leader();
      await c.enrolled();
      const learner = c.byId(c.learners[0]!)!;
      const other = c.byId(c.learners[1]!)!;
      applied(await learner.ask({ cmd: "mint", holder: c.ids[0], amount: "100" })); // forwarded by a learner
      applied(await other.ask({ cmd: "prepare", id: "team-w1", parent: "root", child: "team", weight: "1" }));
      applied(await first.ask({ cmd: "activate", edge: "team-w1" }));

      // SIGKILL a voter (the leader) and cut a learner off from everyone
      c.kill(first.index);
      const cut = learner;
      const rest = c.all().filter((m) => m !== cut);
      await cut.ask({ cmd: "block", peers: c.ids.filter((id) => id !== cut.id) });
      for (const m of rest) await m.ask({ cmd: "block", peers: [cut.id] });
      const via = (k: number): GovProcess => rest[k % rest.length]!;
      applied(await via(0).ask({ cmd: "mint", holder: c.ids[1], amount: "50" }));
      // the reshape recipe for a weight change: prepare the new generation, close, retire (drained), activate
      applied(await via(1).ask({ cmd: "prepare", id: "team-w3", parent: "root", child: "team", weight: "3" }));
      applied(await via(2).ask({ cmd: "close", edge: "team-w1" }));
      applied(await via(0).ask({ cmd: "retire", edge: "team-w1" }));
      applied(await via(1).ask({ cmd: "activate", edge: "team-w3" }));
      for (let i = 0; i < 12; i++) applied(await via(i).ask({ cmd: "mint", holder: c.ids[2], amount: "1" })); // past a few snapshots
      applied(await via(2).ask({ cmd: "take", holder: "deployer", key: "release/v1" }));

      // the killed voter restarts from its SQLite stores; the learner is let back in
      await c.start(first.index);
      await cut.ask({ cmd: "block", peers: [] });
      for (const m of rest) await m.ask({ cmd: "block", peers: [] });
      await c.enrolled();
      const grant = await c.byId(c.ids[1]!)!.ask({ cmd: "schedule", edge: "team-w3" });
      expect(grant.ok).toBe(true);

      // convergence: one applied prefix, equal ControlStates, byte-identical ledgers
      const end = Date.now() + 60_000;
      for (;;) {
        const l = await c.leader();
        const s = await l.ask({ cmd: "sync" });
        const dumps = await Promise.all(c.all().map((m) => m.ask({ cmd: "dump" })));
        const same = dumps.every((d) => d.applied === s.applied && d.state === dumps[0]!.state && d.ledger === dumps[0]!.ledger);
        if (same) {
          const st = await Promise.all(c.all().map((m) => m.ask({ cmd: "status" })));
          for (const x of st) expect(x.minted).toBe("162");
          const state = JSON.parse(dumps[0]!.state as string) as { lifecycle: [string, string][] };
          expect(state.lifecycle).toEqual([
            ["team-w1", "RETIRED"],
            ["team-w3", "ACTIVE"],
          ]);
          expect(c.all()).toHaveLength(5);
          break;
        }
        if (Date.now() > end) throw new Error(`no convergence: ${JSON.stringify(dumps.map((d) => [d.applied, (d.state as string).length, (d.ledger as string).length]))}`);
        await sleep(250);
      }
      // leadership moves by transfer while writers on the other peers mint: no proposal fails
      const first0 = await c.leader();
      const writers = c.all().filter((m) => m !== first0).map((m) => m.ask({ cmd: "writer", n: 40 }, 180_000));
      await sleep(300);
      // a transfer that times out (the target not caught up within one election timeout), or that finds leadership
      // already moved, is retried from whoever leads then, as an operator would; no proposal's fate depends on it
      let moved: Reply = { ok: false };
      let to = "";
      for (let attempt = 0; attempt < 10 && moved.ok !== true; attempt++) {
        const from = await c.leader();
        to = c.voters.find((id) => id !== from.id && c.byId(id) !== undefined)!;
        moved = await from.ask({ cmd: "transfer", target: to }, 30_000);
      }
      expect(moved, JSON.stringify(moved)).toMatchObject({ ok: true });
      const written = await Promise.all(writers);
      for (const w of written) expect(w, JSON.stringify(w)).toMatchObject({ ok: true, failures: [] });
      // the writers really ran across the transfer: acts completed both before it began and after it ended
      const times = written.flatMap((w) => w.times as number[]);
      expect(times.some((t) => t < (moved.startedAt as number))).toBe(true);
      expect(times.some((t) => t > (moved.endedAt as number))).toBe(true);
      // `moved.ok` already says `to` led a later term: `transferLeadership` resolves only on the target's own
      // leader frame (§4.10). Whether `to` still leads once the writers are done is not this test's claim — under
      // a loaded machine a later election is legitimate Raft (the CI check of 2026-12-01 23:08 UTC, beside a
      // crash-trial run, saw one) — so it is not asserted.
      expect(to).not.toBe(first0.id);
    } finally {
      c.stopAll();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
