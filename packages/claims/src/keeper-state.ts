import { idProblem } from "./claim-key.ts";
import { chooseKeeper, closeKeeperClaim, KEEPER_DEFAULTS, renewKeeperClaim } from "./keeper-claim.ts";
import type { KeeperClaim, KeeperRenewal, KeeperRule, KeeperTimings } from "./keeper-claim.ts";
import { keeperClaimsOn, putKeeperSlot, writeKeeperClaim } from "./keeper-slots.ts";
import type { KeeperSlot, KeeperSlots } from "./keeper-slots.ts";
import { emptySlots } from "./peer-slots.ts";

/** Since when one keeper has kept a part, as this peer has seen it (its own clock). */
export interface KeptSince {
  readonly keeper: string | undefined;
  readonly since: number;
  /**
   * When this peer last looked (its own clock). A peer that did not look for longer than `aliveMs` (suspended,
   * stalled) cannot vouch that the keeper held the part all along: the next look starts `since` again.
   */
  readonly seenAt: number;
}

/**
 * One peer's keeper-mode state (claims.md §3), a pure value: the replicated slots as
 * it has them, since when it has seen each part kept by whom (for settling), and when
 * it last heard each other peer (for heard-from). Every change returns a new state.
 */
export interface KeeperState {
  readonly self: string;
  /** This peer's boot counter: its own slot's versions start at `epoch × 2^32`. */
  readonly epoch: number;
  readonly rules: ReadonlyMap<string, KeeperRule>;
  readonly timings: KeeperTimings;
  readonly slots: KeeperSlots;
  readonly kept: ReadonlyMap<string, KeptSince>;
  /** When a copy of each other peer's slot last arrived from it (this peer's clock). */
  readonly heard: ReadonlyMap<string, number>;
  /**
   * Since when this peer has heard each other peer without a gap longer than `othersHeardMs` (its own clock): the
   * first copy after such a gap — a healed split, a peer coming back — starts it again.
   */
  readonly heardSince: ReadonlyMap<string, number>;
}

/** What a peer knows about a part at a moment: who keeps it, whether that is settled, and whether it can be sure. */
export interface KeeperView {
  readonly part: string;
  readonly rule: KeeperRule;
  /** The peer whose claim keeps the part now, or `undefined` when no claim holds it. */
  readonly keeper: string | undefined;
  /** The keeper's claim. */
  readonly claim: KeeperClaim | undefined;
  /** Since when this peer has seen the current keeper keep the part continuously. */
  readonly keeperSince: number | undefined;
  /** The keeper has kept the part continuously for `settlingMs`. */
  readonly settled: boolean;
  /** This peer is the keeper. */
  readonly keeps: boolean;
  /** This peer is the keeper and it is settled: it may act on the part. */
  readonly mayAct: boolean;
  /**
   * Other peers with an unclosed claim on the part, renewed within `UNCLOSED` (whatever the rule, even lapsed past
   * ALIVE), not heard from within `othersHeardMs` (peer order).
   */
  readonly unheard: readonly string[];
  /**
   * `mayAct`, every other claimant heard from within `othersHeardMs`, and each of them heard without a gap for
   * `settlingMs` (so it has had the time settling gives to learn this peer's claim): safe for what must never happen
   * twice. Otherwise it cannot be sure.
   */
  readonly sure: boolean;
  /** Closed claims on the part and how far each peer said it wrote its records (peer order). */
  readonly closed: readonly { readonly peer: string; readonly closedAt: number; readonly wroteUpTo?: number }[];
}

/** A new keeper state for peer `self` in boot `epoch`, with a rule per part and optional timings. */
export function keeperState(init: {
  self: string;
  epoch: number;
  rules: Readonly<Record<string, KeeperRule>>;
  timings?: Partial<KeeperTimings>;
}): KeeperState {
  const problem = idProblem(init.self, "self");
  if (problem !== undefined) throw new RangeError(problem);
  const timings = { ...KEEPER_DEFAULTS, ...init.timings };
  for (const [name, v] of Object.entries(timings)) {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a safe integer ≥ 0`);
  }
  const rules = new Map<string, KeeperRule>();
  for (const [part, rule] of Object.entries(init.rules)) {
    if (rule !== "follows-you" && rule !== "stays-put") throw new RangeError(`unknown rule ${String(rule)} for ${part}`);
    rules.set(part, rule);
  }
  return { self: init.self, epoch: init.epoch, rules, timings, slots: emptySlots(), kept: new Map(), heard: new Map(), heardSince: new Map() };
}

function ruleOf(state: KeeperState, part: string): KeeperRule {
  const rule = state.rules.get(part);
  if (rule === undefined) throw new RangeError(`no rule for part ${JSON.stringify(part)}`);
  return rule;
}

/**
 * Whether the peer behind `claim` may still be acting on its part at `now`, as far as this peer can tell: not
 * closed, and renewed within `max(aliveMs, unclosedMs)` — for either rule, unlike `keeperClaimHolds`.
 */
function mayStillAct(claim: KeeperClaim, now: number, t: KeeperTimings): boolean {
  return claim.closedAt === undefined && now < claim.renewedAt + Math.max(t.aliveMs, t.unclosedMs);
}

/** Records who keeps `part` at `now` and returns the view; the continuity of `since` is what settling measures. */
function observe(state: KeeperState, part: string, now: number): { state: KeeperState; view: KeeperView } {
  const rule = ruleOf(state, part);
  const t = state.timings;
  const claims = keeperClaimsOn(state.slots, part);
  const claim = chooseKeeper(claims, part, rule, now, t);
  const keeper = claim?.peer;
  const previous = state.kept.get(part);
  // Settling counts only time this peer watched (claims.md §3 "continuously"): the same keeper as at the last look,
  // and that look recent enough that the keeper's claim cannot have lapsed and come back unseen in between (a claim
  // lives at most `aliveMs` after the renewal the last look saw). A longer gap — a suspended machine waking with a
  // stale copy of the slots — restarts settling, whoever the stale copy says keeps the part.
  const continuous = previous !== undefined && previous.keeper === keeper && now - previous.seenAt <= t.aliveMs;
  const since = continuous ? previous.since : now;
  const kept = new Map(state.kept);
  kept.set(part, { keeper, since, seenAt: now });
  const next: KeeperState = { ...state, kept };
  const settled = keeper !== undefined && now - since >= t.settlingMs;
  const keeps = keeper === state.self;
  // Heard-from (claims.md §3) waits for "every other peer with a claim on the part", whatever the rule: a claim
  // that lapsed here without closing may belong to a machine that only lost the link and still keeps the part in its
  // own view, so its keeper rule choosing someone else here is no reason to stop waiting for it. Only a close (the
  // peer said it stopped) or UNCLOSED past the last renewal (§3's horizon for a silent, unclosed machine) ends the
  // wait; without that horizon one claimant that crashed without closing would leave `sure` false for good.
  const unheard = claims
    .filter((c) => c.peer !== state.self && mayStillAct(c, now, t))
    .filter((c) => {
      const at = state.heard.get(c.peer);
      return at === undefined || now - at > t.othersHeardMs;
    })
    .map((c) => c.peer); // in peer order, as keeperClaimsOn returns them
  // Settling (§3) gives the others' claims time to arrive before a keeper acts, and gives the others time to learn
  // its claim. A keeper that settled while cut off from a claimant did so without that: when the link heals, each
  // side may still be keeper in its own view until the other's next renewal arrives, and hearing one copy makes
  // both "heard from". So `sure` also waits until every other claimant has been heard for SETTLING without a gap.
  const reacquainting = claims.some((c) => {
    if (c.peer === state.self || !mayStillAct(c, now, t)) return false;
    const since = state.heardSince.get(c.peer);
    return since === undefined || now - since < t.settlingMs;
  });
  const closed = claims
    .filter((c) => c.closedAt !== undefined)
    .map((c) => ({ peer: c.peer, closedAt: c.closedAt ?? 0, ...(c.wroteUpTo !== undefined ? { wroteUpTo: c.wroteUpTo } : {}) }));
  const mayAct = keeps && settled;
  return {
    state: next,
    view: {
      part,
      rule,
      keeper,
      claim,
      keeperSince: keeper === undefined ? undefined : since,
      settled,
      keeps,
      mayAct,
      unheard,
      sure: mayAct && unheard.length === 0 && !reacquainting,
      closed,
    },
  };
}

/** Who keeps `part` at `now`, as this peer sees it, without claiming it (claims.md §3 `look`). */
export function lookKeeper(state: KeeperState, part: string, now: number): { state: KeeperState; view: KeeperView } {
  return observe(state, part, now);
}

function writeOwn(state: KeeperState, claim: KeeperClaim, now: number): { state: KeeperState; view: KeeperView; slot: KeeperSlot } {
  // Look before writing: if this peer's own claim lapsed since the last look (it was suspended past ALIVE), the
  // renewal below must not bridge the lapse — the look sees someone else (or nobody) keep the part, so `since`
  // starts again at the write. Without it a waking peer's first renewal made it keeper "since" before it slept.
  state = observe(state, claim.part, now).state;
  const slot = writeKeeperClaim(state.slots.get(state.self), claim, state.epoch);
  const { slots } = putKeeperSlot(state.slots, slot);
  const { state: next, view } = observe({ ...state, slots }, claim.part, now);
  return { state: next, view, slot };
}

/**
 * This peer's claim on `part` renewed at `now` (made the first time): `active` says
 * when the person was last here, `take` takes the part on purpose, `wroteUpTo` how far
 * this peer wrote its records. Returns who keeps it now and the own slot to broadcast.
 */
export function renewKeeper(
  state: KeeperState,
  part: string,
  now: number,
  renewal: KeeperRenewal = {},
): { state: KeeperState; view: KeeperView; slot: KeeperSlot } {
  ruleOf(state, part);
  const previous = state.slots.get(state.self)?.claims.find((c) => c.part === part);
  return writeOwn(state, renewKeeperClaim(previous, part, state.self, now, renewal), now);
}

/**
 * This peer's claim on `part` closed at `now` (it quits or is suspended), saying how
 * far it wrote its records. It keeps nothing from now on; returns the own slot to broadcast.
 */
export function closeKeeper(
  state: KeeperState,
  part: string,
  now: number,
  wroteUpTo?: number,
): { state: KeeperState; view: KeeperView; slot: KeeperSlot } {
  ruleOf(state, part);
  const previous = state.slots.get(state.self)?.claims.find((c) => c.part === part);
  const open = previous ?? renewKeeperClaim(undefined, part, state.self, now);
  return writeOwn(state, closeKeeperClaim(open, now, wroteUpTo), now);
}

/**
 * A copy of `slot` received from `from` at `now` (this peer's clock). Only the author
 * may send its slot, and a peer never takes its own slot from the network; anything
 * else is rejected (`accepted: false`, with the reason) and leaves the state as it was.
 * A stale or repeated copy changes no slot but counts as hearing from its author.
 */
export function receiveKeeperSlot(
  state: KeeperState,
  from: string,
  slot: KeeperSlot,
  now: number,
): { state: KeeperState; accepted: boolean; why?: "not-author" | "own-slot" } {
  if (slot.peer !== from) return { state, accepted: false, why: "not-author" };
  if (from === state.self) return { state, accepted: false, why: "own-slot" };
  const { slots } = putKeeperSlot(state.slots, slot);
  const last = state.heard.get(from);
  const heard = new Map(state.heard);
  heard.set(from, Math.max(now, last ?? now));
  const heardSince = new Map(state.heardSince);
  if (last === undefined || now - last > state.timings.othersHeardMs) heardSince.set(from, now);
  let next: KeeperState = { ...state, slots, heard, heardSince };
  for (const c of slot.claims) if (next.rules.has(c.part)) next = observe(next, c.part, now).state;
  return { state: next, accepted: true };
}
