/**
 * The physical floor of one client's commits through any 3-voter, fsync-on replicated service written in Node, on
 * this machine — so the README can say whether issue 16's "≥ 3× etcd's take + release pairs/s at one client" is
 * reachable here at all. A heddle pair is two fsync'd Raft commits in series (take, then release), and so is etcd's
 * (a txn each), so pairs/s = commits/s ÷ 2 at one client.
 *
 * The floor is three Node processes (`floor-replica.ts`, spawned with this process's own `node`) speaking a
 * length-prefixed binary protocol over loopback TCP, and this process as the one client: it sends a 300-byte request
 * to the leader and waits for the answer before sending the next. The leader hands the entry to `fs.write` (libuv's
 * pool) on its own preallocated log file opened with O_DSYNC and, in the same turn, sends it to both followers; each
 * follower writes it the same way and acks; the leader answers once its own write and one follower's ack are done (a
 * majority of three). No Raft (no terms, no election, no commit index), no checksums, no JSON, no HTTP, no state
 * machine: what is left is what every such service must pay per commit — the client's and the leader's loopback
 * round trips, a follower's round trip, one durable write on the leader and one on a follower in parallel, and the
 * event-loop and thread-pool hand-offs in each process.
 *
 * Variants, to say where the floor's time goes: `floor-nosync` (the same, with plain writes into the page cache: no
 * O_DSYNC) and `floor-leader-only` (one process, no followers: the leader answers after its own durable write).
 * And `etcd` (3.4, three members, fsync on, as `network.ts` starts it) when `etcd` is on PATH: the same take and
 * release txns as `network.ts`, through `etcd3`, one client, each txn counted as one commit.
 *
 * Each cell runs HEDDLE_BENCH_WARMUP_MS (default 3000) of the same load, unmeasured, then HEDDLE_BENCH_SECONDS
 * (default 5). `HEDDLE_BENCH_ROUNDS=N` (default 3: the disk's and the machine's speed move from minute to minute here)
 * runs every cell N times, in the order above in odd rounds and reversed in even ones, each round's cells with fresh
 * processes and files. Prints one JSON line per cell and round, then the medians over the rounds (each figure on its
 * own) as a table (commits/s, pairs/s, p50/p99 of one commit, and system/etcd) and one JSON line per cell:
 * {"system":"floor"|"floor-nosync"|"floor-leader-only"|"etcd","workload":"commit","concurrency":1,"opsPerSec","p50Ms","p99Ms"}.
 *
 * Run: npx -y pnpm@10 --filter @heddle/claims bench:floor
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Etcd3 } from "etcd3";
import { startEtcdCluster } from "./etcd-cluster.ts";

const SECONDS = Number(process.env["HEDDLE_BENCH_SECONDS"] ?? 5);
if (!(SECONDS > 0 && SECONDS <= 3600)) throw new Error(`HEDDLE_BENCH_SECONDS: ${process.env["HEDDLE_BENCH_SECONDS"]} is not a number of seconds in (0, 3600]`);
const ROUNDS = Number(process.env["HEDDLE_BENCH_ROUNDS"] ?? 3);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`HEDDLE_BENCH_ROUNDS: ${process.env["HEDDLE_BENCH_ROUNDS"]} is not a whole number ≥ 1`);
const WARMUP_MS = Number(process.env["HEDDLE_BENCH_WARMUP_MS"] ?? 3000);
if (!Number.isSafeInteger(WARMUP_MS) || WARMUP_MS < 0 || WARMUP_MS > 600_000) throw new Error(`HEDDLE_BENCH_WARMUP_MS: ${process.env["HEDDLE_BENCH_WARMUP_MS"]} is not a whole number of milliseconds in [0, 600000]`);
/** A request's entry: about what one take or release costs in a log (heddle's are a few hundred bytes). */
const ENTRY_BYTES = 296;
const KEY_SPACE = 1_000_000;
const LEASE_SECONDS = 30;
const REPLICA = fileURLToPath(new URL("./floor-replica.ts", import.meta.url));

type System = "floor" | "floor-nosync" | "floor-leader-only" | "etcd";
interface Cell {
  system: System;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

// ---------------------------------------------------------------- every way out: children killed, files removed

const children = new Set<ChildProcess>();
const dirs = new Set<string>();
const cleanUp = (): void => {
  for (const c of children) c.kill("SIGKILL");
  children.clear();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.clear();
};
process.on("exit", cleanUp);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(sig, () => {
    cleanUp();
    process.exit(128 + (sig === "SIGINT" ? 2 : sig === "SIGTERM" ? 15 : 1));
  });
}

/** Runs `op` in a closed loop for WARMUP_MS unmeasured, then SECONDS measured: ops/s and each op's latency. */
async function closedLoop(system: System, op: () => Promise<void>): Promise<Cell> {
  const warm = performance.now() + WARMUP_MS;
  const deadline = warm + SECONDS * 1000;
  const lat: number[] = [];
  let start = 0;
  while (performance.now() < deadline) {
    const t0 = performance.now();
    await op();
    if (t0 >= warm) {
      if (start === 0) start = t0;
      lat.push(performance.now() - t0);
    }
  }
  const elapsed = (performance.now() - (start || warm)) / 1000;
  lat.sort((a, b) => a - b);
  return { system, opsPerSec: lat.length / elapsed, p50Ms: quantile(lat, 0.5), p99Ms: quantile(lat, 0.99) };
}

// ---------------------------------------------------------------- the floor: three floor-replica.ts processes

/** Spawns one replica and resolves with the port it listens on; a replica that exits first rejects. */
function replica(args: string[]): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, [REPLICA, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  children.add(proc);
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout!.setEncoding("utf8");
    proc.stdout!.on("data", (s: string) => {
      out += s;
      const m = /port (\d+)\n/.exec(out);
      if (m !== null) resolve({ proc, port: Number(m[1]) });
    });
    proc.once("exit", (code, signal) => reject(new Error(`floor-replica ${args[0]} exited (${code ?? signal}) before it listened`)));
  });
}

async function floor(system: Exclude<System, "etcd">): Promise<Cell> {
  const dir = mkdtempSync(join(tmpdir(), "heddle-commit-floor-"));
  dirs.add(dir);
  const sync = system === "floor-nosync" ? "nosync" : "dsync";
  const procs: ChildProcess[] = [];
  let sock: Socket | null = null;
  try {
    const followerPorts: number[] = [];
    if (system !== "floor-leader-only") {
      for (const i of [1, 2]) {
        const f = await replica(["follower", sync, join(dir, `follower-${i}.log`)]);
        procs.push(f.proc);
        followerPorts.push(f.port);
      }
    }
    const leader = await replica(["leader", sync, join(dir, "leader.log"), followerPorts.length === 0 ? "0" : "1", followerPorts.join(",")]);
    procs.push(leader.proc);
    const s = connect(leader.port, "127.0.0.1");
    sock = s;
    s.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      s.once("connect", resolve);
      s.once("error", reject);
    });
    // one request in flight: the answer is 8 bytes (length 4, the id), which may arrive split
    let waiting: { id: number; resolve: () => void; reject: (e: Error) => void } | null = null;
    let got: Buffer = Buffer.alloc(0);
    const broken = (why: string) => {
      const w = waiting;
      waiting = null;
      w?.reject(new Error(`${system}: ${why}`));
    };
    s.on("data", (chunk: Buffer) => {
      got = got.length === 0 ? chunk : Buffer.concat([got, chunk]);
      while (got.length >= 8) {
        const id = got.readUInt32BE(4);
        got = got.subarray(8);
        if (waiting === null || waiting.id !== id) return broken(`an answer for request ${id} that was not asked`);
        const w = waiting;
        waiting = null;
        w.resolve();
      }
    });
    s.on("error", (e) => broken(`the leader's socket: ${e.message}`));
    s.on("close", () => broken("the leader closed the connection"));
    for (const p of procs) p.once("exit", (code, signal) => broken(`a replica exited (${code ?? signal})`));
    const request = Buffer.alloc(4 + 4 + ENTRY_BYTES, 0x61);
    request.writeUInt32BE(4 + ENTRY_BYTES, 0);
    let next = 0;
    return await closedLoop(system, () => {
      const id = next++ >>> 0;
      request.writeUInt32BE(id, 4);
      return new Promise<void>((resolve, reject) => {
        waiting = { id, resolve, reject };
        s.write(Buffer.from(request));
      });
    });
  } finally {
    sock?.destroy();
    for (const p of procs) {
      p.removeAllListeners("exit");
      p.kill("SIGKILL");
      children.delete(p);
    }
    await sleep(100);
    rmSync(dir, { recursive: true, force: true });
    dirs.delete(dir);
  }
}

// ---------------------------------------------------------------- etcd 3.4: the same take and release txns as network.ts

async function etcd(): Promise<Cell> {
  let made = "";
  const cluster = await startEtcdCluster("heddle-commit-floor-etcd-", { made: (d) => dirs.add((made = d)), spawned: (p) => children.add(p) });
  const c = new Etcd3({ hosts: cluster.leaderUrl });
  const lease = c.lease(LEASE_SECONDS);
  try {
    const leaseId = String(await lease.grant());
    let rnd = 0x9e3779b9;
    let key = "";
    let held = false;
    return await closedLoop("etcd", async () => {
      if (!held) {
        rnd ^= rnd << 13;
        rnd ^= rnd >>> 17;
        rnd ^= rnd << 5;
        key = `k/${(rnd >>> 0) % KEY_SPACE}`;
        const r = await c.if(key, "Create", "==", 0).then(c.put(key).value("c0").lease(leaseId)).else(c.get(key)).commit();
        held = r.succeeded; // a refusal would mean the key was left held: the next op takes another key
      } else {
        await c.if(key, "Value", "==", "c0").then(c.delete().key(key)).commit();
        held = false;
      }
    });
  } finally {
    await lease.revoke().catch(() => {});
    c.close();
    await cluster.stop();
    for (const p of cluster.procs) children.delete(p);
    dirs.delete(made);
  }
}

// ---------------------------------------------------------------- run, report

const hasEtcd = (() => {
  try {
    return execFileSync("etcd", ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split("\n")[0]!.trim();
  } catch {
    return null;
  }
})();
console.log(`commit floor at one client — ${SECONDS} s per cell after ${WARMUP_MS} ms of the same load, ${ROUNDS} round(s), loopback, files in ${tmpdir()}, ${new Date().toISOString()}; load average ${loadavg()}; node ${process.version}`);
if (hasEtcd === null) console.log("etcd: SKIPPED — etcd not found on PATH (apt-get install -y etcd-server)");
else console.log(`etcd: ${hasEtcd}${/\b3\.4\./.test(hasEtcd) ? "" : " (not 3.4, the version the issue compares with)"}`);

const systems: System[] = ["floor", "floor-nosync", "floor-leader-only", ...(hasEtcd === null ? [] : (["etcd"] as const))];
const jsonLine = (c: Cell) =>
  JSON.stringify({ system: c.system, workload: "commit", concurrency: 1, opsPerSec: Number(c.opsPerSec.toFixed(1)), p50Ms: Number(c.p50Ms.toFixed(3)), p99Ms: Number(c.p99Ms.toFixed(3)) });
const perRound: Cell[] = [];
let failed = false;
for (let round = 1; round <= ROUNDS; round++) {
  const order = round % 2 === 1 ? systems : [...systems].reverse();
  if (ROUNDS > 1) console.log(`round ${round} of ${ROUNDS}: ${order.join(", ")}; load average ${loadavg()}`);
  const from = perRound.length;
  for (const s of order) {
    try {
      const c = s === "etcd" ? await etcd() : await floor(s);
      perRound.push(c);
      console.log(ROUNDS > 1 ? `round ${round}: ${jsonLine(c)}` : jsonLine(c));
    } catch (e) {
      failed = true;
      console.log(`${s}: FAILED${ROUNDS > 1 ? ` in round ${round}` : ""} — ${(e as Error).stack ?? String(e)}`);
    }
  }
  // the ratio within one round, minutes apart at most: the machine's drift between rounds falls on both
  const mine = perRound.slice(from);
  const rf = mine.find((c) => c.system === "floor");
  const re = mine.find((c) => c.system === "etcd");
  if (rf !== undefined && re !== undefined) console.log(`round ${round}: floor/etcd ${(rf.opsPerSec / re.opsPerSec).toPrecision(3)}×`);
}
const median = (xs: readonly number[]): number => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v.length % 2 === 1 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
/** Each system's median over the rounds that measured it (each figure on its own). */
const cells: Cell[] = systems
  .map((system) => perRound.filter((c) => c.system === system))
  .filter((same) => same.length > 0)
  .map((same) => ({ system: same[0]!.system, opsPerSec: median(same.map((c) => c.opsPerSec)), p50Ms: median(same.map((c) => c.p50Ms)), p99Ms: median(same.map((c) => c.p99Ms)) }));
if (ROUNDS > 1) {
  console.log(`medians over ${ROUNDS} rounds`);
  for (const c of cells) console.log(jsonLine(c));
}

const fmt = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : "—");
const e = cells.find((c) => c.system === "etcd");
console.log("");
console.log(`one client, commits in series (a take + release pair = 2 commits); load average at the end ${loadavg()}`);
console.log("| system | commits/s | pairs/s | p50 ms | p99 ms | system/etcd pairs/s |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const c of cells) {
  const r = e === undefined || c === e ? "" : `${(c.opsPerSec / e.opsPerSec).toPrecision(3)}×`;
  console.log(`| ${c.system} | ${fmt(c.opsPerSec, 0)} | ${fmt(c.opsPerSec / 2, 0)} | ${fmt(c.p50Ms, 3)} | ${fmt(c.p99Ms, 3)} | ${r} |`);
}
const f = cells.find((c) => c.system === "floor");
if (e !== undefined && f !== undefined) {
  console.log("");
  console.log(
    `issue 16's one-client goal, 3× etcd: ${fmt((3 * e.opsPerSec) / 2, 0)} pairs/s (${fmt(1e6 / (3 * e.opsPerSec), 0)} µs per commit); ` +
      `the floor reaches ${fmt(f.opsPerSec / 2, 0)} pairs/s (${fmt(1e6 / f.opsPerSec, 0)} µs per commit), floor/etcd ${(f.opsPerSec / e.opsPerSec).toPrecision(3)}× — ` +
      (f.opsPerSec >= 3 * e.opsPerSec
        ? "at or above the goal with nothing else on the path"
        : "below the goal: in this run no service in Node paying these costs reaches 3× etcd at one client"),
  );
}
process.exit(failed ? 1 : 0);
