/**
 * Frame hygiene (governed.md R-X5) at the edges the earlier hygiene tests left open, on hand-driven cores with a
 * small term ceiling (50):
 *
 * - a frame whose term is exactly the ceiling is not above it: an honest leader of the ceiling term is followed;
 * - a vote or pre-vote request whose candidate's last log term lies above the frame's own term (the ceiling not
 *   reached) is dropped: no correct candidate sends one, since it campaigns at a term past every entry it holds, and
 *   R-X5 refuses any frame that claims entries of a term later than its own.
 */
import { describe, expect, it } from "vitest";
import type { Message, RaftCore } from "../src/index.ts";
import { cycle, handCore, sent, sentTo } from "./support/hand-driven.ts";

const CEIL = 50;

function follower(term: number): RaftCore {
  const b = handCore("b", { term, cfg: { termCeiling: CEIL } });
  cycle(b);
  return b;
}

describe("a frame's term exactly at the ceiling (R-X5)", () => {
  it("an AppendEntries of the ceiling term is followed and answered: its term is adopted", () => {
    const b = follower(CEIL - 1);
    b.step("a", { type: "append", term: CEIL, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 1, entries: [] });
    const rd = cycle(b);
    expect(sentTo(rd, "a")).toMatchObject([{ type: "appendReply", term: CEIL, success: true, matchIndex: 0 }]);
    expect(rd.trace.filter((t) => t.type === "frameRefused")).toEqual([]);
    expect([b.term, b.leader, b.refusedFrames.size]).toEqual([CEIL, "a", 0]);
  });

  it("a vote request of the ceiling term is granted", () => {
    const b = follower(CEIL - 1);
    b.step("c", { type: "vote", term: CEIL, lastLogIndex: 0, lastLogTerm: 0 });
    const rd = cycle(b);
    expect(sentTo(rd, "c")).toEqual([{ type: "voteReply", term: CEIL, granted: true }]);
    expect([b.term, b.votedFor, b.refusedFrames.size]).toEqual([CEIL, "c", 0]);
  });
});

describe("RequestVote / PreVote: a last log term above the frame's term (R-X5)", () => {
  /** Steps `m` into `b` and checks that it was dropped as above-ceiling and changed nothing. */
  function expectDropped(b: RaftCore, m: Message): void {
    b.step("c", m);
    const rd = cycle(b);
    expect(rd.trace).toEqual([{ type: "frameRefused", from: "c", reason: "above-ceiling" }]);
    expect(sent(rd)).toEqual([]);
    expect(rd.hardState).toBeNull();
    expect([...b.refusedFrames]).toEqual([["above-ceiling", 1]]);
    expect([b.state, b.term, b.votedFor]).toEqual(["follower", 5, null]);
  }

  it("a vote request of term 6 claiming a last entry of term 7 (both under the ceiling) is dropped", () => {
    expectDropped(follower(5), { type: "vote", term: 6, lastLogIndex: 3, lastLogTerm: 7 });
  });

  it("a pre-vote request of term 6 claiming a last entry of term 7 is dropped too", () => {
    expectDropped(follower(5), { type: "preVote", term: 6, lastLogIndex: 3, lastLogTerm: 7, round: 1 });
  });

  it("the same vote request with its last entry of term 5 is granted", () => {
    const b = follower(5);
    b.step("c", { type: "vote", term: 6, lastLogIndex: 3, lastLogTerm: 5 });
    expect(sentTo(cycle(b), "c")).toEqual([{ type: "voteReply", term: 6, granted: true }]);
    expect([b.term, b.votedFor, b.refusedFrames.size]).toEqual([6, "c", 0]);
  });
});
