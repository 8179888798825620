import { gcd, mul, MAX, requireBigint } from "./int64.ts";

/**
 * A positive ratio `num/den`, reduced to lowest terms (ledger.md §3.3). Immutable.
 * Both parts lie in `1 … 2^63 − 1`; comparisons use checked cross products and throw
 * rather than ever returning a wrong order.
 */
export class Weight {
  /** Numerator, `1 … MAX`. */
  readonly num: bigint;
  /** Denominator, `1 … MAX`, coprime with `num`. */
  readonly den: bigint;

  private constructor(num: bigint, den: bigint) {
    this.num = num;
    this.den = den;
    Object.freeze(this);
  }

  /** The weight `num/den`, reduced. `RangeError` unless both lie in `1 … MAX`; `TypeError` on non-bigints. */
  static of(num: bigint, den: bigint = 1n): Weight {
    requireBigint(num, "Weight numerator");
    requireBigint(den, "Weight denominator");
    if (num < 1n || num > MAX || den < 1n || den > MAX) {
      throw new RangeError(`Weight ${num}/${den} must have both parts in 1 … 2^63 − 1`);
    }
    const g = gcd(num, den);
    return new Weight(num / g, den / g);
  }

  /** The weight 1/1. */
  static readonly ONE: Weight = Weight.of(1n, 1n);

  /** Orders `this` against `o` by checked cross products; throws `LedgerOverflowError` if a product overflows. */
  compare(o: Weight): -1 | 0 | 1 {
    const l = mul(this.num, o.den);
    const r = mul(o.num, this.den);
    return l < r ? -1 : l > r ? 1 : 0;
  }

  /** Field equality; never throws. */
  equals(o: Weight): boolean {
    return this.num === o.num && this.den === o.den;
  }

  /** `"num/den"`. */
  toString(): string {
    return `${this.num}/${this.den}`;
  }
}
