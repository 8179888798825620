// The soak (issue 17): 5 daemons (`heddle start`, static mode, SQLite stores with fsync on) on loopback under
// steady reserve + complete load for 10 minutes. Every few seconds it reads each daemon's /metrics (resident
// memory, V8 heap used, the event loop's longest delay since the previous read) and the client's latency of
// every pair, then prints a summary with a verdict and writes an SVG plot of memory and latency over time.
//   npx -y pnpm@10 --filter @heddle/cli soak                                  (10 min, writes bench/soak.svg)
//   HEDDLE_SOAK_MINUTES=2 HEDDLE_SOAK_RATE=20 npx -y pnpm@10 --filter @heddle/cli soak
//   HEDDLE_SOAK_DIAG=/tmp/soak.csv …   also writes every daemon's memory detail per sample (RSS anon/file, V8 heap
//   spaces, external, threads, WAL and database bytes, event-loop thread CPU and run-queue wait, commit buckets)
// Pass: after the warm-up (the first fifth of the run, at least 1 min unless the run is shorter) the median RSS
// and the heap floor (the lowest heap-used reading: what survives collection, not the sawtooth between
// collections) of the run's last fifth are within 10 % of the fifth right after the warm-up, on every daemon; no
// event-loop delay over 1 s anywhere; the p99 of the last window is at most 2× the first window's after the
// warm-up. Exit status 0 iff it passed.
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ApiError, HeddleClient } from "@heddle/client";
import { initCluster } from "@heddle/daemon";

const MINUTES = Number(process.env["HEDDLE_SOAK_MINUTES"] ?? "10");
/** Pairs per second offered to each daemon (steady, paced; not a maximum-throughput run). */
const RATE = Number(process.env["HEDDLE_SOAK_RATE"] ?? "40");
const PEERS = Number(process.env["HEDDLE_SOAK_PEERS"] ?? "5");
const SAMPLE_MS = 5_000;
const WINDOW_MS = 30_000;
/** Optional: a CSV of per-daemon memory detail every sample (RSS split anon/file, external, threads, WAL bytes). */
const DIAG_PATH = process.env["HEDDLE_SOAK_DIAG"];
const SVG_PATH = process.env["HEDDLE_SOAK_SVG"] ?? fileURLToPath(new URL("./soak.svg", import.meta.url));
const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
/**
 * Every daemon serves one shared leaf, as the demo's peers do: entitlement is pooled, and the scheduler on each
 * peer grants small quanta as its own pocket runs low. (A leaf per daemon does not work today: `schedule(root)`
 * on one peer fills every demanding leaf into its own pocket — the daemon README's known limit.)
 */
const LEAF = "work";
const QUANTUM = 50n;
const TARGET = 500n;

if (!(MINUTES > 0) || !(RATE > 0) || !Number.isInteger(PEERS) || PEERS < 2) {
  console.error("HEDDLE_SOAK_MINUTES and HEDDLE_SOAK_RATE must be positive numbers, HEDDLE_SOAK_PEERS an integer ≥ 2");
  process.exit(2);
}

interface Sample {
  readonly t: number;
  readonly peer: number;
  readonly rssMb: number;
  readonly heapMb: number;
  readonly lagMaxS: number;
  /** The daemon's event-loop thread: cumulative ms on a CPU and ms runnable but waiting for one (Linux; NaN elsewhere). */
  readonly loopCpuMs: number;
  readonly loopWaitMs: number;
  /** Store commits so far that took over 1 s: SQLite's fsync runs on the event-loop thread. */
  readonly slowCommits: number;
}
interface Window {
  readonly t: number;
  readonly pairs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly refused: number;
}

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m").exec(text);
  return m === null ? Number.NaN : Number(m[1]);
}

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function median(xs: number[]): number {
  return quantile([...xs].sort((a, b) => a - b), 0.5);
}

const dir = mkdtempSync(join(tmpdir(), "heddle-soak-"));
const procs: ChildProcess[] = [];
const stopAll = async () => {
  await Promise.all(
    procs.map(
      (p) =>
        new Promise<void>((res) => {
          if (p.exitCode !== null) return res();
          const t = setTimeout(() => p.kill("SIGKILL"), 10_000);
          p.once("exit", () => (clearTimeout(t), res()));
          p.kill("SIGTERM");
        }),
    ),
  );
};
process.once("SIGINT", () => void stopAll().then(() => process.exit(130)));

try {
  console.log(`heddle soak — ${new Date().toISOString()} — node ${process.version} — load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  console.log(`${PEERS} daemons (heddle start, static mode, SQLite fsync on), ${RATE} reserve+complete pairs/s offered to each, ${MINUTES} min\n`);
  const peers = await initCluster({ dir: join(dir, "cluster"), peers: PEERS, mode: "static", supply: 1_000_000_000_000n, quantum: QUANTUM, tree: `${LEAF}=1` });
  const exits: string[] = [];
  if (DIAG_PATH !== undefined) writeFileSync(DIAG_PATH, "t,peer,rss_mb,anon_mb,file_mb,shmem_mb,heap_used_mb,heap_total_mb,external_mb,new_mb,old_mb,code_mb,lo_mb,threads,wal_mb,db_mb,loop_cpu_ms,loop_runq_wait_ms,commits,commits_le_250ms,commits_le_1s,loop_delay_max_ms\n");
  for (const p of peers) {
    const child = spawn(process.execPath, [MAIN, "start", "--config", p.config, "--log-format", "json", "--log-level", "warn"], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr!.on("data", (b: Buffer) => void (err = (err + b.toString()).slice(-4_000)));
    child.once("exit", (code, sig) => exits.push(`peer ${p.index} exited (${code ?? sig}): ${err.trim().split("\n").slice(-3).join(" | ")}`));
    procs.push(child);
  }
  const clients = peers.map((p) => new HeddleClient({ url: p.apiUrl, token: readFileSync(join(p.dir, "token"), "utf8").trim() }));
  const tokens = peers.map((p) => readFileSync(join(p.dir, "token"), "utf8").trim());
  for (const [i, c] of clients.entries()) {
    const deadline = Date.now() + 180_000; // generous: the machine may be shared and loaded
    for (;;) {
      try {
        await c.status();
        break;
      } catch (e) {
        if (Date.now() > deadline || exits.length > 0) throw new Error(`peer ${i} did not come up: ${exits.join("; ") || String(e)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await c.demand({ leaf: LEAF, targetOutstanding: TARGET, maximumUsefulGrant: QUANTUM, leaseMs: (MINUTES + 10) * 60_000 });
  }
  console.log(`all ${PEERS} daemons up with standing demand at ${LEAF}; load starts\n`);

  const start = performance.now();
  const end = start + MINUTES * 60_000;
  const samples: Sample[] = [];
  const windows: Window[] = [];
  let pending: number[] = [];
  let refused = 0;
  let errors = 0;
  // Paced load: one loop per daemon issuing a pair every 1/RATE s (a pair that takes longer delays the next).
  const load = async (c: HeddleClient) => {
    const gap = 1_000 / RATE;
    let next = performance.now();
    while (performance.now() < end && exits.length === 0) {
      next += gap;
      const t0 = performance.now();
      try {
        const { id } = await c.reserve(LEAF, "1");
        await c.complete(id, "1");
        pending.push(performance.now() - t0);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          refused++; // `insufficient`: this peer's pocket is empty until its scheduler's next round
          await new Promise((r) => setTimeout(r, 20));
        } else errors++;
      }
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      else next = performance.now();
    }
  };
  const scrape = async () => {
    const t = (performance.now() - start) / 1000;
    await Promise.all(
      peers.map(async (p, i) => {
        try {
          const r = await fetch(`${p.apiUrl}/metrics`, { headers: { authorization: `Bearer ${tokens[i]}` } });
          const text = await r.text();
          samples.push({
            t,
            peer: i,
            rssMb: metric(text, "heddle_process_resident_memory_bytes") / 2 ** 20,
            heapMb: metric(text, "heddle_nodejs_heap_size_used_bytes") / 2 ** 20,
            lagMaxS: metric(text, "heddle_nodejs_eventloop_lag_max_seconds"),
            ...loopSched(procs[i]!.pid!),
            slowCommits: Number(commitCount(text, "+Inf")) - Number(commitCount(text, "1")),
          });
          if (DIAG_PATH !== undefined) appendFileSync(DIAG_PATH, `${diag(t, i, text, procs[i]!.pid!, join(p.dir, "store"))}\n`);
        } catch {
          errors++;
        }
      }),
    );
  };
  let lastWindow = start;
  const closeWindow = () => {
    const now = performance.now();
    const xs = pending.sort((a, b) => a - b);
    pending = [];
    windows.push({ t: (now - start) / 1000, pairs: xs.length, p50Ms: quantile(xs, 0.5), p99Ms: quantile(xs, 0.99), refused });
    refused = 0;
    lastWindow = now;
    const w = windows[windows.length - 1]!;
    const mem = samples.filter((s) => s.t >= w.t - WINDOW_MS / 1000);
    console.log(
      `t=${w.t.toFixed(0).padStart(4)}s  ${String(w.pairs).padStart(6)} pairs  ${String(w.refused).padStart(5)} refused  p50 ${w.p50Ms.toFixed(2).padStart(6)} ms  p99 ${w.p99Ms.toFixed(2).padStart(7)} ms  ` +
        `rss ${Math.max(...mem.map((s) => s.rssMb)).toFixed(0)} MB max  heap ${Math.max(...mem.map((s) => s.heapMb)).toFixed(0)} MB max  loop delay ${(Math.max(...mem.map((s) => s.lagMaxS)) * 1000).toFixed(0)} ms max  load ${loadavg()[0]!.toFixed(2)}`,
    );
  };
  const ticker = setInterval(() => {
    void scrape();
    if (performance.now() - lastWindow >= WINDOW_MS - 1) closeWindow();
  }, SAMPLE_MS);
  await scrape();
  await Promise.all(clients.map(load));
  clearInterval(ticker);
  await scrape();
  closeWindow();
  for (const c of clients) c.close();
  if (exits.length > 0) throw new Error(`a daemon stopped during the soak: ${exits.join("; ")}`);

  // ---- verdict ----
  const total = (end - start) / 1000;
  const warm = Math.min(Math.max(60, total / 5), total / 2);
  const fifth = (total - warm) / 5;
  const early = (s: { t: number }) => s.t >= warm && s.t < warm + fifth;
  const late = (s: { t: number }) => s.t >= total - fifth;
  const checks: { what: string; ok: boolean; detail: string }[] = [];
  for (let i = 0; i < PEERS; i++) {
    const mine = samples.filter((s) => s.peer === i);
    for (const k of ["rssMb", "heapMb"] as const) {
      const stat = k === "rssMb" ? median : (xs: number[]) => Math.min(...xs);
      const a = stat(mine.filter(early).map((s) => s[k]));
      const b = stat(mine.filter(late).map((s) => s[k]));
      const growth = (b - a) / a;
      checks.push({ what: `peer ${i} ${k === "rssMb" ? "RSS (median)" : "heap floor"} flat after warm-up`, ok: growth < 0.1, detail: `${a.toFixed(1)} → ${b.toFixed(1)} MB (${(growth * 100).toFixed(1)} %)` });
    }
  }
  const lagMax = Math.max(...samples.map((s) => (Number.isNaN(s.lagMaxS) ? 0 : s.lagMaxS)));
  // Context for a delay (not part of the verdict): how long the event-loop threads waited for a CPU, per run
  // and in the 5-s interval that holds the longest delay — a loaded machine shows up here, a stall of the
  // daemon's own (a long synchronous step) does not.
  const worst = samples.reduce<Sample | undefined>((a, s) => (a === undefined || (s.lagMaxS || 0) > (a.lagMaxS || 0) ? s : a), undefined);
  const before = worst === undefined ? undefined : samples.filter((s) => s.peer === worst.peer && s.t < worst.t).at(-1);
  const waitShare = (() => {
    let wait = 0;
    let wall = 0;
    for (let i = 0; i < PEERS; i++) {
      const mine = samples.filter((s) => s.peer === i && s.t >= warm && Number.isFinite(s.loopWaitMs));
      if (mine.length < 2) continue;
      wait += mine.at(-1)!.loopWaitMs - mine[0]!.loopWaitMs;
      wall += (mine.at(-1)!.t - mine[0]!.t) * 1000;
    }
    return wall > 0 ? wait / wall : Number.NaN;
  })();
  const starvedThen =
    worst !== undefined && before !== undefined && Number.isFinite(worst.loopWaitMs)
      ? ` (peer ${worst.peer}, t=${worst.t.toFixed(0)} s); in the 5 s before it, its loop thread waited ${(worst.loopWaitMs - before.loopWaitMs).toFixed(0)} ms for a CPU and ran ${(worst.loopCpuMs - before.loopCpuMs).toFixed(0)} ms`
      : "";
  checks.push({ what: "no event-loop delay over 1 s on any daemon", ok: lagMax <= 1, detail: `longest ${(lagMax * 1000).toFixed(0)} ms${starvedThen}` });
  const afterWarm = windows.filter((w) => w.t > warm && w.pairs > 0);
  const first = afterWarm[0];
  const last = afterWarm[afterWarm.length - 1];
  checks.push({
    what: "p99 of reserve+complete stable (last window ≤ 2× the first after warm-up)",
    ok: first !== undefined && last !== undefined && last.p99Ms <= 2 * first.p99Ms,
    detail: first === undefined || last === undefined ? "no windows" : `${first.p99Ms.toFixed(2)} → ${last.p99Ms.toFixed(2)} ms (worst window ${Math.max(...afterWarm.map((w) => w.p99Ms)).toFixed(2)} ms)`,
  });
  checks.push({ what: "no failed requests (other than 409 refusals)", ok: errors === 0, detail: `${errors} failed` });
  const pairs = windows.reduce((a, w) => a + w.pairs, 0);
  const refusedTotal = windows.reduce((a, w) => a + w.refused, 0);
  console.log(`\n${pairs} pairs (${refusedTotal} reserves refused insufficient, retried) in ${total.toFixed(0)} s (${(pairs / total).toFixed(0)}/s over ${PEERS} daemons), warm-up ${warm.toFixed(0)} s, load average now ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  const slow = [...Array(PEERS).keys()].map((i) => Math.max(0, ...samples.filter((s) => s.peer === i && Number.isFinite(s.slowCommits)).map((s) => s.slowCommits)));
  console.log(`store commits over 1 s (fsync, on the event-loop thread), per daemon: ${slow.join(", ")}`);
  if (Number.isFinite(waitShare)) console.log(`after warm-up the daemons' event-loop threads waited for a CPU ${(waitShare * 100).toFixed(0)} % of the wall time (runnable, not running: /proc/PID/schedstat)`);
  for (const c of checks) console.log(`  ${c.ok ? "✓" : "✗"} ${c.what}: ${c.detail}`);
  writeFileSync(SVG_PATH, plot(samples, windows, warm, total));
  console.log(`\nplot: ${SVG_PATH}`);
  const ok = checks.every((c) => c.ok);
  console.log(ok ? "soak passed" : "soak FAILED");
  console.log(JSON.stringify({ bench: "soak", peers: PEERS, minutes: MINUTES, ratePerPeer: RATE, pairs, lagMaxMs: Math.round(lagMax * 1000), loopRunQueueWaitShare: Number.isFinite(waitShare) ? Number(waitShare.toFixed(3)) : null, firstP99Ms: first?.p99Ms, lastP99Ms: last?.p99Ms, passed: ok }));
  process.exitCode = ok ? 0 : 1;
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}

/** The committed size of one V8 heap space (prom-client's `nodejs_heap_space_size_total_bytes{space=…}`). */
function spaceTotal(text: string, space: string): number {
  const m = new RegExp(`^heddle_nodejs_heap_space_size_total_bytes\\{space="${space}"\\} ([0-9.eE+-]+)$`, "m").exec(text);
  return m === null ? Number.NaN : Number(m[1]);
}

/** One CSV row of memory detail for peer `i`: where its resident memory is (anon vs file), external, WAL bytes. */
function diag(t: number, i: number, text: string, pid: number, storeDir: string): string {
  let status = "";
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    /* not Linux, or exited */
  }
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? Number.NaN) / 1024;
  let wal = 0;
  let db = 0;
  try {
    for (const f of readdirSync(storeDir)) {
      const size = statSync(join(storeDir, f)).size;
      if (f.endsWith("-wal")) wal += size;
      else if (!f.endsWith("-shm")) db += size;
    }
  } catch {
    /* no store yet */
  }
  const mb = (n: number) => (n / 2 ** 20).toFixed(2);
  return [
    t.toFixed(1),
    i,
    kb("VmRSS").toFixed(1),
    kb("RssAnon").toFixed(1),
    kb("RssFile").toFixed(1),
    kb("RssShmem").toFixed(1),
    mb(metric(text, "heddle_nodejs_heap_size_used_bytes")),
    mb(metric(text, "heddle_nodejs_heap_size_total_bytes")),
    mb(metric(text, "heddle_nodejs_external_memory_bytes")),
    ...["new", "old", "code", "large_object"].map((space) => mb(spaceTotal(text, space))),
    /^Threads:\s+(\d+)/m.exec(status)?.[1] ?? "",
    mb(wal),
    mb(db),
    // the event-loop thread's CPU time and time spent runnable but waiting for a CPU (ns, cumulative): a loop
    // delay with a matching run-queue wait is the machine starving the daemon, not the daemon stalling
    ...schedstat(pid),
    commitCount(text, "+Inf"),
    commitCount(text, "0.25"),
    commitCount(text, "1"),
    (metric(text, "heddle_nodejs_eventloop_lag_max_seconds") * 1000).toFixed(0),
  ].join(",");
}

function loopSched(pid: number): { loopCpuMs: number; loopWaitMs: number } {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, "utf8").trim().split(" ");
    return { loopCpuMs: Number(run) / 1e6, loopWaitMs: Number(wait) / 1e6 };
  } catch {
    return { loopCpuMs: Number.NaN, loopWaitMs: Number.NaN };
  }
}

function schedstat(pid: number): string[] {
  const { loopCpuMs, loopWaitMs } = loopSched(pid);
  return [loopCpuMs.toFixed(0), loopWaitMs.toFixed(0)];
}

/** Store commits (outcome ok) that took at most `le` seconds, cumulative. */
function commitCount(text: string, le: string): string {
  const m = new RegExp(`^heddle_store_commit_seconds_bucket\\{(?=[^}]*le="${le.replace("+", "\\+")}")(?=[^}]*outcome="ok")[^}]*\\} ([0-9.eE+-]+)$`, "m").exec(text);
  return m?.[1] ?? "";
}

/** Three stacked panels over time: RSS and heap per daemon (MB), and the pairs' p50/p99 per window (ms). */
function plot(samples: Sample[], windows: Window[], warm: number, total: number): string {
  const W = 900;
  const PH = 190;
  const L = 60;
  const R = 20;
  const colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  const x = (t: number) => L + (t / total) * (W - L - R);
  const out: string[] = [];
  const panel = (row: number, title: string, unit: string, series: { label: string; color: string; pts: [number, number][] }[]) => {
    const top = 30 + row * (PH + 40);
    const ys = series.flatMap((s) => s.pts.map((p) => p[1])).filter((v) => Number.isFinite(v));
    const max = ys.length === 0 ? 1 : Math.max(...ys) * 1.1 || 1;
    const y = (v: number) => top + PH - (v / max) * PH;
    out.push(`<text x="${L}" y="${top - 8}" font-size="13" font-weight="bold">${title}</text>`);
    out.push(`<rect x="${L}" y="${top}" width="${W - L - R}" height="${PH}" fill="none" stroke="#999"/>`);
    out.push(`<rect x="${L}" y="${top}" width="${x(warm) - L}" height="${PH}" fill="#eee"/>`);
    for (let k = 0; k <= 4; k++) {
      const v = (max * k) / 4;
      out.push(`<text x="${L - 6}" y="${y(v) + 4}" font-size="10" text-anchor="end">${v < 10 ? v.toFixed(1) : v.toFixed(0)}</text>`);
      out.push(`<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    }
    out.push(`<text x="12" y="${top + PH / 2}" font-size="10" transform="rotate(-90 12 ${top + PH / 2})" text-anchor="middle">${unit}</text>`);
    for (const s of series) {
      const pts = s.pts.filter((p) => Number.isFinite(p[1]));
      if (pts.length > 0) out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="1.5" points="${pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ")}"/>`);
    }
    series.forEach((s, k) => out.push(`<text x="${W - R - 8 - (series.length - 1 - k) * 70}" y="${top + 14}" font-size="10" text-anchor="end" fill="${s.color}">${s.label}</text>`));
    for (let m = 0; m <= total / 60; m++) out.push(`<text x="${x(m * 60)}" y="${top + PH + 14}" font-size="10" text-anchor="middle">${m} min</text>`);
  };
  const peerSeries = (k: "rssMb" | "heapMb") =>
    [...new Set(samples.map((s) => s.peer))].map((p) => ({ label: `peer ${p}`, color: colors[p % colors.length]!, pts: samples.filter((s) => s.peer === p).map((s) => [s.t, s[k]] as [number, number]) }));
  panel(0, "resident memory per daemon", "MB", peerSeries("rssMb"));
  panel(1, "V8 heap used per daemon", "MB", peerSeries("heapMb"));
  panel(2, "reserve + complete latency per 30 s window (all daemons)", "ms", [
    { label: "p50", color: "#1f77b4", pts: windows.map((w) => [w.t, w.p50Ms]) },
    { label: "p99", color: "#d62728", pts: windows.map((w) => [w.t, w.p99Ms]) },
  ]);
  const H = 30 + 3 * (PH + 40);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>${out.join("")}<text x="${W - R}" y="${H - 6}" font-size="10" text-anchor="end" fill="#666">grey: warm-up (not judged)</text></svg>\n`;
}
