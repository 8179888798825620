// Replication benchmark (issue 4): time from a burst of 100 mutations on one peer until every peer's
// ledger `equals`, and bytes sent per mutation — over libp2p on 127.0.0.1 (3, 10, 30 peers) and over
// MemoryNetwork in virtual time (100, 1 000 peers). Run: npx -y pnpm@10 --filter @heddle/node bench
// Optional argument: "libp2p", "memory" or "node" to run one part.
import { AttachmentId, ReplicaId, type EntitlementLedger } from "@heddle/ledger";
import { HeddlePeer, MemoryNetwork, VirtualTimers, generatePeerKey, libp2pSeam, peerIdOf, realTimers, seededRandom, type Libp2pSeam } from "../src/index.ts";
import { simGenesis } from "../test/replication-sim.ts";

const BURST = 100;
const only = process.argv[2];

/** One delegation of 1 unit from the peer's root holdings down e2, published. */
function mutateOnce(peer: HeddlePeer): void {
  const l = peer.ledger.get();
  const r = l.delegate(ReplicaId(peer.self), AttachmentId("e2"), 1n);
  if (!r.ok) throw new Error(r.refusal.kind);
  peer.publish(r.patch);
}

const allEqual = (peers: HeddlePeer[]) => {
  const first: EntitlementLedger = peers[0]!.ledger.get();
  return peers.every((p) => p.ledger.get().equals(first));
};

async function libp2pRun(n: number): Promise<void> {
  const keys = await Promise.all(Array.from({ length: n }, () => generatePeerKey()));
  const ids = keys.map(peerIdOf);
  const genesis = simGenesis(ids);
  const seams: Libp2pSeam[] = [];
  for (let i = 0; i < n; i++) {
    seams.push(
      await libp2pSeam({
        privateKey: keys[i]!, listen: ["/ip4/127.0.0.1/tcp/0"], roster: ids.map((id, j) => ({ id, addrs: j < i ? seams[j]!.addrs() : [] })),
        allowOnlyRoster: true, timers: realTimers, random: seededRandom(i), redialMinMs: 200, redialMaxMs: 2_000,
      }),
    );
  }
  const peers = seams.map((seam, k) => new HeddlePeer({ seam, genesis, epoch: 0, config: { timers: realTimers, random: seededRandom(100 + k) } }));
  const t0 = Date.now();
  while (!seams.every((s) => s.peers.get().size === n - 1)) {
    if (Date.now() - t0 > 120_000) throw new Error(`libp2p ${n}: mesh not complete`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 500));
  const bytesBefore = seams.reduce((a, s) => a + s.counters().bytesOut, 0);
  const start = performance.now();
  for (let i = 0; i < BURST; i++) mutateOnce(peers[0]!);
  while (!allEqual(peers)) await new Promise((r) => setImmediate(r));
  const ms = performance.now() - start;
  const bytes = seams.reduce((a, s) => a + s.counters().bytesOut, 0) - bytesBefore;
  console.log(`libp2p        peers=${String(n).padStart(4)}  burst=${BURST}  all-equal after ${ms.toFixed(1).padStart(8)} ms  bytes/mutation=${Math.round(bytes / BURST)}`);
  for (const p of peers) await p.shutdown();
  await Promise.all(seams.map((s) => s.close()));
}

function memoryRun(n: number): void {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(n), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 5] } });
  const ids = Array.from({ length: n }, (_, i) => `peer-${String(i).padStart(4, "0")}`);
  // Only the bursting peer holds supply: the genesis stays small, so first contact (n² full states) is affordable.
  const genesis = simGenesis(ids.slice(0, 1));
  const setupStart = performance.now();
  // Peers join in batches of 50 so the n² first-contact exchange is not all in flight at once.
  const peers: HeddlePeer[] = [];
  ids.forEach((id, k) => {
    peers.push(new HeddlePeer({ seam: net.join(id), genesis, epoch: 0, config: { timers, random: seededRandom(k) } }));
    if (k % 50 === 49) timers.advanceBy(20);
  });
  timers.advanceBy(100);
  const setupMs = performance.now() - setupStart;
  const bytesBefore = net.stats().bytesSent;
  const wallStart = performance.now();
  const virtualStart = timers.now();
  for (let i = 0; i < BURST; i++) mutateOnce(peers[0]!);
  while (!allEqual(peers)) timers.advanceBy(1);
  const virtualMs = timers.now() - virtualStart;
  const wallMs = performance.now() - wallStart;
  const bytes = net.stats().bytesSent - bytesBefore;
  console.log(
    `MemoryNetwork peers=${String(n).padStart(4)}  burst=${BURST}  all-equal after ${String(virtualMs).padStart(5)} ms virtual (link delay 1–5 ms)  ` +
      `bytes/mutation=${Math.round(bytes / BURST)}  wall ${wallMs.toFixed(0)} ms (mesh setup ${setupMs.toFixed(0)} ms)`,
  );
  for (const p of peers) void p.shutdown();
}

console.log(`heddle node replication benchmark — ${new Date().toISOString()} — node ${process.version}`);
if (only === undefined || only === "libp2p") for (const n of [3, 10, 30]) await libp2pRun(n);
if (only === undefined || only === "memory") for (const n of [100, 1000]) memoryRun(n);
// heddleStatic: reserve+complete throughput (SQLite, memory) and schedule round time (bench/node-bench.ts)
if (only === undefined || only === "node") await import("./node-bench.ts");
process.exit(0);
