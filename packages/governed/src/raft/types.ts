/** Value types shared by the Raft core, its driver, its storage and its transport (governed.md §4.1). */

/** A Raft member's identity; equals its `ReplicaId` and its transport peer id. */
export type NodeId = string;

/** A 1-based log position (a safe integer); 0 means "before the first entry". */
export type LogIndex = number;

/** The role a node currently plays. `learner` replicates and applies but never votes or campaigns. */
export type Role = "follower" | "candidate" | "leader" | "learner";

/** Exactly-once proposal key (governed.md §3.10): the proposer's client id and its sequence number (≥ 1). */
export interface ProposalKey {
  readonly client: string;
  readonly seq: number;
}

/** The voter and learner sets of one configuration. Disjoint; voters non-empty in a running cluster. */
export interface ClusterConfig {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

/** Kinds of log entry: application commands, the leader's no-op, and configuration changes. */
export type EntryKind = "app" | "noop" | "config";

/** One replicated log entry. `stampedAt` is the appending leader's clock, replicated unchanged. */
export interface LogEntry {
  readonly index: LogIndex;
  readonly term: number;
  readonly kind: EntryKind;
  readonly key: ProposalKey | null;
  readonly command: Uint8Array;
  readonly config?: ClusterConfig;
  readonly stampedAt: number;
}

/** A snapshot as stored: the state through `lastIndex`, and the configuration in force at that index. */
export interface StoredSnapshot {
  readonly lastIndex: LogIndex;
  readonly lastTerm: number;
  readonly config: ClusterConfig | null;
  readonly state: Uint8Array;
}

/** The durable term and vote. Written in one atomic, durable write (R-P1). */
export interface HardState {
  readonly term: number;
  readonly votedFor: NodeId | null;
}

/**
 * What the state machine receives, in log order, each index exactly once: an application entry, the index of
 * an internal entry (no-op or configuration), or a snapshot to install in place of everything before it.
 */
export type Committed =
  | { readonly kind: "entry"; readonly entry: LogEntry }
  | { readonly kind: "internal"; readonly index: LogIndex }
  | { readonly kind: "install"; readonly snapshot: { readonly throughIndex: LogIndex; readonly state: Uint8Array } };

/** What a store held at start: the input to restoring a core. */
export interface PersistedState {
  readonly term: number;
  readonly votedFor: NodeId | null;
  readonly snapshot: StoredSnapshot | null;
  readonly entries: readonly LogEntry[];
}

/** Two configurations are equal when they list the same voters and learners (order-insensitive). */
export function sameConfig(a: ClusterConfig, b: ClusterConfig): boolean {
  const eq = (x: readonly string[], y: readonly string[]): boolean => {
    if (x.length !== y.length) return false;
    const s = new Set(x);
    return y.every((v) => s.has(v));
  };
  return eq(a.voters, b.voters) && eq(a.learners, b.learners);
}

/** Two entries are the same entry when every replicated field is equal (used by invariant checks). */
export function sameEntry(a: LogEntry, b: LogEntry): boolean {
  if (a.index !== b.index || a.term !== b.term || a.kind !== b.kind || a.stampedAt !== b.stampedAt) return false;
  if ((a.key === null) !== (b.key === null)) return false;
  if (a.key !== null && b.key !== null && (a.key.client !== b.key.client || a.key.seq !== b.key.seq)) return false;
  if (a.command.length !== b.command.length) return false;
  // Stryker disable next-line EqualityOperator: lengths are equal here, and one step past the end compares undefined with undefined
  for (let i = 0; i < a.command.length; i++) if (a.command[i] !== b.command[i]) return false;
  if ((a.config === undefined) !== (b.config === undefined)) return false;
  if (a.config !== undefined && b.config !== undefined && !sameConfig(a.config, b.config)) return false;
  return true;
}
