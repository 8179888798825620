// The dashboard bench. A daemon in its own process (one static peer, loopback HTTP):
//  1. bytes on the websocket per ledger change — one viewer, one spend (reserve + complete) at a time with
//     a pause longer than the refresh interval, so each spend is one Yjs update: its size is the figure;
//  2. the spend path's latency (reserve + complete over HTTP) with 0 and with 50 dashboards connected (the
//     viewers in a third process), alternating A B A B; the dashboards must cost less than 10 %. Beside the
//     latency, the daemon's own CPU time per pair (its process CPU counter, read through /metrics before and
//     after each cell): on a machine shared with other work the latency mostly measures the neighbours, the
//     CPU per pair what the dashboards add to the daemon.
//   npx -y pnpm@10 --filter @heddle/daemon bench
//   HEDDLE_BENCH_SECONDS=3 HEDDLE_BENCH_VIEWERS=50 HEDDLE_BENCH_STORE=sqlite npx -y pnpm@10 --filter @heddle/daemon bench
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ApiError, HeddleClient } from "@heddle/client";
import { initCluster } from "../src/index.ts";
import { DASHBOARD_DEFAULTS } from "../src/dashboard.ts";
import { BenchViewer } from "./viewers.ts";

const SECONDS = Number(process.env["HEDDLE_BENCH_SECONDS"] ?? "5");
const VIEWERS = Number(process.env["HEDDLE_BENCH_VIEWERS"] ?? "50");
const STORES = (process.env["HEDDLE_BENCH_STORE"] ?? "memory,sqlite").split(",") as ("memory" | "sqlite")[];
const CONCURRENCY = (process.env["HEDDLE_BENCH_CONCURRENCY"] ?? "1,8").split(",").map(Number);
const ROUNDS = 2;
const SPENDS = 40;
const LEAF = "tenant-a";

function child(args: string[]): { proc: ChildProcess; lines: AsyncIterator<string> } {
  const proc = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  return { proc, lines };
}
async function line(c: { lines: AsyncIterator<string> }): Promise<string> {
  const r = await c.lines.next();
  if (r.done === true) throw new Error("child process ended");
  return r.value;
}
const stop = (p: ChildProcess, how: () => void) => new Promise<void>((ok) => (p.exitCode !== null ? ok() : (p.once("exit", () => ok()), how())));
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pairs(c: HeddleClient, concurrency: number, ms: number): Promise<{ pairsPerSec: number; p50: number; p99: number; n: number }> {
  const samples: number[] = [];
  const end = performance.now() + ms;
  const start = performance.now();
  const loop = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      let id: string;
      try {
        id = (await c.reserve(LEAF, 1n)).id;
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          await pause(5);
          continue;
        }
        throw e;
      }
      await c.complete(id, 1n);
      samples.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const s = Float64Array.from(samples).sort();
  const q = (x: number) => Math.round(s[Math.min(s.length - 1, Math.floor(x * s.length))]! * 1000) / 1000;
  return { pairsPerSec: Math.round(samples.length / ((performance.now() - start) / 1000)), p50: q(0.5), p99: q(0.99), n: samples.length };
}

async function metric(url: string, token: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return m === null ? Number.NaN : Number(m[1]);
}

const dir = mkdtempSync(join(tmpdir(), "heddle-dashboard-bench-"));
const kids: ChildProcess[] = [];
try {
  console.log(`heddle dashboard bench — ${new Date().toISOString()} — node ${process.version} — load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  console.log(`one static peer in its own process; loopback HTTP/1.1 keep-alive; refresh at most every ${DASHBOARD_DEFAULTS.minIntervalMs} ms; ${SECONDS} s per cell, ${ROUNDS} rounds A/B; ${VIEWERS} viewers in a separate process\n`);
  for (const store of STORES) {
    const [peer] = await initCluster({ dir: join(dir, store), peers: 1, mode: "static", supply: 1_000_000_000_000n, quantum: 1_000_000n, tree: `${LEAF}=1,tenant-b=1` });
    const d = child([fileURLToPath(new URL("./daemon-child.ts", import.meta.url)), peer!.config, store]);
    kids.push(d.proc);
    const url = await line(d);
    const token = readFileSync(join(peer!.dir, "token"), "utf8").trim();
    const c = new HeddleClient({ url, token });
    await c.demand({ leaf: LEAF, targetOutstanding: 10_000_000n, maximumUsefulGrant: 1_000_000n, leaseMs: 3_600_000 });
    while (BigInt(((await c.holdings(LEAF)) as { groups: { available: string }[] }).groups[0]!.available) < 1_000_000n) await pause(50);

    // 1. bytes per ledger change: demand withdrawn (only our spends change the ledger), one viewer
    await c.demand({ leaf: LEAF, targetOutstanding: 0n, maximumUsefulGrant: 0n });
    await pause(1_500);
    const v = new BenchViewer(url, token);
    await v.synced;
    const initial = v.bytes;
    await pause(DASHBOARD_DEFAULTS.refreshMs * 2);
    const sizes: number[] = [];
    for (let i = 0; i < SPENDS; i++) {
      const b0 = v.bytes;
      const r = await c.reserve(LEAF, 5n);
      await c.complete(r.id, 3n);
      await pause(DASHBOARD_DEFAULTS.minIntervalMs + 150);
      sizes.push(v.bytes - b0);
    }
    v.close();
    sizes.sort((a, b) => a - b);
    const mean = Math.round(sizes.reduce((a, x) => a + x, 0) / sizes.length);
    const docBytes = initial;
    console.log(`[${store}] websocket bytes per ledger change (one spend, one update): p50 ${sizes[sizes.length >> 1]} B, mean ${mean} B, max ${sizes[sizes.length - 1]} B over ${SPENDS} spends; whole document at sync ${docBytes} B`);
    console.log(JSON.stringify({ bench: "dashboard-bytes-per-change", store, p50Bytes: sizes[sizes.length >> 1], meanBytes: mean, maxBytes: sizes[sizes.length - 1], spends: SPENDS, syncBytes: docBytes }));

    // 2. the spend path with 0 and with VIEWERS dashboards
    await c.demand({ leaf: LEAF, targetOutstanding: 10_000_000n, maximumUsefulGrant: 1_000_000n, leaseMs: 3_600_000 });
    await pairs(c, 1, 1_000); // warm-up
    for (const n of CONCURRENCY) {
      const cells: Record<"0" | "N", { p50: number[]; p99: number[]; pps: number[]; cpu: number[]; n: number[] }> = { "0": { p50: [], p99: [], pps: [], cpu: [], n: [] }, N: { p50: [], p99: [], pps: [], cpu: [], n: [] } };
      const cpu = () => metric(url, token, "heddle_process_cpu_seconds_total");
      let bytesPerSec = 0;
      let updatesPerSec = 0;
      let refreshShare = 0;
      let refreshCpuMsPerSec = 0;
      let refreshCpuUsPerUpdate = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const ca0 = await cpu();
        const a = await pairs(c, n, SECONDS * 1000);
        cells["0"].cpu.push((await cpu()) - ca0), cells["0"].n.push(a.n);
        cells["0"].p50.push(a.p50), cells["0"].p99.push(a.p99), cells["0"].pps.push(a.pairsPerSec);
        const w = child([fileURLToPath(new URL("./viewers-child.ts", import.meta.url)), url, token, String(VIEWERS)]);
        kids.push(w.proc);
        if ((await line(w)) !== "ready") throw new Error("viewers did not sync");
        const u0 = await metric(url, token, "heddle_dashboard_updates_total");
        const f0 = await metric(url, token, "heddle_dashboard_refresh_seconds_total");
        const fc0 = await metric(url, token, "heddle_dashboard_refresh_cpu_seconds_total");
        w.proc.stdin!.write("report\n");
        const r0 = JSON.parse(await line(w)) as { bytes: number };
        const t0 = performance.now();
        const cb0 = await cpu();
        const b = await pairs(c, n, SECONDS * 1000);
        cells.N.cpu.push((await cpu()) - cb0), cells.N.n.push(b.n);
        w.proc.stdin!.write("report\n");
        const r1 = JSON.parse(await line(w)) as { bytes: number; open: number };
        const secs = (performance.now() - t0) / 1000;
        const u1 = await metric(url, token, "heddle_dashboard_updates_total");
        refreshShare = Math.round((((await metric(url, token, "heddle_dashboard_refresh_seconds_total")) - f0) / secs) * 10000) / 100;
        const fc = (await metric(url, token, "heddle_dashboard_refresh_cpu_seconds_total")) - fc0;
        refreshCpuMsPerSec = Math.round((fc / secs) * 10000) / 10;
        refreshCpuUsPerUpdate = Math.round((fc / Math.max(1, u1 - u0)) * 1e6);
        if (r1.open !== VIEWERS) throw new Error(`only ${r1.open} of ${VIEWERS} viewers stayed connected`);
        bytesPerSec = Math.round((r1.bytes - r0.bytes) / VIEWERS / secs);
        updatesPerSec = Math.round(((u1 - u0) / secs) * 10) / 10;
        await stop(w.proc, () => w.proc.stdin!.write("exit\n"));
        cells.N.p50.push(b.p50), cells.N.p99.push(b.p99), cells.N.pps.push(b.pairsPerSec);
      }
      const avg = (xs: number[]) => Math.round((xs.reduce((a, x) => a + x, 0) / xs.length) * 1000) / 1000;
      const p50a = avg(cells["0"].p50);
      const p50b = avg(cells.N.p50);
      const ppsA = avg(cells["0"].pps);
      const ppsB = avg(cells.N.pps);
      const cost = Math.round((p50b / p50a - 1) * 1000) / 10;
      const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);
      const cpuA = Math.round((sum(cells["0"].cpu) / sum(cells["0"].n)) * 1e7) / 10;
      const cpuB = Math.round((sum(cells.N.cpu) / sum(cells.N.n)) * 1e7) / 10;
      const cpuCost = Math.round((cpuB / cpuA - 1) * 1000) / 10;
      console.log(`[${store}] concurrency ${String(n).padStart(2)}   0 dashboards: p50 ${p50a.toFixed(3)} ms  p99 ${avg(cells["0"].p99).toFixed(3)} ms  ${ppsA} pairs/s  daemon CPU ${cpuA} µs/pair`);
      console.log(`[${store}] concurrency ${String(n).padStart(2)}  ${String(VIEWERS).padStart(2)} dashboards: p50 ${p50b.toFixed(3)} ms  p99 ${avg(cells.N.p99).toFixed(3)} ms  ${ppsB} pairs/s  daemon CPU ${cpuB} µs/pair   → p50 ${cost >= 0 ? "+" : ""}${cost} %, CPU per pair ${cpuCost >= 0 ? "+" : ""}${cpuCost} %, throughput ${Math.round((ppsB / ppsA - 1) * 1000) / 10} %; ${updatesPerSec} updates/s, ${bytesPerSec} B/s per dashboard; refreshing took ${refreshShare} % of the daemon's time (wall), ${refreshCpuMsPerSec} ms CPU per second, ${refreshCpuUsPerUpdate} µs CPU per update`);
      console.log(JSON.stringify({ bench: "dashboard-spend-path", store, concurrency: n, viewers: VIEWERS, p50MsWithout: p50a, p50MsWith: p50b, p99MsWithout: avg(cells["0"].p99), p99MsWith: avg(cells.N.p99), pairsPerSecWithout: ppsA, pairsPerSecWith: ppsB, p50CostPct: cost, cpuUsPerPairWithout: cpuA, cpuUsPerPairWith: cpuB, cpuCostPct: cpuCost, updatesPerSec, bytesPerSecPerViewer: bytesPerSec, refreshTimePct: refreshShare, refreshCpuMsPerSec, refreshCpuUsPerUpdate, seconds: SECONDS, rounds: ROUNDS }));
    }
    c.close();
    await stop(d.proc, () => d.proc.kill("SIGTERM"));
    console.log("");
  }
} finally {
  for (const k of kids) if (k.exitCode === null) k.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}
