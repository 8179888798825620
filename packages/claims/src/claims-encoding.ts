import { claimKey, idProblem } from "./claim-key.ts";
import { CLAIMS_FORMAT, restoreClaims, tableConfig } from "./claims-table.ts";
import type { ClaimRecord } from "./claims-table.ts";
import type { ClaimMode, ClaimsTable } from "./claims-types.ts";
import { ClaimsDecodeError } from "./decode-error.ts";
import { MAX_LABEL_LENGTH, MAX_TABLE_TEXT } from "./limits.ts";

const TOP_KEYS = new Set(["format", "roster", "capacity", "maxPerHolder", "now", "lastToken", "claims"]);

function fail(why: string, bound?: "text"): never {
  throw new ClaimsDecodeError(`claims table: ${why}`, bound);
}

function int(v: unknown, what: string, min: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) fail(`${what} must be a safe integer ≥ ${min}`);
  return v;
}

function id(v: unknown, what: string): string {
  const problem = idProblem(v, what);
  if (problem !== undefined) fail(problem);
  return v as string;
}

/** A key as the table stores it: an id already trimmed. */
function key(v: unknown, what: string): string {
  const s = id(v, what);
  if (claimKey(s) !== s) fail(`${what} ${JSON.stringify(s)} carries surrounding white space`);
  return s;
}

function optional<T>(v: unknown, read: (x: unknown) => T): T | undefined {
  return v === null ? undefined : read(v);
}

/**
 * Rebuilds a table from `ClaimsTable.encode()` text. Any top-level field order and
 * any capacity order are accepted (the result re-encodes canonically); anything a
 * sequence of table operations could not have produced is rejected with
 * `ClaimsDecodeError`: unknown fields, wrong shapes, untrimmed or ill-formed ids,
 * duplicate roster or capacity keys, a claim off the roster, tokens out of order or
 * above `lastToken`, a claim granted after `now`, a holder recorded twice on one key,
 * or more holders on a key than its capacity and modes allow. `scopeEnded`, which
 * cannot be encoded, is supplied again by the caller.
 */
export function decodeClaims(text: string, options: { scopeEnded?: (scope: string) => boolean } = {}): ClaimsTable {
  if (typeof text !== "string") fail("input must be a string");
  if (text.length > MAX_TABLE_TEXT) fail(`input is longer than ${MAX_TABLE_TEXT} code units`, "text");
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    fail("not JSON");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) fail("not an object");
  const o = doc as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!TOP_KEYS.has(k)) fail(`unknown field ${JSON.stringify(k)}`);
  if (o["format"] !== CLAIMS_FORMAT) fail(`format must be ${JSON.stringify(CLAIMS_FORMAT)}`);

  let roster: string[] | undefined;
  if ("roster" in o) {
    if (!Array.isArray(o["roster"])) fail("roster must be a list");
    roster = o["roster"].map((k) => key(k, "roster key"));
  }
  const capacity: Record<string, number | null> = Object.create(null) as Record<string, number | null>;
  if ("capacity" in o) {
    const pairs = o["capacity"];
    if (!Array.isArray(pairs) || pairs.length === 0) fail("capacity must be a non-empty list of pairs");
    for (const p of pairs) {
      if (!Array.isArray(p) || p.length !== 2) fail("capacity entries must be [key, capacity] pairs");
      const k = key(p[0], "capacity key");
      if (Object.hasOwn(capacity, k)) fail(`capacity lists ${JSON.stringify(k)} twice`);
      capacity[k] = p[1] === null ? null : int(p[1], "capacity", 1);
    }
  }
  const maxPerHolder = "maxPerHolder" in o ? int(o["maxPerHolder"], "maxPerHolder", 1) : undefined;
  let config;
  try {
    // tableConfig reads each option by its value, never by its presence: an absent one may go in as undefined.
    config = tableConfig({ roster, capacity, maxPerHolder, scopeEnded: options.scopeEnded });
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  const now = int(o["now"], "now", 0);
  const lastToken = int(o["lastToken"], "lastToken", 0);

  const records: Omit<ClaimRecord, "seq">[] = [];
  if ("claims" in o) {
    const list = o["claims"];
    if (!Array.isArray(list) || list.length === 0) fail("claims must be a non-empty list");
    const seen = new Set<string>();
    const perKey = new Map<string, ClaimMode[]>();
    let previousToken = 1;
    for (const row of list) {
      if (!Array.isArray(row) || row.length !== 9) fail("each claim must be a list of 9 fields");
      const k = key(row[0], "key");
      const holder = id(row[1], "holder");
      const mode = row[2];
      if (mode !== "exclusive" && mode !== "shared") fail("mode must be 'exclusive' or 'shared'");
      const token = int(row[3], "token", 1);
      if (token > lastToken) fail(`token ${token} is above lastToken ${lastToken}`);
      if (token < previousToken) fail("tokens must not decrease in the order taken");
      previousToken = token;
      const since = int(row[4], "since", 0);
      if (since > now) fail(`a claim granted at ${since} is after now ${now}`);
      const ttlMs = optional(row[5], (v) => int(v, "ttlMs", 1));
      const expiresAt = optional(row[6], (v) => int(v, "expiresAt", 0));
      if ((ttlMs === undefined) !== (expiresAt === undefined)) fail("ttlMs and expiresAt come together");
      if (ttlMs !== undefined && expiresAt !== undefined && (expiresAt < since + ttlMs || expiresAt > now + ttlMs)) {
        fail("expiresAt must lie between since + ttlMs and now + ttlMs");
      }
      const scope = optional(row[7], (v) => id(v, "scope"));
      const label = optional(row[8], (v) => {
        if (typeof v !== "string" || v.length > MAX_LABEL_LENGTH) fail(`label must be a string of at most ${MAX_LABEL_LENGTH} code units`);
        return v;
      });
      if (config.rosterSet !== undefined && !config.rosterSet.has(k)) fail(`claim on ${JSON.stringify(k)}, which is not on the roster`);
      const pair = JSON.stringify([holder, k]);
      if (seen.has(pair)) fail(`${holder} is recorded twice on ${JSON.stringify(k)}`);
      seen.add(pair);
      const modes = perKey.get(k) ?? [];
      modes.push(mode);
      perKey.set(k, modes);
      records.push({ key: k, holder, mode, token, since, ttlMs, expiresAt, scope, label });
    }
    for (const [k, modes] of perKey) {
      const cap = config.capacity.get(k) ?? (config.capacity.has(k) ? null : 1);
      if (modes.includes("exclusive") && modes.length > 1) fail(`an exclusive claim on ${JSON.stringify(k)} sits beside another`);
      if (cap !== null && modes.length > cap) fail(`${modes.length} claims on ${JSON.stringify(k)} exceed its capacity ${cap}`);
    }
  }
  return restoreClaims(config, now, lastToken, records);
}
