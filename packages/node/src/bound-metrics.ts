import { Rational, checkedAdd } from "@heddle/ledger";
import type { AttachmentId, GroupId, LedgerReads, ReplicaId } from "@heddle/ledger";
import type { Demand } from "@heddle/policy";

/** What `boundMetrics(parent)` reports (node.md §11). */
export interface BoundMetrics {
  readonly parent: GroupId;
  /** `n = max(1, |R|)`. */
  readonly roster: number;
  /**
   * `n·E + q`, saturated at 2^63 − 1: a roster that grew past what the configuration was checked for (governed
   * enrolments, or peers outside a static roster) can take the exact value past int64, where it bounds nothing
   * any ledger amount can reach. `isConsistent` compares with the exact value.
   */
  readonly configuredWorstCase: bigint;
  /** `Σ_{r∈R} max(0, holdings(parent, r)) + q`. */
  readonly currentBound: bigint;
  /** `ceil(max_{i∈D} |(w_i/W)·T − c_i|)`, `0` if `D` is empty or `T = 0`. */
  readonly observedDeviation: bigint;
  /** `observedDeviation ≤ currentBound ≤ configuredWorstCase`. */
  readonly isConsistent: boolean;
}

/** Everything {@link boundMetrics} reads. */
export interface BoundInput {
  readonly view: LedgerReads;
  readonly parent: GroupId;
  /** `R`: roster ∪ peers ∪ unreachable ∪ {self}. */
  readonly replicas: ReadonlySet<ReplicaId>;
  /** `E` (`config.maxHoldingsPerPeer`). */
  readonly maxHoldingsPerPeer: bigint;
  /** `q` (`config.policy.quantum`). */
  readonly quantum: bigint;
  readonly demand: (edge: AttachmentId) => Demand;
}

const INT64_MAX = (1n << 63n) - 1n;

/**
 * Bound metrics of `parent` (node.md §11): how far a child's committed service can drift from its
 * weighted share given who could steer entitlement at `parent` without talking to anyone, and how far it
 * has drifted. Exact: every amount is a `bigint` or a checked `Rational` (a `LedgerOverflowError`
 * propagates rather than wrapping), except `configuredWorstCase`, which saturates at 2^63 − 1 rather than
 * throw on every call once enough peers count (see {@link BoundMetrics.configuredWorstCase}; `heddleStatic`
 * refuses a configuration whose own roster takes it past int64).
 */
export function boundMetrics(input: BoundInput): BoundMetrics {
  const { view, parent, replicas, maxHoldingsPerPeer: E, quantum: q } = input;
  const n = Math.max(1, replicas.size);
  // Unbounded bigint arithmetic: E and q are each ≤ 2^63 − 1, so the product is exact, only the report saturates.
  const worstCaseExact = BigInt(n) * E + q;
  const configuredWorstCase = worstCaseExact > INT64_MAX ? INT64_MAX : worstCaseExact;
  let steerable = 0n;
  for (const r of replicas) {
    const h = view.holdings(parent, r);
    if (h > 0n) steerable = checkedAdd(steerable, h);
  }
  const currentBound = checkedAdd(steerable, q);
  const demanding: { w: Rational; c: Rational }[] = [];
  for (const s of view.childrenOf(parent)) {
    const rec = view.record(s.attachment);
    if (rec === null) continue;
    if (input.demand(rec.id).targetOutstanding <= 0n) continue;
    demanding.push({ w: Rational.of(rec.weight.num, rec.weight.den), c: Rational.of(s.committedService) });
  }
  let T = Rational.ZERO;
  let W = Rational.ZERO;
  for (const d of demanding) {
    T = T.add(d.c);
    W = W.add(d.w);
  }
  let observedDeviation = 0n;
  if (demanding.length > 0 && T.compare(Rational.ZERO) !== 0) {
    let worst = Rational.ZERO;
    for (const d of demanding) {
      const diff = d.w.div(W).mul(T).sub(d.c);
      const abs = diff.compare(Rational.ZERO) < 0 ? Rational.ZERO.sub(diff) : diff;
      worst = Rational.max(worst, abs);
    }
    observedDeviation = worst.ceil();
  }
  return {
    parent,
    roster: n,
    configuredWorstCase,
    currentBound,
    observedDeviation,
    isConsistent: observedDeviation <= currentBound && currentBound <= worstCaseExact,
  };
}
