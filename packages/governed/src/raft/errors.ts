/** Errors the Raft driver rejects calls with (governed.md §4.1). */

/** Retryable: the proposal or read lost its leader before it could be confirmed. It may still commit. */
export class LeadershipLostError extends Error {
  override readonly name = "LeadershipLostError";
}

/** The call needs the leader (readIndex, changeMembership) and this node is not it. */
export class NotLeaderError extends Error {
  override readonly name = "NotLeaderError";
}

/** The command cannot fit one frame; raised before anything is appended (R-R7). */
export class PayloadTooLargeError extends Error {
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
