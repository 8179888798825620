// @heddle/node benchmarks (issue 14). One run prints every figure the issue asks for, as a table line and a
// JSON line per cell:
//   mutation — per-mutation cost (a local delegate + delivery to 2 peers) at 10, 1 000 and 10 000 edges,
//              and inbound delta processing at the receiver (median, p99) at the same sizes;
//   wire     — bytes per mutation per recipient for a delegate over libp2p at 3, 10 and 30 peers;
//   mesh     — 1 000 peers on MemoryNetwork: mesh setup, then convergence of a 100-mutation burst;
//   restart  — a rolling restart of 10 libp2p peers from their SQLite stores: bytes moved per restart
//              against the state size;
//   node     — the reservation and schedule costs of bench/node-bench.ts.
// Run: npx -y pnpm@10 --filter @heddle/node bench            (everything)
//      npx -y pnpm@10 --filter @heddle/node bench mutation   (one part: mutation | wire | mesh | restart | node)
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { AttachmentId, GroupId, LedgerReplica, ReplicaId, Weight, type AttachmentRecord } from "@heddle/ledger";
import { startLibp2pSeams, sleep } from "@heddle/seam/testing";
import { MemoryNetwork, heddleStatic, staticGenesis, libp2pSeam, memoryStore, realTimers, seededRandom, sqliteStore, type HeddleNode, type Libp2pSeam, type Seam, type Timers } from "../src/index.ts";
import { Node, VirtualTimers } from "../src/testing.ts";

const only = process.argv[2];
/** The mutation part's ledger sizes (`HEDDLE_BENCH_EDGES=10000` for one); the ratio is printed when 10 and 10 000 both ran. */
const EDGE_SIZES = (process.env.HEDDLE_BENCH_EDGES ?? "10,1000,10000").split(",").map(Number);
/** The wire part's cluster sizes (`HEDDLE_BENCH_PEERS=3,10` to skip 30). */
const WIRE_PEERS = (process.env.HEDDLE_BENCH_PEERS ?? "3,10,30").split(",").map(Number);
/** The mesh part's modes (`HEDDLE_BENCH_MESH=spaced` for one): the burst batched into one delta, or one delta per mutation. */
const MESH_MODES = (process.env.HEDDLE_BENCH_MESH ?? "burst,spaced").split(",") as ("burst" | "spaced")[];
const want = (part: string) => only === undefined || only === part;
const json = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const digest = (n: HeddleNode) => (n as Node).ledgerDigest();
const converged = (nodes: HeddleNode[]) => nodes.every((n) => digest(n) === digest(nodes[0]!));

/** `n` leaf edges under the root, ids zero-padded so their order is their index. */
function flatTopology(n: number): AttachmentRecord[] {
  return Array.from({ length: n }, (_, i) => ({ id: AttachmentId(`e${String(i).padStart(5, "0")}`), parent: GroupId("root"), child: GroupId(`g${i}`), weight: Weight.of(BigInt(1 + (i % 3))) }));
}

/**
 * `n` edges: `root → hot`, `root → bulk`, and `n − 2` leaves under `bulk`. Mutations delegate down
 * `root → hot`, so the delegate's own reads (holdings at the root sum over the root's children — the
 * ledger's accounting, O(children)) are the same at every size, and what grows with `n` is only the
 * rest of the ledger: exactly what replication must not pay for.
 */
function hotTopology(n: number): AttachmentRecord[] {
  const rec = (id: string, parent: string, child: string): AttachmentRecord => ({ id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.ONE });
  return [rec("hot", "root", "hot"), rec("bulk", "root", "bulk"), ...Array.from({ length: n - 2 }, (_, i) => rec(`b${String(i).padStart(5, "0")}`, "bulk", `leaf${i}`))];
}

interface StartOptions {
  supply: ReadonlyMap<ReplicaId, bigint>;
  topology: readonly AttachmentRecord[];
  timers: Timers;
  seed: number;
  store?: (id: string) => ReturnType<typeof memoryStore>;
}

function start(seam: Seam, o: StartOptions, k: number): HeddleNode {
  return heddleStatic({
    seam, self: ReplicaId(seam.self), root: GroupId("root"), supply: o.supply, topology: o.topology,
    config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1n << 40n, timers: o.timers, random: seededRandom(o.seed * 1000 + k), store: o.store?.(seam.self) ?? memoryStore() },
  });
}

/**
 * The author of the mutations: a replica of node 0's view on which each delegate is computed; its patch
 * goes through the node's local mutation path (`controlSink().publish`: commit, install, publish).
 */
function author(node: HeddleNode): (edge: AttachmentId) => void {
  const view = new LedgerReplica(node.ledger.get());
  const self = ReplicaId(node.self);
  const sink = node.controlSink();
  return (edge) => {
    const r = view.delegate(self, edge, 1n);
    if (!r.ok) throw new Error(`delegate refused: ${r.refusal.kind}`);
    sink.publish(r.patch);
  };
}

/** A seam that times the receiver's whole synchronous handling of every ledger-channel delta frame. */
function timedSeam(inner: Seam, samples: number[]): Seam {
  return {
    ...inner,
    self: inner.self,
    maxFrameBytes: inner.maxFrameBytes,
    peers: inner.peers,
    send: (to, f) => inner.send(to, f),
    broadcast: (f) => inner.broadcast(f),
    onBackpressure: (fn) => inner.onBackpressure(fn),
    close: () => inner.close(),
    onFrame(fn) {
      return inner.onFrame((from, f) => {
        if (f[0] !== 1 || f[2] !== 1) return fn(from, f); // not (ledger channel, delta)
        const t = performance.now();
        fn(from, f);
        samples.push((performance.now() - t) * 1000);
      });
    },
  };
}

// ---- mutation: per-mutation cost and inbound processing at 10, 1 000, 10 000 edges ---------------------

interface MutationCell {
  /** Wall time per mutation, median round. */
  perMutationUs: number;
  /** This process's CPU time (user + system) per mutation, median round: what a shared machine's load leaves alone. */
  perMutationCpuUs: number;
  inbound: number[];
  setupMs: number;
}

/** One cluster of the mutation part: 3 nodes on their own MemoryNetwork and virtual clock. */
interface MutationCluster {
  readonly edges: number;
  readonly setupMs: number;
  /** b's handling time of every inbound delta frame since the last reset, µs. */
  readonly inbound: number[];
  /** `count` delegates on a, each published and delivered; returns wall and CPU µs per mutation. */
  round(count: number): { wallUs: number; cpuUs: number };
  /** Lets the cluster settle, checks that all three are equal, shuts it down. */
  finish(): Promise<void>;
}

/** 3 nodes on a fresh MemoryNetwork with an `edges`-edge tree. */
function mutationCluster(edges: number): MutationCluster {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(edges), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 1] } });
  const supply = new Map(["a", "b", "c"].map((id) => [ReplicaId(id), 1n << 40n]));
  const topology = hotTopology(edges);
  const t0 = performance.now();
  const inbound: number[] = [];
  const nodes = ["a", "b", "c"].map((id, k) => start(id === "b" ? timedSeam(net.join(id), inbound) : net.join(id), { supply, topology, timers, seed: edges }, k));
  const setupMs = performance.now() - t0;
  timers.advanceBy(10);
  const delegate = author(nodes[0]!);
  return {
    edges,
    setupMs,
    inbound,
    round(count) {
      const t = performance.now();
      const c = process.cpuUsage();
      for (let i = 0; i < count; i++) {
        delegate(AttachmentId("hot"));
        timers.advanceBy(2); // flush the batch, deliver to both peers (1 ms), let coalesced acks run
      }
      const used = process.cpuUsage(c);
      return { wallUs: ((performance.now() - t) / count) * 1000, cpuUs: (used.user + used.system) / count };
    },
    async finish() {
      for (let i = 0; i < 50 && !converged(nodes); i++) timers.advanceBy(10);
      if (!converged(nodes)) throw new Error(`${edges} edges: no convergence`);
      for (const n of nodes) await n.shutdown();
    },
  };
}

/**
 * Every size's cluster is built first, then the rounds interleave (10, 1 000, 10 000, 10, …), so a change
 * in the machine's load during the run lands on every size alike and the ratio compares like with like.
 */
async function mutationCells(sizes: readonly number[], rounds: number, perRound: number): Promise<Map<number, MutationCell>> {
  const clusters = sizes.map((e) => mutationCluster(e));
  for (const c of clusters) c.round(perRound); // warm-up on each cluster
  const wall = new Map<number, number[]>(sizes.map((e) => [e, []]));
  const cpu = new Map<number, number[]>(sizes.map((e) => [e, []]));
  for (const c of clusters) c.inbound.length = 0;
  for (let r = 0; r < rounds; r++) {
    for (const c of clusters) {
      const x = c.round(perRound);
      wall.get(c.edges)!.push(x.wallUs);
      cpu.get(c.edges)!.push(x.cpuUs);
    }
  }
  const out = new Map<number, MutationCell>();
  for (const c of clusters) {
    await c.finish();
    out.set(c.edges, { perMutationUs: median(wall.get(c.edges)!), perMutationCpuUs: median(cpu.get(c.edges)!), inbound: c.inbound, setupMs: c.setupMs });
  }
  return out;
}

async function mutationPart(): Promise<void> {
  console.log("\nper mutation: a local delegate on a (root → hot; the other edges hang under a sibling), committed and published, delivered to b and c");
  console.log("(MemoryNetwork, link delay 1 ms, virtual time; the median of 9 rounds of 200 after a warm-up, the sizes' rounds interleaved), and b's");
  console.log("whole synchronous handling of each inbound delta frame (decode, join, decide, queue for persistence, schedule the ack)");
  const warm = mutationCluster(10); // warms the JIT for every size alike
  warm.round(2_000);
  await warm.finish();
  const perMutation = await mutationCells(EDGE_SIZES, 9, 200);
  for (const edges of EDGE_SIZES) {
    const c = perMutation.get(edges)!;
    const inMed = median(c.inbound);
    const inP99 = pct(c.inbound, 0.99);
    console.log(
      `edges=${String(edges).padStart(6)}  per mutation ${c.perMutationUs.toFixed(1).padStart(8)} µs wall ${c.perMutationCpuUs.toFixed(1).padStart(8)} µs CPU   inbound delta median ${inMed.toFixed(1).padStart(6)} µs  p99 ${inP99.toFixed(1).padStart(7)} µs  (${c.inbound.length} deltas; 3 nodes built in ${c.setupMs.toFixed(0)} ms)`,
    );
    json({ bench: "mutation", edges, perMutationUs: +c.perMutationUs.toFixed(2), perMutationCpuUs: +c.perMutationCpuUs.toFixed(2), inboundMedianUs: +inMed.toFixed(2), inboundP99Us: +inP99.toFixed(2), deltas: c.inbound.length });
  }
  const small = perMutation.get(10);
  const large = perMutation.get(10_000);
  if (small === undefined || large === undefined) return;
  const ratio = large.perMutationUs / small.perMutationUs;
  const cpuRatio = large.perMutationCpuUs / small.perMutationCpuUs;
  console.log(`10 000-edge / 10-edge per-mutation cost: ${ratio.toFixed(2)}× wall, ${cpuRatio.toFixed(2)}× CPU (target ≤ 2×)`);
  json({ bench: "mutation-ratio", ratio: +ratio.toFixed(3), cpuRatio: +cpuRatio.toFixed(3) });
}

// ---- wire: bytes per mutation per recipient over libp2p -------------------------------------------------

async function waitFor(cond: () => boolean, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(10);
  }
}

async function wirePart(): Promise<void> {
  console.log("\nbytes per mutation per recipient: 100 delegates on one peer over libp2p (TCP + Noise + yamux, 127.0.0.1), every byte every seam sent (length prefixes, acks, digests, pings) / (100 × recipients)");
  for (const n of WIRE_PEERS) {
    const { seams } = await startLibp2pSeams(n);
    const supply = new Map(seams.map((s) => [ReplicaId(s.self), 1n << 40n]));
    const topology = flatTopology(10);
    const nodes = seams.map((s, k) => start(s, { supply, topology, timers: realTimers, seed: n }, k));
    await waitFor(() => seams.every((s) => s.peers.get().size === n - 1), "full mesh", 300_000); // 435 Noise handshakes at 30 peers
    await sleep(300);
    const delegate = author(nodes[0]!);
    const bytes = () => seams.reduce((t, s) => t + s.counters().bytesOut, 0);
    for (const mode of ["spaced", "burst"] as const) {
      const b0 = bytes();
      const t0 = Date.now();
      for (let i = 0; i < 100; i++) {
        delegate(topology[i % 10]!.id);
        if (mode === "spaced") await sleep(2); // one delta per mutation: the batch closes each turn
      }
      await waitFor(() => converged(nodes), `${n} peers converge`);
      const perRecipient = (bytes() - b0) / (100 * (n - 1));
      const ms = Date.now() - t0;
      console.log(`libp2p peers=${String(n).padStart(3)}  ${mode.padEnd(6)}  ${perRecipient.toFixed(1).padStart(7)} bytes per mutation per recipient   all equal after ${ms} ms`);
      json({ bench: "wire", peers: n, mode, bytesPerMutationPerRecipient: +perRecipient.toFixed(2), ms });
      await sleep(50);
    }
    for (const nd of nodes) await nd.shutdown();
    for (const s of seams) await s.close();
  }
}

// ---- mesh: 1 000 peers on MemoryNetwork ------------------------------------------------------------------

async function meshPart(): Promise<void> {
  const n = 1_000;
  console.log(`\n${n} peers on MemoryNetwork (link delay 1–5 ms): build the nodes, form the mesh, then converge a 100-mutation burst`);
  for (const mode of MESH_MODES) {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(7), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 5] } });
    const ids = Array.from({ length: n }, (_, i) => `peer-${String(i).padStart(4, "0")}`);
    const supply = new Map(ids.map((id) => [ReplicaId(id), 1_000n]));
    const topology = flatTopology(10);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const nodes = ids.map((id, k) => start(net.join(id), { supply, topology, timers, seed: 7 }, k));
    const t1 = performance.now();
    timers.advanceBy(10); // the fabric announces membership: every node meets 999 peers
    const t2 = performance.now();
    const sent0 = net.stats().bytesSent;
    const v0 = timers.now();
    const delegate = author(nodes[0]!);
    for (let i = 0; i < 100; i++) {
      delegate(topology[i % 10]!.id);
      if (mode === "spaced") timers.advanceBy(1);
    }
    while (!converged(nodes)) {
      timers.advanceBy(1);
      if (timers.now() - v0 > 60_000) throw new Error("no convergence within 60 s of virtual time");
    }
    const t3 = performance.now();
    const cpu = process.cpuUsage(c0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const perRecipient = (net.stats().bytesSent - sent0) / (100 * (n - 1));
    const build = t1 - t0;
    const mesh = t2 - t1;
    const burst = t3 - t2;
    console.log(
      `peers=${n} ${mode.padEnd(6)}  build ${build.toFixed(0)} ms  mesh setup ${mesh.toFixed(0)} ms  burst converged in ${burst.toFixed(0)} ms wall (${timers.now() - v0} ms virtual)  ` +
        `total ${(build + mesh + burst).toFixed(0)} ms wall, ${cpuMs.toFixed(0)} ms CPU  bytes/mutation/recipient ${perRecipient.toFixed(1)}`,
    );
    json({ bench: "mesh", peers: n, mode, buildMs: +build.toFixed(0), meshSetupMs: +mesh.toFixed(0), burstMs: +burst.toFixed(0), virtualMs: timers.now() - v0, totalMs: +(build + mesh + burst).toFixed(0), totalCpuMs: +cpuMs.toFixed(0), bytesPerMutationPerRecipient: +perRecipient.toFixed(2) });
    for (const nd of nodes) await nd.shutdown();
  }
}

// ---- restart: a rolling restart of 10 libp2p peers from their stores -------------------------------------

async function restartPart(): Promise<void> {
  const n = 10;
  console.log(`\nrolling restart of ${n} libp2p peers, each from its SQLite store: bytes every seam sent from the stop until all are equal again, against the state size`);
  const dir = mkdtempSync(join(tmpdir(), "heddle-restart-bench-"));
  try {
    const { seams, keys } = await startLibp2pSeams(n);
    const all: Libp2pSeam[] = [...seams];
    const supply = new Map(seams.map((s) => [ReplicaId(s.self), 1n << 40n]));
    const topology = flatTopology(200);
    const o: StartOptions = { supply, topology, timers: realTimers, seed: 11, store: (id) => sqliteStore(join(dir, `${id}.db`)) };
    const nodes = seams.map((s, k) => start(s, o, k));
    await waitFor(() => seams.every((s) => s.peers.get().size === n - 1), "full mesh", 300_000);
    // Give the ledger some state: every peer schedules its holdings over the 200 edges.
    for (const nd of nodes) {
      for (const r of topology) nd.advertise(r.id, { targetOutstanding: 50n, maximumUsefulGrant: 10n });
      nd.schedule(GroupId("root"));
    }
    await waitFor(() => converged(nodes), "initial convergence", 600_000); // 2,000 grants, each fsynced by SQLite
    const bytes = () => all.reduce((t, s) => t + s.counters().bytesOut, 0);
    // Let the setup's traffic (200 demand adverts per peer, their slots growing to 200 entries) drain first.
    for (let last = -1; bytes() !== last; ) {
      last = bytes();
      await sleep(1_000);
    }
    const state = nodes[0]!.ledger.get();
    // What a full-state transfer would carry: the state beyond the genesis, in the binary form.
    const wire = state.beyond(staticGenesis(GroupId("root"), supply, topology)).encodeBinary([nodes[0]!.self]).length;
    const full = state.encodeBinary().length;
    const canonical = new TextEncoder().encode(state.encode()).length;
    let worst = 0;
    for (let i = 0; i < n; i++) {
      const b0 = bytes();
      await nodes[i]!.shutdown();
      await seams[i]!.close();
      const seam = await libp2pSeam({
        privateKey: keys[i]!, listen: ["/ip4/127.0.0.1/tcp/0"], roster: seams.filter((_, j) => j !== i).map((s) => ({ id: s.self, addrs: s.addrs() })),
        allowOnlyRoster: true, timers: realTimers, random: seededRandom(500 + i), redialMinMs: 100, redialMaxMs: 1_000,
      });
      for (const s of seams) if (s !== seams[i]) s.addRosterEntry({ id: seam.self, addrs: seam.addrs() });
      seams[i] = seam;
      all.push(seam);
      nodes[i] = start(seam, o, 100 + i);
      await waitFor(() => seam.peers.get().size === n - 1 && converged(nodes), `restart ${i} converges`);
      await sleep(100); // let the last acks land
      const moved = bytes() - b0;
      worst = Math.max(worst, moved);
      console.log(`restart ${i}: ${moved} bytes moved  = ${(moved / full).toFixed(3)}× the binary state (${full} B), ${(moved / canonical).toFixed(3)}× its canonical JSON (${canonical} B)`);
      json({ bench: "restart", peer: i, bytesMoved: moved, stateBinaryBytes: full, stateCanonicalBytes: canonical, ratio: +(moved / full).toFixed(4) });
    }
    console.log(`worst restart: ${worst} bytes = ${(worst / full).toFixed(3)}× the state size (target ≤ 2×); a full-state transfer would carry ${wire} B`);
    json({ bench: "restart-worst", bytesMoved: worst, stateBinaryBytes: full, fullStateTransferBytes: wire, ratio: +(worst / full).toFixed(4) });
    for (const nd of nodes) await nd.shutdown();
    for (const s of seams) await s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`@heddle/node bench — ${new Date().toISOString()} — node ${process.version} — load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
json({ bench: "environment", node: process.version, loadAverage: loadavg().map((x) => +x.toFixed(2)) });
if (want("mutation")) await mutationPart();
if (want("wire")) await wirePart();
if (want("mesh")) await meshPart();
if (want("restart")) await restartPart();
if (want("node")) await import("./node-bench.ts");
