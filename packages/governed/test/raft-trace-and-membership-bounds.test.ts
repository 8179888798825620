/**
 * Two bounds of the Raft core, on hand-driven cores:
 *
 * - a Ready carries at most `MAX_TRACE_PER_READY` trace events; the excess is counted in `droppedTrace`, not kept;
 * - `changeMembership` refuses `invalid-membership` for a target that is not a well-formed configuration (governed.md
 *   R-M2: voters non-empty, no duplicates, voters and learners disjoint), even when it is otherwise one step away.
 */
import { describe, expect, it } from "vitest";
import { MAX_TRACE_PER_READY, raftConfig, RaftCore, validSingleStep } from "../src/index.ts";
import type { ClusterConfig, Message, Ready } from "../src/index.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: ["l"] };

function cycle(c: RaftCore): Ready {
  const rd = c.ready();
  c.advance(rd);
  return rd;
}

describe("the trace bound of one Ready", () => {
  it("keeps MAX_TRACE_PER_READY events and counts the rest as dropped", () => {
    const b = new RaftCore({
      id: "b", bootstrap: ABC, persisted: { term: 1, votedFor: null, snapshot: null, entries: [] }, config: raftConfig({}), random: () => 0, now: 0,
    });
    const heartbeat: Message = { type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [] };
    const extra = 5;
    for (let i = 0; i < MAX_TRACE_PER_READY + extra; i++) b.step("b", heartbeat); // each refused from-self, traced
    expect(b.refusedFrames.get("from-self")).toBe(MAX_TRACE_PER_READY + extra);
    const rd = cycle(b);
    expect(rd.trace).toHaveLength(MAX_TRACE_PER_READY);
    expect(rd.trace[0]).toEqual({ type: "frameRefused", from: "b", reason: "from-self" });
    expect(b.droppedTrace).toBe(extra);
    // the next Ready starts a fresh budget
    b.step("b", heartbeat);
    expect(cycle(b).trace).toEqual([{ type: "frameRefused", from: "b", reason: "from-self" }]);
    expect(b.droppedTrace).toBe(extra);
  });
});

describe("malformed membership targets (R-M2)", () => {
  const malformed: [string, ClusterConfig][] = [
    ["a duplicate voter", { voters: ["a", "b", "b"], learners: [] }],
    ["a duplicate learner", { voters: ["a", "b", "c"], learners: ["l", "l"] }],
    ["a member both voter and learner", { voters: ["a", "b", "c"], learners: ["c"] }],
  ];
  it.each(malformed)("validSingleStep refuses %s", (_what, target) => {
    expect(validSingleStep(ABC, target)).toBe(false);
  });

  it("validSingleStep refuses an empty voter set, even from a single voter", () => {
    expect(validSingleStep({ voters: ["a"], learners: [] }, { voters: [], learners: [] })).toBe(false);
    expect(validSingleStep({ voters: ["a"], learners: [] }, { voters: [], learners: ["a"] })).toBe(false);
  });

  it("the leader refuses each of them invalid-membership and appends nothing", () => {
    // a single voter leads at once
    const a = new RaftCore({
      id: "a", bootstrap: { voters: ["a"], learners: [] }, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] },
      config: raftConfig({}), random: () => 0, now: 0,
    });
    a.tick(1000);
    cycle(a);
    expect([a.state, a.commitIndex]).toEqual(["leader", 1]);
    a.changeMembership(1, { voters: ["a", "a"], learners: [] });
    a.changeMembership(2, { voters: ["a"], learners: ["a"] });
    a.changeMembership(3, { voters: [], learners: [] });
    const rd = cycle(a);
    expect(rd.outcomes).toEqual([
      { id: 1, ok: false, refusal: "invalid-membership" },
      { id: 2, ok: false, refusal: "invalid-membership" },
      { id: 3, ok: false, refusal: "invalid-membership" },
    ]);
    expect(rd.storage).toEqual([]);
    expect(a.lastIndex).toBe(1);
    expect(a.config).toEqual({ voters: ["a"], learners: [] });
  });
});
