/**
 * Canonical encoding (ledger.md §10) and invariant I-4: the §10 vector byte for byte, fixed
 * normalising and rejecting decode vectors, and round-trip properties over random states.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LedgerDecodeError, MAX } from "../src/index.ts";
import {
  canonicalText,
  canonicalTextArb,
  E,
  EntitlementLedger,
  G,
  ledgerArb,
  params,
  R,
  state,
} from "./arbitraries.ts";

const VECTOR =
  '{"format":"heddle-ledger/1","records":[["e1",[["root","child","3","1"]]]],"mints":[["[\\"root\\",\\"genesis\\",\\"alice\\"]",["root","alice","100"]]],"issued":[["e1",[["alice","40"]]]],"transfers":[["e1",[["alice",[["bob","5"]]]]]]}';

const decode = (t: string): EntitlementLedger => EntitlementLedger.decode(t);
const F = '"format":"heddle-ledger/1"';

describe("§10 encoding vector", () => {
  it("I-4 bootstrap ⊔ record ⊔ issued ⊔ transfer encodes to the §10 vector byte for byte", () => {
    const boot = EntitlementLedger.bootstrap(G("root"), new Map([[R("alice"), 100n]]), "genesis");
    const parts = [
      `{${F},"records":[["e1",[["root","child","3","1"]]]]}`,
      `{${F},"issued":[["e1",[["alice","40"]]]]}`,
      `{${F},"transfers":[["e1",[["alice",[["bob","5"]]]]]]}`,
    ].map(decode);
    const s = parts.reduce((a, b) => a.join(b), boot);
    expect(s.encode()).toBe(VECTOR);
    // and in the other join order
    expect(parts.reduceRight((a, b) => a.join(b), boot).encode()).toBe(VECTOR);
    expect(decode(VECTOR).encode()).toBe(VECTOR);
    expect(decode(VECTOR).equals(s)).toBe(true);
  });

  it("I-4 the bootstrap mint id is JSON.stringify([root, nonce, holder])", () => {
    const boot = EntitlementLedger.bootstrap(G("root"), new Map([[R("alice"), 100n]]), "genesis");
    expect(boot.encode()).toBe(
      `{${F},"mints":[["[\\"root\\",\\"genesis\\",\\"alice\\"]",["root","alice","100"]]]}`,
    );
  });

  it("I-4 EMPTY encodes as the bare format object", () => {
    expect(EntitlementLedger.EMPTY.encode()).toBe(`{${F}}`);
    expect(decode(`{${F}}`).equals(EntitlementLedger.EMPTY)).toBe(true);
  });

  it("I-4 every component in key order, floors signed, lifecycle names, no whitespace", () => {
    const t =
      `{${F},"records":[["a",[["p","q","1","2"]]]],"mints":[["m",["p","x","7"]]],` +
      `"issued":[["a",[["x","9"]]]],"returned":[["a",[["x","1"]]]],"leafSpent":[["a",[["x","2"]]]],` +
      `"rollupSpent":[["b",[["x","3"]]]],"transfers":[["",[["x",[["y","4"]]]]]],` +
      `"lifecycle":[["a","CLOSING"]],"gauges":[["a",["-7","3","5"]]]}`;
    expect(decode(t).encode()).toBe(t);
  });
});

describe("I-4 decode normalises denormalised input", () => {
  const canonical = canonicalText({
    records: { a: [["p", "q", 1n, 2n]], b: [["p", "r", 1n], ["q", "r", 1n]] },
    issued: { a: { x: 5n, y: 6n } },
    gauges: { a: [1n, 2n, 3n] },
  });

  it("I-4 unsorted pairs, unsorted records and any top-level key order", () => {
    const t =
      `{"gauges":[["a",["1","2","3"]]],"issued":[["a",[["y","6"],["x","5"]]]],${F},` +
      `"records":[["b",[["q","r","1","1"],["p","r","1","1"]]],["a",[["p","q","1","2"]]]]}`;
    expect(decode(t).encode()).toBe(canonical);
  });

  it("I-4 zero slots and empty inner lists are dropped", () => {
    const t =
      `{${F},"records":[["a",[["p","q","1","2"]]],["b",[["p","r","1","1"],["q","r","1","1"]]]],` +
      `"issued":[["a",[["x","5"],["y","6"],["z","0"]]],["c",[["x","0"]]],["d",[]]],` +
      `"transfers":[["e",[["x",[["y","0"]]],["w",[]]]]],"gauges":[["a",["1","2","3"]]]}`;
    expect(decode(t).encode()).toBe(canonical);
    expect(decode(t).knownEdges()).toEqual(["a", "b"]);
  });

  it("I-4 weight 2/4 and -1/-2 reduce to 1/2; floor 2/4 to 1/2; duplicate records collapse", () => {
    const t =
      `{${F},"records":[["a",[["p","q","2","4"]]],["b",[["p","r","1","1"],["q","r","1","1"],["p","r","1","1"]]]],` +
      `"issued":[["a",[["x","5"],["y","6"]]]],"gauges":[["a",["2","4","3"]]]}`;
    expect(decode(t).encode()).toBe(canonical);
    const neg = `{${F},"records":[["a",[["p","q","-1","-2"]]]]}`;
    expect(decode(neg).encode()).toBe(`{${F},"records":[["a",[["p","q","1","2"]]]]}`);
    expect(decode(neg).record(E("a"))!.weight.num).toBe(1n);
    expect(decode(neg).record(E("a"))!.weight.den).toBe(2n);
  });

  it("I-4 records 1/2 and 2/4 under one id are one record, not a divergence", () => {
    const t = `{${F},"records":[["a",[["p","q","1","2"],["p","q","2","4"]]]]}`;
    expect(decode(t).record(E("a"))).not.toBeNull();
    expect(decode(t).validate()).toEqual([]);
  });
});

describe("I-4 decode rejects invalid input", () => {
  const rejects: [string, string][] = [
    ["invalid JSON", `{${F},`],
    ["not an object", `[]`],
    ["wrong format", `{"format":"heddle-ledger/2"}`],
    ["missing format", `{}`],
    ["unknown top-level key", `{${F},"relocations":[]}`],
    ["weight 0/1", `{${F},"records":[["a",[["p","q","0","1"]]]]}`],
    ["weight 1/-2", `{${F},"records":[["a",[["p","q","1","-2"]]]]}`],
    ["weight -1/2", `{${F},"records":[["a",[["p","q","-1","2"]]]]}`],
    ["parent = child", `{${F},"records":[["a",[["p","p","1","1"]]]]}`],
    ["record of wrong arity", `{${F},"records":[["a",[["p","q","1"]]]]}`],
    ["zero floor denominator", `{${F},"gauges":[["a",["1","0","3"]]]}`],
    ["negative folded", `{${F},"gauges":[["a",["1","1","-3"]]]}`],
    ["duplicate edge key", `{${F},"issued":[["a",[["x","1"]]],["a",[["y","1"]]]]}`],
    ["duplicate replica key", `{${F},"issued":[["a",[["x","1"],["x","2"]]]]}`],
    ["duplicate record id", `{${F},"records":[["a",[["p","q","1","1"]]],["a",[["p","r","1","1"]]]]}`],
    ["duplicate mint id", `{${F},"mints":[["m",["p","x","1"]],["m",["p","x","1"]]]}`],
    ["duplicate transfer key", `{${F},"transfers":[["",[["x",[["y","1"]]]]],["",[["x",[["z","1"]]]]]]}`],
    ["duplicate donor", `{${F},"transfers":[["",[["x",[["y","1"]]],["x",[["z","1"]]]]]]}`],
    ["duplicate recipient", `{${F},"transfers":[["",[["x",[["y","1"],["y","2"]]]]]]}`],
    ["duplicate lifecycle key", `{${F},"lifecycle":[["a","ACTIVE"],["a","CLOSING"]]}`],
    ["duplicate gauge key", `{${F},"gauges":[["a",["1","1","0"]],["a",["2","1","0"]]]}`],
    ["leading zero", `{${F},"issued":[["a",[["x","01"]]]]}`],
    ["plus sign", `{${F},"issued":[["a",[["x","+1"]]]]}`],
    ["minus zero floor", `{${F},"gauges":[["a",["-0","1","0"]]]}`],
    ["JSON number instead of string", `{${F},"issued":[["a",[["x",1]]]]}`],
    ["decimal point", `{${F},"issued":[["a",[["x","1.0"]]]]}`],
    ["whitespace in integer", `{${F},"issued":[["a",[["x"," 1"]]]]}`],
    ["negative counter", `{${F},"issued":[["a",[["x","-1"]]]]}`],
    ["negative mint amount", `{${F},"mints":[["m",["p","x","-1"]]]}`],
    ["counter above MAX", `{${F},"leafSpent":[["a",[["x","${MAX + 1n}"]]]]}`],
    ["mint above MAX", `{${F},"mints":[["m",["p","x","${MAX + 1n}"]]]}`],
    ["weight above MAX", `{${F},"records":[["a",[["p","q","${MAX + 1n}","1"]]]]}`],
    ["floor numerator below -MAX", `{${F},"gauges":[["a",["${-MAX - 1n}","1","0"]]]}`],
    ["transfer above MAX", `{${F},"transfers":[["",[["x",[["y","${MAX + 1n}"]]]]]]}`],
    ["unknown lifecycle", `{${F},"lifecycle":[["a","DRAINING"]]}`],
    ["empty edge id", `{${F},"issued":[["",[["x","1"]]]]}`],
    ["empty replica id", `{${F},"issued":[["a",[["","1"]]]]}`],
    ["empty group in record", `{${F},"records":[["a",[["","q","1","1"]]]]}`],
    ["empty mint id", `{${F},"mints":[["",["p","x","1"]]]}`],
    ["empty donor", `{${F},"transfers":[["",[["",[["y","1"]]]]]]}`],
    ["lone surrogate id", `{${F},"issued":[["\\ud800",[["x","1"]]]]}`],
    ["lone surrogate group", `{${F},"records":[["a",[["p","\\udc00","1","1"]]]]}`],
    ["map as JSON object", `{${F},"issued":{"a":{"x":"1"}}}`],
    ["pair of wrong arity", `{${F},"issued":[["a",[["x","1","2"]]]]}`],
    ["component not a list", `{${F},"issued":"a"}`],
    ["negative floor denominator", `{${F},"gauges":[["a",["1","-2","0"]]]}`],
    ["floor denominator above MAX", `{${F},"gauges":[["a",["1","${MAX + 1n}","0"]]]}`],
    ["folded above MAX", `{${F},"gauges":[["a",["1","1","${MAX + 1n}"]]]}`],
    ["gauge of wrong arity", `{${F},"gauges":[["a",["1","1"]]]}`],
    ["empty mint root", `{${F},"mints":[["m",["","x","1"]]]}`],
    ["lone surrogate mint holder", `{${F},"mints":[["m",["p","\\ud800","1"]]]}`],
    ["lone surrogate transfer key", `{${F},"transfers":[["\\udc00",[["x",[["y","1"]]]]]]}`],
    ["lifecycle not a string", `{${F},"lifecycle":[["a",1]]}`],
    ["weight as JSON numbers", `{${F},"records":[["a",[["p","q",1,1]]]]}`],
    ["format not a string", `{"format":1}`],
    ["null", `null`],
  ];
  for (const [name, text] of rejects) {
    it(`I-4 rejects: ${name}`, () => {
      expect(() => decode(text)).toThrow(LedgerDecodeError);
    });
  }

  it("I-4 a mint of amount 0 is kept (mints are records, not counters)", () => {
    const t = `{${F},"mints":[["m",["p","x","0"]]]}`;
    expect(decode(t).encode()).toBe(t);
    expect(decode(t).roots()).toEqual(["p"]);
  });

  it("I-4 the transfers key may be the empty ROOT path key", () => {
    const t = `{${F},"transfers":[["",[["x",[["y","1"]]]]]]}`;
    expect(decode(t).encode()).toBe(t);
  });

  it("I-15 decoding MAX itself succeeds; MAX+1 does not", () => {
    const ok = `{${F},"issued":[["a",[["x","${MAX}"]]]]}`;
    expect(decode(ok).encode()).toBe(ok);
    expect(() => decode(ok.replace(`${MAX}`, `${MAX + 1n}`))).toThrow(LedgerDecodeError);
  });
});

describe("I-4 round trips over random states", () => {
  it("I-4 decode(encode(x)).equals(x) and encode is a fixed point", () => {
    fc.assert(
      fc.property(ledgerArb, (x) => {
        const t = x.encode();
        const y = decode(t);
        expect(y.equals(x)).toBe(true);
        expect(y.encode()).toBe(t);
      }),
      params(),
    );
  });

  it("I-4 encode(decode(t)) === t for every canonical t", () => {
    fc.assert(
      fc.property(canonicalTextArb, (t) => {
        expect(decode(t).encode()).toBe(t);
      }),
      params(),
    );
  });

  it("I-4 equals ⟺ identical text, for independently generated pairs", () => {
    fc.assert(
      fc.property(ledgerArb, ledgerArb, (a, b) => {
        expect(a.equals(b)).toBe(a.encode() === b.encode());
        const ab = a.join(b);
        const ba = b.join(a);
        expect(ab.equals(ba)).toBe(true);
        expect(ab.encode()).toBe(ba.encode());
      }),
      params(),
    );
  });

  it("I-4 a shuffled, denormalised rendering of a state decodes to the same state", () => {
    fc.assert(
      fc.property(ledgerArb, fc.array(fc.nat(), { minLength: 64, maxLength: 64 }), (x, noise) => {
        const y = decode(denormalise(x.encode(), noise));
        expect(y.equals(x)).toBe(true);
        expect(y.encode()).toBe(x.encode());
      }),
      params(),
    );
  });
});

type Pair = [string, unknown];

/**
 * A non-canonical rendering of canonical text `t`, driven by `noise`: top-level keys and every
 * pair list in any order, an extra zero slot in counter and transfer maps, duplicated records,
 * weights and floors scaled by a common factor (sometimes negated for weights).
 */
function denormalise(t: string, noise: readonly number[]): string {
  let i = 0;
  const next = (): number => noise[i++ % noise.length]! + i;
  const mix = <T>(xs: T[]): T[] => {
    const out = [...xs];
    for (let k = out.length - 1; k > 0; k--) {
      const j = next() % (k + 1);
      [out[k], out[j]] = [out[j]!, out[k]!];
    }
    return out;
  };
  const counter = (pairs: Pair[]): Pair[] =>
    mix(pairs.map(([k, slots]) => [k, mix([...(slots as Pair[]), ["zz-zero", "0"]])]));
  const obj = JSON.parse(t) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of mix(Object.keys(obj))) {
    const v = obj[key];
    switch (key) {
      case "records":
        out[key] = mix(
          (v as Pair[]).map(([id, recs]) => {
            const rs = (recs as string[][]).map(([p, c, n, d]) => {
              const f = BigInt((next() % 3) + 1) * (next() % 2 === 0 ? 1n : -1n);
              return [p, c, String(BigInt(n!) * f), String(BigInt(d!) * f)];
            });
            return [id, mix(next() % 2 === 0 ? [...rs, rs[0]!] : rs)];
          }),
        );
        break;
      case "issued":
      case "returned":
      case "leafSpent":
      case "rollupSpent":
        out[key] = counter(v as Pair[]);
        break;
      case "transfers":
        out[key] = mix((v as Pair[]).map(([k, rows]) => [k, counter(rows as Pair[])]));
        break;
      case "gauges":
        out[key] = mix(
          (v as [string, [string, string, string]][]).map(([id, [n, d, folded]]): Pair => {
            const f = BigInt((next() % 3) + 1);
            return [id, [String(BigInt(n) * f), String(BigInt(d) * f), folded]];
          }),
        );
        break;
      case "mints":
      case "lifecycle":
        out[key] = mix(v as Pair[]);
        break;
      default:
        out[key] = v;
    }
  }
  return JSON.stringify(out);
}
