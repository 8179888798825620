import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, ReplicaId, Weight, fnv1a64, type AttachmentRecord } from "@heddle/ledger";
import { ChannelTag, MemoryNetwork, muxSeam, seededRandom, type CutMode, type Seam, type Timers } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import type { FrameRejected } from "../src/index.ts";
import {
  REPLICATION_DEFAULTS, RejectionCounter, ReplicationCore, ReplicationDriver, WIRE_ENVELOPE_BYTES, type ReplicationConfig, type ReplicationDriverOptions,
} from "../src/testing.ts";

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

/**
 * One simulated replica: a `LedgerReplica` replicated by a `ReplicationCore` through its driver, without
 * the rest of a node. `publish` is the local mutation path with an always-successful commit.
 */
export class SimReplica {
  readonly replica: LedgerReplica;
  readonly driver: ReplicationDriver;
  readonly ledger: { get(): EntitlementLedger };

  constructor(o: Omit<ReplicationDriverOptions, "core"> & { initial: EntitlementLedger; genesis: EntitlementLedger; incarnation: number; config: ReplicationConfig; random: () => number; restarted: boolean }) {
    this.replica = new LedgerReplica(o.initial);
    const core = new ReplicationCore({
      self: o.channel.self,
      incarnation: o.incarnation,
      replica: this.replica,
      genesis: o.genesis,
      config: o.config,
      random: o.random,
      now: o.timers.now(),
      restarted: o.restarted,
      valueBudget: Math.min(o.config.maxFrameBytes, o.channel.maxFrameBytes) - WIRE_ENVELOPE_BYTES,
    });
    this.driver = new ReplicationDriver({ ...o, core, maxFrameBytes: Math.min(o.config.maxFrameBytes, o.channel.maxFrameBytes) });
    const replica = this.replica;
    this.ledger = { get: () => replica.snapshot() };
  }

  /** A committed local patch: joined into the replica, then published. */
  publish(patch: EntitlementLedger): void {
    this.replica.apply(patch);
    this.driver.publish(patch);
  }

  metrics(): ReturnType<ReplicationDriver["metrics"]> {
    return this.driver.metrics();
  }

  close(): void {
    this.driver.close();
  }
}

/** One simulated peer: its seam, replica and rejection counter. */
export interface SimPeer {
  id: string;
  seam: Seam;
  rep: SimReplica;
  rejections: RejectionCounter;
  rejected: FrameRejected[];
  incarnation: number;
  alive: boolean;
}

/** A deterministic simulation of replicas over a `MemoryNetwork`. */
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
    ids.forEach((id, k) => this.#start(id, this.net.join(id), 1, this.genesis, k));
  }

  #start(id: string, seam: Seam, incarnation: number, initial: EntitlementLedger, k: number): void {
    const rejected: FrameRejected[] = [];
    const rejections = new RejectionCounter(this.timers, 60_000, (e) => rejected.push(e));
    const rep = new SimReplica({
      channel: muxSeam(seam).channel(ChannelTag.ledger),
      incarnation,
      genesis: this.genesis,
      genesisDigest: this.genesisDigest,
      initial,
      timers: this.timers,
      random: seededRandom(this.seed * 1000 + 1 + k + incarnation * 97),
      config: this.config,
      rejections,
      maxFrameBytes: this.config.maxFrameBytes,
      restarted: incarnation > 1,
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
    const texts = this.live().map((p) => p.rep.replica.digest());
    if (!texts.every((t) => t === texts[0])) return false;
    const enc = this.live().map((p) => p.rep.ledger.get().encode());
    return enc.every((t) => t === enc[0]);
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

/** A replica replicated over any seam (libp2p in tests that use real sockets), with its own rejection counter. */
export interface SeamReplica {
  readonly self: string;
  readonly rep: SimReplica;
  readonly rejections: RejectionCounter;
  readonly ledger: { get(): EntitlementLedger };
  publish(patch: EntitlementLedger): void;
  shutdown(): Promise<void>;
}

/** Starts replication of `initial` (default: genesis) on `seam`'s ledger channel. */
export function replicaOn(
  seam: Seam,
  o: { genesis: EntitlementLedger; initial?: EntitlementLedger; incarnation: number; timers: Timers; random: () => number; config?: Partial<ReplicationConfig> },
): SeamReplica {
  const config = { ...REPLICATION_DEFAULTS, ...o.config };
  const rejections = new RejectionCounter(o.timers, 60_000, () => {});
  const channel = muxSeam(seam).channel(ChannelTag.ledger);
  const rep = new SimReplica({
    channel, incarnation: o.incarnation, genesis: o.genesis, genesisDigest: fnv1a64(o.genesis.encode()), initial: o.initial ?? o.genesis,
    timers: o.timers, random: o.random, config, rejections, maxFrameBytes: config.maxFrameBytes, restarted: o.incarnation > 1,
  });
  return {
    self: seam.self,
    rep,
    rejections,
    ledger: rep.ledger,
    publish: (p) => rep.publish(p),
    shutdown: async () => {
      rep.close();
      await channel.close();
    },
  };
}
