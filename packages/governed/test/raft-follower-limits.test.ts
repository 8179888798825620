/**
 * A follower whose `maxEntriesPerMessage` is below its leader's (governed.md §4.1 limits), on scripted cores: voters
 * a, b, c; a leads with `maxEntriesPerMessage` 16; c is the member with the lower limit.
 *
 * Found in review: followers refuse an AppendEntries carrying more than their own `maxEntriesPerMessage`
 * (`too-many-entries`) without a word, and the leader sent the same frame again at every heartbeat — replication to
 * such a follower stalled for good. Now the refusal answers with the follower's limit (`appendReply.maxEntries`), so
 * the leader lowers its batch for that follower at once and sends the refused entries again within it.
 */
import { describe, expect, it } from "vitest";
import { raftConfig } from "../src/index.ts";
import type { Message, RaftCore } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { Script } from "./support/script.ts";
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
});
