/**
 * A subscriber of the member's cells (`role`, `leader`, `commitIndex`, `membership`) that throws: the cells are set
 * inside the member's processing turn, so the throw used to leave that turn (a rejected promise nobody handled — a
 * crash under Node's default — and the rest of the ready's outcomes undelivered). It is now caught, counted in
 * `subscriberErrors()` and handed to `onSubscriberError`; the member keeps committing.
 */
import { describe, expect, it } from "vitest";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { runUntil } from "./support/virtual-steps.ts";
import { memoryRaftStorage, raftChannelTransport, raftNode } from "../src/index.ts";

describe("a throwing subscriber of a Raft member's cells", () => {
  for (const seed of [1, 2]) {
    it(`is counted and reported, and the cluster keeps electing and committing (seed ${seed})`, async () => {
      const timers = new VirtualTimers();
      const net = new MemoryNetwork({ timers, random: seededRandom(seed), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 3] } });
      const ids = ["n1", "n2", "n3"];
      const reported: unknown[] = [];
      const nodes = ids.map((id, k) =>
        raftNode({ cluster: { voters: ids, learners: [] }, transport: raftChannelTransport(net.join(id)), storage: memoryRaftStorage(), timers, random: seededRandom(seed * 10 + k), onSubscriberError: (e) => reported.push(e) }),
      );
      const heard: string[] = [];
      for (const n of nodes) {
        n.role.subscribe((r) => {
          heard.push(r);
          if (r === "leader") throw new Error("a subscriber bug");
        });
        n.commitIndex.subscribe(() => {
          throw new Error("another subscriber bug");
        });
        // a second subscriber of the same cell is still told
        n.role.subscribe((r) => heard.push(`second:${r}`));
      }
      await runUntil(timers, () => nodes.some((n) => n.role.get() === "leader"), 5000);
      const leader = nodes.find((n) => n.role.get() === "leader")!;
      let done = 0;
      const writes = [1, 2, 3].map((i) => leader.propose(new Uint8Array([i]), null).then(() => done++));
      await runUntil(timers, () => done === 3, 5000);
      await Promise.all(writes);
      expect(leader.commitIndex.get()).toBeGreaterThanOrEqual(3);
      expect(heard).toContain("leader");
      expect(heard).toContain("second:leader");
      const counted = nodes.reduce((a, n) => a + n.subscriberErrors(), 0);
      expect(counted).toBeGreaterThanOrEqual(2); // the leader's role, and commit index moves on every member
      expect(reported).toHaveLength(counted);
      expect(reported.every((e) => e instanceof Error)).toBe(true);
      for (const n of nodes) await n.close();
    });
  }
});
