import { DivisionByZeroError } from "./errors.ts";
import { add, abs, chk, gcd, mul, neg, requireBigint, sub } from "./int64.ts";
import type { Weight } from "./weight.ts";

/**
 * An exact rational `num/den`, always reduced with `den ≥ 1`; zero is `0/1` (ledger.md §3.4,
 * policy.md §2). Backed by bigint but 64-bit-faithful: every product, sum, difference and
 * negation is checked before reduction, so it throws `LedgerOverflowError` in exactly the
 * cases a checked signed-64-bit implementation would.
 */
export class Rational {
  /** Numerator (may be negative). */
  readonly num: bigint;
  /** Denominator, `≥ 1`, coprime with `|num|`. */
  readonly den: bigint;

  private constructor(num: bigint, den: bigint) {
    this.num = num;
    this.den = den;
    Object.freeze(this);
  }

  /**
   * `n/d` reduced. `d = 0` throws `DivisionByZeroError`; a negative `d` negates both (checked);
   * `|n|` is checked, so `n = −2^63` throws. Non-bigint arguments throw `TypeError`.
   */
  static of(n: bigint, d: bigint = 1n): Rational {
    requireBigint(n, "Rational numerator");
    requireBigint(d, "Rational denominator");
    if (d === 0n) throw new DivisionByZeroError(`Rational ${n}/0 has a zero denominator`);
    chk(n);
    chk(d);
    // Stryker disable next-line EqualityOperator: `d <= 0n` differs only at d = 0, thrown two lines up; this also hides the killed `d >= 0n` variant
    if (d < 0n) {
      n = neg(n);
      d = neg(d);
    }
    if (n === 0n) return Rational.ZERO;
    const g = gcd(abs(n), d);
    return new Rational(n / g, d / g);
  }

  /** `0/1`. */
  static readonly ZERO: Rational = new Rational(0n, 1n);
  /** `1/1`. */
  static readonly ONE: Rational = new Rational(1n, 1n);

  /** `this + o`, checked. */
  add(o: Rational): Rational {
    return Rational.of(add(mul(this.num, o.den), mul(o.num, this.den)), mul(this.den, o.den));
  }

  /** `this − o`, checked. */
  sub(o: Rational): Rational {
    return Rational.of(sub(mul(this.num, o.den), mul(o.num, this.den)), mul(this.den, o.den));
  }

  /** `this × o`, checked. */
  mul(o: Rational): Rational {
    return Rational.of(mul(this.num, o.num), mul(this.den, o.den));
  }

  /** `this ÷ o`, checked; a zero divisor throws `DivisionByZeroError`. */
  div(o: Rational): Rational {
    if (o.num === 0n) throw new DivisionByZeroError(`division of ${this} by zero`);
    return Rational.of(mul(this.num, o.den), mul(this.den, o.num));
  }

  /** Compares by the checked cross products (throws rather than misorder). */
  compare(o: Rational): -1 | 0 | 1 {
    // Stryker disable next-line ConditionalExpression: `false` drops only a shortcut: with both denominators 1 the cross products are the numerators themselves (mul by 1 never overflows); this also hides the killed `true` variant
    if (this.den === 1n && o.den === 1n) return this.num < o.num ? -1 : this.num > o.num ? 1 : 0;
    const l = mul(this.num, o.den);
    const r = mul(o.num, this.den);
    return l < r ? -1 : l > r ? 1 : 0;
  }

  /**
   * Compares by the exact (unchecked) cross products; never throws. For the gauge join (ledger.md
   * §3.8) and anything else that only picks one of two existing values: no new number is created,
   * so there is nothing to overflow, and a join that threw on some operands would depend on merge
   * order (README "Deviations"). Arithmetic that creates a value keeps the checked `compare`.
   */
  compareExact(o: Rational): -1 | 0 | 1 {
    const l = this.num * o.den;
    const r = o.num * this.den;
    return l < r ? -1 : l > r ? 1 : 0;
  }

  /** Field equality; never throws. */
  equals(o: Rational): boolean {
    return this.num === o.num && this.den === o.den;
  }

  /** The least integer `≥ this` (`7/2 → 4`, `−7/2 → −3`). */
  ceil(): bigint {
    const q = this.num / this.den; // truncates toward zero
    // Stryker disable next-line EqualityOperator,ArithmeticOperator: `num >= 0n` adds only num = 0, where q·den = 0 = num anyway; `q / den` ≠ num whenever q·den ≠ num (den = 1: both are q = num; den ≥ 2 reduced, num > 0: q/den ≤ q < num), so both answer the same; this also hides the killed variants on this line
    return this.num > 0n && q * this.den !== this.num ? q + 1n : q;
  }

  /** `"num/den"`. */
  toString(): string {
    return `${this.num}/${this.den}`;
  }

  /** `a` if `a ≥ b`, else `b` (may throw on overflow, like `compare`). */
  static max(a: Rational, b: Rational): Rational {
    return a.compare(b) >= 0 ? a : b;
  }

  /** `a` if `a ≥ b`, else `b`, compared exactly (`compareExact`); never throws. The gauge join's max. */
  static maxExact(a: Rational, b: Rational): Rational {
    return a.compareExact(b) >= 0 ? a : b;
  }

  /** `u` service units as virtual time at weight `w`: `of(u × w.den, w.num)`, checked. */
  static perWeight(u: bigint, w: Weight): Rational {
    requireBigint(u, "service units");
    return Rational.of(mul(u, w.den), w.num);
  }
}
