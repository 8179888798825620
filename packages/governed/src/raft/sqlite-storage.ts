/**
 * Raft storage in SQLite through `node:sqlite` (governed.md §4.4 R-P6): WAL journal, `synchronous=FULL`, each
 * method one `BEGIN IMMEDIATE … COMMIT`, so a resolved promise means the write reached the disk.
 *
 * `DatabaseSync` blocks the calling thread for the fsync (§3.11 recommends hosting it in a worker thread; v1
 * runs it on the caller's thread).
 */
import { DatabaseSync } from "node:sqlite";
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

/** Opens (creating if needed) a SQLite Raft store at `path`. */
export function sqliteRaftStorage(path: string): RaftStorage {
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
    async load(): Promise<PersistedState> {
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
    async saveTermAndVote(term, votedFor) {
      tx(() => upsertMeta.run(term, votedFor));
    },
    async append(entries) {
      if (entries.length === 0) return;
      tx(() => {
        dropFrom.run(entries[0]!.index);
        for (const e of entries) {
          const body = e.kind === "config" && e.config !== undefined ? encodeConfig(e.config) : e.command;
          putEntry.run(e.index, e.term, KIND[e.kind], e.key?.client ?? null, e.key?.seq ?? null, e.stampedAt, body);
        }
      });
    },
    async truncateFrom(index) {
      tx(() => dropFrom.run(index));
    },
    async saveSnapshot(s) {
      tx(() => putSnap.run(s.lastIndex, s.lastTerm, s.config === null ? null : encodeConfig(s.config), s.state));
    },
    async discardThrough(index) {
      tx(() => dropThrough.run(index));
    },
    async close() {
      db.close();
    },
  };
}
