/** The Raft driver (`raftNode`) over the node package's MemoryNetwork and VirtualTimers; the log store and SQLite storage. */
import { describe, expect, it } from "vitest";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { runFor, runUntil, tick } from "./support/virtual-steps.ts";
import {
  LeadershipLostError,
  LeadershipTransferError,
  memoryRaftStorage,
  NodeShutdownError,
  NotLeaderError,
  raftChannelTransport,
  raftNode,
  RaftRestoreError,
  sqliteRaftStorage,
  walRaftStorage,
} from "../src/index.ts";
import type { ClusterConfig, Committed, LogEntry, Message, RaftNode, RaftStorage, RaftTransport } from "../src/index.ts";
import { KvMachine, kvCommand } from "./support/kv-machine.ts";
import { watchedTransport } from "./support/watched-transport.ts";


class Cluster {
  readonly timers = new VirtualTimers();
  readonly net: MemoryNetwork;
  readonly nodes = new Map<string, RaftNode>();
  readonly stores = new Map<string, RaftStorage>();
  readonly kvs = new Map<string, KvMachine>();
  readonly log: string[] = [];

  readonly seed: number;

  constructor(seed = 1) {
    this.seed = seed;
    this.net = new MemoryNetwork({ timers: this.timers, random: seededRandom(seed * 1000), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 3] } });
  }

  /** Starts `id` (again, after `net.crash(id)`, when it ran before) over `storage`; `sent` sees each frame it sends. */
  add(id: string, cluster: ClusterConfig, storage: RaftStorage = memoryRaftStorage(), sent?: (to: string, m: Message) => void): RaftNode {
    const seam = this.nodes.has(id) ? this.net.restart(id) : this.net.join(id);
    const inner = raftChannelTransport(seam);
    const transport: RaftTransport = sent === undefined ? inner : watchedTransport(inner, (to, m) => sent(to, m));
    const node = raftNode({ cluster, transport, storage, timers: this.timers, random: seededRandom(this.seed * 1000 + id.charCodeAt(1)) });
    this.nodes.set(id, node);
    this.stores.set(id, storage);
    const kv = new KvMachine();
    this.kvs.set(id, kv);
    void (async () => {
      try {
        for await (const c of node.committedFrom(1)) kv.apply(c);
      } catch (e) {
        this.log.push(`${id} apply failed: ${(e as Error).message}`);
      }
    })();
    return node;
  }

  run(ms: number): Promise<void> {
    return runFor(this.timers, ms);
  }

  until(cond: () => boolean, maxMs = 5000): Promise<void> {
    return runUntil(this.timers, cond, maxMs);
  }

  leader(): RaftNode | undefined {
    return [...this.nodes.values()].find((n) => n.role.get() === "leader");
  }

  async settle<T>(p: Promise<T>, maxMs = 5000): Promise<T> {
    let done = false;
    let value: T | undefined;
    let error: unknown;
    p.then((v) => ((done = true), (value = v)), (e: unknown) => ((done = true), (error = e)));
    await this.until(() => done, maxMs);
    if (error !== undefined) throw error;
    return value as T;
  }
}

const ABC: ClusterConfig = { voters: ["n1", "n2", "n3"], learners: [] };

/**
 * An in-memory store that logs its calls, records any call that starts while another is still running (the
 * driver must never overlap them), and — while `hold.on` — keeps each `saveSnapshot` pending until released.
 */
function watchedStore(overlaps: string[]): { store: RaftStorage; base: ReturnType<typeof memoryRaftStorage>; calls: string[]; hold: { on: boolean; release: (() => void)[] } } {
  const base = memoryRaftStorage();
  const calls: string[] = [];
  const hold = { on: false, release: [] as (() => void)[] };
  let busy: string | null = null;
  const run = async (name: string, write: () => Promise<void>, held = false): Promise<void> => {
    if (busy !== null) overlaps.push(`${name} started while ${busy} ran`);
    busy = name;
    calls.push(name);
    try {
      if (held) await new Promise<void>((r) => hold.release.push(r));
      await write();
    } finally {
      busy = null;
    }
  };
  const store: RaftStorage = {
    load: () => base.load(),
    saveTermAndVote: (t, v) => run(`term ${t}`, () => base.saveTermAndVote(t, v)),
    append: (es) => run(`append ${es.map((e) => e.index).join(",")}`, () => base.append(es)),
    truncateFrom: (i) => run(`truncateFrom ${i}`, () => base.truncateFrom(i)),
    saveSnapshot: (sn) => run(`saveSnapshot ${sn.lastIndex}`, () => base.saveSnapshot(sn), hold.on),
    discardThrough: (i) => run(`discardThrough ${i}`, () => base.discardThrough(i)),
    close: () => base.close(),
  };
  return { store, base, calls, hold };
}

describe("raftNode driver", () => {
  it("elects, commits from leader and follower (forwarding), and streams each committed index once, in order", async () => {
    const c = new Cluster(3);
    for (const id of ABC.voters) c.add(id, ABC);
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    const follower = [...c.nodes.values()].find((n) => n !== leader)!;
    const a = await c.settle(leader.propose(kvCommand({ op: "append", key: "k", value: "L" }), { client: "t", seq: 1 }));
    const b = await c.settle(follower.propose(kvCommand({ op: "append", key: "k", value: "F" }), { client: "t", seq: 2 }));
    expect(b.index).toBeGreaterThan(a.index);
    await c.until(() => [...c.kvs.values()].every((kv) => kv.applied >= b.index));
    for (const kv of c.kvs.values()) expect(kv.data.get("k")).toBe("LF");
    expect(leader.commitIndex.get()).toBeGreaterThanOrEqual(b.index);
    // a late reader replays from the start with no gap or duplicate
    const seen: number[] = [];
    const it = follower.committedFrom(1)[Symbol.asyncIterator]();
    while (seen.length < b.index) {
      const r = await it.next();
      const item = r.value as Committed;
      seen.push(item.kind === "entry" ? item.entry.index : item.kind === "internal" ? item.index : item.snapshot.throughIndex);
    }
    expect(seen).toEqual(Array.from({ length: b.index }, (_, i) => i + 1));
    const ri = await c.settle(leader.readIndex());
    expect(ri).toBeGreaterThanOrEqual(b.index);
    await expect(c.settle(follower.readIndex())).rejects.toBeInstanceOf(NotLeaderError);
    for (const n of c.nodes.values()) await n.close();
  });

  it("group commit: proposals arriving in one turn are appended in one storage write", async () => {
    const c = new Cluster(5);
    const writes: number[] = [];
    const base = memoryRaftStorage();
    const counting: RaftStorage = { ...base, append: async (es: readonly LogEntry[]) => { writes.push(es.length); await base.append(es); } };
    c.add("n1", { voters: ["n1"], learners: [] }, counting);
    await c.until(() => c.leader() !== undefined);
    const n1 = c.nodes.get("n1")!;
    writes.length = 0;
    const ps = Array.from({ length: 50 }, (_, i) => n1.propose(kvCommand({ op: "put", key: `k${i}`, value: "v" }), { client: "g", seq: i + 1 }));
    const res = await c.settle(Promise.all(ps));
    expect(new Set(res.map((r) => r.index)).size).toBe(50);
    expect(writes).toEqual([50]);
    await n1.close();
  });

  it("term and vote are durable before the vote reply leaves; entries before the append reply (R-P1, R-P2)", async () => {
    const c = new Cluster(7);
    const events: string[] = [];
    for (const id of ABC.voters) {
      const base = memoryRaftStorage();
      const slow: RaftStorage = {
        ...base,
        // each write takes 2 ms of virtual time, so an early send would be visible
        saveTermAndVote: (t, v) => new Promise((r) => c.timers.set(() => void base.saveTermAndVote(t, v).then(() => (events.push(`${id} durable-term ${t} ${v}`), r())), 2)),
        append: (es) => new Promise((r) => c.timers.set(() => void base.append(es).then(() => (events.push(`${id} durable-entries ${es[es.length - 1]!.index}`), r())), 2)),
      };
      const seam = c.net.join(id);
      const send = seam.send.bind(seam);
      (seam as { send: typeof seam.send }).send = (to, frame) => {
        // frames on channel 4 are tag ‖ raft frame: byte 2 of the frame is the message type (1 version, 2 type)
        const type = frame[2];
        if (type === 4) events.push(`${id} send-voteReply ${to}`);
        if (type === 6) events.push(`${id} send-appendReply ${to}`);
        return send(to, frame);
      };
      const node = raftNode({ cluster: ABC, transport: raftChannelTransport(seam), storage: slow, timers: c.timers, random: seededRandom(70 + id.charCodeAt(1)) });
      c.nodes.set(id, node);
    }
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    await c.settle(leader.propose(kvCommand({ op: "put", key: "a", value: "b" }), null));
    const voteReplies = events.filter((e) => e.includes("send-voteReply"));
    expect(voteReplies.length).toBeGreaterThan(0);
    for (const [i, ev] of events.entries()) {
      if (!ev.includes("send-voteReply")) continue;
      const id = ev.split(" ")[0]!;
      expect(events.slice(0, i).some((p) => p.startsWith(`${id} durable-term`)), `${ev} after its term write`).toBe(true);
    }
    const appendAcks = events.filter((e) => e.includes("send-appendReply"));
    expect(appendAcks.length).toBeGreaterThan(0);
    const firstAck = events.findIndex((e) => e.includes("send-appendReply"));
    const id = events[firstAck]!.split(" ")[0]!;
    expect(events.slice(0, firstAck).some((p) => p.startsWith(`${id} durable-entries`))).toBe(true);
    for (const n of c.nodes.values()) await n.close();
  });

  it("leader pipelining: new entries reach followers while the leader's write is in flight; it counts itself only once written", async () => {
    const c = new Cluster(11);
    // every store can be held: a held append resolves only when released
    const held = new Map<string, { release: (() => void)[]; hold: boolean; appends: number[][] }>();
    for (const id of ABC.voters) {
      const base = memoryRaftStorage();
      const h = { release: [] as (() => void)[], hold: false, appends: [] as number[][] };
      held.set(id, h);
      c.add(id, ABC, {
        ...base,
        append: async (es) => {
          h.appends.push(es.map((e) => e.index));
          await base.append(es);
          if (h.hold) await new Promise<void>((r) => h.release.push(r));
        },
      });
    }
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    const lh = held.get(leader.id)!;
    const [f1, f2] = ABC.voters.filter((id) => id !== leader.id);
    await c.settle(leader.propose(kvCommand({ op: "put", key: "warm", value: "up" }), null));
    // cut one follower off: commitment now needs the leader itself and the other follower
    c.net.partition([[f2!]], "silent");
    lh.hold = true;
    const first = leader.propose(kvCommand({ op: "put", key: "a", value: "1" }), null);
    await c.run(20);
    const second = leader.propose(kvCommand({ op: "put", key: "b", value: "2" }), null);
    await c.run(20);
    let settled = false;
    void Promise.all([first, second]).then(() => (settled = true));
    await c.run(50);
    // nothing commits: one follower's copy is not a majority until the leader's own write is durable (R-R4) ...
    expect(settled, "committed before the leader's own write was durable").toBe(false);
    // ... yet the follower has the second entry, sent while the leader's write of the first was still in flight
    const leaderWritten = Math.max(...lh.appends.flat());
    const top = leaderWritten + 1;
    expect(held.get(f1!)!.appends.flat()).toContain(leaderWritten);
    expect(held.get(f1!)!.appends.flat(), "sent before the leader's previous write finished").toContain(top);
    expect(lh.release.length, "one write in flight, the rest queued behind it").toBe(1);
    lh.hold = false;
    for (const r of lh.release.splice(0)) r();
    await c.settle(Promise.all([first, second]));
    // the second entry, queued while the first write was in flight, was written in one later call
    expect(lh.appends.at(-1)).toContain(top);
    for (const n of c.nodes.values()) await n.close();
  });

  it("a leader hands its append to storage before sending the AppendEntries that carry it (its sync runs meanwhile)", async () => {
    const c = new Cluster(13);
    const events: string[] = [];
    for (const id of ABC.voters) {
      const base = memoryRaftStorage();
      const store: RaftStorage = { ...base, append: (es) => (events.push(`${id} write ${es.map((e) => e.index).join(",")}`), base.append(es)) };
      c.add(id, ABC, store, (to, m) => {
        if (m.type === "append" && m.entries.length > 0) events.push(`${id} send ${m.entries.map((e) => e.index).join(",")} to ${to}`);
      });
    }
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    await c.settle(leader.propose(kvCommand({ op: "put", key: "warm", value: "up" }), null));
    await c.run(20);
    events.length = 0;
    const { index } = await c.settle(leader.propose(kvCommand({ op: "put", key: "a", value: "1" }), null));
    const mine = events.filter((e) => e.startsWith(`${leader.id} `) && e.split(" ")[2]!.split(",").map(Number).includes(index));
    expect(mine.filter((e) => e.includes(" send ")), "sent to both followers").toHaveLength(2);
    expect(mine[0], `the leader's first step for entry ${index} (its events: ${JSON.stringify(mine)})`).toBe(`${leader.id} write ${index}`);
    for (const n of c.nodes.values()) await n.close();
  });

  it("close() rejects every pending call", async () => {
    const c = new Cluster(9);
    for (const id of ABC.voters) c.add(id, ABC);
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    const others = ABC.voters.filter((id) => c.nodes.get(id) !== leader);
    const leaderId = ABC.voters.find((id) => c.nodes.get(id) === leader)!;
    c.net.partition([[leaderId], others], "silent");
    const p1 = leader.propose(kvCommand({ op: "put", key: "x", value: "1" }), null);
    const p2 = leader.readIndex();
    const results = Promise.allSettled([p1, p2]);
    await c.run(20);
    await leader.close();
    const [r1, r2] = await results;
    expect(r1.status === "rejected" && r1.reason).toBeInstanceOf(NodeShutdownError);
    expect(r2.status === "rejected" && r2.reason).toBeInstanceOf(NodeShutdownError);
    await expect(leader.propose(new Uint8Array(), null)).rejects.toBeInstanceOf(NodeShutdownError);
    for (const n of c.nodes.values()) await n.close();
  });

  it("a minority leader's pending proposal fails with LeadershipLostError after check-quorum", async () => {
    const c = new Cluster(11);
    for (const id of ABC.voters) c.add(id, ABC);
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    const leaderId = ABC.voters.find((id) => c.nodes.get(id) === leader)!;
    c.net.partition([[leaderId], ABC.voters.filter((x) => x !== leaderId)], "silent");
    const p = leader.propose(kvCommand({ op: "put", key: "x", value: "1" }), null);
    await expect(c.settle(p, 2000)).rejects.toBeInstanceOf(LeadershipLostError);
    for (const n of c.nodes.values()) await n.close();
  });

  it("rolling restart by leadership transfer: with the control plane's retry loop (LeadershipLostError, same key) no proposal fails", async () => {
    const c = new Cluster(31);
    const stores = new Map(ABC.voters.map((id) => [id, memoryRaftStorage()]));
    for (const id of ABC.voters) c.add(id, ABC, stores.get(id));
    await c.until(() => c.leader() !== undefined);
    let seq = 0;
    const acked = new Set<number>();
    const failures: string[] = [];
    const retriedOn: string[] = [];
    const anyNode = (): RaftNode => c.leader() ?? [...c.nodes.values()][0]!;
    // §3.10: on LeadershipLostError re-propose with the same key, up to 5 attempts. A node closing under the
    // caller (NodeShutdownError) sends it to another node, as a client fails over to another endpoint.
    const propose = async (via: () => RaftNode, s: number): Promise<void> => {
      const cmd = kvCommand({ op: "append", key: "log", value: `[${s}]` });
      for (let attempt = 1; ; attempt++) {
        const node = attempt === 1 ? via() : anyNode();
        try {
          await node.propose(cmd, { client: "w", seq: s });
          acked.add(s);
          return;
        } catch (e) {
          if (e instanceof LeadershipLostError && attempt < 5) {
            retriedOn.push((e as Error).name);
            continue;
          }
          if (e instanceof NodeShutdownError && attempt < 5) continue;
          failures.push(`${s}: ${(e as Error).name}: ${(e as Error).message}`);
          return;
        }
      }
    };
    let stop = false;
    const writer = (async () => {
      while (!stop) await propose(anyNode, ++seq);
    })();
    const during: number[] = [];
    for (const id of ABC.voters) {
      await c.run(200);
      const node = c.nodes.get(id)!;
      if (node.role.get() === "leader") {
        const target = ABC.voters.find((x) => x !== id)!;
        const transfer = node.transferLeadership(target);
        const s = ++seq;
        during.push(s);
        const p = propose(() => node, s); // reaches the old leader while it hands over
        await c.settle(transfer);
        await c.settle(p);
        expect(c.nodes.get(target)!.role.get()).toBe("leader");
      }
      await node.close();
      c.net.crash(id, "disconnect");
      c.add(id, ABC, stores.get(id));
      await c.until(() => c.leader() !== undefined && c.kvs.get(id)!.applied >= c.leader()!.commitIndex.get());
    }
    stop = true;
    await c.settle(writer);
    expect(failures).toEqual([]);
    expect(during.length).toBeGreaterThan(0);
    for (const s of during) expect(acked.has(s)).toBe(true);
    expect(retriedOn).toContain("NotLeaderError"); // the proposals made during a transfer were refused, then retried
    expect(acked.size).toBeGreaterThan(20);
    const leader = c.leader()!;
    await c.until(() => [...c.kvs.values()].every((kv) => kv.applied >= leader.commitIndex.get()));
    for (const kv of c.kvs.values()) {
      const applied = (kv.data.get("log") ?? "").match(/\[\d+\]/g) ?? [];
      expect(new Set(applied).size).toBe(applied.length); // every key applied once
      for (const s of acked) expect(applied).toContain(`[${s}]`);
    }
    for (const n of c.nodes.values()) await n.close();
  });

  it("transferLeadership: errors say what happened (not leader, not a voter) and NotLeaderError is a LeadershipLostError", async () => {
    const c = new Cluster(33);
    for (const id of ABC.voters) c.add(id, ABC);
    c.add("n4", { voters: [], learners: [] });
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    await c.settle(leader.propose(kvCommand({ op: "put", key: "k", value: "v" }), null));
    await c.settle(leader.changeMembership({ voters: ABC.voters, learners: ["n4"] }));
    const follower = ABC.voters.map((id) => c.nodes.get(id)!).find((n) => n !== leader)!;
    const off = await c.settle(follower.transferLeadership(leader.id)).catch((e: unknown) => e);
    expect(off).toBeInstanceOf(NotLeaderError);
    expect(off).toBeInstanceOf(LeadershipLostError);
    const learner = await c.settle(leader.transferLeadership("n4")).catch((e: unknown) => e);
    expect(learner).toBeInstanceOf(LeadershipTransferError);
    expect((learner as LeadershipTransferError).reason).toBe("invalid-target");
    await c.settle(leader.transferLeadership(leader.id));
    expect(leader.role.get()).toBe("leader");
    for (const n of c.nodes.values()) await n.close();
  });

  it("undecodable frames are dropped and counted, never fatal", async () => {
    const c = new Cluster(13);
    for (const id of ABC.voters) c.add(id, ABC);
    const rogue = c.net.join("n9");
    await c.until(() => c.leader() !== undefined);
    rogue.send("n1", new Uint8Array([4, 1, 99, 0]));
    rogue.send("n1", new Uint8Array([4, 7]));
    await c.run(10);
    expect(c.nodes.get("n1")!.refusedFrames().get("undecodable")).toBe(2);
    const leader = c.leader()!;
    await c.settle(leader.propose(kvCommand({ op: "put", key: "still", value: "fine" }), null));
    for (const n of c.nodes.values()) await n.close();
  });

  it("a leader's own compaction runs in the background: while its snapshot write is slow it keeps sending, and no follower campaigns (issue 15)", async () => {
    const c = new Cluster(19);
    const overlaps: string[] = [];
    const stores = new Map<string, ReturnType<typeof watchedStore>>();
    const sends: { at: number; from: string; to: string }[] = [];
    for (const id of ABC.voters) {
      const w = watchedStore(overlaps);
      stores.set(id, w);
      c.add(id, ABC, w.store, (to) => sends.push({ at: c.timers.now(), from: id, to }));
    }
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    for (let i = 0; i < 10; i++) await c.settle(leader.propose(kvCommand({ op: "put", key: `k${i}`, value: "v" }), null));
    const kv = c.kvs.get(leader.id)!;
    await c.until(() => kv.applied === leader.commitIndex.get());
    const through = kv.applied;
    const lw = stores.get(leader.id)!;
    lw.hold.on = true;
    const roles = new Map([...c.nodes].map(([id, n]) => [id, n.role.get()] as const));
    const roleChanges: string[] = [];
    const start = c.timers.now();
    leader.publishSnapshot({ throughIndex: through, state: kv.snapshot() });
    // three of the longest election timeouts (virtual time) with the snapshot write held; a proposal arrives meanwhile
    let during: Promise<{ index: number }> | null = null;
    for (let t = 0; t < 900; t++) {
      if (t === 100) during = leader.propose(kvCommand({ op: "put", key: "during", value: "hold" }), null);
      await c.run(1);
      for (const [id, n] of c.nodes) {
        if (n.role.get() === roles.get(id)) continue;
        roleChanges.push(`${id}: ${roles.get(id)} -> ${n.role.get()} at +${c.timers.now() - start} ms`);
        roles.set(id, n.role.get());
      }
    }
    expect(lw.hold.release.length, "the snapshot write was in flight all along").toBe(1);
    for (const f of ABC.voters.filter((id) => id !== leader.id)) {
      const at = [start, ...sends.filter((x) => x.from === leader.id && x.to === f && x.at >= start).map((x) => x.at), c.timers.now()];
      const silence = Math.max(...at.slice(1).map((t, i) => t - at[i]!));
      expect(silence, `longest silence towards ${f} (virtual ms)`).toBeLessThan(150); // electionTimeoutMinMs
    }
    expect(roleChanges, "a follower campaigned or the leader stepped down during the compaction").toEqual([]);
    // the entry proposed meanwhile commits on the followers' copies while the leader's own append waits its turn
    const d = await c.settle(during!);
    expect(lw.hold.release.length).toBe(1);
    lw.hold.on = false;
    for (const r of lw.hold.release.splice(0)) r();
    await c.run(50);
    const disk = lw.base.snapshotOf();
    expect(disk.snapshot?.lastIndex).toBe(through);
    expect(disk.entries.every((e) => e.index > through)).toBe(true);
    expect(disk.entries.map((e) => e.index)).toContain(d.index);
    // in the order the core asked for, one at a time: the snapshot, the discard, then the later append
    const calls = lw.calls;
    const save = calls.indexOf(`saveSnapshot ${through}`);
    expect(calls[save + 1]).toBe(`discardThrough ${through}`);
    const written = calls.findIndex((x) => x.startsWith("append ") && x.slice(7).split(",").map(Number).includes(d.index));
    expect(written).toBeGreaterThan(save + 1);
    expect(overlaps).toEqual([]);
    for (const n of c.nodes.values()) await n.close();
  });

  it("a follower acknowledges an InstallSnapshot only once the snapshot is durable: that write stays blocking", async () => {
    const c = new Cluster(23);
    for (const id of ABC.voters) c.add(id, ABC);
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    for (let i = 0; i < 20; i++) await c.settle(leader.propose(kvCommand({ op: "put", key: `k${i}`, value: "v" }), null));
    const kv = c.kvs.get(leader.id)!;
    await c.until(() => kv.applied === leader.commitIndex.get());
    leader.publishSnapshot({ throughIndex: kv.applied, state: kv.snapshot() });
    await c.run(20);
    const overlaps: string[] = [];
    const w = watchedStore(overlaps);
    w.hold.on = true;
    const acks: boolean[] = [];
    c.add("n4", { voters: [], learners: [] }, w.store, (_to, m) => {
      if (m.type === "snapshotReply") acks.push(m.done);
    });
    const joined = leader.changeMembership({ voters: ABC.voters, learners: ["n4"] });
    await c.until(() => w.hold.release.length === 1);
    await c.run(500); // the leader re-sends the snapshot meanwhile
    expect(acks.includes(true), "acknowledged before the snapshot was durable").toBe(false);
    w.hold.on = false;
    for (const r of w.hold.release.splice(0)) r();
    await c.until(() => acks.includes(true));
    await c.settle(joined);
    await c.until(() => c.kvs.get("n4")!.applied >= leader.commitIndex.get());
    expect(c.kvs.get("n4")!.stateText()).toBe(kv.stateText());
    expect(overlaps).toEqual([]);
    for (const n of c.nodes.values()) await n.close();
  });

  it("a learner joins, a snapshot is published, and the learner catches up by InstallSnapshot", async () => {
    const c = new Cluster(17);
    for (const id of ABC.voters) c.add(id, ABC);
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    for (let i = 0; i < 30; i++) await c.settle(leader.propose(kvCommand({ op: "append", key: `k${i % 3}`, value: `${i},` }), { client: "w", seq: i + 1 }));
    for (const [id, n] of c.nodes) {
      const kv = c.kvs.get(id)!;
      await c.until(() => kv.applied === leader.commitIndex.get());
      n.publishSnapshot({ throughIndex: kv.applied, state: kv.snapshot() });
    }
    c.add("n4", { voters: [], learners: [] });
    const cfg = await c.settle(leader.changeMembership({ voters: ABC.voters, learners: ["n4"] }));
    expect(cfg.learners).toEqual(["n4"]);
    const l = c.nodes.get("n4")!;
    await c.until(() => c.kvs.get("n4")!.applied >= leader.commitIndex.get());
    expect(l.role.get()).toBe("learner");
    expect(c.kvs.get("n4")!.stateText()).toBe(c.kvs.get([...c.nodes.entries()].find(([, n]) => n === leader)![0])!.stateText());
    const trace: string[] = [];
    for (const id of ["n4"]) {
      const it = c.nodes.get(id)!.trace[Symbol.asyncIterator]();
      for (let i = 0; i < 200; i++) {
        const r = await Promise.race([it.next(), tick().then(() => null)]);
        if (r === null || r.done) break;
        trace.push(r.value.type);
      }
    }
    expect(trace).toContain("snapshotInstalled");
    for (const n of c.nodes.values()) await n.close();
  });
});

describe("walRaftStorage (the segmented log store on real files)", () => {
  const modes = (["caller", "io-pool", "worker"] as const).flatMap((thread) => (["dsync", "fdatasync"] as const).map((sync) => [thread, sync] as const));
  it.each(modes)("persists term, vote, entries and snapshots across reopen (thread %s, sync %s)", async (thread, sync) => {
    const dir = mkdtempSync(join(tmpdir(), "raft-wal-"));
    try {
      const s = walRaftStorage(dir, { thread, sync, segmentBytes: 4096 });
      const e = (index: number, term: number, extra: Partial<LogEntry> = {}): LogEntry => ({ index, term, kind: "app", key: { client: "c", seq: index }, command: new Uint8Array([index]), stampedAt: 1000 + index, ...extra });
      await s.saveTermAndVote(3, "n2");
      await s.append([e(1, 1), e(2, 1), e(3, 2, { kind: "config", command: new Uint8Array(), config: { voters: ["a", "b"], learners: ["c"] }, key: null })]);
      await s.append([e(3, 3), e(4, 3)]); // replaces from 3 on
      await s.truncateFrom(4);
      await s.saveSnapshot({ lastIndex: 1, lastTerm: 1, config: { voters: ["a"], learners: [] }, state: new Uint8Array([9, 9]) });
      for (let i = 4; i < 199; i++) await s.append([e(i, 3, { command: new Uint8Array(100).fill(i & 0xff) })]);
      // a batch over 64 KiB: with fdatasync it is written on the pool rather than copied on the caller's thread
      await s.append([e(199, 3, { command: new Uint8Array(80 * 1024).fill(0xab) })]);
      await s.close();
      expect(readdirSync(dir).filter((n) => n.endsWith(".seg")).length, "4 KiB segments rolled").toBeGreaterThan(3);
      const r = walRaftStorage(dir, { thread, sync, segmentBytes: 4096 });
      const loaded = await r.load();
      expect(loaded.term).toBe(3);
      expect(loaded.votedFor).toBe("n2");
      expect(loaded.snapshot).toEqual({ lastIndex: 1, lastTerm: 1, config: { voters: ["a"], learners: [] }, state: new Uint8Array([9, 9]) });
      // R-P4: the entry at the floor was never discarded, and load skips it
      expect(loaded.entries.slice(0, 2).map((x) => [x.index, x.term])).toEqual([[2, 1], [3, 3]]);
      expect(loaded.entries[0]).toEqual(e(2, 1));
      expect(loaded.entries.length).toBe(198);
      expect(loaded.entries[197]).toEqual(e(199, 3, { command: new Uint8Array(80 * 1024).fill(0xab) }));
      await r.saveSnapshot({ lastIndex: 150, lastTerm: 3, config: null, state: new Uint8Array([1]) });
      await r.discardThrough(150);
      await r.close();
      expect(readdirSync(dir).filter((n) => n.startsWith("snap-")), "older snapshots removed").toEqual([`snap-${(150).toString(16).padStart(16, "0")}.snap`]);
      const t = walRaftStorage(dir, { thread, sync, segmentBytes: 4096 });
      expect((await t.load()).entries.map((x) => x.index)).toEqual(Array.from({ length: 49 }, (_, k) => 151 + k));
      await t.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("on real files: a cut anywhere in the last record recovers the prefix; a flipped byte before it is refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-wal-"));
    try {
      const src = join(dir, "src");
      const s = walRaftStorage(src, { thread: "caller", segmentBytes: 8192 });
      const e = (index: number, n: number): LogEntry => ({ index, term: 2, kind: "app", key: null, command: new Uint8Array(n).fill(0x5a), stampedAt: index });
      await s.saveTermAndVote(2, null);
      for (let i = 1; i <= 10; i++) await s.append([e(i, 30)]);
      const seg = readdirSync(src).find((n) => n.endsWith(".seg"))!;
      const before = readFileSync(join(src, seg));
      await s.append([e(11, 64)]);
      await s.close();
      const after = readFileSync(join(src, seg));
      let from = 0;
      while (before[from] === after[from]) from++;
      let to = after.length;
      while (after[to - 1] === 0) to--;
      expect(to - from).toBeGreaterThan(64);
      const reopen = async (bytes: Uint8Array): Promise<number[]> => {
        const d = join(dir, "copy");
        rmSync(d, { recursive: true, force: true });
        cpSync(src, d, { recursive: true });
        writeFileSync(join(d, seg), bytes);
        const r = walRaftStorage(d, { thread: "caller", segmentBytes: 8192 });
        try {
          return (await r.load()).entries.map((x) => x.index);
        } finally {
          await r.close();
        }
      };
      for (let cut = from; cut < to; cut++) {
        const torn = Uint8Array.from(after);
        torn.fill(0, cut, to);
        expect(await reopen(torn), `cut at byte ${cut}`).toEqual(Array.from({ length: 10 }, (_, k) => k + 1));
      }
      expect(await reopen(after)).toHaveLength(11);
      const flipped = Uint8Array.from(after);
      flipped[from - 50] = flipped[from - 50]! ^ 0x10;
      await expect(reopen(flipped)).rejects.toThrow(/is corrupt at byte \d+: checksum mismatch, followed by an intact record/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a node restarts from its log store; a damaged store refuses to start (in a worker thread too)", async () => {
    const thread = "caller";
    const dir = mkdtempSync(join(tmpdir(), "raft-wal-"));
    try {
      const path = join(dir, "n1");
      const c = new Cluster(31);
      const n1 = c.add("n1", { voters: ["n1"], learners: [] }, walRaftStorage(path, { thread }));
      await c.until(() => c.leader() !== undefined);
      for (let i = 0; i < 5; i++) await c.settle(n1.propose(kvCommand({ op: "append", key: "k", value: `${i}` }), { client: "c", seq: i + 1 }));
      await n1.close();
      const c2 = new Cluster(32);
      const again = c2.add("n1", { voters: ["n1"], learners: [] }, walRaftStorage(path, { thread }));
      await c2.until(() => c2.leader() !== undefined);
      await c2.until(() => c2.kvs.get("n1")!.applied >= 7);
      expect(c2.kvs.get("n1")!.data.get("k")).toBe("01234");
      await again.close();
      const seg = join(path, readdirSync(path).find((n) => n.endsWith(".seg"))!);
      const bytes = readFileSync(seg);
      bytes[100] = bytes[100]! ^ 0xff;
      writeFileSync(seg, bytes);
      const c3 = new Cluster(33);
      const broken = c3.add("n1", { voters: ["n1"], learners: [] }, walRaftStorage(path, { thread }));
      await expect(broken.started).rejects.toBeInstanceOf(RaftRestoreError);
      await expect(broken.started).rejects.toThrow(/is corrupt at byte/);
      await broken.close();
      const inWorker = walRaftStorage(path, { thread: "worker" });
      await expect(inWorker.load()).rejects.toBeInstanceOf(RaftRestoreError);
      await inWorker.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("sqliteRaftStorage", () => {
  it.each(["caller", "worker"] as const)("persists term, vote, entries and snapshots across reopen, in WAL mode (%s thread)", async (thread) => {
    const dir = mkdtempSync(join(tmpdir(), "raft-sqlite-"));
    try {
      const path = join(dir, "raft.db");
      const s = sqliteRaftStorage(path, { thread });
      const e = (index: number, term: number, extra: Partial<LogEntry> = {}): LogEntry => ({ index, term, kind: "app", key: { client: "c", seq: index }, command: new Uint8Array([index]), stampedAt: 1000 + index, ...extra });
      await s.saveTermAndVote(3, "n2");
      await s.append([e(1, 1), e(2, 1), e(3, 2, { kind: "config", command: new Uint8Array(), config: { voters: ["a", "b"], learners: ["c"] }, key: null })]);
      await s.append([e(3, 3), e(4, 3)]); // replaces from 3 on
      await s.truncateFrom(4);
      await s.saveSnapshot({ lastIndex: 1, lastTerm: 1, config: { voters: ["a"], learners: [] }, state: new Uint8Array([9, 9]) });
      await s.close();
      const journal = new DatabaseSync(path);
      expect((journal.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
      journal.close();
      const r = sqliteRaftStorage(path, { thread });
      const loaded = await r.load();
      expect(loaded.term).toBe(3);
      expect(loaded.votedFor).toBe("n2");
      expect(loaded.snapshot).toEqual({ lastIndex: 1, lastTerm: 1, config: { voters: ["a"], learners: [] }, state: new Uint8Array([9, 9]) });
      // R-P4: the entry at the floor was never discarded, and load skips it
      expect(loaded.entries.map((x) => [x.index, x.term])).toEqual([[2, 1], [3, 3]]);
      expect(loaded.entries[0]).toEqual(e(2, 1));
      await r.discardThrough(2);
      expect((await r.load()).entries.map((x) => x.index)).toEqual([3]);
      await r.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a node restarts from its SQLite store; a corrupt store refuses to start", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-sqlite-"));
    try {
      const path = join(dir, "n1.db");
      const c = new Cluster(21);
      const n1 = c.add("n1", { voters: ["n1"], learners: [] }, sqliteRaftStorage(path));
      await c.until(() => c.leader() !== undefined);
      for (let i = 0; i < 5; i++) await c.settle(n1.propose(kvCommand({ op: "append", key: "k", value: `${i}` }), { client: "c", seq: i + 1 }));
      await n1.close();
      const c2 = new Cluster(22);
      const again = c2.add("n1", { voters: ["n1"], learners: [] }, sqliteRaftStorage(path));
      await c2.until(() => c2.leader() !== undefined);
      await c2.until(() => c2.kvs.get("n1")!.applied >= 7);
      expect(c2.kvs.get("n1")!.data.get("k")).toBe("01234");
      await again.close();
      const db = new DatabaseSync(path);
      db.exec("DELETE FROM raft_log WHERE idx = 3");
      db.close();
      const c3 = new Cluster(23);
      const broken = c3.add("n1", { voters: ["n1"], learners: [] }, sqliteRaftStorage(path));
      await expect(broken.started).rejects.toBeInstanceOf(RaftRestoreError);
      await broken.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
