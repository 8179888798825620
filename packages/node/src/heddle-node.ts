import { EntitlementLedger } from "@heddle/ledger";
import type { AttachmentId, AttachmentRecord, GroupId, LedgerConflict, MutationResult, Rational, Refusal, ReplicaId } from "@heddle/ledger";
import { HeddlePolicy, type Demand } from "@heddle/policy";
import { boundMetrics, type BoundMetrics } from "./bound-metrics.ts";
import type { ResolvedHeddleConfig } from "./heddle-config.ts";
import type { ValueTooLarge } from "./ledger-replication.ts";
import type { PartitionEvent } from "./liveness.ts";
import type { HeddlePeer, PeerMetrics } from "./peer.ts";
import type { FrameRejected, RejectReason } from "./rejection.ts";
import { ReservationTable, type CompleteResult, type ReserveResult } from "./reservation-table.ts";
import { emptySchedule, planSchedule, policyEdges, type ScheduleResult } from "./schedule.ts";
import type { PeerId, Seam } from "@heddle/seam";
import { patchBytes, type HeddleStore, type PatchRow, type ReservationId, type ReservationRow, type StoreTx } from "./store.ts";
import { EventChannel, type EventStream, type Watch } from "@heddle/seam";
import { MAX_ID_LENGTH } from "./wire-schema.ts";

/** The outcome of a topology call (node.md §1, §13.3). */
export type TopologyResult = { ok: true } | { ok: false; refusal: Refusal | { kind: "closed" } };

/** The hooks governed mode drives the node through (node.md §15). */
export interface ControlSink {
  /** Runs the local mutation path (§5.1) with `patch`; idempotent. */
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
  | { kind: "persist-failed"; error: unknown };

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
}

/** The public surface of one peer (node.md §1). */
export interface HeddleNode {
  readonly self: ReplicaId;
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
  reserve(leaf: GroupId, maximumCost: bigint): ReserveResult;
  complete(id: ReservationId, actualCost: bigint): CompleteResult;
  cancel(id: ReservationId): CompleteResult;
  earmarked(leaf: GroupId): bigint;
  available(leaf: GroupId): bigint;
  /** Extension beyond node.md §1: this node's open reservations, ascending id. */
  openReservations(): ReservationRow[];
  advertise(edge: AttachmentId, demand: Demand): void;
  /** The folded live demand for `edge` as this node sees it (§6). */
  demand(edge: AttachmentId): Demand;
  prepare(record: AttachmentRecord): TopologyResult;
  activate(edge: AttachmentId): TopologyResult;
  close(edge: AttachmentId): TopologyResult;
  retire(edge: AttachmentId): TopologyResult;
  controlSink(): ControlSink;
  remonitor(replica: ReplicaId): void;
  metrics(): NodeMetrics;
  shutdown(): Promise<void>;
}

/** A commit that failed: the node is now failed closed. Internal to the mutation path. */
class PersistFailed extends Error {}

/** Everything {@link Node} is assembled from by `heddleStatic`. */
export interface NodeParts {
  readonly self: ReplicaId;
  readonly seam: Seam;
  readonly peer: HeddlePeer;
  readonly config: ResolvedHeddleConfig;
  readonly store: HeddleStore;
  readonly epoch: number;
  readonly roster: ReadonlySet<ReplicaId>;
  readonly restored: readonly ReservationRow[];
  /** Patch rows in the store not covered by its snapshot, at boot. */
  readonly rowsAtBoot: number;
}

/**
 * One peer of heddle (node.md): networking from {@link HeddlePeer}, plus scheduling (§7), reservations
 * (§8), durability (§9) and bound metrics (§11). Every local change runs the mutation path of §5.1:
 * computed on a working copy, committed in one store transaction together with the inbound values
 * merged since the previous commit, then installed and published. A commit error fails the node closed.
 */
export class Node implements HeddleNode {
  readonly self: ReplicaId;
  readonly epoch: number;
  readonly genesisDigest: string;
  readonly #p: NodeParts;
  readonly #c: ResolvedHeddleConfig;
  readonly #peer: HeddlePeer;
  readonly #table: ReservationTable;
  readonly #events = new EventChannel<NodeEvent>();
  readonly #enrolled = new Set<ReplicaId>();
  readonly #offsets = new Map<AttachmentId, { parent: GroupId; offset: Rational }>();
  readonly #observed = new Map<AttachmentId, { parent: GroupId; demanding: boolean }>();
  readonly #off: (() => void)[] = [];
  #failed = false;
  #shut = false;
  #installing = false;
  #dirty = false;
  #rows: number;
  #tick: unknown = null;
  #conflictsSeen: EntitlementLedger | null = null;
  #conflictsKey = "[]";
  #m = { schedules: 0, grants: 0, grantedUnits: 0n, delegateRefusals: 0, commits: 0, commitFailures: 0, lastCommitMs: 0, compactions: 0 };

  constructor(p: NodeParts) {
    this.#p = p;
    this.#c = p.config;
    this.#peer = p.peer;
    this.self = p.self;
    this.epoch = p.epoch;
    this.genesisDigest = p.peer.genesisDigest;
    this.#rows = p.rowsAtBoot;
    this.#table = new ReservationTable({
      self: p.self,
      epoch: p.epoch,
      commit: (tx) => this.#commit(tx),
      view: () => this.#peer.ledger.get(),
      install: () => {},
      publish: (patch) => this.#publish(patch),
      closed: () => this.#failed || this.#shut,
      now: () => this.#c.timers.now(),
      restored: p.restored,
      onEvent: (e) => this.#events.emit({ kind: e.kind, id: e.id, leaf: e.leaf, amount: e.amount }),
    });
    this.#off.push(
      this.#peer.ledger.subscribe(() => {
        if (!this.#installing) this.#dirty = true;
      }),
      this.#peer.events.subscribe((e) => this.#events.emit(e)),
    );
    this.#armTick();
  }

  get ledger(): Watch<EntitlementLedger> {
    return this.#peer.ledger;
  }

  get unreachable(): Watch<ReadonlySet<ReplicaId>> {
    return this.#peer.unreachable as Watch<ReadonlySet<ReplicaId>>;
  }

  get partitionEvents(): EventStream<PartitionEvent> {
    return this.#peer.partitionEvents;
  }

  get events(): EventStream<NodeEvent> {
    return this.#events;
  }

  // ---- §7 scheduling ---------------------------------------------------------------------------

  schedule(parent: GroupId): ScheduleResult {
    if (typeof parent !== "string") throw new TypeError("schedule: parent must be a GroupId");
    if (this.#failed || this.#shut) return emptySchedule();
    const offsets = new Map<AttachmentId, Rational>();
    for (const [id, o] of this.#offsets) offsets.set(id, o.offset);
    const observed = new Map<AttachmentId, boolean>();
    for (const [id, o] of this.#observed) observed.set(id, o.demanding);
    const plan = planSchedule({
      view: this.#peer.ledger.get(),
      parent,
      self: this.self,
      earmarked: this.#table.earmarked(parent),
      demand: (e) => this.#peer.demand(e),
      offsets,
      observed,
      policy: this.#c.policy,
      maxGrants: this.#c.maxGrantsPerSchedule,
    });
    this.#m.schedules++;
    this.#m.delegateRefusals += plan.refusals;
    const live = new Set(plan.children);
    for (const m of [this.#offsets, this.#observed]) {
      for (const [id, v] of m) if (v.parent === parent && !live.has(id)) m.delete(id);
    }
    for (const [id, offset] of plan.offsets) this.#offsets.set(id, { parent, offset });
    for (const [id, demanding] of plan.observed) this.#observed.set(id, { parent, demanding });
    if (plan.patch === null) return { grants: plan.grants, seated: plan.seated, clamped: plan.clamped };
    try {
      this.#commit({ patches: [{ origin: "own", body: patchBytes(plan.patch) }] });
    } catch (e) {
      if (e instanceof PersistFailed) return emptySchedule();
      throw e;
    }
    this.#publish(plan.patch);
    this.#m.grants += plan.grants.length;
    for (const g of plan.grants) this.#m.grantedUnits += g.amount;
    const result = { grants: plan.grants, seated: plan.seated, clamped: plan.clamped };
    this.#events.emit({ kind: "schedule", parent, ...result });
    return result;
  }

  parentVirtualTime(parent: GroupId): Rational | null {
    const offsets = new Map<AttachmentId, Rational>();
    for (const [id, o] of this.#offsets) offsets.set(id, o.offset);
    return HeddlePolicy.front(policyEdges(this.#peer.ledger.get(), parent, (e) => this.#peer.demand(e), offsets));
  }

  boundMetrics(parent: GroupId): BoundMetrics {
    const replicas = new Set<ReplicaId>([this.self, ...this.#p.roster, ...this.#enrolled]);
    for (const p of this.#p.seam.peers.get()) replicas.add(p as ReplicaId);
    for (const p of this.#peer.unreachable.get()) replicas.add(p as ReplicaId);
    return boundMetrics({
      view: this.#peer.ledger.get(),
      parent,
      replicas,
      maxHoldingsPerPeer: this.#c.maxHoldingsPerPeer,
      quantum: this.#c.policy.quantum,
      demand: (e) => this.#peer.demand(e),
    });
  }

  // ---- §8 reservations -------------------------------------------------------------------------

  reserve(leaf: GroupId, maximumCost: bigint): ReserveResult {
    try {
      return this.#table.reserve(leaf, maximumCost);
    } catch (e) {
      if (e instanceof PersistFailed) return { ok: false, refusal: { kind: "closed" } };
      throw e;
    }
  }

  complete(id: ReservationId, actualCost: bigint): CompleteResult {
    try {
      const r = this.#table.complete(id, actualCost);
      if (r.ok && r.outcome === "charged") this.#maybeCompact();
      return r;
    } catch (e) {
      if (e instanceof PersistFailed) return { ok: false, refusal: { kind: "closed" } };
      throw e;
    }
  }

  cancel(id: ReservationId): CompleteResult {
    try {
      return this.#table.cancel(id);
    } catch (e) {
      if (e instanceof PersistFailed) return { ok: false, refusal: { kind: "closed" } };
      throw e;
    }
  }

  earmarked(leaf: GroupId): bigint {
    return this.#table.earmarked(leaf);
  }

  available(leaf: GroupId): bigint {
    return this.#table.available(leaf);
  }

  openReservations(): ReservationRow[] {
    return this.#table.open();
  }

  // ---- §6 demand --------------------------------------------------------------------------------

  advertise(edge: AttachmentId, demand: Demand): void {
    if (this.#shut) return;
    this.#peer.advertise(edge, demand);
  }

  demand(edge: AttachmentId): Demand {
    return this.#peer.demand(edge);
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

  // ---- §15 governed hooks ----------------------------------------------------------------------

  controlSink(): ControlSink {
    return {
      publish: (patch) => {
        if (!(patch instanceof EntitlementLedger)) throw new TypeError("controlSink.publish needs an EntitlementLedger patch");
        if (this.#failed || this.#shut) return;
        const cur = this.#peer.ledger.get();
        if (cur.join(patch).equals(cur)) return;
        try {
          this.#commit({ patches: [{ origin: "own", body: patchBytes(patch) }] });
        } catch (e) {
          if (e instanceof PersistFailed) return;
          throw e;
        }
        this.#publish(patch);
      },
      onEnrolled: (replica) => {
        this.#enrolled.add(replica);
        this.remonitor(replica);
      },
    };
  }

  remonitor(replica: ReplicaId): void {
    if (this.#shut) return;
    this.#peer.remonitor(replica);
  }

  // ---- §14 metrics, shutdown -------------------------------------------------------------------

  metrics(): NodeMetrics {
    const peer = this.#peer.metrics();
    const earmarked: Record<string, bigint> = {};
    for (const [leaf, v] of this.#table.earmarks()) earmarked[leaf] = v;
    return {
      peer,
      framesRejected: peer.framesRejected,
      failed: this.#failed,
      deltasPublished: peer.ledger.deltasPublished,
      pendingDeltas: peer.ledger.pendingDeltas,
      ...this.#m,
      reservationsOpen: this.#table.size,
      earmarked,
    };
  }

  async shutdown(): Promise<void> {
    if (this.#shut) return;
    this.#shut = true;
    if (this.#tick !== null) this.#c.timers.clear(this.#tick);
    for (const f of this.#off) f();
    await this.#peer.shutdown();
    this.#p.store.close();
  }

  // ---- §5.1 the local mutation path ------------------------------------------------------------

  #mutate(step: (v: EntitlementLedger) => MutationResult): TopologyResult {
    if (this.#failed || this.#shut) return { ok: false, refusal: { kind: "closed" } };
    const r = step(this.#peer.ledger.get());
    if (!r.ok) return { ok: false, refusal: r.refusal };
    try {
      this.#commit({ patches: [{ origin: "own", body: patchBytes(r.patch) }] });
    } catch (e) {
      if (e instanceof PersistFailed) return { ok: false, refusal: { kind: "closed" } };
      throw e;
    }
    this.#publish(r.patch);
    return { ok: true };
  }

  /**
   * §5.1 step 2: one store transaction with `tx` and, if inbound values changed the state since the last
   * commit, the current state as a `merged` row (it contains every value merged since then). On failure
   * the node fails closed and {@link PersistFailed} is thrown; nothing was installed or published.
   */
  #commit(tx: StoreTx): void {
    if (this.#failed || this.#shut) throw new PersistFailed("node is closed");
    const patches: PatchRow[] = [...(tx.patches ?? [])];
    if (this.#dirty) patches.push({ origin: "merged", body: patchBytes(this.#peer.ledger.get()) });
    const t0 = this.#c.timers.now();
    try {
      this.#p.store.commit({ ...tx, patches });
    } catch (error) {
      this.#failClosed(error);
      throw new PersistFailed("commit failed", { cause: error });
    }
    this.#dirty = false;
    this.#rows += patches.length;
    this.#m.commits++;
    this.#m.lastCommitMs = this.#c.timers.now() - t0;
  }

  /** §5.1 steps 3–4 for a committed patch: install it and send it to the peers. */
  #publish(patch: EntitlementLedger): void {
    this.#installing = true;
    try {
      this.#peer.publish(patch);
    } finally {
      this.#installing = false;
    }
    this.#maybeCompact();
  }

  #maybeCompact(): void {
    if (this.#failed || this.#shut || this.#rows <= this.#c.compactAfterPatches) return;
    try {
      this.#p.store.compact(patchBytes(this.#peer.ledger.get()));
    } catch (error) {
      this.#failClosed(error);
      return;
    }
    this.#dirty = false;
    this.#rows = 0;
    this.#m.compactions++;
  }

  #failClosed(error: unknown): void {
    this.#m.commitFailures++;
    if (this.#failed) return;
    this.#failed = true;
    this.#events.emit({ kind: "persist-failed", error });
  }

  /** Every anti-entropy interval: persist merged values if dirty (§9.3) and report changed conflicts (§14). */
  #armTick(): void {
    this.#tick = this.#c.timers.set(() => {
      this.#tick = null;
      if (this.#shut) return;
      if (this.#dirty && !this.#failed) {
        try {
          this.#commit({});
        } catch (e) {
          if (!(e instanceof PersistFailed)) throw e;
        }
      }
      const state = this.#peer.ledger.get();
      if (this.#conflictsSeen !== state) {
        this.#conflictsSeen = state;
        const conflicts = state.validate();
        const key = JSON.stringify(conflicts, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
        if (key !== this.#conflictsKey) {
          this.#conflictsKey = key;
          this.#events.emit({ kind: "conflicts", conflicts });
        }
      }
      this.#armTick();
    }, this.#c.antiEntropyIntervalMs);
  }
}
