import { EntitlementLedger } from "@heddle/ledger";
import type { AttachmentId, GroupId, LedgerReplica, MutationResult, Refusal, ReplicaId } from "@heddle/ledger";
import { patchBytes, type ReservationId, type ReservationRow, type StoreTx } from "./store.ts";

const INT64_MAX = (1n << 63n) - 1n;

/** Why `reserve` declined (node.md §1, §8). Nothing changed. */
export type ReserveRefusal =
  | { kind: "invalid-cost"; maximumCost: bigint }
  | { kind: "not-a-leaf"; leaf: GroupId }
  | { kind: "no-lineage"; leaf: GroupId }
  | { kind: "root-leaf"; leaf: GroupId }
  | { kind: "insufficient"; leaf: GroupId; available: bigint; requested: bigint }
  | { kind: "not-writable" }
  | { kind: "closed" };

/** The outcome of `reserve` (node.md §1). */
export type ReserveResult = { ok: true; id: ReservationId } | { ok: false; refusal: ReserveRefusal };

/** The outcome of `complete` / `cancel` (node.md §1). */
export type CompleteResult =
  | { ok: true; charged: bigint; outcome: "charged" | "no-such-reservation" }
  | { ok: false; refusal: { kind: "cost-out-of-range"; actualCost: bigint; maximumCost: bigint } | { kind: "closed" } };

/** What the table reports after each change it made (node.md §14 `reserved` / `completed` / `cancelled`). */
export interface ReservationEvent {
  readonly kind: "reserved" | "completed" | "cancelled";
  readonly id: ReservationId;
  readonly leaf: GroupId;
  /** `reserved`: the earmark taken; `completed`: the units charged; `cancelled`: the earmark released. */
  readonly amount: bigint;
}

/** A ledger refusal where none is possible (node.md §8): a bug, never an outcome to handle. */
export class LedgerInvariantError extends Error {
  /** The refusal the ledger returned. */
  readonly refusal: Refusal;

  constructor(message: string, refusal: Refusal) {
    super(`${message}: ${refusal.kind} (${refusal.message})`);
    this.name = "LedgerInvariantError";
    this.refusal = refusal;
  }
}

/** The view the table reads and charges on: the node's converged ledger. */
export type ReservationLedgerView = EntitlementLedger | LedgerReplica;

/** Everything a {@link ReservationTable} is built from; the node supplies the callbacks. */
export interface ReservationTableOptions {
  /** This peer's replica id: the slot it earmarks and charges. */
  readonly self: ReplicaId;
  /** The incarnation from `store.boot`; ids are `${self}/${epoch}/${n}`. */
  readonly epoch: number;
  /**
   * The node's commit path (§5.1 step 2). It receives the reservation rows and the charge patch of one
   * call and must make them durable in one transaction (it may add merged values); it throws on failure.
   */
  readonly commit: (tx: StoreTx) => void;
  /** The current view (§5.1: the state every call reads). */
  readonly view: () => ReservationLedgerView;
  /** Joins a committed charge patch into the node's state (§5.1 step 3). */
  readonly install: (patch: EntitlementLedger) => void;
  /** Sends a committed, installed charge patch to the peers (§5.1 step 4). */
  readonly publish: (patch: EntitlementLedger) => void;
  /** True once the node shut down or failed closed (§9.4): `reserve`/`complete` refuse `closed`. */
  readonly closed?: () => boolean;
  /** Wall-clock ms for `createdAt` (the node's `timers.now`). */
  readonly now: () => number;
  /** Rows from `PersistedState.reservations`: the table and earmarks as they were at the crash. */
  readonly restored?: readonly ReservationRow[];
  /** Called after every change, once it is committed and installed. */
  readonly onEvent?: (e: ReservationEvent) => void;
}

/** `chargeCaptured` on `view` without changing it (a `LedgerReplica` applies its mutators, so charge a snapshot). */
function chargeOn(view: ReservationLedgerView, self: ReplicaId, path: readonly AttachmentId[], cost: bigint): MutationResult {
  const pure = view instanceof EntitlementLedger ? view : view.snapshot();
  return pure.chargeCaptured(self, path, cost);
}

/**
 * A peer's reservation table (node.md §8): earmarks of leaf holdings for admitted work, each charged
 * exactly once on completion to the path captured at admission.
 *
 * Synchronous and I/O-free except through the supplied callbacks. Every change is committed through
 * `commit` before the table changes; if `commit` throws, the table, its earmarks and the ledger are
 * unchanged and the error propagates, so the node can fail closed (§9.4). The table is never
 * replicated: only its owner completes or cancels. Open reservations are bounded by the holdings
 * (each earmarks at least one unit of `holdings(leaf, self)`, an int64).
 */
export class ReservationTable {
  readonly #o: ReservationTableOptions;
  readonly #rows = new Map<ReservationId, ReservationRow>();
  readonly #earmarks = new Map<GroupId, bigint>();
  #next = 0;

  constructor(o: ReservationTableOptions) {
    if (typeof o.self !== "string" || o.self.length === 0) throw new TypeError("ReservationTable needs this peer's replica id");
    if (!Number.isSafeInteger(o.epoch) || o.epoch < 0) throw new RangeError(`ReservationTable epoch must be a safe integer ≥ 0, got ${o.epoch}`);
    this.#o = o;
    for (const row of o.restored ?? []) {
      if (this.#rows.has(row.id)) throw new RangeError(`restored reservation ${row.id} appears twice`);
      this.#add(row);
    }
  }

  /** Earmarks `maximumCost` of this peer's holdings at `leaf` for work admitted now (node.md §8). */
  reserve(leaf: GroupId, maximumCost: bigint): ReserveResult {
    if (typeof leaf !== "string") throw new TypeError("reserve: leaf must be a GroupId");
    if (typeof maximumCost !== "bigint") throw new TypeError("reserve: maximumCost must be a bigint");
    if (this.#o.closed?.() === true) return { ok: false, refusal: { kind: "closed" } };
    if (maximumCost <= 0n || maximumCost > INT64_MAX) return { ok: false, refusal: { kind: "invalid-cost", maximumCost } };
    const v = this.#o.view();
    if (!v.isLeaf(leaf)) return { ok: false, refusal: { kind: "not-a-leaf", leaf } };
    const path = v.lineageOf(leaf);
    if (path === null) return { ok: false, refusal: { kind: "no-lineage", leaf } };
    if (path.length === 0) return { ok: false, refusal: { kind: "root-leaf", leaf } };
    const available = v.holdings(leaf, this.#o.self) - this.earmarked(leaf);
    if (available < maximumCost) return { ok: false, refusal: { kind: "insufficient", leaf, available, requested: maximumCost } };
    // The number is spent even if the commit fails: a row that reached the disk despite an error
    // must never share its id with a later one.
    const id: ReservationId = `${this.#o.self}/${this.#o.epoch}/${this.#next++}`;
    if (this.#rows.has(id)) throw new RangeError(`reservation id ${id} is already open (epoch reused?)`);
    const row: ReservationRow = Object.freeze({ id, leaf, maximumCost, capturedPath: Object.freeze([...path]), createdAt: this.#o.now() });
    this.#o.commit({ putReservations: [row] });
    this.#add(row);
    this.#o.onEvent?.({ kind: "reserved", id, leaf, amount: maximumCost });
    return { ok: true, id };
  }

  /**
   * Charges `actualCost` (0 … maximumCost) to the captured path and releases the earmark, exactly once
   * (node.md §8): the charge patch and the row deletion commit together, then the patch is installed and
   * published. An unknown id (already completed, cancelled, or never reserved) charges nothing.
   */
  complete(id: ReservationId, actualCost: bigint): CompleteResult {
    return this.#finish(id, actualCost, "completed");
  }

  /** `complete(id, 0n)`: releases the earmark, charges nothing, publishes nothing. */
  cancel(id: ReservationId): CompleteResult {
    return this.#finish(id, 0n, "cancelled");
  }

  /** Units earmarked at `leaf` by open reservations. */
  earmarked(leaf: GroupId): bigint {
    return this.#earmarks.get(leaf) ?? 0n;
  }

  /** `holdings(leaf, self) − earmarked(leaf)` on the current view. */
  available(leaf: GroupId): bigint {
    return this.#o.view().holdings(leaf, this.#o.self) - this.earmarked(leaf);
  }

  /** The open reservation `id`, or null. */
  get(id: ReservationId): ReservationRow | null {
    return this.#rows.get(id) ?? null;
  }

  /** Every open reservation, ascending id. */
  open(): ReservationRow[] {
    return [...this.#rows.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Number of open reservations (a node metric, §14). */
  get size(): number {
    return this.#rows.size;
  }

  /** Earmarked units per leaf with any open reservation (a node metric, §14). */
  earmarks(): ReadonlyMap<GroupId, bigint> {
    return new Map(this.#earmarks);
  }

  #add(row: ReservationRow): void {
    this.#rows.set(row.id, row);
    this.#earmarks.set(row.leaf, this.earmarked(row.leaf) + row.maximumCost);
  }

  #finish(id: ReservationId, actualCost: bigint, kind: "completed" | "cancelled"): CompleteResult {
    if (typeof id !== "string") throw new TypeError("complete: id must be a ReservationId");
    if (typeof actualCost !== "bigint") throw new TypeError("complete: actualCost must be a bigint");
    if (this.#o.closed?.() === true) return { ok: false, refusal: { kind: "closed" } };
    const row = this.#rows.get(id);
    if (row === undefined) return { ok: true, charged: 0n, outcome: "no-such-reservation" };
    if (actualCost < 0n || actualCost > row.maximumCost) {
      return { ok: false, refusal: { kind: "cost-out-of-range", actualCost, maximumCost: row.maximumCost } };
    }
    let patch: EntitlementLedger | null = null;
    if (actualCost > 0n) {
      const r = chargeOn(this.#o.view(), this.#o.self, row.capturedPath, actualCost);
      if (!r.ok) throw new LedgerInvariantError(`charging reservation ${id} on its captured path`, r.refusal);
      patch = r.patch;
    }
    this.#o.commit({
      ...(patch === null ? {} : { patches: [{ origin: "own", body: patchBytes(patch) }] }),
      deleteReservations: [id],
    });
    this.#rows.delete(id);
    const left = this.earmarked(row.leaf) - row.maximumCost;
    if (left === 0n) this.#earmarks.delete(row.leaf);
    else this.#earmarks.set(row.leaf, left);
    if (patch !== null) {
      this.#o.install(patch);
      this.#o.publish(patch);
    }
    this.#o.onEvent?.({ kind, id, leaf: row.leaf, amount: kind === "cancelled" ? row.maximumCost : actualCost });
    return { ok: true, charged: actualCost, outcome: "charged" };
  }
}
