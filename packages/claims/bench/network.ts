/**
 * Granted claims on the network, side by side with the lock services people run today, in one run on one machine:
 *
 * - heddle: a 3-voter governed cluster of daemon OS processes (`heddle init --mode governed` + `heddle up`), fsync
 *   on (the Raft log in the segmented log store `raft-wal/`, one O_DSYNC write per group commit), driven through the
 *   leader's API — its call wire (`heddle-call/1`, the `POST /v1/claims/take` and `/v1/claims/release` routes
 *   multiplexed on one upgraded connection of the API port, as the etcd client multiplexes its calls on one gRPC
 *   channel) — following the leader when leadership moves (checked every 250 ms; the count is printed). The same
 *   routes over kept-alive HTTP connections are the system `heddle-http`, measured when named in
 *   HEDDLE_BENCH_SYSTEMS (its JSON lines read `"system":"heddle","api":"http"`);
 * - etcd 3.4: a 3-member cluster (fsync on, its default), through `etcd3`: one lease per client, a take is a txn
 *   `if create_revision == 0 then put(key, holder, lease) else get(key)`, a release a txn `if value == holder then
 *   delete`;
 * - Redis: one `redis-server` (no persistence: `SET NX PX` is not durable by design), a take is
 *   `SET key holder NX PX 30000 GET` (the GET names the holder on a refusal), a release a compare-and-delete script;
 * - PostgreSQL 15: one cluster (initdb + pg_ctl, as the `postgres` user when run as root), session advisory locks:
 *   `pg_try_advisory_lock(k)` / `pg_advisory_unlock(k)` (not durable, one node; a refusal names nobody).
 *
 * Workloads, each measured for HEDDLE_BENCH_SECONDS (default 5) after HEDDLE_BENCH_WARMUP_MS (default 5000) of the same
 * load, for every system alike. A deployed lock service runs for days; the bench should measure its steady state, not
 * a process's first seconds: the daemons are seconds old when the first cell starts, and V8 is still compiling their
 * hot code. On heddle's cluster at one client (`bench/cost.ts`, 2026-12-04) the CPU every process spent per op fell
 * by a quarter to a third between the first cell and one after 10 s of load (the leader's V8 worker threads from
 * 0.14 to 0.03–0.05 ms per op). Until 2026-12-04 a cell's first second of its HEDDLE_BENCH_SECONDS was its only
 * warm-up; `HEDDLE_BENCH_WARMUP_MS=0` measures from the first op.
 *
 * - `claims`: take + release pairs on random keys of a 1,000,000-key space, at concurrency 1 and 64 (HEDDLE_BENCH_CONCURRENCY);
 * - `contention`: 64 clients on one key, each releasing at once when granted and retrying at once when refused:
 *   grants/s, refusal latency p50/p99, whether a refusal names the holder.
 *
 * After its cells, heddle also prints the floors of the contention cell's refusal p50, measured on the same cluster:
 * 64 callers in a closed loop on the cheapest authenticated call, and on a take refused at a confirmed read of a key
 * held throughout. In a closed loop the latency is about callers / rate (Little's law), so these say how low a
 * refusal p50 under 64 retrying clients can go through the daemon's HTTP API on this machine (the GET's rate may be
 * the bench's own client's limit: it spends about as much CPU per call as the leader does).
 *
 * Every system is started on free loopback ports in a temporary directory and stopped at the end; a system whose
 * binaries are missing is skipped with a message. Prints a table with the ratios heddle/other and one JSON line per
 * cell: {"system","workload","concurrency","opsPerSec","p50Ms","p99Ms"} (for contention, opsPerSec counts grants and
 * p50Ms/p99Ms time a refusal).
 *
 * Run: npx -y pnpm@10 --filter @heddle/claims bench:network   (HEDDLE_BENCH_SYSTEMS=heddle,etcd,redis,postgres)
 *
 * `HEDDLE_BENCH_ROUNDS=N` (default 3: one round decides little on a shared machine) runs every system N times, in the listed order in odd rounds and reversed in
 * even ones, so a change in the machine's speed falls on all of them; each round prints its own lines, and the table
 * and the JSON lines give each figure's median over the rounds (each of opsPerSec, p50, p99 on its own).
 */
import { execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Etcd3, type Lease } from "etcd3";
import { Redis } from "ioredis";
import pg from "pg";
import { freeListenPort } from "@heddle/seam";
import { startEtcdCluster } from "./etcd-cluster.ts";
import { HeddleWire, type HeddleClient } from "@heddle/client";
import { startBenchCluster } from "./heddle-cluster.ts";

const SECONDS = Number(process.env["HEDDLE_BENCH_SECONDS"] ?? 5);
const ROUNDS = Number(process.env["HEDDLE_BENCH_ROUNDS"] ?? 3);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`HEDDLE_BENCH_ROUNDS: ${process.env["HEDDLE_BENCH_ROUNDS"]} is not a whole number ≥ 1`);
if (!(SECONDS > 0 && SECONDS <= 3600)) throw new Error(`HEDDLE_BENCH_SECONDS: ${process.env["HEDDLE_BENCH_SECONDS"]} is not a number of seconds in (0, 3600]`);
const WARMUP_MS = Number(process.env["HEDDLE_BENCH_WARMUP_MS"] ?? 5000);
if (!Number.isSafeInteger(WARMUP_MS) || WARMUP_MS < 0 || WARMUP_MS > 600_000) throw new Error(`HEDDLE_BENCH_WARMUP_MS: ${process.env["HEDDLE_BENCH_WARMUP_MS"]} is not a whole number of milliseconds in [0, 600000]`);
const CONCURRENCY = (process.env["HEDDLE_BENCH_CONCURRENCY"] ?? "1,64").split(",").map(Number);
const CONTENDERS = 64;
const KEY_SPACE = 1_000_000;
const LEASE_MS = 30_000;
const ALL = ["heddle", "heddle-http", "etcd", "redis", "postgres"] as const;
type System = (typeof ALL)[number];
/** heddle over HTTP is a second heddle system, measured only when named (its JSON lines say `"system":"heddle","api":"http"`). */
const SYSTEMS = (process.env["HEDDLE_BENCH_SYSTEMS"] ?? "heddle,etcd,redis,postgres").split(",") as System[];
/**
 * Debian's PostgreSQL server binaries: `/usr/lib/postgresql/<major>/bin`, the newest major installed (the
 * package is `postgresql-<major>`, whichever the release ships); null when none is.
 */
const PG_BIN = ((): string | null => {
  const root = "/usr/lib/postgresql";
  let majors: number[] = [];
  try {
    majors = readdirSync(root).map(Number).filter((n) => Number.isInteger(n) && existsSync(join(root, String(n), "bin", "initdb")));
  } catch {
    return null;
  }
  return majors.length === 0 ? null : join(root, String(Math.max(...majors)), "bin");
})();

/** One system's client, as the workloads drive it. `client` numbers the concurrent client (0…n−1). */
interface LockClient {
  /** Takes `key` for `client`; on a refusal, says who holds it when the system can tell (`undefined`: it cannot). */
  take(client: number, key: string): Promise<{ granted: true } | { granted: false; holder: string | undefined }>;
  release(client: number, key: string): Promise<void>;
  close(): Promise<void>;
}

interface Cell {
  system: System;
  workload: "claims" | "contention";
  concurrency: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** contention only: the share of refusals that named the holder. */
  namesHolder?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves once something accepts connections on loopback `port`; throws after 30 s. */
async function waitForPort(port: number, what: string): Promise<void> {
  for (let t = 0; t < 300; t++) {
    const open = await new Promise<boolean>((resolve) => {
      const sock = connect(port, "127.0.0.1");
      sock.once("connect", () => (sock.destroy(), resolve(true)));
      sock.once("error", () => resolve(false));
    });
    if (open) return;
    await sleep(100);
  }
  throw new Error(`${what}: nothing listens on 127.0.0.1:${port} after 30 s`);
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const holderOf = (client: number) => `c${client}`;

/** A cell's clock: load runs from now until `deadline`; only what starts at `warm` or later is counted. */
function cellWindow(): { warm: number; deadline: number } {
  const warm = performance.now() + WARMUP_MS;
  return { warm, deadline: warm + SECONDS * 1000 };
}

/** `concurrency` clients, each taking and releasing random keys until time is up; latency is one pair's. */
async function pairs(system: System, c: LockClient, concurrency: number): Promise<Cell> {
  let rnd = 0x9e3779b9 ^ concurrency;
  const randomKey = () => {
    rnd ^= rnd << 13;
    rnd ^= rnd >>> 17;
    rnd ^= rnd << 5;
    return `k/${(rnd >>> 0) % KEY_SPACE}`;
  };
  const lat: number[] = [];
  let refusedRandom = 0;
  const { warm, deadline } = cellWindow();
  let counted = 0;
  let start = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      while (performance.now() < deadline) {
        const key = randomKey();
        const t0 = performance.now();
        const r = await c.take(i, key);
        if (!r.granted) {
          refusedRandom++; // another client drew the same key: rare in a million
          continue;
        }
        await c.release(i, key);
        const t1 = performance.now();
        if (t0 >= warm) {
          if (start === 0) start = t0;
          lat.push(t1 - t0);
          counted++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - (start || warm)) / 1000;
  lat.sort((a, b) => a - b);
  if (refusedRandom > counted / 100) console.log(`  (${system}: ${refusedRandom} random-key takes refused — more than expected)`);
  return { system, workload: "claims", concurrency, opsPerSec: counted / elapsed, p50Ms: quantile(lat, 0.5), p99Ms: quantile(lat, 0.99) };
}

/** CONTENDERS clients on one key: a grant is released at once, a refusal retried at once. */
async function contention(system: System, c: LockClient): Promise<Cell> {
  const key = `hot/${system}`;
  const refusals: number[] = [];
  let named = 0;
  let grants = 0;
  const { warm, deadline } = cellWindow();
  await Promise.all(
    Array.from({ length: CONTENDERS }, async (_, i) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const r = await c.take(i, key);
        const t1 = performance.now();
        if (r.granted) {
          await c.release(i, key);
          if (t0 >= warm) grants++;
        } else if (t0 >= warm) {
          refusals.push(t1 - t0);
          if (r.holder !== undefined && r.holder !== holderOf(i)) named++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - warm) / 1000;
  refusals.sort((a, b) => a - b);
  return {
    system,
    workload: "contention",
    concurrency: CONTENDERS,
    opsPerSec: grants / elapsed,
    p50Ms: quantile(refusals, 0.5),
    p99Ms: quantile(refusals, 0.99),
    namesHolder: refusals.length === 0 ? NaN : named / refusals.length,
  };
}

/**
 * `clients` callers in a closed loop, each issuing `call` again as soon as it returns, for SECONDS after WARMUP_MS:
 * calls/s and latency p50. By Little's law the latency of such a loop is about clients / rate, whatever the call
 * does — the floor a contention cell's refusal p50 cannot go below when every refusal is retried at once.
 */
async function closedLoop(clients: number, call: (client: number) => Promise<void>): Promise<{ perSec: number; p50Ms: number }> {
  const lat: number[] = [];
  const { warm, deadline } = cellWindow();
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await call(i);
        if (t0 >= warm) lat.push(performance.now() - t0);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  return { perSec: lat.length / ((deadline - warm) / 1000), p50Ms: quantile(lat, 0.5) };
}

/** Runs every cell; `beforeCell` may re-aim the client (heddle follows the Raft leader between cells). */
async function measure(system: System, c: LockClient, beforeCell: () => Promise<void> = async () => {}): Promise<Cell[]> {
  const cells: Cell[] = [];
  for (const n of CONCURRENCY) {
    await beforeCell();
    cells.push(await pairs(system, c, n));
  }
  await beforeCell();
  cells.push(await contention(system, c));
  return cells;
}

// ---------------------------------------------------------------- heddle: 3 daemon processes, through the API

/**
 * heddle through the leader's API: over the call wire (`api` "wire": one `HeddleWire` connection carries all the
 * clients' calls, as the etcd client's one gRPC channel does) or over kept-alive HTTP connections (`"http"`, up to
 * 128 sockets). The same routes, bodies and answers either way.
 */
async function heddleOver(api: "wire" | "http"): Promise<Cell[]> {
  const system: System = api === "wire" ? "heddle" : "heddle-http";
  const { peers, tokens, findLeader, stop } = startBenchCluster("heddle-claims-bench-");
  const wires = new Map<HeddleClient, HeddleWire>();
  /** The call to the current leader `l`, over the chosen API. */
  const post = (path: string, body: unknown): Promise<{ status: number; body: unknown }> => {
    if (api === "http") return l.raw("POST", `/v1${path}`, body);
    let w = wires.get(l);
    if (w === undefined) {
      w = new HeddleWire({ url: l.url, token: tokens[peers.indexOf(l)]! });
      wires.set(l, w);
    }
    return w.raw(path, body);
  };
  // set before the first call (findLeader below); a placeholder until then
  let l: HeddleClient = peers[0]!;
  /** The leader watcher below runs while this is set; cleared on every way out, a throw included. */
  let watching = false;
  try {
    l = await findLeader();
    let leaderChanges = 0;
    // Leadership can move within a cell on a loaded machine (an election timeout while the leader is starved of
    // CPU). A client that stays on the old leader still gets answers — forwarded through Raft, refusals from the
    // log — so follow the leader as a client of any Raft service would: look every 250 ms.
    let leaderMoves = 0;
    watching = true;
    const watcher = (async () => {
      while (watching) {
        await sleep(250);
        try {
          const r = (await l.roster()) as { raft: { role: string } };
          if (r.raft.role === "leader") continue;
          for (const p of peers) {
            const q = (await p.roster()) as { enrolled: string[]; raft: { role: string } };
            if (q.raft.role === "leader" && q.enrolled.length === 3) {
              l = p;
              leaderMoves++;
              break;
            }
          }
        } catch {
          // a peer busy or restarting: look again next time
        }
      }
    })();
    let refusedAtRead = 0;
    let refusedInLog = 0;
    const lc: LockClient = {
      async take(i, key) {
        const r = await post("/claims/take", { holder: holderOf(i), resources: [{ key, mode: "exclusive" }], ttlMs: LEASE_MS });
        if (r.status === 200) return { granted: true };
        const b = r.body as { error?: string; committed?: boolean; refusal?: { blocked?: { holders: string[] }[] } };
        if (r.status !== 409 || b.refusal?.blocked === undefined) throw new Error(`heddle take: HTTP ${r.status} ${JSON.stringify(r.body)}`);
        if (b.committed === false) refusedAtRead++;
        else refusedInLog++;
        return { granted: false, holder: b.refusal.blocked[0]?.holders[0] };
      },
      async release(i, key) {
        const r = await post("/claims/release", { holder: holderOf(i), key });
        if (r.status !== 200) throw new Error(`heddle release: HTTP ${r.status} ${JSON.stringify(r.body)}`);
      },
      async close() {},
    };
    const cells = await measure(system, lc, async () => {
      const now = await findLeader();
      if (now !== l) leaderChanges++;
      l = now;
    });
    console.log(
      `  ${system} refusals: ${refusedAtRead} answered at a confirmed read (no commit), ${refusedInLog} through the log; leader changed between cells ${leaderChanges} time(s), followed within cells ${leaderMoves} time(s)`,
    );
    // The floors of the contention cell's refusal p50 on this machine, same cluster, same client: 64 callers in a
    // closed loop on (a) the cheapest authenticated call, and (b) a take refused at a confirmed read on a key held
    // throughout (no grants, no releases, no commits).
    l = await findLeader();
    // the GET is an HTTP call (the wire carries POSTs only): measured over HTTP alone
    const floorGet = api === "wire" ? null : await closedLoop(CONTENDERS, async () => {
      const r = await l.raw("GET", "/v1/control/roster");
      if (r.status !== 200) throw new Error(`heddle roster: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    });
    const heldKey = "floor/held";
    const held = await l.raw("POST", "/v1/claims/take", { holder: holderOf(CONTENDERS), resources: [{ key: heldKey, mode: "exclusive" }], ttlMs: Math.ceil(3 * SECONDS + 60) * 1000 });
    if (held.status !== 200) throw new Error(`heddle: the floor's key could not be taken: HTTP ${held.status} ${JSON.stringify(held.body)}`);
    const [logBefore, movesBefore] = [refusedInLog, leaderMoves];
    const floorRefusal = await closedLoop(CONTENDERS, async (i) => {
      const r = await lc.take(i, heldKey);
      if (r.granted) throw new Error("heddle: a take of a held key was granted");
    });
    // a leader that moved during the loop answered from the log, through another peer: not the floor it claims
    const moved = refusedInLog > logBefore || leaderMoves > movesBefore;
    watching = false;
    await watcher;
    if (moved) console.log(`  ${system} floors: the leader moved during the refusal floor (${refusedInLog - logBefore} refusals through the log): its figure below is not a floor`);
    console.log(
      `  ${system} floors, ${CONTENDERS} callers in a closed loop on the leader${floorGet === null ? "" : `: an authenticated GET /v1/control/roster ${floorGet.perSec.toFixed(0)}/s p50 ${floorGet.p50Ms.toFixed(2)} ms;`} a take refused at a confirmed read (key held throughout) ${floorRefusal.perSec.toFixed(0)}/s p50 ${floorRefusal.p50Ms.toFixed(2)} ms (Little's law: p50 ≈ ${CONTENDERS} / rate)`,
    );
    return cells;
  } finally {
    watching = false;
    for (const w of wires.values()) w.close();
    stop();
  }
}

const heddle = () => heddleOver("wire");
const heddleHttp = () => heddleOver("http");

// ---------------------------------------------------------------- etcd 3.4: 3 members, txn + lease

async function etcd(): Promise<Cell[]> {
  const cluster = await startEtcdCluster("heddle-claims-etcd-");
  let client: Etcd3 | null = null;
  const leases: Lease[] = [];
  try {
    const c = new Etcd3({ hosts: cluster.leaderUrl });
    client = c;
    const leaseIds: string[] = [];
    for (let i = 0; i < Math.max(CONTENDERS, ...CONCURRENCY); i++) {
      const lease = c.lease(LEASE_MS / 1000);
      leases.push(lease);
      leaseIds.push(String(await lease.grant()));
    }
    const lc: LockClient = {
      async take(i, key) {
        const r = await c
          .if(key, "Create", "==", 0)
          .then(c.put(key).value(holderOf(i)).lease(leaseIds[i]!))
          .else(c.get(key))
          .commit();
        if (r.succeeded) return { granted: true };
        const kv = r.responses[0]?.response_range?.kvs[0];
        return { granted: false, holder: kv === undefined ? undefined : kv.value.toString() };
      },
      async release(i, key) {
        await c.if(key, "Value", "==", holderOf(i)).then(c.delete().key(key)).commit();
      },
      async close() {},
    };
    return await measure("etcd", lc);
  } finally {
    for (const l of leases) await l.revoke().catch(() => {});
    client?.close();
    await cluster.stop();
  }
}

// ---------------------------------------------------------------- Redis: SET NX PX + compare-and-delete

const RELEASE_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

async function redis(): Promise<Cell[]> {
  const dir = mkdtempSync(join(tmpdir(), "heddle-claims-redis-"));
  const port = await freeListenPort();
  const proc = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no", "--maxclients", "1000"], { stdio: "ignore" });
  const conns: Redis[] = [];
  try {
    await waitForPort(port, "redis");
    const n = Math.max(CONTENDERS, ...CONCURRENCY);
    for (let i = 0; i < n; i++) conns.push(new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0 }));
    await Promise.all(conns.map((r) => r.connect()));
    const sha = (await conns[0]!.script("LOAD", RELEASE_SCRIPT)) as string;
    const lc: LockClient = {
      async take(i, key) {
        // SET … NX GET (Redis ≥ 7.0): the old value comes back on a refusal, nil on a grant
        const old = await conns[i]!.call("SET", key, holderOf(i), "NX", "PX", String(LEASE_MS), "GET");
        return old === null ? { granted: true } : { granted: false, holder: String(old) };
      },
      async release(i, key) {
        await conns[i]!.evalsha(sha, 1, key, holderOf(i));
      },
      async close() {},
    };
    return await measure("redis", lc);
  } finally {
    for (const r of conns) r.disconnect();
    proc.kill("SIGKILL");
    await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- PostgreSQL 15: advisory locks

/** A stable 63-bit key for `pg_try_advisory_lock(bigint)` (FNV-1a-64 of the key text). */
function lockId(key: string): string {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < key.length; i++) {
    h ^= BigInt(key.charCodeAt(i));
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return (h & 0x7fffffffffffffffn).toString();
}

async function postgres(): Promise<Cell[]> {
  const dir = mkdtempSync(join(tmpdir(), "heddle-claims-pg-"));
  const data = join(dir, "data");
  const port = await freeListenPort();
  // initdb refuses to run as root: run the server as the `postgres` system user then
  const asRoot = process.getuid?.() === 0;
  const run = (bin: string, args: string[]) =>
    asRoot ? execFileSync("runuser", ["-u", "postgres", "--", join(PG_BIN!, bin), ...args], { stdio: "ignore" }) : execFileSync(join(PG_BIN!, bin), args, { stdio: "ignore" });
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
  }
  const conns: pg.Client[] = [];
  let started = false;
  try {
    run("initdb", ["-D", data, "-A", "trust", "-U", "bench", "--no-sync"]);
    run("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-w", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on`, "start"]);
    started = true;
    const n = Math.max(CONTENDERS, ...CONCURRENCY);
    for (let i = 0; i < n; i++) {
      const c = new pg.Client({ host: "127.0.0.1", port, user: "bench", database: "postgres" });
      await c.connect();
      conns.push(c);
    }
    const lc: LockClient = {
      async take(i, key) {
        const r = await conns[i]!.query({ name: "take", text: "SELECT pg_try_advisory_lock($1::bigint) AS ok", values: [lockId(key)] });
        // an advisory-lock refusal names nobody (finding the holder takes a second query on pg_locks)
        return r.rows[0].ok === true ? { granted: true } : { granted: false, holder: undefined };
      },
      async release(i, key) {
        await conns[i]!.query({ name: "release", text: "SELECT pg_advisory_unlock($1::bigint)", values: [lockId(key)] });
      },
      async close() {},
    };
    return await measure("postgres", lc);
  } finally {
    await Promise.all(conns.map((c) => c.end().catch(() => {})));
    if (started) {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- presence, run, report

function missing(system: System): string | null {
  const has = (cmd: string, args: string[]) => {
    try {
      execFileSync(cmd, args, { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };
  switch (system) {
    case "heddle":
    case "heddle-http":
      return null;
    case "etcd":
      return has("etcd", ["--version"]) ? null : "etcd not found on PATH (apt-get install -y etcd-server)";
    case "redis":
      return has("redis-server", ["--version"]) ? null : "redis-server not found on PATH (apt-get install -y redis-server)";
    case "postgres":
      if (PG_BIN === null) return "no /usr/lib/postgresql/<version>/bin/initdb (apt-get install -y postgresql)";
      if (process.getuid?.() === 0 && !has("id", ["-u", "postgres"])) return "running as root and there is no postgres user to run the server as";
      return null;
  }
}

/** What the bench compares with, as the system reports it (the issue names etcd 3.4: a different one is said). */
function version(system: System): string | null {
  const first = (cmd: string, args: string[]): string | null => {
    try {
      return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split("\n")[0]!.trim();
    } catch {
      return null;
    }
  };
  switch (system) {
    case "heddle":
    case "heddle-http":
      return null;
    case "etcd": {
      const v = first("etcd", ["--version"]);
      return v === null ? null : /\b3\.4\./.test(v) ? v : `${v} (not 3.4, the version the issue compares with)`;
    }
    case "redis":
      return first("redis-server", ["--version"]);
    case "postgres":
      return first(join(PG_BIN!, "postgres"), ["--version"]);
  }
}

const runners: Record<System, () => Promise<Cell[]>> = { heddle, "heddle-http": heddleHttp, etcd, redis, postgres };
const fmt = (x: number | undefined, d = 1) => (x === undefined || !Number.isFinite(x) ? "—" : x.toFixed(d));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? "—" : `${(a / b).toPrecision(3)}×`);

const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const jsonLine = (c: Cell) =>
  JSON.stringify({ system: c.system === "heddle-http" ? "heddle" : c.system, ...(c.system === "heddle-http" ? { api: "http" } : {}), workload: c.workload, concurrency: c.concurrency, opsPerSec: Number(c.opsPerSec.toFixed(1)), p50Ms: Number(c.p50Ms.toFixed(3)), p99Ms: Number(c.p99Ms.toFixed(3)) });
console.log(`claims on the network — ${SECONDS} s per cell after ${WARMUP_MS} ms of the same load, ${ROUNDS} round(s), loopback, ${new Date().toISOString()}; load average ${loadavg()}`);
const present: System[] = [];
for (const s of SYSTEMS) {
  if (!ALL.includes(s)) throw new Error(`HEDDLE_BENCH_SYSTEMS: unknown system ${s} (one of ${ALL.join(", ")})`);
  const why = missing(s);
  if (why === null) {
    present.push(s);
    const v = version(s);
    if (v !== null) console.log(`${s}: ${v}`);
  } else console.log(`${s}: SKIPPED — ${why}`);
}
/** Every round's cells; a system that failed in a round has none from it. */
const perRound: Cell[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  const order = round % 2 === 1 ? present : [...present].reverse();
  if (ROUNDS > 1) console.log(`round ${round} of ${ROUNDS}: ${order.join(", ")}; load average ${loadavg()}`);
  for (const s of order) {
    try {
      const got = await runners[s]();
      perRound.push(...got);
      for (const c of got) console.log(ROUNDS > 1 ? `round ${round}: ${jsonLine(c)}` : jsonLine(c));
    } catch (e) {
      console.log(`${s}: FAILED${ROUNDS > 1 ? ` in round ${round}` : ""} — ${(e as Error).stack ?? String(e)}`);
    }
  }
}
const ran = present.filter((s) => perRound.some((c) => c.system === s));
const median = (xs: readonly number[]): number => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v.length % 2 === 1 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
/** Each cell's median over the rounds that measured it (each figure on its own). */
const cells: Cell[] = [];
for (const c of perRound) {
  if (cells.some((m) => m.system === c.system && m.workload === c.workload && m.concurrency === c.concurrency)) continue;
  const same = perRound.filter((o) => o.system === c.system && o.workload === c.workload && o.concurrency === c.concurrency);
  const m: Cell = {
    system: c.system,
    workload: c.workload,
    concurrency: c.concurrency,
    opsPerSec: median(same.map((o) => o.opsPerSec)),
    p50Ms: median(same.map((o) => o.p50Ms)),
    p99Ms: median(same.map((o) => o.p99Ms)),
  };
  if (c.namesHolder !== undefined) m.namesHolder = median(same.map((o) => o.namesHolder ?? NaN));
  cells.push(m);
}
if (ROUNDS > 1) {
  console.log(`medians over ${ROUNDS} rounds; load average at the end ${loadavg()}`);
  for (const c of cells) console.log(jsonLine(c));
}

const cell = (s: System, w: Cell["workload"], n: number) => cells.find((c) => c.system === s && c.workload === w && c.concurrency === n);
console.log("");
console.log("take + release pairs/s on random keys of a 1,000,000-key space (latency: one pair)");
console.log("| system | clients | pairs/s | p50 ms | p99 ms | heddle/system pairs/s |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const n of CONCURRENCY) {
  for (const s of ran) {
    const c = cell(s, "claims", n);
    console.log(`| ${s} | ${n} | ${fmt(c?.opsPerSec, 0)} | ${fmt(c?.p50Ms, 2)} | ${fmt(c?.p99Ms, 2)} | ${s === "heddle" ? "" : ratio(cell("heddle", "claims", n)?.opsPerSec, c?.opsPerSec)} |`);
  }
}
console.log("");
console.log(`contention: ${CONTENDERS} clients on one key, release at once when granted, retry at once when refused`);
console.log("| system | grants/s | refusal p50 ms | refusal p99 ms | refusal names holder | heddle/system grants/s | system/heddle refusal p50 |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const s of ran) {
  const c = cell(s, "contention", CONTENDERS);
  const h = cell("heddle", "contention", CONTENDERS);
  const names = c?.namesHolder === undefined || !Number.isFinite(c.namesHolder) ? "—" : `${(c.namesHolder * 100).toFixed(0)}%`;
  console.log(`| ${s} | ${fmt(c?.opsPerSec, 0)} | ${fmt(c?.p50Ms, 2)} | ${fmt(c?.p99Ms, 2)} | ${names} | ${s === "heddle" ? "" : ratio(h?.opsPerSec, c?.opsPerSec)} | ${s === "heddle" ? "" : ratio(c?.p50Ms, h?.p50Ms)} |`);
}
process.exit(0);
