/** Errors the Raft driver rejects calls with (governed.md §4.1). */

import type { TransferFailure } from "./trace.ts";

/**
 * Retryable: the proposal or read lost its leader before it could be confirmed. It may still commit, so retry a
 * proposal with the same key (the state machine's exact dedup makes the retry apply at most once).
 */
export class LeadershipLostError extends Error {
  override readonly name: string = "LeadershipLostError";
}

/**
 * The call needs the leader (readIndex, changeMembership) and this node is not it; or a proposal reached the
 * leader while it was handing leadership over (§4.10), and was not appended. It is a `LeadershipLostError`, so
 * a retry loop that retries those (the control plane's, §3.10) retries this too: the leader refuses such a
 * proposal only once the transfer has ended, so the retry goes straight to the new leader — or back to this
 * one when the transfer was abandoned.
 */
export class NotLeaderError extends LeadershipLostError {
  override readonly name: string = "NotLeaderError";
}

/**
 * `transferLeadership` did not move leadership to the target (R-T1–R-T3). `reason`: `invalid-target` (the
 * target is not a voter of the current configuration — a learner or a stranger — so choose a voter),
 * `in-progress` (a transfer to another target is running; wait for it), `timed-out` (the target did not take
 * over within one `electionTimeoutMaxMs`; this node stays leader if it still can — check the target's health
 * and retry), `superseded` (another node took leadership first, or this one was re-elected).
 */
export class LeadershipTransferError extends Error {
  override readonly name = "LeadershipTransferError";
  readonly reason: TransferFailure;
  constructor(reason: TransferFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * The command cannot fit one frame; raised before anything is appended (R-R7). A `RangeError`: like an argument
 * refused before proposing (governed.md §2.2), it is a definite "not applied" — make the command smaller.
 */
export class PayloadTooLargeError extends RangeError {
  override readonly name = "PayloadTooLargeError";
}

/** A configuration change is uncommitted, or the leader has not committed an entry of its term yet (R-M2). */
export class MembershipChangeInProgressError extends Error {
  override readonly name = "MembershipChangeInProgressError";
}

/** The requested configuration is not a single-server step from the current one (R-M2). */
export class InvalidMembershipError extends Error {
  override readonly name = "InvalidMembershipError";
}

/** The node was closed; every pending call is rejected with this. */
export class NodeShutdownError extends Error {
  override readonly name = "NodeShutdownError";
}

/** Too many calls are already waiting (a named limit was reached). */
export class OverloadedError extends Error {
  override readonly name = "OverloadedError";
}

/** The call was aborted through its `AbortSignal` before it was sent. */
export class ProposalAbortedError extends Error {
  override readonly name = "ProposalAbortedError";
}

/** The persisted state is corrupt (R-P3); the node refuses to start rather than repair silently. */
export class RaftRestoreError extends Error {
  override readonly name = "RaftRestoreError";
}
