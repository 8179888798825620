import type { RejectReason } from "./rejection.ts";

/** Longest id string the node accepts on the wire (UTF-16 code units, node.md §4.3). */
export const MAX_ID_LENGTH = 256;
/** Largest counter on the wire (`seq`, `inc`, `part`, …): 2^53 − 1. */
export const MAX_WIRE_COUNTER = Number.MAX_SAFE_INTEGER;
const INT64_MAX = (1n << 63n) - 1n;

/** Outcome of reading one frame: the message, or the reason it is dropped whole. */
export type WireRead<T> = { ok: true; message: T } | { ok: false; reason: RejectReason };

/** Thrown internally by the schema readers; always caught and turned into `schema`. */
class SchemaViolation extends Error {}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses a frame into a JSON object and checks `v` (node.md §4.3 order: decode, then version).
 * A frame that is not UTF-8 JSON text of an object is `decode`; `v` missing is `schema`; `v ≠ 1` is
 * `bad-version`.
 */
export function readEnvelope(frame: Uint8Array): WireRead<Record<string, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(frame));
  } catch {
    return { ok: false, reason: "decode" };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return { ok: false, reason: "decode" };
  const obj = parsed as Record<string, unknown>;
  if (!("v" in obj)) return { ok: false, reason: "schema" };
  if (obj.v !== 1) return { ok: false, reason: "bad-version" };
  return { ok: true, message: obj };
}

/** Runs a schema reader, turning any violation into a `schema` rejection. */
export function readSchema<T>(read: () => T): WireRead<T> {
  try {
    return { ok: true, message: read() };
  } catch (e) {
    if (e instanceof SchemaViolation) return { ok: false, reason: "schema" };
    throw e;
  }
}

/** Requires the object to have exactly `keys` (plus nothing else). */
export function exactKeys(obj: Record<string, unknown>, keys: readonly string[]): void {
  const have = Object.keys(obj);
  if (have.length !== keys.length) throw new SchemaViolation();
  for (const k of keys) if (!Object.hasOwn(obj, k)) throw new SchemaViolation();
}

/** A well-formed id string of 1…256 code units. */
export function idField(v: unknown): string {
  if (typeof v !== "string" || v.length === 0 || v.length > MAX_ID_LENGTH || !wellFormed(v)) throw new SchemaViolation();
  return v;
}

function wellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}

/** A wire counter: an integer in 0 … 2^53 − 1. */
export function counterField(v: unknown): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new SchemaViolation();
  return v;
}

/** A canonical decimal string of a non-negative bigint ≤ `max` (default int64 max). */
export function amountField(v: unknown, max: bigint = INT64_MAX): bigint {
  if (typeof v !== "string" || !/^(0|[1-9][0-9]{0,18})$/.test(v)) throw new SchemaViolation();
  const n = BigInt(v);
  if (n > max) throw new SchemaViolation();
  return n;
}

/** A string of any content up to `maxLength` code units (ledger values are bounded by the frame size). */
export function textField(v: unknown): string {
  if (typeof v !== "string") throw new SchemaViolation();
  return v;
}

/** Exactly 16 lower-case hex digits (an FNV-1a-64 digest). */
export function digestField(v: unknown): string {
  if (typeof v !== "string" || !/^[0-9a-f]{16}$/.test(v)) throw new SchemaViolation();
  return v;
}

/** A literal string. */
export function literalField<T extends string>(v: unknown, allowed: readonly T[]): T {
  if (typeof v !== "string" || !(allowed as readonly string[]).includes(v)) throw new SchemaViolation();
  return v as T;
}

/** An array (elements checked by the caller). */
export function arrayField(v: unknown): unknown[] {
  if (!Array.isArray(v)) throw new SchemaViolation();
  return v;
}

/** Fails the schema check with a custom condition. */
export function schemaRequire(cond: boolean): void {
  if (!cond) throw new SchemaViolation();
}
