/**
 * `etcdControlLog` (issue 18): the governed control log kept on an etcd v3 cluster an operator already runs, instead
 * of the embedded Raft. etcd decides the order; every heddle member applies the same prefix (governed.md §3.5).
 *
 * Layout under the key prefix `P` (default `heddle/control/`):
 *
 * - `P head` — `{"index":n,"stamp":t,"by":id}`: the last appended index, its stamp and the member that stamped it
 *   (`by`, absent in heads written before it was recorded). Every append is one transaction that
 *   compares `head`'s mod revision with the one the proposer last saw, and on success writes the new `head` and the
 *   new entries together — so indexes are dense, each is written once, and the order is etcd's commit order. A lost
 *   race re-reads `head` (the transaction's else branch) and tries again. Proposals waiting together in one process
 *   go in one transaction (group commit, at most {@link ETCD_BATCH_ENTRIES} entries / {@link ETCD_BATCH_BYTES}).
 * - `P log/<index, 16 digits>` — one entry: format byte, the stamp, the proposal key, the command bytes. The stamp is
 *   the proposer's clock clamped to the previous head's stamp, so stamps never run backwards in the log (claims time,
 *   claims.md) whatever the proposers' clocks do. A stamp is whole milliseconds in 0 … 2^53 − 1 (what the claims
 *   table takes, as the embedded Raft's codec enforces): `propose` refuses a `now` outside that, and a stamp outside
 *   it in `head` or an entry is an `EtcdLogCorruptError`. So one member whose clock runs ahead moves claims time
 *   forward for every member until the real time catches up: a member that reads a `head` stamped more than
 *   `maxClockAheadMs` past its own clock says so (`status().clockAhead`, `onWarning`), naming the member that stamped it.
 * - `P snapshot` — `{"throughIndex":n,"chunks":k,"bytes":b}` and `P snap/<through>/<chunk>` — the newest published
 *   `ControlState` snapshot. Publishing writes the chunks, swaps the meta key by compare-and-set (never backwards),
 *   then deletes the log entries through the snapshot and older chunks (compaction).
 *
 * Members apply by reading the log from their next index at one revision and then watching the `log/` range from
 * the revision after it; a watch event that skips an index, a broken watch or a lost connection sends the reader
 * back to a ranged read from its next index, so it resumes without gaps or repeats. Entries deleted by compaction
 * are replaced by the snapshot (an `install` item). Any undecodable value under the prefix halts the reader (the
 * control plane fails closed, §3.3) rather than skipping an act.
 *
 * Every member answers `readIndex` (a linearizable read of `head`), so `role` is always `"leader"` and `sync()` never
 * proposes a barrier. `available` turns `false` when etcd has not answered for `unavailableAfterMs`; the governed
 * node's writer gate stays closed while it is.
 *
 * Faults (a client the log builds itself; a ready `client` keeps its own fault handling): every etcd call has
 * `callTimeoutMs` in all, and each attempt of it its own deadline of at most `attemptTimeoutMs` (never past the
 * call's end). An attempt that fails transiently (unavailable, deadline, connection reset, no leader, leader changed)
 * is retried on the next member in a shuffled round, so a frozen (SIGSTOPped) or killed member costs one attempt,
 * not the call; a member that failed {@link ETCD_HOST_FAILURES_TO_REST} attempts in a row is skipped for
 * {@link ETCD_HOST_REST_MS}, and a call whose every member rests waits and tries again until its end. An attempt is
 * never sent after its call's end. (etcd3's default gave all retries one absolute deadline — the first attempt on a
 * frozen member used it up and the retries failed at once — and failed the call outright when every breaker was open.)
 * A refusal no retry can change — permission denied, failed authentication, an entry above the cluster's
 * `--max-request-bytes`, a full database, an invalid request — is not retried: it ends the call at once with an
 * {@link EtcdRefusedError} that says what to fix.
 */
import { createRequire } from "node:module";
import type { Etcd3, IKeyValue, IOptions, IRequestOp, Watcher } from "etcd3";
import type { IPolicy } from "cockatiel";
import { WatchCell } from "@heddle/node";
import type { Watch } from "@heddle/node";
import { LeadershipLostError, NodeShutdownError, ProposalAbortedError } from "../raft/errors.ts";
import type { Committed, LogIndex, NodeId, ProposalKey, Role } from "../raft/types.ts";
import type { ControlLog } from "../control/control-log.ts";
import { EtcdBatchLimit } from "./etcd-batch-limit.ts";

/**
 * etcd3 — with gRPC, protobufjs and their dependencies about 400 CommonJS modules, ≈ 0.3 CPU-s to load — is
 * required when an etcd log is first made, not when this package is imported: a daemon on its own Raft log (every
 * `heddle start` without `mode.etcd`) loads `@heddle/governed` at each start and never uses etcd (issue 17).
 */
const etcd3 = (): typeof import("etcd3") => createRequire(import.meta.url)("etcd3") as typeof import("etcd3");
/** cockatiel (etcd3's fault-handling library), loaded with etcd3 and as CommonJS like etcd3 loads it: one module instance. */
const cockatiel = (): typeof import("cockatiel") => createRequire(import.meta.url)("cockatiel") as typeof import("cockatiel");

/** The key prefix when none is configured. */
export const DEFAULT_ETCD_PREFIX = "heddle/control/";
/** Most entries appended by one etcd transaction (etcd's own default cap is 128 operations per transaction). */
export const ETCD_BATCH_ENTRIES = 64;
/** Most command bytes appended by one etcd transaction (etcd refuses requests above 1.5 MiB by default). */
export const ETCD_BATCH_BYTES = 1024 * 1024;
/** Bytes per snapshot chunk key. */
export const ETCD_SNAPSHOT_CHUNK_BYTES = 1024 * 1024;
/** Entries read per ranged read while catching up. */
export const ETCD_READ_BATCH = 256;
/** Most proposals waiting in one process for their transaction; more are refused (`OverloadedError`-like). */
export const ETCD_MAX_QUEUED_PROPOSALS = 10_000;
/**
 * How long the head may stand ahead of a reader that waits on its watch before the watch is taken for stalled
 * and replaced by a fresh catch-up read (a watch on a frozen or cut-off member sends neither events nor errors).
 */
export const ETCD_WATCH_STALL_MS = 2_000;
/** Snapshot chunks read by one range call (each at most ETCD_SNAPSHOT_CHUNK_BYTES). */
export const ETCD_SNAPSHOT_READ_CHUNKS = 16;
/**
 * The largest etcd answer this log accepts (gRPC's receive limit, 4 MiB by default): a catch-up read of
 * ETCD_READ_BATCH entries of up to ETCD_BATCH_BYTES each, plus room for keys and headers. Below it, a log
 * with large entries could never be read back: every catch-up read failed and was retried for good.
 */
export const ETCD_MAX_RECEIVE_BYTES = ETCD_READ_BATCH * ETCD_BATCH_BYTES + 1024 * 1024;
/** Default deadline of one attempt of an etcd call (`attemptTimeoutMs`); a call retries on another member after it. */
export const ETCD_ATTEMPT_TIMEOUT_MS = 1_500;
/** Most attempts of one etcd call (each on the next member of a shuffled round), within the call's `callTimeoutMs`. */
export const ETCD_CALL_ATTEMPTS = 10;
/** Consecutive transiently failed attempts on one etcd member after which it is skipped for ETCD_HOST_REST_MS. */
export const ETCD_HOST_FAILURES_TO_REST = 2;
/** How long a failing etcd member is skipped before one call is let through to it again. */
export const ETCD_HOST_REST_MS = 1_000;
/**
 * Most watch events one reader holds waiting to be applied. A reader that falls this far behind its watch (its
 * consumer is slow) cancels the watch and goes back to ranged catch-up reads from its next index — etcd keeps the
 * entries, so nothing is lost; a watch stream cannot be paused per reader (all watches of a client share it).
 */
export const ETCD_MAX_PENDING_EVENTS = 1_024;
/**
 * Default `maxClockAheadMs`: how far `head`'s stamp may stand past this member's clock before it warns. One minute:
 * claims.md §3 assumes clocks within a minute of each other.
 */
export const ETCD_MAX_CLOCK_AHEAD_MS = 60_000;
/** Bounds of `maxClockAheadMs` (ms): at least one second (clocks are never exact), at most a day. */
export const ETCD_MAX_CLOCK_AHEAD_BOUNDS = { min: 1_000, max: 86_400_000 } as const;
/** Longest member id (UTF-16 code units) the log accepts: it is written into `head` (`by`), which every member parses. */
export const ETCD_MAX_ID_CHARS = 256;
/** Largest stamp (ms since the epoch) a proposer's clock may give or an entry may carry: 2^53 − 1, as the claims table takes. */
export const ETCD_MAX_STAMP = Number.MAX_SAFE_INTEGER;

const ENTRY_FORMAT = 1;
const DIGITS = 16;

/** How to reach etcd and where the log lives. Give `endpoints` (and optionally TLS/auth), or a ready `client`. */
export interface EtcdControlLogOptions {
  /** This heddle member's id (= its `ReplicaId`, governed.md G1). */
  readonly id: NodeId;
  /** Client URLs of the etcd members, e.g. `["https://10.0.0.1:2379", …]`. Ignored when `client` is given. */
  readonly endpoints?: readonly string[];
  /** An etcd3 client to use instead of building one; the log does not close it. */
  readonly client?: Etcd3;
  /** Key prefix of this log; every member of one heddle cluster uses the same. Default {@link DEFAULT_ETCD_PREFIX}. */
  readonly prefix?: string;
  /** TLS: the CA that signed etcd's server certificates, and a client certificate and key for mutual TLS. */
  readonly tls?: { readonly ca: Uint8Array; readonly cert?: Uint8Array; readonly key?: Uint8Array };
  /** etcd's own authentication (`etcdctl user add`). */
  readonly auth?: { readonly username: string; readonly password: string };
  /**
   * The proposer's clock for entry stamps (claims time): whole milliseconds since the epoch, 0 … 2^53 − 1. Default
   * `Date.now`. A proposal made while it returns anything else is refused with a `RangeError` (nothing is written).
   */
  readonly now?: () => number;
  /**
   * How far `head`'s stamp may stand past this member's `now` before `status().clockAhead` is set and `onWarning`
   * is called: a member whose clock runs ahead stamps claims time ahead for everyone, and leases then lapse late.
   * Default {@link ETCD_MAX_CLOCK_AHEAD_MS}; within {@link ETCD_MAX_CLOCK_AHEAD_BOUNDS}.
   */
  readonly maxClockAheadMs?: number;
  /**
   * Called with one line when something an operator should see starts or ends: `head` stamped more than
   * `maxClockAheadMs` ahead of this member's clock (and once it no longer is), a malformed `head`. Default: none.
   */
  readonly onWarning?: (message: string) => void;
  /** Deadline of one etcd call, all its attempts included, in ms. Default 5 000. */
  readonly callTimeoutMs?: number;
  /**
   * Deadline of one attempt of a call, in ms (at most `callTimeoutMs`): after it the call moves on to another etcd
   * member. Default {@link ETCD_ATTEMPT_TIMEOUT_MS}. Only for a client the log builds (not a given `client`).
   */
  readonly attemptTimeoutMs?: number;
  /** etcd unanswered this long → `available` false (writer gate closed). Default 3 000. */
  readonly unavailableAfterMs?: number;
  /** Period of the liveness probe (a linearizable read of `head`). Default 1 000. */
  readonly probeEveryMs?: number;
}

/**
 * What `counters()` counts: `transactions` (appends sent and answered), `entries` (appended), `races` (lost append
 * races), `resyncs` (a reader's watch replaced by a ranged read), `snapshots` (published), `compacted` (entries
 * deleted behind a snapshot), `stalls` (silent watches replaced), `overflows` (readers that fell
 * ETCD_MAX_PENDING_EVENTS behind their watch and went back to ranged reads), `refusals` (calls ended by an
 * `EtcdRefusedError`), `splits` (group-committed batches cut smaller because etcd found them too large; the cap on
 * later batches grows back after successful appends, `EtcdBatchLimit`), `malformed` (values read under the prefix
 * that this log did not write: a `head` that does not parse, an entry that does not decode — each an `EtcdLogCorruptError`).
 */
export type EtcdCounter = "transactions" | "entries" | "races" | "resyncs" | "snapshots" | "compacted" | "stalls" | "overflows" | "refusals" | "splits" | "malformed";

/** The etcd-backed `ControlLog`, plus what an operator or a test needs to see. */
export interface EtcdControlLog extends ControlLog {
  readonly available: Watch<boolean>;
  /**
   * Resolves once etcd answered a first read; rejects with `EtcdUnreachableError` when it does not in time, or with
   * `EtcdLogCorruptError` when it answers with a malformed `head` (its message says how to fix it).
   */
  readonly started: Promise<void>;
  readonly prefix: string;
  /** Counters: appends (transactions), appended entries, lost append races, watch restarts, snapshots published. */
  counters(): Readonly<Record<EtcdCounter, number>>;
  /** The newest `head` stamp this member has read or written (0 before any): see `ControlLog.stampFloor`. */
  stampFloor(): number;
  /** What an operator should see about this log now: see {@link EtcdLogStatus}. */
  status(): EtcdLogStatus;
}

/** `EtcdControlLog.status()`. */
export interface EtcdLogStatus {
  /** `available`'s value: etcd answered (and `head` parsed) within `unavailableAfterMs`. */
  readonly available: boolean;
  /** The newest `head` read or written: its index, stamp, and the member that stamped it (null when not recorded). Null before any. */
  readonly head: { readonly index: LogIndex; readonly stamp: number; readonly stampedBy: string | null } | null;
  /**
   * Set while the last read of `head` found it malformed (an `EtcdLogCorruptError`'s message, naming the key, its
   * revision and what to do): every append and linearizable read is refused with that error until it is fixed.
   */
  readonly corrupt: string | null;
  /**
   * Set while the newest `head` stamp stands more than `maxClockAheadMs` past this member's clock: claims time (lease
   * expiry) is held that far ahead for every member until real time catches up. `stampedBy` names the member whose
   * clock set it (or this member's clock runs behind).
   */
  readonly clockAhead: { readonly aheadMs: number; readonly stampedBy: string | null; readonly index: LogIndex; readonly message: string } | null;
  readonly maxClockAheadMs: number;
}

/** etcd did not answer at start (wrong endpoints, etcd down, TLS or auth refused). */
export class EtcdUnreachableError extends Error {
  override readonly name = "EtcdUnreachableError";
}

/**
 * etcd refused a call for a reason no retry changes; the call ended at once instead of being retried to its
 * deadline. `reason`: `permission` (the etcd user's role lacks read or write on the prefix — grant it readwrite on
 * the prefix), `auth` (etcd refused the user name or password), `too-large` (a single entry above the cluster's
 * `--max-request-bytes`), `no-space` (etcd's database reached `--quota-backend-bytes`: compact, defragment and
 * `etcdctl alarm disarm`), `invalid` (etcd found the request malformed, e.g. more operations than `--max-txn-ops`).
 * An append refused so was not written. The background reader does not stop on one: it retries (with backoff)
 * until the operator fixes the cause.
 */
export class EtcdRefusedError extends Error {
  override readonly name = "EtcdRefusedError";
  readonly reason: "permission" | "auth" | "too-large" | "no-space" | "invalid";
  constructor(reason: EtcdRefusedError["reason"], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/** An attempt that would start after its call's end: thrown by the call options, so it is never sent. */
class CallEndedError extends Error {
  override readonly name = "CallEndedError";
}

/** What etcd's refusal `e` means, or null when `e` is transient (or not etcd's). */
function refusalOf(e: unknown, prefix: string): EtcdRefusedError | null {
  if (!(e instanceof Error)) return null;
  const E = etcd3();
  const m = e.message;
  const code = (e as { code?: unknown }).code;
  const is = (c: new (...a: never[]) => Error, n: number): boolean => e instanceof c || code === n;
  const refuse = (reason: EtcdRefusedError["reason"], what: string): EtcdRefusedError => new EtcdRefusedError(reason, `etcd refused the call (${m}): ${what}`, { cause: e });
  if (/request is too large|larger than max/i.test(m)) {
    return refuse("too-large", `the request exceeds the etcd cluster's --max-request-bytes (or gRPC's message limit); run etcd with --max-request-bytes above ${ETCD_BATCH_BYTES} bytes plus keys, or propose smaller commands`);
  }
  if (/database space exceeded/i.test(m)) return refuse("no-space", "etcd's database reached --quota-backend-bytes; compact and defragment etcd, then `etcdctl alarm disarm`");
  if (e instanceof E.EtcdPermissionDeniedError || code === 7 || /permission denied/i.test(m)) {
    return refuse("permission", `check the etcd user's role: it needs readwrite on the key prefix ${JSON.stringify(prefix)} (etcdctl role grant-permission <role> --prefix=true readwrite ${prefix})`);
  }
  if (e instanceof E.EtcdAuthenticationFailedError || e instanceof E.EtcdUserNotFoundError || is(E.GRPCUnauthenticatedError, 16) || /authentication failed|user name not found/i.test(m)) {
    return refuse("auth", "check the etcd user name and password (mode.etcd.auth)");
  }
  if (/compacted/i.test(m)) return null; // a read at a revision compacted meanwhile: read again at a newer one
  if (is(E.GRPCInvalidArgumentError, 3) || is(E.GRPCFailedPreconditionError, 9) || is(E.GRPCNotImplementedError, 12) || is(E.GRPCOutOfRangeError, 11)) {
    return refuse("invalid", "etcd found the request invalid — check that etcd runs v3.4+ with --max-txn-ops above ETCD_BATCH_ENTRIES + 1");
  }
  return null;
}

/** A value under the log's prefix that this backend did not write (or a later format): the reader halts. */
export class EtcdLogCorruptError extends Error {
  override readonly name = "EtcdLogCorruptError";
}

interface Head {
  readonly index: LogIndex;
  readonly stamp: number;
  /** The member that stamped it (`by`), or null (absent: written before it was recorded, or no head yet). */
  readonly by: string | null;
  /** Mod revision of the `head` key (0: absent). */
  readonly rev: string;
}

interface Queued {
  readonly command: Uint8Array;
  readonly key: ProposalKey | null;
  readonly resolve: (v: { index: LogIndex; term: number }) => void;
  readonly reject: (e: Error) => void;
  done: boolean;
}

const te = new TextEncoder();
const td = new TextDecoder("utf-8", { fatal: true });
const buf = (s: string): Buffer => Buffer.from(s, "utf8");

/** The first key after every key starting with `p`. */
function prefixEnd(p: string): Buffer {
  const b = Buffer.from(buf(p));
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      b[i]!++;
      return b.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

const pad = (i: number): string => String(i).padStart(DIGITS, "0");

/** Whole milliseconds in 0 … ETCD_MAX_STAMP: what the claims table takes as `now`. */
const isStamp = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/**
 * A stamp as read back from etcd: whole milliseconds in 0 … ETCD_MAX_STAMP as written now, or — written by a
 * release before the write side checked its clock — any finite number up to ETCD_MAX_STAMP, which the claims
 * table has always applied rounded down (negatives as 0, below every clamp). Null past that or not finite: no
 * member could apply it.
 */
function readStamp(x: unknown): number | null {
  if (typeof x !== "number" || !Number.isFinite(x) || x > ETCD_MAX_STAMP) return null;
  return x < 0 ? 0 : Math.floor(x);
}

/**
 * One log entry's value: format byte, float64 stamp, u32 key length, key JSON `[client, seq]`, command. A stamp
 * that is not whole milliseconds in 0 … ETCD_MAX_STAMP is a `RangeError` (no member could apply it).
 */
export function encodeEtcdEntry(stamp: number, key: ProposalKey | null, command: Uint8Array): Buffer {
  if (!isStamp(stamp)) throw new RangeError(`encodeEtcdEntry: stamp ${stamp} is not whole milliseconds in 0 … ${ETCD_MAX_STAMP}`);
  const k = key === null ? new Uint8Array(0) : te.encode(JSON.stringify([key.client, key.seq]));
  const out = Buffer.alloc(1 + 8 + 4 + k.length + command.length);
  out[0] = ENTRY_FORMAT;
  out.writeDoubleBE(stamp, 1);
  out.writeUInt32BE(k.length, 9);
  out.set(k, 13);
  out.set(command, 13 + k.length);
  return out;
}

/**
 * Inverse of `encodeEtcdEntry`; `EtcdLogCorruptError` on anything else — a stamp outside whole milliseconds in
 * 0 … ETCD_MAX_STAMP included (the claims table would halt every member on it).
 */
export function decodeEtcdEntry(v: Uint8Array): { stamp: number; key: ProposalKey | null; command: Uint8Array } {
  const b = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (b.length < 13 || b[0] !== ENTRY_FORMAT) throw new EtcdLogCorruptError(`an entry of unknown format ${b[0] ?? "(empty)"} (this backend writes ${ENTRY_FORMAT})`);
  const raw = b.readDoubleBE(1);
  const kl = b.readUInt32BE(9);
  const stamp = readStamp(raw);
  if (stamp === null) throw new EtcdLogCorruptError(`an entry stamped ${raw}, not a number of milliseconds up to ${ETCD_MAX_STAMP} (its proposer's clock was in another unit, or another tool wrote it)`);
  if (13 + kl > b.length) throw new EtcdLogCorruptError(`an entry whose key length ${kl} runs past its ${b.length} bytes`);
  let key: ProposalKey | null = null;
  if (kl > 0) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(td.decode(b.subarray(13, 13 + kl)));
    } catch (e) {
      throw new EtcdLogCorruptError("an entry whose proposal key is not JSON", { cause: e });
    }
    if (!Array.isArray(parsed) || typeof parsed[0] !== "string" || !Number.isSafeInteger(parsed[1])) throw new EtcdLogCorruptError("an entry with a malformed proposal key");
    key = { client: parsed[0], seq: parsed[1] as number };
  }
  return { stamp, key, command: new Uint8Array(b.subarray(13 + kl)) };
}

function parseJson<T>(kv: IKeyValue | undefined, what: string, check: (x: Record<string, unknown>) => boolean): (T & { rev: string }) | null {
  if (kv === undefined) return null;
  let x: unknown;
  try {
    x = JSON.parse(kv.value.toString("utf8"));
  } catch (e) {
    throw new EtcdLogCorruptError(`${what} under the prefix is not JSON`, { cause: e });
  }
  if (typeof x !== "object" || x === null || !check(x as Record<string, unknown>)) throw new EtcdLogCorruptError(`${what} under the prefix is malformed`);
  return { ...(x as T), rev: kv.mod_revision };
}

const isIndex = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0;

/**
 * Opens the control log kept on etcd under `prefix` (see the module comment for the layout and guarantees). Returns at
 * once; `started` says whether etcd answered.
 */
export function etcdControlLog(o: EtcdControlLogOptions): EtcdControlLog {
  return new EtcdLog(o);
}

class EtcdLog implements EtcdControlLog {
  readonly id: NodeId;
  readonly prefix: string;
  readonly role = new WatchCell<Role>("leader");
  readonly leader: WatchCell<NodeId | null>;
  readonly available = new WatchCell<boolean>(true);
  readonly started: Promise<void>;
  readonly #client: Etcd3;
  readonly #ownClient: boolean;
  readonly #now: () => number;
  readonly #callMs: number;
  readonly #attemptMs: number;
  readonly #unavailableMs: number;
  /** The end (epoch ms) of each call in flight, by its request object: the call options cap every attempt at it. */
  readonly #ends = new WeakMap<object, number>();
  readonly #headKey: Buffer;
  readonly #logPrefix: string;
  readonly #snapKey: Buffer;
  readonly #snapPrefix: string;
  #head: Head | null = null;
  /** The newest head stamp seen (read or written); never decreases. */
  #stampFloor = 0;
  /** The newest head read or written (by index), for `status()`. */
  #newestHead: Head | null = null;
  readonly #maxAheadMs: number;
  readonly #onWarning: (message: string) => void;
  /** The last head read's `EtcdLogCorruptError` message, until a head parses again. */
  #corrupt: string | null = null;
  #clockAhead: EtcdLogStatus["clockAhead"] = null;
  readonly #queue: Queued[] = [];
  #pumping = false;
  /** The pump's run (settled when it stops), and the batch whose transaction is in flight: `close()` waits for them. */
  #pumpRun: Promise<void> = Promise.resolve();
  #inflight: readonly Queued[] = [];
  /** Most command bytes per transaction: ETCD_BATCH_BYTES, halved when etcd finds a batch too large, grown back after successes. */
  readonly #batchLimit = new EtcdBatchLimit(ETCD_BATCH_BYTES);
  #probing = false;
  #publishRun: Promise<void> = Promise.resolve();
  #closed = false;
  #closing: Promise<void> | null = null;
  #lastOk = Date.now();
  readonly #probe: NodeJS.Timeout;
  readonly #wakers = new Set<() => void>();
  /** Every reader's tail state, for the stalled-watch check. */
  readonly #tails = new Set<{ next: () => LogIndex; idle: boolean; behindSince: number | null; stale: boolean; poke: () => void }>();
  #snapshotBusy = false;
  #snapshotNext: { throughIndex: LogIndex; state: Uint8Array } | null = null;
  readonly #counts: Record<EtcdCounter, number> = { transactions: 0, entries: 0, races: 0, resyncs: 0, snapshots: 0, compacted: 0, stalls: 0, overflows: 0, refusals: 0, splits: 0, malformed: 0 };

  constructor(o: EtcdControlLogOptions) {
    if (typeof o !== "object" || o === null) throw new TypeError("etcdControlLog needs an options object");
    if (typeof o.id !== "string" || o.id.length === 0) throw new TypeError("id: this member's replica id (a non-empty string) is required");
    if (o.id.length > ETCD_MAX_ID_CHARS) throw new RangeError(`id: at most ETCD_MAX_ID_CHARS (${ETCD_MAX_ID_CHARS}) characters (it is written into head); got ${o.id.length}`);
    if (o.now !== undefined && typeof o.now !== "function") throw new TypeError("now: must be a function returning whole milliseconds since the epoch (e.g. Date.now)");
    if (o.onWarning !== undefined && typeof o.onWarning !== "function") throw new TypeError("onWarning: must be a function taking one message");
    const { min, max } = ETCD_MAX_CLOCK_AHEAD_BOUNDS;
    if (o.maxClockAheadMs !== undefined && (!Number.isSafeInteger(o.maxClockAheadMs) || o.maxClockAheadMs < min || o.maxClockAheadMs > max)) {
      throw new RangeError(`maxClockAheadMs: must be a whole number of ms in ${min} … ${max} (default ${ETCD_MAX_CLOCK_AHEAD_MS}); got ${String(o.maxClockAheadMs)}`);
    }
    this.#maxAheadMs = o.maxClockAheadMs ?? ETCD_MAX_CLOCK_AHEAD_MS;
    this.#onWarning = o.onWarning ?? (() => {});
    const prefix = o.prefix ?? DEFAULT_ETCD_PREFIX;
    if (typeof prefix !== "string" || prefix.length === 0) throw new RangeError("prefix: must be a non-empty string (e.g. \"heddle/control/\")");
    for (const [k, v] of [["callTimeoutMs", o.callTimeoutMs], ["attemptTimeoutMs", o.attemptTimeoutMs], ["unavailableAfterMs", o.unavailableAfterMs], ["probeEveryMs", o.probeEveryMs]] as const) {
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) throw new RangeError(`${k}: must be a positive integer number of ms`);
    }
    this.id = o.id;
    this.prefix = prefix;
    this.leader = new WatchCell<NodeId | null>(o.id);
    this.#now = o.now ?? Date.now;
    this.#callMs = o.callTimeoutMs ?? 5_000;
    this.#attemptMs = Math.min(o.attemptTimeoutMs ?? ETCD_ATTEMPT_TIMEOUT_MS, this.#callMs);
    this.#unavailableMs = o.unavailableAfterMs ?? 3_000;
    this.#headKey = buf(`${prefix}head`);
    this.#logPrefix = `${prefix}log/`;
    this.#snapKey = buf(`${prefix}snapshot`);
    this.#snapPrefix = `${prefix}snap/`;
    if (o.client !== undefined) {
      this.#client = o.client;
      this.#ownClient = false;
    } else {
      const endpoints = o.endpoints;
      if (!Array.isArray(endpoints) || endpoints.length === 0 || !endpoints.every((e) => typeof e === "string" && /^https?:\/\/[^/]+\/?$/.test(e))) {
        throw new RangeError("endpoints: give one or more etcd client URLs such as \"http://127.0.0.1:2379\" (or pass a client)");
      }
      const opts: IOptions = {
        hosts: [...endpoints],
        grpcOptions: { "grpc.max_receive_message_length": ETCD_MAX_RECEIVE_BYTES },
        faultHandling: this.#faultHandling(),
        // each attempt its own deadline, never past its call's end; an attempt due after that end is not sent
        defaultCallOptions: (ctx) => {
          if (ctx.isStream) return {};
          const now = Date.now();
          const end = ("params" in ctx ? this.#ends.get(ctx.params as object) : undefined) ?? now + this.#attemptMs;
          if (end <= now) throw new CallEndedError("the etcd call reached its deadline before this attempt");
          return { deadline: new Date(Math.min(now + this.#attemptMs, end)) };
        },
      };
      if (o.tls !== undefined) {
        (opts as { credentials?: IOptions["credentials"] }).credentials = {
          rootCertificate: Buffer.from(o.tls.ca),
          ...(o.tls.key !== undefined ? { privateKey: Buffer.from(o.tls.key) } : {}),
          ...(o.tls.cert !== undefined ? { certChain: Buffer.from(o.tls.cert) } : {}),
        };
      }
      if (o.auth !== undefined) (opts as { auth?: IOptions["auth"] }).auth = { username: o.auth.username, password: o.auth.password };
      this.#client = new (etcd3().Etcd3)(opts);
      this.#ownClient = true;
    }
    const where = o.client !== undefined ? "the given client" : (o.endpoints ?? []).join(", ");
    this.started = this.#readHead().then(
      (h) => {
        this.#head = h;
      },
      (e: unknown) => {
        if (e instanceof EtcdLogCorruptError) throw e; // etcd answered: what is wrong is under the prefix
        if (e instanceof EtcdRefusedError) throw new EtcdUnreachableError(`etcd at ${where} refused the first read: ${e.message}`, { cause: e });
        throw new EtcdUnreachableError(`etcd at ${where} did not answer (${(e as Error).message}); check the endpoints, that etcd runs, and the TLS/auth settings`, { cause: e });
      },
    );
    this.started.catch(() => {});
    this.#probe = setInterval(() => void this.#probeOnce(), o.probeEveryMs ?? 1_000);
    this.#probe.unref();
  }

  counters(): Readonly<Record<EtcdCounter, number>> {
    return { ...this.#counts };
  }

  status(): EtcdLogStatus {
    const h = this.#newestHead;
    return {
      available: this.available.get(),
      head: h === null ? null : { index: h.index, stamp: h.stamp, stampedBy: h.by },
      corrupt: this.#corrupt,
      clockAhead: this.#clockAhead,
      maxClockAheadMs: this.#maxAheadMs,
    };
  }

  #warn(message: string): void {
    try {
      this.#onWarning(message);
    } catch {
      // the operator's logger failing must not stop the log
    }
  }

  /** This member's clock, or a `RangeError` naming the option when it is not whole ms in 0 … ETCD_MAX_STAMP. */
  #clock(): number {
    const t = this.#now();
    if (!isStamp(t)) {
      throw new RangeError(
        `now: the etcd control log's clock returned ${String(t)}, not whole milliseconds since the epoch in 0 … ${ETCD_MAX_STAMP}; nothing was appended — give a clock in milliseconds such as Date.now (not seconds, µs or ns, and rounded)`,
      );
    }
    return t;
  }

  /**
   * etcd3's fault handling for a client this log builds. Per member: a breaker that skips it for ETCD_HOST_REST_MS
   * after ETCD_HOST_FAILURES_TO_REST transient failures in a row. Per call: up to ETCD_CALL_ATTEMPTS attempts, each
   * on the next member of etcd3's shuffled round, retried on a transient failure and when every member rests
   * (etcd3's default gave up then); a refusal (`refusalOf`) and an ended call are not retried.
   */
  #faultHandling(): NonNullable<IOptions["faultHandling"]> {
    const ck = cockatiel();
    const { isRecoverableError } = etcd3();
    const transient = (e: Error): boolean => isRecoverableError(e) && refusalOf(e, this.prefix) === null;
    return {
      host: (): IPolicy => ck.circuitBreaker(ck.handleWhen(transient), { halfOpenAfter: ETCD_HOST_REST_MS, breaker: new ck.ConsecutiveBreaker(ETCD_HOST_FAILURES_TO_REST) }),
      global: ck.retry(ck.handleWhen((e) => transient(e) || ck.isBrokenCircuitError(e)), {
        maxAttempts: ETCD_CALL_ATTEMPTS,
        backoff: new ck.ExponentialBackoff({ initialDelay: 20, maxDelay: 250 }),
      }).dangerouslyUnref(),
    };
  }

  /**
   * One etcd call on `req`, ended after `ms` (default callTimeoutMs) whatever its attempts do. A refusal becomes
   * an `EtcdRefusedError`; anything else is rethrown as it came (transient).
   */
  #call<R extends object, T>(req: NoInfer<R>, run: (req: R, opts: { deadline: Date } | undefined) => Promise<T>, ms = this.#callMs): Promise<T> {
    const end = Date.now() + ms;
    // the log's own client caps each attempt at `end` (defaultCallOptions); a given client gets one deadline
    const opts = this.#ownClient ? undefined : { deadline: new Date(end) };
    if (this.#ownClient) this.#ends.set(req, end);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`etcd did not answer within ${ms} ms`)), ms);
      timer.unref();
      run(req, opts).then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e: unknown) => {
          clearTimeout(timer);
          const refused = refusalOf(e, this.prefix);
          if (refused !== null) this.#counts.refusals++;
          reject(refused ?? e);
        },
      );
    });
  }

  #ok(): void {
    this.#lastOk = Date.now();
    this.available.set(true);
    this.leader.set(this.id);
  }

  async #probeOnce(): Promise<void> {
    if (this.#closed) return;
    // judged on every tick, not only when a probe fails: a hung etcd fails a probe only at its deadline
    if (Date.now() - this.#lastOk >= this.#unavailableMs) {
      this.available.set(false);
      this.leader.set(null);
    }
    if (this.#probing) return; // one probe at a time: ticks while one hangs only judge the time since etcd last answered
    this.#probing = true;
    try {
      const r = await this.#call({ key: this.#headKey }, (q, o) => this.#client.kv.range(q, o), Math.min(this.#callMs, this.#unavailableMs));
      // judged before etcd counts as answering: a malformed head refuses every append, so the writer gate closes
      const head = this.#headOf(r.kvs[0]);
      this.#ok();
      this.#checkTails(head.index);
    } catch {
      if (Date.now() - this.#lastOk >= this.#unavailableMs) {
        this.available.set(false);
        this.leader.set(null);
      }
    } finally {
      this.#probing = false;
    }
  }

  /** Replaces the watch of every reader that has waited on it while the head stood ahead for ETCD_WATCH_STALL_MS. */
  #checkTails(headIndex: LogIndex): void {
    const now = Date.now();
    for (const t of this.#tails) {
      if (!t.idle || headIndex < t.next()) {
        t.behindSince = null;
        continue;
      }
      if (t.behindSince === null) t.behindSince = now;
      else if (now - t.behindSince >= ETCD_WATCH_STALL_MS) {
        t.behindSince = null;
        t.stale = true;
        this.#counts.stalls++;
        t.poke();
      }
    }
  }

  async #readHead(): Promise<Head> {
    const r = await this.#call({ key: this.#headKey }, (q, o) => this.#client.kv.range(q, o));
    const head = this.#headOf(r.kvs[0]);
    this.#ok();
    return head;
  }

  /**
   * Parses a `head` value read from etcd, raising the stamp floor to its stamp; a malformed one is an
   * `EtcdLogCorruptError` naming the key, its revision and what to do, and is shown in `status().corrupt` until a
   * head parses again.
   */
  #headOf(kv: IKeyValue | undefined): Head {
    let head: Head;
    try {
      head = kv === undefined ? { index: 0, stamp: 0, by: null, rev: "0" } : this.#parseHead(kv);
    } catch (e) {
      this.#counts.malformed++;
      const m = (e as Error).message;
      if (this.#corrupt !== m) this.#warn(`etcd control log: ${m}`);
      this.#corrupt = m;
      throw e;
    }
    if (this.#corrupt !== null) this.#warn(`etcd control log: ${this.#headKey.toString("utf8")} parses again (index ${head.index}); appends resume`);
    this.#corrupt = null;
    this.#sawHead(head);
    return head;
  }

  #parseHead(kv: IKeyValue): Head {
    const key = this.#headKey.toString("utf8");
    const bad = (why: string, cause?: unknown): EtcdLogCorruptError =>
      new EtcdLogCorruptError(
        `${key} at mod revision ${kv.mod_revision} is not a head this log writes (${why}), so no member can append or read linearizably: ` +
          `find what wrote it (another tool writing under ${JSON.stringify(this.prefix)}, or an older member whose clock was in the wrong unit) and stop it, ` +
          `then rewrite it: etcdctl put ${key} '{"index":<the last index under ${this.#logPrefix}>,"stamp":<that entry's stamp, whole ms since the epoch>}'`,
        cause === undefined ? undefined : { cause },
      );
    let x: unknown;
    try {
      x = JSON.parse(kv.value.toString("utf8"));
    } catch (e) {
      throw bad(`not JSON: ${JSON.stringify(kv.value.subarray(0, 64).toString("utf8"))}`, e);
    }
    if (typeof x !== "object" || x === null || Array.isArray(x)) throw bad("not a JSON object");
    const { index, stamp: raw, by } = x as Record<string, unknown>;
    if (!isIndex(index)) throw bad(`index ${JSON.stringify(index)} is not a whole number ≥ 0`);
    const stamp = readStamp(raw);
    if (stamp === null) throw bad(`stamp ${JSON.stringify(raw)} is not a number of milliseconds up to ${ETCD_MAX_STAMP}`);
    if (by !== undefined && (typeof by !== "string" || by.length === 0 || by.length > ETCD_MAX_ID_CHARS)) throw bad(`by is not a member id of 1 … ${ETCD_MAX_ID_CHARS} characters`);
    return { index: index as number, stamp, by: (by as string | undefined) ?? null, rev: kv.mod_revision };
  }

  /**
   * A head read or written: raises the stamp floor, keeps the newest for `status()`, and judges its stamp against
   * this member's clock (`maxClockAheadMs`): a warning when it starts (or another member's clock sets it), and when it ends.
   */
  #sawHead(head: Head): void {
    this.#raiseStampFloor(head.stamp);
    if (this.#newestHead === null || head.index >= this.#newestHead.index) this.#newestHead = head;
    const newest = this.#newestHead;
    const local = this.#now();
    if (!isStamp(local)) return; // a clock in the wrong unit: propose says so
    const aheadMs = newest.stamp - local;
    const was = this.#clockAhead;
    if (aheadMs > this.#maxAheadMs) {
      const who = newest.by === null ? "a member (not recorded)" : `member ${JSON.stringify(newest.by)}`;
      const message =
        `the control log's head (index ${newest.index}) is stamped ${aheadMs} ms past this member's clock (maxClockAheadMs ${this.#maxAheadMs}), by ${who}: ` +
        `claims time jumped that far ahead for every member — leases taken before it lapsed at once, and it stands still (no lease lapses) until real time catches up. ` +
        `Fix that member's clock (NTP), or this member's if it runs behind; stamps never run backwards`;
      this.#clockAhead = { aheadMs, stampedBy: newest.by, index: newest.index, message };
      if (was === null || was.stampedBy !== newest.by) this.#warn(`etcd control log: ${message}`);
    } else if (was !== null) {
      this.#clockAhead = null;
      this.#warn(`etcd control log: the head's stamp is back within maxClockAheadMs (${this.#maxAheadMs} ms) of this member's clock`);
    }
  }

  #raiseStampFloor(stamp: number): void {
    // the claims table judges at whole milliseconds (`Math.floor` of an entry's stamp)
    const s = Math.floor(stamp);
    if (s > this.#stampFloor) this.#stampFloor = s;
  }

  stampFloor(): number {
    return this.#stampFloor;
  }

  // ---------------------------------------------------------------------------------------------- propose

  propose(command: Uint8Array, key: ProposalKey | null, signal?: AbortSignal): Promise<{ index: LogIndex; term: number }> {
    if (this.#closed) return Promise.reject(new NodeShutdownError("the etcd control log was closed"));
    if (!(command instanceof Uint8Array)) return Promise.reject(new TypeError("propose: command must be a Uint8Array"));
    if (command.length > ETCD_BATCH_BYTES) return Promise.reject(new RangeError(`propose: ${command.length} bytes exceed ETCD_BATCH_BYTES (${ETCD_BATCH_BYTES})`));
    if (signal?.aborted) return Promise.reject(new ProposalAbortedError("aborted"));
    try {
      this.#clock();
    } catch (e) {
      return Promise.reject(e as RangeError);
    }
    if (this.#queue.length >= ETCD_MAX_QUEUED_PROPOSALS) return Promise.reject(new LeadershipLostError(`more than ${ETCD_MAX_QUEUED_PROPOSALS} proposals wait for etcd; retry later`));
    return new Promise((resolve, reject) => {
      const q: Queued = {
        command,
        key,
        done: false,
        resolve: (v) => {
          if (q.done) return;
          q.done = true;
          signal?.removeEventListener("abort", onAbort);
          resolve(v);
        },
        reject: (e) => {
          if (q.done) return;
          q.done = true;
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      };
      // an abort answers at once; a transaction already sent may still commit the entry (a retry is a replay)
      const onAbort = (): void => q.reject(new ProposalAbortedError("aborted; the entry may still be appended"));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(q);
      if (!this.#pumping) this.#pumpRun = this.#pump();
    });
  }

  /** Appends queued proposals, a batch per transaction, one transaction at a time. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#closed) {
        while (this.#queue.length > 0 && this.#queue[0]!.done) this.#queue.shift();
        if (this.#queue.length === 0) return;
        const batch: Queued[] = [];
        let bytes = 0;
        for (const q of this.#queue) {
          if (q.done) continue;
          if (batch.length >= ETCD_BATCH_ENTRIES || (batch.length > 0 && bytes + q.command.length > this.#batchLimit.bytes)) break;
          batch.push(q);
          bytes += q.command.length;
        }
        for (const q of batch) this.#queue.splice(this.#queue.indexOf(q), 1);
        this.#inflight = batch;
        try {
          const first = await this.#append(batch);
          this.#batchLimit.onWritten();
          batch.forEach((q, i) => q.resolve({ index: first + i, term: 0 }));
        } catch (e) {
          if (e instanceof EtcdRefusedError && e.reason === "too-large" && batch.length > 1 && !this.#closed) {
            // refused, so not written: the cluster's --max-request-bytes is below our batch; send smaller ones
            this.#batchLimit.onRefused(bytes);
            this.#counts.splits++;
            this.#queue.unshift(...batch.filter((q) => !q.done));
            continue;
          }
          // a refusal was not written (say why at once); a shutdown before sending neither; a malformed head (read
          // before sending, or as a lost race's answer) or a clock the log refuses neither; else the outcome is unknown
          const definite = e instanceof NodeShutdownError || e instanceof EtcdRefusedError || e instanceof EtcdLogCorruptError || e instanceof RangeError;
          const err = definite ? e : new LeadershipLostError(`etcd did not confirm the append (${(e as Error).message}); it may still have committed — retry with the same key`);
          for (const q of batch) q.reject(err);
        } finally {
          this.#inflight = [];
        }
      }
    } finally {
      this.#pumping = false;
      if (this.#closed) for (const q of this.#queue.splice(0)) q.reject(new NodeShutdownError("the etcd control log was closed"));
    }
  }

  /** One batch: compare-and-append on `head` until it wins. Returns the first index. */
  async #append(batch: readonly Queued[]): Promise<LogIndex> {
    for (;;) {
      if (this.#closed) throw new NodeShutdownError("the etcd control log was closed");
      const head = this.#head ?? (this.#head = await this.#readHead());
      if (this.#closed) throw new NodeShutdownError("the etcd control log was closed"); // nothing sent: not written
      const first = head.index + 1;
      const local = this.#clock();
      // clamped to head's stamp (never backwards); `by` names the member whose clock gave the stamp
      const stamp = Math.max(local, head.stamp);
      // (unknown when a clamped stamp came from a head that did not record it: then `by` stays absent)
      const by = local >= head.stamp ? this.id : head.by;
      const last = first + batch.length - 1;
      const success: IRequestOp[] = [{ request_put: { key: this.#headKey, value: buf(JSON.stringify({ index: last, stamp, ...(by !== null ? { by } : {}) })) } }];
      batch.forEach((q, i) => success.push({ request_put: { key: buf(`${this.#logPrefix}${pad(first + i)}`), value: encodeEtcdEntry(stamp, q.key, q.command) } }));
      let r;
      try {
        r = await this.#call(
          { compare: [{ key: this.#headKey, target: "Mod", result: "Equal", mod_revision: head.rev }], success, failure: [{ request_range: { key: this.#headKey } }] },
          (q, o) => this.#client.kv.txn(q, o),
        );
      } catch (e) {
        this.#head = null; // unknown whether it landed: read head afresh next time
        throw e;
      }
      this.#counts.transactions++;
      if (r.succeeded) {
        this.#ok();
        this.#head = { index: last, stamp, by, rev: r.header.revision };
        this.#sawHead(this.#head);
        this.#counts.entries += batch.length;
        return first;
      }
      this.#counts.races++;
      this.#head = this.#headOf(r.responses[0]?.response_range.kvs[0]);
      this.#ok();
    }
  }

  // ---------------------------------------------------------------------------------------------- reads

  async readIndex(): Promise<LogIndex> {
    if (this.#closed) throw new NodeShutdownError("the etcd control log was closed");
    try {
      return (await this.#readHead()).index;
    } catch (e) {
      if (e instanceof EtcdRefusedError || e instanceof EtcdLogCorruptError) throw e; // etcd answered: a definite refusal
      throw new LeadershipLostError(`etcd did not answer the linearizable read (${(e as Error).message})`, { cause: e });
    }
  }

  committedFrom(fromIndex: LogIndex): AsyncIterable<Committed> {
    if (!Number.isSafeInteger(fromIndex) || fromIndex < 1) throw new RangeError("committedFrom: fromIndex must be a safe integer ≥ 1");
    return { [Symbol.asyncIterator]: () => this.#reader(fromIndex) };
  }

  async *#reader(fromIndex: LogIndex): AsyncGenerator<Committed> {
    let next = fromIndex;
    let backoff = 50;
    // watch events waiting to be applied: at most ETCD_MAX_PENDING_EVENTS, the last of them an "overflow" mark
    const events: ({ kind: "put"; kv: IKeyValue } | { kind: "broken" } | { kind: "overflow" })[] = [];
    let wake: (() => void) | null = null;
    const poke = (): void => {
      const w = wake;
      wake = null;
      w?.();
    };
    this.#wakers.add(poke);
    const tail = { next: () => next, idle: false, behindSince: null as number | null, stale: false, poke };
    this.#tails.add(tail);
    let watcher: Watcher | null = null;
    /** Stops listening to the watch (its queued events stay). */
    const detach = (): void => {
      const w = watcher;
      watcher = null;
      w?.removeAllListeners();
      w?.on("error", () => {});
      void w?.cancel().catch(() => {});
    };
    const dropWatcher = (): void => {
      detach();
      events.length = 0;
    };
    /**
     * Queues a watch event; the one that would fill the queue is replaced by an "overflow" mark and the watch is
     * cancelled: the reader applies what is queued, then reads ranged from its next index (etcd still holds every
     * entry the watch would have sent — none is dropped, only re-read).
     */
    const enqueue = (ev: { kind: "put"; kv: IKeyValue } | { kind: "broken" }): void => {
      const last = events[events.length - 1];
      if (last !== undefined && last.kind !== "put") return; // the watch is done with already
      if (events.length >= ETCD_MAX_PENDING_EVENTS - 1) {
        events.push({ kind: "overflow" });
        this.#counts.overflows++;
        detach();
      } else events.push(ev);
      poke();
    };
    try {
      while (!this.#closed) {
        // ── catch up: one consistent read of the log from `next` and the snapshot meta ──
        let rev: string;
        let caughtUp = false;
        try {
          const r = await this.#call(
            {
              compare: [],
              success: [
                { request_range: { key: buf(`${this.#logPrefix}${pad(next)}`), range_end: prefixEnd(this.#logPrefix), limit: ETCD_READ_BATCH } },
                { request_range: { key: this.#snapKey } },
              ],
            },
            (q, o) => this.#client.kv.txn(q, o),
          );
          this.#ok();
          rev = r.header.revision;
          const kvs = r.responses[0]!.response_range.kvs;
          const firstIndex = kvs.length > 0 ? this.#indexOf(kvs[0]!) : null;
          if (firstIndex === null || firstIndex > next) {
            const meta = this.#metaOf(r.responses[1]!.response_range.kvs[0]);
            if (meta !== null && meta.throughIndex >= next) {
              const state = await this.#loadSnapshot(meta);
              if (state === null) continue; // replaced meanwhile: read again
              yield { kind: "install", snapshot: { throughIndex: meta.throughIndex, state } };
              next = meta.throughIndex + 1;
              continue;
            }
            if (firstIndex !== null) throw new EtcdLogCorruptError(`the log under ${this.prefix} jumps from index ${next - 1} to ${firstIndex} with no snapshot covering the gap`);
            caughtUp = true;
          } else {
            for (const kv of kvs) {
              const idx = this.#indexOf(kv);
              if (idx !== next) throw new EtcdLogCorruptError(`the log under ${this.prefix} holds index ${idx} where ${next} was expected`);
              yield this.#item(idx, kv);
              next++;
            }
            caughtUp = !r.responses[0]!.response_range.more;
          }
          backoff = 50;
        } catch (e) {
          if (e instanceof EtcdLogCorruptError) throw e;
          if (this.#closed) return;
          await new Promise<void>((res) => {
            wake = res;
            setTimeout(poke, backoff).unref();
          });
          backoff = Math.min(backoff * 2, 2_000);
          continue;
        }
        if (!caughtUp) continue;

        // ── tail: watch the log range from the revision after the read ──
        try {
          const w = this.#client.watch().prefix(this.#logPrefix).startRevision(String(BigInt(rev) + 1n)).watcher();
          watcher = w;
          w.on("put", (kv) => enqueue({ kind: "put", kv }));
          const broken = (): void => enqueue({ kind: "broken" });
          w.on("disconnected", broken);
          w.on("error", broken);
          w.on("end", broken);
        } catch {
          dropWatcher();
          continue;
        }
        tail: while (!this.#closed) {
          if (tail.stale) {
            tail.stale = false;
            break tail; // the watch stalled: read ranged from `next` and watch again
          }
          if (events.length === 0) {
            tail.idle = true;
            await new Promise<void>((res) => {
              wake = res;
            });
            tail.idle = false;
            continue;
          }
          const ev = events.shift()!;
          if (ev.kind !== "put") break; // broken, or the queue overflowed: read ranged from `next`
          const idx = this.#indexOf(ev.kv);
          if (idx < next) continue; // a repeat (a resumed watch replays)
          if (idx > next) break tail; // a gap: read ranged from `next`
          yield this.#item(idx, ev.kv);
          next++;
        }
        this.#counts.resyncs++;
        dropWatcher();
      }
    } finally {
      this.#wakers.delete(poke);
      this.#tails.delete(tail);
      dropWatcher();
    }
  }

  #indexOf(kv: IKeyValue): LogIndex {
    const k = kv.key.toString("utf8");
    const s = k.slice(this.#logPrefix.length);
    if (!k.startsWith(this.#logPrefix) || !/^\d{16}$/.test(s) || !Number.isSafeInteger(Number(s)) || Number(s) < 1) throw new EtcdLogCorruptError(`an unexpected key ${JSON.stringify(k)} in the log range`);
    return Number(s);
  }

  #item(index: LogIndex, kv: IKeyValue): Committed {
    let d: ReturnType<typeof decodeEtcdEntry>;
    try {
      d = decodeEtcdEntry(kv.value);
    } catch (e) {
      this.#counts.malformed++;
      const k = kv.key.toString("utf8");
      throw new EtcdLogCorruptError(
        `${k} at mod revision ${kv.mod_revision} is ${(e as Error).message}; the control plane halts here rather than skip an act — find what wrote it and stop it, ` +
          `then restore ${JSON.stringify(this.prefix)} from an etcd backup taken before that revision`,
        { cause: e },
      );
    }
    const { stamp, key, command } = d;
    return { kind: "entry", entry: { index, term: 0, kind: "app", key, command, stampedAt: stamp } };
  }

  #metaOf(kv: IKeyValue | undefined): { throughIndex: LogIndex; chunks: number; bytes: number; rev: string } | null {
    return parseJson<{ throughIndex: number; chunks: number; bytes: number }>(kv, "snapshot", (x) => isIndex(x.throughIndex) && isIndex(x.chunks) && isIndex(x.bytes));
  }

  /** The snapshot's bytes, or null when its chunks were replaced meanwhile. */
  async #loadSnapshot(meta: { throughIndex: LogIndex; chunks: number; bytes: number }): Promise<Uint8Array | null> {
    const p = `${this.#snapPrefix}${pad(meta.throughIndex)}/`;
    // in pages of ETCD_SNAPSHOT_READ_CHUNKS, every page at the first page's revision (one consistent view)
    const parts: Buffer[] = [];
    let from = buf(p);
    let revision: string | undefined;
    for (;;) {
      const r = await this.#call({ key: from, range_end: prefixEnd(p), limit: ETCD_SNAPSHOT_READ_CHUNKS, ...(revision !== undefined ? { revision } : {}) }, (q, o) => this.#client.kv.range(q, o));
      revision ??= r.header.revision;
      for (const kv of r.kvs) parts.push(kv.value);
      if (!r.more || r.kvs.length === 0) break;
      from = Buffer.concat([r.kvs[r.kvs.length - 1]!.key, Buffer.from([0])]);
    }
    if (parts.length !== meta.chunks) return null;
    const out = Buffer.concat(parts);
    if (out.length !== meta.bytes) return null;
    return new Uint8Array(out);
  }

  // ---------------------------------------------------------------------------------------------- snapshots

  publishSnapshot(s: { throughIndex: LogIndex; state: Uint8Array }): void {
    if (this.#closed) return;
    if (!Number.isSafeInteger(s.throughIndex) || s.throughIndex < 1 || !(s.state instanceof Uint8Array)) throw new RangeError("publishSnapshot: needs a throughIndex ≥ 1 and state bytes");
    this.#snapshotNext = { throughIndex: s.throughIndex, state: s.state };
    if (this.#snapshotBusy) return;
    this.#snapshotBusy = true;
    this.#publishRun = (async () => {
      try {
        while (this.#snapshotNext !== null && !this.#closed) {
          const snap = this.#snapshotNext;
          this.#snapshotNext = null;
          await this.#publish(snap).catch(() => {}); // best effort: the next one (or another member's) compacts
        }
      } finally {
        this.#snapshotBusy = false;
      }
    })();
  }

  /**
   * Publishes one snapshot: chunks, meta swap, compaction — each an etcd call. After `close()` no further step is
   * sent (chunks written before it are deleted by the next snapshot published above them).
   */
  async #publish(s: { throughIndex: LogIndex; state: Uint8Array }): Promise<void> {
    const kv = this.#client.kv;
    const step = <R extends object, T>(req: NoInfer<R>, run: (q: R, o: { deadline: Date } | undefined) => Promise<T>): Promise<T> => {
      if (this.#closed) return Promise.reject(new NodeShutdownError("the etcd control log was closed"));
      return this.#call(req, run);
    };
    const cur = this.#metaOf((await step({ key: this.#snapKey }, (q, o) => kv.range(q, o))).kvs[0]);
    if (cur !== null && cur.throughIndex >= s.throughIndex) return;
    const p = `${this.#snapPrefix}${pad(s.throughIndex)}/`;
    const chunks = Math.max(1, Math.ceil(s.state.length / ETCD_SNAPSHOT_CHUNK_BYTES));
    for (let c = 0; c < chunks; c++) {
      const part = s.state.subarray(c * ETCD_SNAPSHOT_CHUNK_BYTES, (c + 1) * ETCD_SNAPSHOT_CHUNK_BYTES);
      await step({ key: buf(`${p}${String(c).padStart(6, "0")}`), value: Buffer.from(part) }, (q, o) => kv.put(q, o));
    }
    const meta = buf(JSON.stringify({ throughIndex: s.throughIndex, chunks, bytes: s.state.length }));
    const r = await step(
      { compare: [{ key: this.#snapKey, target: "Mod", result: "Equal", mod_revision: cur?.rev ?? "0" }], success: [{ request_put: { key: this.#snapKey, value: meta } }], failure: [{ request_range: { key: this.#snapKey } }] },
      (q, o) => kv.txn(q, o),
    );
    if (!r.succeeded) {
      // another member published first; drop our chunks unless they are the very snapshot it published
      const won = this.#metaOf(r.responses[0]?.response_range.kvs[0]);
      if (won === null || won.throughIndex !== s.throughIndex) await step({ key: buf(p), range_end: prefixEnd(p) }, (q, o) => kv.deleteRange(q, o));
      return;
    }
    this.#counts.snapshots++;
    // compaction: the entries the snapshot covers, and every older snapshot's chunks
    const d = await step({ key: buf(this.#logPrefix), range_end: buf(`${this.#logPrefix}${pad(s.throughIndex + 1)}`) }, (q, o) => kv.deleteRange(q, o));
    this.#counts.compacted += Number(d.deleted);
    await step({ key: buf(this.#snapPrefix), range_end: buf(p) }, (q, o) => kv.deleteRange(q, o));
  }

  // ---------------------------------------------------------------------------------------------- close

  /**
   * Closes the log. Proposals not yet sent are rejected with `NodeShutdownError` (nothing of them was written); the
   * append transaction in flight, if any, and a snapshot publish step are waited for — at most `callTimeoutMs`, the
   * bound of one etcd call — so its proposers get its real answer (their index, or `LeadershipLostError` when etcd
   * did not answer: it may have committed, retry by key). Readers end. Then a client the log built is closed.
   *
   * A caller may rely on this once the promise resolves: every proposal made before has been answered; this log
   * sends no further write (no append, no snapshot or compaction step) to etcd; and with a client the log built, no
   * call of it is left running — an attempt still in flight when the wait ended had reached its deadline (attempts
   * never outlive their call), and no attempt is sent after its call's end. A second `close()` resolves with the
   * first.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#probe);
    for (const q of this.#queue.splice(0)) q.reject(new NodeShutdownError("the etcd control log was closed"));
    for (const w of [...this.#wakers]) w();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([this.#pumpRun, this.#publishRun]),
      new Promise<void>((r) => (timer = setTimeout(r, this.#callMs))),
    ]);
    clearTimeout(timer);
    // not settled within one call's bound (cannot happen with a built client: each call ends by its deadline)
    for (const q of this.#inflight) q.reject(new LeadershipLostError("the etcd control log was closed before etcd confirmed the append; it may still have committed — retry with the same key"));
    if (this.#ownClient) this.#client.close();
  }
}
