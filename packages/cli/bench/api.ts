// The API bench: reserve + complete pairs over HTTP on loopback against a daemon in its own process,
// at several concurrencies, with the SQLite store (the real thing, fsync on every commit) and with the
// in-memory store (the same path without fsync: what HTTP, validation and the node cost). Beside it, the
// same pairs called in-process on a node with the SQLite store in the same folder, at the same moment:
// the fsync floor any API figure sits on.
//   npx -y pnpm@10 --filter @heddle/cli bench                       (10 s per cell)
//   HEDDLE_BENCH_SECONDS=3 HEDDLE_BENCH_CONCURRENCY=1,8 npx -y pnpm@10 --filter @heddle/cli bench
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { heddleStatic, lane, lowerTopology, MemoryNetwork, realTimers, seededRandom, sqliteStore } from "@heddle/node";
import { HeddleClient } from "@heddle/client";
import { initCluster } from "@heddle/daemon";
import { benchPairs } from "../src/bench.ts";

const SECONDS = Number(process.env["HEDDLE_BENCH_SECONDS"] ?? "10");
const CONCURRENCY = (process.env["HEDDLE_BENCH_CONCURRENCY"] ?? "1,8,64").split(",").map(Number);
const LEAF = "tenant-a";

async function inProcessFloor(dir: string, pairs: number): Promise<{ p50Ms: number; pairsPerSec: number }> {
  const net = new MemoryNetwork({ timers: realTimers, random: seededRandom(1) });
  const seam = net.join("solo");
  const node = heddleStatic({
    seam,
    self: ReplicaId("solo"),
    root: GroupId("root"),
    supply: new Map([[ReplicaId("solo"), 1_000_000_000n]]),
    topology: lowerTopology("root", [lane(LEAF, 1)]),
    config: { policy: { quantum: 1_000_000n }, maxHoldingsPerPeer: 1_000_000_000n, timers: realTimers, random: seededRandom(2), store: sqliteStore(join(dir, "floor.sqlite")) },
  });
  const edge = lowerTopology("root", [lane(LEAF, 1)])[0]!.id;
  node.advertise(edge, { targetOutstanding: 1_000_000_000n, maximumUsefulGrant: 1_000_000_000n });
  node.schedule(GroupId("root"));
  const t: number[] = [];
  const start = performance.now();
  for (let i = 0; i < pairs; i++) {
    const t0 = performance.now();
    const r = node.reserve(GroupId(LEAF), 1n);
    if (!r.ok) throw new Error(`floor: reserve refused ${r.refusal.kind}`);
    node.complete(r.id, 1n);
    t.push(performance.now() - t0);
  }
  const elapsed = performance.now() - start;
  await node.shutdown();
  t.sort((a, b) => a - b);
  return { p50Ms: Math.round(t[Math.floor(t.length / 2)]! * 1000) / 1000, pairsPerSec: Math.round(pairs / (elapsed / 1000)) };
}

async function daemonProcess(config: string, store: "sqlite" | "memory") {
  const child = spawn(process.execPath, [fileURLToPath(new URL("./daemon-child.ts", import.meta.url)), config, store], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((res, rej) => {
    createInterface({ input: child.stdout! }).once("line", res);
    child.once("exit", (c) => rej(new Error(`bench daemon exited with ${c}`)));
  });
  return { url, stop: () => new Promise<void>((res) => (child.once("exit", () => res()), child.kill("SIGTERM"))) };
}

const dir = mkdtempSync(join(tmpdir(), "heddle-api-bench-"));
try {
  console.log(`heddle API bench — ${new Date().toISOString()} — node ${process.version} — load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  console.log(`one peer, static mode, loopback HTTP/1.1 keep-alive; ${SECONDS} s per cell; one op = reserve + complete (cost 1)\n`);
  const floor = await inProcessFloor(dir, 300);
  console.log(`in-process node, SQLite (WAL, synchronous=FULL): p50 ${floor.p50Ms} ms per pair, ${floor.pairsPerSec} pairs/s  (the fsync floor now)`);
  for (const store of ["sqlite", "memory"] as const) {
    const [peer] = await initCluster({ dir: join(dir, store), peers: 1, mode: "static", supply: 1_000_000_000_000n, quantum: 1_000_000n, tree: `${LEAF}=1` });
    const d = await daemonProcess(peer!.config, store);
    const { readFileSync } = await import("node:fs");
    const c = new HeddleClient({ url: d.url, token: readFileSync(join(peer!.dir, "token"), "utf8").trim() });
    await c.demand({ leaf: LEAF, targetOutstanding: 10_000_000n, maximumUsefulGrant: 1_000_000n, leaseMs: 3_600_000 });
    while (BigInt(((await c.holdings(LEAF)) as { groups: { available: string }[] }).groups[0]!.available) < 1_000_000n) await new Promise((r) => setTimeout(r, 50));
    for (const n of CONCURRENCY) {
      const r = await benchPairs(c, { leaf: LEAF, concurrency: n, durationMs: SECONDS * 1000 });
      console.log(`API  store=${store.padEnd(6)}  concurrency ${String(n).padStart(3)}  ${String(r.opsPerSec).padStart(6)} pairs/s  p50 ${r.p50Ms.toFixed(3).padStart(8)} ms  p99 ${r.p99Ms.toFixed(3).padStart(8)} ms  (${r.pairs} pairs, ${r.refused} refused)`);
      console.log(JSON.stringify({ opsPerSec: r.opsPerSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, concurrency: n, durationS: r.durationS, store }));
    }
    c.close();
    await d.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
