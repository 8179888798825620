import { compareCodeUnits } from "./claim-key.ts";

/**
 * One peer's slot of a replicated map (claims.md §3–4): written only by `peer`,
 * carrying a `version` that only rises. One writer per slot means replication never
 * produces two conflicting copies; the version says which copy is newer.
 */
export interface PeerSlot<C> {
  readonly peer: string;
  /** `epoch × 2^32 + counter` (node.md §6): a restarted peer's slot outranks its previous incarnation's. */
  readonly version: bigint;
  /** The peer's claims, sorted by their id (part or item), one per id. */
  readonly claims: readonly C[];
}

/** A replicated map of peer slots, iterated in peer order (UTF-16 code units). */
export type SlotMap<C> = ReadonlyMap<string, PeerSlot<C>>;

const TWO_32 = 2n ** 32n;

/** The largest slot version: versions travel as decimal strings in `0 … 2^63 − 1`. */
export const MAX_SLOT_VERSION = 2n ** 63n - 1n;

/** The first version of a boot: `epoch × 2^32` (`epoch` is the store's boot counter, `0 ≤ epoch < 2^31`). */
export function firstVersion(epoch: number): bigint {
  if (!Number.isSafeInteger(epoch) || epoch < 0 || epoch >= 2 ** 31) throw new RangeError(`epoch must be in 0 … 2^31 − 1, got ${epoch}`);
  return BigInt(epoch) * TWO_32;
}

/**
 * The version after `v` within the same boot. Reaching the end of a boot's 2^32
 * counter throws: it never silently borrows the next epoch (node.md §6).
 */
export function nextVersion(v: bigint): bigint {
  if ((v + 1n) % TWO_32 === 0n) throw new RangeError("slot counter exhausted for this boot: restart with a new epoch");
  return v + 1n;
}

/**
 * The version an own slot is written with: the next after the previous one, but
 * never below the first version of `epoch` (a new boot starts above every older one).
 */
export function versionAfter(previous: bigint | undefined, epoch: number): bigint {
  const first = firstVersion(epoch);
  if (previous === undefined || previous < first) return first;
  return nextVersion(previous);
}

function better<C>(a: PeerSlot<C>, b: PeerSlot<C>, encode: (s: PeerSlot<C>) => string): PeerSlot<C> {
  if (a.version !== b.version) return a.version > b.version ? a : b;
  if (a === b) return a;
  // One writer never writes two values under one version; if a faulty one did, every
  // peer still keeps the same copy: the larger encoding.
  const ea = encode(a);
  const eb = encode(b);
  return ea >= eb ? a : b;
}

function sorted<C>(slots: Iterable<PeerSlot<C>>): SlotMap<C> {
  const list = [...slots].sort((x, y) => compareCodeUnits(x.peer, y.peer));
  return new Map(list.map((s) => [s.peer, s]));
}

/**
 * The join of two slot maps: per peer, the copy with the higher version (ties broken
 * by the larger canonical encoding). Idempotent, commutative and associative, so any
 * merge order, with duplicates and stale copies, ends at the same map.
 */
export function joinSlotMaps<C>(a: SlotMap<C>, b: SlotMap<C>, encode: (s: PeerSlot<C>) => string): SlotMap<C> {
  const out = new Map<string, PeerSlot<C>>(a);
  for (const [peer, slot] of b) {
    const mine = out.get(peer);
    out.set(peer, mine === undefined ? slot : better(mine, slot, encode));
  }
  return sorted(out.values());
}

/**
 * `map` with `slot` joined in: `replaced` says whether the copy changed anything
 * (a stale or repeated copy leaves the map as it was).
 */
export function putSlot<C>(
  map: SlotMap<C>,
  slot: PeerSlot<C>,
  encode: (s: PeerSlot<C>) => string,
): { map: SlotMap<C>; replaced: boolean } {
  const mine = map.get(slot.peer);
  if (mine !== undefined && better(mine, slot, encode) === mine) return { map, replaced: false };
  const out = new Map(map);
  out.set(slot.peer, slot);
  return { map: sorted(out.values()), replaced: true };
}

/** The empty slot map. */
export function emptySlots<C>(): SlotMap<C> {
  return new Map();
}
