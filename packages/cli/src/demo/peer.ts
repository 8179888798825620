// One demo peer, run as its own OS process by the orchestrator (`run.ts`). It reads commands
// from stdin and writes reports to stdout, one JSON object per line.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { GroupId, ReplicaId } from "@heddle/ledger";
import type { EntitlementLedger } from "@heddle/ledger";
import {
  edgeId,
  fnv1a64,
  heddleStatic,
  libp2pSeam,
  loadOrCreatePeerKey,
  realTimers,
  seededRandom,
  sqliteStore,
} from "@heddle/node";
import type { HeddleNode } from "@heddle/node";
import { demoTopology, LANES, laneGroup, leafGroups, parents, ROOT, TENANTS } from "./scenario.ts";
import type { PeerConfig } from "./scenario.ts";
import type { BoundRow, PeerCommand, PeerReport } from "./protocol.ts";

const cfg = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as PeerConfig;
const random = seededRandom(cfg.seed * 1_000 + cfg.index + 1);
const HUNGRY = { targetOutstanding: 1_000_000n, maximumUsefulGrant: 1_000_000n };
const STATUS_MS = 400;

function emit(r: PeerReport): void {
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

function conservation(view: EntitlementLedger): { minted: bigint; held: bigint; leafSpent: bigint; negative: number } {
  let held = 0n;
  let negative = 0;
  const groups = new Set([...view.groups(), ...view.roots()]);
  for (const g of groups) {
    for (const r of view.replicas()) {
      const h = view.holdings(g, r);
      held += h;
      if (h < 0n) negative++;
    }
  }
  return { minted: view.mintedTotal(), held, leafSpent: view.leafSpentTotal(), negative };
}

async function main(): Promise<void> {
  const home = join(cfg.dir, `peer-${cfg.index}`);
  const key = await loadOrCreatePeerKey(join(home, "peer.key"));
  const seam = await libp2pSeam({
    privateKey: key,
    listen: ["/ip4/127.0.0.1/tcp/0"],
    roster: cfg.ids.map((id) => ({ id, addrs: [] })),
    allowOnlyRoster: true,
    timers: realTimers,
    random,
    redialMinMs: 250,
    redialMaxMs: 2_000,
  });
  const supply = new Map(cfg.ids.map((id) => [ReplicaId(id), BigInt(cfg.supplyPerPeer)]));
  const topology = demoTopology(
    [BigInt(cfg.tenantWeights[0]), BigInt(cfg.tenantWeights[1])],
    [BigInt(cfg.laneWeights[0]), BigInt(cfg.laneWeights[1])],
  );
  const node: HeddleNode = heddleStatic({
    seam,
    self: ReplicaId(seam.self),
    root: GroupId(ROOT),
    supply,
    topology,
    config: {
      policy: { quantum: BigInt(cfg.quantum) },
      maxHoldingsPerPeer: BigInt(cfg.supplyPerPeer),
      maxGrantsPerSchedule: cfg.grantsPerSchedule,
      antiEntropyIntervalMs: 1_000,
      demandTtlMs: 5_000,
      heartbeat: { intervalMs: 500, timeoutMs: 2_000, reconnectWindowMs: 60_000 },
      timers: realTimers,
      random,
      store: sqliteStore(join(home, "store.sqlite")),
    },
  });

  let draining = false;
  let blocked = false;
  let charged = 0n;
  let completions = 0;
  let inFlight = 0;

  // Work left open by a previous incarnation (this process was killed mid-item): it never ran
  // to completion here, so it is cancelled — charging nothing, releasing its earmark.
  const restored = node.openReservations();
  for (const row of restored) node.cancel(row.id);

  emit({ type: "listening", index: cfg.index, id: seam.self, addrs: seam.addrs(), restoredReservations: restored.length });

  const edges = topology.map((r) => r.id);
  const tick = setInterval(() => {
    if (draining) return;
    for (const e of edges) node.advertise(e, HUNGRY);
    for (const p of parents()) node.schedule(GroupId(p));
  }, cfg.tickMs);

  // Workers: each repeatedly reserves a work item on its lane, "runs" it, and completes it
  // at its actual cost (never more than reserved).
  const worker = (leaf: string) => {
    const step = () => {
      if (draining) return;
      const cost = 5n + BigInt(Math.floor(random() * 16));
      const r = node.reserve(GroupId(leaf), cost);
      if (!r.ok) {
        setTimeout(step, 15 + Math.floor(random() * 20));
        return;
      }
      inFlight++;
      setTimeout(() => {
        const actual = cost - BigInt(Math.floor(random() * Number(cost / 4n + 1n)));
        const c = node.complete(r.id, actual);
        inFlight--;
        if (c.ok) {
          charged += c.charged;
          completions++;
        }
        step();
      }, 10 + Math.floor(random() * 30));
    };
    step();
  };
  for (const t of TENANTS) for (const l of LANES) for (let k = 0; k < cfg.workersPerLane; k++) worker(laneGroup(t, l));

  const status = () => {
    const view = node.ledger.get();
    const edgeRows: Record<string, { committed: string; spent: string; issued: string }> = {};
    for (const e of edges) {
      const s = view.edge(e);
      if (s !== null) edgeRows[e] = { committed: s.committedService.toString(), spent: s.spent.toString(), issued: s.issued.toString() };
    }
    const bounds: BoundRow[] = parents().map((p) => {
      const b = node.boundMetrics(GroupId(p));
      return {
        parent: p,
        roster: b.roster,
        configuredWorstCase: b.configuredWorstCase.toString(),
        currentBound: b.currentBound.toString(),
        observedDeviation: b.observedDeviation.toString(),
        isConsistent: b.isConsistent,
      };
    });
    const c = conservation(view);
    const m = node.metrics();
    emit({
      type: "status",
      index: cfg.index,
      id: seam.self,
      digest: fnv1a64(new TextEncoder().encode(view.encode())),
      edges: edgeRows,
      bounds,
      conservation: { minted: c.minted.toString(), held: c.held.toString(), leafSpent: c.leafSpent.toString(), ok: c.minted === c.held + c.leafSpent },
      conflicts: view.validate().map((x) => x.kind),
      negativeHoldings: c.negative,
      framesRejected: { ...m.framesRejected },
      unreachable: [...node.unreachable.get()].sort(),
      blocked,
      charged: charged.toString(),
      completions,
      inFlight,
      draining,
      failed: m.failed === true,
    });
  };
  const statusTimer = setInterval(status, STATUS_MS);

  const rl = createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    let c: PeerCommand;
    try {
      c = JSON.parse(line) as PeerCommand;
    } catch {
      return;
    }
    switch (c.cmd) {
      case "roster":
        for (const e of c.entries) if (e.id !== seam.self) seam.addRosterEntry(e);
        break;
      case "block":
        blocked = c.peers.length > 0;
        seam.setBlocked(c.peers);
        break;
      case "drain":
        draining = true;
        clearInterval(tick);
        break;
      case "exit":
        clearInterval(statusTimer);
        status();
        void node.shutdown().then(() => seam.close()).finally(() => process.exit(0));
        break;
    }
  });
  rl.on("close", () => process.exit(0));
  void leafGroups;
  void edgeId;
}

main().catch((e: unknown) => {
  emit({ type: "error", index: cfg.index, message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  process.exit(1);
});
