// The claims part of a node's config (node.md §3.2 channel 5, claims.md §3–4): its limits, timings, defaults and
// checks. Kept apart from the gossip shell so that a config loader (the daemon's, the CLI's) can check a config
// without loading the node, its libp2p seam and its replication engine (about a second of CPU at start-up).
import { KEEPER_DEFAULTS, MAX_SLOT_CLAIMS } from "@heddle/claims";
import type { KeeperRule, KeeperTimings } from "@heddle/claims";

/** Limits and timings of keeper and advisory claims on a node (every bound named, every default stated). */
export interface ClaimsGossipConfig {
  /** The keeper parts and their rules, identical on every peer (claims.md §3: a part's rule is fixed). */
  readonly keeperRules: Readonly<Record<string, KeeperRule>>;
  /** Renewal, ALIVE, SETTLING, UNCLOSED and heard-from windows (claims.md §3 defaults). */
  readonly keeperTimings: KeeperTimings;
  /** Every this often each own slot is re-sent to every peer, so a healed partition converges; default 30 s. */
  readonly antiEntropyMs: number;
  /** How often parts are observed (settling) and due renewals and retries are made; default 1 s. */
  readonly tickMs: number;
  /** The lease of an advisory claim when the caller names none; default 5 min. */
  readonly advisoryTtlMs: number;
  /** Most claims one slot (and so one frame) may carry, inbound or own; default and maximum 4096. */
  readonly maxClaimsPerSlot: number;
  /** Most (peer, mode) re-sends queued after backpressure; past it they wait for anti-entropy; default 1024. */
  readonly maxPendingSends: number;
}

/** The defaults of {@link ClaimsGossipConfig}: no keeper parts, claims.md §3 timings, 30 s anti-entropy. */
export const CLAIMS_GOSSIP_DEFAULTS: ClaimsGossipConfig = Object.freeze({
  keeperRules: Object.freeze({}),
  keeperTimings: KEEPER_DEFAULTS,
  antiEntropyMs: 30_000,
  tickMs: 1_000,
  advisoryTtlMs: 5 * 60_000,
  maxClaimsPerSlot: MAX_SLOT_CLAIMS,
  maxPendingSends: 1_024,
});

/** Fills in and checks a claims config; `RangeError` names the bad field (`claims.<field>`). */
export function resolveClaimsGossipConfig(c: Partial<Omit<ClaimsGossipConfig, "keeperTimings">> & { keeperTimings?: Partial<KeeperTimings> } | undefined): ClaimsGossipConfig {
  const d = CLAIMS_GOSSIP_DEFAULTS;
  if (c !== undefined && (typeof c !== "object" || c === null)) throw new RangeError("HeddleConfig.claims must be an object");
  const int = (v: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) throw new RangeError(`HeddleConfig.claims.${field} must be an integer in ${min} … ${max}, got ${String(v)}`);
    return v;
  };
  const rules = c?.keeperRules ?? d.keeperRules;
  if (typeof rules !== "object" || rules === null) throw new RangeError("HeddleConfig.claims.keeperRules must be an object of part → rule");
  for (const [part, rule] of Object.entries(rules)) {
    if (rule !== "follows-you" && rule !== "stays-put") throw new RangeError(`HeddleConfig.claims.keeperRules.${part} must be "follows-you" or "stays-put", got ${JSON.stringify(rule)}`);
  }
  const t = { ...d.keeperTimings, ...c?.keeperTimings };
  for (const k of Object.keys(d.keeperTimings) as (keyof KeeperTimings)[]) int(t[k], `keeperTimings.${k}`, 1);
  if (!(t.renewEveryMs < t.aliveMs)) throw new RangeError(`HeddleConfig.claims.keeperTimings.renewEveryMs (${t.renewEveryMs}) must be < aliveMs (${t.aliveMs})`);
  const r: ClaimsGossipConfig = {
    keeperRules: Object.freeze({ ...rules }),
    keeperTimings: Object.freeze(t),
    antiEntropyMs: int(c?.antiEntropyMs ?? d.antiEntropyMs, "antiEntropyMs", 1),
    tickMs: int(c?.tickMs ?? d.tickMs, "tickMs", 1),
    advisoryTtlMs: int(c?.advisoryTtlMs ?? d.advisoryTtlMs, "advisoryTtlMs", 1),
    maxClaimsPerSlot: int(c?.maxClaimsPerSlot ?? d.maxClaimsPerSlot, "maxClaimsPerSlot", 1, MAX_SLOT_CLAIMS),
    maxPendingSends: int(c?.maxPendingSends ?? d.maxPendingSends, "maxPendingSends", 1),
  };
  if (r.antiEntropyMs >= t.othersHeardMs) {
    throw new RangeError(`HeddleConfig.claims.antiEntropyMs (${r.antiEntropyMs}) must be < keeperTimings.othersHeardMs (${t.othersHeardMs}): each peer is heard from at least once per anti-entropy round`);
  }
  // claims.md §3 Settling: SETTLING "must stay longer than the replication delay". A lost broadcast is repaired by
  // the next anti-entropy round, so a keeper that acts sooner than one round may not yet hold a claim that outranks it.
  if (!(t.settlingMs > r.antiEntropyMs)) {
    throw new RangeError(`HeddleConfig.claims.keeperTimings.settlingMs (${t.settlingMs}) must be > antiEntropyMs (${r.antiEntropyMs}): settling must outlast the replication delay, and a lost claim arrives only with the next anti-entropy round (claims.md §3); raise settlingMs or lower antiEntropyMs`);
  }
  // A due renewal is made at the first tick at or after renewedAt + renewEveryMs: it must come before the claim lapses
  // at renewedAt + aliveMs, or a running keeper's own claim lapses between two ticks and another peer takes the part.
  if (!(r.tickMs < t.aliveMs - t.renewEveryMs)) {
    throw new RangeError(`HeddleConfig.claims.tickMs (${r.tickMs}) must be < keeperTimings.aliveMs − renewEveryMs (${t.aliveMs} − ${t.renewEveryMs}): a renewal made on the next tick must land before the claim lapses; lower tickMs or widen aliveMs − renewEveryMs`);
  }
  return Object.freeze(r);
}
