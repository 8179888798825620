import { Rational } from "@heddle/ledger";
import type { Weight } from "@heddle/ledger";

/** One term of a weighted mean of virtual times. */
export interface WeightedTerm {
  readonly weight: Weight;
  readonly ev: Rational;
}

/**
 * `Σ w·ev / Σ w` over a non-empty list, accumulated in the given order with checked `Rational`
 * arithmetic (weights as `wn/wd`). Shared by `pick`'s parent virtual time `V` (§5 step 2) and `front`
 * (§6.2) so the two cannot drift.
 */
export function weightedMean(terms: readonly WeightedTerm[]): Rational {
  let sumWeighted = Rational.ZERO;
  let sumWeights = Rational.ZERO;
  for (const t of terms) {
    const w = Rational.of(t.weight.num, t.weight.den);
    sumWeighted = sumWeighted.add(w.mul(t.ev));
    sumWeights = sumWeights.add(w);
  }
  return sumWeighted.div(sumWeights);
}
