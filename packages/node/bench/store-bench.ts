/**
 * Throughput of reserve + complete on one node's reservation table (node.md §8, §9): with the SQLite
 * store (WAL, synchronous=FULL: an fsync per commit, two commits per pair) and with the in-memory store.
 * Run: `npx -y pnpm@10 --filter @heddle/node exec node bench/store-bench.ts` (from /work/main).
 * `HEDDLE_BENCH_PAIRS` sets the pairs per store (default 2 000 for SQLite, 20 000 in memory);
 * `HEDDLE_BENCH_DIR` the directory of the SQLite file (default the OS temp dir).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, Rational, ReplicaId, Weight, type MutationResult } from "@heddle/ledger";
import { memoryStore } from "../src/memory-store.ts";
import { ReservationTable } from "../src/reservation-table.ts";
import { sqliteStore } from "../src/sqlite-store.ts";
import { patchBytes, type HeddleStore, type StoreTx } from "../src/store.ts";

const SELF = ReplicaId("bench");
const LEAF = GroupId("tenant-a/interactive");

function must(r: MutationResult): EntitlementLedger {
  if (!r.ok) throw new Error(r.refusal.message);
  return r.patch;
}

/** Supply 10^15 at the root, delegated down root → tenant-a → interactive. */
function base(): EntitlementLedger {
  let l = EntitlementLedger.bootstrap(GroupId("root"), new Map([[SELF, 1_000_000_000_000_000n]]), "bench");
  const steps: ((l: EntitlementLedger) => MutationResult)[] = [
    (x) => x.prepare({ id: AttachmentId("e-a"), parent: GroupId("root"), child: GroupId("tenant-a"), weight: Weight.ONE }),
    (x) => x.activate(AttachmentId("e-a")),
    (x) => x.prepare({ id: AttachmentId("e-ai"), parent: GroupId("tenant-a"), child: LEAF, weight: Weight.of(3n) }),
    (x) => x.activate(AttachmentId("e-ai")),
    (x) => x.seat(AttachmentId("e-a"), Rational.ZERO),
    (x) => x.seat(AttachmentId("e-ai"), Rational.ZERO),
    (x) => x.delegate(SELF, AttachmentId("e-a"), 1_000_000_000_000_000n),
    (x) => x.delegate(SELF, AttachmentId("e-ai"), 1_000_000_000_000_000n),
  ];
  for (const s of steps) l = l.join(must(s(l)));
  return l;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function run(name: string, store: HeddleStore, pairs: number): void {
  const { epoch } = store.boot(SELF, "bench-genesis");
  const state = new LedgerReplica(base());
  let published = 0;
  const commitMs: number[] = [];
  const table = new ReservationTable({ self: SELF, epoch });
  const commit = (tx: StoreTx) => {
    const t = performance.now();
    store.commit(tx);
    commitMs.push(performance.now() - t);
  };
  const t0 = performance.now();
  for (let i = 0; i < pairs; i++) {
    // The node's order: plan, commit, install, publish.
    const r = table.reserve(state, LEAF, 10n, 0);
    if (!r.ok) throw new Error(r.refusal.kind);
    commit(r.effect.transaction);
    table.install(r.effect);
    const c = table.complete(state, r.id, 7n); // charges the replica in place (the node wraps this in a transaction)
    if (!c.ok || c.outcome !== "charged" || c.effect.patch === null) throw new Error("complete failed");
    commit({ ...c.effect.transaction, patches: [{ origin: "own", body: patchBytes(c.effect.patch) }] });
    table.install(c.effect);
    published++;
  }
  const secs = (performance.now() - t0) / 1000;
  const spent = state.edge(AttachmentId("e-ai"))!.spent;
  if (spent !== 7n * BigInt(pairs) || published !== pairs) throw new Error(`bench run is wrong: spent ${spent}, published ${published}`);
  store.close();
  commitMs.sort((a, b) => a - b);
  const fmt = (x: number) => x.toFixed(3);
  console.log(
    `${name.padEnd(26)} pairs ${String(pairs).padStart(6)}  ${(pairs / secs).toFixed(0).padStart(7)} reserve+complete/s  ` +
      `${((2 * pairs) / secs).toFixed(0).padStart(7)} commits/s  commit ms p50 ${fmt(percentile(commitMs, 0.5))} p99 ${fmt(percentile(commitMs, 0.99))}`,
  );
}

const dir = mkdtempSync(join(process.env.HEDDLE_BENCH_DIR ?? tmpdir(), "heddle-store-bench-"));
try {
  const env = process.env.HEDDLE_BENCH_PAIRS === undefined ? null : Number(process.env.HEDDLE_BENCH_PAIRS);
  console.log(`reservation table: reserve(leaf, 10) + complete(id, 7), one node, node ${process.version}`);
  run("sqlite (WAL, sync=FULL)", sqliteStore(join(dir, "bench.db")), env ?? 2_000);
  run("memory", memoryStore(), env ?? 20_000);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
