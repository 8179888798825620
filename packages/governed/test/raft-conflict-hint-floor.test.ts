/**
 * The conflict-term hint at the leader's snapshot floor (governed.md R-R3, §4.9). The leader's term at its floor
 * is known (the snapshot's last term). When the follower's conflicting term is that term and the leader holds no
 * later entry of it, the leader's last entry of that term is the floor itself: the follower is probed right after
 * the floor — it holds the floor's entry (same index and term: the same committed entry, Raft's Log Matching) —
 * instead of being sent the whole snapshot.
 *
 * FAILS on core.ts at 11113eb: the search in #onAppendReply stops above the floor (`i > this.floor`), so the hint
 * falls back to the follower's first index of that term, which is at or below the floor, and a snapshot is sent.
 * Proposed fix: search down to and including the floor (`i >= this.floor`), as etcd-raft's findConflictByTerm does
 * (its term lookup answers at the snapshot index). See /work/coord/notes/raft-mut-W.md.
 */
import { describe, expect, it } from "vitest";
import type { LogEntry } from "../src/index.ts";
import type { AppendMessage, AppendReplyMessage } from "../src/raft/message.ts";
import { KvMachine } from "./support/kv-machine.ts";
import { Script } from "./support/script.ts";
import type { InFlight } from "./support/script.ts";

const ABC = ["a", "b", "c"];

function e(index: number, term: number): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 };
}

describe("the conflict-term hint at the snapshot floor (R-R3, §4.9)", () => {
  it("a follower that holds the leader's floor entry is probed just past the floor, not sent the snapshot", () => {
    // entry 3 (term 2) is committed and a and c have compacted through it; b kept two uncommitted term-2 entries
    const s = new Script(ABC);
    const snapshot = { lastIndex: 3, lastTerm: 2, config: { voters: ABC, learners: [] }, state: new KvMachine().snapshot() };
    for (const id of ["a", "c"]) s.start(id, undefined, { term: 3, votedFor: null, snapshot, entries: [e(4, 3), e(5, 3)] });
    s.start("b", undefined, { term: 3, votedFor: null, snapshot: null, entries: [e(1, 1), e(2, 2), e(3, 2), e(4, 2), e(5, 2)] });
    const a = s.core("a");
    const seen: InFlight[] = [];
    for (let i = 0; i < 100 && a.state !== "leader"; i++) {
      s.now += 10;
      a.tick(s.now);
      for (let round = 0; round < 1000; round++) {
        s.flushAll();
        seen.push(...s.inflight);
        if (s.inflight.length === 0 && ![...s.cores.values()].some((c) => c.hasReady())) break;
        s.deliver();
      }
    }
    expect([a.state, a.term]).toEqual(["leader", 4]);
    const rejections = seen.filter((m) => m.from === "b" && m.message.type === "appendReply" && !(m.message as AppendReplyMessage).success);
    expect(rejections.map((m) => m.message)).toMatchObject([{ rejectedPrev: 5, conflictTerm: 2, conflictIndex: 2 }]);
    const toB = seen.filter((m) => m.from === "a" && m.to === "b" && (m.message.type === "append" || m.message.type === "snapshot"));
    expect(toB.map((m) => (m.message.type === "append" ? { prev: (m.message as AppendMessage).prevLogIndex } : { snapshot: true }))).toEqual([
      { prev: 5 },
      { prev: 3 },
    ]);
    expect(s.core("b").entries.map((x) => [x.index, x.term])).toEqual([[1, 1], [2, 2], [3, 2], [4, 3], [5, 3], [6, 4]]);
  });
});
