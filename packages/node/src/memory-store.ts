import type { ReplicaId } from "@heddle/ledger";
import {
  checkPatchRow,
  checkReservationRow,
  StoreMismatchError,
  StoreStateError,
  type BootResult,
  type HeddleStore,
  type PatchRow,
  type ReservationId,
  type ReservationRow,
  type StoreTx,
} from "./store.ts";

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** The boot counter before the first `boot`; each `boot` adds one and returns the result. Default 0. */
  readonly epoch?: number;
}

function copyRow(r: ReservationRow): ReservationRow {
  return Object.freeze({ ...r, capturedPath: Object.freeze([...r.capturedPath]) });
}

/**
 * A {@link HeddleStore} in memory (node.md §9.1): the same contract as `sqliteStore`, including
 * transaction atomicity and the replica/genesis check, but `durable: false`. A test "crashes" a node by
 * dropping it and handing the same store object to the restarted node; `close()` is that drop, and a
 * closed memory store may be booted again (a real disk would still be there).
 */
export function memoryStore(opts: MemoryStoreOptions = {}): HeddleStore {
  const start = opts.epoch ?? 0;
  if (!Number.isSafeInteger(start) || start < 0) throw new RangeError(`memoryStore epoch must be a safe integer ≥ 0, got ${start}`);
  let boots = start;
  let owner: { replica: string; genesis: string } | null = null;
  let booted = false;
  let nextN = 1;
  let patches: { n: number; row: PatchRow }[] = [];
  let snapshot: { throughN: number; body: Uint8Array } | null = null;
  const reservations = new Map<ReservationId, ReservationRow>();
  let keeperSlot: string | undefined;

  function requireBooted(what: string): void {
    if (!booted) throw new StoreStateError(`memory store: ${what} before boot (or after close)`);
  }

  return {
    durable: false,

    boot(self: ReplicaId, genesis: string): BootResult {
      if (typeof self !== "string" || typeof genesis !== "string") throw new TypeError("boot needs a replica id and a genesis digest");
      if (owner !== null && (owner.replica !== self || owner.genesis !== genesis)) {
        throw new StoreMismatchError(owner, { replica: self, genesis });
      }
      if (boots >= Number.MAX_SAFE_INTEGER) throw new RangeError("memory store boot counter exhausted");
      owner ??= { replica: self, genesis };
      boots += 1;
      booted = true;
      return {
        epoch: boots,
        persisted: {
          snapshot: snapshot === null ? null : snapshot.body.slice(),
          patches: patches.map((p) => p.row.body.slice()),
          reservations: [...reservations.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(copyRow),
          ...(keeperSlot !== undefined ? { keeperSlot } : {}),
        },
      };
    },

    commit(tx: StoreTx): void {
      requireBooted("commit");
      // Check everything first, so a failure leaves nothing behind (the in-memory BEGIN … ROLLBACK).
      const puts = tx.putReservations ?? [];
      const rows = tx.patches ?? [];
      for (const p of rows) checkPatchRow(p);
      const seen = new Set<ReservationId>();
      for (const r of puts) {
        checkReservationRow(r);
        if (reservations.has(r.id) || seen.has(r.id)) throw new StoreStateError(`reservation ${r.id} already exists`);
        seen.add(r.id);
      }
      const deletes = tx.deleteReservations ?? [];
      for (const id of deletes) if (typeof id !== "string") throw new TypeError("reservation ids to delete must be strings");
      if (tx.keeperSlot !== undefined && typeof tx.keeperSlot !== "string") throw new TypeError("keeperSlot must be the slot's text");
      if (tx.keeperSlot !== undefined) keeperSlot = tx.keeperSlot;
      for (const p of rows) patches.push({ n: nextN++, row: { origin: p.origin, body: p.body.slice() } });
      for (const r of puts) reservations.set(r.id, copyRow(r));
      for (const id of deletes) reservations.delete(id);
    },

    compact(state: Uint8Array): void {
      requireBooted("compact");
      if (!(state instanceof Uint8Array)) throw new TypeError("compact needs the state's bytes");
      const throughN = patches.length === 0 ? (snapshot?.throughN ?? 0) : patches[patches.length - 1]!.n;
      snapshot = { throughN, body: state.slice() };
      patches = [];
    },

    close(): void {
      booted = false;
    },
  };
}
