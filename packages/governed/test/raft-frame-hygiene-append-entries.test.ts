/**
 * AppendEntries frame hygiene (governed.md R-X5), each bound on its own: a frame whose previous index or commit
 * index lies above the term ceiling, whose previous term lies above its own term, or whose entries go back in term
 * or carry a term below 1 is dropped before any handler sees it — no reply, no term or leader adopted, counted and
 * traced as `frameRefused`. A value exactly at the ceiling is still an honest frame and is answered.
 *
 * Added in the seventeenth session: Stryker's sittings had counted these checks' mutants as timeouts under load;
 * a quieter re-run showed no test told them apart (each survived).
 */
import { describe, expect, it } from "vitest";
import type { Message, RaftCore } from "../src/index.ts";
import { cycle, electVia, entry, handCore, sent } from "./support/hand-driven.ts";

const CEIL = 50;
const TERM = 46;

function follower(): RaftCore {
  const b = handCore("b", { term: 45, cfg: { termCeiling: CEIL } });
  cycle(b);
  return b;
}

function append(over: Partial<Extract<Message, { type: "append" }>>): Message {
  return { type: "append", term: TERM, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 1, entries: [], ...over };
}

function expectDropped(m: Message, reason: string): void {
  const b = follower();
  b.step("a", m);
  const rd = cycle(b);
  expect(rd.trace).toEqual([{ type: "frameRefused", from: "a", reason }]);
  expect(sent(rd)).toEqual([]);
  expect(rd.hardState).toBeNull();
  expect([...b.refusedFrames]).toEqual([[reason, 1]]);
  expect([b.state, b.term, b.leader, b.lastIndex]).toEqual(["follower", 45, null, 0]);
}

/** The frame passes hygiene: b adopts the frame's term and leader and answers it. */
function expectAnswered(m: Message): void {
  const b = follower();
  b.step("a", m);
  const rd = cycle(b);
  expect([...b.refusedFrames]).toEqual([]);
  expect([b.term, b.leader]).toEqual([TERM, "a"]);
  expect(sent(rd).map((s) => [s.to, s.message.type])).toEqual([["a", "appendReply"]]);
}

describe("AppendEntries: each index and term it carries, on its own (R-X5)", () => {
  it("a previous index above the ceiling is dropped; exactly at the ceiling is answered", () => {
    expectDropped(append({ prevLogIndex: CEIL + 1, prevLogTerm: 1 }), "above-ceiling");
    expectAnswered(append({ prevLogIndex: CEIL, prevLogTerm: 1 }));
  });

  it("a previous term above the frame's own term is dropped; equal to it is answered", () => {
    expectDropped(append({ prevLogIndex: 1, prevLogTerm: TERM + 1 }), "above-ceiling");
    expectAnswered(append({ prevLogIndex: 1, prevLogTerm: TERM }));
  });

  it("a commit index above the ceiling is dropped; exactly at the ceiling is answered", () => {
    expectDropped(append({ leaderCommit: CEIL + 1 }), "above-ceiling");
    expectAnswered(append({ leaderCommit: CEIL }));
  });
});

describe("AppendEntries: the entries' terms (R-X5)", () => {
  it("an entry whose term goes below the one before it is malformed", () => {
    expectDropped(append({ entries: [entry(1, 3), entry(2, 2)] }), "malformed-entry");
  });

  it("a first entry below the previous entry's term is malformed", () => {
    expectDropped(append({ prevLogIndex: 0, prevLogTerm: 0, entries: [entry(1, 0)] }), "malformed-entry");
  });

  it("a first entry below the previous term the frame names is malformed", () => {
    const b = follower();
    // b holds entries 1–2 of term 5, so the frame's previous entry matches and only the new entry's term is wrong
    b.step("a", append({ entries: [entry(1, 5), entry(2, 5)] }));
    cycle(b);
    expect(b.lastIndex).toBe(2);
    b.step("a", append({ prevLogIndex: 2, prevLogTerm: 5, entries: [entry(3, 4)] }));
    const rd = cycle(b);
    expect(rd.trace).toEqual([{ type: "frameRefused", from: "a", reason: "malformed-entry" }]);
    expect(b.lastIndex).toBe(2);
  });

  it("entries that keep or raise the term are appended", () => {
    const b = follower();
    b.step("a", append({ entries: [entry(1, 3), entry(2, 3), entry(3, TERM)] }));
    cycle(b);
    expect([...b.refusedFrames]).toEqual([]);
    expect(b.lastIndex).toBe(3);
  });
});

describe("AppendEntries replies: a success whose matchIndex is above the ceiling (R-X5)", () => {
  it("is dropped before the leader counts it", () => {
    const a = handCore("a", { cfg: { termCeiling: CEIL } });
    const b = handCore("b", { cfg: { termCeiling: CEIL } });
    electVia(a, b);
    const commit = a.commitIndex;
    a.step("b", { type: "appendReply", term: a.term, success: true, matchIndex: CEIL + 1, rejectedPrev: 0, round: 0, conflictIndex: 0, conflictTerm: null });
    const rd = cycle(a);
    expect(rd.trace).toEqual([{ type: "frameRefused", from: "b", reason: "above-ceiling" }]);
    expect([...a.refusedFrames]).toEqual([["above-ceiling", 1]]);
    expect([a.state, a.commitIndex]).toEqual(["leader", commit]);
  });
});
