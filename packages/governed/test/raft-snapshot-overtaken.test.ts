/**
 * A follower the leader put in snapshot state that catches up from the live log after all (governed.md §4.9 R-S2,
 * R-R2), on hand-driven cores: voters `a`, `b` and `late`; `a` leads (elected via `b`). Its probe to `late` carrying
 * entries 1–2 (and commit 2) is delayed; meanwhile `a` compacts through 2, so its next try finds `late` below the
 * floor and starts a snapshot. Then the delayed probe reaches `late`, which now holds everything through the floor.
 *
 * Found in review: the leader took the answer's match index but kept `late` in snapshot state, where it sends no
 * AppendEntries — so `late` got no entries until the transfer completed. For a follower that refused the snapshot
 * as above its `snapshotMaxBytes` that is never: heartbeats only, the snapshot offered again and refused at each
 * backoff, and `snapshotStalls` reporting a follower that needed no snapshot. Now an AppendEntries answer (to a
 * late frame, or to a heartbeat at the floor) whose match reaches the floor ends the transfer, as in etcd-raft: the
 * follower replicates from its match index, and answers to the dropped transfer's chunks change nothing; the
 * follower lets go of the chunks it holds once it has committed through the snapshot's index. The
 * refusal ends with the transfer: should the follower fall behind a newer floor and refuse again, that stall is new
 * (offered again after the first backoff, not a doubled one).
 */
import { describe, expect, it } from "vitest";
import { SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS } from "../src/index.ts";
import type { ClusterConfig, Envelope, Message, RaftCore } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent, sentTo } from "./support/hand-driven.ts";

const V: ClusterConfig = { voters: ["a", "b", "late"], learners: [] };
const enc = new TextEncoder();
const TOTAL = 400;
const LIMIT = 100;

interface Setup {
  a: RaftCore;
  b: RaftCore;
  late: RaftCore;
  /** `a`'s heartbeat probe to `late` (entries 1–2, commit 2), sent before the compaction and not delivered yet. */
  delayed: Envelope[];
  /** The Ready of `a` that started `late`'s snapshot (chunk 0) with entry 3. */
  start: Envelope[];
}

/** `a` leads at term 1 with commit 3 (on `b`), has compacted through 2, and has just started `late`'s snapshot. */
function setup(lateLimit?: number): Setup {
  const cfg = { maxMessageBytes: 256 };
  const a = handCore("a", { bootstrap: V, cfg });
  const b = handCore("b", { bootstrap: V, cfg });
  const late = handCore("late", { bootstrap: V, cfg: lateLimit === undefined ? cfg : { ...cfg, snapshotMaxBytes: lateLimit } });
  hand(b, sent(hand(a, sent(electVia(a, b)), b)), a); // commit 1; the no-op to late is lost
  a.propose(1, enc.encode("x"), null);
  hand(b, sent(hand(a, sent(cycle(a)), b)), a); // commit 2
  a.tick(200); // heartbeat: late is probed from index 1 again, with entries 1–2 and commit 2 — delayed
  const beat = sent(cycle(a));
  const delayed = beat.filter((e) => e.to === "late");
  expect(delayed.map((e) => e.message)).toEqual([expect.objectContaining({ type: "append", prevLogIndex: 0, leaderCommit: 2, entries: [expect.objectContaining({ index: 1 }), expect.objectContaining({ index: 2 })] })]);
  hand(b, sent(hand(a, beat, b)), a);
  expect(a.compact(2, new Uint8Array(TOTAL).fill(7))).toBe(true);
  cycle(a);
  a.propose(2, enc.encode("y"), null); // entry 3; its broadcast finds late below the floor
  const start = sent(cycle(a));
  hand(b, sent(hand(a, start, b)), a); // commit 3
  expect(a.commitIndex).toBe(3);
  expect(a.progress.get("late")?.state).toBe("snapshot");
  return { a, b, late, delayed, start };
}

/** Hands `late` what `msgs` send it and returns its answers to `a`. */
function toLate(s: Setup, msgs: readonly Envelope[]): Envelope[] {
  return sent(hand(s.a, msgs, s.late));
}

/** The messages among `msgs` addressed to `id`. */
function toward(msgs: readonly Envelope[], id: string): Message[] {
  return msgs.filter((e) => e.to === id).map((e) => e.message);
}

/** The snapshot chunks and the AppendEntries with entries among `msgs` to `late`. */
function kinds(msgs: readonly Message[]): { chunks: number; appends: number[][] } {
  return {
    chunks: msgs.filter((m) => m.type === "snapshot").length,
    appends: msgs.flatMap((m) => (m.type === "append" && m.entries.length > 0 ? [m.entries.map((e) => e.index)] : [])),
  };
}

/** `late` refuses chunk 0 as above its limit; `a` takes the refusal and holds the snapshot back. */
function refuse(s: Setup): void {
  const refusal = toLate(s, s.start);
  expect(refusal.map((e) => e.message)).toEqual([expect.objectContaining({ type: "snapshotReply", nextOffset: 0, done: false, maxBytes: LIMIT })]);
  hand(s.late, refusal, s.a);
  expect(s.a.snapshotStalls).toEqual([expect.objectContaining({ side: "sending", peer: "late", lastIndex: 2, snapshotBytes: TOTAL, snapshotMaxBytes: LIMIT })]);
}

/** `late` takes what `a` sends until nothing is left; `a` must not send it a snapshot chunk meanwhile. */
function replicate(s: Setup, first: readonly Envelope[]): void {
  let out = first;
  for (let guard = 0; out.some((e) => e.to === "late"); guard++) {
    expect(guard).toBeLessThan(10);
    expect(kinds(toward(out, "late")).chunks).toBe(0);
    out = sent(hand(s.late, toLate(s, out), s.a));
  }
}

describe("a follower in snapshot state that catches up from the live log", () => {
  it("refused the snapshot as too large, then a delayed probe reached it: the answer ends the transfer and the entries past the floor follow", () => {
    const s = setup(LIMIT);
    refuse(s);
    const answer = toLate(s, s.delayed);
    expect(answer.map((e) => e.message)).toEqual([expect.objectContaining({ type: "appendReply", success: true, matchIndex: 2 })]);
    const rd = hand(s.late, answer, s.a);
    // before: match 2 was taken, the state stayed "snapshot", and nothing was sent
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 2, next: 4, snapRefused: null });
    expect(kinds(sentTo(rd, "late"))).toEqual({ chunks: 0, appends: [[3]] });
    expect(s.a.snapshotStalls).toEqual([]);
    replicate(s, sent(rd));
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 3 });
    expect([s.late.floor, s.late.lastIndex, s.late.commitIndex]).toEqual([0, 3, 3]);
    expect(s.late.snapshotStalls).toEqual([]);
  });

  it("refused the snapshot as too large and holds the floor, its answer to the delayed probe lost: the next heartbeat's answer ends the transfer", () => {
    const s = setup(LIMIT);
    refuse(s);
    toLate(s, s.delayed); // late now holds entries 1–2; its answer is lost
    expect(s.a.progress.get("late")).toMatchObject({ state: "snapshot", match: 0 });
    // the backoff holds the snapshot back: the heartbeat goes out at the floor, which late holds
    s.a.tick(s.a.now + 50);
    const beat = sent(cycle(s.a));
    expect(toward(beat, "late")).toEqual([expect.objectContaining({ type: "append", prevLogIndex: 2, entries: [] })]);
    hand(s.b, sent(hand(s.a, beat, s.b)), s.a);
    const rd = hand(s.late, toLate(s, beat), s.a);
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 2, next: 4, snapRefused: null });
    expect(kinds(sentTo(rd, "late"))).toEqual({ chunks: 0, appends: [[3]] });
    expect(s.a.snapshotStalls).toEqual([]);
    replicate(s, sent(rd));
    expect([s.late.floor, s.late.lastIndex, s.late.commitIndex]).toEqual([0, 3, 3]);
    // later heartbeats find it replicating: no snapshot offered again once the backoff is over
    for (let t = 1; t <= 8; t++) {
      s.a.tick(s.a.now + 50);
      const more = sent(cycle(s.a));
      expect(kinds(toward(more, "late")).chunks).toBe(0);
      hand(s.b, sent(hand(s.a, more, s.b)), s.a);
      hand(s.late, toLate(s, more), s.a);
    }
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 3 });
    expect(s.a.snapshotStalls).toEqual([]);
  });

  it("in the middle of a chunked transfer: the delayed probe's answer drops the transfer, and the chunks' answers arriving later change nothing", () => {
    const s = setup();
    // chunk 0 takes; a sends chunk 1, which is held back with a duplicate of late's answer to chunk 0
    const progress0 = toLate(s, s.start);
    expect(progress0.map((e) => e.message)).toEqual([expect.objectContaining({ type: "snapshotReply", nextOffset: 177, done: false })]);
    const chunk1 = sent(hand(s.late, progress0, s.a));
    expect(toward(chunk1, "late")).toEqual([expect.objectContaining({ type: "snapshot", offset: 177 })]);
    expect(s.late.receivingSnapshotBytes).toBe(177);
    const rd = hand(s.late, toLate(s, s.delayed), s.a);
    // late committed through the snapshot's index: the chunk it held is of no use, and nothing would replace it
    expect(s.late.receivingSnapshotBytes).toBe(0);
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 2, next: 4 });
    expect(kinds(sentTo(rd, "late"))).toEqual({ chunks: 0, appends: [[3]] });
    replicate(s, sent(rd));
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 3, next: 4 });

    // the duplicate answer to chunk 0 and late's answer to chunk 1 (done: it has committed through 2) arrive now
    const late1 = toLate(s, chunk1);
    expect(late1.map((e) => e.message)).toEqual([expect.objectContaining({ type: "snapshotReply", lastIndex: 2, done: true })]);
    const after = hand(s.late, [...progress0, ...late1], s.a);
    expect(sentTo(after, "late")).toEqual([]);
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 3, next: 4 });
    expect([s.late.floor, s.late.lastIndex, s.late.commitIndex]).toEqual([0, 3, 3]);

    // and the heartbeats carry on as heartbeats, no chunk
    s.a.tick(s.a.now + 50);
    const beat = sent(cycle(s.a));
    expect(toward(beat, "late")).toEqual([expect.objectContaining({ type: "append", prevLogIndex: 3, entries: [] })]);
  });

  it("caught up so, then left behind a newer floor and refusing again: a new stall, offered again after the first backoff", () => {
    const s = setup(LIMIT);
    refuse(s);
    // a second refused offer doubles the backoff
    s.a.tick(s.a.now + SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS * 50);
    const offer = sent(cycle(s.a));
    hand(s.b, sent(hand(s.a, offer, s.b)), s.a);
    hand(s.late, toLate(s, offer), s.a);
    expect(s.a.progress.get("late")!.snapBackoff).toBe(2 * SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS);
    replicate(s, sent(hand(s.late, toLate(s, s.delayed), s.a)));
    expect(s.a.progress.get("late")).toMatchObject({ state: "replicate", match: 3 });
    // entries 4 and 5 reach b only; a compacts through 5, and its heartbeats give up on late's unanswered frames
    for (const cmd of ["p", "q"]) {
      s.a.propose(3, enc.encode(cmd), null);
      hand(s.b, sent(hand(s.a, sent(cycle(s.a)), s.b)), s.a);
    }
    expect(s.a.commitIndex).toBe(5);
    expect(s.a.compact(5, new Uint8Array(TOTAL).fill(8))).toBe(true);
    cycle(s.a);
    // the next heartbeat goes out at the new floor, which late lacks: its rejection starts the snapshot, which it refuses
    s.a.tick(s.a.now + 50);
    const beat = sent(cycle(s.a));
    hand(s.b, sent(hand(s.a, beat, s.b)), s.a);
    const refused: unknown[] = [];
    let out = beat;
    for (let guard = 0; out.some((e) => e.to === "late"); guard++) {
      expect(guard).toBeLessThan(4);
      const rd = hand(s.late, toLate(s, out), s.a);
      refused.push(...rd.trace.filter((e) => e.type === "snapshotRefused"));
      out = sent(rd);
    }
    expect(s.a.progress.get("late")?.state).toBe("snapshot");
    // before: the old refusal was kept, so this one doubled the backoff again (to 8 periods) as if one stall went on
    expect(refused).toEqual([{ type: "snapshotRefused", peer: "late", lastIndex: 5, total: TOTAL, maxBytes: LIMIT, retryInMs: SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS * 50 }]);
    expect(s.a.snapshotStalls).toEqual([expect.objectContaining({ side: "sending", peer: "late", lastIndex: 5 })]);
  });

  it("a success answer whose match stays below the floor leaves the follower in snapshot state", () => {
    const s = setup(LIMIT);
    refuse(s);
    // an answer to the lost no-op (entry 1 only): late still lacks the floor's entry
    const rd = hand(s.late, [{ to: "a", message: { type: "appendReply", term: 1, success: true, matchIndex: 1, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 0 } }], s.a);
    expect(s.a.progress.get("late")).toMatchObject({ state: "snapshot", match: 1 });
    expect(kinds(sentTo(rd, "late"))).toEqual({ chunks: 0, appends: [] });
    expect(s.a.snapshotStalls).toHaveLength(1);
  });
});
