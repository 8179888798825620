/**
 * Forwards end when a higher term is observed (governed.md R-F4, SHOULD) — also when the frame of that term comes
 * from the very leader the forward went to. That leader stepped down in between (or crashed and restarted) and has
 * either answered "failed" already or forgotten the forward: no answer would ever come, and the call would wait for
 * its caller's timeout. Regression: a forward to the leader we follow survived that leader's higher-term
 * AppendEntries, because the failing ran before the follower dropped the old leader and kept forwards "to the
 * current leader".
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { ClusterConfig, Envelope, Ready } from "../src/index.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: [] };
const enc = new TextEncoder();

/** b, a follower of a at term 1 holding its no-op (index 1). */
function followerOfA(): RaftCore {
  const b = new RaftCore({
    id: "b", bootstrap: ABC, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] }, config: raftConfig({}), random: () => 0, now: 0,
  });
  b.step("a", {
    type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0,
    entries: [{ index: 1, term: 1, kind: "noop", key: null, command: new Uint8Array(), stampedAt: 0 }],
  });
  cycle(b);
  expect([b.leader, b.term, b.lastIndex]).toEqual(["a", 1, 1]);
  return b;
}
function cycle(c: RaftCore): Ready {
  const rd = c.ready();
  c.advance(rd);
  return rd;
}
const sent = (rd: Ready): Envelope[] => [...rd.earlyMessages, ...rd.messages];
const heartbeat = (term: number) => ({ type: "append" as const, term, prevLogIndex: 1, prevLogTerm: 1, leaderCommit: 1, round: 0, entries: [] });

describe("forwards and a higher term (R-F4)", () => {
  it("a forward to the leader fails when that leader's frame arrives at a higher term; its late answer is ignored", () => {
    const b = followerOfA();
    b.propose(30, enc.encode("x"), { client: "w", seq: 1 });
    expect(sent(cycle(b)).map((m) => [m.to, m.message.type])).toEqual([["a", "forward"]]);

    // a same-term frame from a leaves the forward waiting
    b.step("a", heartbeat(1));
    expect(cycle(b).outcomes).toEqual([]);

    // a, re-elected at term 2 (it stepped down, or restarted, in between)
    b.step("a", heartbeat(2));
    const rd = cycle(b);
    expect([b.term, b.leader]).toEqual([2, "a"]);
    expect(rd.outcomes).toEqual([{ id: 30, ok: false, refusal: "leadership-lost" }]);

    // an answer that still arrives for it does not report a second outcome
    b.step("a", { type: "forwardReply", corrId: 30, outcome: "committed", index: 2, term: 1 });
    const late = cycle(b);
    expect(late.outcomes).toEqual([]);
    expect(late.trace.filter((t) => t.type === "forwardAnswered")).toEqual([]);
  });

  it("a forward to the leader is answered normally while the term stays", () => {
    const b = followerOfA();
    b.propose(30, enc.encode("x"), { client: "w", seq: 1 });
    cycle(b);
    b.step("a", heartbeat(1));
    b.step("a", { type: "forwardReply", corrId: 30, outcome: "committed", index: 2, term: 1 });
    expect(cycle(b).outcomes).toEqual([{ id: 30, ok: true, index: 2, term: 1 }]);
  });
});
