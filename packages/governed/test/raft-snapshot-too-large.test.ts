/**
 * A follower whose `snapshotMaxBytes` is below the size of its leader's snapshot (governed.md §4.9 R-S2): it can
 * never take that snapshot. Found in review: the follower refused every chunk ("next offset 0", counted as
 * `snapshot-too-large`) and the leader sent chunk 0 again at every heartbeat, for good, with nothing saying why the
 * follower never caught up. Now the follower says its limit in the refusal (`snapshotReply.maxBytes`); the leader
 * stops offering the snapshot — heartbeats only, so the follower keeps following and counts as active — and offers it
 * again after a backoff that doubles at each refused offer (from `SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS` up to
 * `SNAPSHOT_REFUSED_MAX_BACKOFF_HEARTBEATS` periods), or at once when a newer snapshot of its own fits. Both sides
 * report the stall (`snapshotStalls`, naming the setting and the sizes, and the trace events `snapshotTooLarge` and
 * `snapshotRefused`); a follower restarted with a large enough limit catches up at the next offer.
 *
 * First on hand-driven cores (`a` leads `b` and `late`; `a` has compacted through 2 with a 400-byte state that
 * `late`, with `snapshotMaxBytes` 100, cannot take), then through the driver over a MemoryNetwork in virtual time.
 */
import { describe, expect, it } from "vitest";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import {
  memoryRaftStorage,
  raftChannelTransport,
  raftNode,
  SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS,
  SNAPSHOT_REFUSED_MAX_BACKOFF_HEARTBEATS,
} from "../src/index.ts";
import type { ClusterConfig, Envelope, Message, RaftConfig, RaftCore, RaftNode, RaftTraceEvent, RaftTransport } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent } from "./support/hand-driven.ts";
import { KvMachine, kvCommand } from "./support/kv-machine.ts";
import { runFor, runUntil } from "./support/virtual-steps.ts";
import { watchedTransport } from "./support/watched-transport.ts";

const V: ClusterConfig = { voters: ["a", "b", "late"], learners: [] };
const enc = new TextEncoder();
const TOTAL = 400;
const LIMIT = 100;
const HEARTBEAT = 50;

/** `a` leads at term 1 with `b`, has committed 3 and compacted through 2 with a TOTAL-byte state; `late` heard nothing. */
function setup(lateLimit = LIMIT): { a: RaftCore; b: RaftCore; late: RaftCore; first: Envelope[] } {
  const cfg = { maxMessageBytes: 256 };
  const a = handCore("a", { bootstrap: V, cfg });
  const b = handCore("b", { bootstrap: V, cfg });
  const late = handCore("late", { bootstrap: V, cfg: { ...cfg, snapshotMaxBytes: lateLimit } });
  hand(b, sent(hand(a, sent(electVia(a, b)), b)), a);
  a.propose(1, enc.encode("x"), null);
  hand(b, sent(hand(a, sent(cycle(a)), b)), a);
  expect(a.compact(2, new Uint8Array(TOTAL).fill(7))).toBe(true);
  cycle(a);
  a.propose(2, enc.encode("y"), null);
  const first = sent(cycle(a));
  expect(a.progress.get("late")?.state).toBe("snapshot");
  return { a, b, late, first };
}

/** Every core's traffic delivered at once (no loss), the clocks ticked together in 10 ms steps. */
class Pump {
  readonly chunksToLate: { t: number; m: Extract<Message, { type: "snapshot" }> }[] = [];
  readonly trace: RaftTraceEvent[] = [];
  readonly cores: Map<string, RaftCore>;
  now: number;
  constructor(cores: Map<string, RaftCore>, start: readonly Envelope[], from: string) {
    this.cores = cores;
    this.now = cores.get(from)!.now;
    // the others' clocks catch up with the leader's just before its frames reach them (the setup never ticked them)
    for (const c of cores.values()) if (c.id !== from) c.tick(this.now - 1);
    this.#deliver(from, start);
  }

  #deliver(from: string, envs: readonly Envelope[]): void {
    let queue = envs.map((e) => ({ from, e }));
    for (let guard = 0; queue.length > 0; guard++) {
      expect(guard, "the cores answer each other without end").toBeLessThan(1000);
      const next: { from: string; e: Envelope }[] = [];
      for (const { from: f, e } of queue) {
        if (e.to === "late" && e.message.type === "snapshot") this.chunksToLate.push({ t: this.now, m: e.message });
        const to = this.cores.get(e.to);
        if (to === undefined) continue;
        to.step(f, e.message);
        const rd = cycle(to);
        this.trace.push(...rd.trace);
        for (const out of sent(rd)) next.push({ from: to.id, e: out });
      }
      queue = next;
    }
  }

  /** Runs `ms` of virtual time. */
  run(ms: number): void {
    for (let t = 0; t < ms; t += 10) {
      this.now += 10;
      for (const c of this.cores.values()) {
        c.tick(this.now);
        const rd = cycle(c);
        this.trace.push(...rd.trace);
        this.#deliver(c.id, sent(rd));
      }
    }
  }
}

describe("a follower whose snapshotMaxBytes is below the leader's snapshot", () => {
  it("is offered the snapshot with a doubling backoff, not at every heartbeat, keeps following, and both sides say why", () => {
    const { a, b, late, first } = setup();
    const p = new Pump(new Map([["a", a], ["b", b], ["late", late]]), first, "a");
    const periods = 200;
    p.run(periods * HEARTBEAT);
    const offers = p.chunksToLate.map((c) => c.t);
    // before: one offer per heartbeat period (200); now the gaps double, from the first backoff up to the cap
    expect(offers.length).toBeLessThan(12);
    expect(offers.length).toBeGreaterThanOrEqual(5);
    const gaps = offers.slice(1).map((t, i) => t - offers[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS * HEARTBEAT);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBeGreaterThanOrEqual(Math.min(gaps[i - 1]! * 2, SNAPSHOT_REFUSED_MAX_BACKOFF_HEARTBEATS * HEARTBEAT));
    expect(p.chunksToLate.every((c) => c.m.offset === 0 && c.m.total === TOTAL)).toBe(true);

    // the follower counts each refusal and says once which setting stops it
    expect(late.refusedFrames.get("snapshot-too-large")).toBe(offers.length);
    expect(p.trace.filter((e) => e.type === "snapshotTooLarge")).toEqual([{ type: "snapshotTooLarge", leader: "a", lastIndex: 2, total: TOTAL, maxBytes: LIMIT }]);
    const [mine] = late.snapshotStalls;
    expect(late.snapshotStalls).toHaveLength(1);
    expect(mine).toMatchObject({ side: "receiving", peer: "a", lastIndex: 2, snapshotBytes: TOTAL, snapshotMaxBytes: LIMIT });
    expect(mine!.message).toContain(`snapshotMaxBytes (${LIMIT})`);
    expect(mine!.message).toContain(`${TOTAL} bytes`);

    // the leader knows the follower's limit, reports the follower as unable to catch up, and each refused offer
    const refused = p.trace.filter((e) => e.type === "snapshotRefused");
    expect(refused).toHaveLength(offers.length);
    expect(refused.at(-1)).toEqual({ type: "snapshotRefused", peer: "late", lastIndex: 2, total: TOTAL, maxBytes: LIMIT, retryInMs: SNAPSHOT_REFUSED_MAX_BACKOFF_HEARTBEATS * HEARTBEAT });
    expect(a.snapshotStalls).toEqual([expect.objectContaining({ side: "sending", peer: "late", lastIndex: 2, snapshotBytes: TOTAL, snapshotMaxBytes: LIMIT })]);
    expect(a.snapshotStalls[0]!.message).toMatch(/raise snapshotMaxBytes to at least 400 on late/);

    // heartbeats kept it following: no election anywhere, the leader still leads with late counted active
    expect(p.trace.filter((e) => e.type === "electionTimeout" || e.type === "stepDown")).toEqual([]);
    expect([a.state, a.term, late.term, late.leader]).toEqual(["leader", 1, 1, "a"]);
    expect(a.progress.get("late")?.active).toBe(true);
  });

  it("restarted with a large enough snapshotMaxBytes, it installs the snapshot at the next offer and the stall is over", () => {
    const { a, b, late, first } = setup();
    const cores = new Map([["a", a], ["b", b], ["late", late]]);
    const p = new Pump(cores, first, "a");
    p.run(40 * HEARTBEAT);
    expect(a.snapshotStalls).toHaveLength(1);
    // the operator raises the limit: the same member, restarted (it had stored nothing)
    const again = handCore("late", { bootstrap: V, cfg: { maxMessageBytes: 256, snapshotMaxBytes: TOTAL } });
    again.tick(p.now);
    cores.set("late", again);
    p.run((SNAPSHOT_REFUSED_MAX_BACKOFF_HEARTBEATS + 4) * HEARTBEAT);
    expect(again.floor).toBe(2);
    expect(again.commitIndex).toBeGreaterThanOrEqual(3);
    expect(a.progress.get("late")?.match).toBe(a.lastIndex);
    expect(a.snapshotStalls).toEqual([]);
    expect(again.snapshotStalls).toEqual([]);
  });

  it("a newer snapshot of the leader's that fits the follower's limit is offered at the next heartbeat", () => {
    const { a, b, late, first } = setup();
    const p = new Pump(new Map([["a", a], ["b", b], ["late", late]]), first, "a");
    p.run(20 * HEARTBEAT); // the backoff is now several heartbeats long
    expect(a.progress.get("late")!.snapBackoff).toBeGreaterThan(4);
    expect(a.compact(3, new Uint8Array(LIMIT).fill(9))).toBe(true);
    const at = p.now;
    p.run(3 * HEARTBEAT);
    expect(late.floor).toBe(3);
    expect(late.snapshot?.state).toEqual(new Uint8Array(LIMIT).fill(9));
    expect(p.chunksToLate.filter((c) => c.t > at).every((c) => c.m.lastIndex === 3)).toBe(true);
    // once it holds a snapshot at or past the one it refused, the follower no longer reports a stall
    expect(late.snapshotStalls).toEqual([]);
    expect(a.snapshotStalls).toEqual([]);
  });

  it("a duplicated refusal of one offer counts once: the backoff doubles per offer, not per answer", () => {
    const { a, first } = setup();
    const chunk = first.find((e) => e.to === "late")!.message as Extract<Message, { type: "snapshot" }>;
    const refusal: Message = { type: "snapshotReply", term: a.term, lastIndex: chunk.lastIndex, nextOffset: 0, done: false, maxBytes: LIMIT };
    a.step("late", refusal);
    a.step("late", refusal);
    a.step("late", refusal);
    const rd = cycle(a);
    expect(rd.trace.filter((e) => e.type === "snapshotRefused")).toHaveLength(1);
    expect(a.progress.get("late")!.snapBackoff).toBe(SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS);
  });
});

/** Raft members over a MemoryNetwork in virtual time, each with its own config; `sent` sees what `watch` sends. */
class Cluster {
  readonly timers = new VirtualTimers();
  readonly net = new MemoryNetwork({ timers: this.timers, random: seededRandom(31_000), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 3] } });
  readonly nodes = new Map<string, RaftNode>();
  readonly kvs = new Map<string, KvMachine>();

  add(id: string, cluster: ClusterConfig, config: Partial<RaftConfig> = {}, sent?: (m: Message) => void): RaftNode {
    const inner = raftChannelTransport(this.net.join(id));
    const transport: RaftTransport = sent === undefined ? inner : watchedTransport(inner, (_to, m) => sent(m));
    const node = raftNode({ cluster, transport, storage: memoryRaftStorage(), timers: this.timers, random: seededRandom(31 + id.charCodeAt(1)), config });
    this.nodes.set(id, node);
    const kv = new KvMachine();
    this.kvs.set(id, kv);
    void (async () => {
      for await (const c of node.committedFrom(1)) kv.apply(c);
    })().catch(() => {});
    return node;
  }

  leader(): RaftNode | undefined {
    return [...this.nodes.values()].find((n) => n.role.get() === "leader");
  }

  async settle<T>(p: Promise<T>): Promise<T> {
    let done = false;
    p.then(() => (done = true), () => (done = true));
    await runUntil(this.timers, () => done);
    return p;
  }
}

describe("through the driver: a member joining with a snapshotMaxBytes below the cluster's snapshot", () => {
  it("is offered the snapshot a few times in 3 s, not 60, keeps its leader, and every member's snapshotStalls says why", async () => {
    const ABC: ClusterConfig = { voters: ["n1", "n2", "n3"], learners: [] };
    const c = new Cluster();
    for (const id of ABC.voters) c.add(id, ABC);
    await runUntil(c.timers, () => c.leader() !== undefined);
    const leader = c.leader()!;
    for (let i = 0; i < 30; i++) await c.settle(leader.propose(kvCommand({ op: "put", key: `k${i}`, value: "v".repeat(20) }), { client: "w", seq: i + 1 }));
    for (const [id, n] of c.nodes) {
      const kv = c.kvs.get(id)!;
      await runUntil(c.timers, () => kv.applied === leader.commitIndex.get());
      n.publishSnapshot({ throughIndex: kv.applied, state: kv.snapshot() });
    }
    const size = c.kvs.get(leader.id)!.snapshot().length;
    const limit = 64;
    expect(size).toBeGreaterThan(limit);
    const refusals: Message[] = [];
    const n4 = c.add("n4", { voters: [], learners: [] }, { snapshotMaxBytes: limit }, (m) => {
      if (m.type === "snapshotReply") refusals.push(m);
    });
    await c.settle(leader.changeMembership({ voters: [...ABC.voters, "n4"], learners: [] }));
    await runFor(c.timers, 3000);

    // before: one refused chunk per 50 ms heartbeat, about 60; now the offers back off
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals.length).toBeLessThanOrEqual(7);
    expect(refusals.every((m) => m.type === "snapshotReply" && m.maxBytes === limit && !m.done)).toBe(true);
    expect(n4.refusedFrames().get("snapshot-too-large")).toBe(refusals.length);
    expect(n4.snapshotStalls()).toEqual([expect.objectContaining({ side: "receiving", peer: leader.id, snapshotBytes: size, snapshotMaxBytes: limit })]);
    expect(n4.snapshotStalls()[0]!.message).toContain(`raise snapshotMaxBytes to at least ${size} on this member`);
    expect(leader.snapshotStalls()).toEqual([expect.objectContaining({ side: "sending", peer: "n4", snapshotBytes: size, snapshotMaxBytes: limit })]);
    // heartbeats kept the new voter following the same leader
    expect(c.leader()).toBe(leader);
    expect(n4.leader.get()).toBe(leader.id);
    expect(n4.role.get()).toBe("follower");
    for (const n of c.nodes.values()) await n.close();
  });
});
