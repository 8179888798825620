import { compareCodeUnits, idProblem } from "./claim-key.ts";
import { MAX_SLOT_CLAIMS, MAX_TTL_MS } from "./limits.ts";
import { joinSlotMaps, putSlot, versionAfter } from "./peer-slots.ts";
import type { PeerSlot, SlotMap } from "./peer-slots.ts";
import { decodeSlotDoc, encodeSlotDoc, slotFail, slotTime } from "./slot-codec.ts";
import { stableHash } from "./stable-hash.ts";
import { wholeMs } from "./whole-ms.ts";

/**
 * One peer's advisory claim on an item (claims.md §4): intent, not exclusion.
 * Times are the claimant's clock in milliseconds.
 */
export interface AdvisoryClaim {
  readonly item: string;
  readonly peer: string;
  readonly claimedAt: number;
  /** The claim holds nothing from this time on, so a dead peer's items return to the pool. */
  readonly expiresAt: number;
}

/** One peer's advisory claims, one per item, sorted by item. */
export type AdvisorySlot = PeerSlot<AdvisoryClaim>;

/** Every peer's advisory slot: the replicated value of advisory mode. */
export type AdvisorySlots = SlotMap<AdvisoryClaim>;

/** The format tag of an advisory slot on the wire (node.md channel 5). */
export const ADVISORY_SLOT_FORMAT = "heddle-advisory/1";

/**
 * The canonical text of an advisory slot: `{"format":"heddle-advisory/1","peer",
 * "version","claims":[[item, claimedAt, expiresAt], …]}` with claims sorted by item.
 */
export function encodeAdvisorySlot(slot: AdvisorySlot): string {
  const rows = [...slot.claims]
    .sort((a, b) => compareCodeUnits(a.item, b.item))
    .map((c) => [c.item, c.claimedAt, c.expiresAt]);
  return encodeSlotDoc(ADVISORY_SLOT_FORMAT, slot.peer, slot.version, rows);
}

/**
 * Reads an advisory slot, throwing `ClaimsDecodeError` on anything but a well-formed
 * one: wrong format or fields, ill-formed ids, items out of order or repeated, more
 * than `MAX_SLOT_CLAIMS` claims, bad times, or an expiry not after the claim.
 */
export function decodeAdvisorySlot(text: string): AdvisorySlot {
  const f = ADVISORY_SLOT_FORMAT;
  const doc = decodeSlotDoc(text, f);
  const claims: AdvisoryClaim[] = [];
  let previous: string | undefined;
  for (const row of doc.rows) {
    if (!Array.isArray(row) || row.length !== 3) slotFail(f, "each claim must be a list of 3 fields");
    const item = row[0];
    const problem = idProblem(item, "item");
    if (problem !== undefined) slotFail(f, problem);
    if (previous !== undefined && !(previous < (item as string))) slotFail(f, "items must be sorted and unique");
    previous = item as string;
    const claimedAt = slotTime(f, row[1], "claimedAt");
    const expiresAt = slotTime(f, row[2], "expiresAt");
    if (expiresAt <= claimedAt) slotFail(f, "expiresAt must be after claimedAt");
    claims.push({ item: item as string, peer: doc.peer, claimedAt, expiresAt });
  }
  return { peer: doc.peer, version: doc.version, claims };
}

/** The join of two advisory slot maps (per peer, the higher version): idempotent, commutative, associative. */
export function joinAdvisorySlots(a: AdvisorySlots, b: AdvisorySlots): AdvisorySlots {
  return joinSlotMaps(a, b, encodeAdvisorySlot);
}

/** `slots` with one copy of a slot joined in; `replaced` is `false` for a stale or repeated copy. */
export function putAdvisorySlot(slots: AdvisorySlots, slot: AdvisorySlot): { slots: AdvisorySlots; replaced: boolean } {
  const { map, replaced } = putSlot(slots, slot, encodeAdvisorySlot);
  return { slots: map, replaced };
}

/**
 * `slot` (this peer's own, or none yet) claiming `item` at `now` for `ttlMs`, under
 * the next version of boot `epoch`. Claiming again what the peer already claims and
 * has not let expire keeps its `claimedAt` (its place in line) and extends the expiry.
 * Expired claims are dropped from the slot. Throws `RangeError` on a bad id or lease,
 * or when the slot would exceed `MAX_SLOT_CLAIMS`.
 */
export function claimAdvisory(
  slot: AdvisorySlot | undefined,
  peer: string,
  epoch: number,
  item: string,
  now: number,
  ttlMs: number,
): AdvisorySlot {
  for (const [v, what] of [
    [peer, "peer"],
    [item, "item"],
  ] as const) {
    const problem = idProblem(v, what);
    if (problem !== undefined) throw new RangeError(problem);
  }
  if (slot !== undefined && slot.peer !== peer) throw new RangeError("a peer writes only its own slot");
  now = wholeMs(now, "now");
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_TTL_MS) throw new RangeError(`ttlMs must be a whole number of ms from 1 to ${MAX_TTL_MS} (MAX_TTL_MS, 100 years)`);
  // an expiry past 2^53 could not be encoded: every peer would refuse the slot
  if (!Number.isSafeInteger(now + ttlMs)) throw new RangeError(`the claim would expire past the largest safe integer (now ${now} + ttlMs ${ttlMs})`);
  const live = (slot?.claims ?? []).filter((c) => c.expiresAt > now);
  const previous = live.find((c) => c.item === item);
  const others = live.filter((c) => c.item !== item);
  if (others.length + 1 > MAX_SLOT_CLAIMS) throw new RangeError(`a slot holds at most ${MAX_SLOT_CLAIMS} claims`);
  const claim: AdvisoryClaim = { item, peer, claimedAt: previous?.claimedAt ?? now, expiresAt: now + ttlMs };
  const claims = [...others, claim].sort((a, b) => compareCodeUnits(a.item, b.item));
  return { peer, version: versionAfter(slot?.version, epoch), claims };
}

/** `slot` without its claim on `item` (work done or abandoned), under the next version of boot `epoch`. */
export function dropAdvisory(slot: AdvisorySlot, epoch: number, item: string): AdvisorySlot {
  return { peer: slot.peer, version: versionAfter(slot.version, epoch), claims: slot.claims.filter((c) => c.item !== item) };
}

function earlier(a: AdvisoryClaim, b: AdvisoryClaim): number {
  return a.claimedAt - b.claimedAt || compareCodeUnits(a.peer, b.peer);
}

/** Every unexpired claim at `now`, grouped by item (item order), each group earliest first by `(claimedAt, peer)`. */
function contested(slots: AdvisorySlots, now: number): Map<string, AdvisoryClaim[]> {
  const byItem = new Map<string, AdvisoryClaim[]>();
  for (const slot of slots.values()) {
    for (const c of slot.claims) {
      if (c.expiresAt <= now) continue;
      const list = byItem.get(c.item);
      if (list === undefined) byItem.set(c.item, [c]);
      else list.push(c);
    }
  }
  const items = [...byItem.keys()].sort(compareCodeUnits);
  return new Map(items.map((i) => [i, (byItem.get(i) ?? []).sort(earlier)]));
}

/**
 * Who holds each item at `now`: the earliest unexpired claimant by `(claimedAt, peer
 * id)`. A function of the joined slots alone, so one merge settles a contest the
 * same way on every peer. Items in code-unit order.
 */
export function advisoryHolders(slots: AdvisorySlots, now: number): ReadonlyMap<string, AdvisoryClaim> {
  const out = new Map<string, AdvisoryClaim>();
  for (const [item, list] of contested(slots, now)) {
    const first = list[0];
    if (first !== undefined) out.set(item, first);
  }
  return out;
}

/** The claim that holds `item` at `now`, or `undefined` when nobody's unexpired claim does. */
export function advisoryHolder(slots: AdvisorySlots, item: string, now: number): AdvisoryClaim | undefined {
  return contested(slots, now).get(item)?.[0];
}

/** A claim that lost its item to an earlier claimant: duplicated work to stop or dissolve. */
export interface AdvisoryDuplicate {
  readonly item: string;
  readonly winner: AdvisoryClaim;
  readonly loser: AdvisoryClaim;
}

/**
 * Every unexpired claim at `now` that lost its item to an earlier claimant, by item
 * then by the loser's place in line. Each peer sees here the work it duplicated.
 */
export function duplicates(slots: AdvisorySlots, now: number): readonly AdvisoryDuplicate[] {
  const out: AdvisoryDuplicate[] = [];
  for (const [item, list] of contested(slots, now)) {
    const [winner, ...losers] = list;
    if (winner === undefined) continue;
    for (const loser of losers) out.push({ item, winner, loser });
  }
  return out;
}

/**
 * `candidates` (duplicates removed) in the order `peer` should try them: by a stable
 * hash of `(peer, item)`, ties by item. Each peer gets its own order, so a fleet
 * looking at the same tied work spreads over different items without talking.
 */
export function next(candidates: readonly string[], peer: string): readonly string[] {
  const unique = [...new Set(candidates)];
  const keyed = unique.map((item) => ({ item, h: stableHash(JSON.stringify([peer, item])) }));
  keyed.sort((a, b) => a.h - b.h || compareCodeUnits(a.item, b.item));
  return keyed.map((k) => k.item);
}

/**
 * The first of `candidates`, in `peer`'s `next` order, that no other peer holds at
 * `now` (an item `peer` itself holds counts as its own), or `undefined` when all are taken.
 */
export function nextUnclaimed(
  candidates: readonly string[],
  peer: string,
  slots: AdvisorySlots,
  now: number,
): string | undefined {
  const holders = advisoryHolders(slots, now);
  return next(candidates, peer).find((item) => {
    const h = holders.get(item);
    return h === undefined || h.peer === peer;
  });
}
