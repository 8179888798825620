/**
 * Commit throughput and latency of the governed Raft, side by side with etcd 3.4, measured through a real client
 * path (governed.md §5.5; issue 15).
 *
 * Both systems run as N separate OS processes on 127.0.0.1 with fsync on: ours with the segmented log store
 * (one O_DSYNC write per group-commit batch, on libuv's thread pool) over the node package's libp2p seam; etcd
 * with its defaults (its WAL is fsynced). The load generator is this process, writing 256-byte values with 1 or 64
 * writes outstanding to the leader over one connection, and counting a write when the leader has applied it
 * (both on etcd's default timing: heartbeat 100 ms, election timeout 1 s — `HEDDLE_RAFT_TIMING=spec` for ours
 * at governed.md's 50 / 150–300 ms):
 * ours through `kv-wire.ts` (a small request/response protocol over TCP — the daemon's HTTP API takes control acts
 * and claims, never a raw log write; the claims package's network bench measures commits through it), etcd through its gRPC client (`etcd3`). Clusters are started fresh on
 * free loopback ports with temporary data directories, ours and etcd alternately (and in alternating order in
 * successive rounds), so a change in the machine's load hits both. Without `etcd` on PATH its column is skipped.
 *
 *   npx -y pnpm@10 --filter @heddle/governed bench                              # 3 s per cell, median of 3 rounds
 *   HEDDLE_BENCH_SECONDS=3 HEDDLE_BENCH_ROUNDS=5 npx -y pnpm@10 --filter @heddle/governed bench
 *
 * Three rounds by default because one round is not enough to judge a goal by: at 5 voters and one client the
 * ratio moved between 0.82 and 1.21 from round to round in one 5-round run, and between 0.96 and 1.22 in another
 * (README).
 *
 * `HEDDLE_BENCH_QUANTILES=1` (diagnostics) prints each cell's latency distribution and mean (at one client the
 * mean, not the median, sets the rate). `HEDDLE_BENCH_PROFILE=<dir>` (diagnostics) runs each member of ours under `--cpu-prof`, writing its profile to
 * `<dir>` when the bench stops it (with SIGTERM then, so the profiler can write; SIGKILL otherwise).
 * `HEDDLE_BENCH_WARMUP_MS` (default 5000) is the load run before each cell is measured, for both systems alike. A
 * deployed cluster runs for days; what the bench should measure is its steady state, not a member's first seconds:
 * the c=1 cell starts about a second after the leader is elected, and for several seconds of load V8 is still
 * compiling our hot code on its worker threads (10–16 % of a follower's CPU in perf profiles at 5–14 s) while the
 * members' own compiled code is not yet optimised. Until 2026-12-04 the default was 500 ms; `HEDDLE_BENCH_WARMUP_MS=500`
 * gives the old, cold-start figure (README).
 *
 * Prints a table (median over rounds) and one JSON line per cell:
 * {"system":"heddle"|"etcd","workload":"raft","voters":…,"concurrency":…,"opsPerSec":…,"p50Ms":…,"p99Ms":…}.
 */
import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess, ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Etcd3 } from "etcd3";
import { freeListenPort, loadOrCreatePeerKey, MemoryNetwork, peerIdOf, realTimers, seededRandom } from "@heddle/seam";
import { memoryRaftStorage, raftChannelTransport, raftNode } from "../src/index.ts";
import type { RaftNode } from "../src/index.ts";
import { kvTcpClient } from "../test/support/kv-wire.ts";
import type { KvClient } from "../test/support/kv-wire.ts";

const SECONDS = Number(process.env.HEDDLE_BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.HEDDLE_BENCH_ROUNDS ?? 3);
if (!(SECONDS > 0 && SECONDS <= 3600)) throw new Error(`HEDDLE_BENCH_SECONDS: ${process.env.HEDDLE_BENCH_SECONDS} is not a number of seconds in (0, 3600]`);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`HEDDLE_BENCH_ROUNDS: ${process.env.HEDDLE_BENCH_ROUNDS} is not a whole number ≥ 1`);
const WARMUP_MS = Number(process.env.HEDDLE_BENCH_WARMUP_MS ?? 5000);
if (!Number.isSafeInteger(WARMUP_MS) || WARMUP_MS < 0 || WARMUP_MS > 600_000) throw new Error(`HEDDLE_BENCH_WARMUP_MS: ${process.env.HEDDLE_BENCH_WARMUP_MS} is not a whole number of milliseconds in [0, 600000]`);
const VALUE = new Uint8Array(256).fill(0x76);
const SIZES = (process.env.HEDDLE_BENCH_SIZES ?? "3,5").split(",").map(Number);
const CONCURRENCY = (process.env.HEDDLE_BENCH_CONCURRENCY ?? "1,64").split(",").map(Number);
const SYSTEMS = (process.env.HEDDLE_BENCH_SYSTEMS ?? "heddle,etcd").split(",") as System[];
const QUANTILES = process.env.HEDDLE_BENCH_QUANTILES === "1";
const PROFILE_DIR = process.env.HEDDLE_BENCH_PROFILE ?? "";
const fixture = join(import.meta.dirname, "..", "test", "fixtures", "raft-process.ts");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type System = "heddle" | "etcd";

interface Cell {
  ops: number;
  /** CPU time (user + system, all threads) per write: the leader's, and the followers' summed. */
  leaderCpuMs: number;
  followersCpuMs: number;
  seconds: number;
  p50: number;
  p99: number;
  /** Writes that failed (e.g. an election under CPU starvation); retried, not counted as ops. */
  failures: number;
}

/** CPU seconds (user + system, every thread) a process has used, from /proc; NaN where there is no /proc. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/**
 * Runs `concurrency` writers for SECONDS after a warm-up; each `put` resolves when its write is applied. `pids`
 * are the cluster's processes, leader first, for the CPU cost per write.
 */
async function load(concurrency: number, client: KvClient, pids: readonly (number | undefined)[]): Promise<Cell> {
  const lat: number[] = [];
  let n = 0;
  let failures = 0;
  const warmEnd = Date.now() + WARMUP_MS;
  const end = warmEnd + SECONDS * 1000;
  let startedAt = 0;
  const writer = async (): Promise<void> => {
    for (;;) {
      const t0 = performance.now();
      if (Date.now() >= end) return;
      try {
        await client.put(`k${n++ % 1000}`, VALUE);
      } catch {
        failures++;
        await sleep(20);
        continue;
      }
      const t1 = performance.now();
      if (startedAt > 0 && t0 >= startedAt && Date.now() <= end) lat.push(t1 - t0);
    }
  };
  const ws = Array.from({ length: concurrency }, () => writer());
  await sleep(WARMUP_MS);
  startedAt = performance.now();
  const cpu0 = pids.map(cpuSeconds);
  await Promise.all(ws);
  const cpu1 = pids.map(cpuSeconds);
  const seconds = (performance.now() - startedAt) / 1000;
  lat.sort((a, b) => a - b);
  const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  if (QUANTILES) {
    const mean = lat.reduce((a, b) => a + b, 0) / Math.max(1, lat.length);
    const at = [0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.999].map((p) => `p${p * 100} ${q(p).toFixed(2)}`).join(" ");
    const over = (ms: number): number => lat.filter((x) => x > ms).reduce((a, b) => a + b, 0) / Math.max(1, lat.reduce((a, b) => a + b, 0));
    console.log(`    c=${concurrency} latency ms: mean ${mean.toFixed(3)} ${at} max ${(lat.at(-1) ?? NaN).toFixed(2)}; share of time in writes over 3 ms ${(100 * over(3)).toFixed(1)} %`);
  }
  const perOp = (k: number): number => ((cpu1[k]! - cpu0[k]!) * 1000) / Math.max(1, lat.length);
  let followers = 0;
  for (let k = 1; k < pids.length; k++) followers += perOp(k);
  return { ops: lat.length, seconds, p50: q(0.5), p99: q(0.99), failures, leaderCpuMs: perOp(0), followersCpuMs: followers };
}

// ---------------------------------------------------------------- ours

class Member {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  id = "";
  addr = "";
  kvPort = 0;
  #req = 0;
  readonly #waiting = new Map<number, (r: Record<string, unknown>) => void>();
  readonly ready: Promise<void>;
  constructor(dir: string, index: number, ids: string[], voters: string[]) {
    const profile = PROFILE_DIR === "" ? [] : ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`];
    this.child = spawn(process.execPath, [...profile, fixture, dir, String(index), JSON.stringify(ids), JSON.stringify(voters)], {
      stdio: ["pipe", "pipe", "inherit"],
      // etcd's default timing (heartbeat 100 ms, election timeout 1 s, randomized up to 2 s) for both systems
      env: { ...process.env, HEDDLE_RAFT_TIMING: process.env.HEDDLE_RAFT_TIMING ?? "etcd" },
    });
    let onReady: () => void = () => {};
    this.ready = new Promise((r) => (onReady = r));
    createInterface({ input: this.child.stdout }).on("line", (l) => {
      const m = JSON.parse(l) as Record<string, unknown>;
      if (m.ev === "ready") {
        this.id = m.id as string;
        this.addr = m.addr as string;
        this.kvPort = m.kvPort as number;
        onReady();
      } else if (typeof m.req === "number") {
        this.#waiting.get(m.req)?.(m);
        this.#waiting.delete(m.req);
      }
    });
  }
  /** Control only (addresses, status) — the write load goes over TCP. */
  ask(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    const req = ++this.#req;
    return new Promise((resolve) => {
      this.#waiting.set(req, resolve);
      this.child.stdin.write(JSON.stringify({ ...cmd, req }) + "\n");
    });
  }
}

async function ours(size: number): Promise<Cell[]> {
  const dir = mkdtempSync(join(tmpdir(), "heddle-raft-bench-"));
  const ids: string[] = [];
  for (let i = 0; i < size; i++) ids.push(peerIdOf(await loadOrCreatePeerKey(join(dir, `n${i}.key`))));
  const members: Member[] = [];
  let client: KvClient | null = null;
  try {
    for (let i = 0; i < size; i++) members.push(new Member(dir, i, ids, ids));
    await Promise.all(members.map((m) => m.ready));
    for (const a of members) for (const b of members) if (a !== b) a.child.stdin.write(JSON.stringify({ cmd: "addr", id: b.id, addr: b.addr }) + "\n");
    let leader: Member | undefined;
    for (let t = 0; t < 200 && leader === undefined; t++) {
      const st = await Promise.all(members.map((m) => m.ask({ cmd: "status" })));
      const i = st.findIndex((s) => s.role === "leader");
      if (i >= 0) leader = members[i];
      else await sleep(100);
    }
    if (leader === undefined) throw new Error("no leader");
    client = await kvTcpClient(leader.kvPort);
    const l = leader;
    const pids = [l.child.pid, ...members.filter((m) => m !== l).map((m) => m.child.pid)];
    const cells: Cell[] = [];
    for (const c of CONCURRENCY) cells.push(await load(c, client, pids));
    return cells;
  } finally {
    await client?.close();
    for (const m of members) m.child.kill(PROFILE_DIR === "" ? "SIGKILL" : "SIGTERM");
    await sleep(PROFILE_DIR === "" ? 200 : 2_000);
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- etcd

function etcdVersion(): string | null {
  try {
    return execFileSync("etcd", ["--version"], { encoding: "utf8" }).split("\n")[0] ?? "etcd";
  } catch {
    return null;
  }
}

async function etcd(size: number): Promise<Cell[]> {
  const dir = mkdtempSync(join(tmpdir(), "heddle-etcd-bench-"));
  const peers: number[] = [];
  const clients: number[] = [];
  const taken = new Set<number>();
  for (let i = 0; i < size; i++) {
    // one set for the cluster: each pick is probed free, but none is bound until etcd starts
    peers.push(await freeListenPort(taken));
    clients.push(await freeListenPort(taken));
  }
  const initial = peers.map((p, i) => `e${i}=http://127.0.0.1:${p}`).join(",");
  const procs: ChildProcess[] = [];
  const probes: Etcd3[] = [];
  let client: Etcd3 | null = null;
  try {
    for (let i = 0; i < size; i++) {
      procs.push(
        spawn("etcd", [
          "--name", `e${i}`, "--data-dir", join(dir, `e${i}`),
          "--listen-peer-urls", `http://127.0.0.1:${peers[i]}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peers[i]}`,
          "--listen-client-urls", `http://127.0.0.1:${clients[i]}`, "--advertise-client-urls", `http://127.0.0.1:${clients[i]}`,
          "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", "heddle-bench",
          "--log-level", "error",
        ], { stdio: "ignore" }),
      );
      probes.push(new Etcd3({ hosts: `http://127.0.0.1:${clients[i]}` }));
    }
    let leaderUrl: string | null = null;
    let leaderAt = 0;
    for (let t = 0; t < 300 && leaderUrl === null; t++) {
      for (let i = 0; i < size && leaderUrl === null; i++) {
        try {
          const s = await probes[i]!.maintenance.status({ deadline: Date.now() + 500 });
          if (s.leader !== "0" && s.header.member_id === s.leader) {
            leaderUrl = `http://127.0.0.1:${clients[i]}`;
            leaderAt = i;
          }
        } catch {
          // not up yet
        }
      }
      if (leaderUrl === null) await sleep(100);
    }
    if (leaderUrl === null) throw new Error("etcd: no leader");
    const c = new Etcd3({ hosts: leaderUrl });
    client = c;
    const kv: KvClient = { put: async (key, value) => void (await c.put(key).value(Buffer.from(value.buffer, value.byteOffset, value.length))), close: async () => c.close() };
    const pids = [procs[leaderAt]!.pid, ...procs.filter((_, i) => i !== leaderAt).map((p) => p.pid)];
    const cells: Cell[] = [];
    for (const n of CONCURRENCY) cells.push(await load(n, kv, pids));
    return cells;
  } finally {
    client?.close();
    for (const p of probes) p.close();
    for (const p of procs) p.kill("SIGKILL");
    await sleep(300);
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- ours, in one process (protocol cost only)

async function inProcess(size: number): Promise<Cell[]> {
  // zero-delay deliveries on setImmediate rather than setTimeout's ~1 ms floor, so the figure is the protocol's
  const fastTimers = {
    now: () => Date.now(),
    set: (fn: () => void, ms: number): unknown => (ms > 0 ? setTimeout(fn, ms) : setImmediate(fn)),
    clear: (h: unknown): void => {
      clearTimeout(h as NodeJS.Timeout);
      clearImmediate(h as NodeJS.Immediate);
    },
  };
  const net = new MemoryNetwork({ timers: fastTimers, random: seededRandom(size) });
  const ids = Array.from({ length: size }, (_, i) => `m${i}`);
  const cluster = { voters: ids, learners: [] };
  const nodes: RaftNode[] = ids.map((id, k) =>
    raftNode({ cluster, transport: raftChannelTransport(net.join(id)), storage: memoryRaftStorage(), timers: realTimers, random: seededRandom(100 + k), defer: setImmediate }),
  );
  try {
    let leader: RaftNode | undefined;
    while ((leader = nodes.find((n) => n.role.get() === "leader")) === undefined) await sleep(20);
    const l = leader;
    const client: KvClient = { put: async (key, value) => void (await l.propose(new Uint8Array([...new TextEncoder().encode(key), ...value]), null)), close: async () => {} };
    const cells: Cell[] = [];
    for (const c of CONCURRENCY) cells.push(await load(c, client, [process.pid]));
    return cells;
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
  }
}

// ---------------------------------------------------------------- report

const fmt = (x: number, d = 1): string => (Number.isFinite(x) ? x.toFixed(d) : "—");
const median = (xs: number[]): number => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const version = etcdVersion();
const systems = SYSTEMS.filter((s) => s !== "etcd" || version !== null);
const load0 = loadavg();
console.log(`governed Raft vs etcd — ${SECONDS} s per cell, ${ROUNDS} round(s), 256-byte values, fsync on, loopback, ${new Date().toISOString()}`);
console.log(version === null ? "etcd: NOT INSTALLED — the etcd column is skipped (apt-get install -y etcd-server)" : `etcd: ${version}`);
console.log(`load average at start: ${load0.map((x) => x.toFixed(2)).join(" ")}`);

// results[system][size][concurrency index] = cells over rounds
const results = new Map<System, Map<number, Cell[][]>>();
for (const s of systems) results.set(s, new Map(SIZES.map((n) => [n, CONCURRENCY.map(() => [])])));
const runners: Record<System, (size: number) => Promise<Cell[]>> = { heddle: ours, etcd };
for (let round = 0; round < ROUNDS; round++) {
  for (const size of SIZES) {
    const order = round % 2 === 0 ? systems : [...systems].reverse();
    for (const s of order) {
      const cells = await runners[s](size);
      cells.forEach((c, k) => results.get(s)!.get(size)![k]!.push(c));
      const line = cells.map((c, k) => `c=${CONCURRENCY[k]} ${fmt(c.ops / c.seconds, 0)}/s p50 ${fmt(c.p50, 2)} ms cpu/write leader ${fmt(c.leaderCpuMs, 3)} ms followers ${fmt(c.followersCpuMs, 3)} ms`).join("; ");
      console.log(`  round ${round + 1}, ${size} voters, ${s}: ${line}${cells.some((c) => c.failures > 0) ? ` (${cells.reduce((a, c) => a + c.failures, 0)} failed writes retried)` : ""}`);
    }
  }
}
const summary = (s: System, size: number, k: number): { opsPerSec: number; p50Ms: number; p99Ms: number } | null => {
  const cells = results.get(s)?.get(size)?.[k];
  if (cells === undefined || cells.length === 0) return null;
  return { opsPerSec: median(cells.map((c) => c.ops / c.seconds)), p50Ms: median(cells.map((c) => c.p50)), p99Ms: median(cells.map((c) => c.p99)) };
};
console.log("");
console.log("| voters | clients | ours ops/s | ours p50 ms | ours p99 ms | etcd ops/s | etcd p50 ms | etcd p99 ms | ops/s ours/etcd | p50 ours/etcd |");
console.log("|---|---|---|---|---|---|---|---|---|---|");
const json: string[] = [];
for (const size of SIZES) {
  CONCURRENCY.forEach((c, k) => {
    const a = summary("heddle", size, k);
    const b = summary("etcd", size, k);
    const col = (x: { opsPerSec: number; p50Ms: number; p99Ms: number } | null): string => (x === null ? "skipped | — | —" : `${fmt(x.opsPerSec, 0)} | ${fmt(x.p50Ms, 2)} | ${fmt(x.p99Ms, 2)}`);
    const ratio = a !== null && b !== null ? `${fmt(a.opsPerSec / b.opsPerSec, 2)} | ${fmt(a.p50Ms / b.p50Ms, 2)}` : "— | —";
    console.log(`| ${size} | ${c} | ${col(a)} | ${col(b)} | ${ratio} |`);
    for (const [system, x] of [["heddle", a], ["etcd", b]] as const) {
      if (x === null) continue;
      json.push(JSON.stringify({ system, workload: "raft", voters: size, concurrency: c, opsPerSec: Math.round(x.opsPerSec), p50Ms: Number(x.p50Ms.toFixed(3)), p99Ms: Number(x.p99Ms.toFixed(3)) }));
    }
  });
}
console.log(`load average at end: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
console.log("");
for (const j of json) console.log(j);

if (process.env.HEDDLE_BENCH_INPROCESS === "1") {
  console.log("");
  console.log("In one process (MemoryNetwork seam, in-memory storage, no fsync): the protocol's own cost, propose → commit on the leader");
  console.log("");
  console.log("| voters | clients | ops/s | p50 ms | p99 ms |");
  console.log("|---|---|---|---|---|");
  for (const size of SIZES) {
    const cells = await inProcess(size);
    CONCURRENCY.forEach((c, k) => {
      const a = cells[k]!;
      console.log(`| ${size} | ${c} | ${fmt(a.ops / a.seconds, 0)} | ${fmt(a.p50, 3)} | ${fmt(a.p99, 3)} |`);
    });
  }
}
