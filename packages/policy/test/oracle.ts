/**
 * An independent slow implementation of policy.md §4–§5 for comparison (§10): unbounded bigint
 * fractions that are never reduced and never range-checked, sharing no code with `Rational` or
 * `HeddlePolicy`. It reads the raw fields of the edges and nothing else.
 */
import type { PolicyEdge } from "../src/index.ts";

interface Frac {
  n: bigint;
  d: bigint; // always > 0, never reduced
}

const fr = (n: bigint, d: bigint = 1n): Frac => (d < 0n ? { n: -n, d: -d } : { n, d });
const plus = (a: Frac, b: Frac): Frac => ({ n: a.n * b.d + b.n * a.d, d: a.d * b.d });
const minus = (a: Frac, b: Frac): Frac => ({ n: a.n * b.d - b.n * a.d, d: a.d * b.d });
const times = (a: Frac, b: Frac): Frac => ({ n: a.n * b.n, d: a.d * b.d });
const over = (a: Frac, b: Frac): Frac => fr(a.n * b.d, a.d * b.n);
const cmp = (a: Frac, b: Frac): number => {
  const l = a.n * b.d;
  const r = b.n * a.d;
  return l < r ? -1 : l > r ? 1 : 0;
};

/** What the oracle decided for one round. */
export interface OracleOutcome {
  grant: { attachment: string; amount: bigint } | null;
  /** True iff the round got as far as the eligibility step (§5 step 3). */
  reachedEligibility: boolean;
}

/** `(ev, q, w)` of one candidate. */
interface OracleCandidate {
  id: string;
  ev: Frac;
  q: bigint;
  w: Frac;
}

/** The oracle's virtual service `ev` of one edge, from its raw fields. */
export function oracleEv(e: PolicyEdge): Frac {
  const w = fr(e.record.weight.num, e.record.weight.den);
  const g = e.gauge;
  const gross =
    g === null
      ? over(fr(e.baseIssued), w)
      : plus(fr(g.floor.num, g.floor.den), over(fr(e.baseIssued - g.folded), w));
  const v = minus(gross, over(fr(e.summary.returned), w));
  return plus(v, fr(e.virtualOffset.num, e.virtualOffset.den));
}

/**
 * One pick (policy.md §5) in unbounded arithmetic. `cap` is `null` when unbounded. Throws a plain
 * `Error` if the eligible set is empty (it must never be).
 */
export function oraclePick(edges: readonly PolicyEdge[], quantum: bigint, cap: bigint | null, holdings: bigint): OracleOutcome {
  if (holdings === 0n) return { grant: null, reachedEligibility: false };
  const cands: OracleCandidate[] = [];
  for (const e of edges) {
    const outstanding = e.summary.issued - e.summary.returned - e.summary.spent;
    const need = e.demand.targetOutstanding - outstanding;
    if (need <= 0n) continue;
    const limits = [quantum, need, e.demand.maximumUsefulGrant, holdings];
    if (cap !== null) limits.push(cap - outstanding);
    const q = limits.reduce((m, x) => (x < m ? x : m));
    if (q <= 0n) continue;
    cands.push({ id: e.record.id, ev: oracleEv(e), q, w: fr(e.record.weight.num, e.record.weight.den) });
  }
  if (cands.length === 0) return { grant: null, reachedEligibility: false };
  let num: Frac = fr(0n);
  let den: Frac = fr(0n);
  for (const c of cands) {
    num = plus(num, times(c.w, c.ev));
    den = plus(den, c.w);
  }
  const V = over(num, den);
  const eligible = cands.filter((c) => cmp(c.ev, V) <= 0);
  if (eligible.length === 0) throw new Error(`oracle: empty eligible set, V = ${V.n}/${V.d}`);
  const deadline = (c: OracleCandidate): Frac => plus(c.ev, over(fr(c.q), c.w));
  const sorted = [...eligible].sort((a, b) => cmp(deadline(a), deadline(b)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const w = sorted[0]!;
  return { grant: { attachment: w.id, amount: w.q }, reachedEligibility: true };
}
