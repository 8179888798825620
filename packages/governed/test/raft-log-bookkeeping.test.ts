/**
 * What a follower's truncation, its configuration bookkeeping and a compaction leave behind, on hand-driven cores
 * (governed.md R-R2, R-R4, R-M1, R-M4, R-S1):
 * - a truncation lowers what the node counts as durable to the entry before it — also when the truncated entries were
 *   still being written — so a node elected later never counts its own uncommitted suffix as stored (R-R4);
 * - `changedFrom` keeps the smallest index changed since the harness reset it, across a later truncation above it;
 * - a snapshot that carries no configuration leaves the bootstrap configuration in force, which no term "carries":
 *   a leader frame at the snapshot's term from outside it is heard (R-M4);
 * - a compaction records the configuration in force at its index, not a later one already in the log (R-S1);
 * - a node that does not lead keeps no replication progress, whatever configuration it adopts.
 */
import { describe, expect, it } from "vitest";
import { seededRandom } from "@heddle/seam";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { ClusterConfig, Envelope, LogEntry, Message, PersistedState, Ready } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { Script } from "./support/script.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: [] };

function e(index: number, term: number): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 };
}
function core(id: string, persisted: PersistedState, bootstrap: ClusterConfig = ABC): RaftCore {
  return new RaftCore({ id, bootstrap, persisted, config: raftConfig({}), random: seededRandom(7), now: 0 });
}
function sent(rd: Ready): Envelope[] {
  return [...rd.earlyMessages, ...rd.messages];
}
/** Takes a ready, acknowledges it as durable and returns it. */
function flush(c: RaftCore): Ready {
  const rd = c.ready();
  c.advance(rd);
  return rd;
}
/** Lets `cores` talk (everything durable at once) until `done` holds after a delivered message, or nothing moves. */
function exchange(cores: RaftCore[], done: () => boolean): void {
  const byId = new Map(cores.map((c) => [c.id, c]));
  for (let round = 0; round < 100; round++) {
    const queue: { from: string; env: Envelope }[] = [];
    for (const c of cores) if (c.hasReady()) for (const env of sent(flush(c))) queue.push({ from: c.id, env });
    if (queue.length === 0) return;
    for (const { from, env } of queue) {
      byId.get(env.to)?.step(from, env.message);
      if (done()) return;
    }
  }
}
/** An AppendEntries from a leader of term 2 that replaces everything after index 2 with one entry of term 2. */
const replaceFrom3: Message = { type: "append", term: 2, prevLogIndex: 2, prevLogTerm: 1, leaderCommit: 0, round: 0, entries: [e(3, 2)] };

describe("a truncation lowers what the node counts as durable (R-R2, R-R4)", () => {
  it("entries 3–6 written and then replaced by one new entry 3: only 1–2 count as durable until the new 3 is written", () => {
    const b = core("b", { term: 1, votedFor: null, snapshot: null, entries: [1, 2, 3, 4, 5, 6].map((i) => e(i, 1)) });
    expect(b.persistedLast).toBe(6);
    b.step("c", replaceFrom3);
    expect(b.lastIndex).toBe(3);
    expect(b.persistedLast).toBe(2);
    const rd = flush(b);
    expect(rd.storage.map((op) => op.op)).toEqual(["truncateFrom", "append"]);
    expect(b.persistedLast).toBe(3);
  });

  it("elected after the truncation, the node does not count its new no-op as stored before its write is durable (R-R4)", () => {
    const b = core("b", { term: 1, votedFor: null, snapshot: null, entries: [1, 2, 3, 4, 5, 6].map((i) => e(i, 1)) });
    const a = core("a", { term: 2, votedFor: null, snapshot: null, entries: [e(1, 1), e(2, 1), e(3, 2)] });
    b.step("c", replaceFrom3);
    flush(b); // the truncation and the new entry 3 are durable; the reply to c is lost
    b.tick(1000);
    exchange([a, b], () => b.state === "leader");
    expect([b.state, b.term, b.lastIndex]).toEqual(["leader", 3, 4]); // 4 is the no-op of term 3
    const rd = b.ready();
    expect(b.pipelinable(rd)).toBe(true);
    b.advance(rd, { appendsPending: true }); // the no-op is sent, still being written
    for (const env of sent(rd)) if (env.to === "a") a.step("b", env.message);
    const replies = sent(flush(a)).filter((env) => env.to === "b");
    expect(replies.map((env) => env.message)).toMatchObject([{ type: "appendReply", success: true, matchIndex: 4 }]);
    for (const env of replies) b.step("a", env.message);
    expect(b.commitIndex).toBe(0); // a alone stores the no-op: no majority of c, a, b
    b.appendsDurable(rd, 3);
    expect(b.commitIndex).toBe(4);
  });

  it("a truncation between a ready and its advance: the replaced entry's write does not count for the new entry", () => {
    const b = core("b", { term: 1, votedFor: null, snapshot: null, entries: [e(1, 1), e(2, 1)] });
    b.step("a", { type: "append", term: 1, prevLogIndex: 2, prevLogTerm: 1, leaderCommit: 0, round: 0, entries: [e(3, 1)] });
    const first = b.ready(); // writes entry 3 of term 1
    b.step("c", replaceFrom3); // meanwhile, entry 3 of term 2 replaces it
    b.advance(first);
    expect(b.persistedLast).toBe(2);
    const second = flush(b);
    expect(second.storage.map((op) => op.op)).toEqual(["truncateFrom", "append"]);
    expect(b.persistedLast).toBe(3);
  });
});

describe("changedFrom (the harness's incremental Log Matching check)", () => {
  it("keeps the smallest index changed since it was reset, across a later truncation above it", () => {
    const b = core("b", { term: 1, votedFor: null, snapshot: null, entries: [] });
    expect(b.changedFrom).toBe(Infinity);
    b.step("a", { type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [e(1, 1), e(2, 1), e(3, 1)] });
    expect(b.changedFrom).toBe(1);
    b.step("c", replaceFrom3);
    expect(b.entries.map((x) => x.term)).toEqual([1, 1, 2]);
    expect(b.changedFrom).toBe(1);
    b.changedFrom = Infinity;
    b.step("c", { type: "append", term: 2, prevLogIndex: 3, prevLogTerm: 2, leaderCommit: 0, round: 0, entries: [e(4, 2)] });
    expect(b.changedFrom).toBe(4);
  });
});

describe("the term that carries the adopted configuration (R-M4)", () => {
  const snap = (config: ClusterConfig | null) => ({ lastIndex: 5, lastTerm: 2, config, state: new Uint8Array([5]) });
  const fromD: Message = { type: "append", term: 2, prevLogIndex: 5, prevLogTerm: 2, leaderCommit: 5, round: 0, entries: [] };

  it("a snapshot without a configuration: the bootstrap is in force and a frame at the snapshot's term from outside it is heard", () => {
    const b = core("b", { term: 2, votedFor: null, snapshot: snap(null), entries: [] });
    expect(b.config).toEqual(ABC);
    b.step("d", fromD);
    expect(b.refusedFrames.get("sender-not-voter")).toBeUndefined();
    expect(b.leader).toBe("d");
    expect(sent(b.ready()).map((env) => env.message)).toMatchObject([{ type: "appendReply", success: true, matchIndex: 5 }]);
  });

  it("a snapshot carrying the configuration: the same frame comes from the term that carries it and is dropped", () => {
    const b = core("b", { term: 2, votedFor: null, snapshot: snap(ABC), entries: [] });
    b.step("d", fromD);
    expect(b.refusedFrames.get("sender-not-voter")).toBe(1);
    expect(b.leader).toBe(null);
  });
});

describe("a compaction records the configuration in force at its index (R-S1)", () => {
  it("with a later configuration entry already in the log, the snapshot keeps the earlier one", () => {
    const s = new Script(["a", "b", "c"]);
    s.elect("a"); // no-op at 1
    s.propose("a", kvCommand({ op: "put", key: "k", value: "v" }), { client: "w", seq: 1 }); // 2
    s.stabilize();
    const a = s.core("a");
    const withD = { voters: ["a", "b", "c"], learners: ["d"] };
    a.changeMembership(s.nextId++, withD); // 3
    s.stabilize();
    expect([a.commitIndex, a.appliedIndex, a.config]).toEqual([3, 3, withD]);
    expect(a.compact(2, new Uint8Array([2]))).toBe(true);
    expect(a.snapshot).toMatchObject({ lastIndex: 2, config: ABC });
    expect(a.config).toEqual(withD);
  });
});

describe("only the leader keeps replication progress", () => {
  it("a follower has none: at construction, nor after it appends a configuration entry", () => {
    const s = new Script(["a", "b", "c"]);
    const b = s.core("b");
    expect(b.progress.size).toBe(0);
    s.elect("a");
    s.core("a").changeMembership(s.nextId++, { voters: ["a", "b", "c"], learners: ["d"] });
    s.stabilize();
    expect(b.config.learners).toEqual(["d"]);
    expect(b.state).toBe("follower");
    expect(b.progress.size).toBe(0);
    expect([...s.core("a").progress.keys()].sort()).toEqual(["b", "c", "d"]);
  });
});
