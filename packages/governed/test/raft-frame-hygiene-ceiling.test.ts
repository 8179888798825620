/**
 * Frame hygiene (governed.md R-X5), on hand-driven cores with a small term ceiling (50): a frame whose term, or any
 * index or term it carries, lies above the ceiling — or an InstallSnapshot chunk with an index or term below 1, a
 * last term above the frame's, bytes reaching past its declared total, or no bytes of a non-empty snapshot — is
 * dropped before any handler sees it: no reply, no term adopted, no leader adopted, counted and traced as
 * `frameRefused`. Every check is exercised alone (each frame breaks exactly one rule), and a value exactly at the
 * ceiling is still accepted.
 */
import { describe, expect, it } from "vitest";
import type { Message, RaftCore } from "../src/index.ts";
import { ABC, cycle, electVia, handCore, sent, sentTo } from "./support/hand-driven.ts";

const CEIL = 50;
type SnapshotMessage = Extract<Message, { type: "snapshot" }>;

function follower(term: number): RaftCore {
  const b = handCore("b", { term, cfg: { termCeiling: CEIL } });
  cycle(b);
  return b;
}

/** Steps `m` from `from` into `b` and checks that it was dropped for `reason` and changed nothing. */
function expectDropped(b: RaftCore, from: string, m: Message, reason: string): void {
  const term = b.term;
  const last = b.lastIndex;
  b.step(from, m);
  const rd = cycle(b);
  expect(rd.trace).toEqual([{ type: "frameRefused", from, reason }]);
  expect(sent(rd)).toEqual([]);
  expect(rd.hardState).toBeNull();
  expect([...b.refusedFrames]).toEqual([[reason, 1]]);
  expect([b.state, b.term, b.leader, b.lastIndex, b.snapshot]).toEqual(["follower", term, null, last, null]);
}

describe("the frame's own term (R-X5)", () => {
  it("an AppendEntries one term above the ceiling (well within the term-jump bound) is dropped", () => {
    const b = follower(45);
    expectDropped(b, "a", { type: "append", term: CEIL + 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 1, entries: [] }, "above-ceiling");
  });
});

describe("RequestVote / PreVote: the candidate's last log index (R-X5)", () => {
  it("a vote request whose lastLogIndex is above the ceiling (its lastLogTerm fine) is dropped", () => {
    const b = follower(5);
    expectDropped(b, "c", { type: "vote", term: 6, lastLogIndex: CEIL + 1, lastLogTerm: 5 }, "above-ceiling");
  });

  it("a pre-vote request whose lastLogIndex is above the ceiling is dropped too", () => {
    const b = follower(5);
    expectDropped(b, "c", { type: "preVote", term: 6, lastLogIndex: CEIL + 1, lastLogTerm: 5, round: 1 }, "above-ceiling");
  });

  it("a lastLogIndex exactly at the ceiling is an honest log: the vote is granted", () => {
    const b = follower(5);
    b.step("c", { type: "vote", term: 6, lastLogIndex: CEIL, lastLogTerm: 5 });
    const rd = cycle(b);
    expect(sentTo(rd, "c")).toEqual([{ type: "voteReply", term: 6, granted: true }]);
    expect([b.term, b.votedFor, b.refusedFrames.size]).toEqual([6, "c", 0]);
  });
});

describe("InstallSnapshot: each bound on its own (R-X5)", () => {
  const chunk = (over: Partial<SnapshotMessage>): SnapshotMessage => ({
    type: "snapshot", term: 5, lastIndex: 5, lastTerm: 4, config: ABC, total: 2, offset: 0, data: new Uint8Array([1, 2]), ...over,
  });
  const bad: [string, Partial<SnapshotMessage>, string][] = [
    ["lastIndex above the ceiling", { lastIndex: CEIL + 1 }, "above-ceiling"],
    ["lastTerm above the frame's term", { lastTerm: 6 }, "above-ceiling"],
    ["lastIndex 0", { lastIndex: 0 }, "above-ceiling"],
    ["lastTerm 0", { lastTerm: 0 }, "above-ceiling"],
    ["bytes past the declared total", { total: 1 }, "malformed-entry"],
    ["a later chunk reaching past the total", { offset: 1, total: 2 }, "malformed-entry"],
    ["no data while the snapshot is not empty", { data: new Uint8Array(0) }, "malformed-entry"],
  ];
  it.each(bad)("a chunk with %s is dropped", (_what, over, reason) => {
    const b = follower(5);
    expectDropped(b, "a", chunk(over), reason);
  });

  it("the same chunk within every bound (lastIndex exactly at the ceiling) is installed and acknowledged", () => {
    const b = follower(5);
    b.step("a", chunk({ lastIndex: CEIL }));
    const rd = cycle(b);
    expect(sentTo(rd, "a")).toEqual([{ type: "snapshotReply", term: 5, lastIndex: CEIL, nextOffset: 2, done: true }]);
    expect([b.leader, b.refusedFrames.size, b.snapshot?.lastIndex, b.snapshot?.lastTerm]).toEqual(["a", 0, CEIL, 4]);
  });
});

describe("AppendEntries replies carrying an index or term above the ceiling (R-X5)", () => {
  /** a leads b and c at term 1; the append (probe) it sent b is still unanswered. */
  function leader(): { a: RaftCore; probePrev: number } {
    const a = handCore("a", { cfg: { termCeiling: CEIL } });
    const b = handCore("b", { cfg: { termCeiling: CEIL } });
    const won = electVia(a, b);
    const probe = sentTo(won, "b").find((m) => m.type === "append");
    if (probe?.type !== "append") throw new Error("no append to b");
    return { a, probePrev: probe.prevLogIndex };
  }
  const rejection = (prev: number, over: { conflictIndex: number; conflictTerm: number | null }): Message => ({
    type: "appendReply", term: 1, success: false, matchIndex: 0, rejectedPrev: prev, round: 0, ...over,
  });

  it.each([
    ["conflictIndex", { conflictIndex: CEIL + 1, conflictTerm: null }],
    ["conflictTerm", { conflictIndex: 1, conflictTerm: CEIL + 1 }],
  ] as const)("a rejection whose %s is above the ceiling is dropped: the leader sends no new probe", (_what, over) => {
    const { a, probePrev } = leader();
    a.step("b", rejection(probePrev, over));
    const rd = cycle(a);
    expect(rd.trace).toEqual([{ type: "frameRefused", from: "b", reason: "above-ceiling" }]);
    expect(sentTo(rd, "b")).toEqual([]);
    expect([...a.refusedFrames]).toEqual([["above-ceiling", 1]]);
    expect(a.state).toBe("leader");
  });

  it("the same rejection within the bounds is answered with a new probe", () => {
    const { a, probePrev } = leader();
    a.step("b", rejection(probePrev, { conflictIndex: 1, conflictTerm: null }));
    const rd = cycle(a);
    expect(sentTo(rd, "b").map((m) => m.type)).toEqual(["append"]);
    expect(a.refusedFrames.size).toBe(0);
  });
});
