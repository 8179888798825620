import { compareCodeUnits, idProblem } from "./claim-key.ts";
import { wholeMs } from "./whole-ms.ts";

/**
 * How the keeper of a part is chosen (claims.md §3): `follows-you` — the live claim
 * with the latest `activeAt` (the machine the person is at); `stays-put` — the live
 * claim with the latest `takenAt` (taken on purpose), else the oldest live claim.
 */
export type KeeperRule = "follows-you" | "stays-put";

/**
 * One peer's claim on a part, written only by that peer. Times are the writer's own
 * clock in milliseconds: the defaults assume clocks within a minute of each other.
 */
export interface KeeperClaim {
  readonly part: string;
  readonly peer: string;
  /** When the peer first wrote this claim (unchanged by renewals; a claim reopened after a close starts again). */
  readonly claimedAt: number;
  /** The last renewal. */
  readonly renewedAt: number;
  /** When the person was last at this peer. */
  readonly activeAt: number;
  /** When the part was taken here on purpose ("make invoices here"). */
  readonly takenAt?: number;
  /** When the peer closed its claim (quit, suspended): a closed claim holds nothing. */
  readonly closedAt?: number;
  /** How far the peer wrote its records, as it last said. */
  readonly wroteUpTo?: number;
}

/** The timings of keeper mode, in milliseconds. */
export interface KeeperTimings {
  /** How often a running peer renews (default 60 s). */
  readonly renewEveryMs: number;
  /** How long a claim is alive after its last renewal (default 5 min). */
  readonly aliveMs: number;
  /** How long a peer must keep a part before acting on it (default 120 s; longer than the replication delay). */
  readonly settlingMs: number;
  /** How long a lapsed, unclosed claim on a stays-put part still holds it (default 24 h). */
  readonly unclosedMs: number;
  /** How recently every other claimant must have been heard from, for what must never happen twice (default 120 s). */
  readonly othersHeardMs: number;
}

/** The spec's defaults (claims.md §3): renew 60 s, ALIVE 5 min, SETTLING 120 s, UNCLOSED 24 h, heard-from 120 s. */
export const KEEPER_DEFAULTS: KeeperTimings = {
  renewEveryMs: 60_000,
  aliveMs: 5 * 60_000,
  settlingMs: 120_000,
  unclosedMs: 24 * 60 * 60_000,
  othersHeardMs: 120_000,
};

/** Whether a claim is alive at `now`: not closed, and within `aliveMs` of its last renewal. */
export function keeperClaimAlive(claim: KeeperClaim, now: number, timings: KeeperTimings = KEEPER_DEFAULTS): boolean {
  return claim.closedAt === undefined && now < claim.renewedAt + timings.aliveMs;
}

/**
 * Whether a claim holds its part at `now` under `rule`: alive; for a stays-put part
 * also lapsed but never closed, within `unclosedMs` of its last renewal (a machine
 * whose sync stopped may still be numbering).
 */
export function keeperClaimHolds(
  claim: KeeperClaim,
  rule: KeeperRule,
  now: number,
  timings: KeeperTimings = KEEPER_DEFAULTS,
): boolean {
  if (claim.closedAt !== undefined) return false;
  if (now < claim.renewedAt + timings.aliveMs) return true;
  return rule === "stays-put" && now < claim.renewedAt + timings.unclosedMs;
}

function laterWins(a: number, b: number): number {
  return b - a; // descending: the larger time first
}

/**
 * The keeper of `part` among `claims` at `now`, by the part's rule, or `undefined`
 * when no claim holds it. Claims on other parts are ignored. Ties go to the smaller
 * peer id. A pure function of the set of claims: every peer holding the same claims
 * computes the same keeper, whatever order they arrived in.
 */
export function chooseKeeper(
  claims: Iterable<KeeperClaim>,
  part: string,
  rule: KeeperRule,
  now: number,
  timings: KeeperTimings = KEEPER_DEFAULTS,
): KeeperClaim | undefined {
  const holding = [...claims].filter((c) => c.part === part && keeperClaimHolds(c, rule, now, timings));
  // No claim holding: every branch below sorts an empty list, and its [0] is undefined.
  const byPeer = (a: KeeperClaim, b: KeeperClaim): number => compareCodeUnits(a.peer, b.peer);
  if (rule === "follows-you") {
    return holding.sort((a, b) => laterWins(a.activeAt, b.activeAt) || byPeer(a, b))[0];
  }
  const taken = holding.filter((c) => c.takenAt !== undefined);
  if (taken.length > 0) {
    return taken.sort((a, b) => laterWins(a.takenAt ?? 0, b.takenAt ?? 0) || byPeer(a, b))[0];
  }
  return holding.sort((a, b) => a.claimedAt - b.claimedAt || byPeer(a, b))[0];
}

/** What a renewal says besides "still here" (claims.md §3 `renew`). */
export interface KeeperRenewal {
  /** When the person was last at this peer; left out, the previous `activeAt` stands (a new claim: `now`). */
  readonly active?: number;
  /** Take the part on purpose, now. */
  readonly take?: boolean;
  /** How far this peer has written its records. */
  readonly wroteUpTo?: number;
}

/**
 * `previous` renewed at `now` (or a new claim when there is none). A claim that had
 * been closed is reopened as a new claim: its `claimedAt` starts again, while a
 * `takenAt` (the person's choice of this machine) is kept.
 */
export function renewKeeperClaim(
  previous: KeeperClaim | undefined,
  part: string,
  peer: string,
  now: number,
  renewal: KeeperRenewal = {},
): KeeperClaim {
  for (const [v, what] of [
    [part, "part"],
    [peer, "peer"],
  ] as const) {
    const problem = idProblem(v, what);
    if (problem !== undefined) throw new RangeError(problem);
  }
  if (previous !== undefined && (previous.part !== part || previous.peer !== peer)) {
    throw new RangeError("a renewal continues the same peer's claim on the same part");
  }
  now = wholeMs(now, "now");
  if (renewal.active !== undefined) renewal = { ...renewal, active: wholeMs(renewal.active, "active") };
  if (renewal.wroteUpTo !== undefined) renewal = { ...renewal, wroteUpTo: wholeMs(renewal.wroteUpTo, "wroteUpTo") };
  const reopened = previous === undefined || previous.closedAt !== undefined;
  const claimedAt = reopened ? now : previous.claimedAt;
  const activeAt = renewal.active ?? (reopened ? now : previous.activeAt);
  const takenAt = renewal.take === true ? now : previous?.takenAt;
  const wroteUpTo = renewal.wroteUpTo ?? previous?.wroteUpTo;
  return {
    part,
    peer,
    claimedAt,
    renewedAt: Math.max(now, claimedAt),
    activeAt,
    ...(takenAt !== undefined ? { takenAt } : {}),
    ...(wroteUpTo !== undefined ? { wroteUpTo } : {}),
  };
}

/**
 * `claim` closed at `now`: it holds nothing from now on, and says how far the peer
 * wrote its records (`wroteUpTo`), so the others know everything it did before it stopped.
 */
export function closeKeeperClaim(claim: KeeperClaim, now: number, wroteUpTo?: number): KeeperClaim {
  now = wholeMs(now, "now");
  const upTo = wroteUpTo === undefined ? claim.wroteUpTo : wholeMs(wroteUpTo, "wroteUpTo");
  const at = Math.max(now, claim.renewedAt);
  return {
    part: claim.part,
    peer: claim.peer,
    claimedAt: claim.claimedAt,
    renewedAt: at,
    activeAt: claim.activeAt,
    ...(claim.takenAt !== undefined ? { takenAt: claim.takenAt } : {}),
    closedAt: at,
    ...(upTo !== undefined ? { wroteUpTo: upTo } : {}),
  };
}
