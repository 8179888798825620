import { counterHash, DigestSum, gaugeHash, lifecycleHash, mintHash, recordsHash, stateDigest, transferHash } from "./digest.ts";
import { EntitlementLedger, LedgerReads, wrap } from "./ledger.ts";
import type { MutationResult } from "./ledger.ts";
import type { AttachmentId, GroupId, MintId, ReplicaId } from "./ids.ts";
import * as mut from "./mutators.ts";
import { PatchBuilder } from "./patch.ts";
import type { Rational } from "./rational.ts";
import type { JoinObserver, State } from "./state.ts";
import { emptyState, joinInto, stateSize } from "./state.ts";
import { TopologyIndex } from "./topology.ts";
import type { AttachmentRecord, MintRecord } from "./types.ts";

/** One write to a map of the replica, or one component's outer map replaced by its copy, as an undo log keeps it. */
type UndoEntry =
  | { readonly map: Map<unknown, unknown>; readonly key: unknown; readonly before: unknown; readonly component?: undefined }
  | { readonly component: keyof State; readonly shared: Map<unknown, unknown> };

const COMPONENTS: readonly (keyof State)[] = ["records", "mints", "issued", "returned", "leafSpent", "rollupSpent", "transfers", "lifecycle", "gauges"];

/**
 * A tentative change to a {@link LedgerReplica} (`begin()`): the replica's mutators and `merge` apply
 * at once, so each reads the state that absorbed the previous one (ledger.md §4.4), and `patch()` is
 * the join of their patches. `commit()` keeps everything; `rollback()` restores the replica exactly
 * as it was at `begin()` — slots, digest, indexes — in time proportional to what changed (plus an
 * index rebuild when a record or mint was touched). A node computes a local change this way, makes it
 * durable, and rolls back if the store refused it (node.md §5.1, §9.4).
 */
export interface LedgerTransaction {
  /** The join of every patch applied since `begin()` (witness entries included), or null if none. */
  patch(): EntitlementLedger | null;
  /** Keeps the changes. */
  commit(): void;
  /** Undoes every change since `begin()`. */
  rollback(): void;
}

/**
 * A mutable copy of the ledger for one peer's hot path. It holds the same state as an
 * {@link EntitlementLedger} but joins patches in place, in time proportional to the patch (its
 * topology indexes and its {@link digest} are kept current incrementally), and every mutator that
 * succeeds is applied to the replica before it returns — so the threading rule (ledger.md §4.4) holds
 * by construction. Snapshots and construction are cheap because everything is copy-on-write: a
 * snapshot shares the replica's maps and indexes (O(1)), and the replica copies a component's outer map,
 * an inner map or its index only before its own next write to it; the same snapshot is returned until
 * the replica changes.
 */
export class LedgerReplica extends LedgerReads {
  /** @internal */ readonly s: State;
  /** @internal */ ix: TopologyIndex;
  readonly #digest: DigestSum;
  readonly #observer: JoinObserver;
  /** Inner maps the replica may write in place; "all" until the first snapshot shares them. */
  #owned: Set<object> | "all" = "all";
  /** Components whose outer map is shared with an immutable value (the initial one or a snapshot). */
  readonly #sharedComponents = new Set<keyof State>();
  /** The index is shared with an immutable value: clone it before the first change. */
  #ixShared = false;
  #snapshot: EntitlementLedger | null = null;
  #undo: UndoEntry[] | null = null;
  #undoDigest: { hi: number; lo: number } | null = null;
  #undoTopology = false;
  #txPatch: State | null = null;
  #effect: PatchBuilder | null = null;
  #raised = false;
  #changes = 0;

  /**
   * A replica starting from `initial`, in O(1) beyond the value's own cached index and digest: it shares
   * the value's maps and index and copies each only before its first write to it (the value never changes).
   */
  constructor(initial: EntitlementLedger = EntitlementLedger.EMPTY) {
    super();
    this.s = { ...initial.s };
    for (const c of COMPONENTS) this.#sharedComponents.add(c);
    this.#owned = new Set();
    this.ix = initial.ix;
    this.#ixShared = true;
    this.#digest = new DigestSum();
    const from = initial.digestSum();
    this.#digest.hi = from.hi;
    this.#digest.lo = from.lo;
    const self = this;
    const d = this.#digest;
    this.#observer = {
      recordsChanged(edge: AttachmentId, before) {
        const now = self.s.records.get(edge)!;
        self.#ownIndex().recordsChanged(edge, before, now);
        if (before !== undefined) d.sub(recordsHash(edge, before));
        d.add(recordsHash(edge, now));
        self.#undoTopology = true;
        self.#raised = true;
        if (self.#effect !== null) for (const r of now) if (before === undefined || !before.includes(r)) self.#effect.record(r);
      },
      mintAdded(id: MintId, before: MintRecord | undefined) {
        const now = self.s.mints.get(id)!;
        self.#ownIndex().mintAdded(id, before, now);
        if (before !== undefined) d.sub(mintHash(id, before));
        d.add(mintHash(id, now));
        self.#undoTopology = true;
        self.#raised = true;
        self.#effect?.mint(id, now);
      },
      replicaSeen(r: ReplicaId) {
        // named by a slot already; a mint holder alone does not count (its mint's record can be replaced)
        if (self.ix.namedBySlot(r)) return;
        self.#undoTopology = true;
        self.#ownIndex().replicaSeen(r);
      },
      willSet(map, key, before) {
        self.#undo?.push({ map, key, before });
      },
      counterRaised(fam, e, r, before, after) {
        if (before !== undefined) d.sub(counterHash(fam, e, r, before));
        d.add(counterHash(fam, e, r, after));
        self.#raised = true;
        self.#effect?.counter(fam, e, r, after);
      },
      transferRaised(k, dn, x, before, after) {
        if (before !== undefined) d.sub(transferHash(k, dn, x, before));
        d.add(transferHash(k, dn, x, after));
        self.#raised = true;
        self.#effect?.transfer(k, dn, x, after);
      },
      lifecycleRaised(e, before, after) {
        if (before !== undefined) d.sub(lifecycleHash(e, before));
        d.add(lifecycleHash(e, after));
        self.#raised = true;
        self.#effect?.lifecycle(e, after);
      },
      gaugeRaised(e, before, after) {
        if (before !== undefined) d.sub(gaugeHash(e, before));
        d.add(gaugeHash(e, after));
        self.#raised = true;
        self.#effect?.gauge(e, after);
      },
    };
  }

  /**
   * The state digest (16 hex digits): equal states, equal digests. Kept current in O(1) per changed
   * slot; `EntitlementLedger.digest()` computes the same value from scratch.
   */
  digest(): string {
    return this.#digest.hex();
  }

  /** How many joins changed this replica so far (a cheap "has anything changed since" check). */
  get changes(): number {
    return this.#changes;
  }

  #join(patch: EntitlementLedger): void {
    if (!(patch instanceof EntitlementLedger)) throw new TypeError("apply expects an EntitlementLedger");
    this.#raised = false;
    for (const c of COMPONENTS) if (patch.s[c].size > 0 && this.#sharedComponents.has(c)) this.#ownComponent(c);
    joinInto(this.s, patch.s, this.#owned, this.#observer);
    if (this.#txPatch !== null) joinInto(this.#txPatch, patch.s, "all");
    if (this.#raised) {
      this.#changes++;
      this.#snapshot = null;
    }
  }

  /** Replaces a shared component's outer map by a copy the replica owns (its inner maps stay shared). */
  #ownComponent(c: keyof State): void {
    const shared = this.s[c] as Map<unknown, unknown>;
    this.#undo?.push({ component: c, shared });
    (this.s as unknown as Record<keyof State, Map<unknown, unknown>>)[c] = new Map(shared);
    this.#sharedComponents.delete(c);
  }

  #ownIndex(): TopologyIndex {
    if (this.#ixShared) {
      this.ix = this.ix.clone();
      this.#ixShared = false;
    }
    return this.ix;
  }

  /** Joins `patch` into this replica in place; returns this replica. Costs O(size of patch). */
  apply(patch: EntitlementLedger): this {
    this.#join(patch);
    return this;
  }

  /**
   * Joins `patch` in place and returns what it changed: the entries it raised, at their new values
   * (a patch whose join into the old state gives the new one), or null when it changed nothing.
   * Costs O(size of patch) — deciding "changed" never reads or encodes the rest of the ledger.
   */
  merge(patch: EntitlementLedger): EntitlementLedger | null {
    const effect = new PatchBuilder();
    this.#effect = effect;
    try {
      this.#join(patch);
    } finally {
      this.#effect = null;
    }
    return this.#raised ? EntitlementLedger.fromState(effect.s) : null;
  }

  /** Starts a {@link LedgerTransaction}; one at a time. */
  begin(): LedgerTransaction {
    if (this.#undo !== null) throw new Error("LedgerReplica: a transaction is already open");
    const undo: UndoEntry[] = [];
    this.#undo = undo;
    this.#undoDigest = { hi: this.#digest.hi, lo: this.#digest.lo };
    this.#undoTopology = false;
    const acc = emptyState();
    this.#txPatch = acc;
    const changesAtBegin = this.#changes;
    const snapshotAtBegin = this.#snapshot;
    let open = true;
    const close = () => {
      if (!open) throw new Error("LedgerReplica: transaction already finished");
      open = false;
      this.#undo = null;
      this.#txPatch = null;
    };
    return {
      patch: () => {
        if (stateSize(acc) === 0) return null;
        const copy = emptyState();
        joinInto(copy, acc, "all");
        return EntitlementLedger.fromState(copy);
      },
      commit: () => close(),
      rollback: () => {
        close();
        for (let i = undo.length - 1; i >= 0; i--) {
          const u = undo[i]!;
          if (u.component !== undefined) {
            (this.s as unknown as Record<keyof State, Map<unknown, unknown>>)[u.component] = u.shared;
            this.#sharedComponents.add(u.component);
          } else if (u.before === undefined) u.map.delete(u.key);
          else u.map.set(u.key, u.before);
        }
        this.#digest.hi = this.#undoDigest!.hi;
        this.#digest.lo = this.#undoDigest!.lo;
        if (this.#undoTopology) {
          this.ix = new TopologyIndex(this.s);
          this.#ixShared = false;
        }
        this.#changes = changesAtBegin;
        this.#snapshot = snapshotAtBegin;
      },
    };
  }

  /** An immutable value equal to the current state; the same object until the replica changes. */
  snapshot(): EntitlementLedger {
    if (this.#undo !== null) throw new Error("LedgerReplica: no snapshot while a transaction is open");
    if (this.#snapshot !== null) return this.#snapshot;
    // Everything is now shared with the snapshot: the replica copies a map (or its index) before its next write to it.
    for (const c of COMPONENTS) this.#sharedComponents.add(c);
    this.#owned = new Set();
    this.#ixShared = true;
    this.#snapshot = new EntitlementLedger({ ...this.s }, this.ix);
    return this.#snapshot;
  }

  /** The canonical encoding of the current state. */
  encode(): string {
    return this.snapshot().encode();
  }

  #run(r: mut.RawResult): MutationResult {
    const res = wrap(r);
    if (res.ok) this.apply(res.patch);
    return res;
  }

  /** `mint`, applied on success. */
  mint(id: MintId, root: GroupId, holder: ReplicaId, amount: bigint): MutationResult {
    return this.#run(mut.mint(this, id, root, holder, amount));
  }

  /** `prepare`, applied on success. */
  prepare(record: AttachmentRecord): MutationResult {
    return this.#run(mut.prepare(this, record));
  }

  /** `activate`, applied on success. */
  activate(edge: AttachmentId): MutationResult {
    return this.#run(mut.activate(this, edge));
  }

  /** `close`, applied on success. */
  close(edge: AttachmentId): MutationResult {
    return this.#run(mut.close(this, edge));
  }

  /** `retire`, applied on success. */
  retire(edge: AttachmentId): MutationResult {
    return this.#run(mut.retire(this, edge));
  }

  /** `seat`, applied on success. */
  seat(edge: AttachmentId, front: Rational): MutationResult {
    return this.#run(mut.seat(this, edge, front));
  }

  /** `delegate`, applied on success. */
  delegate(replica: ReplicaId, edge: AttachmentId, amount: bigint): MutationResult {
    return this.#run(mut.delegate(this, replica, edge, amount));
  }

  /** `release`, applied on success. */
  release(replica: ReplicaId, edge: AttachmentId, amount: bigint): MutationResult {
    return this.#run(mut.release(this, replica, edge, amount));
  }

  /** `transfer`, applied on success. */
  transfer(group: GroupId, from: ReplicaId, to: ReplicaId, amount: bigint): MutationResult {
    return this.#run(mut.transfer(this, group, from, to, amount));
  }

  /** `spend`, applied on success. */
  spend(replica: ReplicaId, group: GroupId, amount: bigint): MutationResult {
    return this.#run(mut.spend(this, replica, group, amount));
  }

  /** `chargeCaptured`, applied on success. */
  chargeCaptured(replica: ReplicaId, path: readonly AttachmentId[], amount: bigint): MutationResult {
    return this.#run(mut.chargeCaptured(this, replica, path, amount));
  }
}
