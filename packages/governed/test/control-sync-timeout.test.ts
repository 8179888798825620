/**
 * governed.md §3.10 `sync()` honours its caller's timeout and abort on the leader too: there a sync is a ReadIndex
 * round, and a leader cut off from every follower confirms none — it only learns so when check-quorum steps it down,
 * election timeouts later. The call must end at its own deadline (virtual time), not then.
 */
import { describe, expect, it } from "vitest";
import { NotLeaderError, OutcomeUnknownError } from "../src/index.ts";
import { GovernedCluster } from "./support/governed-cluster.ts";

const RAFT = { electionTimeoutMinMs: 150, electionTimeoutMaxMs: 300, heartbeatMs: 20 };

describe("sync() on a leader whose ReadIndex round cannot be confirmed", () => {
  it("rejects OutcomeUnknownError at its timeout, and at once on abort, while the leader still leads", async () => {
    const seed = 5;
    const c = new GovernedCluster({ seed, voters: ["n1", "n2", "n3"], raft: RAFT });
    try {
      const l = await c.elect();
      await c.settle(l.gov.sync({ timeoutMs: 1_000 })); // the leader's no-op is committed: a read needs one round only
      c.net.partition([[l.id]], "silent");
      const started = c.timers.now();
      const timedOut = l.gov.sync({ timeoutMs: 30 });
      // settle fails if the call outlives this bound: well before check-quorum could step the leader down
      await expect(c.settle(timedOut, 60)).rejects.toBeInstanceOf(OutcomeUnknownError);
      expect(c.timers.now() - started).toBeLessThan(RAFT.electionTimeoutMinMs);
      expect(l.raft.role.get()).toBe("leader");
      const abort = new AbortController();
      const aborted = l.gov.sync({ timeoutMs: 10_000, signal: abort.signal });
      await c.run(5);
      abort.abort();
      await expect(c.settle(aborted, 5)).rejects.toBeInstanceOf(OutcomeUnknownError);
      expect(l.raft.role.get()).toBe("leader");
      c.net.heal();
    } catch (e) {
      console.error(`sync timeout: seed ${seed} failed`);
      throw e;
    } finally {
      await c.shutdown();
    }
  }, 60_000);
});

/** Barrier entries in `entries` (the envelope is canonical JSON after a magic prefix: the op is in clear). */
function barriers(entries: readonly { kind: string; command?: Uint8Array }[]): number {
  return entries.filter((e) => e.kind === "app" && e.command !== undefined && new TextDecoder().decode(e.command).includes('"op":"barrier"')).length;
}

describe("sync({ leaderOnly: true }) — a read that never appends a barrier", () => {
  it("rejects NotLeaderError at once off the leader, where a plain sync() commits a barrier", async () => {
    const seed = 6;
    const c = new GovernedCluster({ seed, voters: ["n1", "n2", "n3"], raft: RAFT });
    try {
      const l = await c.elect();
      await c.settle(l.gov.sync({ timeoutMs: 1_000 }));
      const f = c.live().find((p) => p.id !== l.id)!;
      const before = barriers(l.disk.entries);
      await expect(c.settle(f.gov.sync({ timeoutMs: 1_000, leaderOnly: true }), 1)).rejects.toBeInstanceOf(NotLeaderError);
      await c.run(200);
      expect(barriers(l.disk.entries)).toBe(before);
      await c.settle(f.gov.sync({ timeoutMs: 1_000 })); // the contrast: off the leader a plain sync is a commit
      expect(barriers(l.disk.entries)).toBe(before + 1);
      expect(() => f.gov.sync({ leaderOnly: "yes" as unknown as boolean })).toThrow(TypeError);
    } catch (e) {
      console.error(`sync leaderOnly: seed ${seed} failed`);
      throw e;
    } finally {
      await c.shutdown();
    }
  }, 60_000);

  it("rejects NotLeaderError when the leader steps down before the read is confirmed, and appends nothing", async () => {
    const seed = 7;
    const c = new GovernedCluster({ seed, voters: ["n1", "n2", "n3"], raft: RAFT });
    try {
      const l = await c.elect();
      await c.settle(l.gov.sync({ timeoutMs: 1_000 }));
      c.net.partition([[l.id]], "silent");
      const read = l.gov.sync({ timeoutMs: 10_000, leaderOnly: true });
      const plain = l.gov.sync({ timeoutMs: 10_000 }); // the contrast: retried as a barrier once leadership moves
      // check-quorum steps the cut-off leader down within election timeouts; the read ends then, not at 10 s
      await expect(c.settle(read, 3_000)).rejects.toBeInstanceOf(NotLeaderError);
      expect(l.raft.role.get()).not.toBe("leader");
      c.net.heal();
      await c.settle(plain, 5_000);
      const now = await c.elect();
      await c.run(500);
      // one barrier (the plain sync's), none for the leader-only read
      expect(barriers(now.disk.entries.filter((e) => e.index <= now.raft.commitIndex.get()))).toBe(1);
    } catch (e) {
      console.error(`sync leaderOnly step-down: seed ${seed} failed`);
      throw e;
    } finally {
      await c.shutdown();
    }
  }, 60_000);
});
