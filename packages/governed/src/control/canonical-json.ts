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

/** The canonical text of `value`; throws `RangeError` on a number that is not a safe integer. */
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
  if (Array.isArray(value)) return `[${value.map((v: Canonical) => canonicalJson(v)).join(",")}]`;
  const obj = value as { readonly [k: string]: Canonical };
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`;
}
