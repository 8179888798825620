/**
 * `Weight` (ledger.md §3.3) and `Rational` (§3.4; policy.md §2 restates it with required
 * examples): construction, reduction, checked arithmetic that throws exactly where a signed
 * 64-bit implementation would, and a property against an unbounded reference of the same table.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DivisionByZeroError, LedgerOverflowError, MAX, MIN, addUnits } from "../src/index.ts";
import { params, Rational, Weight } from "./arbitraries.ts";

const q = (n: bigint, d: bigint = 1n): Rational => Rational.of(n, d);
const str = (r: Rational): string => r.toString();
const any = <T>(x: unknown): T => x as T;

describe("Weight (§3.3)", () => {
  it("reduces at construction; ONE is 1/1; equality is field equality", () => {
    expect([Weight.of(2n, 4n).num, Weight.of(2n, 4n).den]).toEqual([1n, 2n]);
    expect(Weight.of(2n, 4n).equals(Weight.of(1n, 2n))).toBe(true);
    expect(Weight.of(9n, 3n).equals(Weight.of(3n))).toBe(true);
    expect([Weight.of(9n, 3n).num, Weight.of(9n, 3n).den]).toEqual([3n, 1n]);
    expect([Weight.ONE.num, Weight.ONE.den]).toEqual([1n, 1n]);
    expect(Weight.of(3n).equals(Weight.of(3n, 2n))).toBe(false);
  });

  it("orders by cross products: 1/3 < 1/2, 2/3 > 1/2, equal weights compare 0", () => {
    expect(Weight.of(1n, 3n).compare(Weight.of(1n, 2n))).toBe(-1);
    expect(Weight.of(2n, 3n).compare(Weight.of(1n, 2n))).toBe(1);
    expect(Weight.of(2n, 4n).compare(Weight.of(1n, 2n))).toBe(0);
  });

  it("a comparison whose product overflows throws rather than misordering", () => {
    expect(() => Weight.of(MAX / 2n, 1n).compare(Weight.of(1n, 3n))).toThrow(LedgerOverflowError);
    expect(Weight.of(MAX, 1n).compare(Weight.of(MAX - 1n, 1n))).toBe(1);
  });

  it("both parts must lie in 1 … MAX (RangeError); quantities must be bigint (TypeError)", () => {
    for (const [n, d] of [[0n, 1n], [1n, 0n], [-1n, 2n], [1n, -2n], [MAX + 1n, 1n], [1n, MAX + 1n]] as const) {
      expect(() => Weight.of(n, d)).toThrow(RangeError);
    }
    expect(() => Weight.of(any(1), 1n)).toThrow(TypeError);
    expect(() => Weight.of(1n, any(2))).toThrow(TypeError);
    expect(Weight.of(MAX, MAX).equals(Weight.ONE)).toBe(true);
  });
});

describe("Rational (§3.4, policy.md §2.3 required examples)", () => {
  it("construction: of(2,4), of(−1,−2), of(1,−2), of(0,5), of(7,7) → 1/2, 1/2, −1/2, 0/1, 1/1", () => {
    expect([q(2n, 4n), q(-1n, -2n), q(1n, -2n), q(0n, 5n), q(7n, 7n)].map(str)).toEqual(["1/2", "1/2", "-1/2", "0/1", "1/1"]);
    expect(q(0n, -5n).equals(Rational.ZERO)).toBe(true);
    expect(str(Rational.ZERO)).toBe("0/1");
    expect(str(Rational.ONE)).toBe("1/1");
  });

  it("1/2 + 1/3, 1/2 − 1/3, 1/2 · 1/3, (1/2) ÷ (1/3) → 5/6, 1/6, 1/6, 3/2; (1/3) ÷ (−1/2) → −2/3", () => {
    const h = q(1n, 2n);
    const t = q(1n, 3n);
    expect([h.add(t), h.sub(t), h.mul(t), h.div(t)].map(str)).toEqual(["5/6", "1/6", "1/6", "3/2"]);
    expect(str(t.div(q(-1n, 2n)))).toBe("-2/3");
  });

  it("unreduced intermediates overflow even when the result would fit", () => {
    const p62 = 1n << 62n;
    expect(() => q(1n, p62).add(q(1n, p62))).toThrow(LedgerOverflowError);
    expect(() => q(p62, 3n).mul(q(3n))).toThrow(LedgerOverflowError);
    expect(() => q(1n, 3037000493n).add(q(1n, 3037000507n))).toThrow(LedgerOverflowError);
    expect(str(q(1n, 3037000493n).add(q(1n, 3037000499n)))).toBe(
      `${3037000493n + 3037000499n}/${3037000493n * 3037000499n}`,
    );
  });

  it("(2^63−1) − 1 = 2^63−2; −(2^63−1) − 1 throws; (2^63−1) vs 1/2 throws; of(2^63−1, −1) = −(2^63−1)", () => {
    expect(str(q(MAX).sub(Rational.ONE))).toBe(`${MAX - 1n}/1`);
    expect(() => q(-MAX).sub(Rational.ONE)).toThrow(LedgerOverflowError);
    expect(() => q(MAX).compare(q(1n, 2n))).toThrow(LedgerOverflowError);
    expect(() => Rational.max(q(MAX), q(1n, 2n))).toThrow(LedgerOverflowError);
    expect(str(q(MAX, -1n))).toBe(`${-MAX}/1`);
  });

  it("of(−2^63) and of(1, −2^63) throw LedgerOverflowError; of(1, 0) and ÷ 0 throw DivisionByZeroError (a RangeError)", () => {
    expect(() => q(MIN)).toThrow(LedgerOverflowError);
    expect(() => q(1n, MIN)).toThrow(LedgerOverflowError);
    expect(() => q(1n, 0n)).toThrow(DivisionByZeroError);
    expect(() => Rational.ONE.div(Rational.ZERO)).toThrow(DivisionByZeroError);
    expect(new DivisionByZeroError("x")).toBeInstanceOf(RangeError);
    expect(new LedgerOverflowError("x")).toBeInstanceOf(RangeError);
    expect(() => q(any(1))).toThrow(TypeError);
  });

  it("ceil: 7/2 → 4, −7/2 → −3, 109/10 → 11, integers unchanged", () => {
    expect([q(7n, 2n), q(-7n, 2n), q(109n, 10n), q(4n), q(-4n), Rational.ZERO].map((r) => r.ceil())).toEqual([4n, -3n, 11n, 4n, -4n, 0n]);
  });

  it("compare, max, equals, perWeight", () => {
    expect(q(1n, 3n).compare(q(1n, 2n))).toBe(-1);
    expect(q(-1n, 2n).compare(q(-1n, 3n))).toBe(-1);
    expect(q(2n, 4n).compare(q(1n, 2n))).toBe(0);
    expect(str(Rational.max(q(1n, 3n), q(1n, 2n)))).toBe("1/2");
    expect(str(Rational.max(q(-1n), q(-2n)))).toBe("-1/1");
    expect(q(1n, 2n).equals(q(2n, 4n))).toBe(true);
    expect(q(MAX).equals(q(1n, 2n))).toBe(false); // never throws
    expect(str(Rational.perWeight(10n, Weight.of(2n, 3n)))).toBe("15/1");
    expect(str(Rational.perWeight(3n, Weight.of(1n, 2n)))).toBe("6/1");
    expect(str(Rational.perWeight(7n, Weight.of(2n)))).toBe("7/2");
    expect(() => Rational.perWeight(MAX, Weight.of(1n, 2n))).toThrow(LedgerOverflowError);
  });

  it("addUnits is checked", () => {
    expect(addUnits(MAX - 1n, 1n)).toBe(MAX);
    expect(() => addUnits(MAX, 1n)).toThrow(LedgerOverflowError);
  });
});

/** Unbounded reference of the §3.4 table: the exact result, or "overflow" if any step leaves I64. */
type Ref = readonly [bigint, bigint] | "overflow" | "div0";
const inI64 = (x: bigint): boolean => x >= MIN && x <= MAX;
function refOf(n: bigint, d: bigint): Ref {
  if (d === 0n) return "div0";
  if (!inI64(n) || !inI64(d)) return "overflow";
  if (d < 0n) {
    n = -n;
    d = -d;
    if (!inI64(n) || !inI64(d)) return "overflow";
  }
  if (n === 0n) return [0n, 1n];
  const an = n < 0n ? -n : n;
  if (!inI64(an)) return "overflow";
  let a = an;
  let b = d;
  while (b !== 0n) [a, b] = [b, a % b];
  return [n / a, d / a];
}
function refOp(op: "add" | "sub" | "mul" | "div", x: Rational, y: Rational): Ref {
  const steps: bigint[] = [];
  const c = (v: bigint): bigint => {
    steps.push(v);
    return v;
  };
  let n: bigint;
  let d: bigint;
  if (op === "add" || op === "sub") {
    const l = c(x.num * y.den);
    const r = c(y.num * x.den);
    n = c(op === "add" ? l + r : l - r);
    d = c(x.den * y.den);
  } else if (op === "mul") {
    n = c(x.num * y.num);
    d = c(x.den * y.den);
  } else {
    if (y.num === 0n) return "div0";
    n = c(x.num * y.den);
    d = c(x.den * y.num);
  }
  if (steps.some((v) => !inI64(v))) return "overflow";
  return refOf(n, d);
}
function run(f: () => Rational): Ref {
  try {
    const r = f();
    return [r.num, r.den];
  } catch (e) {
    if (e instanceof LedgerOverflowError) return "overflow";
    if (e instanceof DivisionByZeroError) return "div0";
    throw e;
  }
}

describe("Rational against an unbounded reference", () => {
  // components near the 64-bit bound as well as small ones, so both outcomes are common
  const part = fc.oneof(
    fc.bigInt({ min: -50n, max: 50n }),
    fc.bigInt({ min: -(1n << 40n), max: 1n << 40n }),
    fc.bigInt({ min: -MAX, max: MAX }),
    fc.constantFrom(MAX, -MAX, 3037000499n, 3037000500n, 1n << 31n, 1n << 32n),
  );
  const den = part.map((x) => (x === 0n ? 1n : x < 0n ? -x : x));
  const rat = fc.tuple(part, den).map(([n, d]) => Rational.of(n, d));

  it("of(n, d) throws exactly where the checked table does, else gives the reduced exact value", () => {
    fc.assert(
      fc.property(part, part, (n, d) => {
        expect(run(() => Rational.of(n, d))).toEqual(refOf(n, d));
      }),
      params(),
    );
  });

  it("add, sub, mul, div, compare match the checked table", () => {
    fc.assert(
      fc.property(rat, rat, (x, y) => {
        for (const op of ["add", "sub", "mul", "div"] as const) {
          expect([op, run(() => x[op](y))]).toEqual([op, refOp(op, x, y)]);
        }
        const l = x.num * y.den;
        const r = y.num * x.den;
        const want = !inI64(l) || !inI64(r) ? "overflow" : l < r ? -1 : l > r ? 1 : 0;
        let got: number | string;
        try {
          got = x.compare(y);
        } catch (e) {
          if (!(e instanceof LedgerOverflowError)) throw e;
          got = "overflow";
        }
        expect(got).toBe(want);
        expect(x.equals(y)).toBe(x.num === y.num && x.den === y.den);
      }),
      params(),
    );
  });
});
