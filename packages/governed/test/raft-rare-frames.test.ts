/**
 * Follower and leader answers to frames no cluster run produces (governed.md R-R2, R-S1, R-F2, R-R7), on
 * hand-driven cores: an AppendEntries reaching below the follower's snapshot floor is checked against the
 * snapshot's last term at the floor (refused "snapshot-mismatch" when it differs, otherwise the part past the floor
 * is appended); an InstallSnapshot chunk that does not start a transfer (offset ≠ 0, none in progress) is answered
 * "start again from 0, not done"; a forwarded proposal too large for the frame budget is answered "failed" and
 * never appended.
 */
import { describe, expect, it } from "vitest";
import { seededRandom } from "@heddle/seam";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { LogEntry, PersistedState, Ready } from "../src/index.ts";
import { Script } from "./support/script.ts";

const ABC = { voters: ["a", "b", "c"], learners: [] };

function e(index: number, term: number): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 };
}
function follower(p: PersistedState): RaftCore {
  return new RaftCore({ id: "b", bootstrap: ABC, persisted: p, config: raftConfig({}), random: seededRandom(2), now: 0 });
}
/** b at term 3 holding only a snapshot through index 5 of term 2. */
function snapshotted(): RaftCore {
  return follower({ term: 3, votedFor: null, snapshot: { lastIndex: 5, lastTerm: 2, config: ABC, state: new Uint8Array([9]) }, entries: [] });
}
function sent(rd: Ready): unknown[] {
  return [...rd.earlyMessages, ...rd.messages];
}

describe("AppendEntries starting below the snapshot floor (R-R2)", () => {
  it("entries whose term at the floor matches the snapshot: the part past the floor is appended and acknowledged", () => {
    const b = snapshotted();
    // prev 3: the first two entries (4, 5) lie inside the snapshot; 5 has the snapshot's term, 6 and 7 a later one
    b.step("a", { type: "append", term: 3, prevLogIndex: 3, prevLogTerm: 2, leaderCommit: 7, round: 4, entries: [e(4, 2), e(5, 2), e(6, 3), e(7, 3)] });
    const rd = b.ready();
    expect(sent(rd)).toEqual([
      { to: "a", message: { type: "appendReply", term: 3, success: true, matchIndex: 7, rejectedPrev: 3, conflictTerm: null, conflictIndex: 0, round: 4 } },
    ]);
    expect(rd.storage).toContainEqual({ op: "append", entries: [e(6, 3), e(7, 3)] });
    expect(rd.trace.filter((t) => t.type === "frameRefused")).toEqual([]);
    expect(b.refusedFrames.size).toBe(0);
    expect(b.floor).toBe(5);
    expect(b.lastIndex).toBe(7);
    expect([b.termAt(5), b.termAt(6), b.termAt(7)]).toEqual([2, 3, 3]);
    expect(b.commitIndex).toBe(7);
  });

  it("an entry at the floor of another term than the snapshot's: the frame is refused, nothing appended, no reply", () => {
    const b = snapshotted();
    b.step("a", { type: "append", term: 3, prevLogIndex: 3, prevLogTerm: 1, leaderCommit: 6, round: 4, entries: [e(4, 1), e(5, 1), e(6, 3)] });
    const rd = b.ready();
    expect(sent(rd)).toEqual([]);
    expect(rd.trace.filter((t) => t.type === "frameRefused")).toEqual([{ type: "frameRefused", from: "a", reason: "snapshot-mismatch" }]);
    expect([...b.refusedFrames]).toEqual([["snapshot-mismatch", 1]]);
    expect(rd.storage.filter((op) => op.op === "append")).toEqual([]);
    expect(b.lastIndex).toBe(5);
    expect(b.commitIndex).toBe(5);
  });
});

describe("InstallSnapshot chunk that starts no transfer (R-S1)", () => {
  it("offset ≠ 0 with no transfer in progress: answered nextOffset 0, not done; a chunk at 0 then starts one", () => {
    const b = follower({ term: 2, votedFor: null, snapshot: null, entries: [] });
    const chunk = (offset: number, data: number[]) =>
      ({ type: "snapshot", term: 2, lastIndex: 5, lastTerm: 2, config: ABC, total: 4, offset, data: new Uint8Array(data) }) as const;
    b.step("a", chunk(2, [3, 4]));
    let rd = b.ready();
    expect(sent(rd)).toEqual([{ to: "a", message: { type: "snapshotReply", term: 2, lastIndex: 5, nextOffset: 0, done: false } }]);
    expect(b.snapshot).toBeNull();
    b.advance(rd);
    b.step("a", chunk(0, [1, 2]));
    rd = b.ready();
    expect(sent(rd)).toEqual([{ to: "a", message: { type: "snapshotReply", term: 2, lastIndex: 5, nextOffset: 2, done: false } }]);
    b.advance(rd);
    b.step("a", chunk(2, [3, 4]));
    rd = b.ready();
    expect(sent(rd)).toEqual([{ to: "a", message: { type: "snapshotReply", term: 2, lastIndex: 5, nextOffset: 4, done: true } }]);
    expect(b.snapshot?.state).toEqual(new Uint8Array([1, 2, 3, 4]));
  });
});

describe("forwarded proposal over the frame budget (R-F2, R-R7)", () => {
  it("the leader answers failed and appends nothing; one within the budget is appended", () => {
    const s = new Script(["a", "b", "c"], { maxMessageBytes: 256 });
    s.elect("a");
    const a = s.core("a");
    const last = a.lastIndex;
    a.step("c", { type: "forward", corrId: 7, key: null, command: new Uint8Array(300) });
    const rd = s.flush("a");
    expect(sent(rd)).toEqual([{ to: "c", message: { type: "forwardReply", corrId: 7, outcome: "failed", index: 0, term: 0 } }]);
    expect(a.lastIndex).toBe(last);
    a.step("c", { type: "forward", corrId: 8, key: null, command: new Uint8Array(10) });
    expect(a.lastIndex).toBe(last + 1);
  });
});

describe("a candidate whose configuration is changed by a leader's frame (R-M3, R-E1)", () => {
  it("the frame makes it a follower of that leader first, and it stays one in the configuration that removed it", () => {
    const c = new RaftCore({
      id: "c", bootstrap: ABC, persisted: { term: 1, votedFor: null, snapshot: null, entries: [] }, config: raftConfig({}), random: seededRandom(3), now: 0,
    });
    let now = 0;
    while (c.state !== "candidate" && now < 10_000) {
      now += 10;
      c.tick(now);
      const rd = c.ready();
      c.advance(rd);
      if (c.state === "precandidate") c.step("b", { type: "preVoteReply", term: 2, granted: true, round: 1 });
    }
    expect(c.state).toBe("candidate");
    expect(c.term).toBe(2);
    c.advance(c.ready());
    const removal: LogEntry = { index: 1, term: 2, kind: "config", key: null, command: new Uint8Array(), config: { voters: ["a", "b"], learners: [] }, stampedAt: 0 };
    c.step("a", { type: "append", term: 2, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 1, entries: [removal] });
    const rd = c.ready();
    expect(rd.trace.filter((t) => t.type === "stepDown")).toEqual([{ type: "stepDown", term: 2, reason: "lost-election" }]);
    expect(sent(rd)).toEqual([
      { to: "a", message: { type: "appendReply", term: 2, success: true, matchIndex: 1, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 1 } },
    ]);
    expect([c.state, c.leader, c.term]).toEqual(["follower", "a", 2]);
    expect(c.config).toEqual({ voters: ["a", "b"], learners: [] });
  });
});
