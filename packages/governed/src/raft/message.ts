/**
 * Raft wire messages. No message names its sender: the sender is the transport's authenticated identity
 * (R-E5, R-X3). Every term-bearing message is checked by the core's frame hygiene (R-X5).
 */
import type { ClusterConfig, LogEntry, LogIndex, ProposalKey } from "./types.ts";

/** Pre-vote request at the proposed term `term` (= candidate's term + 1); changes nothing on either side. */
export interface PreVoteMessage {
  readonly type: "preVote";
  readonly term: number;
  readonly lastLogIndex: LogIndex;
  readonly lastLogTerm: number;
  readonly round: number;
}
/** Pre-vote answer; `round` echoes the request so stale replies are discarded. */
export interface PreVoteReplyMessage {
  readonly type: "preVoteReply";
  readonly term: number;
  readonly granted: boolean;
  readonly round: number;
}
/**
 * RequestVote. `transfer` is the leadership-transfer flag (R-T1): the candidate campaigns because its leader
 * told it to (TimeoutNow), so voters skip stickiness (R-E4) for it. Absent means false.
 */
export interface VoteMessage {
  readonly type: "vote";
  readonly term: number;
  readonly lastLogIndex: LogIndex;
  readonly lastLogTerm: number;
  readonly transfer?: boolean;
}
/** RequestVote answer. */
export interface VoteReplyMessage {
  readonly type: "voteReply";
  readonly term: number;
  readonly granted: boolean;
}
/** AppendEntries; `round` is the leader's heartbeat round for ReadIndex confirmation (R-Q2). */
export interface AppendMessage {
  readonly type: "append";
  readonly term: number;
  readonly prevLogIndex: LogIndex;
  readonly prevLogTerm: number;
  readonly leaderCommit: LogIndex;
  readonly round: number;
  readonly entries: readonly LogEntry[];
}
/**
 * AppendEntries answer. On success `matchIndex` is the last index this frame verified. On rejection
 * `rejectedPrev` is the request's prevLogIndex and the fast-backup hints are `conflictTerm`/`conflictIndex`
 * (R-R3). A stale-term rejection echoes round 0.
 *
 * `maxEntries` is present only on the answer to a frame refused as `too-many-entries`: the replier's own
 * `maxEntriesPerMessage`, so the leader sends it smaller frames at once (round 0, no hints; nothing was stored).
 * It travels as a trailing field: a receiver that predates it ignores it, a sender that predates it never sends it.
 */
export interface AppendReplyMessage {
  readonly type: "appendReply";
  readonly term: number;
  readonly success: boolean;
  readonly matchIndex: LogIndex;
  readonly rejectedPrev: LogIndex;
  readonly conflictTerm: number | null;
  readonly conflictIndex: LogIndex;
  readonly round: number;
  readonly maxEntries?: number;
}
/** One InstallSnapshot chunk: bytes `[offset, offset + data.length)` of a snapshot of `total` bytes. */
export interface SnapshotMessage {
  readonly type: "snapshot";
  readonly term: number;
  readonly lastIndex: LogIndex;
  readonly lastTerm: number;
  readonly config: ClusterConfig | null;
  readonly total: number;
  readonly offset: number;
  readonly data: Uint8Array;
}
/**
 * InstallSnapshot answer: the next offset wanted, or `done` once installed (or already covered).
 *
 * `maxBytes` is present only on the answer to a chunk refused as `snapshot-too-large`: the replier's own
 * `snapshotMaxBytes`, below the snapshot's `total`, so the leader stops offering it a snapshot it cannot take and
 * reports why (`SnapshotStall`). Like `AppendReplyMessage.maxEntries` it travels as a trailing field: a receiver that
 * predates it ignores it, a sender that predates it never sends it.
 */
export interface SnapshotReplyMessage {
  readonly type: "snapshotReply";
  readonly term: number;
  readonly lastIndex: LogIndex;
  readonly nextOffset: number;
  readonly done: boolean;
  readonly maxBytes?: number;
}
/** A non-leader's proposal, sent to the leader it knows (R-F1). `corrId` is a local counter of the sender. */
export interface ForwardMessage {
  readonly type: "forward";
  readonly corrId: number;
  readonly key: ProposalKey | null;
  readonly command: Uint8Array;
}
/** The leader's answer to a forward (R-F2). */
export interface ForwardReplyMessage {
  readonly type: "forwardReply";
  readonly corrId: number;
  readonly outcome: "committed" | "notLeader" | "failed";
  readonly index: LogIndex;
  readonly term: number;
}

/**
 * The leader's order to a caught-up transfer target to campaign at once (R-T1). Accepted only from the leader
 * the receiver follows in `term` (R-T3).
 */
export interface TimeoutNowMessage {
  readonly type: "timeoutNow";
  readonly term: number;
}

/** Every Raft message. */
export type Message =
  | PreVoteMessage
  | PreVoteReplyMessage
  | VoteMessage
  | VoteReplyMessage
  | AppendMessage
  | AppendReplyMessage
  | SnapshotMessage
  | SnapshotReplyMessage
  | ForwardMessage
  | ForwardReplyMessage
  | TimeoutNowMessage;

/** A message addressed to a peer. */
export interface Envelope {
  readonly to: string;
  readonly message: Message;
}
