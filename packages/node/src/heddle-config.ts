import { validatePolicyConfig, type PolicyConfig } from "@heddle/policy";
import { resolveClaimsGossipConfig, type ClaimsGossipConfig } from "./claims-gossip-config.ts";
import { DEMAND_BOARD_DEFAULTS } from "./demand-board.ts";
import type { KeeperTimings } from "@heddle/claims";
import { MIN_FRAME_BYTES, REPLICATION_DEFAULTS, type ReplicationConfig } from "./replication/config.ts";
import { HEARTBEAT_DEFAULTS, type HeartbeatConfig } from "./liveness.ts";
import type { HeddleStore } from "./store.ts";
import type { Timers } from "@heddle/seam";

const INT64_MAX = (1n << 63n) - 1n;

/**
 * Everything a node is configured with (node.md §12). `policy`, `maxHoldingsPerPeer`, `timers`,
 * `random` and `store` are required; every other field has the spec's default
 * ({@link HEDDLE_CONFIG_DEFAULTS}).
 */
export interface HeddleConfig {
  readonly policy: PolicyConfig;
  /** `E` of node.md §11: the most any one peer is expected to hold at a parent; `bigint > 0`. */
  readonly maxHoldingsPerPeer: bigint;
  readonly timers: Timers;
  readonly random: () => number;
  readonly store: HeddleStore;
  readonly demandTtlMs?: number;
  readonly antiEntropyIntervalMs?: number;
  readonly resendRetryMs?: number;
  readonly fullStateRetryMs?: number;
  readonly fullStateRetryLimit?: number;
  readonly peerEvictionMs?: number;
  readonly heartbeat?: HeartbeatConfig;
  readonly maxFrameBytes?: number;
  readonly maxPendingDeltas?: number;
  readonly maxTrackedSeqs?: number;
  readonly maxResendSpan?: number;
  readonly maxDemandEntries?: number;
  readonly maxGrantsPerSchedule?: number;
  readonly compactAfterPatches?: number;
  /**
   * Extension (node.md §9.3): the store is also compacted once the patch rows since its snapshot hold more bytes than
   * this or than the snapshot itself, whichever is larger — so a restart decodes at most about twice the state's
   * size, however long the history. A row count alone does not bound that: an own patch re-publishes its witness
   * (ledger.md §7.1, e.g. every mint the peer holds), so rows grow with history. Default 1 MiB.
   */
  readonly compactAfterPatchBytes?: number;
  readonly rejectLogIntervalMs?: number;
  /** Extension (node.md §5.3 ⟨1.1⟩): acks to one sender are coalesced over this window; default 10. */
  readonly ackDelayMs?: number;
  /** Extension (§5.3 ⟨1.1⟩): a gap is asked for only after it stayed open this long; default 5. */
  readonly reorderGraceMs?: number;
  /** Extension (§5.1 ⟨1.1⟩): local patches within this window leave as one delta; default 0 (one turn). */
  readonly deltaBatchMs?: number;
  /**
   * Extension (claims.md §3–4 on channel 5): keeper parts and their rules, keeper timings, anti-entropy and the
   * bounds of keeper and advisory claims; default: no keeper parts, claims.md's timings.
   */
  readonly claims?: Partial<Omit<ClaimsGossipConfig, "keeperTimings">> & { readonly keeperTimings?: Partial<KeeperTimings> };
}

/** A {@link HeddleConfig} with every default filled in. */
export type ResolvedHeddleConfig = Required<Omit<HeddleConfig, "claims">> & { readonly claims: ClaimsGossipConfig };

/** The defaults of node.md §12 for every optional field. */
export const HEDDLE_CONFIG_DEFAULTS = Object.freeze({
  demandTtlMs: DEMAND_BOARD_DEFAULTS.demandTtlMs,
  antiEntropyIntervalMs: REPLICATION_DEFAULTS.antiEntropyIntervalMs,
  resendRetryMs: REPLICATION_DEFAULTS.resendRetryMs,
  fullStateRetryMs: REPLICATION_DEFAULTS.fullStateRetryMs,
  fullStateRetryLimit: REPLICATION_DEFAULTS.fullStateRetryLimit,
  peerEvictionMs: REPLICATION_DEFAULTS.peerEvictionMs,
  heartbeat: HEARTBEAT_DEFAULTS,
  maxFrameBytes: REPLICATION_DEFAULTS.maxFrameBytes,
  maxPendingDeltas: REPLICATION_DEFAULTS.maxPendingDeltas,
  maxTrackedSeqs: REPLICATION_DEFAULTS.maxTrackedSeqs,
  maxResendSpan: REPLICATION_DEFAULTS.maxResendSpan,
  maxDemandEntries: DEMAND_BOARD_DEFAULTS.maxDemandEntries,
  maxGrantsPerSchedule: 100_000,
  compactAfterPatches: 10_000,
  compactAfterPatchBytes: 1_048_576,
  rejectLogIntervalMs: 60_000,
  ackDelayMs: REPLICATION_DEFAULTS.ackDelayMs,
  reorderGraceMs: REPLICATION_DEFAULTS.reorderGraceMs,
  deltaBatchMs: REPLICATION_DEFAULTS.deltaBatchMs,
});

function nonNegativeInt(v: unknown, field: string): number {
  return positiveInt(v, field, 0);
}

function positiveInt(v: unknown, field: string, min = 1): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) {
    throw new RangeError(`HeddleConfig.${field} must be an integer ≥ ${min}, got ${String(v)}`);
  }
  return v;
}

/**
 * Validates `c` and fills in the defaults (node.md §12). Throws `RangeError` naming the first bad
 * field (`TypeError` never: a wrong type is also reported as a `RangeError` naming the field, so one
 * `catch` covers every configuration mistake).
 */
export function resolveHeddleConfig(c: HeddleConfig): ResolvedHeddleConfig {
  if (typeof c !== "object" || c === null) throw new RangeError("HeddleConfig must be an object");
  try {
    validatePolicyConfig(c.policy);
  } catch (e) {
    throw new RangeError(`HeddleConfig.policy: ${(e as Error).message}`);
  }
  if (typeof c.maxHoldingsPerPeer !== "bigint" || c.maxHoldingsPerPeer <= 0n || c.maxHoldingsPerPeer > INT64_MAX) {
    throw new RangeError(`HeddleConfig.maxHoldingsPerPeer must be a bigint in 1 … 2^63 − 1, got ${String(c.maxHoldingsPerPeer)}`);
  }
  const t = c.timers as Partial<Timers> | undefined;
  if (typeof t !== "object" || t === null || typeof t.now !== "function" || typeof t.set !== "function" || typeof t.clear !== "function") {
    throw new RangeError("HeddleConfig.timers must be a Timers (now, set, clear)");
  }
  if (typeof c.random !== "function") throw new RangeError("HeddleConfig.random must be a function returning [0, 1)");
  const s = c.store as Partial<HeddleStore> | undefined;
  if (typeof s !== "object" || s === null || typeof s.boot !== "function" || typeof s.commit !== "function" || typeof s.compact !== "function" || typeof s.close !== "function") {
    throw new RangeError("HeddleConfig.store must be a HeddleStore (boot, commit, compact, close)");
  }
  const d = HEDDLE_CONFIG_DEFAULTS;
  const hb = c.heartbeat ?? d.heartbeat;
  if (typeof hb !== "object" || hb === null) throw new RangeError("HeddleConfig.heartbeat must be an object");
  positiveInt(hb.intervalMs, "heartbeat.intervalMs");
  positiveInt(hb.timeoutMs, "heartbeat.timeoutMs");
  positiveInt(hb.reconnectWindowMs, "heartbeat.reconnectWindowMs");
  if (!(hb.intervalMs < hb.timeoutMs)) throw new RangeError(`HeddleConfig.heartbeat.intervalMs (${hb.intervalMs}) must be < heartbeat.timeoutMs (${hb.timeoutMs})`);
  const r: ResolvedHeddleConfig = {
    policy: c.policy,
    maxHoldingsPerPeer: c.maxHoldingsPerPeer,
    timers: c.timers,
    random: c.random,
    store: c.store,
    demandTtlMs: positiveInt(c.demandTtlMs ?? d.demandTtlMs, "demandTtlMs"),
    antiEntropyIntervalMs: positiveInt(c.antiEntropyIntervalMs ?? d.antiEntropyIntervalMs, "antiEntropyIntervalMs"),
    resendRetryMs: positiveInt(c.resendRetryMs ?? d.resendRetryMs, "resendRetryMs"),
    fullStateRetryMs: positiveInt(c.fullStateRetryMs ?? d.fullStateRetryMs, "fullStateRetryMs"),
    fullStateRetryLimit: positiveInt(c.fullStateRetryLimit ?? d.fullStateRetryLimit, "fullStateRetryLimit", 0),
    peerEvictionMs: positiveInt(c.peerEvictionMs ?? d.peerEvictionMs, "peerEvictionMs"),
    heartbeat: hb,
    maxFrameBytes: positiveInt(c.maxFrameBytes ?? d.maxFrameBytes, "maxFrameBytes", MIN_FRAME_BYTES),
    maxPendingDeltas: positiveInt(c.maxPendingDeltas ?? d.maxPendingDeltas, "maxPendingDeltas"),
    maxTrackedSeqs: positiveInt(c.maxTrackedSeqs ?? d.maxTrackedSeqs, "maxTrackedSeqs"),
    maxResendSpan: positiveInt(c.maxResendSpan ?? d.maxResendSpan, "maxResendSpan"),
    maxDemandEntries: positiveInt(c.maxDemandEntries ?? d.maxDemandEntries, "maxDemandEntries"),
    maxGrantsPerSchedule: positiveInt(c.maxGrantsPerSchedule ?? d.maxGrantsPerSchedule, "maxGrantsPerSchedule"),
    compactAfterPatches: positiveInt(c.compactAfterPatches ?? d.compactAfterPatches, "compactAfterPatches"),
    compactAfterPatchBytes: positiveInt(c.compactAfterPatchBytes ?? d.compactAfterPatchBytes, "compactAfterPatchBytes"),
    rejectLogIntervalMs: positiveInt(c.rejectLogIntervalMs ?? d.rejectLogIntervalMs, "rejectLogIntervalMs"),
    ackDelayMs: nonNegativeInt(c.ackDelayMs ?? d.ackDelayMs, "ackDelayMs"),
    reorderGraceMs: nonNegativeInt(c.reorderGraceMs ?? d.reorderGraceMs, "reorderGraceMs"),
    deltaBatchMs: nonNegativeInt(c.deltaBatchMs ?? d.deltaBatchMs, "deltaBatchMs"),
    claims: resolveClaimsGossipConfig(c.claims),
  };
  return Object.freeze(r);
}

/** The part of a resolved config the replication core takes. */
export function replicationConfigOf(c: ResolvedHeddleConfig): ReplicationConfig {
  return {
    antiEntropyIntervalMs: c.antiEntropyIntervalMs,
    resendRetryMs: c.resendRetryMs,
    fullStateRetryMs: c.fullStateRetryMs,
    fullStateRetryLimit: c.fullStateRetryLimit,
    peerEvictionMs: c.peerEvictionMs,
    maxFrameBytes: c.maxFrameBytes,
    maxPendingDeltas: c.maxPendingDeltas,
    maxTrackedSeqs: c.maxTrackedSeqs,
    maxResendSpan: c.maxResendSpan,
    ackDelayMs: c.ackDelayMs,
    reorderGraceMs: c.reorderGraceMs,
    deltaBatchMs: c.deltaBatchMs,
    antiEntropy: true,
  };
}
