/**
 * How long a Raft leader goes without sending to a follower while it compacts (issue 15). Three members in one
 * process over `MemoryNetwork` with real timers, each on its own store (SQLite in a worker thread, as the daemon
 * runs it, or `HEDDLE_GAP_STORE=wal`: the log store on the I/O pool); clients write continuously to the leader and
 * every member publishes a snapshot of its state every `HEDDLE_GAP_EVERY` applied indexes. Prints one JSON line:
 * the leader's compactions, the longest silence from a leader towards a follower that overlaps one of its own
 * compactions, the longest silence overall, the longest own compaction (saveSnapshot through discardThrough), the
 * longest event-loop stall (`monitorEventLoopDelay`: a stall silences every member whatever the driver does), how
 * many times leadership was taken and why leaders stepped down (trace), writes/s, and the CPU-seconds used. `HEDDLE_GAP_SLOW_SNAPSHOT_MS` adds that
 * many ms (a timer, not CPU) to every `saveSnapshot`, standing in for a slow disk.
 *
 * Usage: node packages/governed/bench/compaction-gap.ts [seconds=20]
 *   env HEDDLE_GAP_STORE=sqlite|wal, HEDDLE_GAP_EVERY (default 400), HEDDLE_GAP_STATE_KB (default 2048),
 *   HEDDLE_GAP_CLIENTS (default 16), HEDDLE_GAP_SLOW_SNAPSHOT_MS (default 0)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { MemoryNetwork, realTimers } from "@heddle/seam";
import { raftChannelTransport, raftNode, sqliteRaftStorage, walRaftStorage } from "../src/index.ts";
import type { ClusterConfig, RaftNode, RaftStorage, RaftTransport } from "../src/index.ts";
import { KvMachine, kvCommand } from "../test/support/kv-machine.ts";

const seconds = Number(process.argv[2] ?? 20);
const store = process.env.HEDDLE_GAP_STORE === "wal" ? "wal" : "sqlite";
const every = Number(process.env.HEDDLE_GAP_EVERY ?? 400);
const stateKb = Number(process.env.HEDDLE_GAP_STATE_KB ?? 2048);
const clients = Number(process.env.HEDDLE_GAP_CLIENTS ?? 16);
const slowSnapshotMs = Number(process.env.HEDDLE_GAP_SLOW_SNAPSHOT_MS ?? 0);
const ids = ["n1", "n2", "n3"];
const cluster: ClusterConfig = { voters: ids, learners: [] };
const dir = mkdtempSync(join(tmpdir(), "heddle-compaction-gap-"));
const net = new MemoryNetwork({ timers: realTimers, random: Math.random, faults: { dropRate: 0, duplicateRate: 0, delayMs: [0, 1] } });

/** Per member: when it last sent to each peer while leading, and the intervals of its own snapshot writes. */
interface Watched {
  node: RaftNode;
  kv: KvMachine;
  lastSend: Map<string, number>;
  compactions: { start: number; end: number }[];
  compactingSince: number | null;
}
const members = new Map<string, Watched>();
let longestDuringCompaction = 0;
let longestOverall = 0;
let leaderChanges = 0;
const stepDowns: Record<string, number> = {};

const overlapsCompaction = (w: Watched, from: number, to: number): boolean =>
  (w.compactingSince !== null && w.compactingSince < to) || w.compactions.some((c) => c.start < to && c.end > from);

function silence(w: Watched, peer: string, at: number): void {
  const last = w.lastSend.get(peer);
  if (last === undefined) return;
  const gap = at - last;
  if (gap > longestOverall) longestOverall = gap;
  if (gap > longestDuringCompaction && overlapsCompaction(w, last, at)) longestDuringCompaction = gap;
}

function watchedTransport(id: string, inner: RaftTransport): RaftTransport {
  return {
    self: inner.self,
    peers: inner.peers,
    get maxPayloadBytes() {
      return inner.maxPayloadBytes;
    },
    onFrame: (fn) => inner.onFrame(fn),
    send: (to, frame) => {
      const w = members.get(id);
      if (w !== undefined && w.node.role.get() === "leader") {
        const now = performance.now();
        silence(w, to, now);
        w.lastSend.set(to, now);
      }
      inner.send(to, frame);
    },
  };
}

function watchedStorage(id: string, inner: RaftStorage): RaftStorage {
  return {
    ...inner,
    saveSnapshot: async (s) => {
      const w = members.get(id)!;
      w.compactingSince = performance.now();
      if (slowSnapshotMs > 0) await new Promise((r) => setTimeout(r, slowSnapshotMs));
      await inner.saveSnapshot(s);
    },
    discardThrough: async (i) => {
      await inner.discardThrough(i);
      const w = members.get(id)!;
      if (w.compactingSince !== null) w.compactions.push({ start: w.compactingSince, end: performance.now() });
      w.compactingSince = null;
    },
  };
}

for (const id of ids) {
  const path = join(dir, id);
  const base = store === "wal" ? walRaftStorage(path) : sqliteRaftStorage(`${path}.sqlite`, { thread: "worker" });
  const node = raftNode({ cluster, transport: watchedTransport(id, raftChannelTransport(net.join(id))), storage: watchedStorage(id, base), timers: realTimers, random: Math.random, defer: setImmediate });
  const w: Watched = { node, kv: new KvMachine(), lastSend: new Map(), compactions: [], compactingSince: null };
  members.set(id, w);
  node.role.subscribe((r) => {
    const now = performance.now();
    if (r === "leader") {
      leaderChanges++;
      for (const p of ids) if (p !== id) w.lastSend.set(p, now);
    } else {
      for (const p of w.lastSend.keys()) silence(w, p, now);
      w.lastSend.clear();
    }
  });
  void (async () => {
    for await (const t of node.trace) if (t.type === "stepDown") stepDowns[t.reason] = (stepDowns[t.reason] ?? 0) + 1;
  })();
  void (async () => {
    for await (const c of node.committedFrom(1)) {
      w.kv.apply(c);
      if (c.kind !== "install" && w.kv.applied % every === 0) node.publishSnapshot({ throughIndex: w.kv.applied, state: w.kv.snapshot() });
    }
  })();
}

const value = "x".repeat(1024);
const keys = Math.max(1, stateKb);
let stop = false;
let writes = 0;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function client(c: number): Promise<void> {
  for (let i = c; !stop; i += clients) {
    const leader = [...members.values()].find((m) => m.node.role.get() === "leader");
    if (leader === undefined) {
      await sleep(10);
      continue;
    }
    try {
      await leader.node.propose(kvCommand({ op: "put", key: `k${i % keys}`, value }), null);
      writes++;
    } catch {
      await sleep(10);
    }
  }
}

const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const running = Array.from({ length: clients }, (_, c) => client(c));
await sleep(seconds * 1000);
stop = true;
const elapsed = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
loop.disable();
await Promise.race([Promise.all(running), sleep(2000)]);
const all = [...members.values()].flatMap((w) => w.compactions);
console.log(JSON.stringify({
  store,
  seconds: Math.round(elapsed),
  snapshotEvery: every,
  stateKb,
  slowSnapshotMs,
  compactions: all.length,
  longestCompactionMs: Math.round(Math.max(0, ...all.map((c) => c.end - c.start))),
  longestSilenceDuringCompactionMs: Math.round(longestDuringCompaction),
  longestSilenceMs: Math.round(longestOverall),
  longestLoopStallMs: Math.round(loop.max / 1e6),
  leaderships: leaderChanges,
  stepDowns,
  writesPerSec: Math.round(writes / elapsed),
  cpuSeconds: Math.round((cpu.user + cpu.system) / 1e4) / 100,
}));
for (const w of members.values()) await w.node.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
