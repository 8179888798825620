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
export { claimsWithReadRefusals, type ReadRefusalSource, type ReadRefusalCounts } from "./claims-at-read.ts";
