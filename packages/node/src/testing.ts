/**
 * `@heddle/node/testing` — helpers for tests and simulations, kept out of the embedder surface: virtual
 * time, a store that fails on demand, the replication core and its wire codec (to drive or fuzz the
 * protocol without a node), and the internals the package's own tests exercise.
 */
export { VirtualTimers } from "@heddle/seam/testing";
export { failingStore, InjectedCommitFailure, restoreLedger, patchBytes } from "./store.ts";
export { ReplicationCore } from "./replication/core.ts";
export type { ReplicationCoreOptions, Outgoing, Ready } from "./replication/core.ts";
export { ReplicationDriver } from "./replication/driver.ts";
export type { ReplicationEvent, ReplicationDriverOptions } from "./replication/driver.ts";
export { REPLICATION_DEFAULTS, MIN_FRAME_BYTES, checkReplicationConfig } from "./replication/config.ts";
export type { ReplicationConfig } from "./replication/config.ts";
export type { LedgerMessage, DeltaMessage, AckMessage, ResendMessage, DigestMessage, StateRequestMessage, StateMessage, AckInfo } from "./replication/messages.ts";
export { encodeLedgerFrame, readLedgerFrame, WIRE_VERSION, WIRE_ENVELOPE_BYTES } from "./replication/wire.ts";
export { RejectionCounter } from "./rejection.ts";
export { DemandBoard, DEMAND_BOARD_DEFAULTS, readBoardMessage, encodeBoardMessage } from "./demand-board.ts";
export type { DemandBoardConfig, BoardMessage } from "./demand-board.ts";
export { LivenessMonitor, HEARTBEAT_DEFAULTS, readLivenessMessage } from "./liveness.ts";
export type { LivenessMessage } from "./liveness.ts";
export { ReservationTable } from "./reservation-table.ts";
export type { ReservationEffect, ReservePlan, CompletePlan, ReservationEvent } from "./reservation-table.ts";
export { planSchedule, policyEdges } from "./schedule.ts";
export { boundMetrics } from "./bound-metrics.ts";
export { canonicalJson, canonicalBytes } from "./canonical-json.ts";
export { Node } from "./heddle-node.ts";
export { ClaimsGossip, encodeClaimsFrame, readClaimsFrame } from "./claims-gossip.ts";
export type { ClaimsFrame } from "./claims-gossip.ts";
