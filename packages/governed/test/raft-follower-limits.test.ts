/**
 * A follower whose limits are below its leader's (governed.md §4.1 limits, R-R7, R-S2), on scripted cores: voters
 * a, b, c; a leads with `maxEntriesPerMessage` 16; c is the member with the lower limit.
 *
 * Found in review: followers refuse an AppendEntries carrying more than their own `maxEntriesPerMessage`
 * (`too-many-entries`) without a word, and the leader sent the same frame again at every heartbeat — replication to
 * such a follower stalled for good. The same held for a frame over the follower's byte limit, which its transport
 * drops (a seam drops a frame above its `maxFrameBytes`), and for snapshot chunks over it.
 *
 * Now the refusal answers with the follower's limit (`appendReply.maxEntries`), so the leader lowers its batch for
 * that follower at once and sends the refused entries again within it; and a follower that drops frames without a
 * word (an older version, a frame over its transport's size limit, a lower term it has not adopted yet) is reached by
 * halving: each heartbeat that finds a frame of more than one entry (or a chunk) unanswered for a whole period halves
 * what goes to that follower, down to one entry (one byte of snapshot), and each answer that makes progress doubles
 * it back, up to the limit the follower reported.
 */
import { describe, expect, it } from "vitest";
import { encodeMessage, raftConfig, SHRINK_HOLD_HEARTBEATS } from "../src/index.ts";
import type { Message, RaftCore } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, Script } from "./support/script.ts";
import type { InFlight } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const LEADER_MAX = 16;
type AppendMessage = Extract<Message, { type: "append" }>;
const put = (i: number): Uint8Array => kvCommand({ op: "put", key: `k${i % 7}`, value: `value-number-${i}` });

/** a leads a, b, c (every member at `LEADER_MAX` entries per frame but c, which runs `cCfg`), all caught up. */
function cluster(cCfg: Parameters<typeof raftConfig>[0], cfg: Parameters<typeof raftConfig>[0] = {}): { s: Script; a: RaftCore; c: RaftCore } {
  const s = new Script(ABC, { maxEntriesPerMessage: LEADER_MAX, ...cfg });
  s.nodeConfig.set("c", raftConfig({ maxEntriesPerMessage: LEADER_MAX, ...cfg, ...cCfg }));
  s.start("c");
  s.elect("a");
  s.stabilize();
  return { s, a: s.core("a"), c: s.core("c") };
}

/** An `allow` for Script that records the AppendEntries a sends c (entry counts) and passes what `pass` lets through. */
function watchC(toC: number[], pass: (m: InFlight) => boolean = () => true): (m: InFlight) => boolean {
  return (m) => {
    if (m.from === "a" && m.to === "c" && m.message.type === "append" && m.message.entries.length > 0) toC.push((m.message as AppendMessage).entries.length);
    return pass(m);
  };
}

function proposeMany(s: Script, n: number, from = 0): void {
  for (let i = from; i < from + n; i++) s.propose("a", put(i), { client: "w", seq: i + 1 });
}

describe("a follower refusing AppendEntries as too-many-entries", () => {
  it("answers with its limit; the leader sends it no more than that at once, and it catches up without a heartbeat", () => {
    const { s, a, c } = cluster({ maxEntriesPerMessage: 3 });
    const toC: number[] = [];
    proposeMany(s, 40);
    s.stabilize(watchC(toC)); // no clock moves: no heartbeat, no halving — only the answer
    expect([c.lastIndex, c.commitIndex]).toEqual([a.lastIndex, a.commitIndex]);
    expect(toC[0]).toBe(LEADER_MAX); // the first frame carried what the leader's own limit allows
    const first = toC.findIndex((n) => n <= 3);
    // at most the frames already in flight when the answer came were refused; every later one fits
    expect(toC.slice(first).every((n) => n <= 3)).toBe(true);
    expect(c.refusedFrames.get("too-many-entries")).toBe(first);
    expect(s.traces.get("a")).toContainEqual({ type: "batchLimited", peer: "c", maxEntries: 3 });
    // and it stays so: later bursts go to c in frames of 3, to b in frames of 16
    const later: number[] = [];
    proposeMany(s, 40, 40);
    s.stabilize(watchC(later));
    expect(later.every((n) => n <= 3)).toBe(true);
    expect(c.refusedFrames.get("too-many-entries")).toBe(first);
    expect(c.lastIndex).toBe(a.lastIndex);
    expect(a.progress.get("b")?.batch).toBe(LEADER_MAX);
  });

  it("its answer carries its own term, round 0 and no hints, and it adopts nothing from the frame", () => {
    const { s, a, c } = cluster({ maxEntriesPerMessage: 3 });
    proposeMany(s, 10);
    s.flush("a");
    const frame = s.inflight.find((m) => m.to === "c" && m.message.type === "append")!;
    s.inflight = [];
    const before = [c.term, c.lastIndex, c.commitIndex];
    c.step("a", frame.message);
    const rd = s.flush("c");
    expect([...rd.earlyMessages, ...rd.messages].map((e) => e.message)).toEqual([
      { type: "appendReply", term: a.term, success: false, matchIndex: 0, rejectedPrev: (frame.message as AppendMessage).prevLogIndex, conflictTerm: null, conflictIndex: 0, round: 0, maxEntries: 3 },
    ]);
    expect(rd.storage).toEqual([]);
    expect([c.term, c.lastIndex, c.commitIndex]).toEqual(before);
  });

  it("a follower that refuses without a word (an older version) is reached by halving: it catches up within a few heartbeats", () => {
    const { s, a, c } = cluster({ maxEntriesPerMessage: 3 });
    const toC: number[] = [];
    const old = watchC(toC, (m) => !(m.message.type === "appendReply" && m.message.maxEntries !== undefined));
    proposeMany(s, 40);
    s.stabilize(old);
    expect(c.lastIndex).toBeLessThan(a.lastIndex);
    s.advance(400, old);
    expect([c.lastIndex, c.commitIndex]).toEqual([a.lastIndex, a.commitIndex]);
    // 16, then halved each silent period: 8, 4, 2 (from the last frame's size) — no frame above 3 got through after
    const fits = toC.findIndex((n) => n <= 3);
    expect(toC.slice(0, fits).every((n) => n > 3)).toBe(true);
    expect(fits).toBeGreaterThan(0);
  });
});

describe("a follower that was only cut off", () => {
  it("gets frames of one entry while it is silent, and frames doubling back to full size once the hold is over", () => {
    const { s, a, c } = cluster({});
    const cutC = isolate(["c"]);
    proposeMany(s, 40);
    s.advance(600, cutC); // twelve silent periods: halved down to 1, held
    expect(a.progress.get("c")?.batch).toBe(1);
    const toC: number[] = [];
    s.advance(50, watchC(toC));
    expect(c.lastIndex).toBe(a.lastIndex); // caught up, one entry per frame, frames pipelined
    expect(toC.every((n) => n === 1)).toBe(true);
    s.advance(SHRINK_HOLD_HEARTBEATS * 50);
    const later: number[] = [];
    proposeMany(s, 100, 40);
    s.stabilize(watchC(later));
    // doubled back with each answer that makes progress, now that the hold is over
    expect(later[0]).toBe(1);
    expect(Math.max(...later)).toBe(LEADER_MAX);
    expect(c.lastIndex).toBe(a.lastIndex);
  });
});

describe("a follower whose transport drops frames above its byte limit", () => {
  const LIMIT = 300;
  const small = (m: InFlight): boolean => !(m.to === "c" && encodeMessage(m.message).length > LIMIT);

  it("gets AppendEntries halved until they fit, catches up, and the batch grows back once it answers", () => {
    const { s, a, c } = cluster({});
    const toC: number[] = [];
    proposeMany(s, 40);
    s.stabilize(watchC(toC, small));
    expect(c.lastIndex).toBeLessThan(a.lastIndex);
    s.advance(500, watchC(toC, small));
    expect([c.lastIndex, c.commitIndex]).toEqual([a.lastIndex, a.commitIndex]);
    expect(c.refusedFrames.size).toBe(0); // nothing reached its core to refuse: the transport dropped them
    // held at the size that got through: later bursts reach it without another silent period
    const later: number[] = [];
    proposeMany(s, 20, 40);
    s.stabilize(watchC(later, small));
    expect(c.lastIndex).toBe(a.lastIndex);
    expect(later.every((n) => encodeMessage({ type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: a.entries.slice(0, n) }).length <= LIMIT + 40)).toBe(true);
  });

  it("gets InstallSnapshot chunks halved until they fit, and installs the snapshot", () => {
    const { s, a, c } = cluster({}, { snapshotChunkBytes: 4096 });
    const cutC = isolate(["c"]);
    proposeMany(s, 60);
    s.stabilize(cutC);
    expect(a.compact(a.appliedIndex, s.kvs.get("a")!.snapshot())).toBe(true);
    expect(s.kvs.get("a")!.snapshot().length).toBeGreaterThan(LIMIT);
    s.flush("a");
    const chunks: number[] = [];
    const watch = (m: InFlight): boolean => {
      if (m.to === "c" && m.message.type === "snapshot") chunks.push(m.message.data.length);
      return small(m);
    };
    s.advance(1500, watch);
    expect(c.floor).toBeGreaterThanOrEqual(a.floor);
    expect([c.lastIndex, c.commitIndex]).toEqual([a.lastIndex, a.commitIndex]);
    expect(chunks[0]).toBeGreaterThan(LIMIT);
    expect(Math.min(...chunks)).toBeLessThan(LIMIT);
  });
});

describe("an idle, healthy follower is not taken for a silent one (found in review)", () => {
  // Idle heartbeats are answered with replies that move nothing, which do not count as answers to frames with
  // entries; they counted as silent periods all the same, so after an idle spell the first burst whose answer came
  // back just after the next heartbeat tick halved a healthy follower's batch, and held it there for 10 periods.
  function batchAfterBurst(idleMs: number): number {
    const s = new Script(ABC, { maxEntriesPerMessage: LEADER_MAX });
    s.elect("a");
    s.stabilize();
    const a = s.core("a");
    s.advance(idleMs); // every heartbeat of the idle spell answered
    for (let i = 0; i < 10; i++) s.propose("a", put(i), { client: "w", seq: i + 1 });
    s.flush("a"); // the burst goes out, and its answers are still on the way when the next heartbeats tick
    for (let t = 0; t < 60; t += 10) {
      s.now += 10;
      a.tick(s.now);
      s.flush("a");
    }
    s.stabilize();
    return a.progress.get("c")!.batch;
  }
  it("keeps the full batch after an idle spell, as without one", () => {
    expect(batchAfterBurst(0)).toBe(LEADER_MAX);
    expect(batchAfterBurst(500)).toBe(LEADER_MAX);
    expect(batchAfterBurst(5_000)).toBe(LEADER_MAX);
  });
});
