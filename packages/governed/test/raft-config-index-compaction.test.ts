/**
 * `configIndex` after the node's own compaction (`compact`): the getter names the entry that carries the latest
 * configuration, or the floor when the configuration now comes from the snapshot (or the bootstrap). Once a
 * compaction takes in the entry that carried it (or the bootstrap's floor 0), the snapshot carries it, so the index
 * is the new floor — the same value a restart from the same storage reports, and it stays so when entries are
 * appended after the compaction. A config entry above the compaction point keeps its own index.
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { ClusterConfig } from "../src/index.ts";
import { cycle, HAND_TIMING, handCore } from "./support/hand-driven.ts";

const SOLO: ClusterConfig = { voters: ["a"], learners: [] };
const WITH_L: ClusterConfig = { voters: ["a"], learners: ["l"] };

/** A single voter `a` that leads term 1 with its no-op (1) committed and applied. */
function soloLeader(): RaftCore {
  const a = handCore("a", { bootstrap: SOLO });
  cycle(a);
  a.tick(150);
  cycle(a);
  cycle(a);
  expect([a.state, a.commitIndex, a.appliedIndex, a.configIndex]).toEqual(["leader", 1, 1, 0]);
  return a;
}

/** `a` proposes one entry and runs it to applied. */
function commitOne(a: RaftCore, id: number): void {
  a.propose(id, new Uint8Array([id]), null);
  cycle(a);
  cycle(a);
  expect(a.appliedIndex).toBe(a.lastIndex);
}

/** The core a restart from `a`'s storage brings back. */
function restarted(a: RaftCore): RaftCore {
  return new RaftCore({
    id: a.id, bootstrap: SOLO,
    persisted: { term: a.term, votedFor: a.votedFor, snapshot: a.snapshot, entries: [...a.entries] },
    config: raftConfig(HAND_TIMING), random: () => 0, now: 0,
  });
}

describe("configIndex after a compaction", () => {
  it("a compaction over the bootstrap configuration reports the floor, before and after the next append, as a restart does", () => {
    const a = soloLeader();
    commitOne(a, 1); // 2
    expect(a.compact(2, new Uint8Array([7]))).toBe(true);
    expect([a.floor, a.config, a.configIndex]).toEqual([2, SOLO, 2]);
    expect(restarted(a).configIndex).toBe(2);
    commitOne(a, 2); // 3
    expect([a.config, a.configIndex]).toEqual([SOLO, 2]);
    expect(restarted(a).configIndex).toBe(2);
  });

  it("a compaction over a config entry reports the floor; one below it keeps the entry's index", () => {
    const a = soloLeader();
    a.changeMembership(1, WITH_L); // 2
    cycle(a);
    cycle(a);
    expect([a.commitIndex, a.appliedIndex, a.config, a.configIndex]).toEqual([2, 2, WITH_L, 2]);
    commitOne(a, 2); // 3
    expect(a.compact(1, new Uint8Array([1]))).toBe(true);
    expect([a.floor, a.configIndex]).toEqual([1, 2]);
    expect(a.compact(3, new Uint8Array([3]))).toBe(true);
    expect([a.floor, a.config, a.configIndex]).toEqual([3, WITH_L, 3]);
    expect(restarted(a).configIndex).toBe(3);
  });
});
