import type { EntitlementLedger } from "@heddle/ledger";
import type { Demand } from "@heddle/policy";
import { DEMAND_BOARD_DEFAULTS, DemandBoard } from "./demand-board.ts";
import { entitlementLedgerLattice } from "./entitlement-ledger-lattice.ts";
import { fnv1a64 } from "./fnv1a64.ts";
import { LedgerReplication, REPLICATION_DEFAULTS, checkReplicationConfig, type ReplicationMetrics, type ValueTooLarge } from "./ledger-replication.ts";
import { HEARTBEAT_DEFAULTS, LivenessMonitor, type HeartbeatConfig, type PartitionEvent } from "./liveness.ts";
import { RejectionCounter, type FrameRejected, type RejectReason } from "./rejection.ts";
import { sortedIds, type PeerId, type Seam } from "@heddle/seam";
import { ChannelTag, muxSeam } from "@heddle/seam";
import type { Timers } from "@heddle/seam";
import { EventChannel, type EventStream, type Watch } from "@heddle/seam";

/**
 * The replication-facing part of `HeddleConfig` (node.md §12). Every field but `timers` and `random`
 * has the spec's default.
 */
export interface PeerConfig {
  timers: Timers;
  random: () => number;
  demandTtlMs?: number;
  antiEntropyIntervalMs?: number;
  resendRetryMs?: number;
  fullStateRetryMs?: number;
  fullStateRetryLimit?: number;
  peerEvictionMs?: number;
  heartbeat?: HeartbeatConfig;
  maxFrameBytes?: number;
  maxPendingDeltas?: number;
  maxTrackedSeqs?: number;
  maxResendSpan?: number;
  maxDemandEntries?: number;
  rejectLogIntervalMs?: number;
}

/** Events of a peer (the part of node.md §14 this layer produces). */
export type PeerEvent =
  | FrameRejected
  | ValueTooLarge
  | { kind: "peer-joined"; peer: PeerId }
  | { kind: "peer-left"; peer: PeerId };

/** Counters of a peer (the part of node.md §14 `metrics()` this layer produces). */
export interface PeerMetrics {
  ledger: ReplicationMetrics;
  framesRejected: Record<RejectReason, number>;
  demand: { framesIn: number; framesOut: number; slots: number };
  liveness: { pingsOut: number; pongsOut: number };
}

/** Everything a `HeddlePeer` starts from. */
export interface PeerOptions {
  seam: Seam;
  /** The genesis ledger every peer computes identically (node.md §13.1). */
  genesis: EntitlementLedger;
  /** State to start from (genesis ⊔ persisted); defaults to `genesis`. */
  initial?: EntitlementLedger;
  /** The store's boot counter: delta incarnation, demand epoch. */
  epoch: number;
  config: PeerConfig;
}

/**
 * One replica's networking: claims channels 1–3 on `muxSeam(seam)` and runs ledger replication
 * (node.md §5), the demand board (§6) and liveness (§10), counting every rejected frame (§4.3).
 * `heddleStatic` builds scheduling, reservations and durability on top of this (next issue).
 * Bad network input is never thrown through: it is rejected, counted and reported (rate-limited).
 */
export class HeddlePeer {
  readonly self: PeerId;
  readonly genesisDigest: string;
  readonly #replication: LedgerReplication<EntitlementLedger>;
  readonly #board: DemandBoard;
  readonly #liveness: LivenessMonitor;
  readonly #rejections: RejectionCounter;
  readonly #events = new EventChannel<PeerEvent>();
  readonly #channels: Seam[];
  readonly #off: (() => void)[] = [];
  #closed = false;

  constructor(o: PeerOptions) {
    const c = o.config;
    const timers = c.timers;
    this.self = o.seam.self;
    this.genesisDigest = fnv1a64(o.genesis.encode());
    const rejectLogIntervalMs = c.rejectLogIntervalMs ?? 60_000;
    if (!Number.isInteger(rejectLogIntervalMs) || rejectLogIntervalMs <= 0) throw new RangeError("rejectLogIntervalMs must be a positive integer");
    this.#rejections = new RejectionCounter(timers, rejectLogIntervalMs, (e) => this.#events.emit(e));
    const mux = muxSeam(o.seam);
    const ledgerChannel = mux.channel(ChannelTag.ledger);
    const demandChannel = mux.channel(ChannelTag.demand);
    const livenessChannel = mux.channel(ChannelTag.liveness);
    this.#channels = [ledgerChannel, demandChannel, livenessChannel];
    this.#off.push(mux.onUnknownChannel((from) => this.#rejections.reject(from, "mux", "unknown-channel")));
    const maxFrameBytes = c.maxFrameBytes ?? REPLICATION_DEFAULTS.maxFrameBytes;
    const replication = checkReplicationConfig({
      antiEntropyIntervalMs: c.antiEntropyIntervalMs ?? REPLICATION_DEFAULTS.antiEntropyIntervalMs,
      resendRetryMs: c.resendRetryMs ?? REPLICATION_DEFAULTS.resendRetryMs,
      fullStateRetryMs: c.fullStateRetryMs ?? REPLICATION_DEFAULTS.fullStateRetryMs,
      fullStateRetryLimit: c.fullStateRetryLimit ?? REPLICATION_DEFAULTS.fullStateRetryLimit,
      peerEvictionMs: c.peerEvictionMs ?? REPLICATION_DEFAULTS.peerEvictionMs,
      maxFrameBytes,
      maxPendingDeltas: c.maxPendingDeltas ?? REPLICATION_DEFAULTS.maxPendingDeltas,
      maxTrackedSeqs: c.maxTrackedSeqs ?? REPLICATION_DEFAULTS.maxTrackedSeqs,
      maxResendSpan: c.maxResendSpan ?? REPLICATION_DEFAULTS.maxResendSpan,
    });
    this.#replication = new LedgerReplication({
      channel: ledgerChannel,
      incarnation: o.epoch,
      genesis: this.genesisDigest,
      initial: o.initial === undefined ? o.genesis : o.genesis.join(o.initial),
      lattice: entitlementLedgerLattice,
      timers,
      random: c.random,
      config: replication,
      rejections: this.#rejections,
      onValueTooLarge: (e) => this.#events.emit(e),
    });
    this.#board = new DemandBoard({
      channel: demandChannel,
      epoch: o.epoch,
      timers,
      config: {
        demandTtlMs: c.demandTtlMs ?? DEMAND_BOARD_DEFAULTS.demandTtlMs,
        maxDemandEntries: c.maxDemandEntries ?? DEMAND_BOARD_DEFAULTS.maxDemandEntries,
        maxFrameBytes,
      },
      rejections: this.#rejections,
    });
    this.#liveness = new LivenessMonitor({ channel: livenessChannel, mux, timers, config: c.heartbeat ?? HEARTBEAT_DEFAULTS, rejections: this.#rejections });
    let members = new Set(o.seam.peers.get());
    this.#off.push(
      o.seam.peers.subscribe((now) => {
        for (const p of sortedIds(now)) if (!members.has(p)) this.#events.emit({ kind: "peer-joined", peer: p });
        for (const p of sortedIds(members)) if (!now.has(p)) this.#events.emit({ kind: "peer-left", peer: p });
        members = new Set(now);
      }),
    );
  }

  /** The converged ledger view on this peer. */
  get ledger(): Watch<EntitlementLedger> {
    return this.#replication.ledger;
  }

  get unreachable(): Watch<ReadonlySet<PeerId>> {
    return this.#liveness.unreachable;
  }

  get partitionEvents(): EventStream<PartitionEvent> {
    return this.#liveness.events;
  }

  get events(): EventStream<PeerEvent> {
    return this.#events;
  }

  /** Installs and publishes a local patch (node.md §5.1 steps 3–4; the caller committed it first). */
  publish(patch: EntitlementLedger): void {
    if (this.#closed) throw new Error("publish on a shut-down peer");
    this.#replication.publish(patch);
  }

  /** Sets this peer's advisory demand for `edge` (node.md §6); `DEMAND_NONE` removes it. */
  advertise(edge: string, demand: Demand): void {
    if (this.#closed) throw new Error("advertise on a shut-down peer");
    this.#board.advertise(edge, demand);
  }

  /** Folded live demand for `edge` over every peer's live slot. */
  demand(edge: string): Demand {
    return this.#board.fold(edge);
  }

  /** Replaces the Lost detector of `replica` (node.md §10). */
  remonitor(replica: PeerId): void {
    this.#liveness.remonitor(replica);
  }

  /** Current liveness phase per monitored peer (diagnostic). */
  livenessPhases(): Record<PeerId, "healthy" | "unresponsive" | "lost"> {
    return this.#liveness.phases();
  }

  metrics(): PeerMetrics {
    return {
      ledger: this.#replication.metrics(),
      framesRejected: this.#rejections.counts(),
      demand: this.#board.counters(),
      liveness: this.#liveness.counters(),
    };
  }

  /** Stops timers and releases channels 1–3 (the seam itself stays open: its owner closes it). */
  async shutdown(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#replication.close();
    this.#board.close();
    this.#liveness.close();
    for (const f of this.#off) f();
    for (const ch of this.#channels) await ch.close();
  }
}
