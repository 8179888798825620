import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { AttachmentId, GroupId, ReplicaId } from "@heddle/ledger";
import {
  checkPatchRow,
  checkReservationRow,
  StoreMismatchError,
  StoreStateError,
  type BootResult,
  type HeddleStore,
  type ReservationRow,
  type StoreTx,
} from "./store.ts";

/** The schema of node.md §9.2, verbatim, plus `keeper_slot`: this peer's own keeper-claims slot (claims.md §3). */
export const SQLITE_SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (one INTEGER PRIMARY KEY CHECK (one = 1),
  replica TEXT NOT NULL, genesis TEXT NOT NULL, boot INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS patches (n INTEGER PRIMARY KEY AUTOINCREMENT,
  origin TEXT NOT NULL CHECK (origin IN ('own', 'merged')), body BLOB NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS snapshot (one INTEGER PRIMARY KEY CHECK (one = 1),
  through_n INTEGER NOT NULL, body BLOB NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS reservations (id TEXT PRIMARY KEY, leaf TEXT NOT NULL,
  max_cost TEXT NOT NULL, path TEXT NOT NULL, created_ms INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS keeper_slot (one INTEGER PRIMARY KEY CHECK (one = 1), text TEXT NOT NULL) STRICT;
`;

/** How long a statement waits for another connection's lock before failing (ms). */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/**
 * The store's file is held by another open `sqliteStore` (another process, or another store in this one). A
 * replica's slots have one writer (ledger.md rule 2): two nodes running one replica's store would each spend
 * its holdings from the same base, and the max join would absorb one of the two spends (node.md §9).
 */
export class StoreLockedError extends Error {
  readonly path: string;

  constructor(path: string, options?: { cause?: unknown }) {
    super(
      `sqlite store ${path}: another process (or another sqliteStore in this process) has this store open, and a ` +
        "replica's store takes one writer — two would spend the replica's units twice (node.md §9). Stop the other " +
        "node using this file (or point this one at its own store), then start again",
      options,
    );
    this.name = "StoreLockedError";
    this.path = path;
  }
}

/** SQLite's `SQLITE_BUSY` (the primary code; extended codes keep it in the low byte): another connection holds the lock. */
const SQLITE_BUSY = 5;

/** A stored row that does not decode: the file was damaged or written by something else. */
export class StoreCorruptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreCorruptError";
  }
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

function decodeReservation(r: Record<string, unknown>): ReservationRow {
  const { id, leaf, max_cost, path, created_ms } = r;
  if (typeof id !== "string" || typeof leaf !== "string" || typeof max_cost !== "string" || typeof path !== "string" || typeof created_ms !== "number") {
    throw new StoreCorruptError(`reservation row ${String(id)} has the wrong column types`);
  }
  if (!DECIMAL.test(max_cost)) throw new StoreCorruptError(`reservation ${id}: max_cost ${JSON.stringify(max_cost)} is not a decimal`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(path);
  } catch {
    throw new StoreCorruptError(`reservation ${id}: path is not JSON`);
  }
  if (!Array.isArray(parsed) || parsed.some((e) => typeof e !== "string")) {
    throw new StoreCorruptError(`reservation ${id}: path is not a list of edge ids`);
  }
  const row: ReservationRow = Object.freeze({
    id,
    leaf: leaf as GroupId,
    maximumCost: BigInt(max_cost),
    capturedPath: Object.freeze(parsed as AttachmentId[]),
    createdAt: created_ms,
  });
  try {
    checkReservationRow(row);
  } catch (e) {
    throw new StoreCorruptError(`reservation ${id}: ${(e as Error).message}`);
  }
  return row;
}

function bytes(v: unknown, what: string): Uint8Array {
  if (!(v instanceof Uint8Array)) throw new StoreCorruptError(`${what} is not a BLOB`);
  return v;
}

/**
 * A durable {@link HeddleStore} in one SQLite file (node.md §9.2), through the built-in synchronous
 * `node:sqlite` binding. `journal_mode=WAL` with `synchronous=FULL`: every `commit` is one
 * `BEGIN IMMEDIATE … COMMIT` that is on disk (fsync'd) when it returns. Costs are stored as decimal
 * text, captured paths as JSON arrays. Opening creates the file and the schema if absent, and locks the
 * file until `close()` (or the process ends): opening a file another store holds throws
 * {@link StoreLockedError}, so two nodes can never run one replica's store.
 */
export function sqliteStore(path: string): HeddleStore {
  if (typeof path !== "string" || path.length === 0) throw new TypeError("sqliteStore needs a file path");
  const db = new DatabaseSync(path);
  let open = true;
  let booted = false;
  try {
    // One writer per file, for as long as this store is open: in EXCLUSIVE locking mode the write lock the
    // empty transaction below takes is kept until close (set before WAL, so no shared-memory index is used
    // either). A second opener fails at once (busy_timeout 0 while locking) instead of waiting.
    db.exec("PRAGMA busy_timeout = 0;");
    db.exec("PRAGMA locking_mode = EXCLUSIVE;");
    db.exec("PRAGMA journal_mode = WAL;");
    db.exec("PRAGMA synchronous = FULL;");
    db.exec("BEGIN IMMEDIATE; COMMIT;");
    db.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS};`);
    db.exec(SQLITE_SCHEMA);
  } catch (e) {
    if (db.isTransaction) db.exec("ROLLBACK");
    db.close();
    const code = (e as { errcode?: unknown }).errcode;
    if (typeof code === "number" && (code & 0xff) === SQLITE_BUSY) throw new StoreLockedError(path, { cause: e });
    throw e;
  }
  const q = {
    meta: db.prepare("SELECT replica, genesis, boot FROM meta WHERE one = 1"),
    insertMeta: db.prepare("INSERT INTO meta (one, replica, genesis, boot) VALUES (1, ?, ?, 1)"),
    bumpBoot: db.prepare("UPDATE meta SET boot = boot + 1 WHERE one = 1"),
    snapshot: db.prepare("SELECT through_n, body FROM snapshot WHERE one = 1"),
    patchesAfter: db.prepare("SELECT body FROM patches WHERE n > ? ORDER BY n"),
    reservations: db.prepare("SELECT id, leaf, max_cost, path, created_ms FROM reservations ORDER BY id"),
    insertPatch: db.prepare("INSERT INTO patches (origin, body) VALUES (?, ?)"),
    insertReservation: db.prepare("INSERT INTO reservations (id, leaf, max_cost, path, created_ms) VALUES (?, ?, ?, ?, ?)"),
    deleteReservation: db.prepare("DELETE FROM reservations WHERE id = ?"),
    keeperSlot: db.prepare("SELECT text FROM keeper_slot WHERE one = 1"),
    putKeeperSlot: db.prepare("INSERT OR REPLACE INTO keeper_slot (one, text) VALUES (1, ?)"),
    putSnapshot: db.prepare(
      "INSERT OR REPLACE INTO snapshot (one, through_n, body) " +
        "VALUES (1, max(coalesce((SELECT max(n) FROM patches), 0), coalesce((SELECT through_n FROM snapshot WHERE one = 1), 0)), ?)",
    ),
    dropCovered: db.prepare("DELETE FROM patches WHERE n <= (SELECT through_n FROM snapshot WHERE one = 1)"),
  } satisfies Record<string, StatementSync>;

  function transaction<T>(body: () => T): T {
    db.exec("BEGIN IMMEDIATE");
    try {
      const out = body();
      db.exec("COMMIT");
      return out;
    } catch (e) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw e;
    }
  }

  function requireOpen(what: string): void {
    if (!open) throw new StoreStateError(`sqlite store ${path}: ${what} after close`);
  }

  return {
    durable: true,

    boot(self: ReplicaId, genesis: string): BootResult {
      requireOpen("boot");
      if (typeof self !== "string" || typeof genesis !== "string") throw new TypeError("boot needs a replica id and a genesis digest");
      const result = transaction(() => {
        const m = q.meta.get() as { replica: string; genesis: string; boot: number } | undefined;
        if (m === undefined) q.insertMeta.run(self, genesis);
        else if (m.replica !== self || m.genesis !== genesis) throw new StoreMismatchError(m, { replica: self, genesis });
        else q.bumpBoot.run();
        const epoch = (q.meta.get() as { boot: number }).boot;
        const snap = q.snapshot.get() as { through_n: number; body: unknown } | undefined;
        const through = snap?.through_n ?? 0;
        const keeper = q.keeperSlot.get() as { text: unknown } | undefined;
        if (keeper !== undefined && typeof keeper.text !== "string") throw new StoreCorruptError("keeper slot is not TEXT");
        return {
          epoch,
          persisted: {
            snapshot: snap === undefined ? null : bytes(snap.body, "snapshot body"),
            patches: (q.patchesAfter.all(through) as { body: unknown }[]).map((r) => bytes(r.body, "patch body")),
            reservations: (q.reservations.all() as Record<string, unknown>[]).map(decodeReservation),
            ...(keeper !== undefined ? { keeperSlot: keeper.text as string } : {}),
          },
        };
      });
      booted = true;
      return result;
    },

    commit(tx: StoreTx): void {
      requireOpen("commit");
      if (!booted) throw new StoreStateError(`sqlite store ${path}: commit before boot`);
      const rows = tx.patches ?? [];
      const puts = tx.putReservations ?? [];
      const deletes = tx.deleteReservations ?? [];
      for (const p of rows) checkPatchRow(p);
      for (const r of puts) checkReservationRow(r);
      for (const id of deletes) if (typeof id !== "string") throw new TypeError("reservation ids to delete must be strings");
      if (tx.keeperSlot !== undefined && typeof tx.keeperSlot !== "string") throw new TypeError("keeperSlot must be the slot's text");
      transaction(() => {
        if (tx.keeperSlot !== undefined) q.putKeeperSlot.run(tx.keeperSlot);
        for (const p of rows) q.insertPatch.run(p.origin, p.body);
        for (const r of puts) {
          q.insertReservation.run(r.id, r.leaf, r.maximumCost.toString(), JSON.stringify(r.capturedPath), r.createdAt);
        }
        for (const id of deletes) q.deleteReservation.run(id);
      });
    },

    compact(state: Uint8Array): void {
      requireOpen("compact");
      if (!booted) throw new StoreStateError(`sqlite store ${path}: compact before boot`);
      if (!(state instanceof Uint8Array)) throw new TypeError("compact needs the state's bytes");
      transaction(() => {
        q.putSnapshot.run(state);
        q.dropCovered.run();
      });
    },

    close(): void {
      if (!open) return;
      open = false;
      db.close();
    },
  };
}
