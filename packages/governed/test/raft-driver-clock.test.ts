/**
 * The driver's clock timer (node.ts `#tick`): a leader ticks every TICK_MS; any other member sleeps until its
 * election deadline (re-armed no later than the shortest election timeout ahead) instead of waking every TICK_MS,
 * and its elections still fire on time.
 */
import { describe, expect, it } from "vitest";
import { MemoryNetwork, seededRandom, type Timers } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { runFor, runUntil } from "./support/virtual-steps.ts";
import { DEFAULT_RAFT_CONFIG, memoryRaftStorage, raftChannelTransport, raftNode, TICK_MS } from "../src/index.ts";
import type { RaftNode } from "../src/index.ts";

/** `timers`, counting the timers armed with a delay (the driver's own deferrals are 0 ms). */
function counting(timers: Timers): Timers & { armed: number } {
  const t = {
    armed: 0,
    now: () => timers.now(),
    set: (fn: () => void, ms: number) => {
      if (ms > 0) t.armed++;
      return timers.set(fn, ms);
    },
    clear: (h: unknown) => timers.clear(h),
  };
  return t;
}

describe("the driver's clock", () => {
  for (const seed of [1, 2, 3]) {
    it(`a follower wakes about once per election timeout, and a leader's crash is still noticed on time (seed ${seed})`, async () => {
      const timers = new VirtualTimers();
      const net = new MemoryNetwork({ timers, random: seededRandom(seed), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 3] } });
      const ids = ["n1", "n2", "n3"];
      const clocks = new Map(ids.map((id) => [id, counting(timers)]));
      const nodes = new Map<string, RaftNode>();
      for (const id of ids) {
        nodes.set(id, raftNode({ cluster: { voters: ids, learners: [] }, transport: raftChannelTransport(net.join(id)), storage: memoryRaftStorage(), timers: clocks.get(id)!, random: seededRandom(seed * 100 + id.charCodeAt(1)) }));
      }
      const leaderOf = (): string | undefined => ids.find((id) => nodes.get(id)!.role.get() === "leader");
      await runUntil(timers, () => leaderOf() !== undefined, 5000);
      await runFor(timers, 500);
      const leader = leaderOf()!;
      const followers = ids.filter((id) => id !== leader);
      for (const id of ids) clocks.get(id)!.armed = 0;
      const windowMs = 3000;
      await runFor(timers, windowMs);
      expect(leaderOf()).toBe(leader);
      // the leader keeps its TICK_MS tick (heartbeats, quorum checks, commit notices)
      expect(clocks.get(leader)!.armed).toBeGreaterThanOrEqual(windowMs / TICK_MS - 2);
      // a follower re-arms at most once per shortest election timeout (before: every TICK_MS, 300 times here)
      for (const id of followers) expect(clocks.get(id)!.armed).toBeLessThanOrEqual(Math.ceil(windowMs / DEFAULT_RAFT_CONFIG.electionTimeoutMinMs) + 1);

      // the leader goes silent: a follower's election deadline (at most electionTimeoutMaxMs after its last
      // heartbeat) fires on time, and one of them leads after a pre-vote and a vote round
      net.crash(leader, "silent");
      const crashedAt = timers.now();
      await runUntil(timers, () => followers.some((id) => nodes.get(id)!.role.get() === "leader"), 5000);
      expect(timers.now() - crashedAt).toBeLessThanOrEqual(DEFAULT_RAFT_CONFIG.electionTimeoutMaxMs + 4 * 3 + 2);
      for (const n of nodes.values()) await n.close();
    });
  }
});
