// One demo peer, run as its own OS process by the orchestrator (`run.ts`). It reads commands
// from stdin and writes reports to stdout, one JSON object per line.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import type { EntitlementLedger } from "@heddle/ledger";
import { heddleGoverned, IDEMPOTENCY_CLIENT_PREFIX, OutcomeUnknownError, raftChannelTransport, raftNode, sqliteRaftStorage } from "@heddle/governed";
import type { CallOptions, ControlOutcome, GovernedHeddleNode, RaftNode } from "@heddle/governed";
import {
  edgeId,
  fnv1a64,
  heddleStatic,
  libp2pSeam,
  loadOrCreatePeerKey,
  realTimers,
  seededRandom,
  sqliteStore,
  WatchCell,
} from "@heddle/node";
import type { HeddleNode } from "@heddle/node";
import type { DashboardServer, LivenessNote, PeerReads } from "@heddle/daemon";
import { demoTopology, LANES, laneGroup, leafGroups, parents, ROOT, TENANTS } from "./scenario.ts";
import type { PeerConfig } from "./scenario.ts";
import type { BoundRow, ControlAct, PeerCommand, PeerReport } from "./protocol.ts";

/** What the demo drives on a peer: the data plane, the same in static and governed mode. */
type DataPlane = Pick<HeddleNode, "self" | "partitionEvents" | "ledger" | "advertise" | "advertiseMany" | "schedule" | "reserve" | "complete" | "cancel" | "boundMetrics" | "openReservations" | "unreachable" | "metrics" | "shutdown">;

/** A governed control act, retried under its durable key until its outcome is known (governed.md §3.10). */
async function known(call: (o: CallOptions) => Promise<ControlOutcome>, key: { client: string; seq: number }): Promise<ControlOutcome> {
  for (let i = 0; ; i++) {
    try {
      return await call({ key, timeoutMs: 5_000 });
    } catch (e) {
      if (!(e instanceof OutcomeUnknownError) || i >= 30) throw e;
    }
  }
}

function describeOutcome(o: ControlOutcome): string {
  if (o.kind === "applied") return o.noop ? "applied (noop)" : "applied";
  const c = o.conflict as Record<string, unknown>;
  return `${o.conflict.reason}${"edge" in c ? ` ${String(c.edge)}` : ""}`;
}

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
  // Only the peer that serves the dashboard loads the daemon's modules (HTTP server, Yjs, prom-client): the
  // others start as fast as before, which matters on a busy machine.
  const daemon = cfg.dashboard !== undefined ? await import("@heddle/daemon") : null;
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
  const topology = demoTopology(
    [BigInt(cfg.tenantWeights[0]), BigInt(cfg.tenantWeights[1])],
    [BigInt(cfg.laneWeights[0]), BigInt(cfg.laneWeights[1])],
  );
  const config = {
    policy: { quantum: BigInt(cfg.quantum) },
    maxHoldingsPerPeer: BigInt(cfg.supplyPerPeer),
    maxGrantsPerSchedule: cfg.grantsPerSchedule,
    antiEntropyIntervalMs: 1_000,
    demandTtlMs: 5_000,
    heartbeat: { intervalMs: 500, timeoutMs: 2_000, reconnectWindowMs: 60_000 },
    timers: realTimers,
    random,
    store: sqliteStore(join(home, "store.sqlite")),
  };
  let gov: GovernedHeddleNode | null = null;
  let raft: RaftNode | null = null;
  /** Governed mode: the Raft term as the member persists it (the dashboard shows it). */
  const raftTerm = new WatchCell(0);
  let node: DataPlane;
  if (cfg.voters !== undefined) {
    // governed mode: the same seam carries Raft on channel 4; genesis is empty, supply and tree come from the log
    raft = raftNode({
      cluster: { voters: cfg.voters, learners: cfg.ids.filter((id) => !cfg.voters!.includes(id)) },
      transport: raftChannelTransport(seam),
      storage: daemon === null ? sqliteRaftStorage(join(home, "raft.sqlite"), { thread: "worker" }) : daemon.termObservingStorage(sqliteRaftStorage(join(home, "raft.sqlite"), { thread: "worker" }), raftTerm),
      timers: realTimers,
      random,
      defer: setImmediate,
      // the HTTP API's Idempotency-Key retries are answered by the control state, never by the leader's cache
      coalesce: (key) => !key.client.startsWith(IDEMPOTENCY_CLIENT_PREFIX),
    });
    gov = heddleGoverned({ seam, self: ReplicaId(seam.self), root: GroupId(ROOT), config, raft, incarnation: crypto.randomUUID(), snapshotEvery: 256 });
    node = gov;
    // every start: enroll self (the writer gate opens when it applies)
    const g = gov;
    void (async () => {
      let opts: CallOptions = { timeoutMs: 5_000 };
      for (;;) {
        try {
          await g.enroll(g.self, opts);
          return;
        } catch (e) {
          if (!(e instanceof OutcomeUnknownError) || e.key === null) return;
          opts = { key: e.key, timeoutMs: 5_000 };
        }
      }
    })();
  } else {
    const supply = new Map(cfg.ids.map((id) => [ReplicaId(id), BigInt(cfg.supplyPerPeer)]));
    node = heddleStatic({ seam, self: ReplicaId(seam.self), root: GroupId(ROOT), supply, topology, config });
  }

  let draining = false;
  /** Governed mode: tenants whose inbound generation is closing; their holdings are spent down exactly. */
  let drainTenants = new Set<string>();
  let blocked = false;
  let charged = 0n;
  let completions = 0;
  let inFlight = 0;

  // Work left open by a previous incarnation (this process was killed mid-item): it never ran
  // to completion here, so it is cancelled — charging nothing, releasing its earmark.
  const restored = node.openReservations();
  for (const row of restored) node.cancel(row.id);

  emit({ type: "listening", index: cfg.index, id: seam.self, addrs: seam.addrs(), restoredReservations: restored.length });

  // Peer 0 shows its live dashboard (the daemon's page, socket and /metrics) for the whole run.
  let dashboard: DashboardServer | null = null;
  if (cfg.dashboard !== undefined && daemon !== null) {
    const liveness = new Map<string, LivenessNote>();
    node.partitionEvents.subscribe((e) => liveness.set(e.peer, { kind: e.kind, at: Date.now(), ...(e.reason !== undefined ? { reason: e.reason } : {}) }));
    const reads: PeerReads = {
      data: node,
      mode: gov === null ? "static" : "governed",
      root: GroupId(ROOT),
      roster: cfg.ids.map((id) => ({ id, addrs: [] })),
      connected: () => seam.peers.get(),
      lastLiveness: () => liveness,
      control: gov === null || raft === null ? null : daemon.governedControlPlane(gov, raft),
      raft: raft === null ? null : { role: raft.role, leader: raft.leader, commitIndex: raft.commitIndex, membership: raft.membership, term: raftTerm, refusedFrames: () => raft!.refusedFrames() },
      transport: daemon.transportCountersOf(seam),
    };
    const metrics = new daemon.DaemonMetrics({ processMetrics: false });
    metrics.attach(reads);
    try {
      dashboard = await daemon.serveDashboard({ reads, token: cfg.dashboard.token, host: "127.0.0.1", port: cfg.dashboard.port, partitionEvents: node.partitionEvents, metrics });
      emit({ type: "dashboard", index: cfg.index, url: dashboard.url });
    } catch (e) {
      emit({ type: "dashboard", index: cfg.index, url: `(not served: ${(e as Error).message})` });
    }
  }

  const tick = setInterval(() => {
    if (draining) return;
    const view = node.ledger.get();
    for (const p of parents()) for (const e of view.childrenOf(GroupId(p))) node.advertise(e.attachment, HUNGRY);
    for (const p of parents()) node.schedule(GroupId(p));
  }, cfg.tickMs);

  // Workers: each repeatedly reserves a work item on its lane, "runs" it, and completes it
  // at its actual cost (never more than reserved).
  const worker = (leaf: string) => {
    const step = () => {
      if (draining) return;
      // while the tenant's generation drains, spend exactly what is held, to the last unit
      const exact = drainTenants.has(leaf.split("/")[0]!);
      let cost = 5n + BigInt(Math.floor(random() * 16));
      let r = node.reserve(GroupId(leaf), cost);
      if (!r.ok && exact && r.refusal.kind === "insufficient" && r.refusal.available > 0n) {
        cost = r.refusal.available;
        r = node.reserve(GroupId(leaf), cost);
      }
      if (!r.ok) {
        setTimeout(step, 15 + Math.floor(random() * 20));
        return;
      }
      const id = r.id;
      inFlight++;
      setTimeout(() => {
        const actual = exact ? cost : cost - BigInt(Math.floor(random() * Number(cost / 4n + 1n)));
        const c = node.complete(id, actual);
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
    const edgeRows: Record<string, { committed: string; spent: string; issued: string; outstanding: string }> = {};
    const records: Record<string, { parent: string; child: string; weight: string; lifecycle: string }> = {};
    for (const e of view.knownEdges()) {
      const s = view.edge(e);
      if (s !== null) edgeRows[e] = { committed: s.committedService.toString(), spent: s.spent.toString(), issued: s.issued.toString(), outstanding: s.outstanding.toString() };
      const rec = view.record(e);
      if (rec !== null) records[e] = { parent: rec.parent, child: rec.child, weight: rec.weight.toString(), lifecycle: view.lifecycle(e) ?? "?" };
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
      records,
      writable: gov === null ? true : gov.isWritable,
      controlApplied: gov === null ? 0 : gov.controlView().appliedIndex,
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
      case "drain-edges": {
        const view = node.ledger.get();
        drainTenants = new Set(c.edges.map((e) => view.record(AttachmentId(e))?.child).filter((x): x is GroupId => x !== undefined));
        break;
      }
      case "control": {
        if (gov === null) break;
        const g = gov;
        const a: ControlAct = c.act;
        const run = (o: CallOptions): Promise<ControlOutcome> => {
          switch (a.op) {
            case "mint":
              return g.mint(ReplicaId(a.holder), BigInt(a.amount), o);
            case "prepare":
              return g.prepare({ id: AttachmentId(a.id), parent: GroupId(a.parent), child: GroupId(a.child), weight: Weight.of(BigInt(a.weight)) }, o);
            case "activate":
              return g.activate(AttachmentId(a.edge), o);
            case "close":
              return g.close(AttachmentId(a.edge), o);
            case "retire":
              return g.retire(AttachmentId(a.edge), o);
          }
        };
        known(run, c.key).then(
          (o) => emit({ type: "control", index: cfg.index, ref: c.ref, ok: o.kind === "applied", kind: o.kind, detail: describeOutcome(o) }),
          (e: Error) => emit({ type: "control", index: cfg.index, ref: c.ref, ok: false, kind: "error", detail: `${e.name}: ${e.message}` }),
        );
        break;
      }
      case "exit":
        clearInterval(statusTimer);
        status();
        void (dashboard?.close() ?? Promise.resolve())
          .then(() => node.shutdown())
          .then(() => seam.close())
          .finally(() => process.exit(0));
        break;
    }
  });
  rl.on("close", () => process.exit(0));
  void leafGroups;
  void edgeId;
  void TENANTS;
}

main().catch((e: unknown) => {
  emit({ type: "error", index: cfg.index, message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  process.exit(1);
});
