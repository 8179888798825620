/** Trace events of the Raft core (governed.md §4.13). The simulation asserts on them and prints them on failure. */
import type { LogIndex, NodeId } from "./types.ts";

/** Why a leader or candidate stopped being one. */
export type StepDownReason = "higher-term" | "lost-quorum" | "leader-contact" | "removed" | "lost-election";

/** Every reason a Raft frame is refused (`RaftNode.refusedFrames`, the trace's `frameRefused`), in one list. */
export const FRAME_REFUSALS = [
  "undecodable",
  "from-self",
  "not-member",
  "term-jump",
  "above-ceiling",
  "entry-term-above-frame",
  "non-contiguous-entries",
  "too-many-entries",
  "malformed-entry",
  "sender-not-voter",
  "truncate-committed",
  "snapshot-mismatch",
  "snapshot-too-large",
  "snapshot-stale",
  /** An InstallSnapshot answer no correct follower sends: not done, yet asking for an offset at or past the end. */
  "snapshot-reply-invalid",
  "future-round",
  "unknown-peer",
  "forward-reply-wrong-peer",
  "timeout-now-not-from-leader",
  "timeout-now-not-voter",
] as const;

/** Why a frame was refused (counted per reason in `RaftCore.refusedFrames`). */
export type FrameRefusal = (typeof FRAME_REFUSALS)[number];

/** One observable event of the core. */
export type RaftTraceEvent =
  | { readonly type: "electionTimeout"; readonly term: number }
  | { readonly type: "preVoteStart"; readonly term: number; readonly round: number }
  | { readonly type: "electionStart"; readonly term: number }
  | { readonly type: "electionWon"; readonly term: number }
  | { readonly type: "stepDown"; readonly term: number; readonly reason: StepDownReason }
  | { readonly type: "voteDenied"; readonly to: NodeId; readonly term: number; readonly preVote: boolean; readonly reason: string }
  | { readonly type: "commitAdvance"; readonly commitIndex: LogIndex }
  | { readonly type: "frameRefused"; readonly from: NodeId; readonly reason: FrameRefusal }
  | { readonly type: "forwardSent"; readonly to: NodeId; readonly corrId: number }
  | { readonly type: "forwardAnswered"; readonly from: NodeId; readonly corrId: number; readonly outcome: string }
  | { readonly type: "readConfirmed"; readonly index: LogIndex }
  | { readonly type: "snapshotInstalled"; readonly lastIndex: LogIndex; readonly lastTerm: number }
  | { readonly type: "compacted"; readonly throughIndex: LogIndex }
  | { readonly type: "transferStart"; readonly target: NodeId; readonly term: number; readonly generation: number }
  | { readonly type: "timeoutNowSent"; readonly target: NodeId; readonly term: number; readonly generation: number }
  | { readonly type: "transferCampaign"; readonly from: NodeId; readonly term: number }
  | { readonly type: "transferEnd"; readonly target: NodeId; readonly generation: number; readonly outcome: "succeeded" | TransferFailure }
  | { readonly type: "proposalCoalesced"; readonly index: LogIndex; readonly committed: boolean }
  /** A follower refused an AppendEntries as too-many-entries: the leader now sends it at most `maxEntries` per frame. */
  | { readonly type: "batchLimited"; readonly peer: NodeId; readonly maxEntries: number }
  /**
   * This member refused the snapshot `leader` offers (through `lastIndex`, `total` bytes) as above its own
   * `snapshotMaxBytes` (`maxBytes`): it cannot catch up until that is raised. Once per snapshot and leader; each
   * chunk refused is also a `frameRefused` (`snapshot-too-large`).
   */
  | { readonly type: "snapshotTooLarge"; readonly leader: NodeId; readonly lastIndex: LogIndex; readonly total: number; readonly maxBytes: number }
  /**
   * The leader's follower `peer` refused its snapshot as above the follower's `snapshotMaxBytes` (`maxBytes`): the
   * leader offers it again only after `retryInMs` (heartbeats meanwhile), `SnapshotStall` says why.
   */
  | { readonly type: "snapshotRefused"; readonly peer: NodeId; readonly lastIndex: LogIndex; readonly total: number; readonly maxBytes: number; readonly retryInMs: number };

/** Why a leadership transfer ended without success (R-T1–R-T3). */
export type TransferFailure = "invalid-target" | "in-progress" | "timed-out" | "superseded";
