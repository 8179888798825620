import { EntitlementLedger, LedgerOverflowError, LedgerReplica } from "@heddle/ledger";
import type { AttachmentId, AttachmentRecord, GroupId, LedgerConflict, LedgerTransaction, MutationResult, Rational, Refusal, ReplicaId } from "@heddle/ledger";
import { HeddlePolicy, type Demand } from "@heddle/policy";
import { ChannelTag, EventChannel, muxSeam, sortedIds, type EventStream, type PeerId, type Seam, type Watch } from "@heddle/seam";
import { boundMetrics, type BoundMetrics } from "./bound-metrics.ts";
import { ClaimsGossip, type ClaimsGossipCounters, type GossipClaims } from "./claims-gossip.ts";
import { DemandBoard } from "./demand-board.ts";
import { replicationConfigOf, type ResolvedHeddleConfig } from "./heddle-config.ts";
import { LivenessMonitor, type LivenessCounters, type PartitionEvent } from "./liveness.ts";
import { RejectionCounter, type FrameRejected, type RejectReason } from "./rejection.ts";
import { MIN_FRAME_BYTES } from "./replication/config.ts";
import { ReplicationCore, type ValueTooLarge } from "./replication/core.ts";
import { ReplicationDriver, type ReplicationDriverMetrics, type ReplicationEvent } from "./replication/driver.ts";
import { WIRE_ENVELOPE_BYTES } from "./replication/wire.ts";
import { ReservationTable, checkReservationTag, type CompleteResult, type ReservationEffect, type ReserveOptions, type ReserveResult } from "./reservation-table.ts";
import { emptySchedule, planSchedule, policyEdges, type ScheduleResult } from "./schedule.ts";
import { patchBytes, type HeddleStore, type PatchRow, type ReservationId, type ReservationRow, type StoreTx } from "./store.ts";
import { MAX_ID_LENGTH } from "./wire-schema.ts";

/** The outcome of a topology call (node.md §1, §13.3). */
export type TopologyResult = { ok: true } | { ok: false; refusal: Refusal | { kind: "closed" } };

/** The hooks governed mode drives the node through (node.md §15). */
export interface ControlSink {
  /** Runs the local mutation path (§5.1) with `patch`; idempotent (a patch that changes nothing is not republished). */
  publish(patch: EntitlementLedger): void;
  /** A replica was enrolled: it joins the bound roster and gets a fresh liveness detector. */
  onEnrolled(replica: ReplicaId): void;
}

/** Events of a node (node.md §14). */
export type NodeEvent =
  | { kind: "schedule"; parent: GroupId; grants: ScheduleResult["grants"]; seated: AttachmentId[]; clamped: AttachmentId[] }
  | { kind: "reserved" | "completed" | "cancelled"; id: ReservationId; leaf: GroupId; amount: bigint }
  | { kind: "peer-joined" | "peer-left"; peer: PeerId }
  | FrameRejected
  | ValueTooLarge
  | { kind: "conflicts"; conflicts: LedgerConflict[] }
  | { kind: "persist-failed"; error: unknown }
  /**
   * Something the node caught so it would not escape into a timer or the network path, reported once per
   * `where` (each occurrence is counted in `metrics()`): `validate` — the anti-entropy tick's `validate()` left
   * int64 (a state the join check should have refused); `ledger-subscriber` — a `ledger.subscribe` callback threw;
   * `events-subscriber` — an `events` subscriber threw; `partition-subscriber` — a `partitionEvents` or
   * `unreachable` subscriber threw; `replication` — the node's own handler of a replication event threw (a bug).
   */
  | { kind: "internal-error"; where: InternalErrorSite; error: unknown };

/** Where a node caught an error it reports as `internal-error` (see {@link NodeEvent}). */
export type InternalErrorSite = "validate" | "ledger-subscriber" | "events-subscriber" | "partition-subscriber" | "replication";

/** Counters of the networking layer of a node: ledger replication, demand board, liveness, rejections. */
export interface PeerMetrics {
  readonly ledger: ReplicationDriverMetrics;
  readonly framesRejected: Record<RejectReason, number>;
  readonly demand: { framesIn: number; framesOut: number; slots: number };
  readonly liveness: LivenessCounters;
  /** Keeper and advisory claims on channel 5 (claims.md §3–4). */
  readonly claims: ClaimsGossipCounters;
}

/** Counters of a node (node.md §14), plus the two extensions `framesRejected` and `failed` at top level. */
export interface NodeMetrics {
  /** Replication, demand and liveness counters of the networking layer. */
  readonly peer: PeerMetrics;
  /** Rejected inbound frames per reason (§4.3). */
  readonly framesRejected: Record<RejectReason, number>;
  /** True once the node failed closed (§9.4). */
  readonly failed: boolean;
  readonly deltasPublished: number;
  readonly pendingDeltas: number;
  readonly schedules: number;
  readonly grants: number;
  readonly grantedUnits: bigint;
  readonly delegateRefusals: number;
  readonly reservationsOpen: number;
  readonly earmarked: Readonly<Record<string, bigint>>;
  readonly commits: number;
  readonly commitFailures: number;
  readonly lastCommitMs: number;
  readonly compactions: number;
  /** Anti-entropy ticks whose `validate()` threw `LedgerOverflowError` (caught; see the `internal-error` event). */
  readonly validateOverflows: number;
  /**
   * Errors thrown by subscribers of `ledger`, `events`, `partitionEvents` and `unreachable` (caught, so none
   * reaches a timer, a frame handler or an API call; see the `internal-error` event, reported once per stream).
   */
  readonly subscriberErrors: number;
}

/** The public surface of one peer (node.md §1). */
export interface HeddleNode {
  readonly self: ReplicaId;
  /** The converged view on this peer; `get()` is a cheap snapshot (the same object until the ledger changes). */
  readonly ledger: Watch<EntitlementLedger>;
  readonly unreachable: Watch<ReadonlySet<ReplicaId>>;
  readonly partitionEvents: EventStream<PartitionEvent>;
  readonly events: EventStream<NodeEvent>;
  /** The store's boot counter for this incarnation (reservation ids are `${self}/${epoch}/${n}`). */
  readonly epoch: number;
  /** FNV-1a-64 of the canonical genesis bytes (§13.1). */
  readonly genesisDigest: string;
  schedule(parent: GroupId): ScheduleResult;
  parentVirtualTime(parent: GroupId): Rational | null;
  boundMetrics(parent: GroupId): BoundMetrics;
  /** node.md §8; `opts` is an extension ({@link ReserveOptions}: a tag carried in the id). */
  reserve(leaf: GroupId, maximumCost: bigint, opts?: ReserveOptions): ReserveResult;
  complete(id: ReservationId, actualCost: bigint): CompleteResult;
  cancel(id: ReservationId): CompleteResult;
  earmarked(leaf: GroupId): bigint;
  available(leaf: GroupId): bigint;
  /** Extension beyond node.md §1: this node's open reservations, ascending id. */
  openReservations(): ReservationRow[];
  /** Extension beyond node.md §1: how many reservations are open on this node (O(1)). */
  openReservationCount(): number;
  advertise(edge: AttachmentId, demand: Demand): void;
  /**
   * Extension beyond node.md §6: several demand entries in one slot update (one clock bump, one frame),
   * all or nothing; a slot past the board's limits throws `DemandLimitError` and changes nothing.
   */
  advertiseMany(changes: Iterable<readonly [AttachmentId, Demand]>): void;
  /** The folded live demand for `edge` as this node sees it (§6). */
  demand(edge: AttachmentId): Demand;
  prepare(record: AttachmentRecord): TopologyResult;
  activate(edge: AttachmentId): TopologyResult;
  close(edge: AttachmentId): TopologyResult;
  retire(edge: AttachmentId): TopologyResult;
  controlSink(): ControlSink;
  remonitor(replica: ReplicaId): void;
  /** Extension (claims.md §3–4): keeper and advisory claims, gossiped on channel 5 of this node's seam. */
  readonly gossipClaims: GossipClaims;
  metrics(): NodeMetrics;
  shutdown(): Promise<void>;
}

/** Everything {@link Node} is assembled from by `heddleStatic`. */
export interface NodeParts {
  readonly self: ReplicaId;
  readonly seam: Seam;
  readonly config: ResolvedHeddleConfig;
  readonly store: HeddleStore;
  readonly epoch: number;
  readonly genesis: EntitlementLedger;
  /** FNV-1a-64 of the canonical genesis bytes. */
  readonly genesisDigest: string;
  /** `genesis ⊔ snapshot ⊔ patches` restored from the store. */
  readonly initial: EntitlementLedger;
  /** Not this store's first boot (or it holds something): the node announces itself to every peer it meets. */
  readonly restarted: boolean;
  readonly roster: ReadonlySet<ReplicaId>;
  readonly restored: readonly ReservationRow[];
  /** This peer's own keeper-claims slot as the store last committed it (claims.md §3), if any. */
  readonly restoredKeeperSlot?: string;
  /** Patch rows in the store not covered by its snapshot, at boot. */
  readonly rowsAtBoot: number;
  /** Their bytes, at boot. */
  readonly rowBytesAtBoot: number;
  /** The bytes of the store's snapshot at boot (0: none). */
  readonly snapshotBytesAtBoot: number;
}

/**
 * One local change, ready to be applied (node.md §5.1): the replica transaction that holds it
 * tentatively, the ledger patch to persist and publish, the reservation rows, and the events to emit.
 * Scheduling, reservations, topology calls and the control sink all produce one; `Node.#apply` is the
 * only place that commits, installs, publishes, compacts and emits.
 */
interface Effect {
  readonly tx: LedgerTransaction | null;
  readonly patch: EntitlementLedger | null;
  readonly reservations: ReservationEffect | null;
  readonly events: readonly NodeEvent[];
}

/** `Watch` over the replica: `get()` is the replica's cached snapshot; subscribers are told after each change. */
class ReplicaWatch implements Watch<EntitlementLedger> {
  readonly #replica: LedgerReplica;
  readonly #subscribers = new Set<(v: EntitlementLedger) => void>();
  readonly #onError: (error: unknown) => void;

  /** `onError` gets what a subscriber throws: it never reaches the caller (a frame handler, a timer, an API call). */
  constructor(replica: LedgerReplica, onError: (error: unknown) => void) {
    this.#replica = replica;
    this.#onError = onError;
  }

  get(): EntitlementLedger {
    return this.#replica.snapshot();
  }

  subscribe(fn: (v: EntitlementLedger) => void): () => void {
    this.#subscribers.add(fn);
    return () => {
      this.#subscribers.delete(fn);
    };
  }

  /** Called by the node after the replica changed; costs nothing without subscribers. */
  changed(): void {
    if (this.#subscribers.size === 0) return;
    const v = this.#replica.snapshot();
    for (const fn of [...this.#subscribers]) {
      try {
        fn(v);
      } catch (error) {
        this.#onError(error);
      }
    }
  }
}

/**
 * One peer of heddle (node.md): ledger replication (§5) through a {@link ReplicationCore} and its driver,
 * the demand board (§6), liveness (§10), scheduling (§7), reservations (§8), durability (§9) and bound
 * metrics (§11). The ledger is one {@link LedgerReplica}: inbound deltas join it in place, local changes
 * are computed on it inside a transaction and rolled back if the store refuses them. The data path flows
 * one way — frame → decode → join → decide → persist → publish — and every local change is an
 * {@link Effect} applied in one place.
 */
export class Node implements HeddleNode {
  readonly self: ReplicaId;
  readonly epoch: number;
  readonly genesisDigest: string;
  readonly #p: NodeParts;
  readonly #c: ResolvedHeddleConfig;
  readonly #replica: LedgerReplica;
  readonly #ledger: ReplicaWatch;
  readonly #rejections: RejectionCounter;
  readonly #replication: ReplicationDriver;
  readonly #board: DemandBoard;
  readonly #liveness: LivenessMonitor;
  readonly #claims: ClaimsGossip;
  readonly #channels: Seam[];
  readonly #table: ReservationTable;
  // Emitted from API calls, frame handlers and timers: a subscriber's throw must not cut any of them short.
  readonly #events = new EventChannel<NodeEvent>((error) => this.#subscriberError("events-subscriber", error));
  /** A store failure whose `persist-failed` event is not emitted yet (see #failClosed). */
  #failure: { readonly error: unknown } | null = null;
  readonly #enrolled = new Set<ReplicaId>();
  readonly #offsets = new Map<AttachmentId, { parent: GroupId; offset: Rational }>();
  readonly #observed = new Map<AttachmentId, { parent: GroupId; demanding: boolean }>();
  readonly #off: (() => void)[] = [];
  /** Inbound values merged since the last commit (their effective deltas), persisted with the next one. */
  #merged: LedgerReplica | null = null;
  #failed = false;
  #shut = false;
  #stopping: Promise<void> | null = null;
  #rows: number;
  /** Bytes of the patch rows not covered by the store's snapshot. */
  #rowBytes: number;
  /** Bytes of the store's snapshot (the state's size when it was last compacted). */
  #snapshotBytes: number;
  #conflictsAt = -1;
  #conflictsKey = "[]";
  #counters = { schedules: 0, grants: 0, grantedUnits: 0n, delegateRefusals: 0, commits: 0, commitFailures: 0, lastCommitMs: 0, compactions: 0, validateOverflows: 0, subscriberErrors: 0 };
  readonly #reported = new Set<string>();

  constructor(p: NodeParts) {
    const c = p.config;
    this.#p = p;
    this.#c = c;
    this.self = p.self;
    this.epoch = p.epoch;
    this.genesisDigest = p.genesisDigest;
    this.#rows = p.rowsAtBoot;
    this.#rowBytes = p.rowBytesAtBoot;
    this.#snapshotBytes = p.snapshotBytesAtBoot;
    this.#replica = new LedgerReplica(p.initial);
    this.#ledger = new ReplicaWatch(this.#replica, (error) => this.#subscriberError("ledger-subscriber", error));
    this.#table = new ReservationTable({ self: p.self, epoch: p.epoch, restored: p.restored });
    this.#rejections = new RejectionCounter(c.timers, c.rejectLogIntervalMs, (e) => this.#events.emit(e));
    // node.md §12: the effective maxFrameBytes (min of the config's and the ledger channel's) is ≥ 4 096. Checked
    // before a channel is claimed, so a caller can retry on the same seam.
    const channelFrameBytes = p.seam.maxFrameBytes - 1; // muxSeam's channels carry one tag byte
    if (!(channelFrameBytes >= MIN_FRAME_BYTES)) {
      throw new RangeError(
        `seam.maxFrameBytes is ${p.seam.maxFrameBytes}: the node's channels would carry frames of at most ${channelFrameBytes} bytes (one is the ` +
          `channel tag), under node.md §12's minimum of ${MIN_FRAME_BYTES}; give the seam a maxFrameBytes of at least ${MIN_FRAME_BYTES + 1}`,
      );
    }
    const mux = muxSeam(p.seam);
    const ledgerChannel = mux.channel(ChannelTag.ledger);
    const demandChannel = mux.channel(ChannelTag.demand);
    const livenessChannel = mux.channel(ChannelTag.liveness);
    const claimsChannel = mux.channel(ChannelTag.claims);
    this.#channels = [ledgerChannel, demandChannel, livenessChannel, claimsChannel];
    this.#off.push(mux.onUnknownChannel((from) => this.#rejections.reject(from, "mux", "unknown-channel")));
    const maxFrameBytes = Math.min(c.maxFrameBytes, ledgerChannel.maxFrameBytes);
    const core = new ReplicationCore({
      self: p.self,
      incarnation: p.epoch,
      replica: this.#replica,
      genesis: p.genesis,
      config: replicationConfigOf(c),
      random: c.random,
      now: c.timers.now(),
      restarted: p.restarted,
      valueBudget: maxFrameBytes - WIRE_ENVELOPE_BYTES,
    });
    this.#replication = new ReplicationDriver({
      channel: ledgerChannel, core, genesisDigest: p.genesisDigest, timers: c.timers, rejections: this.#rejections, maxFrameBytes,
      onSubscriberError: (error) => this.#reportOnce("replication", error),
    });
    this.#off.push(this.#replication.events.subscribe((e) => this.#onReplication(e)));
    this.#board = new DemandBoard({
      channel: demandChannel,
      epoch: p.epoch,
      timers: c.timers,
      config: { demandTtlMs: c.demandTtlMs, maxDemandEntries: c.maxDemandEntries, maxFrameBytes: c.maxFrameBytes },
      rejections: this.#rejections,
    });
    this.#liveness = new LivenessMonitor({
      channel: livenessChannel, mux, timers: c.timers, config: c.heartbeat, rejections: this.#rejections, maxFrameBytes: c.maxFrameBytes,
      onSubscriberError: (error) => this.#subscriberError("partition-subscriber", error),
    });
    this.#claims = new ClaimsGossip({
      channel: claimsChannel,
      epoch: p.epoch,
      timers: c.timers,
      config: c.claims,
      rejections: this.#rejections,
      maxFrameBytes: c.maxFrameBytes,
      // a restarted keeper keeps its claims' claimedAt / takenAt (a stays-put part it took stays with it)
      ...(p.restoredKeeperSlot !== undefined ? { restoredKeeperSlot: p.restoredKeeperSlot } : {}),
      persistKeeperSlot: (text) => this.#commit({ keeperSlot: text }),
    });
    let members = p.seam.peers.get(); // a seam's views are immutable values: kept, never copied
    this.#off.push(
      p.seam.peers.subscribe((now) => {
        if (this.#events.listening) {
          for (const q of sortedIds(now)) if (!members.has(q)) this.#events.emit({ kind: "peer-joined", peer: q });
          for (const q of sortedIds(members)) if (!now.has(q)) this.#events.emit({ kind: "peer-left", peer: q });
        }
        members = now;
      }),
    );
  }

  get ledger(): Watch<EntitlementLedger> {
    return this.#ledger;
  }

  get unreachable(): Watch<ReadonlySet<ReplicaId>> {
    return this.#liveness.unreachable as Watch<ReadonlySet<ReplicaId>>;
  }

  get partitionEvents(): EventStream<PartitionEvent> {
    return this.#liveness.events;
  }

  get events(): EventStream<NodeEvent> {
    return this.#events;
  }

  get gossipClaims(): GossipClaims {
    return this.#claims;
  }

  /**
   * The state digest of the converged view (16 hex digits, the one anti-entropy compares) in O(1): equal
   * ledgers have equal digests. Not part of `HeddleNode` (so wrappers need not forward it); convergence
   * checks in simulations and benchmarks use it instead of copying the ledger.
   */
  ledgerDigest(): string {
    return this.#replica.digest();
  }

  // ---- §7 scheduling ---------------------------------------------------------------------------

  schedule(parent: GroupId): ScheduleResult {
    if (typeof parent !== "string") throw new TypeError("schedule: parent must be a GroupId");
    if (this.#failed || this.#shut) return emptySchedule();
    const offsets = new Map<AttachmentId, Rational>();
    for (const [id, o] of this.#offsets) offsets.set(id, o.offset);
    const observed = new Map<AttachmentId, boolean>();
    for (const [id, o] of this.#observed) observed.set(id, o.demanding);
    const tx = this.#replica.begin();
    let plan: ReturnType<typeof planSchedule>;
    try {
      plan = planSchedule({
        work: this.#replica,
        parent,
        self: this.self,
        earmarked: this.#table.earmarked(parent),
        demand: (e) => this.#board.fold(e),
        offsets,
        observed,
        policy: this.#c.policy,
        maxGrants: this.#c.maxGrantsPerSchedule,
      });
    } catch (e) {
      // e.g. LedgerOverflowError from weights whose sums leave int64: nothing of this round may stay
      // applied, and a transaction left open would fail every later read of the ledger
      tx.rollback();
      throw e;
    }
    this.#counters.schedules++;
    this.#counters.delegateRefusals += plan.refusals;
    const live = new Set(plan.children);
    for (const m of [this.#offsets, this.#observed]) {
      for (const [id, v] of m) if (v.parent === parent && !live.has(id)) m.delete(id);
    }
    for (const [id, offset] of plan.offsets) this.#offsets.set(id, { parent, offset });
    for (const [id, demanding] of plan.observed) this.#observed.set(id, { parent, demanding });
    const result = { grants: plan.grants, seated: plan.seated, clamped: plan.clamped };
    const patch = tx.patch();
    if (patch === null) {
      tx.commit();
      return result;
    }
    if (!this.#apply({ tx, patch, reservations: null, events: [{ kind: "schedule", parent, ...result }] })) return emptySchedule();
    this.#counters.grants += plan.grants.length;
    for (const g of plan.grants) this.#counters.grantedUnits += g.amount;
    return result;
  }

  parentVirtualTime(parent: GroupId): Rational | null {
    const offsets = new Map<AttachmentId, Rational>();
    for (const [id, o] of this.#offsets) offsets.set(id, o.offset);
    return HeddlePolicy.front(policyEdges(this.#replica, parent, (e) => this.#board.fold(e), offsets));
  }

  boundMetrics(parent: GroupId): BoundMetrics {
    const replicas = new Set<ReplicaId>([this.self, ...this.#p.roster, ...this.#enrolled]);
    for (const q of this.#p.seam.peers.get()) replicas.add(q as ReplicaId);
    for (const q of this.#liveness.unreachable.get()) replicas.add(q as ReplicaId);
    return boundMetrics({
      view: this.#replica,
      parent,
      replicas,
      maxHoldingsPerPeer: this.#c.maxHoldingsPerPeer,
      quantum: this.#c.policy.quantum,
      demand: (e) => this.#board.fold(e),
    });
  }

  // ---- §8 reservations -------------------------------------------------------------------------

  reserve(leaf: GroupId, maximumCost: bigint, opts: ReserveOptions = {}): ReserveResult {
    if (typeof leaf !== "string") throw new TypeError("reserve: leaf must be a GroupId");
    if (typeof maximumCost !== "bigint") throw new TypeError("reserve: maximumCost must be a bigint");
    checkReservationTag(opts.tag);
    if (this.#failed || this.#shut) return { ok: false, refusal: { kind: "closed" } };
    const plan = this.#table.reserve(this.#replica, leaf, maximumCost, this.#c.timers.now(), opts);
    if (!plan.ok) return plan;
    if (!this.#apply({ tx: null, patch: null, reservations: plan.effect, events: [plan.effect.event] })) return { ok: false, refusal: { kind: "closed" } };
    return { ok: true, id: plan.id };
  }

  complete(id: ReservationId, actualCost: bigint): CompleteResult {
    return this.#finish(id, actualCost, "completed");
  }

  cancel(id: ReservationId): CompleteResult {
    return this.#finish(id, 0n, "cancelled");
  }

  #finish(id: ReservationId, actualCost: bigint, kind: "completed" | "cancelled"): CompleteResult {
    if (typeof id !== "string") throw new TypeError("complete: id must be a ReservationId");
    if (typeof actualCost !== "bigint") throw new TypeError("complete: actualCost must be a bigint");
    if (this.#failed || this.#shut) return { ok: false, refusal: { kind: "closed" } };
    const tx = this.#replica.begin();
    let plan;
    try {
      plan = this.#table.complete(this.#replica, id, actualCost, kind);
    } catch (e) {
      tx.rollback();
      throw e;
    }
    if (!plan.ok || plan.outcome === "no-such-reservation") {
      tx.rollback();
      return plan.ok ? { ok: true, charged: 0n, outcome: "no-such-reservation" } : plan;
    }
    if (!this.#apply({ tx, patch: tx.patch(), reservations: plan.effect, events: [plan.effect.event] })) return { ok: false, refusal: { kind: "closed" } };
    return { ok: true, charged: plan.charged, outcome: "charged" };
  }

  earmarked(leaf: GroupId): bigint {
    return this.#table.earmarked(leaf);
  }

  available(leaf: GroupId): bigint {
    return this.#table.available(this.#replica, leaf);
  }

  openReservations(): ReservationRow[] {
    return this.#table.open();
  }

  openReservationCount(): number {
    return this.#table.size;
  }

  // ---- §6 demand --------------------------------------------------------------------------------

  advertise(edge: AttachmentId, demand: Demand): void {
    if (this.#shut) return;
    this.#board.advertise(edge, demand);
  }

  advertiseMany(changes: Iterable<readonly [AttachmentId, Demand]>): void {
    if (this.#shut) return;
    this.#board.advertiseMany(changes);
  }

  demand(edge: AttachmentId): Demand {
    return this.#board.fold(edge);
  }

  // ---- §13.3 topology --------------------------------------------------------------------------

  prepare(record: AttachmentRecord): TopologyResult {
    for (const [what, id] of [["id", record?.id], ["parent", record?.parent], ["child", record?.child]] as const) {
      if (typeof id === "string" && id.length > MAX_ID_LENGTH) throw new RangeError(`prepare: record ${what} is longer than ${MAX_ID_LENGTH} code units`);
    }
    return this.#mutate((v) => v.prepare(record));
  }

  activate(edge: AttachmentId): TopologyResult {
    return this.#mutate((v) => v.activate(edge));
  }

  close(edge: AttachmentId): TopologyResult {
    return this.#mutate((v) => v.close(edge));
  }

  retire(edge: AttachmentId): TopologyResult {
    return this.#mutate((v) => v.retire(edge));
  }

  #mutate(step: (v: LedgerReplica) => MutationResult): TopologyResult {
    if (this.#failed || this.#shut) return { ok: false, refusal: { kind: "closed" } };
    const tx = this.#replica.begin();
    let r: MutationResult;
    try {
      r = step(this.#replica);
    } catch (e) {
      tx.rollback();
      throw e;
    }
    if (!r.ok) {
      tx.rollback();
      return { ok: false, refusal: r.refusal };
    }
    if (!this.#apply({ tx, patch: tx.patch(), reservations: null, events: [] })) return { ok: false, refusal: { kind: "closed" } };
    return { ok: true };
  }

  // ---- §15 governed hooks ----------------------------------------------------------------------

  controlSink(): ControlSink {
    return {
      publish: (patch) => {
        if (!(patch instanceof EntitlementLedger)) throw new TypeError("controlSink.publish needs an EntitlementLedger patch");
        if (this.#failed || this.#shut) return;
        const tx = this.#replica.begin();
        let merged;
        try {
          merged = this.#replica.merge(patch);
        } catch (e) {
          tx.rollback();
          throw e;
        }
        if (merged === null) {
          tx.rollback();
          return;
        }
        // Published whole (witness entries included), as every local patch is; `merge` only decided "changed".
        this.#apply({ tx, patch, reservations: null, events: [] });
      },
      onEnrolled: (replica) => {
        this.#enrolled.add(replica);
        this.remonitor(replica);
      },
    };
  }

  remonitor(replica: ReplicaId): void {
    if (this.#shut) return;
    this.#liveness.remonitor(replica);
  }

  // ---- §14 metrics, shutdown -------------------------------------------------------------------

  metrics(): NodeMetrics {
    const ledger = this.#replication.metrics();
    const framesRejected = this.#rejections.counts();
    const earmarked: Record<string, bigint> = {};
    for (const [leaf, v] of this.#table.earmarks()) earmarked[leaf] = v;
    return {
      peer: { ledger, framesRejected, demand: this.#board.counters(), liveness: this.#liveness.counters(), claims: this.#claims.counters() },
      framesRejected,
      failed: this.#failed,
      deltasPublished: ledger.deltasPublished,
      pendingDeltas: ledger.pendingDeltas,
      ...this.#counters,
      reservationsOpen: this.#table.size,
      earmarked,
    };
  }

  /** The replication core's view of peer `p` and of its stream (diagnostics and tests). */
  replicationState(p: PeerId): { known: ReturnType<ReplicationCore["peer"]>; cursor: ReturnType<ReplicationCore["cursor"]> } {
    return { known: this.#replication.core.peer(p), cursor: this.#replication.core.cursor(p) };
  }

  /** Resolves once the store is closed — for every caller: a second call while the first runs waits for the same stop. */
  shutdown(): Promise<void> {
    return (this.#stopping ??= this.#stop());
  }

  async #stop(): Promise<void> {
    // §9.3: values joined since the last commit are persisted "with the next commit or at the anti-entropy tick";
    // an orderly stop reaches neither, so commit them now — the restarted node must not read less than this one
    // acknowledged to its peers. A failed node keeps them unpersisted (§9.4: recovery is a restart).
    if (this.#merged !== null && !this.#failed) this.#commit({});
    let claimsError: unknown;
    try {
      this.#claims.close(); // first: its closed keeper claims are committed while the store still takes commits
    } catch (e) {
      claimsError = e; // a bug there must not leave replication, timers, channels and the store open for good
    }
    this.#shut = true;
    this.#replication.close();
    this.#board.close();
    this.#liveness.close();
    for (const f of this.#off) f();
    for (const ch of this.#channels) await ch.close();
    this.#p.store.close();
    if (claimsError !== undefined) {
      const why = claimsError instanceof Error ? `${claimsError.name}: ${claimsError.message}` : String(claimsError);
      throw new Error(`shutdown: closing the claims failed (${why}) — a bug, please report it; everything else, the store included, was closed, and a restart renews or lapses the keeper claims left open`, { cause: claimsError });
    }
  }

  // ---- §5.1 the one place local changes are applied --------------------------------------------

  /**
   * Applies one effect (node.md §5.1): (1) commit, in one store transaction, the patch, the reservation
   * rows and every inbound value merged since the previous commit — on failure roll the replica back,
   * fail closed and report `false`; (2) install: keep the replica's transaction, install the rows in the
   * table, tell ledger subscribers; (3) publish the patch; (4) compact once if the patch rows passed the
   * limit; (5) emit the effect's events. Nothing leaves the node before (1) succeeded.
   */
  #apply(e: Effect): boolean {
    const own: PatchRow[] = e.patch === null ? [] : [{ origin: "own", body: patchBytes(e.patch) }];
    if (!this.#commit({ patches: own, ...(e.reservations?.transaction ?? {}) }, { deferFailure: true })) {
      // roll back before anyone hears of the failure: a persist-failed listener that reads the ledger (or throws)
      // must find the node as it was, not inside the failed transaction (§9.4: failing closed installs nothing)
      e.tx?.rollback();
      this.#emitFailure();
      return false;
    }
    e.tx?.commit();
    if (e.reservations !== null) this.#table.install(e.reservations);
    if (e.patch !== null) {
      this.#ledger.changed();
      this.#replication.publish(e.patch);
    }
    this.#compactOnce();
    for (const ev of e.events) this.#events.emit(ev);
    return true;
  }

  /**
   * One durable store transaction with `tx` plus the inbound values merged since the last commit (as one
   * `merged` row holding their effective deltas — never the whole state). On failure the node fails closed.
   */
  #commit(tx: StoreTx, o: { deferFailure?: boolean } = {}): boolean {
    if (this.#failed || this.#shut) return false;
    const patches: PatchRow[] = [...(tx.patches ?? [])];
    const merged = this.#merged;
    if (merged !== null) patches.push({ origin: "merged", body: patchBytes(merged.snapshot()) });
    const t0 = this.#c.timers.now();
    try {
      this.#p.store.commit({ ...tx, patches });
    } catch (error) {
      this.#failClosed(error);
      if (o.deferFailure !== true) this.#emitFailure();
      return false;
    }
    this.#merged = null;
    this.#rows += patches.length;
    for (const row of patches) this.#rowBytes += row.body.length;
    this.#counters.commits++;
    this.#counters.lastCommitMs = this.#c.timers.now() - t0;
    return true;
  }

  /**
   * Compacts the store (§9.3) once its patch rows pass `compactAfterPatches` rows, or hold more bytes than both
   * `compactAfterPatchBytes` and the snapshot: restart work (snapshot + rows) then stays within about twice the
   * state's size plus that floor, and each compaction writes no more than the row bytes since the last one.
   */
  #compactOnce(): void {
    if (this.#failed || this.#shut) return;
    const byRows = this.#rows > this.#c.compactAfterPatches;
    const byBytes = this.#rowBytes > Math.max(this.#c.compactAfterPatchBytes, this.#snapshotBytes);
    if (!byRows && !byBytes) return;
    const state = patchBytes(this.#replica.snapshot());
    try {
      this.#p.store.compact(state);
    } catch (error) {
      this.#failClosed(error);
      this.#emitFailure();
      return;
    }
    this.#merged = null;
    this.#rows = 0;
    this.#rowBytes = 0;
    this.#snapshotBytes = state.length;
    this.#counters.compactions++;
  }

  /** A subscriber of one of the node's streams threw: counted, reported once per stream, never let out. */
  #subscriberError(where: InternalErrorSite, error: unknown): void {
    this.#counters.subscriberErrors++;
    this.#reportOnce(where, error);
  }

  #reportOnce(where: InternalErrorSite, error: unknown): void {
    if (this.#reported.has(where)) return;
    this.#reported.add(where);
    this.#events.emit({ kind: "internal-error", where, error });
  }

  /** Fails the node closed; the `persist-failed` event waits for {@link HeddleNode.#emitFailure}, once nothing is half done. */
  #failClosed(error: unknown): void {
    this.#counters.commitFailures++;
    if (this.#failed) return;
    this.#failed = true;
    this.#failure = { error };
  }

  /** Emits the `persist-failed` event of a failure not yet told (once). */
  #emitFailure(): void {
    const f = this.#failure;
    if (f === null) return;
    this.#failure = null;
    this.#events.emit({ kind: "persist-failed", error: f.error });
  }

  // ---- replication events ----------------------------------------------------------------------

  #onReplication(e: ReplicationEvent): void {
    if (this.#shut) return;
    switch (e.kind) {
      case "merged":
        (this.#merged ??= new LedgerReplica()).apply(e.delta);
        this.#ledger.changed();
        return;
      case "value-too-large":
        this.#events.emit(e);
        return;
      case "anti-entropy":
        // §9.3: merged values are persisted at least every anti-entropy interval; §14: conflicts re-checked.
        if (this.#merged !== null && !this.#failed && this.#commit({})) this.#compactOnce();
        if (this.#replica.changes !== this.#conflictsAt) {
          this.#conflictsAt = this.#replica.changes;
          let conflicts: LedgerConflict[];
          try {
            conflicts = this.#replica.validate();
          } catch (error) {
            // The join check refuses every value that would make this throw; never let it out of a timer.
            if (!(error instanceof LedgerOverflowError)) throw error;
            this.#counters.validateOverflows++;
            this.#reportOnce("validate", error);
            return;
          }
          const key = JSON.stringify(conflicts, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
          if (key !== this.#conflictsKey) {
            this.#conflictsKey = key;
            this.#events.emit({ kind: "conflicts", conflicts });
          }
        }
        return;
    }
  }
}
