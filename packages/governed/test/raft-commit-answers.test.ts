/**
 * What a commit index advance on the leader answers, and when (governed.md R-R4, R-F1, R-D4, R-M2, R-T1), and
 * what it leaves alone on a follower, on hand-driven cores whose `random` is a constant:
 *
 * - the leader commits by counting only an entry of its own term: a majority holding an entry of an earlier term
 *   commits nothing (R-R4, Raft §5.4.2);
 * - a commit answers only what it covers: a forwarded proposal, a coalesced retry (R-D4) or a config change whose
 *   entry lies past the new commit index waits for a later commit;
 * - the leader's coalesced-retry budget is given back when the retries are answered at commit;
 * - a follower with more entries still to receive gets them, not an extra entry-less commit notice;
 * - a learner that learns of a commit keeps following its leader (only a leader removed by a committed config steps
 *   down, "removed");
 * - TimeoutNow goes to the transfer target once when it is due; an AppendEntries answer from another follower does
 *   not repeat it (the heartbeat does, in case it was lost).
 */
import { describe, expect, it } from "vitest";
import type { ClusterConfig, Envelope, LogEntry, RaftCore, Ready } from "../src/index.ts";
import { cycle, electVia, entry, handCore, hand, sent, sentTo as to } from "./support/hand-driven.ts";
import type { HandConfig as Cfg } from "./support/hand-driven.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: ["l"] };
const enc = new TextEncoder();

function core(id: string, cfg: Cfg = {}, term = 0, entries: LogEntry[] = []): RaftCore {
  return handCore(id, { bootstrap: ABC, cfg, term, entries });
}
const commitTrace = (rd: Ready) => rd.trace.filter((t) => t.type === "commitAdvance");

/** `a` wins the election of the term after its own with `b`'s (pre-)votes; `first` is its first ready's frames. */
const elect = (a: RaftCore, b: RaftCore): Envelope[] => sent(electVia(a, b));
/** a leads term 1 with b; its no-op (index 1) is committed and b acknowledged it (b: replicate, next 2). */
function committedWithB(cfg: Cfg = {}): { a: RaftCore; b: RaftCore; first: Envelope[] } {
  const a = core("a", cfg);
  const b = core("b", cfg);
  const first = elect(a, b);
  hand(b, sent(hand(a, first, b)), a);
  expect([a.term, a.commitIndex, b.commitIndex]).toEqual([1, 1, 0]);
  return { a, b, first };
}

describe("the leader counts only entries of its own term (R-R4)", () => {
  it("a majority holding an entry of an earlier term commits nothing until the leader's own entry is on it", () => {
    // a holds entry 1 of term 1; b holds nothing. a leads term 2 and appends its no-op at 2.
    const a = core("a", { maxEntriesPerMessage: 1 }, 1, [entry(1, 1)]);
    const b = core("b", { maxEntriesPerMessage: 1 }, 1);
    const first = elect(a, b);
    expect([a.term, a.lastIndex, a.persistedLast]).toEqual([2, 2, 2]);
    // b lacks prev 1: rejected; a backs up and sends entry 1 alone
    const back = hand(b, sent(hand(a, first, b)), a);
    expect(to(back, "b")).toMatchObject([{ type: "append", prevLogIndex: 0, entries: [{ index: 1, term: 1 }] }]);
    const ack1 = sent(hand(a, sent(back), b));
    expect(ack1).toMatchObject([{ to: "a", message: { type: "appendReply", success: true, matchIndex: 1 } }]);
    // a and b (a majority of three) hold entry 1, but it is of term 1: not committed by counting
    const rd = hand(b, ack1, a);
    expect(a.commitIndex).toBe(0);
    expect(commitTrace(rd)).toEqual([]);
    expect(to(rd, "b")).toMatchObject([{ type: "append", prevLogIndex: 1, leaderCommit: 0, entries: [{ index: 2, term: 2 }] }]);
    // the no-op of term 2 on the same majority commits both
    const after = hand(b, sent(hand(a, sent(rd), b)), a);
    expect(a.commitIndex).toBe(2);
    expect(commitTrace(after)).toEqual([{ type: "commitAdvance", commitIndex: 2 }]);
  });
});

describe("a commit answers only what it covers (R-F1, R-D4, R-M2)", () => {
  it("a forwarded proposal appended past the new commit index gets no answer yet", () => {
    const a = core("a");
    const b = core("b");
    const first = elect(a, b);
    const ack = sent(hand(a, first, b)); // b holds the no-op; its answer is held back
    b.propose(7, enc.encode("fwd"), null);
    const fwd = sent(cycle(b));
    expect(fwd).toMatchObject([{ to: "a", message: { type: "forward", corrId: 7 } }]);
    hand(b, fwd, a); // appended at 2
    expect(a.lastIndex).toBe(2);
    const rd = hand(b, ack, a); // commits the no-op (1) only
    expect(a.commitIndex).toBe(1);
    expect(to(rd, "b").filter((m) => m.type === "forwardReply")).toEqual([]);
    // b's proposal reports nothing either
    expect(hand(a, sent(rd), b).outcomes).toEqual([]);
  });

  it("a coalesced retry of an entry past the new commit index gets no answer yet", () => {
    const a = core("a");
    const b = core("b");
    const first = elect(a, b);
    const ack = sent(hand(a, first, b));
    const key = { client: "w", seq: 1 };
    a.propose(1, enc.encode("x"), key); // index 2
    a.propose(2, enc.encode("x"), key); // the retry: coalesced with 2
    const rd0 = cycle(a);
    expect(rd0.trace).toContainEqual({ type: "proposalCoalesced", index: 2, committed: false });
    const rd = hand(b, ack, a); // commits 1
    expect(a.commitIndex).toBe(1);
    expect(rd.outcomes).toEqual([]);
  });

  it("a config change whose entry lies past the new commit index is not reported yet", () => {
    const { a, b } = committedWithB({ maxEntriesPerMessage: 1 });
    a.propose(1, enc.encode("p"), null); // index 2
    a.changeMembership(2, { voters: ["a", "b", "c"], learners: [] }); // index 3: drops the learner
    const rd0 = cycle(a);
    expect(to(rd0, "b")).toMatchObject([{ type: "append", prevLogIndex: 1, entries: [{ index: 2 }] }]);
    const rd = hand(b, sent(hand(a, sent(rd0), b)), a);
    expect(a.commitIndex).toBe(2);
    expect(rd.outcomes).toEqual([{ id: 1, ok: true, index: 2, term: 1 }]);
  });
});

describe("the coalesced-retry budget (R-D4)", () => {
  it("retries answered at commit give their places back", () => {
    const { a, b } = committedWithB({ maxPendingProposals: 2 });
    const key = { client: "w", seq: 1 };
    a.propose(1, enc.encode("x"), key); // index 2
    a.propose(2, enc.encode("x"), key); // coalesced: one place taken
    a.propose(3, enc.encode("x"), key); // coalesced: two places taken
    const rd0 = cycle(a);
    expect(rd0.outcomes).toEqual([]);
    const rd = hand(b, sent(hand(a, sent(rd0), b)), a);
    expect(a.commitIndex).toBe(2);
    expect(rd.outcomes).toEqual([
      { id: 1, ok: true, index: 2, term: 1 },
      { id: 2, ok: true, index: 2, term: 1 },
      { id: 3, ok: true, index: 2, term: 1 },
    ]);
    // a new in-flight entry and two retries of it: the budget of two is whole again
    const key2 = { client: "w", seq: 2 };
    a.propose(4, enc.encode("y"), key2); // index 3
    a.propose(5, enc.encode("y"), key2);
    a.propose(6, enc.encode("y"), key2);
    expect(cycle(a).outcomes).toEqual([]);
    a.propose(7, enc.encode("y"), key2); // the third retry is over budget
    expect(cycle(a).outcomes).toEqual([{ id: 7, ok: false, refusal: "overloaded" }]);
  });
});

describe("commit notices go only to followers with nothing more to receive", () => {
  it("a forwarder still owed entries gets them, not an extra entry-less AppendEntries", () => {
    const { a, b } = committedWithB();
    b.propose(7, enc.encode("fwd"), null);
    const fwd = sent(cycle(b));
    const rd0 = hand(b, fwd, a); // appended at 2 and sent to b
    expect(to(rd0, "b")).toMatchObject([{ type: "append", prevLogIndex: 1, entries: [{ index: 2 }] }]);
    const ack = sent(hand(a, sent(rd0), b));
    a.propose(8, enc.encode("local"), null); // index 3: b now has more to receive
    const rd = hand(b, ack, a); // commits 2
    expect(a.commitIndex).toBe(2);
    expect(to(rd, "b").filter((m) => m.type === "forwardReply")).toEqual([
      { type: "forwardReply", corrId: 7, outcome: "committed", index: 2, term: 1 },
    ]);
    // one AppendEntries: the next entry, which carries the commit index too
    expect(to(rd, "b").filter((m) => m.type === "append")).toMatchObject([{ prevLogIndex: 2, leaderCommit: 2, entries: [{ index: 3 }] }]);
  });
});

describe("a learner learning of a commit (R-M3)", () => {
  it("keeps following its leader: its proposals are still forwarded", () => {
    const a = core("a");
    const b = core("b");
    const l = core("l");
    const first = elect(a, b);
    hand(a, first, l); // l holds the no-op and follows a
    hand(b, sent(hand(a, first, b)), a); // commit 1
    a.tick(200); // the heartbeat carries the commit index
    hand(a, sent(cycle(a)), l);
    expect([l.role, l.commitIndex, l.leader]).toEqual(["learner", 1, "a"]);
    l.propose(9, enc.encode("from-l"), null);
    const rd = cycle(l);
    expect(rd.outcomes).toEqual([]);
    expect(sent(rd)).toMatchObject([{ to: "a", message: { type: "forward", corrId: 9 } }]);
  });
});

describe("TimeoutNow is not repeated on every answer (R-T1)", () => {
  it("an AppendEntries answer from another follower after TimeoutNow went out sends no second one", () => {
    const { a, first } = committedWithB();
    a.transferLeadership(20, "b");
    expect(to(cycle(a), "b")).toEqual([{ type: "timeoutNow", term: 1 }]);
    const c = core("c");
    const rd = hand(c, sent(hand(a, first, c)), a); // c answers the no-op
    expect(a.progress.get("c")?.match).toBe(1);
    expect(to(rd, "b")).toEqual([]);
    // the heartbeat repeats it, in case the first was lost
    a.tick(200);
    expect(to(cycle(a), "b")).toContainEqual({ type: "timeoutNow", term: 1 });
  });
});
