/**
 * What one granted-claims op costs each process (a diagnostic, not part of `pnpm bench`): take + release pairs on
 * fresh keys through the leader's HTTP API of a fresh 3-daemon governed cluster — the `claims` workload of
 * `network.ts` — at each client count, then the CPU each process spent per op (a take or a release):
 *
 * - the leader, split by thread: its main thread (HTTP, the governed node, the Raft driver, the seam), V8's workers
 *   (garbage collection, optimizing compiles), libuv's pool (the Raft log's writes and syncs), and its kernel time;
 * - each follower, and this process (the bench's own HTTP client).
 *
 * Why CPU per op and not only ops/s: on a shared 2-core machine the rate moves by 2–3× from one run to the next with
 * the other load (issue 16, s28: 52–235 pairs/s at one client in back-to-back runs of one build), while the CPU a
 * process spends per op moves far less — and with every process of the cluster competing for the same cores, it is
 * what sets the rate when the machine is busy. Compare builds by running this for each, alternately.
 *
 *   npx -y pnpm@10 --filter @heddle/claims exec node bench/cost.ts    # HEDDLE_COST_CONCURRENCY=1,64 HEDDLE_COST_SECONDS=5
 *
 * Prints one line per client count and one JSON line:
 * {"concurrency","pairsPerSec","opP50Ms","leader":{"main","v8","pool","other","kernel"},"followers":[…],"client"} (ms per op).
 */
import { readdirSync, readFileSync } from "node:fs";
import { startBenchCluster } from "./heddle-cluster.ts";

const SECONDS = Number(process.env["HEDDLE_COST_SECONDS"] ?? 5);
if (!(SECONDS > 0 && SECONDS <= 600)) throw new Error(`HEDDLE_COST_SECONDS: ${process.env["HEDDLE_COST_SECONDS"]} is not a number of seconds in (0, 600]`);
const CONCURRENCY = (process.env["HEDDLE_COST_CONCURRENCY"] ?? "1,64").split(",").map(Number);
/** Most clients in one cell: the cluster's client keeps at most 128 sockets to a peer (`heddle-cluster.ts`). */
const MAX_CONCURRENCY = 128;
for (const c of CONCURRENCY) {
  if (!Number.isSafeInteger(c) || c < 1 || c > MAX_CONCURRENCY) throw new Error(`HEDDLE_COST_CONCURRENCY: ${c} is not a whole number of clients in 1…${MAX_CONCURRENCY}`);
}
/** The load before each cell's measured part: the cluster is young, and V8 still compiles its hot code. */
const WARM_MS = 1_000;
/** Linux's clock tick: /proc reports CPU time in 1/100 s. */
const TICK_MS = 10;

/** utime and stime of a /proc stat line, in ticks. */
function times(stat: string): { user: number; kernel: number } {
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(f[11]), kernel: Number(f[12]) };
}

/** CPU ticks of `pid` by thread kind (main, v8, pool, other) plus its kernel time; threads that ended are lost. */
function threadTicks(pid: number): Record<"main" | "v8" | "pool" | "other" | "kernel", number> {
  const out = { main: 0, v8: 0, pool: 0, other: 0, kernel: 0 };
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const { user, kernel } = times(stat);
    const kind = Number(t) === pid ? "main" : name.startsWith("V8") ? "v8" : name.startsWith("libuv") ? "pool" : "other";
    out[kind] += user + kernel;
    out.kernel += kernel;
  }
  return out;
}

const processTicks = (pid: number): number => {
  const { user, kernel } = times(readFileSync(`/proc/${pid}/stat`, "utf8"));
  return user + kernel;
};
const ownTicks = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000 / TICK_MS;
};

const { peers, pids, findLeader, stop } = startBenchCluster("heddle-claims-cost-");
try {
  await findLeader();
  // a leader elected while the others were still starting may lose its term to one of them: let it settle
  await new Promise((r) => setTimeout(r, 2_000));
  console.log(`claims cost per op — ${SECONDS} s per cell, clients ${CONCURRENCY.join(", ")}, ${new Date().toISOString()}; load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
  for (const concurrency of CONCURRENCY) {
    const leader = await findLeader();
    const li = peers.indexOf(leader);
    const leaderPid = pids[li]!;
    const followerPids = pids.filter((_, k) => k !== li);
    const warm = performance.now() + WARM_MS;
    const deadline = warm + SECONDS * 1000;
    const start: { at: { leader: ReturnType<typeof threadTicks>; followers: number[]; client: number } | null } = { at: null };
    const sample = setTimeout(() => (start.at = { leader: threadTicks(leaderPid), followers: followerPids.map(processTicks), client: ownTicks() }), WARM_MS);
    const lat: number[] = [];
    await Promise.all(
      Array.from({ length: concurrency }, async (_, i) => {
        for (let n = 0; performance.now() < deadline; n++) {
          const key = `cost/${i}/${n}`;
          const t0 = performance.now();
          const r = await leader.raw("POST", "/v1/claims/take", { holder: `c${i}`, resources: [{ key, mode: "exclusive" }], ttlMs: 30_000 });
          if (r.status !== 200) throw new Error(`take: HTTP ${r.status} ${JSON.stringify(r.body)}`);
          const t1 = performance.now();
          const q = await leader.raw("POST", "/v1/claims/release", { holder: `c${i}`, key });
          if (q.status !== 200) throw new Error(`release: HTTP ${q.status} ${JSON.stringify(q.body)}`);
          if (t0 >= warm) lat.push(t1 - t0, performance.now() - t1);
        }
      }),
    );
    clearTimeout(sample);
    const b = start.at;
    if (b === null) throw new Error("the cell ended before its warm-up did");
    const roles = (await Promise.all(peers.map(async (p) => ((await p.roster()) as { raft: { role: string } }).raft.role))).join(",");
    const ops = lat.length;
    const perOp = (ticks: number) => Number(((ticks * TICK_MS) / ops).toFixed(3));
    const l = threadTicks(leaderPid);
    const leaderCost = { main: perOp(l.main - b.leader.main), v8: perOp(l.v8 - b.leader.v8), pool: perOp(l.pool - b.leader.pool), other: perOp(l.other - b.leader.other), kernel: perOp(l.kernel - b.leader.kernel) };
    const followers = followerPids.map((p, k) => perOp(processTicks(p) - b.followers[k]!));
    const client = perOp(ownTicks() - b.client);
    lat.sort((x, y) => x - y);
    const p50 = lat[Math.floor(lat.length / 2)] ?? NaN;
    const moved = roles.split(",")[li] !== "leader" ? ` — the leader moved during the cell (roles now ${roles}): its figures mix two leaders` : "";
    console.log(
      `${concurrency} client(s): ${(ops / 2 / SECONDS).toFixed(0)} pairs/s, op p50 ${p50.toFixed(2)} ms; CPU ms per op: leader main ${leaderCost.main} + V8 workers ${leaderCost.v8} + libuv pool ${leaderCost.pool} + other ${leaderCost.other} (kernel ${leaderCost.kernel} of it), followers ${followers.join(" + ")}, client ${client}${moved}`,
    );
    console.log(JSON.stringify({ concurrency, pairsPerSec: Number((ops / 2 / SECONDS).toFixed(1)), opP50Ms: Number(p50.toFixed(3)), leader: leaderCost, followers, client }));
  }
} finally {
  stop();
}
