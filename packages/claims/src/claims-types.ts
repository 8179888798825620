/**
 * The values a claims table takes and returns (claims.md §2). Plain data: every
 * result can be compared, logged or sent as it is.
 */

/**
 * How a resource is held. An exclusive holder excludes every other holder
 * whatever the capacity; shared holders use one unit of the key's capacity each.
 */
export type ClaimMode = "exclusive" | "shared";

/** One resource asked for in a take: a key and the mode it is wanted in. */
export interface ResourceRequest {
  readonly key: string;
  readonly mode: ClaimMode;
}

/**
 * An all-or-nothing request: every resource is granted to `holder`, or none is.
 * `scope` names what the claims live as long as (rule 6), `ttlMs` makes them leases
 * (rule 5), `label` is free text a reader sees in the held list.
 */
export interface TakeRequest {
  readonly holder: string;
  readonly resources: readonly ResourceRequest[];
  readonly scope?: string;
  readonly ttlMs?: number;
  readonly label?: string;
}

/**
 * The options a table is built with (claims.md §2). In the replicated table they
 * are identical on every peer; `scopeEnded` exists only in-process.
 */
export interface ClaimsOptions {
  /** The keys that exist. Without it any key may be taken: weaker, two spellings are then two keys. */
  readonly roster?: readonly string[];
  /** Capacity per key: a count of shared units, or `null` for unlimited. An unlisted key has capacity 1. */
  readonly capacity?: Readonly<Record<string, number | null>>;
  /** Most keys one holder may hold at once; unbounded when left out. */
  readonly maxPerHolder?: number;
  /** Whether a scope has ended; a claim in an ended scope holds nothing (in-process only). Must never turn back to `false`. */
  readonly scopeEnded?: (scope: string) => boolean;
}

/** A resource granted by a take, with the fencing token to stamp on every write made under it. */
export interface Grant {
  readonly key: string;
  readonly mode: ClaimMode;
  readonly token: number;
  /** `true` when the holder already held it this way: nothing was written, the token is the one it had. */
  readonly existing: boolean;
}

/**
 * Why a resource was refused (claims.md §2 rule 3): `held` — an exclusive holder
 * is in the way, or an exclusive take meets any holder; `capacity` — every shared
 * unit is in use; `not-on-roster` — the key does not exist; `per-holder-limit` —
 * the holder would hold more than `maxPerHolder` keys.
 */
export type BlockReason = "held" | "capacity" | "not-on-roster" | "per-holder-limit";

/** One resource that blocked a take: what it is, why, and who to ask. */
export interface Blocked {
  readonly key: string;
  /** The key's configured capacity (`null`: unlimited). */
  readonly capacity: number | null;
  readonly reason: BlockReason;
  /** For `held` and `capacity`: the holders in the way, in the order they took it. Otherwise empty. */
  readonly holders: readonly string[];
  /** For `not-on-roster`: the keys that do exist, so the caller can correct the spelling. */
  readonly roster?: readonly string[];
}

/** A claim as the table records it, and as `open()` reports it. */
export interface Holding {
  readonly key: string;
  readonly holder: string;
  readonly mode: ClaimMode;
  readonly token: number;
  /** When it was granted (the take's `now`). */
  readonly since: number;
  readonly scope?: string;
  readonly label?: string;
  /** When the lease lapses unless renewed; absent for a claim without `ttlMs`. */
  readonly expiresAt?: number;
}

/** A recorded claim that holds nothing any more, and why: its lease lapsed, or its scope ended. */
export interface LapsedClaim extends Holding {
  readonly why: "lease-lapsed" | "scope-ended";
}

/** A take that granted everything it asked for. */
export interface TakeGranted {
  readonly ok: true;
  /** One grant per requested resource, in request order. */
  readonly grants: readonly Grant[];
  /** Lapsed claims on the granted keys that this take cleared from the record. */
  readonly superseded: readonly LapsedClaim[];
}

/** A take that granted nothing: the table is unchanged. */
export interface TakeRefused {
  readonly ok: false;
  /** Every resource that blocked it, in request order (empty when the request itself was malformed). */
  readonly blocked: readonly Blocked[];
  /** Set when the request was malformed (bad id, duplicate key, bad lease, stale token, ended scope). */
  readonly invalid?: string;
}

/** What a take did: granted all, or granted nothing and said why. */
export type TakeOutcome = TakeGranted | TakeRefused;

/** Capacity, holders and spare units of one key, as of a read. Advisory: the take is what decides. */
export interface Availability {
  readonly key: string;
  readonly capacity: number | null;
  /** `false` when a roster exists and the key is not on it. */
  readonly onRoster: boolean;
  readonly holders: readonly Holding[];
  /** Shared units left: `null` when unlimited, `0` while an exclusive holder has it. */
  readonly free: number | null;
}

/**
 * The claims table (claims.md §2): a deterministic state machine with no clock of
 * its own. The same calls with the same `now`s in the same order give the same table
 * on every replica. It never waits: every call answers at once.
 */
export interface ClaimsTable {
  /** All or nothing: grants every resource of `request` to its holder at `now`, or refuses and changes nothing. */
  take(request: TakeRequest, now: number, token?: number): TakeOutcome;
  /**
   * Gives `key` up. `true` only when `holder` held it (a lapsed claim is cleared and answers `false`). With a
   * `token`, only the grant stamped with exactly that token is given up: when `holder`'s grant of `key` carries
   * another token (it took the key again since), nothing is released and the answer is `false`, so a late retry
   * of an earlier release cannot end a newer grant. Without a token, whatever `holder` holds on `key` is released.
   */
  release(holder: string, key: string, now?: number, token?: number): boolean;
  /** Everything `holder` held, given up at once: the keys it still held, in the order taken. */
  releaseAll(holder: string, now?: number): readonly string[];
  /** Every claim scoped to `scope`, given up: the keys that were still held, in the order taken. */
  releaseScope(scope: string, now?: number): readonly string[];
  /** Extends `holder`'s lease on `key` to `now + ttlMs`; `false` when not held (or lapsed). */
  renew(holder: string, key: string, now: number): boolean;
  /** The earliest live holder of `key` (the only one for a mutex), or `undefined` when free. */
  owner(key: string, now?: number): string | undefined;
  /** Every live holder of `key`, in the order taken. */
  holders(key: string, now?: number): readonly string[];
  /** Roster keys with spare capacity, in roster order; `undefined` without a roster. */
  free(now?: number): readonly string[] | undefined;
  /** Everything held, in the order taken. */
  open(now?: number): readonly Holding[];
  /** Recorded claims that hold nothing (lapsed lease, ended scope), in the order taken. */
  lapsed(now?: number): readonly LapsedClaim[];
  /** Capacity, holders and spare units per key. Advisory only. */
  availability(keys: readonly string[], now?: number): readonly Availability[];
  /** Whether `token` is the token of a live grant of `key`: a write stamped with anything else is stale. */
  /**
   * The refusal `take(request, now)` would answer, without taking anything; `undefined` when it would grant (or
   * when the request is malformed: the take itself says why). Judged at the later of `now` and the table's
   * latest `now`, as `take` judges. Answering a refused take from this read is linearizable only where the table
   * is current (a Raft leader after a ReadIndex confirmation); a grant must still be taken.
   */
  wouldRefuse(request: TakeRequest, now?: number): TakeRefused | undefined;
  checkFence(key: string, token: number, now?: number): boolean;
  /** Drops every recorded claim that holds nothing and returns them: keeps a table with invented keys bounded. */
  purge(now?: number): readonly LapsedClaim[];
  /**
   * Drops, oldest expiry first, at most `max` claims whose lease ended at or before `cutoff`, and returns them. The
   * work is bounded by `max`, not by the table's size (an index by expiry), so a replicated table can call it on every
   * applied command to stay bounded without stalling the log; judged only by `cutoff` and the table, so every
   * replica drops the same claims. Scope-ended claims are left to `purge`.
   */
  purgeLapsedBefore(cutoff: number, max: number): readonly LapsedClaim[];
  /** The latest `now` the table has been given: the default time of reads. */
  readonly now: number;
  /** The largest token granted so far (0 before the first grant). */
  readonly lastToken: number;
  /** The canonical, versioned encoding of the whole table, options included (without `scopeEnded`). */
  encode(): string;
}
