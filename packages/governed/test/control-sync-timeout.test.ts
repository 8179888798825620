/**
 * governed.md §3.10 `sync()` honours its caller's timeout and abort on the leader too: there a sync is a ReadIndex
 * round, and a leader cut off from every follower confirms none — it only learns so when check-quorum steps it down,
 * election timeouts later. The call must end at its own deadline (virtual time), not then.
 */
import { describe, expect, it } from "vitest";
import { OutcomeUnknownError } from "../src/index.ts";
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
