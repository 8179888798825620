/**
 * How the leader reads AppendEntries answers and what it sends next (governed.md R-R6, R-Q2, R-C1, §4.9), on
 * scripted clusters where the test decides which frame arrives when:
 * - an answer reaching a node that is no longer leader (it stepped down at the same term) is dropped silently;
 * - an echoed round never lowers what a follower already confirmed: a late answer from an older round does not
 *   withdraw its vote from a read's confirmation (R-Q2);
 * - pipelining: an answer for the first of several frames in flight does not re-send the others; each answer frees
 *   its frame's slot of `maxInflightMessages`;
 * - an answer acknowledging more than the leader has sent since its last restart of the window moves the next
 *   position past it, so nothing acknowledged is sent again;
 * - a heartbeat after an answer that made progress is an entry-less heartbeat, not a re-send of frames still in
 *   flight — those are re-sent only after a whole heartbeat interval without progress;
 * - a rejection arriving while the follower is being sent a snapshot changes nothing (§4.9, R-S2: one chunk in
 *   flight per follower).
 */
import { describe, expect, it } from "vitest";
import type { LogEntry } from "../src/index.ts";
import type { AppendMessage } from "../src/raft/message.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, Script } from "./support/script.ts";
import type { InFlight } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const HEARTBEAT = 50; // the default heartbeatMs
const put = (k: string): Uint8Array => kvCommand({ op: "put", key: k, value: "v" });

/** Removes and returns the queued frames matching `pick` (they are then held by the test, not lost). */
function take(s: Script, pick: (m: InFlight) => boolean): InFlight[] {
  const got = s.inflight.filter(pick);
  s.inflight = s.inflight.filter((m) => !pick(m));
  return got;
}
/** Hands held frames to their receivers. */
function give(s: Script, msgs: readonly InFlight[]): void {
  for (const m of msgs) s.core(m.to).step(m.from, m.message);
}
const between = (from: string, to: string) => (m: InFlight) => m.from === from && m.to === to;
/** An AppendEntries as (prevLogIndex, indexes carried). */
function shape(m: InFlight): { prev: number; entries: number[] } {
  const a = m.message as AppendMessage;
  return { prev: a.prevLogIndex, entries: a.entries.map((e: LogEntry) => e.index) };
}
/** Runs the leader's clock to its next heartbeat (one interval on), flushing only the leader. */
function heartbeat(s: Script, id = "a"): void {
  s.now += HEARTBEAT;
  s.core(id).tick(s.now);
  s.flush(id);
}
/** Lets the leader's commit notices (due `commitNoticeMs` after a commit) go out, and drops them. */
function noticesOut(s: Script, id = "a"): void {
  s.now += 5; // the default commitNoticeMs, well before the next heartbeat
  s.core(id).tick(s.now);
  s.flush(id);
  s.inflight = s.inflight.filter((m) => m.from !== id);
}
/** a leads a, b, c with its no-op committed everywhere, then one heartbeat is answered with nothing in flight. */
function settled(config = {}): Script {
  const s = new Script(ABC, config);
  s.elect("a");
  heartbeat(s);
  s.stabilize();
  return s;
}
/** Proposes one command on a and flushes it: one AppendEntries per follower. Returns the entry's index. */
function proposeOne(s: Script, k: string): number {
  s.propose("a", put(k));
  s.flush("a");
  return s.core("a").lastIndex;
}

describe("an answer to a node no longer leading", () => {
  it("a late AppendEntries answer at the same term, after a check-quorum step-down, is dropped without a refusal", () => {
    const s = settled();
    const a = s.core("a");
    const term = a.term;
    heartbeat(s);
    give(s, take(s, between("a", "b")));
    s.flush("b");
    const late = take(s, between("b", "a"));
    expect(late.map((m) => m.message.type)).toEqual(["appendReply"]);
    // a hears nobody for a whole check-quorum window and steps down at the same term (R-C1)
    for (let i = 0; i < 100 && a.state === "leader"; i++) {
      s.inflight = [];
      s.now += 10;
      a.tick(s.now);
      s.flush("a");
    }
    expect([a.state, a.term]).toEqual(["follower", term]);
    s.inflight = [];
    const refusedBefore = [...a.refusedFrames.values()].reduce((x, y) => x + y, 0);
    give(s, late);
    const rd = s.flush("a");
    expect(rd.trace).toEqual([]);
    expect([...rd.messages, ...rd.earlyMessages]).toEqual([]);
    expect([...a.refusedFrames.values()].reduce((x, y) => x + y, 0)).toBe(refusedBefore);
  });
});

describe("echoed rounds (R-Q2)", () => {
  it("a late answer from an older round does not withdraw a follower's confirmation of a read", () => {
    const s = new Script(["a", "b", "c", "d", "e"]);
    s.elect("a");
    s.stabilize();
    const a = s.core("a");
    // b answers an AppendEntries of the round before the read; that answer is delayed
    proposeOne(s, "k1");
    const toB = take(s, between("a", "b"));
    s.inflight = [];
    give(s, toB);
    s.flush("b");
    const older = take(s, between("b", "a"));
    expect(older).toHaveLength(1);
    const read = s.nextId++;
    a.readIndex(read);
    s.flush("a"); // the read's confirmation round goes to every voter
    const round = take(s, (m) => m.from === "a");
    const answerFrom = (peer: string): InFlight[] => {
      give(s, round.filter((m) => m.to === peer));
      s.flush(peer);
      return take(s, between(peer, "a"));
    };
    give(s, answerFrom("b"));
    expect(s.flush("a").outcomes).toEqual([]); // a and b: two of five
    give(s, older); // b's answer from before the read arrives last
    expect(s.flush("a").outcomes).toEqual([]);
    give(s, answerFrom("c"));
    expect(s.flush("a").outcomes).toEqual([{ id: read, ok: true, index: a.commitIndex, term: a.term }]);
  });
});

describe("pipelined frames (R-R6)", () => {
  it("an answer for the first of two frames in flight re-sends nothing, and frees its slot of maxInflightMessages", () => {
    const s = settled({ maxInflightMessages: 2 });
    const i1 = proposeOne(s, "k1");
    const i2 = proposeOne(s, "k2");
    const frames = take(s, between("a", "b"));
    expect(frames.map(shape)).toEqual([{ prev: i1 - 1, entries: [i1] }, { prev: i1, entries: [i2] }]);
    s.inflight = [];
    give(s, frames.slice(0, 1));
    s.flush("b");
    give(s, take(s, between("b", "a")));
    s.flush("a");
    expect(take(s, between("a", "b"))).toEqual([]); // the second frame is still on its way
    // one slot of two is free: the next entry goes out at once, behind the frame in flight
    const i3 = proposeOne(s, "k3");
    expect(take(s, between("a", "b")).map(shape)).toEqual([{ prev: i2, entries: [i3] }]);
  });

  it("an answer acknowledging past the window restarted after a silent interval moves the next position past it", () => {
    const s = settled({ maxEntriesPerMessage: 1 });
    const a = s.core("a");
    const first = a.lastIndex + 1;
    for (const k of ["k1", "k2", "k3"]) proposeOne(s, k);
    const last = a.lastIndex;
    const pipelined = take(s, between("a", "b"));
    expect(pipelined.map(shape)).toEqual([0, 1, 2].map((k) => ({ prev: first - 1 + k, entries: [first + k] })));
    // c has everything: all is committed before b answers
    give(s, take(s, between("a", "c")));
    s.flush("c");
    give(s, take(s, between("c", "a")));
    s.flush("a");
    expect(a.commitIndex).toBe(last);
    noticesOut(s);
    // a whole interval passes without progress from b: a re-sends from what b acknowledged, one entry a frame
    heartbeat(s);
    const probe = take(s, between("a", "b"));
    expect(probe.map(shape)).toEqual([{ prev: first - 1, entries: [first] }]);
    s.inflight = [];
    // b gets everything; its answer to the re-sent frame arrives first, the one to the pipelined last frame later
    give(s, [...pipelined, ...probe]);
    s.flush("b");
    const answers = take(s, between("b", "a"));
    expect(answers.map((m) => (m.message as { matchIndex: number }).matchIndex)).toEqual([first, first + 1, last, first]);
    give(s, answers.slice(3));
    s.flush("a");
    expect(take(s, between("a", "b")).map(shape)).toEqual([{ prev: first, entries: [first + 1] }]);
    give(s, answers.slice(2, 3));
    s.flush("a");
    // b holds everything: nothing is sent again
    expect(take(s, between("a", "b"))).toEqual([]);
  });

  it("a heartbeat after an answer that made progress is entry-less; frames in flight are not re-sent", () => {
    const s = settled();
    s.inflight = [];
    const i1 = proposeOne(s, "k1");
    const i2 = proposeOne(s, "k2");
    const frames = take(s, between("a", "b"));
    s.inflight = [];
    give(s, frames.slice(0, 1));
    s.flush("b");
    give(s, take(s, between("b", "a")));
    s.flush("a");
    noticesOut(s); // b's answer committed i1
    heartbeat(s);
    const hb = take(s, between("a", "b"));
    expect(hb.map(shape)).toEqual([{ prev: i1, entries: [] }]);
    // a second interval with no progress from b: now the frame still missing is sent again
    heartbeat(s);
    expect(take(s, between("a", "b")).map(shape)).toEqual([{ prev: i1, entries: [i2] }]);
  });
});

describe("a rejection while a snapshot is being sent (§4.9)", () => {
  it("a late rejection of the probe that preceded the snapshot sends nothing; the transfer then completes", () => {
    const s = new Script(ABC);
    const e = (index: number): LogEntry => ({ index, term: 1, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 });
    const log = [e(1), e(2), e(3)];
    for (const id of ["a", "c"]) s.start(id, undefined, { term: 1, votedFor: null, snapshot: null, entries: log });
    const a = s.core("a");
    s.elect("a", isolate(["b"])); // term 2: b, with an empty log, heard nothing
    const noop = a.lastIndex;
    expect(a.commitIndex).toBe(noop);
    heartbeat(s); // the probe to b is re-sent
    const probe = take(s, between("a", "b"));
    expect(probe.map(shape)).toEqual([{ prev: noop - 1, entries: [noop] }]);
    s.inflight = [];
    give(s, probe);
    s.flush("b");
    const rejection = take(s, between("b", "a"));
    expect(rejection.map((m) => m.message)).toMatchObject([{ type: "appendReply", success: false, rejectedPrev: noop - 1 }]);
    expect(a.compact(noop, s.kvs.get("a")!.snapshot())).toBe(true);
    s.flush("a");
    heartbeat(s); // b's next position is compacted away: a snapshot is sent
    const chunk = take(s, between("a", "b"));
    expect(chunk.map((m) => m.message.type)).toEqual(["snapshot"]);
    s.inflight = [];
    give(s, rejection);
    const rd = s.flush("a");
    expect([...rd.messages, ...rd.earlyMessages]).toEqual([]);
    give(s, chunk);
    s.stabilize();
    expect(s.core("b").snapshot?.lastIndex).toBe(noop);
    expect(s.core("b").lastIndex).toBe(noop);
  });
});
