/**
 * Commit throughput and latency of the governed Raft, side by side with etcd 3.4 (governed.md §5.5; issue 6).
 *
 * Both systems run as N separate OS processes on 127.0.0.1 with fsync on (ours: SQLite WAL `synchronous=FULL`,
 * transport = the node package's libp2p seam; etcd: its defaults, which fsync the WAL). The load generator is
 * this process; it writes 256-byte values with 1 and 64 writes outstanding to the leader and counts a write done
 * when the leader has applied it (ours: a JSON line over the child's stdin/stdout pipe; etcd: its HTTP/JSON
 * gateway `/v3/kv/put`). If `etcd` is not on PATH the etcd column is skipped with a message.
 *
 *   npx -y pnpm@10 --filter @heddle/governed bench            # defaults: 4 s per cell
 *   HEDDLE_BENCH_SECONDS=10 npx -y pnpm@10 --filter @heddle/governed bench
 */
import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess, ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { loadOrCreatePeerKey, MemoryNetwork, peerIdOf, realTimers, seededRandom } from "@heddle/node";
import { memoryRaftStorage, raftChannelTransport, raftNode } from "../src/index.ts";
import type { RaftNode } from "../src/index.ts";

const SECONDS = Number(process.env.HEDDLE_BENCH_SECONDS ?? 4);
const WARMUP_MS = 500;
const VALUE = "v".repeat(256);
const SIZES = [3, 5];
const CONCURRENCY = [1, 64];
const fixture = join(import.meta.dirname, "..", "test", "fixtures", "raft-process.ts");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Cell {
  ops: number;
  seconds: number;
  p50: number;
  p99: number;
  /** Writes that failed (e.g. an election under CPU starvation); retried, not counted as ops. */
  failures: number;
}

/** Runs `concurrency` workers for SECONDS after a warm-up; `write` resolves when one write is applied. */
async function load(concurrency: number, write: (i: number) => Promise<void>): Promise<Cell> {
  const lat: number[] = [];
  let n = 0;
  let failures = 0;
  const warmEnd = Date.now() + WARMUP_MS;
  const end = warmEnd + SECONDS * 1000;
  let startedAt = 0;
  const worker = async (w: number): Promise<void> => {
    for (;;) {
      const t0 = performance.now();
      if (Date.now() >= end) return;
      try {
        await write(w * 1_000_000 + n++);
      } catch {
        failures++;
        await sleep(20);
        continue;
      }
      const t1 = performance.now();
      if (t0 >= startedAt && startedAt > 0 && Date.now() <= end) lat.push(t1 - t0);
    }
  };
  const ws = Array.from({ length: concurrency }, (_, w) => worker(w));
  await sleep(WARMUP_MS);
  startedAt = performance.now();
  await Promise.all(ws);
  const seconds = (performance.now() - startedAt) / 1000;
  lat.sort((a, b) => a - b);
  const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  return { ops: lat.length, seconds, p50: q(0.5), p99: q(0.99), failures };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a !== null ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

// ---------------------------------------------------------------- ours

class Member {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  id = "";
  addr = "";
  #req = 0;
  readonly #waiting = new Map<number, (r: Record<string, unknown>) => void>();
  readonly ready: Promise<void>;
  constructor(dir: string, index: number, ids: string[], voters: string[]) {
    this.child = spawn(process.execPath, [fixture, dir, String(index), JSON.stringify(ids), JSON.stringify(voters)], { stdio: ["pipe", "pipe", "inherit"] });
    let onReady: () => void = () => {};
    this.ready = new Promise((r) => (onReady = r));
    createInterface({ input: this.child.stdout }).on("line", (l) => {
      const m = JSON.parse(l) as Record<string, unknown>;
      if (m.ev === "ready") {
        this.id = m.id as string;
        this.addr = m.addr as string;
        onReady();
      } else if (typeof m.req === "number") {
        this.#waiting.get(m.req)?.(m);
        this.#waiting.delete(m.req);
      }
    });
  }
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
  try {
    for (let i = 0; i < size; i++) {
      const m = new Member(dir, i, ids, ids);
      await m.ready;
      members.push(m);
    }
    for (const a of members) for (const b of members) if (a !== b) a.child.stdin.write(JSON.stringify({ cmd: "addr", id: b.id, addr: b.addr }) + "\n");
    let leader: Member | undefined;
    for (let t = 0; t < 200 && leader === undefined; t++) {
      const st = await Promise.all(members.map((m) => m.ask({ cmd: "status" })));
      const i = st.findIndex((s) => s.role === "leader");
      if (i >= 0) leader = members[i];
      else await sleep(100);
    }
    if (leader === undefined) throw new Error("no leader");
    const l = leader;
    const cells: Cell[] = [];
    for (const c of CONCURRENCY) {
      cells.push(
        await load(c, async (i) => {
          const r = await l.ask({ cmd: "put", key: `k${i % 1000}`, value: VALUE });
          if (r.ok !== true) throw new Error(`put failed: ${JSON.stringify(r)}`);
        }),
      );
    }
    return cells;
  } finally {
    for (const m of members) m.child.kill("SIGKILL");
    await sleep(200);
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
    const enc = new TextEncoder();
    const cells: Cell[] = [];
    for (const c of CONCURRENCY) cells.push(await load(c, async (i) => void (await l.propose(enc.encode(`k${i % 1000}=${VALUE}`), null))));
    return cells;
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
  }
}

// ---------------------------------------------------------------- etcd

function etcdAvailable(): string | null {
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
  for (let i = 0; i < size; i++) {
    peers.push(await freePort());
    clients.push(await freePort());
  }
  const initial = peers.map((p, i) => `e${i}=http://127.0.0.1:${p}`).join(",");
  const procs: ChildProcess[] = [];
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
    }
    let leaderUrl: string | null = null;
    for (let t = 0; t < 300 && leaderUrl === null; t++) {
      for (const c of clients) {
        try {
          const r = await fetch(`http://127.0.0.1:${c}/v3/maintenance/status`, { method: "POST", body: "{}" });
          const s = (await r.json()) as { header?: { member_id?: string }; leader?: string };
          if (s.leader !== undefined && s.leader !== "0" && s.header?.member_id === s.leader) leaderUrl = `http://127.0.0.1:${c}`;
        } catch {
          // not up yet
        }
      }
      if (leaderUrl === null) await sleep(100);
    }
    if (leaderUrl === null) throw new Error("etcd: no leader");
    const b64 = (s: string): string => Buffer.from(s).toString("base64");
    const value = b64(VALUE);
    const cells: Cell[] = [];
    for (const c of CONCURRENCY) {
      cells.push(
        await load(c, async (i) => {
          const r = await fetch(`${leaderUrl}/v3/kv/put`, { method: "POST", body: JSON.stringify({ key: b64(`k${i % 1000}`), value }) });
          if (!r.ok) throw new Error(`etcd put: HTTP ${r.status}`);
          await r.arrayBuffer();
        }),
      );
    }
    return cells;
  } finally {
    for (const p of procs) p.kill("SIGKILL");
    await sleep(300);
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- report

const fmt = (x: number, d = 1): string => (Number.isFinite(x) ? x.toFixed(d) : "—");
const etcdVersion = etcdAvailable();
console.log(`governed Raft vs etcd — ${SECONDS} s per cell, 256-byte values, fsync on, loopback, ${new Date().toISOString()}`);
console.log(etcdVersion === null ? "etcd: NOT INSTALLED — the etcd column is skipped (apt-get install -y etcd-server)" : `etcd: ${etcdVersion}`);
console.log("");
console.log("| voters | clients | ours ops/s | ours p50 ms | ours p99 ms | etcd ops/s | etcd p50 ms | etcd p99 ms | ops/s ours/etcd | p50 ours/etcd |");
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const size of SIZES) {
  const o = await ours(size);
  const e = etcdVersion === null ? null : await etcd(size);
  CONCURRENCY.forEach((c, k) => {
    const a = o[k]!;
    const b = e?.[k];
    const ta = a.ops / a.seconds;
    const tb = b === undefined ? NaN : b.ops / b.seconds;
    console.log(
      `| ${size} | ${c} | ${fmt(ta, 0)} | ${fmt(a.p50, 2)} | ${fmt(a.p99, 2)} | ${b === undefined ? "skipped" : fmt(tb, 0)} | ${b === undefined ? "—" : fmt(b.p50, 2)} | ${b === undefined ? "—" : fmt(b.p99, 2)} | ${fmt(ta / tb, 2)} | ${b === undefined ? "—" : fmt(a.p50 / b.p50, 2)} |`,
    );
  });
  const failed = [...o, ...(e ?? [])].reduce((x, c) => x + c.failures, 0);
  if (failed > 0) console.log(`(${size} voters: ${failed} writes failed and were retried — not counted)`);
}

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
