import { LedgerDecodeError } from "./errors.ts";
import { isValidId } from "./ids.ts";
import type { AttachmentId, GroupId, MintId, PathKey, ReplicaId } from "./ids.ts";
import { MAX, MIN } from "./int64.ts";
import { Rational } from "./rational.ts";
import type { Counter, State } from "./state.ts";
import { COUNTER_FAMILIES, compareRecords, emptyState, unionRecords } from "./state.ts";
import type { AttachmentRecord, Gauge, Lifecycle } from "./types.ts";
import { LIFECYCLE_RANK } from "./types.ts";
import { Weight } from "./weight.ts";

/** The encoding's format tag (ledger.md §10). */
export const LEDGER_FORMAT = "heddle-ledger/1";

const TOP_KEYS = [
  "format",
  "records",
  "mints",
  "issued",
  "returned",
  "leafSpent",
  "rollupSpent",
  "transfers",
  "lifecycle",
  "gauges",
] as const;

/**
 * A map's entries in key order: UTF-16 code-unit order (ledger.md §2.2), which is what the default sort
 * of strings compares (keys of a map are distinct, so no tie-break is needed).
 */
export function byKey<V>(m: Map<string, V>): [string, V][] {
  return [...m.keys()].sort().map((k) => [k, m.get(k)!]);
}

function encodeCounter(c: Counter): unknown[] {
  return byKey(c).map(([e, slots]) => [e, byKey(slots).map(([r, v]) => [r, v.toString()])]);
}

/** The canonical text of a state: exactly `JSON.stringify` of ledger.md §10's structure. */
export function encodeState(s: State): string {
  const o: Record<string, unknown> = { format: LEDGER_FORMAT };
  if (s.records.size > 0) {
    o.records = byKey(s.records).map(([e, recs]) => [
      e,
      recs.map((r) => [r.parent, r.child, r.weight.num.toString(), r.weight.den.toString()]),
    ]);
  }
  if (s.mints.size > 0) {
    o.mints = byKey(s.mints).map(([id, m]) => [id, [m.root, m.holder, m.amount.toString()]]);
  }
  for (const fam of COUNTER_FAMILIES) if (s[fam].size > 0) o[fam] = encodeCounter(s[fam]);
  if (s.transfers.size > 0) {
    o.transfers = byKey(s.transfers).map(([k, rows]) => [
      k,
      byKey(rows).map(([d, row]) => [d, byKey(row).map(([x, v]) => [x, v.toString()])]),
    ]);
  }
  if (s.lifecycle.size > 0) o.lifecycle = byKey(s.lifecycle);
  if (s.gauges.size > 0) {
    o.gauges = byKey(s.gauges).map(([e, g]) => [e, [g.floor.num.toString(), g.floor.den.toString(), g.folded.toString()]]);
  }
  return JSON.stringify(o);
}

function fail(msg: string): never {
  throw new LedgerDecodeError(msg);
}

const CANONICAL_INT = /^(0|-?[1-9][0-9]*)$/;

function int(x: unknown, what: string): bigint {
  if (typeof x !== "string" || !CANONICAL_INT.test(x)) fail(`${what}: expected a canonical decimal string, got ${JSON.stringify(x)}`);
  const v = BigInt(x);
  if (v > MAX || v < MIN) fail(`${what}: ${x} is outside the signed 64-bit range`);
  return v;
}

function units(x: unknown, what: string): bigint {
  const v = int(x, what);
  if (v < 0n) fail(`${what}: ${v} is negative`);
  return v;
}

function id<T extends string>(x: unknown, what: string): T {
  if (!isValidId(x)) fail(`${what}: expected a non-empty, well-formed string`);
  return x as T;
}

function list(x: unknown, what: string): unknown[] {
  if (!Array.isArray(x)) fail(`${what}: expected a list`);
  return x;
}

function tuple(x: unknown, n: number, what: string): unknown[] {
  const a = list(x, what);
  if (a.length !== n) fail(`${what}: expected ${n} elements, got ${a.length}`);
  return a;
}

/** Decodes a `[key, value]` pair list into a map, rejecting duplicate keys. */
function pairs<K extends string, V>(x: unknown, what: string, key: (k: unknown) => K, val: (v: unknown, k: K) => V): Map<K, V> {
  const m = new Map<K, V>();
  for (const p of list(x, what)) {
    const [k0, v0] = tuple(p, 2, what);
    const k = key(k0);
    if (m.has(k)) fail(`${what}: duplicate key ${JSON.stringify(k)}`);
    m.set(k, val(v0, k));
  }
  return m;
}

function decodeSlots(x: unknown, what: string): Map<ReplicaId, bigint> {
  const raw = pairs(x, what, (k) => id<ReplicaId>(k, `${what} replica`), (v) => units(v, `${what} value`));
  for (const [k, v] of raw) if (v === 0n) raw.delete(k);
  return raw;
}

function decodeCounter(x: unknown, what: string): Counter {
  const c = pairs(x, what, (k) => id<AttachmentId>(k, `${what} edge`), (v) => decodeSlots(v, what));
  for (const [k, v] of c) if (v.size === 0) c.delete(k);
  return c;
}

function decodeWeight(n0: unknown, d0: unknown, what: string): Weight {
  let n = int(n0, `${what} weight numerator`);
  let d = int(d0, `${what} weight denominator`);
  if (d < 0n) {
    n = -n;
    d = -d;
  }
  if (n < 1n || d < 1n || n > MAX || d > MAX) fail(`${what}: weight ${n0}/${d0} names no positive ratio`);
  return Weight.of(n, d);
}

/** Names of the top-level keys of a JSON object text, in order, duplicates included. */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  // Stryker disable next-line BooleanLiteral: read only at depth 1, which the object's own "{" opens, and that sets it to true first
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      // expectKey is true only from a depth-1 "{" or "," to the next string, which (in JSON that parsed) is a key of the ledger object
      if (expectKey) {
        keys.push(JSON.parse(text.slice(i, j + 1)) as string);
        expectKey = false;
      }
      i = j;
    } else if (c === "{" || c === "[") {
      depth++;
      // depth 1 is opened only by the ledger object's own "{" (decodeState refuses any other JSON before the scan)
      if (depth === 1) expectKey = true;
    } else if (c === "}" || c === "]") depth--;
    else if (c === "," && depth === 1) expectKey = true;
  }
  return keys;
}

/**
 * Decodes a ledger text (ledger.md §10): throws `LedgerDecodeError` on anything invalid and
 * repairs what has a unique canonical value (order, zero slots, unreduced ratios, duplicates).
 */
export function decodeState(text: string): State {
  if (typeof text !== "string") throw new LedgerDecodeError("ledger text must be a string");
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    fail(`invalid JSON: ${(e as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) fail("a ledger is a JSON object");
  const seen = new Set<string>();
  for (const k of topLevelKeys(text)) {
    if (seen.has(k)) fail(`duplicate top-level key ${JSON.stringify(k)}`);
    seen.add(k);
    if (!(TOP_KEYS as readonly string[]).includes(k)) fail(`unknown top-level key ${JSON.stringify(k)}`);
  }
  const o = doc as Record<string, unknown>;
  if (o.format !== LEDGER_FORMAT) fail(`wrong format ${JSON.stringify(o.format)}, expected ${LEDGER_FORMAT}`);
  const s = emptyState();
  if ("records" in o) {
    s.records = pairs(o.records, "records", (k) => id<AttachmentId>(k, "record edge"), (v, e) => {
      const recs: AttachmentRecord[] = list(v, "record set").map((r0) => {
        const [p, c, n, d] = tuple(r0, 4, "record");
        const parent = id<GroupId>(p, "record parent");
        const child = id<GroupId>(c, "record child");
        if (parent === child) fail(`record ${e}: parent = child`);
        return Object.freeze({ id: e, parent, child, weight: decodeWeight(n, d, `record ${e}`) });
      });
      if (recs.length === 0) return Object.freeze([]); // an empty inner list is dropped below
      // Stryker disable next-line MethodExpression,CallExpression: unionRecords inserts each record at its sorted place (dropping equals: compareRecords compares every field), so any order gives the same set
      recs.sort(compareRecords);
      let set: readonly AttachmentRecord[] = Object.freeze([recs[0]!]);
      // Stryker disable next-line MethodExpression: a union with recs[0] again drops it as equal, so recs gives the same set
      for (const r of recs.slice(1)) set = unionRecords(set, [r]);
      return set;
    });
  }
  for (const [e, recs] of s.records) if (recs.length === 0) s.records.delete(e);
  if ("mints" in o) {
    s.mints = pairs(o.mints, "mints", (k) => id<MintId>(k, "mint id"), (v) => {
      const [r, h, a] = tuple(v, 3, "mint");
      return Object.freeze({ root: id<GroupId>(r, "mint root"), holder: id<ReplicaId>(h, "mint holder"), amount: units(a, "mint amount") });
    });
  }
  for (const fam of COUNTER_FAMILIES) if (fam in o) s[fam] = decodeCounter(o[fam], fam);
  if ("transfers" in o) {
    s.transfers = pairs(
      o.transfers,
      "transfers",
      (k) => {
        if (k === "") return "" as PathKey;
        return id<PathKey>(k, "transfer key");
      },
      (v) => {
        const rows = pairs(v, "transfer rows", (d) => id<ReplicaId>(d, "donor"), (row) => decodeSlots(row, "transfer row"));
        for (const [d, row] of rows) if (row.size === 0) rows.delete(d);
        return rows;
      },
    );
    for (const [k, rows] of s.transfers) if (rows.size === 0) s.transfers.delete(k);
  }
  if ("lifecycle" in o) {
    s.lifecycle = pairs(o.lifecycle, "lifecycle", (k) => id<AttachmentId>(k, "lifecycle edge"), (v) => {
      if (typeof v !== "string" || !Object.hasOwn(LIFECYCLE_RANK, v)) fail(`unknown lifecycle ${JSON.stringify(v)}`);
      return v as Lifecycle;
    });
  }
  if ("gauges" in o) {
    s.gauges = pairs(o.gauges, "gauges", (k) => id<AttachmentId>(k, "gauge edge"), (v): Gauge => {
      const [n0, d0, f0] = tuple(v, 3, "gauge");
      const n = int(n0, "gauge floor numerator");
      const d = int(d0, "gauge floor denominator");
      if (d <= 0n) fail(`gauge floor denominator ${d} must be positive`);
      let floor: Rational;
      try {
        floor = Rational.of(n, d);
      } catch {
        fail(`gauge floor ${n}/${d} is out of range`);
      }
      return Object.freeze({ floor, folded: units(f0, "gauge folded") });
    });
  }
  return s;
}

