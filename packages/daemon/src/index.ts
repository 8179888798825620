/**
 * `@heddle/daemon` — one heddle peer as a service: its config file, `heddle init`'s cluster writer, and the
 * daemon (libp2p, SQLite store, node, scheduler, HTTP API) that `heddle start` runs and tests embed.
 */
export { startDaemon, DaemonStartError, MIN_TOKEN_LENGTH, nodeConfigOf } from "./daemon.ts";
export type { RunningDaemon, StartDaemonOptions, DaemonStartReason } from "./daemon.ts";
export { loadConfig, parseConfig, ConfigError, CONFIG_DEFAULTS, isLoopback } from "./config.ts";
export type { DaemonConfig, StaticMode, GovernedMode, NodeTuning, DaemonLimits } from "./config.ts";
export { PeerConfigSchema, CONFIG_VERSION } from "./config-schema.ts";
export type { PeerConfigDocument } from "./config-schema.ts";
export { initCluster, parseTreeSpec, votersFor, TreeSpecError, MAX_INIT_PEERS, DEFAULT_STATIC_TREE, CONFIG_FILE } from "./init.ts";
export type { InitOptions, InitPeer } from "./init.ts";
export { buildApi, proposalKeyOf, treeOf, API_PREFIX, MAX_IDEMPOTENCY_KEY_LENGTH } from "./api.ts";
export type { ApiContext } from "./api.ts";
export type { DataPlane } from "./data-plane.ts";
export type { ControlPlane, ControlOutcome, ClaimsOutcome, ControlConflict, CallOptions, ProposalKey, ClaimsVerbs, ClaimRequest, ControlView, RosterView, RaftStatus } from "./control-plane.ts";
export { Scheduler, inboundEdge, MAX_PARENTS_PER_TICK } from "./scheduler.ts";
export type { StandingDemand, DemandRefusal, SchedulerOptions } from "./scheduler.ts";
export { createLogger, silentLogger } from "./log.ts";
export type { Logger, LoggerOptions, LogLevel } from "./log.ts";
export { checker, fieldName, renderIssues, INT64_MAX } from "./schema.ts";
export type { FieldIssue, Checker } from "./schema.ts";
export { toWire, fractionText } from "./wire.ts";
/** The live dashboard: the Yjs document, its read-only y-websocket server side, the page, and a stand-alone server. */
export { LiveDashboard, serveDashboard, DASHBOARD_DEFAULTS } from "./dashboard.ts";
export type { LiveDashboardOptions, DashboardServer } from "./dashboard.ts";
export { DashboardSockets, DASHBOARD_SOCKET_LIMITS, DASHBOARD_SOCKET_PATH, DASHBOARD_SUBPROTOCOL } from "./dashboard-socket.ts";
export type { DashboardSocketLimits, DashboardSocketStats, DashboardRefusal } from "./dashboard-socket.ts";
export { DashboardDoc, DASHBOARD_DOC_VERSION, MAX_DASHBOARD_EVENTS } from "./dashboard-doc.ts";
export type { DashboardEvent } from "./dashboard-doc.ts";
export { dashboardSnapshot, MAX_DASHBOARD_ENTITIES, SHARE_DECIMALS } from "./dashboard-snapshot.ts";
export type { DashboardSnapshot, Fields, Scalar } from "./dashboard-snapshot.ts";
/** `/metrics`: the peer's Prometheus registry, and the store wrapper that times commits. */
export { DaemonMetrics, timedStore, MAX_METRIC_EDGES, COMMIT_BUCKETS, REQUEST_BUCKETS } from "./metrics.ts";
export type { DaemonMetricsOptions } from "./metrics.ts";
/** What the dashboard and /metrics read of a peer. */
export { peerState, transportCountersOf } from "./peer-reads.ts";
export type { PeerReads, RaftWatches, LivenessNote, PeerState, TransportCounters } from "./peer-reads.ts";
/** Governed mode's pieces the demo reuses: the control plane of a governed node, and the term-observing Raft store. */
export { governedControlPlane, termObservingStorage } from "./governed-peer.ts";
export type { GovernedNodeLike } from "./governed-peer.ts";
export { claimsWithReadRefusals, type ReadRefusalSource, type ReadRefusalCounts } from "./claims-at-read.ts";
