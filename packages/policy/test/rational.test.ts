import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DivisionByZeroError, LedgerOverflowError, Rational } from "../src/index.ts";

const P62 = 1n << 62n;
const P63 = 1n << 63n;
const MAX = P63 - 1n;
const of = Rational.of;

function expectRat(r: Rational, num: bigint, den: bigint): void {
  expect([r.num, r.den]).toEqual([num, den]);
}

describe("Rational — policy.md §2.3 examples", () => {
  it("of reduces and normalises the sign", () => {
    expectRat(of(2n, 4n), 1n, 2n);
    expectRat(of(-1n, -2n), 1n, 2n);
    expectRat(of(1n, -2n), -1n, 2n);
    expectRat(of(0n, 5n), 0n, 1n);
    expectRat(of(7n, 7n), 1n, 1n);
  });
  it("add, sub, mul, div", () => {
    const h = of(1n, 2n);
    const t = of(1n, 3n);
    expectRat(h.add(t), 5n, 6n);
    expectRat(h.sub(t), 1n, 6n);
    expectRat(h.mul(t), 1n, 6n);
    expectRat(h.div(t), 3n, 2n);
    expectRat(t.div(of(-1n, 2n)), -2n, 3n);
  });
  it("1/2^62 + 1/2^62 throws although 1/2^61 would fit", () => {
    expect(() => of(1n, P62).add(of(1n, P62))).toThrow(LedgerOverflowError);
  });
  it("2^62/3 · 3/1 throws before reduction", () => {
    expect(() => of(P62, 3n).mul(of(3n))).toThrow(LedgerOverflowError);
  });
  it("(2^63−1) − 1 = 2^63−2", () => {
    expectRat(of(MAX).sub(of(1n)), MAX - 1n, 1n);
  });
  it("−(2^63−1) − 1 throws: of cannot negate −2^63", () => {
    expect(() => of(-MAX).sub(of(1n))).toThrow(LedgerOverflowError);
  });
  it("(2^63−1)/1 compared with 1/2 throws", () => {
    expect(() => of(MAX).compare(of(1n, 2n))).toThrow(LedgerOverflowError);
  });
  it("zero denominators and divisors", () => {
    expect(() => of(1n, 0n)).toThrow(DivisionByZeroError);
    expect(() => of(1n).div(of(0n))).toThrow(DivisionByZeroError);
  });
  it("of(2^63−1, −1) = −(2^63−1)/1", () => {
    expectRat(of(MAX, -1n), -MAX, 1n);
  });
  it("ceil rounds toward +∞", () => {
    expect(of(7n, 2n).ceil()).toBe(4n);
    expect(of(-7n, 2n).ceil()).toBe(-3n);
    expect(of(109n, 10n).ceil()).toBe(11n);
  });
  it("max, equals, toString, constants, bigint-only", () => {
    expect(Rational.max(of(1n, 3n), of(1n, 2n)).equals(of(1n, 2n))).toBe(true);
    expect(of(-3n, 6n).toString()).toBe("-1/2");
    expect(Rational.ZERO.equals(of(0n, 9n))).toBe(true);
    expect(Rational.ONE.equals(of(5n, 5n))).toBe(true);
    expect(of(MAX).equals(of(1n, 2n))).toBe(false);
    expect(() => of(1 as unknown as bigint)).toThrow(TypeError);
  });
});

describe("Rational laws (fast-check)", () => {
  const small = fc.bigInt({ min: -1_000_000n, max: 1_000_000n });
  const pos = fc.bigInt({ min: 1n, max: 1_000_000n });
  const r = fc.tuple(small, pos).map(([n, d]) => of(n, d));

  it("add and mul are commutative and associative (no overflow at these sizes)", () => {
    fc.assert(
      fc.property(r, r, r, (a, b, c) => {
        expect(a.add(b).equals(b.add(a))).toBe(true);
        expect(a.mul(b).equals(b.mul(a))).toBe(true);
        expect(a.add(b).add(c).equals(a.add(b.add(c)))).toBe(true);
        expect(a.mul(b).mul(c).equals(a.mul(b.mul(c)))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
  it("a − a = 0 and a ÷ a = 1", () => {
    fc.assert(
      fc.property(r, (a) => {
        expect(a.sub(a).equals(Rational.ZERO)).toBe(true);
        if (a.num !== 0n) expect(a.div(a).equals(Rational.ONE)).toBe(true);
      }),
    );
  });
  it("compare is antisymmetric and transitive, and agrees with exact cross-multiplication", () => {
    fc.assert(
      fc.property(r, r, r, (a, b, c) => {
        expect(a.compare(b) + b.compare(a)).toBe(0);
        const exact = a.num * b.den - b.num * a.den;
        expect(a.compare(b)).toBe(exact < 0n ? -1 : exact > 0n ? 1 : 0);
        if (a.compare(b) <= 0 && b.compare(c) <= 0) expect(a.compare(c)).toBeLessThanOrEqual(0);
      }),
      { numRuns: 300 },
    );
  });
  it("of is canonical: of(k·n, k·d) = of(n, d), reduced, den > 0", () => {
    fc.assert(
      fc.property(small, pos, fc.bigInt({ min: -1000n, max: 1000n }).filter((k) => k !== 0n), (n, d, k) => {
        const x = of(k * n, k * d);
        expect(x.equals(of(n, d))).toBe(true);
        expect(x.den > 0n).toBe(true);
        const g = (a: bigint, b: bigint): bigint => (b === 0n ? a : g(b, a % b));
        expect(g(x.num < 0n ? -x.num : x.num, x.den)).toBe(1n);
      }),
    );
  });
  it("an operation throws iff an unreduced checked intermediate leaves int64", () => {
    const wide = fc.tuple(fc.bigInt({ min: -MAX, max: MAX }), fc.bigInt({ min: 1n, max: MAX })).map(([n, d]) => of(n, d));
    const inRange = (x: bigint): boolean => x >= -P63 && x <= MAX;
    fc.assert(
      fc.property(wide, wide, (a, b) => {
        const p1 = a.num * b.den;
        const p2 = b.num * a.den;
        const dd = a.den * b.den;
        const sum = p1 + p2;
        const addOk = inRange(p1) && inRange(p2) && inRange(dd) && inRange(sum) && sum !== -P63;
        if (addOk) expect(a.add(b).equals(of(sum, dd))).toBe(true);
        else expect(() => a.add(b)).toThrow(LedgerOverflowError);
        const mn = a.num * b.num;
        const mulOk = inRange(mn) && inRange(dd) && mn !== -P63;
        if (mulOk) expect(() => a.mul(b)).not.toThrow();
        else expect(() => a.mul(b)).toThrow(LedgerOverflowError);
      }),
      { numRuns: 500 },
    );
  });
});
