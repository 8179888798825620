// JSON forms of the spec's values: amounts (bigint) as decimal strings, weights and rationals as
// "num/den" (or "num" when den = 1), maps as objects, sets as sorted arrays.

function isFraction(v: object): v is { num: bigint; den: bigint } {
  const o = v as { num?: unknown; den?: unknown };
  return typeof o.num === "bigint" && typeof o.den === "bigint";
}

/** `n` or `n/d`. */
export function fractionText(v: { num: bigint; den: bigint }): string {
  return v.den === 1n ? v.num.toString() : `${v.num}/${v.den}`;
}

/** A JSON-safe copy of `v` (see the file comment). Depth-limited: cycles are impossible in spec values. */
export function toWire(v: unknown, depth = 0): unknown {
  if (depth > 32) throw new RangeError("toWire: value nested too deeply");
  if (typeof v === "bigint") return v.toString();
  if (v === null || typeof v !== "object") return v;
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, x] of v) o[String(k)] = toWire(x, depth + 1);
    return o;
  }
  if (v instanceof Set) return [...v].map((x) => toWire(x, depth + 1)).sort();
  if (Array.isArray(v)) return v.map((x) => toWire(x, depth + 1));
  if (isFraction(v)) return fractionText(v);
  if (v instanceof Error) return { name: v.name, message: v.message };
  const o: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== undefined && typeof x !== "function") o[k] = toWire(x, depth + 1);
  return o;
}
