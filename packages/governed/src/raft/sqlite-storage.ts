/**
 * Raft storage in SQLite through `node:sqlite` (governed.md §4.4 R-P6): WAL journal, `synchronous=FULL`, each
 * method one `BEGIN IMMEDIATE … COMMIT`, so a resolved promise means the write reached the disk.
 *
 * `DatabaseSync` blocks the calling thread for the fsync (§3.11 recommends hosting it in a worker thread; v1
 * runs it on the caller's thread).
 */
import { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { decodeConfig, encodeConfig } from "./codec.ts";
import type { RaftStorage } from "./storage.ts";
import type { EntryKind, LogEntry, PersistedState, StoredSnapshot } from "./types.ts";
import { RaftRestoreError } from "./errors.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS raft_meta (one INTEGER PRIMARY KEY CHECK (one = 1),
  term INTEGER NOT NULL, voted_for TEXT) STRICT;
CREATE TABLE IF NOT EXISTS raft_log (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL,
  kind INTEGER NOT NULL, key_client TEXT, key_seq INTEGER, stamped_ms INTEGER NOT NULL, body BLOB NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS raft_snapshot (one INTEGER PRIMARY KEY CHECK (one = 1),
  last_idx INTEGER NOT NULL, last_term INTEGER NOT NULL, config BLOB, state BLOB NOT NULL) STRICT;
`;
const KIND: Record<EntryKind, number> = { app: 1, noop: 2, config: 3 };
const KIND_OF: Record<number, EntryKind> = { 1: "app", 2: "noop", 3: "config" };

/** The synchronous store behind both facades (same thread, or inside the worker). */
export interface SqliteRaftLog {
  load(): PersistedState;
  saveTermAndVote(term: number, votedFor: string | null): void;
  append(entries: readonly LogEntry[]): void;
  truncateFrom(index: number): void;
  saveSnapshot(s: StoredSnapshot): void;
  discardThrough(index: number): void;
  close(): void;
}

/** Opens (creating if needed) the SQLite Raft log at `path`, synchronously. */
export function openSqliteRaftLog(path: string): SqliteRaftLog {
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
  db.exec(SCHEMA);
  const upsertMeta = db.prepare("INSERT INTO raft_meta (one, term, voted_for) VALUES (1, ?, ?) ON CONFLICT(one) DO UPDATE SET term = excluded.term, voted_for = excluded.voted_for");
  const putEntry = db.prepare("INSERT OR REPLACE INTO raft_log (idx, term, kind, key_client, key_seq, stamped_ms, body) VALUES (?, ?, ?, ?, ?, ?, ?)");
  const dropFrom = db.prepare("DELETE FROM raft_log WHERE idx >= ?");
  const dropThrough = db.prepare("DELETE FROM raft_log WHERE idx <= ?");
  const putSnap = db.prepare("INSERT OR REPLACE INTO raft_snapshot (one, last_idx, last_term, config, state) VALUES (1, ?, ?, ?, ?)");
  const tx = (fn: () => void): void => {
    db.exec("BEGIN IMMEDIATE");
    try {
      fn();
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw e;
    }
  };
  return {
    load(): PersistedState {
      const meta = db.prepare("SELECT term, voted_for FROM raft_meta WHERE one = 1").get() as { term: number; voted_for: string | null } | undefined;
      const snapRow = db.prepare("SELECT last_idx, last_term, config, state FROM raft_snapshot WHERE one = 1").get() as
        | { last_idx: number; last_term: number; config: Uint8Array | null; state: Uint8Array }
        | undefined;
      let snapshot: StoredSnapshot | null = null;
      if (snapRow !== undefined) {
        const config = snapRow.config === null ? null : decodeConfig(new Uint8Array(snapRow.config));
        if (snapRow.config !== null && config === null) throw new RaftRestoreError(`${path}: undecodable snapshot config`);
        snapshot = { lastIndex: snapRow.last_idx, lastTerm: snapRow.last_term, config, state: new Uint8Array(snapRow.state) };
      }
      const floor = snapshot?.lastIndex ?? 0;
      // R-P4: entries at or below the floor may survive a crash between saving the snapshot and discarding.
      const rows = db.prepare("SELECT idx, term, kind, key_client, key_seq, stamped_ms, body FROM raft_log WHERE idx > ? ORDER BY idx").all(floor) as {
        idx: number; term: number; kind: number; key_client: string | null; key_seq: number | null; stamped_ms: number; body: Uint8Array;
      }[];
      const entries: LogEntry[] = rows.map((r) => {
        const kind = KIND_OF[r.kind];
        if (kind === undefined) throw new RaftRestoreError(`${path}: entry ${r.idx} has unknown kind ${r.kind}`);
        const key = r.key_client === null ? null : { client: r.key_client, seq: r.key_seq ?? 0 };
        const body = new Uint8Array(r.body);
        if (kind === "config") {
          const config = decodeConfig(body);
          if (config === null) throw new RaftRestoreError(`${path}: entry ${r.idx} has an undecodable config`);
          return { index: r.idx, term: r.term, kind, key, command: new Uint8Array(0), config, stampedAt: r.stamped_ms };
        }
        return { index: r.idx, term: r.term, kind, key, command: body, stampedAt: r.stamped_ms };
      });
      return { term: meta?.term ?? 0, votedFor: meta?.voted_for ?? null, snapshot, entries };
    },
    saveTermAndVote(term, votedFor) {
      tx(() => upsertMeta.run(term, votedFor));
    },
    append(entries) {
      if (entries.length === 0) return;
      tx(() => {
        dropFrom.run(entries[0]!.index);
        for (const e of entries) {
          const body = e.kind === "config" && e.config !== undefined ? encodeConfig(e.config) : e.command;
          putEntry.run(e.index, e.term, KIND[e.kind], e.key?.client ?? null, e.key?.seq ?? null, e.stampedAt, body);
        }
      });
    },
    truncateFrom(index) {
      tx(() => dropFrom.run(index));
    },
    saveSnapshot(s) {
      tx(() => putSnap.run(s.lastIndex, s.lastTerm, s.config === null ? null : encodeConfig(s.config), s.state));
    },
    discardThrough(index) {
      tx(() => dropThrough.run(index));
    },
    close() {
      db.close();
    },
  };
}

/** Where the SQLite handle lives: on the caller's thread, or in a worker thread (governed.md §3.11). */
export interface SqliteRaftStorageOptions {
  readonly thread?: "caller" | "worker";
}

/**
 * Opens (creating if needed) a SQLite Raft store at `path`. With `thread: "worker"` the database handle lives in
 * a worker thread, so the caller's event loop keeps running (sending frames, reading sockets) during each fsync.
 */
export function sqliteRaftStorage(path: string, options: SqliteRaftStorageOptions = {}): RaftStorage {
  if (options.thread === "worker") return workerStorage(path);
  const log = openSqliteRaftLog(path);
  return {
    load: async () => log.load(),
    saveTermAndVote: async (t, v) => log.saveTermAndVote(t, v),
    append: async (es) => log.append(es),
    truncateFrom: async (i) => log.truncateFrom(i),
    saveSnapshot: async (s) => log.saveSnapshot(s),
    discardThrough: async (i) => log.discardThrough(i),
    close: async () => log.close(),
  };
}

function workerStorage(path: string): RaftStorage {
  const worker = new Worker(new URL("./sqlite-worker.ts", import.meta.url), { workerData: { path } });
  worker.unref();
  let next = 1;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let broken: Error | null = null;
  const failAll = (e: Error): void => {
    broken = e;
    for (const w of waiting.values()) w.reject(e);
    waiting.clear();
  };
  worker.on("message", (m: { id: number; ok: boolean; value?: unknown; error?: { name: string; message: string } }) => {
    const w = waiting.get(m.id);
    if (w === undefined) return;
    waiting.delete(m.id);
    if (m.ok) w.resolve(m.value);
    else {
      const e = m.error?.name === "RaftRestoreError" ? new RaftRestoreError(m.error.message) : new Error(m.error?.message ?? "sqlite worker failed");
      w.reject(e);
    }
  });
  worker.on("error", (e) => failAll(e));
  worker.on("exit", () => failAll(new Error("sqlite worker exited")));
  const call = <T>(op: string, args: unknown[]): Promise<T> => {
    if (broken !== null) return Promise.reject(broken);
    const id = next++;
    worker.ref();
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, {
        resolve: (v) => {
          if (waiting.size === 0) worker.unref();
          resolve(v as T);
        },
        reject,
      });
      worker.postMessage({ id, op, args });
    });
  };
  return {
    load: () => call<PersistedState>("load", []),
    saveTermAndVote: (t, v) => call("saveTermAndVote", [t, v]),
    append: (es) => call("append", [es]),
    truncateFrom: (i) => call("truncateFrom", [i]),
    saveSnapshot: (s) => call("saveSnapshot", [s]),
    discardThrough: (i) => call("discardThrough", [i]),
    close: async () => {
      if (broken === null) await call("close", []);
      await worker.terminate();
    },
  };
}
