import { Rational, checkedAdd, checkedMul } from "@heddle/ledger";
import type { AttachmentId, GroupId, LedgerReads, ReplicaId } from "@heddle/ledger";
import type { Demand } from "@heddle/policy";

/** What `boundMetrics(parent)` reports (node.md §11). */
export interface BoundMetrics {
  readonly parent: GroupId;
  /** `n = max(1, |R|)`. */
  readonly roster: number;
  /** `n·E + q`. */
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

/**
 * Bound metrics of `parent` (node.md §11): how far a child's committed service can drift from its
 * weighted share given who could steer entitlement at `parent` without talking to anyone, and how far it
 * has drifted. Exact: every amount is a `bigint` or a checked `Rational` (a `LedgerOverflowError`
 * propagates rather than wrapping).
 */
export function boundMetrics(input: BoundInput): BoundMetrics {
  const { view, parent, replicas, maxHoldingsPerPeer: E, quantum: q } = input;
  const n = Math.max(1, replicas.size);
  const configuredWorstCase = checkedAdd(checkedMul(BigInt(n), E), q);
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
    isConsistent: observedDeviation <= currentBound && currentBound <= configuredWorstCase,
  };
}
