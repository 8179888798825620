import { compareCodeUnits, idProblem } from "./claim-key.ts";
import type { KeeperClaim } from "./keeper-claim.ts";
import { MAX_SLOT_CLAIMS } from "./limits.ts";
import { joinSlotMaps, putSlot, versionAfter } from "./peer-slots.ts";
import type { PeerSlot, SlotMap } from "./peer-slots.ts";
import { decodeSlotDoc, encodeSlotDoc, slotFail, slotTime } from "./slot-codec.ts";

/** The format tag of a keeper slot on the wire (node.md channel 5). */
export const KEEPER_SLOT_FORMAT = "heddle-keeper/1";

/** One peer's keeper claims, one per part, sorted by part. */
export type KeeperSlot = PeerSlot<KeeperClaim>;

/** Every peer's keeper slot: the replicated value of keeper mode. */
export type KeeperSlots = SlotMap<KeeperClaim>;

/**
 * The canonical text of a keeper slot: `{"format":"heddle-keeper/1","peer","version",
 * "claims":[[part, claimedAt, renewedAt, activeAt, takenAt|null, closedAt|null, wroteUpTo|null], …]}`
 * with claims sorted by part. Equal slots encode to equal text.
 */
export function encodeKeeperSlot(slot: KeeperSlot): string {
  const rows = [...slot.claims]
    .sort((a, b) => compareCodeUnits(a.part, b.part))
    .map((c) => [c.part, c.claimedAt, c.renewedAt, c.activeAt, c.takenAt ?? null, c.closedAt ?? null, c.wroteUpTo ?? null]);
  return encodeSlotDoc(KEEPER_SLOT_FORMAT, slot.peer, slot.version, rows);
}

/**
 * Reads a keeper slot, throwing `ClaimsDecodeError` on anything but a well-formed one:
 * wrong format or fields, ill-formed ids, parts out of order or repeated, more than
 * `MAX_SLOT_CLAIMS` claims, times that are not safe integers ≥ 0, a renewal before the
 * claim, or a close before the claim.
 */
export function decodeKeeperSlot(text: string): KeeperSlot {
  const f = KEEPER_SLOT_FORMAT;
  const doc = decodeSlotDoc(text, f);
  const claims: KeeperClaim[] = [];
  let previous: string | undefined;
  for (const row of doc.rows) {
    if (!Array.isArray(row) || row.length !== 7) slotFail(f, "each claim must be a list of 7 fields");
    const part = row[0];
    const problem = idProblem(part, "part");
    if (problem !== undefined) slotFail(f, problem);
    if (previous !== undefined && !(previous < (part as string))) slotFail(f, "parts must be sorted and unique");
    previous = part as string;
    const claimedAt = slotTime(f, row[1], "claimedAt");
    const renewedAt = slotTime(f, row[2], "renewedAt");
    const activeAt = slotTime(f, row[3], "activeAt");
    if (renewedAt < claimedAt) slotFail(f, "renewedAt before claimedAt");
    const claim: { -readonly [K in keyof KeeperClaim]: KeeperClaim[K] } = {
      part: part as string,
      peer: doc.peer,
      claimedAt,
      renewedAt,
      activeAt,
    };
    if (row[4] !== null) claim.takenAt = slotTime(f, row[4], "takenAt");
    if (row[5] !== null) {
      claim.closedAt = slotTime(f, row[5], "closedAt");
      if (claim.closedAt < claimedAt) slotFail(f, "closedAt before claimedAt");
    }
    if (row[6] !== null) claim.wroteUpTo = slotTime(f, row[6], "wroteUpTo");
    claims.push(claim);
  }
  return { peer: doc.peer, version: doc.version, claims };
}

/** The join of two keeper slot maps (per peer, the higher version): idempotent, commutative, associative. */
export function joinKeeperSlots(a: KeeperSlots, b: KeeperSlots): KeeperSlots {
  return joinSlotMaps(a, b, encodeKeeperSlot);
}

/** `slots` with one copy of a slot joined in; `replaced` is `false` for a stale or repeated copy. */
export function putKeeperSlot(slots: KeeperSlots, slot: KeeperSlot): { slots: KeeperSlots; replaced: boolean } {
  const { map, replaced } = putSlot(slots, slot, encodeKeeperSlot);
  return { slots: map, replaced };
}

/** Every claim on `part` in `slots`, in peer order. */
export function keeperClaimsOn(slots: KeeperSlots, part: string): readonly KeeperClaim[] {
  const out: KeeperClaim[] = [];
  for (const slot of slots.values()) for (const c of slot.claims) if (c.part === part) out.push(c);
  // The package's own maps iterate in peer order already; a map the caller built need not.
  return out.sort((a, b) => compareCodeUnits(a.peer, b.peer));
}

/**
 * `slot` (this peer's own, or none yet) with `claim` written into it under the next
 * version of boot `epoch`. Throws `RangeError` when the claim is another peer's or the
 * slot would exceed `MAX_SLOT_CLAIMS`: a peer writes only its own slot.
 */
export function writeKeeperClaim(slot: KeeperSlot | undefined, claim: KeeperClaim, epoch: number): KeeperSlot {
  if (slot !== undefined && slot.peer !== claim.peer) throw new RangeError("a peer writes only its own slot");
  const others = (slot?.claims ?? []).filter((c) => c.part !== claim.part);
  if (others.length + 1 > MAX_SLOT_CLAIMS) throw new RangeError(`a slot holds at most ${MAX_SLOT_CLAIMS} claims`);
  const claims = [...others, claim].sort((a, b) => compareCodeUnits(a.part, b.part));
  return { peer: claim.peer, version: versionAfter(slot?.version, epoch), claims };
}
