/**
 * The leader's side of InstallSnapshot (governed.md R-S2, R-R6, R-T1, §4.9), on hand-driven cores: voters `a`, `b`
 * and `late`; `a` leads (elected via `b`), compacts through 2 while `late` has heard nothing, and starts sending
 * `late` its snapshot in chunks sized to the frame budget (maxMessageBytes 256).
 *
 * - each chunk fills the budget left after the frame's fixed part and the encoded configuration (3 bytes per
 *   character of a member id, 2 per id, 4 for the lists), and the first goes out with the Ready that starts it;
 * - an InstallSnapshot answer counts as contact for check-quorum;
 * - the done answer moves `late` to probing right after the snapshot (the entries past it follow at once), and does
 *   not repeat a TimeoutNow already sent;
 * - answers a correct follower sends to a duplicated chunk, arriving late, change nothing: a done answer for an
 *   older snapshot neither lowers the match index (R-R6) nor sends anything, and a progress answer is ignored once
 *   the transfer is over or the leader moved on to a newer snapshot;
 * - a node that stepped down ignores InstallSnapshot answers quietly.
 */
import { describe, expect, it } from "vitest";
import type { ClusterConfig, Envelope, Message, RaftCore } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent, sentTo } from "./support/hand-driven.ts";

const V: ClusterConfig = { voters: ["a", "b", "late"], learners: [] };
const enc = new TextEncoder();
const STATE = Uint8Array.from({ length: 400 }, (_, i) => i % 251);
/** 256 − 51 (SNAPSHOT_OVERHEAD_BYTES) − (4 + (2 + 3·1) + (2 + 3·1) + (2 + 3·4)) for the config a, b, late. */
const CHUNK = 177;

interface Setup {
  a: RaftCore;
  b: RaftCore;
  late: RaftCore;
  /** The Ready of `a` that started the snapshot for `late` (entry 3 appended in the same turn). */
  start: Envelope[];
}

/** `a` leads at term 1 with commit 3 (on `b`), has compacted through 2, and has just started `late`'s snapshot. */
function setup(): Setup {
  const cfg = { maxMessageBytes: 256 };
  const a = handCore("a", { bootstrap: V, cfg });
  const b = handCore("b", { bootstrap: V, cfg });
  const late = handCore("late", { bootstrap: V, cfg });
  hand(b, sent(hand(a, sent(electVia(a, b)), b)), a); // commit 1; late never hears the no-op
  a.propose(1, enc.encode("x"), null);
  hand(b, sent(hand(a, sent(cycle(a)), b)), a); // commit 2
  expect(a.appliedIndex).toBe(2);
  expect(a.compact(2, STATE)).toBe(true);
  cycle(a);
  a.propose(2, enc.encode("y"), null); // entry 3; its broadcast finds late below the floor
  const start = sent(cycle(a));
  hand(b, sent(hand(a, start, b)), a); // commit 3
  expect(a.commitIndex).toBe(3);
  expect(a.progress.get("late")?.state).toBe("snapshot");
  return { a, b, late, start };
}

function only(msgs: readonly Envelope[], to: string, type: Message["type"]): Message[] {
  return msgs.filter((m) => m.to === to && m.message.type === type).map((m) => m.message);
}

/** Hands `late` the chunk(s) in `msgs` and returns its answers (to `a`). */
function answers(s: Setup, msgs: readonly Envelope[]): Envelope[] {
  return sent(hand(s.a, msgs, s.late));
}

/** Runs the transfer from the first chunk on; returns the answers to chunk 0 and the last chunk, each twice
 * (every chunk handed to `late` twice, as a network that duplicates frames would). */
function duplicated(s: Setup): { progress0: Envelope[]; done: Envelope[] } {
  let chunk = s.start.filter((m) => m.to === "late");
  let progress0: Envelope[] = [];
  for (let k = 0; k < 10; k++) {
    const replies = [...answers(s, chunk), ...answers(s, chunk)];
    expect(replies).toHaveLength(2);
    if (k === 0) progress0 = replies;
    const first = replies[0]!.message;
    if (first.type === "snapshotReply" && first.done) return { progress0, done: replies };
    chunk = sent(hand(s.late, replies.slice(0, 1), s.a)).filter((m) => m.to === "late");
  }
  throw new Error("the transfer did not finish");
}

describe("InstallSnapshot chunks (R-S2)", () => {
  it("the first chunk goes out with the Ready that starts the transfer, filling the frame budget", () => {
    const { start } = setup();
    expect(only(start, "late", "snapshot")).toEqual([
      { type: "snapshot", term: 1, lastIndex: 2, lastTerm: 1, config: V, total: 400, offset: 0, data: STATE.subarray(0, CHUNK) },
    ]);
  });
});

describe("an InstallSnapshot answer is contact (check-quorum)", () => {
  it("a leader hearing only from a follower that is receiving its snapshot keeps leading", () => {
    const s = setup();
    const { a } = s;
    a.tick(300); // first check: everyone counts as active since the election; b falls silent from now on
    cycle(a);
    expect(a.state).toBe("leader");
    const progress = answers(s, s.start.filter((m) => m.to === "late"));
    expect(progress.map((m) => m.message)).toMatchObject([{ type: "snapshotReply", nextOffset: CHUNK, done: false }]);
    hand(s.late, progress, a);
    a.tick(450); // second check: late answered since the first
    cycle(a);
    expect(a.state).toBe("leader");
  });
});

describe("the done answer", () => {
  it("moves the follower to probing just past the snapshot: the next entries go out at once", () => {
    const s = setup();
    const { done } = duplicated(s);
    const rd = hand(s.late, done.slice(0, 1), s.a);
    expect(sentTo(rd, "late")).toMatchObject([{ type: "append", prevLogIndex: 2, prevLogTerm: 1, leaderCommit: 3, entries: [{ index: 3 }] }]);
    expect(s.a.progress.get("late")).toMatchObject({ state: "probe", match: 2, next: 3 });
  });

  it("does not repeat a TimeoutNow already sent to the transfer target (R-T1)", () => {
    const s = setup();
    const { done } = duplicated(s);
    s.a.transferLeadership(20, "b");
    expect(sentTo(cycle(s.a), "b")).toEqual([{ type: "timeoutNow", term: 1 }]);
    const rd = hand(s.late, done.slice(0, 1), s.a);
    expect(sentTo(rd, "b")).toEqual([]);
    expect(sentTo(rd, "late")).toMatchObject([{ type: "append", prevLogIndex: 2 }]);
  });
});

describe("late answers to a duplicated chunk", () => {
  /** Completes the transfer and brings late up to match 3 in replicate; returns the duplicate done answer. */
  function caughtUp(s: Setup): Envelope[] {
    const { done } = duplicated(s);
    const probe = hand(s.late, done.slice(0, 1), s.a);
    hand(s.late, sent(hand(s.a, sent(probe), s.late)), s.a);
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 3, next: 4 });
    return done.slice(1);
  }

  it("a done answer for the snapshot, after the follower caught up, lowers no match index and sends nothing (R-R6)", () => {
    const s = setup();
    const dup = caughtUp(s);
    expect(dup.map((m) => m.message)).toEqual([{ type: "snapshotReply", term: 1, lastIndex: 2, nextOffset: 0, done: true }]);
    const rd = hand(s.late, dup, s.a);
    expect(sentTo(rd, "late")).toEqual([]);
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 3, next: 4, inflight: [] });
  });

  it("counts as an answer since the last heartbeat: entries in flight are not taken for lost", () => {
    const s = setup();
    const dup = caughtUp(s);
    s.a.tick(200); // heartbeat: from now on an answer is needed before the next one
    cycle(s.a);
    s.a.propose(3, enc.encode("z"), null); // entry 4, in flight to late (never answered)
    expect(sentTo(cycle(s.a), "late")).toMatchObject([{ type: "append", prevLogIndex: 3, entries: [{ index: 4 }] }]);
    hand(s.late, dup, s.a);
    s.a.tick(250);
    const rd = cycle(s.a);
    expect(sentTo(rd, "late")).toMatchObject([{ type: "append", prevLogIndex: 3, entries: [] }]);
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", inflight: [4] });
  });

  it("a progress answer arriving after the transfer is over sends no chunk", () => {
    const s = setup();
    const { progress0, done } = duplicated(s);
    hand(s.late, done.slice(0, 1), s.a);
    expect(progress0[1]!.message).toEqual({ type: "snapshotReply", term: 1, lastIndex: 2, nextOffset: CHUNK, done: false });
    const rd = hand(s.late, progress0.slice(1), s.a);
    expect(only(sent(rd), "late", "snapshot")).toEqual([]);
    expect(s.a.progress.get("late")).toMatchObject({ state: "probe", match: 2 });
  });

  it("a progress answer for an older snapshot is ignored once the leader sends a newer one", () => {
    const s = setup();
    const { a } = s;
    const chunk0 = s.start.filter((m) => m.to === "late");
    const replies = [...answers(s, chunk0), ...answers(s, chunk0)];
    hand(s.late, replies.slice(0, 1), a); // chunk 1 of the snapshot through 2
    expect(a.compact(3, STATE)).toBe(true);
    cycle(a);
    a.tick(200); // the heartbeat re-sends from the start of the newer snapshot
    expect(only(sent(cycle(a)), "late", "snapshot")).toMatchObject([{ lastIndex: 3, offset: 0 }]);
    const rd = hand(s.late, replies.slice(1), a); // the duplicate answer to chunk 0 of the older one
    expect(sentTo(rd, "late")).toEqual([]);
  });
});

describe("a node that stepped down (check-quorum) in the same term", () => {
  it("ignores an InstallSnapshot answer quietly", () => {
    const s = setup();
    const { a } = s;
    const progress = answers(s, s.start.filter((m) => m.to === "late"));
    a.tick(300);
    cycle(a);
    a.tick(450); // nobody answered since the first check
    cycle(a);
    expect([a.state, a.term]).toEqual(["follower", 1]);
    const rd = hand(s.late, progress, a);
    expect(rd.trace).toEqual([]);
    expect(a.refusedFrames.size).toBe(0);
  });
});

describe("the done answer counts toward commitment (R-R4)", () => {
  it("in the turn a removal made the voter set smaller, it commits what the smaller majority already holds", () => {
    // voters a, b, c, d (a majority is three); c lags and gets a's snapshot, d stops answering after the election
    const V4: ClusterConfig = { voters: ["a", "b", "c", "d"], learners: [] };
    const [a, b, c, d] = ["a", "b", "c", "d"].map((id) => handCore(id, { bootstrap: V4 })) as [RaftCore, RaftCore, RaftCore, RaftCore];
    a.tick(150);
    let out = sent(cycle(a)); // pre-votes, then votes, from b and d
    for (let round = 0; round < 2; round++) {
      const fromB = sent(hand(a, out, b));
      const fromD = sent(hand(a, out, d));
      hand(b, fromB, a);
      out = sent(hand(d, fromD, a));
    }
    expect(a.state).toBe("leader");
    const acks = (rd: Envelope[], voters: RaftCore[]): void => {
      const back = voters.map((v) => [v, sent(hand(a, rd, v))] as const);
      for (const [v, msgs] of back) hand(v, msgs, a);
    };
    acks(out, [b, d]); // commit 1
    a.propose(1, enc.encode("x"), null);
    acks(sent(cycle(a)), [b, d]); // commit 2
    expect(a.commitIndex).toBe(2);
    expect(a.compact(2, enc.encode("state"))).toBe(true);
    cycle(a);
    a.propose(2, enc.encode("y"), null); // entry 3; c (below the floor) is sent the snapshot
    const r3 = sent(cycle(a));
    expect(only(r3, "c", "snapshot")).toMatchObject([{ lastIndex: 2, offset: 0 }]);
    acks(r3, [b]); // only b holds 3: two of four, not committed
    expect(a.commitIndex).toBe(2);
    const done = sent(hand(a, r3, c));
    expect(done.map((m) => m.message)).toMatchObject([{ type: "snapshotReply", lastIndex: 2, done: true }]);
    // one turn: d is removed (entry 4, in force at once: a majority is now two of a, b, c) and c's answer arrives
    a.changeMembership(9, { voters: ["a", "b", "c"], learners: [] });
    for (const m of done) a.step("c", m.message);
    const rd = cycle(a);
    expect(a.commitIndex).toBe(3);
    expect(rd.outcomes).toEqual([{ id: 2, ok: true, index: 3, term: 1 }]);
    expect(sentTo(rd, "c")).toMatchObject([{ type: "append", prevLogIndex: 2, leaderCommit: 3, entries: [{ index: 3 }, { index: 4 }] }]);
  });
});
