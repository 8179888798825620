// What the daemon itself must not lose on a crash, next to the node's ledger store: the standing demand
// services set through the API (held until its lease ends, re-advertised after a restart) and the answers
// of keyed reserves, by their key's tag (a retry after a restart gets the first answer, not a second reservation).
// One SQLite file, `store.dir/daemon.sqlite`, WAL with synchronous=FULL: every change is durable when the
// call that made it answers.
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { AttachmentId } from "@heddle/ledger";
import { reserveTagOf, type ReserveMemory } from "./reserve-memory.ts";
import type { StandingDemand } from "./scheduler.ts";

/** The file name under `store.dir`. */
export const DAEMON_STATE_FILE = "daemon.sqlite";

/** Where the scheduler keeps standing demand so that it outlives the process. */
export interface StandingMemory {
  put(s: StandingDemand): void;
  drop(edge: AttachmentId): void;
}

/** A file `daemon.sqlite` could not be read as the daemon's state. */
export class DaemonStateError extends Error {
  override readonly name = "DaemonStateError";
}

/** See the file comment. */
export class DaemonState implements StandingMemory {
  readonly #db: DatabaseSync;
  readonly #keep: number;
  readonly #q: {
    putStanding: StatementSync;
    dropStanding: StatementSync;
    standing: StatementSync;
    getKey: StatementSync;
    putKey: StatementSync;
    trimKeys: StatementSync;
  };

  /**
   * Opens (creating if need be) `path`; keyed reserve answers are kept for the newest `keepReserveKeys` keys.
   * The file belongs to one peer of one cluster (`owner`: its id and genesis digest, recorded on first open):
   * opened for another it throws {@link DaemonStateError} — replaying another store's reservations or
   * standing demand would be wrong.
   */
  constructor(path: string, keepReserveKeys: number, owner: { peer: string; genesis: string }) {
    this.#db = new DatabaseSync(path);
    this.#keep = keepReserveKeys;
    try {
      this.#db.exec("PRAGMA busy_timeout = 5000;");
      this.#db.exec("PRAGMA journal_mode = WAL;");
      this.#db.exec("PRAGMA synchronous = FULL;");
      this.#db.exec(`CREATE TABLE IF NOT EXISTS standing_demand (
        edge TEXT PRIMARY KEY NOT NULL, target TEXT NOT NULL, max_grant TEXT NOT NULL, expires_at INTEGER NOT NULL) STRICT;`);
      this.#db.exec(`CREATE TABLE IF NOT EXISTS reserve_keys (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, body TEXT NOT NULL, status INTEGER NOT NULL, payload TEXT NOT NULL) STRICT;`);
      this.#db.exec("CREATE TABLE IF NOT EXISTS owner (k TEXT PRIMARY KEY NOT NULL, v TEXT NOT NULL) STRICT;");
      this.#db.prepare("INSERT OR IGNORE INTO owner (k, v) VALUES ('peer', ?), ('genesis', ?)").run(owner.peer, owner.genesis);
    } catch (e) {
      this.#db.close();
      throw new DaemonStateError(`${path}: not a heddle daemon state file (${(e as Error).message}); move it away to start afresh`, { cause: e });
    }
    const rows = this.#db.prepare("SELECT k, v FROM owner").all() as { k: string; v: string }[];
    const had = new Map(rows.map((r) => [r.k, r.v]));
    if (had.get("peer") !== owner.peer || had.get("genesis") !== owner.genesis) {
      this.#db.close();
      throw new DaemonStateError(
        `${path} belongs to peer ${had.get("peer")} of the cluster with genesis ${had.get("genesis")}, not to peer ${owner.peer} of genesis ${owner.genesis}; it sits next to another store's ledger — move it away (its standing demand and remembered reserves are the other store's)`,
      );
    }
    try {
      this.#tagReserveKeys();
    } catch (e) {
      this.#db.close();
      throw new DaemonStateError(`${path}: its remembered reserve answers could not be rewritten under their keys' tags (${(e as Error).message}); move it away to start afresh`, { cause: e });
    }
    this.#q = {
      putStanding: this.#db.prepare("INSERT INTO standing_demand (edge, target, max_grant, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT(edge) DO UPDATE SET target = excluded.target, max_grant = excluded.max_grant, expires_at = excluded.expires_at"),
      dropStanding: this.#db.prepare("DELETE FROM standing_demand WHERE edge = ?"),
      standing: this.#db.prepare("SELECT edge, target, max_grant, expires_at FROM standing_demand ORDER BY edge"),
      getKey: this.#db.prepare("SELECT body, status, payload FROM reserve_keys WHERE key = ?"),
      putKey: this.#db.prepare("INSERT INTO reserve_keys (key, body, status, payload) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET body = excluded.body, status = excluded.status, payload = excluded.payload"),
      trimKeys: this.#db.prepare("DELETE FROM reserve_keys WHERE seq <= (SELECT MAX(seq) FROM reserve_keys) - ?"),
    };
  }

  /**
   * Files written before reserve answers were kept under their key's tag ({@link reserveTagOf}) hold the raw
   * `Idempotency-Key`s: rewritten to tags once, in one transaction, so a retry across the upgrade still replays.
   */
  #tagReserveKeys(): void {
    if (this.#db.prepare("SELECT v FROM owner WHERE k = 'reserve-keys'").get() !== undefined) return;
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const rows = this.#db.prepare("SELECT seq, key FROM reserve_keys").all() as { seq: number; key: string }[];
      const rekey = this.#db.prepare("UPDATE reserve_keys SET key = ? WHERE seq = ?");
      for (const r of rows) rekey.run(reserveTagOf(r.key), r.seq);
      this.#db.prepare("INSERT INTO owner (k, v) VALUES ('reserve-keys', 'sha256-128')").run();
      this.#db.exec("COMMIT");
    } catch (e) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw e;
    }
  }

  /** Every standing demand stored, ascending edge (lapsed ones included: the scheduler drops those). */
  standing(): StandingDemand[] {
    const rows = this.#q.standing.all() as { edge: string; target: string; max_grant: string; expires_at: number }[];
    return rows.map((r) => {
      let demand;
      try {
        demand = { targetOutstanding: BigInt(r.target), maximumUsefulGrant: BigInt(r.max_grant) };
      } catch (e) {
        throw new DaemonStateError(`standing demand of ${r.edge} is not a pair of integers; move daemon.sqlite away to start afresh`, { cause: e });
      }
      return { edge: r.edge as AttachmentId, demand, expiresAt: r.expires_at };
    });
  }

  put(s: StandingDemand): void {
    this.#q.putStanding.run(s.edge, s.demand.targetOutstanding.toString(), s.demand.maximumUsefulGrant.toString(), s.expiresAt);
  }

  drop(edge: AttachmentId): void {
    this.#q.dropStanding.run(edge);
  }

  /** The {@link ReserveMemory} on this file. */
  reserveMemory(): ReserveMemory {
    return {
      get: (key) => {
        const r = this.#q.getKey.get(key) as { body: string; status: number; payload: string } | undefined;
        return r === undefined ? undefined : { body: r.body, status: r.status, payload: JSON.parse(r.payload) as unknown };
      },
      put: (key, a) => {
        // one commit (one sync) for the key and the trim of the oldest beyond the limit
        this.#db.exec("BEGIN IMMEDIATE");
        try {
          this.#q.putKey.run(key, a.body, a.status, JSON.stringify(a.payload));
          this.#q.trimKeys.run(this.#keep);
          this.#db.exec("COMMIT");
        } catch (e) {
          if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
          throw e;
        }
      },
    };
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}
