/**
 * How elections end and what a fresh leader takes over (governed.md R-E2, R-E4, R-F1, R-D4, R-T2), on hand-driven
 * cores whose `random` is a constant (every election timeout is the minimum, 150):
 *
 * - a pre-candidate denied by a quorum gives up: it is a follower again and waits a whole election timeout from the
 *   last denial before it tries again;
 * - a candidate denied by a quorum steps down (`stepDown`, "lost-election");
 * - a node that wins reports itself as the leader;
 * - proposals made while no leader was known are appended by the node itself when it wins;
 * - a new leader counts every peer as active until its first check-quorum: only a second check without an answer
 *   steps it down;
 * - a new leader refills its dedup cache from the tail of its log, so a retry of a key it appended in an earlier
 *   term is coalesced, not appended again;
 * - a leader elected again while a transfer it started in an earlier term still runs ends that transfer as
 *   `superseded`, answering its caller.
 */
import { describe, expect, it } from "vitest";
import type { LogEntry, Ready } from "../src/index.ts";
import { cycle, electVia as elect, handCore as core, hand, sent } from "./support/hand-driven.ts";

const enc = new TextEncoder();
const outcomeIds = (rds: Ready[]) => rds.flatMap((rd) => rd.outcomes.map((o) => o.id));

describe("a lost pre-vote (R-E2)", () => {
  it("a pre-candidate denied by a quorum is a follower again and waits a full election timeout from the denial", () => {
    const a = core("a");
    a.tick(150);
    expect(cycle(a).trace).toContainEqual({ type: "preVoteStart", term: 1, round: 1 });
    a.tick(160);
    // b and c deny at their term (0): say, both follow a leader a cannot hear
    a.step("b", { type: "preVoteReply", term: 0, granted: false, round: 1 });
    expect(a.state).toBe("precandidate"); // one denial of three is not a quorum
    a.step("c", { type: "preVoteReply", term: 0, granted: false, round: 1 });
    expect([a.state, a.role, a.term]).toEqual(["follower", "follower", 0]);
    cycle(a);
    // 150 after the pre-vote started: the timer was reset by the denial at 160, so nothing starts yet
    a.tick(300);
    const quiet = cycle(a);
    expect(sent(quiet)).toEqual([]);
    expect(quiet.trace).toEqual([]);
    a.tick(310);
    expect(cycle(a).trace).toContainEqual({ type: "preVoteStart", term: 1, round: 2 });
  });
});

describe("a lost election (R-E2)", () => {
  it("a candidate denied by a quorum steps down as having lost the election", () => {
    const a = core("a");
    a.tick(150);
    cycle(a);
    a.step("b", { type: "preVoteReply", term: 1, granted: true, round: 1 });
    expect([a.state, a.term]).toEqual(["candidate", 1]);
    cycle(a);
    // b and c voted for someone else in term 1
    a.step("b", { type: "voteReply", term: 1, granted: false });
    expect(a.state).toBe("candidate");
    a.step("c", { type: "voteReply", term: 1, granted: false });
    const rd = cycle(a);
    expect(rd.trace).toContainEqual({ type: "stepDown", term: 1, reason: "lost-election" });
    expect([a.state, a.role, a.term, a.leader]).toEqual(["follower", "follower", 1, null]);
  });
});

describe("what a new leader takes over", () => {
  it("the winner reports itself as the leader", () => {
    const a = core("a");
    const b = core("b");
    elect(a, b, 150);
    expect(a.leader).toBe("a");
    expect(a.role).toBe("leader");
  });

  it("a proposal made while no leader was known is appended by the node itself when it wins (R-F1)", () => {
    const a = core("a");
    const b = core("b");
    a.propose(1, enc.encode("x"), { client: "k", seq: 1 });
    const idle = cycle(a);
    expect([sent(idle), idle.outcomes]).toEqual([[], []]);
    const won = elect(a, b, 150);
    expect(a.lastIndex).toBe(2);
    expect(a.entryAt(2)).toMatchObject({ index: 2, term: 1, kind: "app", key: { client: "k", seq: 1 }, command: enc.encode("x") });
    // nothing is forwarded: a leads
    expect(sent(won).filter((m) => m.message.type === "forward")).toEqual([]);
    const acked = hand(b, sent(hand(a, sent(won), b)), a);
    expect(acked.outcomes).toEqual([{ id: 1, ok: true, index: 2, term: 1 }]);
  });

  it("every peer counts as active until the first check-quorum; the second one without an answer steps the leader down", () => {
    const a = core("a");
    const b = core("b");
    elect(a, b, 150); // nobody answers the no-op from here on
    a.tick(300); // first check-quorum, one election timeout after the win
    const first = cycle(a);
    expect(first.trace.filter((t) => t.type === "stepDown")).toEqual([]);
    expect(a.state).toBe("leader");
    a.tick(450);
    expect(cycle(a).trace).toContainEqual({ type: "stepDown", term: 1, reason: "lost-quorum" });
    expect(a.state).toBe("follower");
  });

  it("the dedup cache is refilled from the log: a retry of a key appended in an earlier term is coalesced (R-D4)", () => {
    // a restarts holding entries 1–10 of term 1, keyed k/1 … k/10; its cache holds 8 keys
    const entries: LogEntry[] = [];
    for (let i = 1; i <= 10; i++) entries.push({ index: i, term: 1, kind: "app", key: { client: "k", seq: i }, command: new Uint8Array([i]), stampedAt: 0 });
    const a = core("a", { cfg: { maxDedupKeys: 8 }, term: 1, entries });
    const c = core("c");
    elect(a, c, 150);
    expect([a.term, a.lastIndex]).toEqual([2, 11]);
    // k/5 is among the 8 latest keys, 6 entries back from the last index
    a.propose(50, new Uint8Array([5]), { client: "k", seq: 5 });
    const rd = cycle(a);
    expect(rd.trace).toContainEqual({ type: "proposalCoalesced", index: 5, committed: false });
    expect(a.lastIndex).toBe(11);
    expect(rd.storage).toEqual([]);
  });

  it("a leader elected again ends the transfer it started in an earlier term as superseded (R-T2)", () => {
    const a = core("a");
    const b = core("b");
    const c = core("c");
    elect(a, b, 150); // b's no-op is never answered: b lags, so no TimeoutNow goes out
    a.transferLeadership(20, "b");
    expect(cycle(a).trace).toContainEqual({ type: "transferStart", target: "b", term: 1, generation: 1 });
    // c has moved on to term 2: a steps down; its transfer outlives the step-down
    a.step("c", { type: "voteReply", term: 2, granted: false });
    const down = cycle(a);
    expect(down.trace).toContainEqual({ type: "stepDown", term: 2, reason: "higher-term" });
    expect(down.outcomes).toEqual([]);
    expect(a.transfer).toMatchObject({ target: "b", term: 1, generation: 1 });
    // a's election timer fires before the transfer's deadline (450); c elects it for term 3
    const won = elect(a, c, 300);
    expect(a.term).toBe(3);
    expect(won.trace).toContainEqual({ type: "transferEnd", target: "b", generation: 1, outcome: "superseded" });
    expect(won.outcomes).toEqual([{ id: 20, ok: false, refusal: "transfer-superseded" }]);
    expect(a.transfer).toBeNull();
    // nothing is held any more: a proposal is appended at once
    a.propose(21, enc.encode("y"), null);
    expect(a.lastIndex).toBe(3);
    expect(outcomeIds([cycle(a)])).toEqual([]);
  });
});
