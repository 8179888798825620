/**
 * The leader's calls and their refusals, on hand-driven cores whose `random` is a constant (governed.md R-M2, R-T1,
 * R-S1, R-E4 and the traces of §4.13):
 *
 * - `changeMembership` on a node that is not the leader is refused `not-leader` and appends nothing, even on a
 *   follower whose commit index is at its term (R-M6: a follower never appends a config entry);
 * - `transferLeadership` to a learner or a stranger is refused at once: no transfer starts (no trace of one);
 * - at the start of a transfer, a target the leader is still feeding through a budgeted window gets its next
 *   AppendEntries at once (R-T1: bring it up to the last index); one whose probe is unanswered gets nothing more
 *   (one probe at a time) and TimeoutNow follows its answer;
 * - `compact` refuses — false, nothing saved, discarded or traced — an index at or below the floor and one past the
 *   applied index (R-S1: only applied state is published), even one already committed;
 * - a follower within the leader lease denies a higher-term RequestVote and traces the denial as a vote (not a
 *   pre-vote) denied for the leader lease.
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { ClusterConfig, Envelope, LogEntry, Ready } from "../src/index.ts";
import { cycle, electVia, handCore, hand, sent } from "./support/hand-driven.ts";
import type { HandConfig } from "./support/hand-driven.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: ["l"] };
const enc = new TextEncoder();

function core(id: string, cfg: HandConfig = {}): RaftCore {
  return handCore(id, { bootstrap: ABC, cfg });
}

/** a leads term 1 (elected at 150 with b's votes); `noop` holds its first AppendEntries (the no-op at 1), unanswered. */
function leaderA(cfg: HandConfig = {}): { a: RaftCore; b: RaftCore; noop: Envelope[] } {
  const a = core("a", cfg);
  const b = core("b", cfg);
  const noop = sent(electVia(a, b));
  expect([a.state, a.term, a.lastIndex]).toEqual(["leader", 1, 1]);
  return { a, b, noop };
}
/** leaderA with the no-op acknowledged by b: committed, b in step with a. */
function committedWithB(cfg: HandConfig = {}): { a: RaftCore; b: RaftCore } {
  const { a, b, noop } = leaderA(cfg);
  hand(b, sent(hand(a, noop, b)), a);
  expect([a.commitIndex, b.commitIndex]).toEqual([1, 0]);
  return { a, b };
}
const transferTrace = (rd: Ready) => rd.trace.filter((t) => t.type === "transferStart" || t.type === "transferEnd");

describe("changeMembership off the leader (R-M2)", () => {
  it("a follower is refused not-leader and appends nothing, also once its commit index is at its term", () => {
    // a fresh follower: term 0, commit 0 (the term of index 0 is 0)
    const fresh = core("c");
    fresh.changeMembership(1, { voters: ["a", "b", "c"], learners: [] });
    const rd = cycle(fresh);
    expect(rd.outcomes).toEqual([{ id: 1, ok: false, refusal: "not-leader" }]);
    expect(rd.storage).toEqual([]);
    expect(fresh.lastIndex).toBe(0);

    // b follows a and has learnt that the no-op of term 1 committed
    const { a, b } = committedWithB();
    a.tick(200);
    hand(a, sent(cycle(a)), b); // the heartbeat carries the commit index
    expect([b.state, b.term, b.commitIndex, b.termAt(1)]).toEqual(["follower", 1, 1, 1]);
    b.changeMembership(2, { voters: ["a", "b", "c"], learners: [] });
    const rdB = cycle(b);
    expect(rdB.outcomes).toEqual([{ id: 2, ok: false, refusal: "not-leader" }]);
    expect(rdB.storage).toEqual([]);
    expect(b.lastIndex).toBe(1);
    expect(b.config).toEqual(ABC);
  });
});

describe("transferLeadership to a non-voter (R-T1)", () => {
  it("a learner or a stranger is refused at once and no transfer starts", () => {
    const { a } = committedWithB();
    a.transferLeadership(5, "l");
    a.transferLeadership(6, "zz");
    const rd = cycle(a);
    expect(rd.outcomes).toEqual([
      { id: 5, ok: false, refusal: "transfer-invalid-target" },
      { id: 6, ok: false, refusal: "transfer-invalid-target" },
    ]);
    expect(transferTrace(rd)).toEqual([]);
    expect(sent(rd)).toEqual([]);
    // nothing is held: a proposal appends at once
    a.propose(7, enc.encode("x"), null);
    expect(a.lastIndex).toBe(2);
  });
});

describe("the first step of a transfer (R-T1)", () => {
  it("a target still being fed through a budgeted window gets its next AppendEntries at once", () => {
    const { a, b } = committedWithB({ maxEntriesPerMessage: 1 });
    for (let i = 0; i < 3; i++) a.propose(10 + i, enc.encode(`p${i}`), null);
    const first = sent(cycle(a)).filter((m) => m.to === "b");
    expect(first.map((m) => m.message)).toMatchObject([{ type: "append", prevLogIndex: 1, entries: [{ index: 2 }] }]);
    a.transferLeadership(20, "b");
    const rd = cycle(a);
    expect(rd.trace).toContainEqual({ type: "transferStart", target: "b", term: 1, generation: 1 });
    const toB = sent(rd).filter((m) => m.to === "b").map((m) => m.message);
    expect(toB).toHaveLength(1);
    expect(toB[0]).toMatchObject({ type: "append", term: 1, prevLogIndex: 2, prevLogTerm: 1 });
    const append = toB[0];
    if (append?.type !== "append") throw new Error("expected an AppendEntries to b");
    expect(append.entries.map((e) => e.index)).toEqual([3]);
    // b has not been told to campaign: it holds neither the last index nor a committed copy of it
    expect(rd.outcomes).toEqual([]);
    expect(b.lastIndex).toBe(1);
  });

  it("a target whose probe is unanswered gets nothing more; its answer brings TimeoutNow", () => {
    const { a, b, noop } = leaderA();
    a.transferLeadership(20, "b");
    const rd = cycle(a);
    expect(rd.trace).toContainEqual({ type: "transferStart", target: "b", term: 1, generation: 1 });
    expect(sent(rd)).toEqual([]);
    const reply = sent(hand(a, noop, b));
    const after = hand(b, reply, a);
    expect(a.commitIndex).toBe(1);
    expect(sent(after).filter((m) => m.to === "b").map((m) => m.message)).toEqual([{ type: "timeoutNow", term: 1 }]);
  });
});

describe("compact refusals (R-S1)", () => {
  /** b holding entries 1–3 of term 1, told by a that all three committed, not yet handed to its state machine. */
  function committedNotApplied(): RaftCore {
    const es: LogEntry[] = [1, 2, 3].map((index) => ({ index, term: 1, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 }));
    const b = new RaftCore({
      id: "b", bootstrap: ABC, persisted: { term: 1, votedFor: null, snapshot: null, entries: es }, config: raftConfig({}), random: () => 0, now: 0,
    });
    b.step("a", { type: "append", term: 1, prevLogIndex: 3, prevLogTerm: 1, leaderCommit: 3, round: 0, entries: [] });
    expect([b.commitIndex, b.appliedIndex]).toEqual([3, 0]);
    return b;
  }

  it("an index past the applied one is refused, though committed; nothing is saved, discarded or traced", () => {
    const b = committedNotApplied();
    expect(b.compact(2, new Uint8Array([2]))).toBe(false);
    expect(b.floor).toBe(0);
    expect(b.snapshot).toBe(null);
    const rd = cycle(b);
    expect(rd.storage.filter((op) => op.op === "snapshot" || op.op === "discardThrough")).toEqual([]);
    expect(rd.trace.filter((t) => t.type === "compacted")).toEqual([]);
    expect(rd.committed.map((c) => (c.kind === "entry" ? c.entry.index : -1))).toEqual([1, 2, 3]);
    expect(b.appliedIndex).toBe(3);
  });

  it("an index at or below the floor is refused: false, and the first snapshot stays", () => {
    const b = committedNotApplied();
    cycle(b); // applies 1–3
    expect(b.compact(2, new Uint8Array([2]))).toBe(true);
    const first = b.snapshot;
    expect(first).toMatchObject({ lastIndex: 2, lastTerm: 1, config: ABC, state: new Uint8Array([2]) });
    cycle(b);
    expect(b.compact(2, new Uint8Array([22]))).toBe(false);
    expect(b.compact(1, new Uint8Array([1]))).toBe(false);
    expect(b.compact(4, new Uint8Array([4]))).toBe(false);
    expect(b.snapshot).toBe(first);
    expect(b.floor).toBe(2);
    const rd = cycle(b);
    expect(rd.storage).toEqual([]);
    expect(rd.trace).toEqual([]);
  });
});

describe("stickiness traced (R-E4, §4.13)", () => {
  it("within the leader lease a higher-term RequestVote is denied as a vote, for the leader lease, at the old term", () => {
    const { a, b, noop } = leaderA();
    hand(a, noop, b);
    b.step("c", { type: "vote", term: 2, lastLogIndex: 9, lastLogTerm: 1 });
    const rd = cycle(b);
    expect(b.term).toBe(1);
    expect(rd.trace).toEqual([{ type: "voteDenied", to: "c", term: 2, preVote: false, reason: "leader lease" }]);
    expect(sent(rd)).toEqual([{ to: "c", message: { type: "voteReply", term: 1, granted: false } }]);
  });
});
