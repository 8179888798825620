/** A value the canonical JSON encoder accepts. `bigint` becomes a decimal string. */
export type CanonicalValue = string | number | bigint | boolean | null | readonly CanonicalValue[] | { readonly [k: string]: CanonicalValue };

/**
 * Canonical JSON (node.md §4.1): UTF-8, object keys sorted by UTF-16 code units, no whitespace,
 * `bigint` as a decimal string. Numbers must be safe integers (no floats cross the wire).
 */
export function canonicalJson(value: CanonicalValue): string {
  if (typeof value === "bigint") return JSON.stringify(value.toString());
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new RangeError(`canonical JSON carries only safe integers, got ${value}`);
    return String(value);
  }
  if (typeof value === "string" || typeof value === "boolean" || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v as CanonicalValue)).join(",")}]`;
  const obj = value as { readonly [k: string]: CanonicalValue };
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k]!)}`).join(",")}}`;
}

const encoder = new TextEncoder();

/** UTF-8 bytes of the canonical JSON of `value`. */
export function canonicalBytes(value: CanonicalValue): Uint8Array {
  return encoder.encode(canonicalJson(value));
}
