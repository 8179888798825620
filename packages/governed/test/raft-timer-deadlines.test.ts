/**
 * The core's timers fire when their time has come — a tick at exactly the due time counts (governed.md R-E1, R-C1,
 * R-T2 and the commit notice of `commitNoticeMs`), on hand-driven cores whose `random` is a constant, so every
 * deadline is known: the election timeout is `min + floor(random · (max − min))`.
 *
 * - a follower ticked at exactly its election deadline starts a pre-vote; one millisecond earlier it does not;
 * - a leader ticked at exactly its commit-notice time sends the notice (an entry-less AppendEntries carrying the
 *   commit index) to the followers owed one and only those, once; a tick before that time sends nothing;
 * - the notice set is forgotten once served: a follower removed while owed a notice and later re-added is probed
 *   afresh, never sent the stale notice;
 * - a leader whose voters stayed silent through a whole check-quorum window steps down at exactly its end;
 * - a leadership transfer is abandoned at exactly one `electionTimeoutMaxMs`, and a lost TimeoutNow is re-sent
 *   with the next heartbeat.
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { ClusterConfig, Envelope, Ready } from "../src/index.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: [] };
// defaults, written out: election timeout in [150, 300), heartbeat 50, commit notice 5
const CFG = raftConfig({ electionTimeoutMinMs: 150, electionTimeoutMaxMs: 300, heartbeatMs: 50, commitNoticeMs: 5 });

function core(id: string, random = 0): RaftCore {
  return new RaftCore({ id, bootstrap: ABC, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] }, config: CFG, random: () => random, now: 0 });
}
/** One ready/advance cycle; the messages it sent. */
function out(c: RaftCore): Envelope[] {
  const rd: Ready = c.ready();
  c.advance(rd);
  return [...rd.earlyMessages, ...rd.messages];
}
/** Ticks `c` to `now` and returns what it sent. */
function tickOut(c: RaftCore, now: number): Envelope[] {
  c.tick(now);
  return out(c);
}
/** Hands `msgs` addressed to `to` over to it (from `from`), and returns what it answered. */
function hand(from: RaftCore, msgs: Envelope[], to: RaftCore): Envelope[] {
  for (const m of msgs) if (m.to === to.id) to.step(from.id, m.message);
  return out(to);
}

/** a leads term 1, elected at 150 (random 0: its deadline is exactly min) with b's votes; c has heard nothing. */
function leaderA(): { a: RaftCore; b: RaftCore; c: RaftCore; noop: Envelope[] } {
  const a = core("a");
  const b = core("b");
  const c = core("c");
  const preVoteGranted = hand(a, tickOut(a, 150), b);
  const voteGranted = hand(a, hand(b, preVoteGranted, a), b);
  const noop = hand(b, voteGranted, a); // the no-op at index 1, to b and c
  expect([a.state, a.term]).toEqual(["leader", 1]);
  return { a, b, c, noop };
}
/** leaderA with the no-op acknowledged by b (so committed, and b owed a commit notice) and never sent to c. */
function committedWithB(): { a: RaftCore; b: RaftCore; c: RaftCore } {
  const { a, b, c, noop } = leaderA();
  const reply = hand(a, noop, b);
  a.step("b", reply[0]!.message);
  expect(a.commitIndex).toBe(1);
  expect(out(a)).toEqual([]); // b has the whole log: nothing more to send it, the commit index waits for the notice
  return { a, b, c };
}
const heartbeat = (to: string, term: number, prev: number, prevTerm: number, commit: number): Envelope => ({
  to, message: { type: "append", term, prevLogIndex: prev, prevLogTerm: prevTerm, leaderCommit: commit, round: 0, entries: [] },
});

describe("election deadline (R-E1)", () => {
  it("a follower ticked at exactly its drawn deadline starts a pre-vote; a tick 1 ms earlier does nothing", () => {
    for (const [random, deadline] of [[0, 150], [0.5, 225]] as const) {
      const b = core("b", random);
      expect(tickOut(b, deadline - 1)).toEqual([]);
      expect(b.state).toBe("follower");
      b.tick(deadline);
      const rd = b.ready();
      expect(b.state).toBe("precandidate");
      expect(rd.trace).toEqual([{ type: "electionTimeout", term: 0 }, { type: "preVoteStart", term: 1, round: 1 }]);
      expect([...rd.earlyMessages, ...rd.messages].map((m) => [m.to, m.message.type])).toEqual([["a", "preVote"], ["c", "preVote"]]);
    }
  });
});

describe("commit notice (commitNoticeMs)", () => {
  it("sent at exactly commitNoticeMs after the commit, to the follower owed it and only to it, and only once", () => {
    const { a } = committedWithB(); // committed at 150: the notice is due at 155
    expect(tickOut(a, 154)).toEqual([]);
    expect(tickOut(a, 155)).toEqual([heartbeat("b", 1, 1, 1, 1)]); // not to c: it holds nothing of this term yet
    expect(tickOut(a, 156)).toEqual([]);
    expect(tickOut(a, 199)).toEqual([]); // the next heartbeat is at 200
  });

  it("a follower removed while owed a notice and re-added later is probed afresh, never sent the stale notice", () => {
    const { a, b, c, noop } = leaderA();
    a.step("b", hand(a, noop, b)[0]!.message);
    a.step("c", hand(a, noop, c)[0]!.message); // b and c both replicate now
    a.propose(1, new Uint8Array([1]), null);
    const e2 = out(a);
    a.step("c", hand(a, e2, c)[0]!.message); // index 2 committed at 150: b and c both owed the notice at 155
    expect(a.commitIndex).toBe(2);
    a.changeMembership(2, { voters: ["a", "b"], learners: [] }); // c removed (index 3) while owed it
    const e3 = out(a);
    expect(e3.map((m) => m.to)).toEqual(["b"]);
    expect(e3[0]!.message).toMatchObject({ leaderCommit: 2 }); // b learns commit 2 from that AppendEntries
    expect(tickOut(a, 155)).toEqual([]); // and c is gone: nobody to tell
    hand(a, e2, b);
    for (const m of hand(a, e3, b)) a.step("b", m.message);
    expect(a.commitIndex).toBe(3); // the removal committed at 155: b owed the notice at 160
    a.changeMembership(3, { voters: ["a", "b", "c"], learners: [] }); // c back (index 4), probed from scratch
    a.tick(160);
    const sent = out(a);
    expect(sent.filter((m) => m.to === "c")).toEqual([
      { to: "c", message: { type: "append", term: 1, prevLogIndex: 4, prevLogTerm: 1, leaderCommit: 3, round: 0, entries: [] } }, // one probe
    ]);
  });
});

describe("check-quorum window (R-C1)", () => {
  it("a leader whose voters answered nothing for a whole window steps down at exactly its end, not a tick before", () => {
    const { a } = committedWithB(); // elected at 150: windows end at 300, 450, …
    a.tick(300); // b answered in the first window (and c counts as heard from at election): still leader
    expect(out(a).length).toBeGreaterThan(0); // the heartbeats, never delivered
    expect(a.state).toBe("leader");
    a.tick(449);
    out(a);
    expect(a.state).toBe("leader");
    a.tick(450);
    const rd = a.ready();
    expect(a.state).toBe("follower");
    expect(a.term).toBe(1);
    expect(rd.trace).toContainEqual({ type: "stepDown", term: 1, reason: "lost-quorum" });
  });
});

describe("leadership transfer timers (R-T2, R-T1)", () => {
  it("a transfer whose target never takes over is abandoned at exactly one electionTimeoutMaxMs", () => {
    const { a } = committedWithB();
    a.transferLeadership(7, "c"); // at 150; c has nothing: no TimeoutNow yet
    expect(a.transfer?.deadline).toBe(150 + CFG.electionTimeoutMaxMs);
    a.tick(449);
    let rd = a.ready();
    a.advance(rd);
    expect(a.transfer).not.toBeNull();
    expect(rd.outcomes).toEqual([]);
    a.tick(450);
    rd = a.ready();
    expect(a.transfer).toBeNull();
    expect(rd.outcomes).toEqual([{ id: 7, ok: false, refusal: "transfer-timed-out" }]);
    expect(rd.trace).toContainEqual({ type: "transferEnd", target: "c", generation: 1, outcome: "timed-out" });
  });

  it("a TimeoutNow that was lost is sent again with the next heartbeat", () => {
    const { a } = committedWithB();
    a.transferLeadership(7, "b"); // b holds the whole, committed log: TimeoutNow at once
    expect(out(a)).toEqual([{ to: "b", message: { type: "timeoutNow", term: 1 } }]); // …and lost
    expect(tickOut(a, 199)).toEqual([heartbeat("b", 1, 1, 1, 1)]); // the commit notice owed since 150, no TimeoutNow
    expect(tickOut(a, 200)).toContainEqual({ to: "b", message: { type: "timeoutNow", term: 1 } });
  });
});
