/**
 * The follower's AppendEntries answers around its snapshot floor (governed.md R-R1, R-R3): entries the snapshot
 * already covers are acknowledged, and the conflict hint names the first index of the conflicting term in the live
 * log — never the floor, which always matches.
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { LogEntry, Message } from "../src/index.ts";
import { ABC, cycle, entry, HAND_TIMING, sentTo } from "./support/hand-driven.ts";

/** Follower `b` restored from a snapshot through `floor` (of term `floorTerm`) plus `entries`, at `term`. */
function compacted(floor: number, floorTerm: number, entries: LogEntry[], term: number): RaftCore {
  const b = new RaftCore({
    id: "b", bootstrap: ABC,
    persisted: { term, votedFor: null, snapshot: { lastIndex: floor, lastTerm: floorTerm, config: ABC, state: new Uint8Array([7]) }, entries },
    config: raftConfig(HAND_TIMING), random: () => 0, now: 0,
  });
  cycle(b); // the restored snapshot is handed to the state machine
  return b;
}

function append(term: number, prevLogIndex: number, prevLogTerm: number, entries: LogEntry[], leaderCommit: number): Message {
  return { type: "append", term, prevLogIndex, prevLogTerm, leaderCommit, round: 4, entries };
}

describe("entries at or below the snapshot floor (R-R1)", () => {
  it("a re-sent AppendEntries wholly below the floor is acknowledged up to its last entry", () => {
    const b = compacted(3, 2, [entry(4, 2)], 2);
    // the leader of term 2 re-sends entry 2 (a retransmission of a frame b answered before it compacted)
    b.step("a", append(2, 1, 1, [entry(2, 1)], 3));
    expect(sentTo(cycle(b), "a")).toEqual([
      { type: "appendReply", term: 2, success: true, matchIndex: 2, conflictTerm: null, conflictIndex: 0, round: 4, rejectedPrev: 1 },
    ]);
    expect(b.lastIndex).toBe(4);
  });
});

describe("the conflict hint stays above the snapshot floor (R-R3)", () => {
  it("a conflicting term that also covers the floor is reported from the first live index", () => {
    // the floor (3) and b's two uncommitted entries are of term 2; the new leader holds a term-3 entry at 5
    const b = compacted(3, 2, [entry(4, 2), entry(5, 2)], 2);
    b.step("a", append(3, 5, 3, [], 3));
    expect(sentTo(cycle(b), "a")).toEqual([
      { type: "appendReply", term: 3, success: false, matchIndex: 0, conflictTerm: 2, conflictIndex: 4, round: 4, rejectedPrev: 5 },
    ]);
  });

  it("the hint is the first index of the conflicting term, not the first live index nor the probed one", () => {
    const b = compacted(3, 1, [entry(4, 1), entry(5, 2), entry(6, 2)], 2);
    b.step("a", append(3, 6, 3, [], 3));
    expect(sentTo(cycle(b), "a")).toEqual([
      { type: "appendReply", term: 3, success: false, matchIndex: 0, conflictTerm: 2, conflictIndex: 5, round: 4, rejectedPrev: 6 },
    ]);
  });
});
