/**
 * The core's small public views on hand-built cores: `termAt`/`entryAt` at every bound of the log (below the
 * snapshot floor, at it, in the live log, at and past the last index; with and without a snapshot), `hasReady()`
 * with exactly one reason for work pending at a time, and the frame budget `setMaxMessageBytes` clamps into
 * [256, config maxMessageBytes] (governed.md §4.3 R-R7: proposals that cannot fit alone are refused, each
 * AppendEntries holds as many entries as fit).
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { Envelope, LogEntry, PersistedState, RaftConfig, Ready, StoredSnapshot } from "../src/index.ts";

function e(index: number, term: number, size = 1): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array(size).fill(index), stampedAt: 0 };
}
function snap(lastIndex: number, lastTerm: number): StoredSnapshot {
  return { lastIndex, lastTerm, config: { voters: ["a", "b", "f"], learners: [] }, state: new Uint8Array([7, 7]) };
}
function st(term: number, entries: LogEntry[] = [], snapshot: StoredSnapshot | null = null): PersistedState {
  return { term, votedFor: null, snapshot, entries };
}
function core(id: string, voters: readonly string[], p: PersistedState, cfg: Partial<RaftConfig> = {}): RaftCore {
  return new RaftCore({ id, bootstrap: { voters, learners: [] }, persisted: p, config: raftConfig(cfg), random: () => 0.5, now: 0 });
}
/** Takes one ready and acknowledges it. */
function turn(c: RaftCore): Ready {
  const rd = c.ready();
  c.advance(rd);
  return rd;
}
const EMPTY_READY = { hardState: null, storage: [], earlyMessages: [], messages: [], committed: [], outcomes: [], trace: [] };

describe("termAt and entryAt at the log's bounds", () => {
  // snapshot through 5 (term 3), live entries 6..8 of terms 3, 4, 4
  const live = [e(6, 3), e(7, 4), e(8, 4)];
  const withSnap = (): RaftCore => core("f", ["a", "b", "f"], st(4, [e(5, 3), ...live], snap(5, 3)));

  it("with a snapshot: the floor has the snapshot's term, below it and past the end are unknown", () => {
    const f = withSnap();
    expect([f.floor, f.lastIndex]).toEqual([5, 8]);
    expect(f.termAt(0)).toBeUndefined();
    expect(f.termAt(4)).toBeUndefined();
    expect(f.termAt(5)).toBe(3);
    expect(f.termAt(6)).toBe(3);
    expect(f.termAt(7)).toBe(4);
    expect(f.termAt(8)).toBe(4);
    expect(f.termAt(9)).toBeUndefined();
    expect(f.termAt(100)).toBeUndefined();
  });

  it("with a snapshot: entryAt holds only the live log (not the floor, nothing past the end)", () => {
    const f = withSnap();
    expect(f.entryAt(4)).toBeUndefined();
    expect(f.entryAt(5)).toBeUndefined();
    expect(f.entryAt(6)).toEqual(live[0]);
    expect(f.entryAt(8)).toEqual(live[2]);
    expect(f.entryAt(9)).toBeUndefined();
  });

  it("with a snapshot and an empty live log: only the floor is known", () => {
    const f = core("f", ["a", "b", "f"], st(4, [], snap(5, 3)));
    expect(f.lastIndex).toBe(5);
    expect(f.termAt(4)).toBeUndefined();
    expect(f.termAt(5)).toBe(3);
    expect(f.termAt(6)).toBeUndefined();
    expect(f.entryAt(5)).toBeUndefined();
    expect(f.entryAt(6)).toBeUndefined();
  });

  it("without a snapshot: index 0 has term 0, below it and past the end are unknown", () => {
    const f = core("f", ["a", "b", "f"], st(2, [e(1, 1), e(2, 2)]));
    expect(f.termAt(-1)).toBeUndefined();
    expect(f.termAt(0)).toBe(0);
    expect(f.termAt(1)).toBe(1);
    expect(f.termAt(2)).toBe(2);
    expect(f.termAt(3)).toBeUndefined();
    expect(f.entryAt(0)).toBeUndefined();
    expect(f.entryAt(1)).toEqual(e(1, 1));
    expect(f.entryAt(2)).toEqual(e(2, 2));
    expect(f.entryAt(3)).toBeUndefined();
    const empty = core("f", ["a", "b", "f"], st(0));
    expect(empty.termAt(0)).toBe(0);
    expect(empty.termAt(1)).toBeUndefined();
  });

  it("the restored log does not alias the caller's entry array", () => {
    const entries = [e(1, 1), e(2, 1)];
    const f = core("f", ["a", "b", "f"], st(1, entries));
    expect(f.entries).not.toBe(entries);
    entries.push(e(3, 1));
    expect(f.lastIndex).toBe(2);
    f.step("a", { type: "append", term: 1, prevLogIndex: 2, prevLogTerm: 1, leaderCommit: 0, round: 0, entries: [e(3, 1)] });
    expect(f.lastIndex).toBe(3);
    expect(entries.length).toBe(3);
    entries.length = 1;
    expect(f.entryAt(2)).toEqual(e(2, 1));
  });
});

/** Makes `a` leader of {a, b} at term 3 with its no-op committed and every ready taken. */
function leader(p: PersistedState = st(2, [e(1, 1), e(2, 2)]), cfg: Partial<RaftConfig> = {}): RaftCore {
  const a = core("a", ["a", "b"], p, cfg);
  a.tick(raftConfig().electionTimeoutMaxMs);
  a.step("b", { type: "preVoteReply", term: 3, granted: true, round: 1 });
  a.step("b", { type: "voteReply", term: 3, granted: true });
  expect(a.role).toBe("leader");
  turn(a);
  return a;
}

describe("hasReady: each reason for work on its own", () => {
  it("a term change alone (a stale reply at a higher term)", () => {
    const f = core("f", ["a", "b", "f"], st(2, [e(1, 1)]));
    expect(f.hasReady()).toBe(false);
    f.step("a", { type: "voteReply", term: 5, granted: false });
    expect(f.hasReady()).toBe(true);
    expect(turn(f)).toEqual({ ...EMPTY_READY, hardState: { term: 5, votedFor: null } });
    expect(f.hasReady()).toBe(false);
  });

  it("an outcome alone (a read refused on a follower)", () => {
    const f = core("f", ["a", "b", "f"], st(2, [e(1, 1)]));
    f.readIndex(7);
    expect(f.hasReady()).toBe(true);
    expect(turn(f)).toEqual({ ...EMPTY_READY, outcomes: [{ id: 7, ok: false, refusal: "not-leader" }] });
    expect(f.hasReady()).toBe(false);
  });

  it("a trace event alone (a frame refused as from itself)", () => {
    const f = core("f", ["a", "b", "f"], st(2, [e(1, 1)]));
    f.step("f", { type: "voteReply", term: 2, granted: true });
    expect(f.hasReady()).toBe(true);
    expect(turn(f)).toEqual({ ...EMPTY_READY, trace: [{ type: "frameRefused", from: "f", reason: "from-self" }] });
    expect(f.hasReady()).toBe(false);
  });

  it("a snapshot install alone (a core restored from a snapshot hands it to the state machine once)", () => {
    const f = core("f", ["a", "b", "f"], st(4, [e(6, 3)], snap(5, 3)));
    expect(f.hasReady()).toBe(true);
    expect(turn(f)).toEqual({ ...EMPTY_READY, committed: [{ kind: "install", snapshot: { throughIndex: 5, state: new Uint8Array([7, 7]) } }] });
    expect(f.appliedIndex).toBe(5);
    expect(f.hasReady()).toBe(false);
  });

  it("committed entries not yet applied alone (apply batches of one)", () => {
    const f = core("f", ["a", "b", "f"], st(1), { maxApplyBatch: 1 });
    f.step("a", { type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 3, round: 0, entries: [e(1, 1), e(2, 1), e(3, 1)] });
    expect(turn(f).committed).toEqual([{ kind: "entry", entry: e(1, 1) }]);
    expect([f.appliedIndex, f.commitIndex]).toEqual([1, 3]);
    expect(f.hasReady()).toBe(true);
    expect(turn(f)).toEqual({ ...EMPTY_READY, committed: [{ kind: "entry", entry: e(2, 1) }] });
    expect(f.hasReady()).toBe(true);
    expect(turn(f)).toEqual({ ...EMPTY_READY, committed: [{ kind: "entry", entry: e(3, 1) }] });
    expect(f.hasReady()).toBe(false);
  });

  it("a read not yet sent alone, and not while a confirmation round is in flight", () => {
    const a = leader();
    a.step("b", { type: "appendReply", term: 3, success: true, matchIndex: 3, conflictTerm: null, conflictIndex: 0, round: 0, rejectedPrev: 2 });
    expect(a.commitIndex).toBe(3);
    turn(a);
    expect(a.hasReady()).toBe(false);
    a.readIndex(9);
    expect(a.hasReady()).toBe(true);
    const rd = turn(a);
    const hb = [...rd.earlyMessages, ...rd.messages];
    expect(hb).toEqual([{ to: "b", message: { type: "append", term: 3, prevLogIndex: 3, prevLogTerm: 3, leaderCommit: 3, round: 1, entries: [] } }]);
    expect(a.hasReady()).toBe(false);
    a.readIndex(10); // waits for the round in flight
    expect(a.hasReady()).toBe(false);
    a.step("b", { type: "appendReply", term: 3, success: true, matchIndex: 3, conflictTerm: null, conflictIndex: 0, round: 1, rejectedPrev: 3 });
    const rd2 = turn(a);
    expect(rd2.outcomes).toEqual([{ id: 9, ok: true, index: 3, term: 3 }]);
    // the read that waited goes out with the next round at once
    expect([...rd2.earlyMessages, ...rd2.messages].map((m: Envelope) => m.message)).toMatchObject([{ type: "append", round: 2, entries: [] }]);
    expect(a.hasReady()).toBe(false);
  });
});

describe("setMaxMessageBytes clamps the frame budget into [256, config maxMessageBytes] (R-R7)", () => {
  // an app entry with no key costs 31 bytes plus its command, an AppendEntries frame 46 more: a command of
  // `budget - 77` bytes fits alone, one byte more does not
  it.each([
    [null, 1000],
    [100, 256],
    [255, 256],
    [256, 256],
    [500, 500],
    [999, 999],
    [1000, 1000],
    [5000, 1000],
  ])("set to %s: a proposal fits exactly up to a budget of %i bytes", (n, budget) => {
    const f = core("f", ["a", "b", "f"], st(1), { maxMessageBytes: 1000 });
    if (n !== null) f.setMaxMessageBytes(n);
    f.propose(1, new Uint8Array(budget - 77), null); // waits for a leader
    f.propose(2, new Uint8Array(budget - 76), null);
    expect(f.ready().outcomes).toEqual([{ id: 2, ok: false, refusal: "payload-too-large" }]);
  });

  it.each([
    [null, 9],
    [100, 2],
    [500, 4],
    [5000, 9],
  ])("set to %s: the leader's AppendEntries carry %i entries of 100 bytes", (n, count) => {
    // entries 1..10 of 100 encoded bytes each (69-byte commands); b's log is empty
    const log: LogEntry[] = [];
    for (let i = 1; i <= 10; i++) log.push(e(i, 1, 69));
    const a = leader(st(2, log), { maxMessageBytes: 1000 });
    if (n !== null) a.setMaxMessageBytes(n);
    a.step("b", { type: "appendReply", term: 3, success: false, matchIndex: 0, conflictTerm: null, conflictIndex: 1, round: 0, rejectedPrev: 10 });
    const rd = a.ready();
    const appends = [...rd.earlyMessages, ...rd.messages].map((m) => m.message);
    expect(appends).toMatchObject([{ type: "append", prevLogIndex: 0 }]);
    const first = appends[0]!;
    if (first.type !== "append") throw new Error("expected an append");
    expect(first.entries.map((x) => x.index)).toEqual(log.slice(0, count).map((x) => x.index));
  });
});
