/**
 * What the leader sends each follower, frame by frame (governed.md R-R7, R-S2, §4.1 limits, R-Q2):
 * - an AppendEntries holds as many entries as fit the frame budget — exactly up to it — and at least one, even an
 *   entry the budget has since shrunk below (R-R7);
 * - a follower being sent a snapshot gets no AppendEntries and no restarted transfer when the log grows; a lost chunk
 *   is sent again once a whole heartbeat period has passed since it was sent, not sooner (R-S2);
 * - at most `maxInflightMessages` AppendEntries are unanswered per follower, and an answer frees its slot at once;
 * - a heartbeat sits where the follower is known to match (a replicating follower) or where the probe stands (a
 *   probing one); a probing follower is probed again with entries; a replicating follower whose frames went
 *   unanswered for a whole period is probed again from what it acknowledged, and one that is merely idle is not.
 */
import { describe, expect, it } from "vitest";
import { APPEND_OVERHEAD_BYTES, entryBytes } from "../src/raft/codec.ts";
import type { LogEntry, Message, PersistedState, Ready } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, Script } from "./support/script.ts";
import type { InFlight } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const put = (k: string, v: string): Uint8Array => kvCommand({ op: "put", key: k, value: v });
const cutC = isolate(["c"]);

function settled(config = {}): Script {
  const s = new Script(ABC, config);
  s.elect("a");
  s.stabilize();
  return s;
}
/** The AppendEntries in `rd` addressed to `to`. */
type AppendMessage = Extract<Message, { type: "append" }>;
function appendsTo(rd: Ready, to: string): AppendMessage[] {
  const out: AppendMessage[] = [];
  for (const env of [...rd.earlyMessages, ...rd.messages]) if (env.to === to && env.message.type === "append") out.push(env.message);
  return out;
}
const indexes = (m: AppendMessage): number[] => m.entries.map((e) => e.index);
/** Moves only `id`'s clock by 10 ms and takes its ready; nothing is delivered. */
function tickOnly(s: Script, id: string): Ready {
  s.now += 10;
  s.core(id).tick(s.now);
  return s.flush(id);
}

describe("the frame budget of an AppendEntries (R-R7)", () => {
  it("two entries that fill the budget exactly go in one frame", () => {
    const s = settled();
    const a = s.core("a");
    s.propose("a", new Uint8Array(150).fill(1), null);
    s.propose("a", new Uint8Array(150).fill(2), null);
    const [e1, e2] = a.entries.slice(-2) as [LogEntry, LogEntry];
    const budget = APPEND_OVERHEAD_BYTES + entryBytes(e1) + entryBytes(e2);
    a.setMaxMessageBytes(budget);
    const rd = s.flush("a");
    for (const peer of ["b", "c"]) expect(appendsTo(rd, peer).map(indexes)).toEqual([[e1.index, e2.index]]);
    expect(Math.max(...s.frameSizes)).toBeLessThanOrEqual(budget);
    s.stabilize();
    expect(s.core("c").lastIndex).toBe(e2.index);
  });

  it("an entry larger than a budget shrunk after it was appended is still sent, alone, and commits", () => {
    const s = settled();
    const a = s.core("a");
    const big = s.propose("a", new Uint8Array(600).fill(7), null);
    s.propose("a", new Uint8Array(10).fill(8), null);
    a.setMaxMessageBytes(256);
    const rd = s.flush("a");
    const bigIndex = a.lastIndex - 1;
    expect(appendsTo(rd, "b").map(indexes)).toEqual([[bigIndex]]); // the next entry waits for the answer
    s.stabilize();
    expect(s.outcomes.get(big)).toMatchObject({ ok: true, index: bigIndex });
    expect([s.core("b").lastIndex, s.core("c").lastIndex, a.commitIndex]).toEqual([a.lastIndex, a.lastIndex, a.lastIndex]);
  });
});

describe("a follower being sent a snapshot (R-S2)", () => {
  /** a compacted its log past everything c has; c is cut off and its transfer has started (chunk 0, lost). */
  function snapshotting(chunks: [number, number][]) {
    const s = settled({ snapshotChunkBytes: 64, maxMessageBytes: 400 });
    const a = s.core("a");
    for (let i = 0; i < 10; i++) s.propose("a", put(`k${i}`, `value-${i}`), { client: "w", seq: i + 1 });
    s.stabilize(cutC);
    expect(a.compact(a.appliedIndex, s.kvs.get("a")!.snapshot())).toBe(true);
    s.flush("a");
    expect(s.kvs.get("a")!.snapshot().length).toBeGreaterThan(128); // three chunks or more
    const watch = (m: InFlight): boolean => {
      if (m.to === "c" && m.message.type === "snapshot") chunks.push([s.now, m.message.offset]);
      return cutC(m);
    };
    const tick = (): void => {
      s.now += 10;
      a.tick(s.now);
      s.stabilize(watch);
    };
    for (let i = 0; i < 20 && chunks.length === 0; i++) tick();
    expect(chunks).toHaveLength(1);
    expect(a.progress.get("c")!.state).toBe("snapshot");
    return { s, a, tick, watch, t0: s.now };
  }

  it("new entries on the leader send it nothing: no AppendEntries, no transfer restarted from offset 0", () => {
    const chunks: [number, number][] = [];
    const { s } = snapshotting(chunks);
    s.propose("a", put("later", "x"), { client: "w", seq: 99 });
    const rd = s.flush("a");
    expect(appendsTo(rd, "b")).toHaveLength(1);
    expect([...rd.earlyMessages, ...rd.messages].filter((env) => env.to === "c")).toEqual([]);
  });

  it("a chunk is sent again at the first heartbeat a whole period after it was sent, not at one sooner", () => {
    const chunks: [number, number][] = [];
    const { s, a, tick, watch, t0 } = snapshotting(chunks); // chunk 0 sent on the heartbeat at t0
    while (s.now < t0 + 60) tick();
    expect(chunks).toEqual([[t0, 0], [t0 + 50, 0]]); // lost again: re-sent on the next heartbeat, 50 ms later
    // c's answer to chunk 0 arrives between two heartbeats: chunk 1 goes out at once, at t0 + 70
    s.now += 10;
    a.tick(s.now);
    a.step("c", { type: "snapshotReply", term: a.term, lastIndex: a.floor, nextOffset: 64, done: false });
    s.stabilize(watch);
    while (s.now < t0 + 160) tick();
    // the heartbeat at t0 + 100 comes 30 ms after chunk 1: not re-sent; the one at t0 + 150 re-sends it
    expect(chunks).toEqual([[t0, 0], [t0 + 50, 0], [t0 + 70, 64], [t0 + 150, 64]]);
  });
});

describe("unanswered AppendEntries per follower (maxInflightMessages)", () => {
  it("with a limit of 2, the third and fourth proposals are not sent to a follower that has answered neither", () => {
    const s = settled({ maxInflightMessages: 2 });
    const sentToC: number[][] = [];
    for (let i = 1; i <= 4; i++) {
      s.propose("a", put(`k${i}`, "v"), { client: "w", seq: i });
      sentToC.push(...appendsTo(s.flush("a"), "c").map(indexes));
      s.inflight = []; // nothing arrives
    }
    const first = s.core("a").lastIndex - 3;
    expect(sentToC).toEqual([[first], [first + 1]]);
  });

  it("with a limit of 1, an answered AppendEntries frees the slot: the next proposal is sent at once", () => {
    const s = settled({ maxInflightMessages: 1 });
    s.propose("a", put("k1", "v"), { client: "w", seq: 1 });
    s.stabilize();
    s.propose("a", put("k2", "v"), { client: "w", seq: 2 });
    const rd = s.flush("a");
    const last = s.core("a").lastIndex;
    for (const peer of ["b", "c"]) expect(appendsTo(rd, peer).map(indexes)).toEqual([[last]]);
  });
});

describe("heartbeats: where they sit and when they probe again", () => {
  const e = (index: number): LogEntry => ({ index, term: 1, kind: "app", key: null, command: put(`k${index}`, "v"), stampedAt: 0 });
  /**
   * a, b and c all hold entries 1–3 of term 1; b is elected for term 2 with c cut off (c: probing at 4, its probe
   * lost), its no-op 4 commits with a, then entry 5 is proposed and its frame to a is lost (a: replicating, matched
   * at 4, 5 in flight).
   */
  function lostFrames(): Script {
    const s = new Script(ABC);
    const disk: PersistedState = { term: 1, votedFor: null, snapshot: null, entries: [e(1), e(2), e(3)] };
    for (const id of ABC) s.start(id, s.bootstrap, disk);
    s.elect("b", cutC);
    const b = s.core("b");
    expect([b.term, b.commitIndex, b.lastIndex]).toEqual([2, 4, 4]);
    s.propose("b", put("k5", "v"), { client: "w", seq: 5 });
    expect(appendsTo(s.flush("b"), "a").map(indexes)).toEqual([[5]]);
    s.inflight = [];
    return s;
  }
  const at = (m: AppendMessage) => ({ prevLogIndex: m.prevLogIndex, prevLogTerm: m.prevLogTerm, entries: indexes(m) });

  it("a read's heartbeat: at the replicating follower's match, and at the probing follower's probe position", () => {
    const s = lostFrames();
    const b = s.core("b");
    b.readIndex(s.nextId++);
    const rd = s.flush("b");
    expect(appendsTo(rd, "a").map(at)).toEqual([{ prevLogIndex: 4, prevLogTerm: 2, entries: [] }]);
    expect(appendsTo(rd, "c").map(at)).toEqual([{ prevLogIndex: 3, prevLogTerm: 1, entries: [] }]);
  });

  it("periodic heartbeats: the probing follower is probed again with entries; the replicating one gets an empty frame at its match, then, its frame unanswered for a whole period, a probe from there", () => {
    const s = lostFrames();
    const beats: Ready[] = [];
    for (let i = 0; i < 12 && beats.length < 2; i++) {
      const rd = tickOnly(s, "b");
      if (appendsTo(rd, "a").length > 0) beats.push(rd);
      s.inflight = [];
    }
    expect(beats).toHaveLength(2);
    const [first, second] = beats as [Ready, Ready];
    expect(appendsTo(first, "c").map(at)).toEqual([{ prevLogIndex: 3, prevLogTerm: 1, entries: [4, 5] }]);
    expect(appendsTo(first, "a").map(at)).toEqual([{ prevLogIndex: 4, prevLogTerm: 2, entries: [] }]);
    expect(appendsTo(second, "a").map(at)).toEqual([{ prevLogIndex: 4, prevLogTerm: 2, entries: [5] }]);
  });

  it("a replicating follower that is merely idle is not probed again: a proposal right after a heartbeat goes out at once", () => {
    const s = settled();
    s.advance(100, undefined, 10, ["a"]); // commit notices and heartbeats, all answered: nothing new to acknowledge
    let beat: Ready | undefined;
    for (let i = 0; i < 5 && beat === undefined; i++) {
      const rd = tickOnly(s, "a");
      if (appendsTo(rd, "b").length > 0) beat = rd;
    }
    expect(appendsTo(beat!, "b").map(indexes)).toEqual([[]]);
    s.inflight = []; // the heartbeat is still on its way
    s.propose("a", put("k", "v"), { client: "w", seq: 1 });
    const rd = s.flush("a");
    const last = s.core("a").lastIndex;
    for (const peer of ["b", "c"]) expect(appendsTo(rd, peer).map(indexes)).toEqual([[last]]);
  });
});
