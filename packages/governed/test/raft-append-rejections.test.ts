/**
 * What a leader does with a rejected AppendEntries (governed.md R-R1, R-R3), on scripted clusters where the test
 * decides which frame arrives when:
 * - while frames are pipelined, a rejection of one of them restarts probing just past what the follower
 *   acknowledged (never below it, never at or above the rejected position), even when the follower's hint points
 *   lower;
 * - a rejection that is out of date is ignored: a duplicate of one already acted on, one at or below what the
 *   follower has since acknowledged, one for a frame sent before the leader moved its next position back to it;
 * - the conflict-term hint: the leader looks the follower's conflicting term up in its own log and resumes right
 *   after its last entry of that term; an entry of a later term on the way down does not stop the search;
 * - hints from a faulty follower stay inside the range the rejection allows: never at or past the rejected
 *   position, never below index 1 (R-R3: "clamps it into [1, previous nextIndex − 1]").
 */
import { describe, expect, it } from "vitest";
import type { LogEntry } from "../src/index.ts";
import type { AppendMessage, AppendReplyMessage } from "../src/raft/message.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, Script } from "./support/script.ts";
import type { InFlight } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const put = (k: string): Uint8Array => kvCommand({ op: "put", key: k, value: "v" });

function take(s: Script, pick: (m: InFlight) => boolean): InFlight[] {
  const got = s.inflight.filter(pick);
  s.inflight = s.inflight.filter((m) => !pick(m));
  return got;
}
function give(s: Script, msgs: readonly InFlight[]): void {
  for (const m of msgs) s.core(m.to).step(m.from, m.message);
}
const between = (from: string, to: string) => (m: InFlight) => m.from === from && m.to === to;
function shape(m: InFlight): { prev: number; entries: number[] } {
  const a = m.message as AppendMessage;
  return { prev: a.prevLogIndex, entries: a.entries.map((e: LogEntry) => e.index) };
}
/** Hands `frames` to b and returns b's answers, held. */
function answersOfB(s: Script, frames: readonly InFlight[]): InFlight[] {
  give(s, frames);
  s.flush("b");
  return take(s, between("b", "a"));
}
/** Hands `answers` to a and returns the AppendEntries it then sends b, held. */
function sentToB(s: Script, answers: readonly InFlight[]): InFlight[] {
  give(s, answers);
  s.flush("a");
  return take(s, between("a", "b"));
}
const nextToB = (s: Script, answers: readonly InFlight[]) => sentToB(s, answers).map(shape);
function reply(m: InFlight): AppendReplyMessage {
  return m.message as AppendReplyMessage;
}

/**
 * a leads a, b, c (no-op committed everywhere, one entry a frame); then `n` entries are proposed one by one, so
 * `n` frames to b are in flight, and c stores and acknowledges all of them: everything is committed (and the
 * commit notices are out) before b answers anything.
 */
function pipelined(n: number, config = {}): { s: Script; base: number; frames: InFlight[] } {
  const s = new Script(ABC, { maxEntriesPerMessage: 1, ...config });
  s.elect("a");
  const a = s.core("a");
  s.now += 50; // one heartbeat, answered, with nothing in flight
  a.tick(s.now);
  s.stabilize();
  const base = a.lastIndex;
  for (let k = 1; k <= n; k++) {
    s.propose("a", put(`k${k}`));
    s.flush("a");
  }
  const frames = take(s, between("a", "b"));
  expect(frames.map(shape)).toEqual(Array.from({ length: n }, (_, k) => ({ prev: base + k, entries: [base + k + 1] })));
  give(s, take(s, between("a", "c")));
  s.flush("c");
  give(s, take(s, between("c", "a")));
  s.flush("a");
  expect(a.commitIndex).toBe(base + n);
  s.now += 5; // commitNoticeMs: the notices go out (and are dropped) well before the next heartbeat
  a.tick(s.now);
  s.flush("a");
  s.inflight = [];
  return { s, base, frames };
}

describe("a rejection among pipelined frames (R-R3)", () => {
  it("is acted on once: probing restarts just past what the follower acknowledged; duplicates and out-of-date copies are ignored", () => {
    const { s, base, frames } = pipelined(3);
    const [f1, , f3] = frames;
    const [i1, i2, i3] = [base + 1, base + 2, base + 3];
    // the third frame overtakes the first two: b, holding only `base`, rejects it with "my log ends at base"
    const [x3] = answersOfB(s, [f3!]);
    expect(reply(x3!)).toMatchObject({ success: false, rejectedPrev: i2, conflictTerm: null, conflictIndex: i1 });
    const [ok1] = answersOfB(s, [f1!]);
    expect(nextToB(s, [ok1!])).toEqual([]); // the second and third frames are still on their way
    // the hint (i1) is what b has since acknowledged: the probe starts right after it
    const probe = sentToB(s, [x3!]);
    expect(probe.map(shape)).toEqual([{ prev: i1, entries: [i2] }]);
    // the same rejection again (a duplicate) while that probe is out: nothing
    expect(nextToB(s, [x3!])).toEqual([]);
    // b takes the probe; a goes on from there
    const [ok2] = answersOfB(s, probe);
    expect(reply(ok2!)).toMatchObject({ success: true, matchIndex: i2 });
    const rest = sentToB(s, [ok2!]);
    expect(rest.map(shape)).toEqual([{ prev: i2, entries: [i3] }]);
    // the rejection once more, now at exactly what b acknowledged: out of date
    expect(nextToB(s, [x3!])).toEqual([]);
    const [ok3] = answersOfB(s, rest);
    expect(reply(ok3!)).toMatchObject({ success: true, matchIndex: i3 });
    expect(nextToB(s, [ok3!])).toEqual([]);
    // and once more, below what b acknowledged
    expect(nextToB(s, [x3!])).toEqual([]);
    expect(s.core("b").lastIndex).toBe(i3);
  });

  it("a rejection of a frame sent before the next position moved back to it is ignored", () => {
    const { s, base, frames } = pipelined(4);
    const [i1, i2, i3] = [base + 1, base + 2, base + 3];
    // a whole heartbeat interval without progress from b: a restarts from what b acknowledged
    s.now += 50;
    s.core("a").tick(s.now);
    s.flush("a");
    const probe = take(s, between("a", "b"));
    expect(probe.map(shape)).toEqual([{ prev: base, entries: [i1] }]);
    s.inflight = [];
    // the fourth frame (prevLogIndex i3) reaches b first and is rejected; then the probe is taken
    const [x4] = answersOfB(s, [frames[3]!]);
    expect(reply(x4!)).toMatchObject({ success: false, rejectedPrev: i3 });
    const [ok1] = answersOfB(s, probe);
    expect(nextToB(s, [ok1!])).toEqual([{ prev: i1, entries: [i2] }]); // next position: i3
    // x4 answers a frame sent before a moved back; the frame now going out from i3 has not been answered
    expect(nextToB(s, [x4!])).toEqual([]);
  });
});

describe("the conflict-term hint (R-R3)", () => {
  function e(index: number, term: number): LogEntry {
    return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 };
  }
  /** Flushes and delivers until quiet, like Script.stabilize, returning every frame sent on the way. */
  function settleRecording(s: Script): InFlight[] {
    const seen: InFlight[] = [];
    for (let round = 0; round < 1000; round++) {
      s.flushAll();
      seen.push(...s.inflight);
      if (s.inflight.length === 0 && ![...s.cores.values()].some((c) => c.hasReady())) return seen;
      s.deliver();
    }
    throw new Error("did not settle");
  }

  it("the leader resumes after its own last entry of the follower's conflicting term, searching past entries of later terms", () => {
    // a and c: terms 1 2 2 3 3; b kept two entries of term 2 that the term-2 leader never committed: 1 2 2 2 2
    const s = new Script(ABC);
    const ac = [e(1, 1), e(2, 2), e(3, 2), e(4, 3), e(5, 3)];
    const b = [e(1, 1), e(2, 2), e(3, 2), e(4, 2), e(5, 2)];
    s.start("a", undefined, { term: 3, votedFor: null, snapshot: null, entries: ac });
    s.start("c", undefined, { term: 3, votedFor: null, snapshot: null, entries: ac });
    s.start("b", undefined, { term: 3, votedFor: null, snapshot: null, entries: b });
    const a = s.core("a");
    const seen: InFlight[] = [];
    for (let i = 0; i < 100 && a.state !== "leader"; i++) {
      s.now += 10;
      a.tick(s.now);
      seen.push(...settleRecording(s));
    }
    expect([a.state, a.term]).toEqual(["leader", 4]);
    // b's rejection of the first probe (prevLogIndex 5, term 3): its term there is 2, which it holds from index 2
    const rejections = seen.filter((m) => m.from === "b" && m.message.type === "appendReply" && !reply(m).success);
    expect(rejections.map((m) => reply(m))).toMatchObject([{ rejectedPrev: 5, conflictTerm: 2, conflictIndex: 2 }]);
    // a's last entry of term 2 is 3: it probes at 3, which b holds, and b takes the rest
    expect(seen.filter((m) => between("a", "b")(m) && m.message.type === "append").map(shape)).toEqual([{ prev: 5, entries: [6] }, { prev: 3, entries: [4, 5, 6] }]);
    expect(s.core("b").entries.map((x) => x.term)).toEqual([1, 2, 2, 3, 3, 4]);
  });
});

describe("hints from a faulty follower (R-R3)", () => {
  it("a hint pointing past the rejected position is not followed: the next probe is below it", () => {
    const { s, base, frames } = pipelined(3);
    const [i1, i2] = [base + 1, base + 2];
    const [ok1] = answersOfB(s, [frames[0]!]);
    expect(nextToB(s, [ok1!])).toEqual([]);
    // b rejects the frame at prevLogIndex i2 but claims a log reaching far beyond it
    const lie: AppendReplyMessage = {
      type: "appendReply", term: s.core("a").term, success: false, matchIndex: 0, rejectedPrev: i2, conflictTerm: null,
      conflictIndex: base + 50, round: 0,
    };
    expect(nextToB(s, [{ from: "b", to: "a", message: lie }])).toEqual([{ prev: i1, entries: [i2] }]);
  });

  it("a conflict term the leader holds only past the rejected position is no hint: the follower's first index is used", () => {
    // a: terms 1 2 2 3 3, elected at term 4 (no-op 6) while b hears nothing: b is probed at prevLogIndex 5
    const s = new Script(ABC);
    const ac = [1, 2, 2, 3, 3].map((term, k): LogEntry => ({ index: k + 1, term, kind: "app", key: null, command: new Uint8Array([k]), stampedAt: 0 }));
    for (const id of ["a", "c"]) s.start(id, undefined, { term: 3, votedFor: null, snapshot: null, entries: ac });
    const a = s.core("a");
    s.elect("a", isolate(["b"]));
    expect([a.term, a.lastIndex]).toEqual([4, 6]);
    s.inflight = [];
    // b claims term 4 at index 5, from index 2 on: the leader's only term-4 entry is 6, past the rejected position
    const lie: AppendReplyMessage = {
      type: "appendReply", term: 4, success: false, matchIndex: 0, rejectedPrev: 5, conflictTerm: 4, conflictIndex: 2, round: 0,
    };
    expect(nextToB(s, [{ from: "b", to: "a", message: lie }])).toEqual([{ prev: 1, entries: [2, 3, 4, 5, 6] }]);
  });

  it("a rejection at index 0, which always matches, leaves the next position at 1: the follower is still probed and catches up", () => {
    const s = new Script(ABC);
    const a = s.core("a");
    s.elect("a", isolate(["b"])); // b heard nothing: a probes it from index 1
    expect(a.lastIndex).toBe(1);
    s.inflight = [];
    const lie: AppendReplyMessage = {
      type: "appendReply", term: a.term, success: false, matchIndex: 0, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 0,
    };
    expect(nextToB(s, [{ from: "b", to: "a", message: lie }])).toEqual([{ prev: 0, entries: [1] }]);
    s.advance(200);
    expect(s.core("b").lastIndex).toBe(a.lastIndex);
    expect(s.core("b").commitIndex).toBe(a.commitIndex);
  });
});
