/** Raft timing and size limits (governed.md §4.1 table), with their validation. */

/** Every tunable of the Raft core. All limits are named and enforced. */
export interface RaftConfig {
  /** Election timeout is drawn uniformly from `[electionTimeoutMinMs, electionTimeoutMaxMs)` (R-E1). */
  readonly electionTimeoutMinMs: number;
  readonly electionTimeoutMaxMs: number;
  /** Leader heartbeat period; must be below `electionTimeoutMinMs`. */
  readonly heartbeatMs: number;
  /**
   * How long an idle follower may go without hearing of a new commit index when no AppendEntries is due to carry
   * it (followers that forwarded a proposal just committed are told at once). Below `heartbeatMs`. Under load the
   * next AppendEntries carries the commit index anyway, so the notice rarely goes out — one frame per follower
   * per commit saved.
   */
  readonly commitNoticeMs: number;
  /** Frames whose term exceeds `currentTerm + maxTermJump` are dropped (R-X5). */
  readonly maxTermJump: number;
  /** Terms and indexes above this are malformed. */
  readonly termCeiling: number;
  /** Largest encoded frame the core may emit; commands that cannot fit alone are refused (R-R7). */
  readonly maxMessageBytes: number;
  /**
   * Most entries in one AppendEntries frame, sent or received: a frame carrying more is refused as
   * `too-many-entries`, and the refusal tells the sender this value, so a leader sends a member with a lower value
   * frames within it (members may differ; `Progress.batch` in core.ts).
   */
  readonly maxEntriesPerMessage: number;
  /** Most AppendEntries frames in flight to one follower in the replicate state. */
  readonly maxInflightMessages: number;
  /** Most committed items handed to the state machine in one ready. */
  readonly maxApplyBatch: number;
  /** Most local proposals waiting for a leader or for commit. */
  readonly maxPendingProposals: number;
  /** Most reads waiting for confirmation. */
  readonly maxPendingReads: number;
  /** InstallSnapshot chunk size (also capped by the frame budget). */
  readonly snapshotChunkBytes: number;
  /** Reassembly cap for an incoming snapshot; overflow discards and restarts from offset 0 (R-S2). */
  readonly snapshotMaxBytes: number;
  /**
   * Most proposal keys the leader remembers for coalescing retries (R-D4): a retried key still in flight joins
   * the original's wait, a recently committed one is answered with its index without appending. 0 turns the
   * cache off; the state machine's exact dedup stays authoritative either way.
   */
  readonly maxDedupKeys: number;
}

/** Defaults of governed.md §4.1 plus the named limits this implementation adds. */
export const DEFAULT_RAFT_CONFIG: RaftConfig = {
  electionTimeoutMinMs: 150,
  electionTimeoutMaxMs: 300,
  heartbeatMs: 50,
  commitNoticeMs: 5,
  maxTermJump: 10_000,
  termCeiling: 2 ** 50,
  maxMessageBytes: 1024 * 1024,
  maxEntriesPerMessage: 512,
  maxInflightMessages: 64,
  maxApplyBatch: 1024,
  maxPendingProposals: 16_384,
  maxPendingReads: 4096,
  snapshotChunkBytes: 16 * 1024,
  snapshotMaxBytes: 64 * 1024 * 1024,
  maxDedupKeys: 4096,
};

/** Thrown at construction when a configuration breaks a rule of the §4.1 table (R-E8). */
export class RaftConfigError extends Error {
  override readonly name = "RaftConfigError";
}

/** Merges `partial` over the defaults and validates the result; throws `RaftConfigError` on violation. */
export function raftConfig(partial: Partial<RaftConfig> = {}): RaftConfig {
  const c: RaftConfig = { ...DEFAULT_RAFT_CONFIG, ...partial };
  const int = (name: keyof RaftConfig, min: number, max = Number.MAX_SAFE_INTEGER): void => {
    const v = c[name];
    if (!Number.isSafeInteger(v) || v < min || v > max) {
      throw new RaftConfigError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
    }
  };
  int("electionTimeoutMinMs", 1);
  int("electionTimeoutMaxMs", 2);
  if (c.electionTimeoutMinMs >= c.electionTimeoutMaxMs) {
    throw new RaftConfigError(`electionTimeoutMinMs (${c.electionTimeoutMinMs}) must be < electionTimeoutMaxMs (${c.electionTimeoutMaxMs})`);
  }
  int("heartbeatMs", 1);
  if (c.heartbeatMs >= c.electionTimeoutMinMs) {
    throw new RaftConfigError(`heartbeatMs (${c.heartbeatMs}) must be < electionTimeoutMinMs (${c.electionTimeoutMinMs})`);
  }
  int("commitNoticeMs", 0);
  if (c.commitNoticeMs >= c.heartbeatMs) {
    throw new RaftConfigError(`commitNoticeMs (${c.commitNoticeMs}) must be < heartbeatMs (${c.heartbeatMs})`);
  }
  int("maxTermJump", 1, 2 ** 20);
  int("termCeiling", 1, Number.MAX_SAFE_INTEGER - 2 ** 21);
  int("maxMessageBytes", 256);
  int("maxEntriesPerMessage", 1);
  int("maxInflightMessages", 1);
  int("maxApplyBatch", 1);
  int("maxPendingProposals", 1);
  int("maxPendingReads", 1);
  int("snapshotChunkBytes", 1);
  int("snapshotMaxBytes", 1);
  int("maxDedupKeys", 0, 1 << 20);
  return c;
}
