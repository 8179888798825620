// Canonical JSON (governed.md §3.1, R-S4): one value, one byte string. The implementation is tuned (plain loops,
// keys sorted only when out of order); the oracle here is the definition written the obvious way.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, type Canonical } from "../src/control/canonical-json.ts";

/** The definition, spelled out: keys in UTF-16 code-unit order, `undefined` members left out, bigint as a string. */
function oracle(value: Canonical): string {
  if (typeof value === "bigint") return `"${value}"`;
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new RangeError("unsafe");
    return String(value);
  }
  if (typeof value === "string" || typeof value === "boolean") return JSON.stringify(value);
  if (value === undefined || value === null) return "null";
  if (Array.isArray(value)) return `[${value.map((v: Canonical) => oracle(v)).join(",")}]`;
  const obj = value as { readonly [k: string]: Canonical };
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort((a, b) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.charCodeAt(i) - b.charCodeAt(i);
      return a.length - b.length;
    });
  return `{${keys.map((k) => `${JSON.stringify(k)}:${oracle(obj[k])}`).join(",")}}`;
}

/** Keys that exercise the order: shared prefixes, non-ASCII, astral (surrogate pairs), quotes and controls. */
const key = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom("a", "ab", "b", "B", "é", "\u{1F600}", "\uFFFF", '"', "\n", "__proto__x", "10", "9"));
const canonical: fc.Arbitrary<Canonical> = fc.letrec<{ value: Canonical }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.string(),
    fc.maxSafeInteger(),
    fc.bigInt(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(key, tie("value"), { maxKeys: 5 }),
  ),
})).value;

describe("canonicalJson", () => {
  it("equals the definition for any value (property)", () => {
    fc.assert(
      fc.property(canonical, (v) => {
        expect(canonicalJson(v)).toBe(oracle(v));
      }),
      { numRuns: 2_000 },
    );
  });

  it("gives one text whatever order the keys were inserted in (property)", () => {
    const entriesAndPermutation = fc
      .dictionary(key, fc.oneof(fc.string(), fc.maxSafeInteger(), fc.constant(undefined)), { maxKeys: 8 })
      .chain((d) => {
        const entries = Object.entries(d);
        return fc.tuple(fc.constant(entries), fc.shuffledSubarray(entries, { minLength: entries.length, maxLength: entries.length }));
      });
    fc.assert(
      fc.property(entriesAndPermutation, ([entries, permuted]) => {
        expect(canonicalJson(Object.fromEntries(permuted))).toBe(canonicalJson(Object.fromEntries(entries)));
      }),
    );
  });

  it("orders keys by UTF-16 code units, leaves undefined members out, writes bigint as a string", () => {
    expect(canonicalJson({ b: 1, a: [undefined, 2n], "\u{1F600}": "x", "\uFFFF": true, B: null, c: undefined })).toBe(
      '{"B":null,"a":[null,"2"],"b":1,"\u{1F600}":"x","\uFFFF":true}',
    );
    expect(canonicalJson({})).toBe("{}");
    expect(canonicalJson({ a: undefined })).toBe("{}");
    expect(canonicalJson([])).toBe("[]");
  });

  it("refuses numbers that are not safe integers", () => {
    for (const n of [0.5, Number.MAX_SAFE_INTEGER + 1, NaN, Infinity, -Infinity]) expect(() => canonicalJson({ a: [n] })).toThrow(RangeError);
  });
});
