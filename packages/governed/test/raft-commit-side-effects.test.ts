/**
 * What a commit on the leader sets off besides answering requests (governed.md R-R4, R-R5, R-M3, R-Q3), on
 * hand-driven cores (support/hand-driven.ts):
 *
 * - the commit notice (an entry-less AppendEntries carrying the commit index) goes only to a follower in replicate
 *   with nothing more to receive, `commitNoticeMs` after the first commit that made it due — a later commit does
 *   not push it back, and a commit that made nobody due does not start the clock;
 * - entries appended in the same turn as a commit still go out to every follower with room for them;
 * - a leader that removed itself steps down only once the removal commits, not on an earlier commit;
 * - a single voter answers a read at once, without queueing it for a confirmation round.
 */
import { describe, expect, it } from "vitest";
import type { RaftCore } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent, sentTo } from "./support/hand-driven.ts";
import type { HandConfig } from "./support/hand-driven.ts";

const enc = new TextEncoder();

/** Leader `a` (elected at 150 via `b`) with `b` and `c` both in replicate at match 1 and commit 1, at time 160. */
function trio(cfg: HandConfig = {}): { a: RaftCore; b: RaftCore; c: RaftCore } {
  const a = handCore("a", { cfg });
  const b = handCore("b");
  const c = handCore("c");
  const first = sent(electVia(a, b));
  hand(b, sent(hand(a, first, b)), a);
  hand(c, sent(hand(a, first, c)), a);
  expect([a.commitIndex, a.progress.get("b")?.state, a.progress.get("c")?.state]).toEqual([1, "replicate", "replicate"]);
  a.tick(160); // the notice of commit 1 goes out
  cycle(a);
  return { a, b, c };
}

describe("commit notices (R-R5: a follower learns the commit index)", () => {
  it("a follower whose window is full still owes an entry: it gets no notice, only the entry once there is room", () => {
    const { a, c } = trio({ maxInflightMessages: 1 });
    a.propose(1, enc.encode("x"), null);
    const r2 = cycle(a); // entry 2 to b and c
    a.propose(2, enc.encode("y"), null);
    expect(sent(cycle(a))).toEqual([]); // entry 3 waits: both windows are full
    const rd = hand(c, sent(hand(a, sent(r2), c)), a); // c acks 2: commit 2
    expect(a.commitIndex).toBe(2);
    expect(sentTo(rd, "c")).toMatchObject([{ type: "append", prevLogIndex: 2, entries: [{ index: 3 }] }]);
    expect(sentTo(rd, "b")).toEqual([]);
    a.tick(170); // past commitNoticeMs (5), before the heartbeat (200)
    expect(sentTo(cycle(a), "b")).toEqual([]);
  });

  it("a second commit before the notice is sent does not push the notice back", () => {
    const { a, b } = trio();
    a.propose(1, enc.encode("x"), null);
    const r2 = cycle(a);
    a.propose(2, enc.encode("y"), null);
    const r3 = cycle(a);
    const ack2 = sent(hand(a, sent(r2), b));
    const ack3 = sent(hand(a, sent(r3), b));
    a.tick(161);
    const rd2 = hand(b, ack2, a); // commit 2: b and c have everything, the notice is due at 166
    expect(a.commitIndex).toBe(2);
    expect([sentTo(rd2, "b"), sentTo(rd2, "c")]).toEqual([[], []]);
    a.tick(163);
    hand(b, ack3, a); // commit 3
    expect(a.commitIndex).toBe(3);
    a.tick(166);
    const rd = cycle(a);
    expect(sentTo(rd, "b")).toMatchObject([{ type: "append", prevLogIndex: 3, leaderCommit: 3, entries: [] }]);
    expect(sentTo(rd, "c")).toMatchObject([{ type: "append", prevLogIndex: 1, leaderCommit: 3, entries: [] }]);
  });

  it("a commit that made no follower due does not start the notice clock", () => {
    const { a, b } = trio({ maxInflightMessages: 1 });
    a.propose(1, enc.encode("x"), null);
    const r2 = cycle(a); // entry 2 to b and c; c never answers
    a.propose(2, enc.encode("y"), null);
    cycle(a);
    const ack2 = sent(hand(a, sent(r2), b));
    a.tick(161);
    const rd2 = hand(b, ack2, a); // commit 2: b and c are both owed entry 3, nobody is due
    expect(a.commitIndex).toBe(2);
    expect(sentTo(rd2, "b")).toMatchObject([{ type: "append", prevLogIndex: 2, entries: [{ index: 3 }] }]);
    const ack3 = sent(hand(a, sent(rd2), b));
    a.tick(163);
    hand(b, ack3, a); // commit 3: b is due now, its notice at 168
    expect(a.commitIndex).toBe(3);
    a.tick(166);
    expect(sentTo(cycle(a), "b")).toEqual([]);
    a.tick(168);
    expect(sentTo(cycle(a), "b")).toMatchObject([{ type: "append", prevLogIndex: 3, leaderCommit: 3, entries: [] }]);
  });
});

describe("entries appended in the turn of a commit", () => {
  it("go out to every follower with room, not only to the one whose answer committed", () => {
    const { a, b } = trio();
    a.propose(1, enc.encode("x"), null);
    const r2 = cycle(a);
    const ack2 = sent(hand(a, sent(r2), b));
    a.propose(2, enc.encode("y"), null); // entry 3, appended in the same turn as b's answer arrives
    const rd = hand(b, ack2, a);
    expect(a.commitIndex).toBe(2);
    expect(sentTo(rd, "b")).toMatchObject([{ type: "append", prevLogIndex: 2, entries: [{ index: 3 }] }]);
    expect(sentTo(rd, "c")).toMatchObject([{ type: "append", prevLogIndex: 2, entries: [{ index: 3 }] }]);
  });
});

describe("a leader that removes itself (R-M3)", () => {
  it("keeps leading while only entries before its removal commit", () => {
    const { a, b, c } = trio();
    a.propose(1, enc.encode("x"), null);
    const r2 = cycle(a);
    a.changeMembership(9, { voters: ["b", "c"], learners: [] }); // entry 3, in force at once: b and c commit
    cycle(a);
    const ackB = sent(hand(a, sent(r2), b));
    const ackC = sent(hand(a, sent(r2), c));
    hand(b, ackB, a);
    const rd = hand(c, ackC, a);
    expect(a.commitIndex).toBe(2);
    expect(a.state).toBe("leader");
    expect(rd.trace.filter((e) => e.type === "stepDown")).toEqual([]);
    expect(rd.outcomes).toEqual([{ id: 1, ok: true, index: 2, term: 1 }]);
  });
});

describe("reads on a single voter (R-Q3)", () => {
  it("are answered at once, so they never count against maxPendingReads", () => {
    const a = handCore("a", { bootstrap: { voters: ["a"], learners: [] }, cfg: { maxPendingReads: 1 } });
    a.tick(150);
    for (let i = 0; i < 3; i++) cycle(a);
    expect([a.state, a.commitIndex]).toEqual(["leader", 1]);
    a.readIndex(1);
    a.readIndex(2);
    const rd = cycle(a);
    expect(rd.outcomes).toEqual([
      { id: 1, ok: true, index: 1, term: 1 },
      { id: 2, ok: true, index: 1, term: 1 },
    ]);
    expect(rd.trace.filter((e) => e.type === "readConfirmed")).toEqual([
      { type: "readConfirmed", index: 1 },
      { type: "readConfirmed", index: 1 },
    ]);
  });
});
