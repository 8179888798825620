/**
 * What a node counts as its own durable log (`persistedLast`), and so what a leader counts toward commitment
 * (governed.md R-R4: the leader counts itself only once its own append is durable), across `advance`,
 * `appendsDurable` and snapshots:
 * - with pipelining, a notice of durable appends covers exactly the entries of that ready, never the rest of the log;
 * - a notice taken in an earlier term, or reaching a node that has stepped down, is ignored;
 * - a leader's own compaction adds nothing to its durable log (it covers committed indexes only and may still be in
 *   flight), while an installed snapshot counts as durable through its index;
 * - after a ready that installed a snapshot over a conflicting log, entries that ready wrote and the install then
 *   truncated do not count.
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { LogEntry, Message, Ready } from "../src/index.ts";
import { Script } from "./support/script.ts";

const ABC = { voters: ["a", "b", "c"], learners: [] };

function e(index: number, term: number): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 };
}
/** Takes `id`'s ready, queues its messages, and acknowledges it with its appends still being written. */
function pipelined(s: Script, id: string): Ready {
  const c = s.core(id);
  const rd = c.ready();
  expect(c.pipelinable(rd)).toBe(true);
  for (const env of [...rd.earlyMessages, ...rd.messages]) s.inflight.push({ from: id, to: env.to, message: env.message });
  for (const o of rd.outcomes) s.outcomes.set(o.id, o);
  c.advance(rd, { appendsPending: true });
  return rd;
}
/** a leads a, b, c with its no-op (index 1) committed everywhere. */
function elected(): { s: Script; a: RaftCore } {
  const s = new Script(["a", "b", "c"]);
  s.elect("a");
  const a = s.core("a");
  expect([a.commitIndex, a.persistedLast]).toEqual([1, 1]);
  return { s, a };
}
const appendReply = (term: number, matchIndex: number): Message => ({
  type: "appendReply", term, success: true, matchIndex, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 0,
});

describe("pipelined appends (R-R4)", () => {
  it("a notice covers the entries of its own ready only: the leader does not count a later ready's entry", () => {
    const { s, a } = elected();
    s.propose("a", new Uint8Array([2]));
    const rd1 = pipelined(s, "a");
    s.propose("a", new Uint8Array([3]));
    pipelined(s, "a");
    a.appendsDurable(rd1, a.term);
    expect(a.persistedLast).toBe(2);
    // c stores both entries; b hears nothing. a and c hold 2 durably; only c holds 3 durably
    s.deliver((m) => m.to === "c");
    s.flush("c");
    s.deliver((m) => m.to === "a" && m.from === "c");
    expect(a.commitIndex).toBe(2);
  });

  it("a notice from an earlier term is ignored: a re-elected leader does not count entries that were truncated since", () => {
    const { s, a } = elected();
    s.propose("a", new Uint8Array([2]));
    s.propose("a", new Uint8Array([3]));
    const rd1 = pipelined(s, "a"); // entries 2 and 3 of term 1, not yet durable
    s.inflight = [];
    // b leads term 2 and overwrites a's entry 2 (a's 3 goes too)
    a.step("b", { type: "append", term: 2, prevLogIndex: 1, prevLogTerm: 1, leaderCommit: 1, round: 0, entries: [e(2, 2)] });
    a.advance(a.ready());
    expect([a.state, a.lastIndex, a.persistedLast]).toEqual(["follower", 2, 2]);
    // a wins term 3 with c's votes; its no-op lands at index 3, where term 1's entry was
    a.tick(a.now + 300);
    const pre = a.ready();
    a.advance(pre);
    const round = pre.messages.map((m) => m.message).find((m) => m.type === "preVote")!;
    a.step("c", { type: "preVoteReply", term: 3, granted: true, round: round.type === "preVote" ? round.round : -1 });
    a.advance(a.ready());
    a.step("c", { type: "voteReply", term: 3, granted: true });
    expect([a.state, a.term]).toEqual(["leader", 3]);
    const rd3 = pipelined(s, "a");
    expect(a.entries.map((x) => [x.index, x.term])).toEqual([[1, 1], [2, 2], [3, 3]]);
    a.appendsDurable(rd1, 1); // late notice for term 1's entries 2 and 3
    expect(a.persistedLast).toBe(2);
    // c stores the no-op: with a's own copy not durable yet, that is one copy of three
    a.step("c", appendReply(3, 3));
    expect(a.commitIndex).toBe(1);
    a.appendsDurable(rd3, 3);
    expect(a.commitIndex).toBe(3);
  });

  it("a notice reaching a leader that has stepped down is ignored", () => {
    const { s, a } = elected();
    s.propose("a", new Uint8Array([2]));
    const rd1 = pipelined(s, "a");
    s.inflight = [];
    const term = a.term;
    // its voters stay silent for two check-quorum windows: a steps down at the same term
    a.tick(a.now + 1000);
    a.advance(a.ready());
    a.tick(a.now + 1000);
    expect([a.state, a.term]).toEqual(["follower", term]);
    a.advance(a.ready());
    a.appendsDurable(rd1, term);
    expect(a.persistedLast).toBe(1);
  });
});

describe("snapshots and the durable log", () => {
  it("a leader's own compaction adds nothing to its durable log", () => {
    const { s, a } = elected();
    s.propose("a", new Uint8Array([2]));
    const rd1 = pipelined(s, "a");
    s.deliver((m) => m.to === "b" || m.to === "c");
    s.flush("b");
    s.flush("c");
    s.deliver((m) => m.to === "a");
    expect([a.commitIndex, a.persistedLast]).toEqual([2, 1]); // committed by b and c, a's own copy still in flight
    a.advance(a.ready()); // applies 2
    expect(a.appliedIndex).toBe(2);
    expect(a.compact(2, new Uint8Array([9]))).toBe(true);
    a.advance(a.ready());
    expect(a.persistedLast).toBe(1);
    a.appendsDurable(rd1, a.term);
    expect(a.persistedLast).toBe(2);
  });

  it("an installed snapshot counts as durable through its index", () => {
    const b = new RaftCore({
      id: "b", bootstrap: ABC, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] }, config: raftConfig({}), random: () => 0.5, now: 0,
    });
    b.step("a", { type: "snapshot", term: 2, lastIndex: 5, lastTerm: 2, config: ABC, total: 1, offset: 0, data: new Uint8Array([1]) });
    const rd = b.ready();
    expect(rd.storage.map((op) => op.op)).toEqual(["snapshot", "discardThrough"]);
    b.advance(rd);
    expect([b.lastIndex, b.persistedLast]).toEqual([5, 5]);
  });

  it("entries a ready wrote and its snapshot install truncated do not count, nor do newer ones not yet written", () => {
    const b = new RaftCore({
      id: "b", bootstrap: ABC, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] }, config: raftConfig({}), random: () => 0.5, now: 0,
    });
    // a (term 1) sends entries 1–3; before b's ready is taken, c (term 2) installs a snapshot through 1 whose term differs
    b.step("a", { type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [e(1, 1), e(2, 1), e(3, 1)] });
    b.step("c", { type: "snapshot", term: 2, lastIndex: 1, lastTerm: 2, config: ABC, total: 1, offset: 0, data: new Uint8Array([1]) });
    const rd = b.ready();
    expect(rd.storage.map((op) => op.op)).toEqual(["append", "snapshot", "truncateFrom", "discardThrough"]);
    // c's entries 2–4 arrive while that ready is being written: they belong to the next ready
    b.step("c", { type: "append", term: 2, prevLogIndex: 1, prevLogTerm: 2, leaderCommit: 1, round: 0, entries: [e(2, 2), e(3, 2), e(4, 2)] });
    b.advance(rd);
    expect(b.lastIndex).toBe(4);
    expect(b.persistedLast).toBeLessThanOrEqual(1);
    b.advance(b.ready());
    expect(b.persistedLast).toBe(4);
  });

  it("a ready that installed a snapshot over a conflicting log counts as durable through the snapshot, not the old log's end", () => {
    const b = new RaftCore({
      id: "b", bootstrap: ABC, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] }, config: raftConfig({}), random: () => 0.5, now: 0,
    });
    b.step("a", { type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [e(1, 1), e(2, 1), e(3, 1)] });
    b.advance(b.ready());
    expect([b.lastIndex, b.persistedLast]).toEqual([3, 3]);
    // c (term 2) installs its snapshot through 5: b's entry 3 has another term, so its whole log goes
    b.step("c", { type: "snapshot", term: 2, lastIndex: 5, lastTerm: 2, config: ABC, total: 1, offset: 0, data: new Uint8Array([5]) });
    const rd = b.ready();
    expect(rd.storage.map((op) => op.op)).toEqual(["snapshot", "truncateFrom", "discardThrough"]);
    b.advance(rd);
    // what is on disk now is the snapshot through 5 and nothing after it
    expect([b.floor, b.lastIndex, b.persistedLast]).toEqual([5, 5, 5]);
  });
});
