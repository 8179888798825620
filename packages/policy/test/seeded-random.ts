/**
 * A tiny seeded generator (mulberry32) for simulations: 32-bit integer arithmetic only, so a seed
 * reproduces a run exactly on every platform. Not cryptographic.
 */
export class SeededRandom {
  private state: number;
  readonly seed: number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    this.state = this.seed;
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  nextU32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** An integer in `lo … hi` inclusive (small ranges; modulo bias is irrelevant here). */
  int(lo: number, hi: number): number {
    return lo + (this.nextU32() % (hi - lo + 1));
  }

  /** A bigint in `lo … hi` inclusive. */
  big(lo: number, hi: number): bigint {
    return BigInt(this.int(lo, hi));
  }

  /** True with probability `num/den`. */
  chance(num: number, den: number): boolean {
    return this.nextU32() % den < num;
  }
}

/** The seed to use: `HEDDLE_SEED` if set, else `fallback`. */
export function seedFromEnv(fallback: number): number {
  const s = process.env["HEDDLE_SEED"];
  return s === undefined ? fallback : Number.parseInt(s, 10) >>> 0;
}
