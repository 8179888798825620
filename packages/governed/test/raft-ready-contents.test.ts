/**
 * What a `Ready` carries (the driver contract in core.ts; governed.md R-Q2, R-R8, R-R4):
 * - a read's confirmation round is a heartbeat to every voter and to no learner (learners do not count, R-Q2);
 * - committed no-ops come out as `internal` items, application entries as `entry` (R-R8);
 * - only a leader's AppendEntries and InstallSnapshot frames with no hard state pending are early messages;
 * - a ready is pipelinable only when it carries appends: a leader's compaction alone, or any step other than an
 *   append or its own compaction, is not (`pipelinable`).
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { LogEntry, Ready } from "../src/index.ts";
import { isolate, Script } from "./support/script.ts";

function cycle(c: RaftCore): Ready {
  const rd = c.ready();
  c.advance(rd);
  return rd;
}

describe("a read's confirmation round (R-Q2)", () => {
  it("sends a heartbeat to each voter and none to a learner", () => {
    const s = new Script(["a", "b", "c"], {}, ["d"]);
    s.elect("a");
    const a = s.core("a");
    a.changeMembership(100, { voters: ["a", "b", "c"], learners: ["d"] });
    s.stabilize();
    expect(s.outcomes.get(100)).toMatchObject({ ok: true });
    a.readIndex(101);
    const rd = s.flush("a");
    expect([...rd.earlyMessages, ...rd.messages].map((m) => [m.to, m.message.type])).toEqual([["b", "append"], ["c", "append"]]);
    s.stabilize();
    expect(s.outcomes.get(101)).toMatchObject({ ok: true, index: a.commitIndex });
  });
});

describe("committed items (R-R8)", () => {
  it("a no-op is handed over as an internal item, a proposal as an entry", () => {
    const a = new RaftCore({
      id: "a", bootstrap: { voters: ["a"], learners: [] }, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] },
      config: raftConfig({}), random: () => 0, now: 0,
    });
    a.tick(150);
    expect(a.state).toBe("leader");
    expect(cycle(a).committed).toEqual([]); // the no-op counts once durable
    expect(cycle(a).committed).toEqual([{ kind: "internal", index: 1 }]);
    a.propose(1, new Uint8Array([5]), null);
    cycle(a);
    const rd = cycle(a);
    expect(rd.committed).toEqual([{ kind: "entry", entry: a.entries[1] }]);
    expect(rd.outcomes).toEqual([{ id: 1, ok: true, index: 2, term: 1 }]);
  });
});

describe("early messages", () => {
  it("a follower's reply is never early; a leader's heartbeat with no hard state pending is", () => {
    const s = new Script(["a", "b", "c"]);
    s.elect("a");
    const a = s.core("a");
    s.now += 50;
    a.tick(s.now);
    const hb = s.flush("a");
    expect(hb.hardState).toBeNull();
    expect(hb.messages).toEqual([]);
    expect(hb.earlyMessages.length).toBeGreaterThan(0);
    expect(new Set(hb.earlyMessages.map((m) => `${m.to} ${m.message.type}`))).toEqual(new Set(["b append", "c append"]));
    s.deliver((m) => m.to === "b");
    const reply = s.flush("b");
    expect(reply.hardState).toBeNull();
    expect(reply.earlyMessages).toEqual([]);
    expect(reply.messages.length).toBeGreaterThan(0);
    expect(new Set(reply.messages.map((m) => `${m.to} ${m.message.type}`))).toEqual(new Set(["a appendReply"]));
  });

  it("a candidate's vote requests wait for its hard state: they are not early", () => {
    const s = new Script(["a", "b", "c"]);
    const b = s.core("b");
    b.tick(300);
    s.flush("b");
    s.deliver((m) => m.to === "a");
    s.flush("a");
    s.deliver((m) => m.to === "b"); // a's pre-vote grant: b campaigns
    const rd = s.flush("b");
    expect(rd.hardState).toEqual({ term: 1, votedFor: "b" });
    expect(rd.earlyMessages).toEqual([]);
    expect(rd.messages.map((m) => [m.to, m.message.type])).toEqual([["a", "vote"], ["c", "vote"]]);
  });

  it("a leader's InstallSnapshot frame with no hard state pending is early", () => {
    const s = new Script(["a", "b", "c"]);
    const ab = isolate(["a", "b"]); // c hears nothing
    s.elect("a", ab);
    const a = s.core("a");
    s.propose("a", new Uint8Array([1]));
    s.stabilize(ab);
    expect(a.appliedIndex).toBe(2);
    expect(a.compact(2, new Uint8Array([9]))).toBe(true);
    s.flush("a");
    s.inflight = [];
    s.now += 50;
    a.tick(s.now); // c is still probed from index 1, now below the floor: it gets the snapshot
    const rd = s.flush("a");
    expect(rd.hardState).toBeNull();
    expect(rd.messages).toEqual([]);
    expect(rd.earlyMessages.filter((m) => m.to === "c").map((m) => m.message.type)).toEqual(["snapshot"]);
  });
});

describe("pipelinable", () => {
  const entry: LogEntry = { index: 3, term: 1, kind: "app", key: null, command: new Uint8Array([3]), stampedAt: 0 };
  function leader(): { s: Script; a: RaftCore } {
    const s = new Script(["a", "b", "c"]);
    s.elect("a");
    s.propose("a", new Uint8Array([1]));
    s.stabilize();
    return { s, a: s.core("a") };
  }

  it("a leader's ready holding only its own compaction is not pipelinable; one with an append is", () => {
    const { s, a } = leader();
    expect(a.compact(2, new Uint8Array([9]))).toBe(true);
    const rd = a.ready();
    expect(rd.storage.map((op) => [op.op, "local" in op ? op.local : undefined])).toEqual([["snapshot", true], ["discardThrough", true]]);
    expect(a.pipelinable(rd)).toBe(false);
    a.advance(rd);
    s.propose("a", new Uint8Array([2]));
    const rd2 = a.ready();
    expect(a.pipelinable(rd2)).toBe(true);
    a.advance(rd2);
  });

  it("a ready whose storage holds anything besides appends and the leader's own compaction is not pipelinable", () => {
    const { a } = leader();
    const base = { hardState: null, earlyMessages: [], messages: [], committed: [], outcomes: [], trace: [] };
    const append = { op: "append" as const, entries: [entry] };
    expect(a.pipelinable({ ...base, storage: [append] })).toBe(true);
    expect(a.pipelinable({ ...base, storage: [append, { op: "truncateFrom", index: 3 }] })).toBe(false);
    expect(a.pipelinable({ ...base, storage: [{ op: "truncateFrom", index: 3 }, append] })).toBe(false);
    const snap = { lastIndex: 2, lastTerm: 1, config: { voters: ["a", "b", "c"], learners: [] }, state: new Uint8Array([1]) };
    expect(a.pipelinable({ ...base, storage: [append, { op: "snapshot", snapshot: snap }] })).toBe(false);
    expect(a.pipelinable({ ...base, storage: [append, { op: "snapshot", snapshot: snap, local: true }, { op: "discardThrough", index: 2, local: true }] })).toBe(true);
  });
});
