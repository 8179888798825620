/**
 * A follower receiving and installing a snapshot (governed.md §4.9 R-S2, R-S3, and R-R4 for what it counts as
 * durable), on hand-driven cores. Every frame below is one a correct leader can send, perhaps late or twice:
 * - reassembly: a snapshot exactly `snapshotMaxBytes` long is taken; a chunk joins the reassembly in progress only
 *   when it belongs to the same snapshot under the same term — a newer snapshot (the leader compacted again) or a new
 *   leader's copy (whose bytes may differ) starts over from offset 0, and a late chunk of an older snapshot leaves the
 *   reassembly in progress alone;
 * - install: the log suffix is kept when the follower holds the snapshot's last entry (also right at its last index,
 *   also above a floor of its own), else the whole log is discarded; the commit index moves up to the snapshot, so
 *   a chunk sent again after the install is acknowledged, not installed twice; the snapshot's configuration is
 *   adopted;
 * - durability: the follower counts as durable only what is: through the snapshot when it discarded a longer
 *   conflicting log, its whole log when it kept it, and nothing a truncation made stale while a ready was being
 *   written — the truncation begins right above the old floor, not below it.
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { ClusterConfig, LogEntry, Message, Ready, StorageOp } from "../src/index.ts";
import { ABC, cycle, entry, HAND_TIMING, handCore, sentTo } from "./support/hand-driven.ts";

/** One InstallSnapshot chunk; `total` defaults to a single-chunk snapshot. */
function chunk(term: number, lastIndex: number, lastTerm: number, bytes: number[], offset = 0, total = bytes.length, config: ClusterConfig | null = ABC): Message {
  return { type: "snapshot", term, lastIndex, lastTerm, config, total, offset, data: new Uint8Array(bytes) };
}
function append(term: number, prevLogIndex: number, prevLogTerm: number, entries: LogEntry[], leaderCommit = 0): Message {
  return { type: "append", term, prevLogIndex, prevLogTerm, leaderCommit, round: 0, entries };
}
const entries = (from: number, to: number, term: number): LogEntry[] => Array.from({ length: to - from + 1 }, (_, i) => entry(from + i, term));
/** The storage steps of a ready, in a form that compares easily. */
const ops = (rd: Ready): string[] =>
  rd.storage.map((op: StorageOp) => {
    if (op.op === "snapshot") return `snapshot ${op.snapshot.lastIndex}`;
    if (op.op === "append") return `append ${op.entries.map((x) => x.index).join(",")}`;
    return `${op.op} ${op.index}`;
  });
/** The snapshot replies in a ready, as [lastIndex, nextOffset, done]. */
const replies = (rd: Ready, to: string): [number, number, boolean][] =>
  sentTo(rd, to).flatMap((m) => (m.type === "snapshotReply" ? [[m.lastIndex, m.nextOffset, m.done] as [number, number, boolean]] : []));
/** The installs a ready hands to the state machine, as [throughIndex, bytes]. */
const installs = (rd: Ready): [number, number[]][] =>
  rd.committed.flatMap((c) => (c.kind === "install" ? [[c.snapshot.throughIndex, [...c.snapshot.state]] as [number, number[]]] : []));
const indexes = (c: RaftCore): number[] => c.entries.map((x) => x.index);

describe("reassembling a snapshot from its chunks (R-S2)", () => {
  it("a snapshot exactly snapshotMaxBytes long is taken, not refused as too large", () => {
    const b = handCore("b", { cfg: { snapshotMaxBytes: 4 } });
    b.step("a", chunk(1, 3, 1, [1, 2, 3, 4]));
    const rd = cycle(b);
    expect(replies(rd, "a")).toEqual([[3, 4, true]]);
    expect(installs(rd)).toEqual([[3, [1, 2, 3, 4]]]);
    expect(b.refusedFrames.get("snapshot-too-large")).toBeUndefined();
  });

  it("the first chunk of a newer snapshot of the same size starts over: none of the older one's bytes are kept", () => {
    // a sent chunk 0 of its snapshot through 5, compacted through 8 meanwhile, and its next heartbeat sent the new
    // snapshot from offset 0; both states happen to be 4 bytes long
    const b = handCore("b");
    b.step("a", chunk(2, 5, 2, [1, 2], 0, 4));
    b.step("a", chunk(2, 8, 2, [5, 6], 0, 4));
    expect(replies(cycle(b), "a")).toEqual([[5, 2, false], [8, 2, false]]);
    b.step("a", chunk(2, 8, 2, [7, 8], 2, 4));
    const rd = cycle(b);
    expect(replies(rd, "a")).toEqual([[8, 4, true]]);
    expect(installs(rd)).toEqual([[8, [5, 6, 7, 8]]]);
    expect([b.floor, b.commitIndex]).toEqual([8, 8]);
  });

  it("a new leader's copy of the same snapshot starts over: the old leader's chunk is not joined to the new one's", () => {
    // a (term 2) and c (term 3) each compacted through 5; their states encode the same data in different byte order
    const b = handCore("b");
    b.step("a", chunk(2, 5, 2, [1, 2], 0, 4));
    expect(replies(cycle(b), "a")).toEqual([[5, 2, false]]);
    b.step("c", chunk(3, 5, 2, [4, 3], 0, 4));
    expect(replies(cycle(b), "c")).toEqual([[5, 2, false]]);
    b.step("c", chunk(3, 5, 2, [2, 1], 2, 4));
    const rd = cycle(b);
    expect(replies(rd, "c")).toEqual([[5, 4, true]]);
    expect(installs(rd)).toEqual([[5, [4, 3, 2, 1]]]);
  });

  it("a late chunk of an older snapshot leaves the reassembly of the newer one alone", () => {
    // a sent chunk 2 of its snapshot through 5 on b's answer, then compacted through 8 and, that chunk unanswered for
    // a heartbeat period, sent the new snapshot from offset 0; the old chunk arrives last
    const b = handCore("b");
    b.step("a", chunk(2, 5, 2, [1, 2], 0, 4));
    b.step("a", chunk(2, 8, 2, [5, 6], 0, 4));
    b.step("a", chunk(2, 5, 2, [3, 4], 2, 4));
    expect(replies(cycle(b), "a")).toEqual([[5, 2, false], [8, 2, false], [5, 0, false]]);
    b.step("a", chunk(2, 8, 2, [7, 8], 2, 4));
    const rd = cycle(b);
    expect(replies(rd, "a")).toEqual([[8, 4, true]]);
    expect(installs(rd)).toEqual([[8, [5, 6, 7, 8]]]);
  });
});

describe("installing a snapshot (R-S3)", () => {
  it("a follower holding the snapshot's last entry keeps the suffix after it, and all of it stays durable", () => {
    // a's entries 1–5 reached b, b's answers did not reach a; a compacted through 3 and probed b with its snapshot
    const b = handCore("b", { term: 1, entries: entries(1, 5, 1) });
    b.step("a", chunk(1, 3, 1, [7]));
    const rd = cycle(b);
    expect(ops(rd)).toEqual(["snapshot 3", "discardThrough 3"]);
    expect([b.floor, indexes(b), b.lastIndex, b.persistedLast]).toEqual([3, [4, 5], 5, 5]);
    expect(installs(rd)).toEqual([[3, [7]]]);
  });

  it("a follower whose entry at the snapshot's index has another term discards its whole log, and counts as durable only the snapshot", () => {
    const b = handCore("b", { term: 1, entries: entries(1, 5, 1) });
    b.step("c", chunk(2, 3, 2, [7]));
    expect([b.floor, indexes(b), b.lastIndex, b.persistedLast]).toEqual([3, [], 3, 3]);
    const rd = cycle(b);
    expect(ops(rd)).toEqual(["snapshot 3", "truncateFrom 1", "discardThrough 3"]);
    expect([b.lastIndex, b.persistedLast]).toEqual([3, 3]);
  });

  it("a snapshot ending exactly at the follower's last entry keeps the log: nothing is truncated, the entries count as durable", () => {
    // entries 1–3 and the snapshot through 3 (a's probe after a compaction) arrive in the same ready
    const b = handCore("b", { term: 1 });
    b.step("a", append(1, 0, 0, entries(1, 3, 1)));
    b.step("a", chunk(1, 3, 1, [7]));
    const rd = cycle(b);
    expect(ops(rd)).toEqual(["append 1,2,3", "snapshot 3", "discardThrough 3"]);
    expect([b.floor, b.lastIndex, b.persistedLast]).toEqual([3, 3, 3]);
  });

  it("above a floor of its own, the kept suffix starts right after the snapshot's index; changedFrom moves to the old floor's successor", () => {
    const b = new RaftCore({
      id: "b", bootstrap: ABC, config: raftConfig(HAND_TIMING), random: () => 0, now: 0,
      persisted: { term: 1, votedFor: null, snapshot: { lastIndex: 2, lastTerm: 1, config: ABC, state: new Uint8Array([0]) }, entries: entries(3, 6, 1) },
    });
    expect(b.changedFrom).toBe(Infinity);
    b.step("a", chunk(1, 4, 1, [7]));
    expect([b.floor, indexes(b), b.lastIndex]).toEqual([4, [5, 6], 6]);
    expect(b.changedFrom).toBe(3);
    expect(ops(cycle(b))).toEqual(["snapshot 4", "discardThrough 4"]);
  });

  it("the commit index moves up to the snapshot, so the chunk sent again after the install is acknowledged, not installed twice", () => {
    const b = handCore("b");
    b.step("a", chunk(2, 5, 2, [9]));
    const first = cycle(b);
    expect(installs(first)).toEqual([[5, [9]]]);
    expect([b.commitIndex, b.appliedIndex]).toEqual([5, 5]);
    // b's answer was lost: a's heartbeat a period later sends the chunk again
    b.step("a", chunk(2, 5, 2, [9]));
    const again = cycle(b);
    expect(replies(again, "a")).toEqual([[5, 0, true]]);
    expect(installs(again)).toEqual([]);
    expect(again.storage).toEqual([]);
    expect(again.trace.filter((t) => t.type === "snapshotInstalled")).toEqual([]);
  });

  it("the snapshot's configuration is adopted: a node it makes a learner no longer campaigns", () => {
    const b = handCore("b");
    const later: ClusterConfig = { voters: ["a", "c", "d"], learners: ["b"] };
    b.step("a", chunk(2, 5, 2, [9], 0, 1, later));
    cycle(b);
    expect([b.config, b.configIndex, b.role]).toEqual([later, 5, "learner"]);
    b.tick(1000);
    const rd = cycle(b);
    expect([b.state, b.term]).toEqual(["follower", 2]);
    expect(rd.trace.filter((t) => t.type === "electionTimeout" || t.type === "preVoteStart")).toEqual([]);
    expect(sentTo(rd, "a")).toEqual([]);
  });
});

describe("what a follower counts as durable across an install (R-R4)", () => {
  it("a discarding install while a ready is being written: the entries that ready wrote count for nothing", () => {
    const b = handCore("b");
    b.step("a", append(1, 0, 0, entries(1, 3, 1)));
    const rd = b.ready(); // the driver writes entries 1–3 of term 1
    // meanwhile c (term 2) installs its snapshot through 1 (another term at 1: b's log goes) and sends 2–4
    b.step("c", chunk(2, 1, 2, [7]));
    b.step("c", append(2, 1, 2, entries(2, 4, 2), 1));
    b.advance(rd);
    expect(b.persistedLast).toBe(0);
    expect(ops(cycle(b))).toEqual(["snapshot 1", "truncateFrom 1", "discardThrough 1", "append 2,3,4"]);
    expect(b.persistedLast).toBe(4);
  });

  it("a discarding install above a compaction of its own while a ready is being written: what that ready wrote counts through the old floor", () => {
    const b = handCore("b");
    b.step("a", append(1, 0, 0, entries(1, 4, 1), 3));
    const rd = b.ready(); // the driver writes entries 1–4 and applies 1–3
    expect(b.appliedIndex).toBe(3);
    expect(b.compact(3, new Uint8Array([3]))).toBe(true);
    // c (term 2) installs its snapshot through 5 before that ready is acknowledged: entry 4 (term 1) is stale
    b.step("c", chunk(2, 5, 2, [5]));
    b.advance(rd);
    expect(b.persistedLast).toBe(3);
    expect(ops(cycle(b))).toEqual(["snapshot 5", "truncateFrom 4", "discardThrough 5"]);
  });
});
