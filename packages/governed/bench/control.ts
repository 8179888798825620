/**
 * The control plane's own figures (governed.md §5.5 "Control act latency", §5.4 C4(b); issue 11): a 3-voter
 * cluster of governed peers as separate OS processes on 127.0.0.1 over libp2p, Raft on SQLite `synchronous=FULL`
 * in a worker thread (fsync on), the data plane on SQLite too.
 *
 * - control-act latency, one act in flight, measured inside the proposing process from the call to its local
 *   apply: `mint`, and `prepare` + `activate` of a new edge as one reshape step; on the leader and on a follower;
 * - granted claims: `claims.take` + `claims.release` pairs per second at concurrency 1 and 64 (leader);
 * - C4(b): reserve + complete pairs per second on one peer over the run, without and with concurrent control
 *   traffic (one `enroll(self)` — a noop act through Raft — every 20 ms), and their ratio (spec: ≥ 0.90).
 *
 *   npx -y pnpm@10 --filter @heddle/governed exec node bench/control.ts
 *   HEDDLE_BENCH_OPS=400 HEDDLE_BENCH_SECONDS=10 npx -y pnpm@10 --filter @heddle/governed exec node bench/control.ts
 *
 * Prints a table, then one JSON line per cell.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { GovProcessCluster, sleep } from "../test/support/governed-processes.ts";
import type { GovProcess, Reply } from "../test/support/governed-processes.ts";

const OPS = Number(process.env.HEDDLE_BENCH_OPS ?? 200);
const SECONDS = Number(process.env.HEDDLE_BENCH_SECONDS ?? 5);

interface Row {
  readonly what: string;
  readonly where: "leader" | "follower";
  readonly concurrency: number;
  readonly ops: number;
  readonly failed: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
}

function row(what: string, where: Row["where"], concurrency: number, r: Reply): Row {
  const lat = [...(r.lat as number[])].sort((a, b) => a - b);
  const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  return { what, where, concurrency, ops: lat.length, failed: r.failed as number, perSecond: lat.length / (r.seconds as number), p50: q(0.5), p95: q(0.95), p99: q(0.99) };
}

async function bench(m: GovProcess, kind: string, n: number, concurrency: number): Promise<Reply> {
  // a short warm-up of the same kind, then the measured run
  await m.ask({ cmd: "bench", kind, n: Math.min(20, n), concurrency }, 120_000);
  return m.ask({ cmd: "bench", kind, n, concurrency }, 600_000);
}

const dir = mkdtempSync(join(tmpdir(), "heddle-control-bench-"));
const c = await GovProcessCluster.create(dir, 3, 0);
const started = new Date().toISOString();
const load0 = loadavg()[0]!;
try {
  for (let i = 0; i < 3; i++) await c.start(i);
  await c.enrolled(60_000);
  const leader = await c.leader();
  const follower = c.all().find((m) => m !== leader)!;
  const rows: Row[] = [];
  for (const [where, m] of [["leader", leader], ["follower", follower]] as const) {
    rows.push(row("mint", where, 1, await bench(m, "mint", OPS, 1)));
    rows.push(row("prepare+activate", where, 1, await bench(m, "reshape", OPS, 1)));
  }
  rows.push(row("take+release", "leader", 1, await bench(leader, "claims", OPS, 1)));
  rows.push(row("take+release", "leader", 64, await bench(leader, "claims", OPS * 10, 64)));

  // C4(b): the spend path with and without control traffic
  const spender = follower;
  const setup = await spender.ask({ cmd: "spend-setup" }, 120_000);
  if (setup.ok !== true) throw new Error(`spend setup failed: ${JSON.stringify(setup)}`);
  await sleep(500);
  const without = await spender.ask({ cmd: "spend", seconds: SECONDS, control: false }, SECONDS * 1000 + 60_000);
  const withControl = await spender.ask({ cmd: "spend", seconds: SECONDS, control: true }, SECONDS * 1000 + 60_000);
  const pairsWithout = (without.pairs as number) / (without.seconds as number);
  const pairsWith = (withControl.pairs as number) / (withControl.seconds as number);

  console.log(`\ngoverned control plane — 3 voters as OS processes, libp2p on 127.0.0.1, SQLite synchronous=FULL (fsync on), ${started}`);
  console.log(`load average at start ${load0.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}; ${OPS} acts per latency cell\n`);
  const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : "—");
  console.log("| act | on | in flight | acts | failed | acts/s | p50 ms | p95 ms | p99 ms |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.what} | ${r.where} | ${r.concurrency} | ${r.ops} | ${r.failed} | ${f(r.perSecond, 0)} | ${f(r.p50)} | ${f(r.p95)} | ${f(r.p99)} |`);
  console.log(`\nspend path (C4(b)) on a follower: reserve+complete ${f(pairsWithout, 0)} pairs/s without control traffic, ${f(pairsWith, 0)} with ${withControl.control as number} enroll acts alongside — ratio ${f(pairsWith / pairsWithout, 3)} (spec: ≥ 0.90)\n`);
  for (const r of rows) console.log(JSON.stringify({ bench: "governed-control", ...r, voters: 3, fsync: true, load: load0 }));
  console.log(JSON.stringify({ bench: "governed-spend-path", voters: 3, seconds: SECONDS, pairsPerSecondWithout: pairsWithout, pairsPerSecondWithControl: pairsWith, controlActs: withControl.control, ratio: pairsWith / pairsWithout, load: load0 }));
} finally {
  c.stopAll();
  rmSync(dir, { recursive: true, force: true });
}
