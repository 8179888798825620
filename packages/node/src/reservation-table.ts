import type { EntitlementLedger, GroupId, LedgerReads, LedgerReplica, Refusal, ReplicaId } from "@heddle/ledger";
import type { ReservationId, ReservationRow, StoreTx } from "./store.ts";

const INT64_MAX = (1n << 63n) - 1n;

/** Longest {@link ReserveOptions.tag}. */
export const MAX_RESERVATION_TAG_LENGTH = 64;
const TAG = /^[A-Za-z0-9_-]{1,64}$/;
/** The last `/` segment of a tagged id: `${n}~${tag}` (n is digits, so the `~` is unambiguous whatever `self` holds). */
const TAGGED_SEGMENT = /\/[0-9]+~([A-Za-z0-9_-]{1,64})$/;

/**
 * Extension beyond node.md §1: what a caller may attach to a reservation it makes.
 *
 * `tag` (1 … 64 of `A–Z a–z 0–9 _ -`) is carried in the reservation's id, `${self}/${epoch}/${n}~${tag}`, so it is
 * written to the store in the same commit as the reservation itself: a caller that labels a reservation with its
 * request's idempotency key finds it again from the node's open reservations after a crash that came between the
 * commit and the caller's own record of it ({@link reservationTagOf}). The id stays unique (n and epoch as before).
 */
export interface ReserveOptions {
  readonly tag?: string;
}

/** The tag a reservation was made with ({@link ReserveOptions.tag}), or null for an untagged id. */
export function reservationTagOf(id: ReservationId): string | null {
  return TAGGED_SEGMENT.exec(id)?.[1] ?? null;
}

/** Throws on a tag of the wrong shape (a caller's bug, never input from the network). */
export function checkReservationTag(tag: string | undefined): void {
  if (tag === undefined) return;
  if (typeof tag !== "string" || !TAG.test(tag)) {
    throw new RangeError(`reserve: tag must be 1 … ${MAX_RESERVATION_TAG_LENGTH} characters of A–Z a–z 0–9 _ -, got ${JSON.stringify(tag)}`);
  }
}

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

/** The view the table reads: the node's converged ledger. */
export type ReservationLedgerView = LedgerReads;

/**
 * What a table call asks the node to do (the shape `planSchedule` has): the store transaction of its
 * reservation rows, the ledger patch it applied to the work replica (a charge), the event to emit
 * once done, and the row change to install in the table after the commit succeeded. The table
 * changes nothing until {@link ReservationTable.install} is called with it.
 */
export interface ReservationEffect {
  readonly transaction: Pick<StoreTx, "putReservations" | "deleteReservations">;
  readonly patch: EntitlementLedger | null;
  readonly event: ReservationEvent;
}

/** Everything a {@link ReservationTable} is built from. */
export interface ReservationTableOptions {
  /** This peer's replica id: the slot it earmarks and charges. */
  readonly self: ReplicaId;
  /** The incarnation from `store.boot`; ids are `${self}/${epoch}/${n}`. */
  readonly epoch: number;
  /** Rows from `PersistedState.reservations`: the table and earmarks as they were at the crash. */
  readonly restored?: readonly ReservationRow[];
}

/** `reserve`'s outcome: a refusal (nothing changed), or the effect to commit and install. */
export type ReservePlan = { ok: false; refusal: ReserveRefusal } | { ok: true; id: ReservationId; effect: ReservationEffect };

/** `complete`'s outcome: a refusal or an unknown id (nothing to do), or the effect to commit and install. */
export type CompletePlan =
  | { ok: false; refusal: { kind: "cost-out-of-range"; actualCost: bigint; maximumCost: bigint } }
  | { ok: true; outcome: "no-such-reservation" }
  | { ok: true; outcome: "charged"; charged: bigint; effect: ReservationEffect };

/**
 * A peer's reservation table (node.md §8): earmarks of leaf holdings for admitted work, each charged
 * exactly once on completion to the path captured at admission.
 *
 * It never commits, installs or publishes anything itself: `reserve` and `complete` return an effect
 * (rows to write, the charge patch, the event) and the node applies it in one place — commit, then
 * {@link install}, then publish, then emit. A failed commit leaves the table as it was. The table is
 * never replicated: only its owner completes or cancels. Open reservations are bounded by the
 * holdings (each earmarks at least one unit of `holdings(leaf, self)`, an int64).
 */
export class ReservationTable {
  readonly #self: ReplicaId;
  readonly #epoch: number;
  readonly #rows = new Map<ReservationId, ReservationRow>();
  readonly #earmarks = new Map<GroupId, bigint>();
  #next = 0;

  constructor(o: ReservationTableOptions) {
    if (typeof o.self !== "string" || o.self.length === 0) throw new TypeError("ReservationTable needs this peer's replica id");
    if (!Number.isSafeInteger(o.epoch) || o.epoch < 0) throw new RangeError(`ReservationTable epoch must be a safe integer ≥ 0, got ${o.epoch}`);
    this.#self = o.self;
    this.#epoch = o.epoch;
    for (const row of o.restored ?? []) {
      if (this.#rows.has(row.id)) throw new RangeError(`restored reservation ${row.id} appears twice`);
      this.#add(row);
    }
  }

  /**
   * Plans earmarking `maximumCost` of this peer's holdings at `leaf` on `view` (node.md §8). The id is
   * allocated now and never reused, even if the commit fails (a row that reached the disk despite an
   * error must never share its id with a later one); `opts.tag` is appended to it ({@link ReserveOptions}).
   */
  reserve(view: ReservationLedgerView, leaf: GroupId, maximumCost: bigint, now: number, opts: ReserveOptions = {}): ReservePlan {
    if (typeof leaf !== "string") throw new TypeError("reserve: leaf must be a GroupId");
    if (typeof maximumCost !== "bigint") throw new TypeError("reserve: maximumCost must be a bigint");
    checkReservationTag(opts.tag);
    if (maximumCost <= 0n || maximumCost > INT64_MAX) return { ok: false, refusal: { kind: "invalid-cost", maximumCost } };
    if (!view.isLeaf(leaf)) return { ok: false, refusal: { kind: "not-a-leaf", leaf } };
    const path = view.lineageOf(leaf);
    if (path === null) return { ok: false, refusal: { kind: "no-lineage", leaf } };
    if (path.length === 0) return { ok: false, refusal: { kind: "root-leaf", leaf } };
    const available = view.holdings(leaf, this.#self) - this.earmarked(leaf);
    if (available < maximumCost) return { ok: false, refusal: { kind: "insufficient", leaf, available, requested: maximumCost } };
    const id: ReservationId = `${this.#self}/${this.#epoch}/${this.#next++}${opts.tag === undefined ? "" : `~${opts.tag}`}`;
    if (this.#rows.has(id)) throw new RangeError(`reservation id ${id} is already open (epoch reused?)`);
    const row: ReservationRow = Object.freeze({ id, leaf, maximumCost, capturedPath: Object.freeze([...path]), createdAt: now });
    return { ok: true, id, effect: { transaction: { putReservations: [row] }, patch: null, event: { kind: "reserved", id, leaf, amount: maximumCost } } };
  }

  /**
   * Plans charging `actualCost` (0 … maximumCost) to the captured path and releasing the earmark
   * (node.md §8): the charge is applied with `chargeCaptured` to `work` — the node's replica inside a
   * transaction it rolls back if the commit fails — and the effect deletes the row in the same commit,
   * so the charge happens exactly once. An unknown id (completed, cancelled, never reserved) charges
   * nothing. A ledger refusal here is a broken invariant: {@link LedgerInvariantError}.
   */
  complete(work: LedgerReplica, id: ReservationId, actualCost: bigint, kind: "completed" | "cancelled" = "completed"): CompletePlan {
    if (typeof id !== "string") throw new TypeError("complete: id must be a ReservationId");
    if (typeof actualCost !== "bigint") throw new TypeError("complete: actualCost must be a bigint");
    const row = this.#rows.get(id);
    if (row === undefined) return { ok: true, outcome: "no-such-reservation" };
    if (actualCost < 0n || actualCost > row.maximumCost) {
      return { ok: false, refusal: { kind: "cost-out-of-range", actualCost, maximumCost: row.maximumCost } };
    }
    let patch: EntitlementLedger | null = null;
    if (actualCost > 0n) {
      const r = work.chargeCaptured(this.#self, row.capturedPath, actualCost);
      if (!r.ok) throw new LedgerInvariantError(`charging reservation ${id} on its captured path`, r.refusal);
      patch = r.patch;
    }
    const amount = kind === "cancelled" ? row.maximumCost : actualCost;
    return { ok: true, outcome: "charged", charged: actualCost, effect: { transaction: { deleteReservations: [id] }, patch, event: { kind, id, leaf: row.leaf, amount } } };
  }

  /** Installs a committed effect: adds the rows it put, removes those it deleted (and their earmarks). */
  install(effect: ReservationEffect): void {
    for (const row of effect.transaction.putReservations ?? []) this.#add(row);
    for (const id of effect.transaction.deleteReservations ?? []) {
      const row = this.#rows.get(id);
      if (row === undefined) continue;
      this.#rows.delete(id);
      const left = this.earmarked(row.leaf) - row.maximumCost;
      if (left === 0n) this.#earmarks.delete(row.leaf);
      else this.#earmarks.set(row.leaf, left);
    }
  }

  /** Units earmarked at `leaf` by open reservations. */
  earmarked(leaf: GroupId): bigint {
    return this.#earmarks.get(leaf) ?? 0n;
  }

  /** `holdings(leaf, self) − earmarked(leaf)` on `view`. */
  available(view: ReservationLedgerView, leaf: GroupId): bigint {
    return view.holdings(leaf, this.#self) - this.earmarked(leaf);
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
}
