/**
 * Every bound this package enforces, named in one place. A value past a bound is
 * refused (a take) or rejected (a decode); nothing is silently truncated.
 */

/** Longest key, holder id, scope, peer id, part or item, in UTF-16 code units. */
export const MAX_ID_LENGTH = 1024;

/** Longest label a claim may carry, in UTF-16 code units. */
export const MAX_LABEL_LENGTH = 4096;

/**
 * Longest lease a claim may ask for (`ttlMs`): 100 years. Bounded so that `since + ttlMs` stays a safe integer on
 * any real clock: an expiry past 2^53 could not be encoded, and a replicated table holding one could not be
 * snapshotted or restored.
 */
export const MAX_TTL_MS = 100 * 365.25 * 24 * 3600 * 1000;

/**
 * Stale entries the expiry index behind `purgeLapsedBefore` may carry before it is rebuilt from the live records:
 * it is rebuilt once its stale entries (left by releases, replacements and renewals) pass
 * max(EXPIRY_INDEX_SLACK, leased claims recorded), so it never holds more than twice the leased claims plus this.
 */
export const EXPIRY_INDEX_SLACK = 1024;

/** Most resources one all-or-nothing take may name. */
export const MAX_RESOURCES_PER_TAKE = 256;

/** Most keys a roster may list, and most keys with a configured capacity. */
export const MAX_ROSTER_KEYS = 1_000_000;

/** Most claims one peer's keeper or advisory slot may carry. */
export const MAX_SLOT_CLAIMS = 4096;

/** Longest encoded slot, in UTF-16 code units: it must fit one node frame (1 MiB) with room to spare. */
export const MAX_SLOT_TEXT = 512 * 1024;

/** Longest encoded claims table accepted by `decodeClaims`, in UTF-16 code units. */
export const MAX_TABLE_TEXT = 256 * 1024 * 1024;
