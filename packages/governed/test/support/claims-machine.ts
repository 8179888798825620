/**
 * The claims command family (governed.md §3.4, claims.md §2 "Where the table runs") as a test state machine over
 * the Raft log: every replica folds committed entries, in log order, into its own `ClaimsTable`, at
 * `now = max(claimsNow, entry.stampedAt)` (the leader's stamp, clamped so time never runs backwards across
 * leaders) with the entry's index as the fencing token of a take. Commands have one canonical byte encoding;
 * keyed commands are deduplicated per `(client, seq)` with their outcome recorded (§3.10), so a retried proposal
 * that commits twice is decided once.
 */
import { createClaims } from "@heddle/claims";
import type { ClaimMode, ClaimsOptions, ClaimsTable, TakeOutcome, TakeRequest } from "@heddle/claims";
import type { Committed, LogEntry } from "../../src/index.ts";

/** One claims command, as proposed. `renew` extends by the claim's own `ttlMs`, as `ClaimsTable.renew` does. */
export type ClaimsCommand =
  | { readonly op: "take"; readonly request: TakeRequest }
  | { readonly op: "release"; readonly holder: string; readonly key: string }
  | { readonly op: "releaseAll"; readonly holder: string }
  | { readonly op: "releaseScope"; readonly scope: string }
  | { readonly op: "renew"; readonly holder: string; readonly key: string };

/** What applying one command returned: the table call's own answer. */
export type ClaimsResult =
  | { readonly op: "take"; readonly outcome: TakeOutcome }
  | { readonly op: "release" | "renew"; readonly held: boolean }
  | { readonly op: "releaseAll" | "releaseScope"; readonly released: readonly string[] }
  | { readonly op: "malformed" };

/** The tag every encoded claims command starts with; a decoder refuses any other. */
export const CLAIMS_COMMAND_TAG = "heddle-claims-cmd/1";

const enc = new TextEncoder();
const dec = new TextDecoder();

function orNull<T>(v: T | undefined): T | null {
  return v === undefined ? null : v;
}

function commandArray(c: ClaimsCommand): unknown[] {
  switch (c.op) {
    case "take": {
      const r = c.request;
      return [CLAIMS_COMMAND_TAG, "take", r.holder, r.resources.map((x) => [x.key, x.mode]), orNull(r.scope), orNull(r.ttlMs), orNull(r.label)];
    }
    case "release":
    case "renew":
      return [CLAIMS_COMMAND_TAG, c.op, c.holder, c.key];
    case "releaseAll":
      return [CLAIMS_COMMAND_TAG, c.op, c.holder];
    case "releaseScope":
      return [CLAIMS_COMMAND_TAG, c.op, c.scope];
  }
}

/** The canonical bytes of a command: a fixed-position JSON array, optional fields as `null`. */
export function encodeClaimsCommand(c: ClaimsCommand): Uint8Array {
  return enc.encode(JSON.stringify(commandArray(c)));
}

const isStr = (v: unknown): v is string => typeof v === "string";
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);

function fromArray(a: unknown): ClaimsCommand | null {
  if (!Array.isArray(a) || a[0] !== CLAIMS_COMMAND_TAG) return null;
  const op: unknown = a[1];
  if (op === "take" && a.length === 7) {
    const [, , holder, res, scope, ttl, label] = a as unknown[];
    if (!isStr(holder) || !Array.isArray(res)) return null;
    const resources: { key: string; mode: ClaimMode }[] = [];
    for (const x of res) {
      if (!Array.isArray(x) || x.length !== 2 || !isStr(x[0]) || (x[1] !== "exclusive" && x[1] !== "shared")) return null;
      resources.push({ key: x[0], mode: x[1] });
    }
    if ((scope !== null && !isStr(scope)) || (ttl !== null && !isInt(ttl)) || (label !== null && !isStr(label))) return null;
    const request: { -readonly [K in keyof TakeRequest]: TakeRequest[K] } = { holder, resources };
    if (scope !== null) request.scope = scope;
    if (ttl !== null) request.ttlMs = ttl;
    if (label !== null) request.label = label;
    return { op: "take", request };
  }
  if ((op === "release" || op === "renew") && a.length === 4 && isStr(a[2]) && isStr(a[3])) return { op, holder: a[2], key: a[3] };
  if (op === "releaseAll" && a.length === 3 && isStr(a[2])) return { op, holder: a[2] };
  if (op === "releaseScope" && a.length === 3 && isStr(a[2])) return { op, scope: a[2] };
  return null;
}

/** Decodes command bytes; `null` for anything that is not exactly the canonical encoding of a command. */
export function decodeClaimsCommand(bytes: Uint8Array): ClaimsCommand | null {
  let text: string;
  let parsed: unknown;
  try {
    text = dec.decode(bytes);
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const c = fromArray(parsed);
  if (c === null) return null;
  return JSON.stringify(commandArray(c)) === text ? c : null; // canonical only: one command, one byte string
}

/** Calls the table for one command at `now`, with `token` as a take's fencing token. */
export function applyClaimsCommand(table: ClaimsTable, c: ClaimsCommand | null, now: number, token: number): ClaimsResult {
  if (c === null) return { op: "malformed" };
  switch (c.op) {
    case "take":
      return { op: "take", outcome: table.take(c.request, now, token) };
    case "release":
      return { op: "release", held: table.release(c.holder, c.key, now) };
    case "renew":
      return { op: "renew", held: table.renew(c.holder, c.key, now) };
    case "releaseAll":
      return { op: "releaseAll", released: table.releaseAll(c.holder, now) };
    case "releaseScope":
      return { op: "releaseScope", released: table.releaseScope(c.scope, now) };
  }
}

/** One applied application entry, as the driver sees it. */
export interface AppliedClaims {
  readonly entry: LogEntry;
  readonly command: ClaimsCommand | null;
  /** The time the command was applied at: `max(claimsNow, stampedAt)`. */
  readonly now: number;
  readonly result: ClaimsResult;
  /** The recorded outcome text (a replayed duplicate returns the first one's). */
  readonly text: string;
  /** `true` when `(client, seq)` had already been decided and nothing changed. */
  readonly duplicate: boolean;
}

/** One replica of the replicated claims table. */
export class ClaimsMachine {
  readonly table: ClaimsTable;
  /** The `now` of the last applied claims command; never decreases. */
  claimsNow = 0;
  applied = 0;
  /** client → (seq → recorded outcome text) */
  readonly sessions = new Map<string, Map<number, string>>();

  constructor(options: ClaimsOptions) {
    this.table = createClaims(options);
  }

  /** Folds one committed item, which must be the next index; returns what an application entry did. */
  apply(c: Committed): AppliedClaims | null {
    if (c.kind === "install") throw new Error("ClaimsMachine: snapshots are not used by the claims simulation");
    const index = c.kind === "entry" ? c.entry.index : c.index;
    if (index !== this.applied + 1) throw new Error(`ClaimsMachine: applied ${index} after ${this.applied}`);
    this.applied = index;
    if (c.kind === "internal") return null;
    const e = c.entry;
    const command = decodeClaimsCommand(e.command);
    const prior = e.key === null ? undefined : this.sessions.get(e.key.client)?.get(e.key.seq);
    if (prior !== undefined) {
      return { entry: e, command, now: this.claimsNow, result: JSON.parse(prior) as ClaimsResult, text: prior, duplicate: true };
    }
    const now = Math.max(this.claimsNow, e.stampedAt);
    this.claimsNow = now;
    const result = applyClaimsCommand(this.table, command, now, e.index);
    const text = JSON.stringify(result);
    if (e.key !== null) {
      let s = this.sessions.get(e.key.client);
      if (s === undefined) {
        s = new Map();
        this.sessions.set(e.key.client, s);
      }
      s.set(e.key.seq, text);
    }
    return { entry: e, command, now, result, text, duplicate: false };
  }

  /** The recorded outcome of `(client, seq)`, if decided. */
  outcome(client: string, seq: number): string | undefined {
    return this.sessions.get(client)?.get(seq);
  }

  /** A canonical text of the whole replica state: equal states give equal text. */
  stateText(): string {
    const sessions = [...this.sessions]
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([c, m]) => [c, [...m].sort((a, b) => a[0] - b[0])]);
    return JSON.stringify({ applied: this.applied, claimsNow: this.claimsNow, table: this.table.encode(), sessions });
  }
}
