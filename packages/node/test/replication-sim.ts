import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight, type AttachmentRecord } from "@heddle/ledger";
import {
  ChannelTag, LedgerReplication, MemoryNetwork, RejectionCounter, VirtualTimers, entitlementLedgerLattice, fnv1a64, muxSeam, seededRandom,
  type CutMode, type FrameRejected, type ReplicationConfig, type Seam,
} from "../src/index.ts";
import { REPLICATION_DEFAULTS } from "../src/index.ts";

/** Genesis of a simulated run: supply per peer, a two-level tree, every edge prepared and activated. */
export function simGenesis(peers: string[], supply = 1_000n, extra: AttachmentRecord[] = []): EntitlementLedger {
  let g = EntitlementLedger.bootstrap(GroupId("root"), new Map(peers.map((p) => [ReplicaId(p), supply])), "heddle-static-genesis");
  const rec = (id: string, parent: string, child: string, w = 1n): AttachmentRecord => ({
    id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(w),
  });
  const records = [rec("e1", "root", "g1", 3n), rec("e2", "root", "g2"), rec("e3", "g1", "g3"), rec("e4", "g1", "g4", 2n), ...extra].sort((a, b) =>
    a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
  for (const r of records) {
    const p = g.prepare(r);
    if (!p.ok) throw new Error(`genesis prepare ${r.id}: ${p.refusal.kind}`);
    g = g.join(p.patch);
    const a = g.activate(r.id);
    if (!a.ok) throw new Error(`genesis activate ${r.id}: ${a.refusal.kind}`);
    g = g.join(a.patch);
  }
  return g;
}

/** Replication settings used by simulations (node.md §16: anti-entropy every 100 ms). */
export const SIM_CONFIG: ReplicationConfig = {
  ...REPLICATION_DEFAULTS,
  antiEntropyIntervalMs: 100,
  resendRetryMs: 200,
  fullStateRetryMs: 500,
  peerEvictionMs: 30_000,
};

/** One simulated peer: its seam, mux channel, replication and rejection counter. */
export interface SimPeer {
  id: string;
  seam: Seam;
  rep: LedgerReplication<EntitlementLedger>;
  rejections: RejectionCounter;
  rejected: FrameRejected[];
  incarnation: number;
  alive: boolean;
}

/** A deterministic simulation of `LedgerReplication` peers over a `MemoryNetwork`. */
export class ReplicationSim {
  readonly timers = new VirtualTimers();
  readonly net: MemoryNetwork;
  readonly peers = new Map<string, SimPeer>();
  readonly genesis: EntitlementLedger;
  readonly genesisDigest: string;
  readonly config: ReplicationConfig;
  readonly seed: number;

  constructor(ids: string[], seed: number, opts: { config?: Partial<ReplicationConfig>; genesis?: EntitlementLedger; maxFrameBytes?: number } = {}) {
    this.seed = seed;
    this.config = { ...SIM_CONFIG, ...opts.config };
    this.net = new MemoryNetwork({ timers: this.timers, random: seededRandom(seed * 1000), ...(opts.maxFrameBytes ? { maxFrameBytes: opts.maxFrameBytes } : {}) });
    this.genesis = opts.genesis ?? simGenesis(ids);
    this.genesisDigest = fnv1a64(this.genesis.encode());
    ids.forEach((id, k) => this.#start(id, this.net.join(id), 0, this.genesis, k));
  }

  #start(id: string, seam: Seam, incarnation: number, initial: EntitlementLedger, k: number): void {
    const rejected: FrameRejected[] = [];
    const rejections = new RejectionCounter(this.timers, 60_000, (e) => rejected.push(e));
    const rep = new LedgerReplication({
      channel: muxSeam(seam).channel(ChannelTag.ledger),
      incarnation,
      genesis: this.genesisDigest,
      initial,
      lattice: entitlementLedgerLattice,
      timers: this.timers,
      random: seededRandom(this.seed * 1000 + 1 + k + incarnation * 97),
      config: this.config,
      rejections,
    });
    this.peers.set(id, { id, seam, rep, rejections, rejected, incarnation, alive: true });
  }

  peer(id: string): SimPeer {
    const p = this.peers.get(id);
    if (p === undefined) throw new Error(`no peer ${id}`);
    return p;
  }

  live(): SimPeer[] {
    return [...this.peers.values()].filter((p) => p.alive);
  }

  /** Crashes a peer; its state at the crash is what its store held (every publish was committed first). */
  crash(id: string, mode: CutMode): EntitlementLedger {
    const p = this.peer(id);
    const saved = p.rep.ledger.get();
    p.rep.close();
    p.alive = false;
    this.net.crash(id, mode);
    return saved;
  }

  restart(id: string, saved: EntitlementLedger): void {
    const p = this.peer(id);
    const k = [...this.peers.keys()].indexOf(id);
    this.#start(id, this.net.restart(id), p.incarnation + 1, saved, k);
  }

  converged(): boolean {
    const texts = this.live().map((p) => p.rep.ledger.get().encode());
    return texts.every((t) => t === texts[0]);
  }

  /** Advances virtual time until every live pair is byte-identical; false after `limitMs`. */
  settle(limitMs = 200 * this.config.antiEntropyIntervalMs, stepMs = 50): boolean {
    for (let t = 0; t <= limitMs; t += stepMs) {
      if (this.converged()) return true;
      this.timers.advanceBy(stepMs);
    }
    return this.converged();
  }
}
