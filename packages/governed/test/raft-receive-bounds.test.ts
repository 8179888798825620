/**
 * Bounds a member enforces on what it receives, not only on what it sends (governed.md R-X5, R-S2), on hand-driven
 * cores:
 * - an AppendEntries carrying more than `maxEntriesPerMessage` entries is refused as `too-many-entries` before any
 *   entry is looked at: no term or leader adopted, nothing stored or committed; its only answer says how many
 *   entries this member takes (`maxEntries`, at its own term, round 0, no hints), so the leader can send it smaller
 *   frames (raft-follower-limits.test.ts);
 * - an InstallSnapshot chunk with no data is refused as `malformed-entry` unless the whole snapshot is empty: it
 *   moves the transfer nowhere, and each one accepted used to be pushed onto the reassembly's chunk list.
 *
 * Found in review: `maxEntriesPerMessage` was applied only when sending, and `#onSnapshot` accepted zero-length
 * chunks at offset = received, so a faulty leader could grow a follower's chunk list without bound.
 */
import { describe, expect, it } from "vitest";
import type { FrameRefusal, LogEntry, Message, RaftCore } from "../src/index.ts";
import { ABC, cycle, entry, handCore, sent, sentTo } from "./support/hand-driven.ts";

const MAX = 4;
type AppendMessage = Extract<Message, { type: "append" }>;
type SnapshotMessage = Extract<Message, { type: "snapshot" }>;

const entries = (from: number, n: number, term: number): LogEntry[] => Array.from({ length: n }, (_, i) => entry(from + i, term));
const append = (over: Partial<AppendMessage>): AppendMessage => ({ type: "append", term: 3, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 1, entries: [], ...over });

/** b at term 3 following a, holding entries 1–2 of term 3, index 1 committed. */
function following(): RaftCore {
  const b = handCore("b", { term: 2, cfg: { maxEntriesPerMessage: MAX } });
  cycle(b);
  b.step("a", append({ entries: entries(1, 2, 3), leaderCommit: 1 }));
  cycle(b);
  expect([b.term, b.leader, b.lastIndex, b.commitIndex]).toEqual([3, "a", 2, 1]);
  return b;
}

/**
 * Steps `m` into `b` (from a) and checks that it was refused for `reason`, counted, traced, and changed nothing; it
 * sends `answer` (nothing by default).
 */
function expectRefused(b: RaftCore, m: Message, reason: FrameRefusal, count = 1, answer: Message[] = []): void {
  const before = [b.state, b.term, b.votedFor, b.leader, b.lastIndex, b.commitIndex, b.snapshot];
  b.step("a", m);
  const rd = cycle(b);
  expect(rd.trace).toEqual([{ type: "frameRefused", from: "a", reason }]);
  expect(sentTo(rd, "a")).toEqual(answer);
  expect(sent(rd)).toHaveLength(answer.length);
  expect(rd.hardState).toBeNull();
  expect(rd.storage).toEqual([]);
  expect(rd.committed).toEqual([]);
  expect(b.refusedFrames.get(reason)).toBe(count);
  expect([b.state, b.term, b.votedFor, b.leader, b.lastIndex, b.commitIndex, b.snapshot]).toEqual(before);
}

describe("AppendEntries with more entries than maxEntriesPerMessage", () => {
  /** The answer to a too-many-entries refusal of a frame at `prev`: b's limit, at b's term 3. */
  const limitAnswer = (prev: number): Message[] => [
    { type: "appendReply", term: 3, success: false, matchIndex: 0, rejectedPrev: prev, conflictTerm: null, conflictIndex: 0, round: 0, maxEntries: MAX },
  ];

  it("is refused as too-many-entries, answered with the limit, and changes nothing; exactly maxEntriesPerMessage is appended", () => {
    const b = following();
    expectRefused(b, append({ prevLogIndex: 2, prevLogTerm: 3, leaderCommit: 2 + MAX + 1, entries: entries(3, MAX + 1, 3) }), "too-many-entries", 1, limitAnswer(2));
    expect([...b.refusedFrames]).toEqual([["too-many-entries", 1]]);
    b.step("a", append({ prevLogIndex: 2, prevLogTerm: 3, leaderCommit: 2 + MAX, entries: entries(3, MAX, 3) }));
    const rd = cycle(b);
    expect(sentTo(rd, "a")).toMatchObject([{ type: "appendReply", success: true, matchIndex: 2 + MAX }]);
    expect([b.lastIndex, b.commitIndex, b.refusedFrames.get("too-many-entries")]).toEqual([2 + MAX, 2 + MAX, 1]);
  });

  it("is refused before its term is looked at: a higher-term frame neither moves the term nor makes its sender leader", () => {
    const b = following();
    expectRefused(b, append({ term: 4, prevLogIndex: 2, prevLogTerm: 3, entries: entries(3, MAX + 1, 4) }), "too-many-entries", 1, limitAnswer(2));
    expect([b.term, b.leader]).toEqual([3, "a"]);
  });
});

describe("InstallSnapshot chunk with no data", () => {
  const chunk = (over: Partial<SnapshotMessage>): SnapshotMessage => ({
    type: "snapshot", term: 3, lastIndex: 9, lastTerm: 3, config: ABC, total: 4, offset: 0, data: new Uint8Array([1, 2]), ...over,
  });

  it("mid-transfer, at offset = received, is refused and counted each time, and the transfer then completes with the right bytes", () => {
    const b = following();
    b.step("a", chunk({}));
    expect(sentTo(cycle(b), "a")).toEqual([{ type: "snapshotReply", term: 3, lastIndex: 9, nextOffset: 2, done: false }]);
    for (let i = 1; i <= 1000; i++) expectRefused(b, chunk({ offset: 2, data: new Uint8Array(0) }), "malformed-entry", i);
    b.step("a", chunk({ offset: 2, data: new Uint8Array([3, 4]) }));
    const rd = cycle(b);
    expect(sentTo(rd, "a")).toEqual([{ type: "snapshotReply", term: 3, lastIndex: 9, nextOffset: 4, done: true }]);
    expect(b.snapshot?.state).toEqual(new Uint8Array([1, 2, 3, 4]));
    expect([...b.refusedFrames]).toEqual([["malformed-entry", 1000]]);
  });

  it("at offset 0 of a non-empty snapshot is refused and starts no transfer", () => {
    const b = following();
    expectRefused(b, chunk({ data: new Uint8Array(0) }), "malformed-entry");
    // nothing in progress: a chunk at offset 2 is answered "start again from 0"
    b.step("a", chunk({ offset: 2 }));
    expect(sentTo(cycle(b), "a")).toEqual([{ type: "snapshotReply", term: 3, lastIndex: 9, nextOffset: 0, done: false }]);
  });

  it("of an empty snapshot (total 0) is the whole snapshot: installed and acknowledged", () => {
    const b = following();
    b.step("a", chunk({ total: 0, data: new Uint8Array(0) }));
    const rd = cycle(b);
    expect(sentTo(rd, "a")).toEqual([{ type: "snapshotReply", term: 3, lastIndex: 9, nextOffset: 0, done: true }]);
    expect([b.snapshot?.lastIndex, b.snapshot?.state.length, b.refusedFrames.size]).toEqual([9, 0, 0]);
  });
});
