/**
 * `@heddle/claims` — one owner per thing (claims.md). Three modes, one API shape:
 * the granted claims table (`createClaims`), keeper claims (`keeperState`,
 * `renewKeeper`, `lookKeeper`) and advisory claims (`claimAdvisory`,
 * `advisoryHolders`, `duplicates`, `next`). Everything here is pure: time is an
 * argument, and nothing does I/O.
 */

/** Granted mode: the claims table's values (claims.md §2). */
export type {
  Availability,
  Blocked,
  BlockReason,
  ClaimMode,
  ClaimsOptions,
  ClaimsTable,
  Grant,
  Holding,
  LapsedClaim,
  ResourceRequest,
  TakeGranted,
  TakeOutcome,
  TakeRefused,
  TakeRequest,
} from "./claims-types.ts";
/** Granted mode: a fresh in-process table, and the format tag of its encoding. */
export { CLAIMS_FORMAT, createClaims } from "./claims-table.ts";
/** Granted mode: rebuilds a table from its canonical encoding, rejecting bad input. */
export { decodeClaims } from "./claims-encoding.ts";
/** Granted mode: the held list a member reads. */
export { heldList } from "./held-list.ts";
/** The error every decoder throws on input it will not accept. */
export { ClaimsDecodeError } from "./decode-error.ts";
/** Key handling shared by all modes: trimming, id checks, code-unit order. */
export { claimKey, compareCodeUnits } from "./claim-key.ts";
/** Every named bound of the package. */
export {
  MAX_ID_LENGTH,
  MAX_LABEL_LENGTH,
  MAX_TTL_MS,
  MAX_RESOURCES_PER_TAKE,
  MAX_ROSTER_KEYS,
  MAX_SLOT_CLAIMS,
  MAX_SLOT_TEXT,
  MAX_TABLE_TEXT,
} from "./limits.ts";

/** Replicated slots (keeper and advisory): one writer per slot, versions that only rise, and their join. */
export type { PeerSlot, SlotMap } from "./peer-slots.ts";
/** Replicated slots: version arithmetic (`epoch × 2^32 + counter`) and the generic join. */
export { emptySlots, firstVersion, joinSlotMaps, MAX_SLOT_VERSION, nextVersion, putSlot, versionAfter } from "./peer-slots.ts";

/** Keeper mode: the claim value, its rules and timings (claims.md §3). */
export type { KeeperClaim, KeeperRenewal, KeeperRule, KeeperTimings } from "./keeper-claim.ts";
/** Keeper mode: pure functions over a set of claims and a time. */
export {
  chooseKeeper,
  closeKeeperClaim,
  KEEPER_DEFAULTS,
  keeperClaimAlive,
  keeperClaimHolds,
  renewKeeperClaim,
} from "./keeper-claim.ts";
/** Keeper mode: the replicated value (one slot per peer). */
export type { KeeperSlot, KeeperSlots } from "./keeper-slots.ts";
/** Keeper mode: slot encoding, join and own-slot writes. */
export {
  decodeKeeperSlot,
  encodeKeeperSlot,
  joinKeeperSlots,
  KEEPER_SLOT_FORMAT,
  keeperClaimsOn,
  putKeeperSlot,
  writeKeeperClaim,
} from "./keeper-slots.ts";
/** Keeper mode: one peer's state, settling and heard-from included. */
export type { KeeperState, KeeperView, KeptSince } from "./keeper-state.ts";
/** Keeper mode: `look`, `renew`, `close` and receiving a slot, as pure state transitions. */
export { closeKeeper, keeperState, lookKeeper, receiveKeeperSlot, renewKeeper } from "./keeper-state.ts";

/** Advisory mode: the claim, slot and duplicate values (claims.md §4). */
export type { AdvisoryClaim, AdvisoryDuplicate, AdvisorySlot, AdvisorySlots } from "./advisory-claims.ts";
/** Advisory mode: claiming, resolution by earliest claimant, duplicates, spreading, encoding and join. */
export {
  ADVISORY_SLOT_FORMAT,
  advisoryHolder,
  advisoryHolders,
  claimAdvisory,
  decodeAdvisorySlot,
  dropAdvisory,
  duplicates,
  encodeAdvisorySlot,
  joinAdvisorySlots,
  next,
  nextUnclaimed,
  putAdvisorySlot,
} from "./advisory-claims.ts";
/** The three modes and the one-sentence guarantee each answer carries. */
export type { ClaimsMode } from "./guarantees.ts";
export { CLAIM_GUARANTEES } from "./guarantees.ts";
/** The stable 32-bit string hash `next` spreads by (FNV-1a over UTF-8, then an avalanche step), and plain FNV-1a. */
export { fnv1a32, stableHash } from "./stable-hash.ts";
