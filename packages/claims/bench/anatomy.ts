/**
 * Where the contention cell's refusal time goes (a diagnostic, not part of `pnpm bench`): CONTENDERS clients on one
 * key of a fresh 3-daemon governed cluster, each releasing at once when granted and retrying at once when refused —
 * the `contention` workload of `network.ts` — with every call timed, then:
 *
 * - refusals per second, and their p50 / p90 / p99;
 * - which refusals waited for a take in flight: sent while a take that was then granted was in flight and answered
 *   after that grant (a refusal must then wait for the grant's commit, to name a holder whose grant is in the log);
 * - how long a granted take and its release took as the client saw them;
 * - how busy each process was: the leader, the two followers and this client, in cores.
 *
 *   npx -y pnpm@10 --filter @heddle/claims exec node bench/anatomy.ts     # HEDDLE_ANATOMY_ROUNDS=3 HEDDLE_ANATOMY_SECONDS=5
 */
import { readFileSync } from "node:fs";
import { startBenchCluster } from "./heddle-cluster.ts";

const CONTENDERS = 64;
const SECONDS = Number(process.env["HEDDLE_ANATOMY_SECONDS"] ?? 5);
const ROUNDS = Number(process.env["HEDDLE_ANATOMY_ROUNDS"] ?? 3);
if (!(SECONDS > 0 && SECONDS <= 600)) throw new Error(`HEDDLE_ANATOMY_SECONDS: ${process.env["HEDDLE_ANATOMY_SECONDS"]} is not a number of seconds in (0, 600]`);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`HEDDLE_ANATOMY_ROUNDS: ${process.env["HEDDLE_ANATOMY_ROUNDS"]} is not a whole number ≥ 1`);
const WARM_MS = 1_000;

const quantile = (xs: readonly number[], q: number): string => {
  if (xs.length === 0) return "—";
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(2);
};
/** utime + stime of a process, in clock ticks (1/100 s on Linux). */
const ticks = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(f[11]) + Number(f[12]);
};
const ownTicks = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e4;
};

const { peers, pids, findLeader, stop } = startBenchCluster("heddle-claims-anatomy-");
try {
  const l = await findLeader();
  const leader = peers.indexOf(l);
  console.log(`claims contention anatomy — ${CONTENDERS} clients on one key, ${SECONDS} s per round, ${ROUNDS} round(s), ${new Date().toISOString()}`);
  for (let round = 1; round <= ROUNDS; round++) {
    const key = `hot/${round}`;
    const refusals: [number, number][] = [];
    const grants: [number, number, number][] = []; // take sent, granted, released
    const warm = performance.now() + WARM_MS;
    const deadline = warm + SECONDS * 1000;
    let before: number[] = [];
    const sample = setTimeout(() => (before = [...pids.map(ticks), ownTicks()]), WARM_MS);
    await Promise.all(
      Array.from({ length: CONTENDERS }, async (_, i) => {
        while (performance.now() < deadline) {
          const t0 = performance.now();
          const r = await l.raw("POST", "/v1/claims/take", { holder: `h${i}`, resources: [{ key, mode: "exclusive" }], ttlMs: 30_000 });
          const t1 = performance.now();
          if (r.status === 200) {
            const q = await l.raw("POST", "/v1/claims/release", { holder: `h${i}`, key });
            if (q.status !== 200) throw new Error(`release: HTTP ${q.status} ${JSON.stringify(q.body)}`);
            if (t0 >= warm) grants.push([t0, t1, performance.now()]);
          } else if (r.status === 409) {
            if (t0 >= warm) refusals.push([t0, t1]);
          } else throw new Error(`take: HTTP ${r.status} ${JSON.stringify(r.body)}`);
        }
      }),
    );
    clearTimeout(sample);
    const after = [...pids.map(ticks), ownTicks()];
    const busy = after.map((x, k) => ((x - (before[k] ?? x)) / 100 / SECONDS).toFixed(2));
    grants.sort((a, b) => a[0] - b[0]);
    const waited: number[] = [];
    const direct: number[] = [];
    for (const [sent, answered] of refusals) {
      let w = false;
      for (const [g0, g1] of grants) {
        if (g0 > sent) break;
        if (sent < g1 && answered >= g1 - 0.05) {
          w = true;
          break;
        }
      }
      (w ? waited : direct).push(answered - sent);
    }
    const all = refusals.map(([a, b]) => b - a);
    const share = all.length === 0 ? 0 : (100 * waited.length) / all.length;
    console.log(`round ${round}: ${(grants.length / SECONDS).toFixed(0)} grants/s, ${(all.length / SECONDS).toFixed(0)} refusals/s, refusal ms p50 ${quantile(all, 0.5)} p90 ${quantile(all, 0.9)} p99 ${quantile(all, 0.99)}`);
    console.log(`  waited for a take in flight: ${waited.length} (${share.toFixed(0)} %), p50 ${quantile(waited, 0.5)} p90 ${quantile(waited, 0.9)}; the rest: ${direct.length}, p50 ${quantile(direct, 0.5)} p90 ${quantile(direct, 0.9)}`);
    console.log(`  a granted take ms p50 ${quantile(grants.map((g) => g[1] - g[0]), 0.5)} p90 ${quantile(grants.map((g) => g[1] - g[0]), 0.9)}; its release p50 ${quantile(grants.map((g) => g[2] - g[1]), 0.5)} p90 ${quantile(grants.map((g) => g[2] - g[1]), 0.9)}`);
    console.log(`  cores busy: leader ${busy[leader]}, followers ${[0, 1, 2].filter((k) => k !== leader).map((k) => busy[k]).join(" + ")}, this client ${busy[3]}`);
  }
} finally {
  stop();
}
