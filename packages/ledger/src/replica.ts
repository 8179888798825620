import { EntitlementLedger, LedgerReads, wrap } from "./ledger.ts";
import type { MutationResult } from "./ledger.ts";
import type { AttachmentId, GroupId, MintId, ReplicaId } from "./ids.ts";
import * as mut from "./mutators.ts";
import type { Rational } from "./rational.ts";
import type { JoinObserver, State } from "./state.ts";
import { emptyState, joinInto } from "./state.ts";
import { TopologyIndex } from "./topology.ts";
import type { AttachmentRecord, MintRecord } from "./types.ts";

/**
 * A mutable copy of the ledger for one peer's hot path. It holds the same state as an
 * {@link EntitlementLedger} but joins patches in place, in time proportional to the patch (its
 * topology indexes are kept current incrementally), and every mutator that succeeds is applied
 * to the replica before it returns — so the threading rule (ledger.md §4.4) holds by
 * construction. `snapshot()` hands out an immutable value.
 */
export class LedgerReplica extends LedgerReads {
  /** @internal */ readonly s: State;
  /** @internal */ readonly ix: TopologyIndex;
  readonly #observer: JoinObserver;

  /** A replica starting from `initial` (copied; the argument is never aliased). */
  constructor(initial: EntitlementLedger = EntitlementLedger.EMPTY) {
    super();
    this.s = emptyState();
    joinInto(this.s, initial.s, "all");
    this.ix = new TopologyIndex(this.s);
    const ix = this.ix;
    const s = this.s;
    this.#observer = {
      recordsChanged(edge: AttachmentId, before) {
        ix.recordsChanged(edge, before, s.records.get(edge)!);
      },
      mintAdded(id: MintId, before: MintRecord | undefined) {
        ix.mintAdded(id, before, s.mints.get(id)!);
      },
      replicaSeen(r: ReplicaId) {
        ix.replicaSeen(r);
      },
    };
  }

  /** Joins `patch` into this replica in place; returns this replica. Costs O(size of patch). */
  apply(patch: EntitlementLedger): this {
    if (!(patch instanceof EntitlementLedger)) throw new TypeError("apply expects an EntitlementLedger");
    joinInto(this.s, patch.s, "all", this.#observer);
    return this;
  }

  /** An immutable copy of the current state. */
  snapshot(): EntitlementLedger {
    const s = emptyState();
    joinInto(s, this.s, "all");
    return EntitlementLedger.fromState(s);
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
