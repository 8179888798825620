import { EntitlementLedger, LedgerReplica } from "@heddle/ledger";
import type { AttachmentId, GroupId, ReplicaId } from "@heddle/ledger";

/** A reservation's id, `${self}/${epoch}/${n}` (with `~${tag}` after it when reserved with a tag, `ReserveOptions`): unique across restarts because `epoch` rises per boot (node.md §1). */
export type ReservationId = string;

/** One open reservation as persisted (node.md §9.1): the earmark and the path captured at admission. */
export interface ReservationRow {
  readonly id: ReservationId;
  readonly leaf: GroupId;
  readonly maximumCost: bigint;
  readonly capturedPath: readonly AttachmentId[];
  readonly createdAt: number;
}

/** What a store hands back at boot (node.md §9.1): `state = genesis ⊔ snapshot ⊔ every patch` (order irrelevant). */
export interface PersistedState {
  readonly snapshot: Uint8Array | null;
  /** Patch bodies not covered by the snapshot, in commit order. */
  readonly patches: readonly Uint8Array[];
  /** Open reservation rows, ascending id. */
  readonly reservations: readonly ReservationRow[];
  /**
   * Extension (claims.md §3): this peer's own keeper-claims slot as last committed (`encodeKeeperSlot` text), so a
   * restarted keeper keeps its claims' `claimedAt` / `takenAt`; absent when none was committed (or the store keeps none).
   */
  readonly keeperSlot?: string;
}

/** One ledger patch row: the canonical bytes of a patch this peer produced (`own`) or joined from a peer (`merged`). */
export interface PatchRow {
  readonly origin: "own" | "merged";
  readonly body: Uint8Array;
}

/** One store transaction (node.md §9.1): everything in it becomes durable together, or nothing does. */
export interface StoreTx {
  readonly patches?: readonly PatchRow[];
  /** New rows; an id already present (or repeated in the same tx) fails the whole transaction. */
  readonly putReservations?: readonly ReservationRow[];
  /** Ids to remove; an absent id is not an error. Applied after `putReservations`. */
  readonly deleteReservations?: readonly ReservationId[];
  /** Extension (claims.md §3): this peer's own keeper-claims slot text, replacing the one stored. */
  readonly keeperSlot?: string;
}

/** What `boot` returns: the new incarnation number and everything persisted before it. */
export interface BootResult {
  readonly epoch: number;
  readonly persisted: PersistedState;
}

/**
 * A peer's durable storage (node.md §9.1). Every method is synchronous so the node's local mutation
 * path (§5.1) stays one atomic step.
 *
 * - `boot(self, genesis)` bumps the boot counter and makes the bump durable before returning; it
 *   throws {@link StoreMismatchError} for a store created for another replica or genesis.
 * - `commit(tx)` makes the whole transaction durable (when `durable`) or throws and changes nothing.
 * - `compact(state)` stores `state` as the snapshot and drops every patch row it covers, atomically.
 * - `close()` releases the store; later calls throw.
 */
export interface HeddleStore {
  /** True iff a successful `commit` survives a process crash. */
  readonly durable: boolean;
  boot(self: ReplicaId, genesis: string): BootResult;
  commit(tx: StoreTx): void;
  compact(state: Uint8Array): void;
  close(): void;
}

/** `boot` found a store written for another replica or another genesis (node.md §9.1). */
export class StoreMismatchError extends Error {
  /** What the store holds. */
  readonly stored: { readonly replica: string; readonly genesis: string };
  /** What the caller asked for. */
  readonly requested: { readonly replica: string; readonly genesis: string };

  constructor(stored: { replica: string; genesis: string }, requested: { replica: string; genesis: string }) {
    super(
      `store belongs to replica ${JSON.stringify(stored.replica)} with genesis ${JSON.stringify(stored.genesis)}, ` +
        `not replica ${JSON.stringify(requested.replica)} with genesis ${JSON.stringify(requested.genesis)}`,
    );
    this.name = "StoreMismatchError";
    this.stored = stored;
    this.requested = requested;
  }
}

/** A store was used out of order: before `boot`, or after `close`. A caller bug. */
export class StoreStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreStateError";
  }
}

/** A commit refused by {@link failingStore}'s predicate: the stand-in for a disk error in fail-closed tests. */
export class InjectedCommitFailure extends Error {
  constructor() {
    super("injected commit failure");
    this.name = "InjectedCommitFailure";
  }
}

const INT64_MAX = (1n << 63n) - 1n;

/**
 * Checks a reservation row before it is written (both stores apply the same rule, so a model test can
 * drive them alike). Throws `TypeError`/`RangeError` naming the field: a bad row is a caller bug.
 */
export function checkReservationRow(row: ReservationRow): void {
  if (typeof row !== "object" || row === null) throw new TypeError("reservation row must be an object");
  if (typeof row.id !== "string" || row.id.length === 0) throw new TypeError("reservation id must be a non-empty string");
  if (typeof row.leaf !== "string" || row.leaf.length === 0) throw new TypeError("reservation leaf must be a non-empty string");
  if (typeof row.maximumCost !== "bigint") throw new TypeError("reservation maximumCost must be a bigint");
  if (row.maximumCost <= 0n || row.maximumCost > INT64_MAX) {
    throw new RangeError(`reservation maximumCost ${row.maximumCost} is outside 1 … 2^63−1`);
  }
  if (!Array.isArray(row.capturedPath) || row.capturedPath.some((e) => typeof e !== "string" || e.length === 0)) {
    throw new TypeError("reservation capturedPath must be an array of edge ids");
  }
  if (!Number.isSafeInteger(row.createdAt)) throw new TypeError("reservation createdAt must be a safe integer (ms)");
}

/** Checks a patch row's shape; throws `TypeError` naming the field. */
export function checkPatchRow(row: PatchRow): void {
  if (row.origin !== "own" && row.origin !== "merged") throw new TypeError(`patch origin must be 'own' or 'merged', got ${String(row.origin)}`);
  if (!(row.body instanceof Uint8Array)) throw new TypeError("patch body must be a Uint8Array");
}

/**
 * Wraps `inner` so that `commit(tx)` throws {@link InjectedCommitFailure} without touching `inner`
 * whenever `fail(tx)` returns true (and `compact` likewise when `failCompact` does). For node.md §9.4
 * fail-closed tests; `durable` and `boot` are the inner store's.
 */
export function failingStore(
  inner: HeddleStore,
  fail: (tx: StoreTx) => boolean,
  failCompact: () => boolean = () => false,
): HeddleStore {
  return {
    get durable() {
      return inner.durable;
    },
    boot: (self, genesis) => inner.boot(self, genesis),
    commit(tx) {
      if (fail(tx)) throw new InjectedCommitFailure();
      inner.commit(tx);
    },
    compact(state) {
      if (failCompact()) throw new InjectedCommitFailure();
      inner.compact(state);
    },
    close: () => inner.close(),
  };
}

/** The bytes a store keeps for a ledger value: the UTF-8 of its canonical encoding (ledger.md §10). */
export function patchBytes(value: EntitlementLedger): Uint8Array {
  return new TextEncoder().encode(value.encode());
}

/**
 * The state a restarted peer resumes from (node.md §9.3): `genesis ⊔ snapshot ⊔ every patch row`, in any
 * order. Throws `LedgerDecodeError` if a stored body does not decode (a damaged store).
 */
export function restoreLedger(genesis: EntitlementLedger, persisted: PersistedState): EntitlementLedger {
  if (persisted.snapshot === null && persisted.patches.length === 0) return genesis;
  const dec = new TextDecoder("utf-8", { fatal: true });
  // Joined in place: each row costs its own size (the rows are deltas; a snapshot holds the rest).
  const state = new LedgerReplica(genesis);
  if (persisted.snapshot !== null) state.apply(EntitlementLedger.decode(dec.decode(persisted.snapshot)));
  for (const p of persisted.patches) state.apply(EntitlementLedger.decode(dec.decode(p)));
  return state.snapshot();
}
