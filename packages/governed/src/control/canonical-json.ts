/**
 * Canonical JSON for the control plane's own formats (the log envelope, governed.md §3.1, and the `ControlState`
 * snapshot, R-S4): object keys sorted by UTF-16 code units, no whitespace, `bigint` as a decimal string, numbers
 * only as safe integers, object members whose value is `undefined` left out. One value, one byte string — which
 * is what makes the command digest and the state comparison meaningful.
 */

/** A value `canonicalJson` accepts. */
export type Canonical =
  | string
  | number
  | bigint
  | boolean
  | null
  | undefined
  | readonly Canonical[]
  | { readonly [k: string]: Canonical };

/**
 * The canonical text of `value`; throws `RangeError` on a number that is not a safe integer.
 *
 * Written as plain loops over one growing string, and an object's keys sorted only when they are not in order
 * already (the control plane builds its objects in key order): every log entry is encoded once on its proposer and
 * checked against this text on every member that applies it, so this runs several times per commit.
 */
export function canonicalJson(value: Canonical): string {
  switch (typeof value) {
    case "bigint":
      return `"${value.toString()}"`;
    case "number":
      if (!Number.isSafeInteger(value)) throw new RangeError(`canonical JSON carries only safe integers, got ${value}`);
      return String(value);
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "undefined":
      return "null";
  }
  if (value === null) return "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      out += canonicalJson(value[i] as Canonical);
    }
    return out + "]";
  }
  const obj = value as { readonly [k: string]: Canonical };
  const keys = Object.keys(obj);
  for (let i = 1; i < keys.length; i++) {
    // UTF-16 code-unit order, as `Array.prototype.sort` compares strings
    if (keys[i - 1]! > keys[i]!) {
      keys.sort();
      break;
    }
  }
  let out = "{";
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    if (out.length > 1) out += ",";
    out += JSON.stringify(k) + ":" + canonicalJson(v);
  }
  return out + "}";
}
