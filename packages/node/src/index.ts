/**
 * `@heddle/node` — one peer of the replicated fair-share ledger (node.md): `heddleStatic` starts a node on a
 * `Seam` with a store; the node replicates the ledger, gossips demand, watches liveness, schedules its own
 * holdings down the tree, admits and charges work through reservations, and makes every write durable
 * before it leaves. This is what an embedder (the CLI, a daemon, `@heddle/governed`) uses; helpers for
 * tests and simulations are on `@heddle/node/testing`.
 */

// ---- starting a node (§13) ----
/** Starts a static-mode peer; its inputs, the genesis it computes and the errors it throws. */
export { heddleStatic, staticGenesis, BootstrapError, STATIC_GENESIS_NONCE } from "./heddle-static.ts";
export type { StaticOptions } from "./heddle-static.ts";
/** Configuration (§12): every field, the defaults, and validation that names the bad field. */
export type { HeddleConfig, ResolvedHeddleConfig } from "./heddle-config.ts";
export { resolveHeddleConfig, HEDDLE_CONFIG_DEFAULTS } from "./heddle-config.ts";
export type { HeartbeatConfig } from "./liveness.ts";

// ---- the node (§1, §7–8, §10–11, §14–15) ----
export type { HeddleNode, InternalErrorSite, NodeEvent, NodeMetrics, PeerMetrics, ControlSink, TopologyResult } from "./heddle-node.ts";
export type { ScheduleResult } from "./schedule.ts";
export type { ReserveResult, ReserveRefusal, CompleteResult, ReserveOptions } from "./reservation-table.ts";
/** A ledger refusal where none is possible (§8): a bug, thrown, never an outcome. */
export { LedgerInvariantError } from "./reservation-table.ts";
/** Extension beyond §1: a reservation's tag, carried in its id (`ReserveOptions`). */
export { reservationTagOf, MAX_RESERVATION_TAG_LENGTH } from "./reservation-table.ts";
export { DemandLimitError } from "./demand-board.ts";
export type { BoundMetrics } from "./bound-metrics.ts";
export type { LivenessCounters, PartitionEvent, UnresponsiveReason } from "./liveness.ts";
export type { RejectReason, ChannelName, FrameRejected } from "./rejection.ts";
export { REJECT_REASONS } from "./rejection.ts";
export type { ValueTooLarge, ReplicationMetrics } from "./replication/core.ts";
export type { ReplicationDriverMetrics } from "./replication/driver.ts";
/** Longest id string the node accepts on the wire or in its own calls (§4.3). */
export { MAX_ID_LENGTH } from "./wire-schema.ts";
export type { Demand } from "@heddle/policy";

// ---- keeper and advisory claims on channel 5 (claims.md §3–4) ----
/** The node's claims surface, its answers, limits and config. */
export type { GossipClaims, KeeperAnswer, AdvisoryAnswer, ClaimsGossipConfig, ClaimsGossipCounters, GossipMode } from "./claims-gossip.ts";
export { CLAIMS_GOSSIP_DEFAULTS, ClaimsClosedError, ClaimsLimitError, ClaimsPersistError, resolveClaimsGossipConfig } from "./claims-gossip.ts";

// ---- durability (§9) ----
export type { HeddleStore, StoreTx, PatchRow, PersistedState, BootResult, ReservationRow, ReservationId } from "./store.ts";
export { StoreMismatchError, StoreStateError } from "./store.ts";
export { sqliteStore, StoreCorruptError, StoreLockedError } from "./sqlite-store.ts";
export { memoryStore } from "./memory-store.ts";
export type { MemoryStoreOptions } from "./memory-store.ts";

// ---- describing a tree (§13.3) ----
export { group, lane, lowerTopology, prepareAndActivate, edgeId, TopologyError } from "./topology-builder.ts";
export type { TopologyNode, WeightSpec } from "./topology-builder.ts";

// ---- the transport a node runs on, re-exported from @heddle/seam so an embedder needs one import ----
export type { Seam, PeerId, Timers, Watch, EventStream, LinkFaults, Libp2pSeam, Libp2pSeamOptions, RosterEntry } from "@heddle/seam";
export { MemoryNetwork, libp2pSeam, loadOrCreatePeerKey, peerIdOf, generatePeerKey, freeListenPort, realTimers, seededRandom, muxSeam, ChannelTag, WatchCell, EventChannel } from "@heddle/seam";
/** FNV-1a-64 as node.md §4.1 defines it (the genesis digest), from `@heddle/ledger`. */
export { fnv1a64 } from "@heddle/ledger";
