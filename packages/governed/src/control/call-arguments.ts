/**
 * Argument checks of the control verbs (governed.md §2.2 "Errors"): a caller's bug is a `TypeError` (wrong type)
 * or a `RangeError` (right type, value out of range), thrown synchronously before anything is proposed.
 */
import { AttachmentId, GroupId, MAX, ReplicaId, Weight } from "@heddle/ledger";
import type { AttachmentRecord } from "@heddle/ledger";
import { createClaims, MAX_ID_LENGTH as MAX_CLAIM_ID_LENGTH } from "@heddle/claims";
import type { ClaimMode, ClaimsOptions, TakeRequest } from "@heddle/claims";
import { MAX_ID_LENGTH } from "@heddle/node";
import type { ProposalKey } from "../raft/types.ts";

/** Per-call options of every control verb (governed.md §2.2). */
export interface CallOptions {
  /** Bounds propose + local apply; on expiry the call rejects `OutcomeUnknownError` (it does not un-propose). */
  readonly timeoutMs?: number;
  /** Same semantics as the timeout. */
  readonly signal?: AbortSignal;
  /**
   * Retry an earlier call exactly once, or act as a durable client (§3.10). A client starting with `idem:`
   * (`IDEMPOTENCY_CLIENT_PREFIX`, the daemon's `Idempotency-Key` sessions) is *windowed*: its outcomes are
   * forgotten once older than `idempotencyWindow` applied entries, and a retry after that is a new act. Use
   * another prefix for a durable client that must be remembered for as long as it runs.
   */
  readonly key?: ProposalKey;
  /** Only with an explicit `key`: the caller promises never to retry any seq below this. */
  readonly ackFloor?: number;
}

/** The options of `claims.release`: the call's options, and the grant it ends. */
export interface ReleaseOptions extends CallOptions {
  /**
   * The fencing token of the grant to end (claims.md §2 rule 7). With it the release ends that grant only: if the
   * holder has taken the key again since (a newer token), nothing is released and the outcome carries `heldToken`.
   * Without it, whatever the holder holds on the key is released.
   */
  readonly token?: number;
}

/** A release's `token` option: `undefined`, or a safe integer ≥ 0. */
export function releaseTokenArg(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "number") throw new TypeError(`claims.release: token must be a number, got ${v === null ? "null" : typeof v}`);
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`claims.release: token must be a safe integer ≥ 0, got ${v}`);
  return v;
}

/** The prefix of auto client ids; an explicit key's client must not start with it. */
export const AUTO_CLIENT_PREFIX = "auto:";

function id<T>(brand: (s: string) => T, v: unknown, what: string, max = MAX_ID_LENGTH): T {
  if (typeof v !== "string") throw new TypeError(`${what} must be a string, got ${v === null ? "null" : typeof v}`);
  if (v.length > max) throw new RangeError(`${what} is longer than ${max} code units`);
  try {
    return brand(v);
  } catch (e) {
    throw new RangeError(`${what}: ${(e as Error).message}`);
  }
}

/** A replica id argument. */
export function replicaArg(v: unknown, what: string): ReplicaId {
  return id(ReplicaId, v, what);
}

/** An edge id argument. */
export function edgeArg(v: unknown, what: string): AttachmentId {
  return id(AttachmentId, v, what);
}

/** A group id argument. */
export function groupArg(v: unknown, what: string): GroupId {
  return id(GroupId, v, what);
}

/** A mint amount: a `bigint` in 1 … 2^63 − 1 (a zero mint would be an act that creates nothing). */
export function amountArg(v: unknown): bigint {
  if (typeof v !== "bigint") throw new TypeError(`mint: amount must be a bigint, got ${typeof v}`);
  if (v < 1n || v > MAX) throw new RangeError(`mint: amount must lie in 1 … 2^63 − 1, got ${v}`);
  return v;
}

/** An `AttachmentRecord` argument, copied into a frozen value. */
export function recordArg(v: unknown): AttachmentRecord {
  if (typeof v !== "object" || v === null) throw new TypeError("prepare: record must be an AttachmentRecord object");
  const r = v as Partial<AttachmentRecord>;
  const edge = edgeArg(r.id, "prepare: record.id");
  const parent = groupArg(r.parent, "prepare: record.parent");
  const child = groupArg(r.child, "prepare: record.child");
  if (!(r.weight instanceof Weight)) throw new TypeError("prepare: record.weight must be a Weight (Weight.of(num, den))");
  return Object.freeze({ id: edge, parent, child, weight: r.weight });
}

/** A claims-family string argument (holder, key, scope). */
export function claimsStringArg(v: unknown, what: string): string {
  if (typeof v !== "string") throw new TypeError(`${what} must be a string, got ${v === null ? "null" : typeof v}`);
  if (v.trim().length === 0) throw new RangeError(`${what} must not be empty`);
  if (v.length > MAX_CLAIM_ID_LENGTH) throw new RangeError(`${what} is longer than ${MAX_CLAIM_ID_LENGTH} code units`);
  return v;
}

/**
 * A take request, copied. Wrong types are `TypeError`s; a request the table would refuse as malformed (bad id,
 * duplicate key, bad lease, too many resources) is a `RangeError` carrying the table's own reason — found by asking
 * a fresh table with the same options, so the check cannot drift from the table's rules.
 */
export function takeArg(v: unknown, options: ClaimsOptions): TakeRequest {
  if (typeof v !== "object" || v === null) throw new TypeError("claims.take: request must be an object");
  const r = v as Partial<TakeRequest>;
  const holder = claimsStringArg(r.holder, "claims.take: request.holder");
  if (!Array.isArray(r.resources)) throw new TypeError("claims.take: request.resources must be an array");
  const resources = r.resources.map((x: unknown, i) => {
    if (typeof x !== "object" || x === null) throw new TypeError(`claims.take: request.resources[${i}] must be an object`);
    const res = x as { key?: unknown; mode?: unknown };
    const key = claimsStringArg(res.key, `claims.take: request.resources[${i}].key`);
    if (res.mode !== "exclusive" && res.mode !== "shared") throw new RangeError(`claims.take: request.resources[${i}].mode must be 'exclusive' or 'shared'`);
    return { key, mode: res.mode as ClaimMode };
  });
  const out: { -readonly [K in keyof TakeRequest]: TakeRequest[K] } = { holder, resources };
  if (r.scope !== undefined) out.scope = claimsStringArg(r.scope, "claims.take: request.scope");
  if (r.ttlMs !== undefined) {
    if (typeof r.ttlMs !== "number") throw new TypeError("claims.take: request.ttlMs must be a number");
    out.ttlMs = r.ttlMs;
  }
  if (r.label !== undefined) {
    if (typeof r.label !== "string") throw new TypeError("claims.take: request.label must be a string");
    out.label = r.label;
  }
  const probe = createClaims(options).take(out, 0, 1);
  if (!probe.ok && probe.invalid !== undefined) throw new RangeError(`claims.take: ${probe.invalid}`);
  return out;
}

/**
 * Validates `CallOptions`; returns them (or `{}`). An explicit key's client must not start with `auto:` — except this
 * node's own auto client id (`ownAutoClient`), which a caller uses to retry an act that ended `OutcomeUnknownError`.
 */
export function callOptionsArg(v: unknown, verb: string, ownAutoClient: string | null = null): CallOptions {
  if (v === undefined) return {};
  if (typeof v !== "object" || v === null) throw new TypeError(`${verb}: options must be an object`);
  const o = v as CallOptions;
  if (o.timeoutMs !== undefined) {
    if (typeof o.timeoutMs !== "number") throw new TypeError(`${verb}: timeoutMs must be a number`);
    if (!Number.isFinite(o.timeoutMs) || o.timeoutMs <= 0) throw new RangeError(`${verb}: timeoutMs must be a positive, finite number of milliseconds`);
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw new TypeError(`${verb}: signal must be an AbortSignal`);
  if (o.key !== undefined) {
    if (typeof o.key !== "object" || o.key === null) throw new TypeError(`${verb}: key must be { client, seq }`);
    if (typeof o.key.client !== "string") throw new TypeError(`${verb}: key.client must be a string`);
    if (o.key.client.length === 0 || !o.key.client.isWellFormed()) throw new RangeError(`${verb}: key.client must be a non-empty, well-formed string`);
    if (o.key.client.length > MAX_ID_LENGTH) throw new RangeError(`${verb}: key.client is longer than ${MAX_ID_LENGTH} code units`);
    if (o.key.client.startsWith(AUTO_CLIENT_PREFIX) && o.key.client !== ownAutoClient) throw new RangeError(`${verb}: key.client must not start with "${AUTO_CLIENT_PREFIX}" (auto keys are this node's own)`);
    if (typeof o.key.seq !== "number") throw new TypeError(`${verb}: key.seq must be a number`);
    if (!Number.isSafeInteger(o.key.seq) || o.key.seq < 1) throw new RangeError(`${verb}: key.seq must be a safe integer ≥ 1`);
  }
  if (o.ackFloor !== undefined) {
    if (o.key === undefined) throw new TypeError(`${verb}: ackFloor is only meaningful with an explicit key`);
    if (typeof o.ackFloor !== "number") throw new TypeError(`${verb}: ackFloor must be a number`);
    if (!Number.isSafeInteger(o.ackFloor) || o.ackFloor < 0) throw new RangeError(`${verb}: ackFloor must be a safe integer ≥ 0`);
    if (o.ackFloor > o.key!.seq) throw new RangeError(`${verb}: ackFloor ${o.ackFloor} is above key.seq ${o.key!.seq} (the act would be stale)`);
  }
  return o;
}
