/**
 * Replication limits and intervals (node.md §12), plus the lean-wire knobs of §5.3–5.4 ⟨1.1⟩. Every
 * buffer has a named maximum; every delay is injected time.
 */
export interface ReplicationConfig {
  /** Digest tick; also the least time between two full states served to one peer. */
  readonly antiEntropyIntervalMs: number;
  /** A receiver re-asks for a whole open gap this often; a sender re-offers its unacked tail this often. */
  readonly resendRetryMs: number;
  /** A handshake digest (first contact, re-entry, a peer's restart) is repeated this often until answered. */
  readonly fullStateRetryMs: number;
  /** …at most this many times. */
  readonly fullStateRetryLimit: number;
  /** A known peer absent this long is forgotten (it stops pinning the delta buffer). */
  readonly peerEvictionMs: number;
  /** Largest ledger-channel frame this node sends or accepts. */
  readonly maxFrameBytes: number;
  /** Own deltas kept for resends; beyond it the oldest go (a peer that needs one gets the full state). */
  readonly maxPendingDeltas: number;
  /** Out-of-order seqs (and split-delta parts) tracked per sender; beyond it the gap is left to anti-entropy. */
  readonly maxTrackedSeqs: number;
  /** Longest resend span served from the buffer. */
  readonly maxResendSpan: number;
  /** Acks to one sender are coalesced over this window (or ride on a delta going there first). */
  readonly ackDelayMs: number;
  /** A gap is only asked for once it stays open this long: plain reordering asks for nothing. */
  readonly reorderGraceMs: number;
  /** Local patches published within this window leave as one delta (0: those of one turn). */
  readonly deltaBatchMs: number;
  /** The periodic digest to a random peer; off only in tests that check replication's own bookkeeping. */
  readonly antiEntropy: boolean;
}

/** node.md §12 defaults, and the lean-wire defaults. */
export const REPLICATION_DEFAULTS: ReplicationConfig = Object.freeze({
  antiEntropyIntervalMs: 5_000,
  resendRetryMs: 2_000,
  fullStateRetryMs: 5_000,
  fullStateRetryLimit: 10,
  peerEvictionMs: 300_000,
  maxFrameBytes: 1_048_576,
  maxPendingDeltas: 10_000,
  maxTrackedSeqs: 4_096,
  maxResendSpan: 1_024,
  ackDelayMs: 10,
  reorderGraceMs: 5,
  deltaBatchMs: 0,
  antiEntropy: true,
});

/** Smallest accepted `maxFrameBytes` (node.md §12). */
export const MIN_FRAME_BYTES = 4_096;

/** Validates a replication config, throwing `RangeError` naming the offending field. */
export function checkReplicationConfig(c: ReplicationConfig): ReplicationConfig {
  const positive = ["antiEntropyIntervalMs", "resendRetryMs", "fullStateRetryMs", "peerEvictionMs", "maxPendingDeltas", "maxTrackedSeqs", "maxResendSpan"] as const;
  for (const k of positive) if (!Number.isSafeInteger(c[k]) || c[k] <= 0) throw new RangeError(`${k} must be a positive integer, got ${c[k]}`);
  const nonNegative = ["fullStateRetryLimit", "ackDelayMs", "reorderGraceMs", "deltaBatchMs"] as const;
  for (const k of nonNegative) if (!Number.isSafeInteger(c[k]) || c[k] < 0) throw new RangeError(`${k} must be an integer >= 0, got ${c[k]}`);
  if (!Number.isSafeInteger(c.maxFrameBytes) || c.maxFrameBytes < MIN_FRAME_BYTES) throw new RangeError(`maxFrameBytes must be an integer >= ${MIN_FRAME_BYTES}, got ${c.maxFrameBytes}`);
  if (typeof c.antiEntropy !== "boolean") throw new RangeError("antiEntropy must be a boolean");
  return c;
}
