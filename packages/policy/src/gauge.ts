import { Rational } from "@heddle/ledger";
import type { Gauge, Weight } from "@heddle/ledger";
import { checkedSub } from "./checked-int64.ts";

/**
 * The componentwise join of two gauges (ledger.md §3.8, policy.md §3.2):
 * `{ floor: max(a.floor, b.floor), folded: max(a.folded, b.folded) }`. Idempotent, commutative and
 * associative. Deliberately not "keep the pair with the larger floor": pairing a stale floor with a
 * better-informed fold is what deflates a stale seat (policy.md §8.6). Never throws: the floors are compared
 * exactly (`Rational.maxExact`), as the ledger's own join compares them — ledger.md governs the gauge (policy.md's
 * preamble), and `allocate`'s apply step must end as `ledger.delegate`'s checkpoint does (§7). The checked compare
 * threw on in-range floors whose cross products leave int64 (a floor near 2^63, or with a denominator near 2^32),
 * so a round the node loop completes threw in `allocate`.
 */
export function joinGauge(a: Gauge, b: Gauge): Gauge {
  return {
    floor: Rational.maxExact(a.floor, b.floor),
    // Stryker disable next-line EqualityOperator: equal folds are the same bigint value
    folded: a.folded >= b.folded ? a.folded : b.folded,
  };
}

/**
 * The gross virtual service of an edge (ledger.md §6.6 `read(g, iss, w)`): `g.floor + (baseIssued −
 * g.folded)/w`, or `baseIssued/w` when the gauge is absent. Every `u/w` goes through `Rational.perWeight`,
 * the one helper the ledger's checkpoint also uses. Not monotone in the view: a larger fold lowers it.
 */
export function grossVirtualService(g: Gauge | null, baseIssued: bigint, w: Weight): Rational {
  if (g === null) return Rational.perWeight(baseIssued, w);
  return g.floor.add(Rational.perWeight(checkedSub(baseIssued, g.folded), w));
}
