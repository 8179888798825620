/**
 * The control log's two backends side by side (issue 18): the same three governed peers on (a) the embedded Raft —
 * three in-process members over the in-memory seam, each on its own segmented log store with fsync (`walRaftStorage`
 * in a temp dir) — and (b) a real 3-member etcd 3.4 on loopback (separate processes, fsync on, started here), each
 * peer reaching etcd through its own client. Both run in the same process run, alternately, on the same machine.
 *
 * Cells: control-act latency (`mint`; `prepare` + `activate`), one act in flight, measured from the call to the
 * proposing peer's local apply; and granted `claims.take` + `claims.release` pairs per second at concurrency 1 and 16.
 *
 *   npx -y pnpm@10 --filter @heddle/governed exec node bench/backends.ts
 *   HEDDLE_BENCH_OPS=500 HEDDLE_BENCH_ROUNDS=3 npx -y pnpm@10 --filter @heddle/governed exec node bench/backends.ts
 *
 * Prints a table with the etcd / Raft ratio per cell, then one JSON line per cell
 * `{"bench":"control-log-backend","backend":"raft"|"etcd",…}`. Note the asymmetry: our three Raft members share this
 * process's one event loop with the bench driver, while etcd's members are three processes of their own.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { AttachmentId, ReplicaId } from "@heddle/ledger";
import { walRaftStorage } from "../src/index.ts";
import type { GovernedHeddleNode } from "../src/index.ts";
import { EtcdCluster } from "../test/support/etcd-cluster.ts";
import { startBackend } from "../test/support/log-backends.ts";
import type { Backend, BackendName } from "../test/support/log-backends.ts";
import { rec } from "../test/support/governed-cluster.ts";

const OPS = Number(process.env.HEDDLE_BENCH_OPS ?? 200);
const ROUNDS = Number(process.env.HEDDLE_BENCH_ROUNDS ?? 1);

interface Cell {
  readonly backend: BackendName;
  readonly op: string;
  readonly concurrency: number;
  readonly ops: number;
  readonly failed: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
}

async function measure(backend: BackendName, op: string, n: number, concurrency: number, one: (i: number) => Promise<void>): Promise<Cell> {
  const lat: number[] = [];
  let failed = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) {
        const s = performance.now();
        try {
          await one(i);
          lat.push(performance.now() - s);
        } catch {
          failed++;
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  return { backend, op, concurrency, ops: lat.length, failed, perSecond: lat.length / seconds, p50: q(0.5), p95: q(0.95), p99: q(0.99) };
}

let tag = 0;
async function cells(b: Backend): Promise<Cell[]> {
  const gov: GovernedHeddleNode = b.members[0]!.gov;
  const T = { timeoutMs: 20_000 };
  const out: Cell[] = [];
  const run = `${b.name}${tag++}`;
  // warm-up
  for (let i = 0; i < 20; i++) await gov.mint(ReplicaId("m1"), 1n, T);
  out.push(await measure(b.name, "mint", OPS, 1, async () => void (await gov.mint(ReplicaId("m1"), 1n, T))));
  out.push(
    await measure(b.name, "prepare+activate", OPS, 1, async (i) => {
      await gov.prepare(rec(`${run}-e${i}`, "root", `${run}-c${i}`), T);
      await gov.activate(AttachmentId(`${run}-e${i}`), T);
    }),
  );
  for (const c of [1, 16]) {
    out.push(
      await measure(b.name, "take+release", OPS * (c === 1 ? 1 : 4), c, async (i) => {
        const holder = `${run}-h${c}-${i}`;
        const key = `${run}-k${c}-${i % 256}`;
        const t = await gov.claims.take({ holder, resources: [{ key, mode: "exclusive" }] }, T);
        if (t.kind !== "applied" || typeof t.claims !== "object" || !(t.claims as { ok: boolean }).ok) throw new Error("not granted");
        await gov.claims.release(holder, key, T);
      }),
    );
  }
  return out;
}

const started = new Date().toISOString();
const load0 = loadavg()[0]!;
const etcd = await EtcdCluster.start(3);
const results: Cell[] = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of (round % 2 === 0 ? ["raft", "etcd"] : ["etcd", "raft"]) as BackendName[]) {
      const dir = mkdtempSync(join(tmpdir(), "heddle-backend-bench-"));
      const b = await startBackend(name, { etcd, raftStorage: (id) => walRaftStorage(join(dir, id)) });
      try {
        await b.enrollAll();
        results.push(...(await cells(b)));
      } finally {
        await b.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
} finally {
  await etcd.stop();
}

const median = (xs: number[]): number => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : "—");
const keys = [...new Set(results.map((c) => `${c.op}|${c.concurrency}`))];
console.log(`\ncontrol log backends — 3 governed peers; Raft: in-process members on walRaftStorage (fsync); etcd 3.4: 3 members on loopback (fsync); ${started}`);
console.log(`load average at start ${load0.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}; ${OPS} acts per latency cell, ${ROUNDS} round(s), medians across rounds\n`);
console.log("| act | in flight | Raft acts/s | Raft p50 ms | Raft p99 ms | etcd acts/s | etcd p50 ms | etcd p99 ms | etcd/Raft acts/s |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const k of keys) {
  const [op, c] = k.split("|") as [string, string];
  const of = (b: BackendName) => results.filter((x) => x.backend === b && x.op === op && x.concurrency === Number(c));
  const r = of("raft");
  const e = of("etcd");
  const rs = median(r.map((x) => x.perSecond));
  const es = median(e.map((x) => x.perSecond));
  console.log(`| ${op} | ${c} | ${f(rs, 0)} | ${f(median(r.map((x) => x.p50)))} | ${f(median(r.map((x) => x.p99)))} | ${f(es, 0)} | ${f(median(e.map((x) => x.p50)))} | ${f(median(e.map((x) => x.p99)))} | ${f(es / rs, 3)} |`);
}
console.log("");
for (const c of results) console.log(JSON.stringify({ bench: "control-log-backend", ...c, members: 3, fsync: true, load: load0 }));
