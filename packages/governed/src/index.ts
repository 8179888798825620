/**
 * `@heddle/governed` — heddle's consensus-governed control plane (governed.md): `heddleGoverned` starts a peer whose
 * minting, reshaping, enrolling and granted claims go through one replicated Raft log, decided by `ControlState`
 * from the committed prefix, while its data plane stays coordination-free. Below it, the Raft log itself (§4):
 *
 * The protocol lives in a pure core (`RaftCore`: no I/O, timers or randomness of its own); `raftNode` drives
 * it with injected storage, transport, timers and randomness; `walRaftStorage` (the segmented log store;
 * `sqliteRaftStorage` remains available) and `seamRaftTransport` are the production storage and transport. `checkLinearizable` is the history checker the simulation uses.
 */
export type { NodeId, LogIndex, Role, ProposalKey, ClusterConfig, EntryKind, LogEntry, StoredSnapshot, HardState, Committed, PersistedState } from "./raft/types.ts";
export { sameConfig, sameEntry } from "./raft/types.ts";
export type { RaftConfig } from "./raft/config.ts";
export { DEFAULT_RAFT_CONFIG, RaftConfigError, raftConfig } from "./raft/config.ts";
export {
  LeadershipLostError,
  NotLeaderError,
  LeadershipTransferError,
  PayloadTooLargeError,
  MembershipChangeInProgressError,
  InvalidMembershipError,
  NodeShutdownError,
  OverloadedError,
  ProposalAbortedError,
  RaftRestoreError,
} from "./raft/errors.ts";
export type { Message, Envelope } from "./raft/message.ts";
export { encodeMessage, decodeMessage, encodeConfig, decodeConfig, entryBytes, CODEC_VERSION } from "./raft/codec.ts";
export type { RaftTraceEvent, FrameRefusal, StepDownReason, TransferFailure } from "./raft/trace.ts";
export { FRAME_REFUSALS } from "./raft/trace.ts";
export type { RaftRefusal, Outcome, StorageOp, Ready, Progress, RaftCoreOptions, SnapshotStall } from "./raft/core.ts";
export {
  RaftCore,
  validSingleStep,
  isLocalStep,
  MAX_TRACE_PER_READY,
  SHRINK_HOLD_HEARTBEATS,
  SILENT_PERIODS_BEFORE_SHRINK,
  SNAPSHOT_REFUSED_FIRST_BACKOFF_HEARTBEATS,
  SNAPSHOT_REFUSED_MAX_BACKOFF_HEARTBEATS,
} from "./raft/core.ts";
export type { Operation, Model, CheckResult, KvInput } from "./raft/linearizability.ts";
export { checkLinearizable, kvModel, DEFAULT_CHECK_BUDGET } from "./raft/linearizability.ts";
export type { RaftStorage } from "./raft/storage.ts";
export { memoryRaftStorage } from "./raft/storage.ts";
export type { WalRaftStorageOptions } from "./raft/wal-storage.ts";
export { walRaftStorage } from "./raft/wal-storage.ts";
export type { SegmentedLogOptions } from "./raft/wal-log.ts";
export { DEFAULT_SEGMENT_BYTES, MIN_SEGMENT_BYTES } from "./raft/wal-log.ts";
export { WAL_MAX_RECORD_BYTES } from "./raft/wal-records.ts";
export type { SqliteRaftStorageOptions } from "./raft/sqlite-storage.ts";
export { sqliteRaftStorage } from "./raft/sqlite-storage.ts";
export type { RaftTransport, SeamTransportCounters } from "./raft/transport.ts";
export { seamRaftTransport, raftChannelTransport } from "./raft/transport.ts";
export type { RaftNode, RaftNodeOptions } from "./raft/node.ts";
export { raftNode, MAX_TRACE_BUFFER, TICK_MS } from "./raft/node.ts";

// ---- the control plane (governed.md §1–3) ----
export type { GovernedOptions, GovernedHeddleNode, GovernedClaims, RevocationSeam, RevocationOutcome, RetireWitnessCounts } from "./control/governed-node.ts";
export { heddleGoverned, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_SNAPSHOT_EVERY, PROPOSE_ATTEMPTS, PROPOSE_ATTEMPT_TIMEOUT_MS, PROPOSE_RETRY_BACKOFF_MS } from "./control/governed-node.ts";
export type { CallOptions, ReleaseOptions } from "./control/call-arguments.ts";
export type { ControlLog } from "./control/control-log.ts";
export type { RetireWitness } from "./control/retire-witness.ts";
export { retireWitness, MAX_RETIRE_WITNESS_BYTES } from "./control/retire-witness.ts";
export type { ControlView, ControlStateOptions, AppliedStep, KeyRetention } from "./control/control-state.ts";
export { ControlState, CONTROL_STATE_FORMAT, CONTROL_STATE_FORMAT_SETTINGS, mintIdOf, IDEMPOTENCY_CLIENT_PREFIX, DEFAULT_IDEMPOTENCY_WINDOW, LAPSED_CLAIM_RETENTION_MS, LAPSED_CLAIMS_PER_APPLY } from "./control/control-state.ts";
export type { ControlOutcome, ControlConflict, ClaimsResult, Amount } from "./control/outcome.ts";
export { outcomeJson, outcomeFromJson, OutcomeDecodeError } from "./control/outcome.ts";
export type { ControlEnvelope, ControlCommand, EncodedLedgerFragment, DecodedEntry } from "./control/envelope.ts";
export { encodeEnvelope, decodeEntry, digestOf, CONTROL_MAGIC, CONTROL_VERSION, MAX_CONTROL_ENTRY_BYTES } from "./control/envelope.ts";
export type { RosterView, RosterTransition } from "./control/roster.ts";
export { RosterOrderError } from "./control/roster.ts";
export { OutcomeUnknownError, IncarnationReusedError, ControlPlaneHaltedError } from "./control/errors.ts";
export type { ControlSettings, ControlSettingName, FixedSettings, ListDigest, SettingDifference } from "./control/control-settings.ts";
export { CONTROL_SETTING_NAMES, SettingsMismatchError, settingsDigest } from "./control/control-settings.ts";

// ---- the control log on an existing etcd cluster (issue 18) ----
export type { EtcdControlLog, EtcdControlLogOptions, EtcdCounter, EtcdLogStatus } from "./etcd/etcd-log.ts";
export {
  etcdControlLog,
  EtcdUnreachableError,
  EtcdLogCorruptError,
  EtcdRefusedError,
  ETCD_ATTEMPT_TIMEOUT_MS,
  ETCD_CALL_ATTEMPTS,
  ETCD_HOST_FAILURES_TO_REST,
  ETCD_HOST_REST_MS,
  ETCD_MAX_PENDING_EVENTS,
  ETCD_MAX_CLOCK_AHEAD_MS,
  ETCD_MAX_CLOCK_AHEAD_BOUNDS,
  ETCD_MAX_ID_CHARS,
  ETCD_MAX_STAMP,
  DEFAULT_ETCD_PREFIX,
  ETCD_BATCH_ENTRIES,
  ETCD_BATCH_BYTES,
  ETCD_SNAPSHOT_CHUNK_BYTES,
  ETCD_READ_BATCH,
  ETCD_MAX_QUEUED_PROPOSALS,
  encodeEtcdEntry,
  decodeEtcdEntry,
} from "./etcd/etcd-log.ts";
export { ETCD_BATCH_GROW_AFTER, ETCD_BATCH_REFUSAL_MEMORY } from "./etcd/etcd-batch-limit.ts";
