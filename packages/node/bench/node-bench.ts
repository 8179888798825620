/**
 * heddleStatic benchmark (node.md §7–9): throughput of reserve + complete on one node with the SQLite store
 * (WAL, synchronous=FULL — an fsync per commit, two commits per pair) and with the in-memory store, and the
 * time of one `schedule(root)` round at 100 and 1 000 children (one quantum to every child per round; the
 * round includes its single SQLite commit). Run from /work/main:
 *   npx -y pnpm@10 --filter @heddle/node bench node
 * `HEDDLE_BENCH_PAIRS` sets the SQLite pairs (default 1 000; the memory store runs 10×); `HEDDLE_BENCH_DIR`
 * the directory of the SQLite files (default the OS temp dir).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { AttachmentId, GroupId, ReplicaId, Weight, type AttachmentRecord } from "@heddle/ledger";
import { heddleStatic } from "../src/heddle-static.ts";
import { MemoryNetwork } from "@heddle/seam";
import { memoryStore } from "../src/memory-store.ts";
import { sqliteStore } from "../src/sqlite-store.ts";
import type { HeddleStore } from "../src/store.ts";
import { seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import type { HeddleNode } from "../src/heddle-node.ts";

const SELF = ReplicaId("bench");
const PAIRS = Number(process.env.HEDDLE_BENCH_PAIRS ?? 1_000);
const dir = mkdtempSync(join(process.env.HEDDLE_BENCH_DIR ?? tmpdir(), "heddle-node-bench-"));

function start(store: HeddleStore, topology: AttachmentRecord[], maxGrantsPerSchedule: number, quantum: bigint, supply: bigint): HeddleNode {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(1) });
  return heddleStatic({
    seam: net.join(SELF),
    self: SELF,
    root: GroupId("root"),
    supply: new Map([[SELF, supply]]),
    topology,
    config: { policy: { quantum }, maxHoldingsPerPeer: supply, timers, random: seededRandom(2), store, maxGrantsPerSchedule },
  });
}

const edge = (parent: string, child: string, w = 1n): AttachmentRecord => ({ id: AttachmentId(`${parent}→${child}`), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(w) });

async function reserveComplete(label: string, store: HeddleStore, pairs: number): Promise<void> {
  const node = start(store, [edge("root", "tenant-a", 3n), edge("root", "tenant-b"), edge("tenant-a", "interactive", 3n), edge("tenant-a", "batch")], 10, 1_000_000_000n, 1_000_000_000_000_000n);
  for (const id of ["root→tenant-a", "tenant-a→interactive"]) node.advertise(AttachmentId(id), { targetOutstanding: 1_000_000_000n, maximumUsefulGrant: 1_000_000_000n });
  node.schedule(GroupId("root"));
  node.schedule(GroupId("tenant-a"));
  const leaf = GroupId("interactive");
  if (node.available(leaf) < BigInt(pairs) * 10n) throw new Error(`not enough holdings at the leaf: ${node.available(leaf)}`);
  const t0 = performance.now();
  for (let i = 0; i < pairs; i++) {
    const r = node.reserve(leaf, 10n);
    if (!r.ok) throw new Error(r.refusal.kind);
    const c = node.complete(r.id, 7n);
    if (!c.ok) throw new Error(c.refusal.kind);
  }
  const ms = performance.now() - t0;
  const spent = node.ledger.get().edge(AttachmentId("tenant-a→interactive"))!.spent;
  if (spent !== BigInt(pairs) * 7n) throw new Error(`spent ${spent}, expected ${BigInt(pairs) * 7n}`);
  console.log(`reserve+complete  ${label.padEnd(28)} ${String(pairs).padStart(6)} pairs  ${(pairs / (ms / 1000)).toFixed(0).padStart(7)} pairs/s  (${((ms * 1000) / pairs).toFixed(0)} µs per pair, ${node.metrics().commits} commits, ${node.metrics().compactions} compactions)`);
  await node.shutdown();
}

async function scheduleRound(children: number): Promise<void> {
  const topology = Array.from({ length: children }, (_, i) => edge("root", `c${String(i).padStart(4, "0")}`, BigInt(1 + (i % 8))));
  // Supply 10^7: enough for every round; the policy's incremental engine proves such rounds overflow-free
  // (with holdings near 2^50 it declines and allocate runs the literal O(k)-per-grant loop).
  const node = start(sqliteStore(join(dir, `schedule-${children}.db`)), topology, children, 10n, 10_000_000n);
  for (const r of topology) node.advertise(r.id, { targetOutstanding: 1_000_000_000n, maximumUsefulGrant: 10n });
  const t0 = performance.now();
  const first = node.schedule(GroupId("root"));
  const firstMs = performance.now() - t0;
  const times: number[] = [];
  let grants = 0;
  for (let k = 0; k < 7; k++) {
    const t = performance.now();
    grants = node.schedule(GroupId("root")).grants.length;
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(
    `schedule(root)    children=${String(children).padStart(5)}  first round (seats all + ${first.grants.length} grants) ${firstMs.toFixed(1).padStart(7)} ms   ` +
      `later rounds (${grants} grants, SQLite commit included) median ${times[3]!.toFixed(1)} ms  min ${times[0]!.toFixed(1)} ms  max ${times[6]!.toFixed(1)} ms`,
  );
  await node.shutdown();
}

console.log(`heddle node benchmark (heddleStatic) — ${new Date().toISOString()} — node ${process.version}`);
try {
  await reserveComplete("SQLite (WAL, synchronous=FULL)", sqliteStore(join(dir, "rc.db")), PAIRS);
  await reserveComplete("memory store", memoryStore(), PAIRS * 10);
  await scheduleRound(100);
  await scheduleRound(1_000);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
