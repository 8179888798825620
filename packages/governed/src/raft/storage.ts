/** The Raft storage contract (governed.md §4.1) and its in-memory implementation. */
import type { LogEntry, LogIndex, NodeId, PersistedState, StoredSnapshot } from "./types.ts";

/**
 * Durable Raft state. Every method's promise resolves only once its write is durable; the driver issues them
 * strictly one after another (never concurrently), in the order the core asked for.
 */
export interface RaftStorage {
  load(): Promise<PersistedState>;
  /** One atomic, durable write of term and vote (R-P1). */
  saveTermAndVote(term: number, votedFor: NodeId | null): Promise<void>;
  /** Contiguous entries, replacing any stored at the same indexes. */
  append(entries: readonly LogEntry[]): Promise<void>;
  /** Deletes every entry at or above `index`. */
  truncateFrom(index: LogIndex): Promise<void>;
  saveSnapshot(s: StoredSnapshot): Promise<void>;
  /** Deletes every entry at or below `index` (after its snapshot is saved; a crash between is safe, R-P4). */
  discardThrough(index: LogIndex): Promise<void>;
  close(): Promise<void>;
}

/**
 * An in-memory store with the same interface: for tests, and for ephemeral peers that always rejoin empty under
 * a NEW NodeId (R-P5 — never restart a wiped store under the same id).
 */
export function memoryRaftStorage(): RaftStorage & { readonly snapshotOf: () => PersistedState } {
  let term = 0;
  let votedFor: NodeId | null = null;
  let snapshot: StoredSnapshot | null = null;
  let entries: LogEntry[] = [];
  const view = (): PersistedState => ({ term, votedFor, snapshot, entries: entries.slice() });
  return {
    snapshotOf: view,
    load: async () => view(),
    async saveTermAndVote(t, v) {
      term = t;
      votedFor = v;
    },
    async append(es) {
      const first = es[0];
      if (first === undefined) return;
      entries = [...entries.filter((e) => e.index < first.index), ...es];
    },
    async truncateFrom(index) {
      entries = entries.filter((e) => e.index < index);
    },
    async saveSnapshot(s) {
      snapshot = s;
    },
    async discardThrough(index) {
      entries = entries.filter((e) => e.index > index);
    },
    async close() {},
  };
}
