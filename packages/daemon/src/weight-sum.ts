// The API's precheck on `prepare`: a weight that would make its parent's children's weights sum past int64. The
// policy takes Σ w over a parent's children in exact int64 arithmetic (policy.md §2.2–2.3, node.md §7, §11); a sum
// that leaves it throws `LedgerOverflowError` in every round at that parent, which then is never scheduled again
// (the scheduler reports it, bounds say "unavailable"). The ledger accepts any valid weight (ledger.md §3.3, §7.1)
// and its apply must stay as specified, so the API refuses such a prepare before it is proposed. Only a precheck:
// it reads this peer's view, so two prepares racing from different peers (or a view that lags) can still pass.
import { LedgerOverflowError, Rational, type AttachmentRecord, type EntitlementLedger } from "@heddle/ledger";
import { fractionText } from "./wire.ts";

/** Why a prepare of `record` on `view` would leave its parent's children's weight sum outside int64, or null; `act` starts the message. */
export function weightSumProblem(view: Pick<EntitlementLedger, "knownEdges" | "record" | "lifecycle">, record: AttachmentRecord, act = "prepare"): { siblings: number; message: string } | null {
  // The children the parent will schedule together: its ACTIVE and PREPARED edges. An edge with the record's own id
  // (a retried prepare) and the child's other generations under this parent (a re-weight: only one of them is ever
  // live) are replaced by the new record.
  const weights: [string, Rational][] = [[record.id, Rational.of(record.weight.num, record.weight.den)]];
  for (const e of view.knownEdges()) {
    const r = view.record(e);
    if (r === null || r.parent !== record.parent || r.id === record.id || r.child === record.child) continue;
    const lc = view.lifecycle(e);
    if (lc !== "ACTIVE" && lc !== "PREPARED") continue;
    weights.push([r.id, Rational.of(r.weight.num, r.weight.den)]);
  }
  // in edge-id order, as the node passes them to the policy (policy.md: the order fixes which intermediate overflows)
  weights.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  let sum = Rational.ZERO;
  try {
    for (const [, w] of weights) sum = sum.add(w);
  } catch (e) {
    if (!(e instanceof LedgerOverflowError)) throw e;
    const siblings = weights.length - 1;
    return {
      siblings,
      message: `${act}: weight ${fractionText(record.weight)} would make the weights of ${record.parent}'s children (this edge and ${siblings} other ACTIVE or PREPARED) sum past 2^63 − 1, so ${record.parent} could never be scheduled (exact int64 arithmetic, policy.md §2.3); choose a smaller weight, or scale the siblings' weights down together`,
    };
  }
  return null;
}

/**
 * A genesis topology's edges (all ACTIVE) whose parent's children's weights would sum past int64, in the order given:
 * for each such parent, the position of the edge that tips it over and why (`weightSumProblem`'s message). The
 * config check names `mode.topology[i].weight` with it, `heddle init --tree` the item. Each parent is summed once; only
 * a parent whose children overflow is searched (by halving) for the first edge, in the order given, whose prefix
 * overflows — a config of 10,000 edges is checked in milliseconds.
 */
export function genesisWeightProblems(topology: readonly AttachmentRecord[]): { index: number; message: string }[] {
  const byParent = new Map<string, number[]>();
  topology.forEach((rec, k) => {
    const list = byParent.get(rec.parent);
    if (list === undefined) byParent.set(rec.parent, [k]);
    else list.push(k);
  });
  const out: { index: number; message: string }[] = [];
  for (const idx of byParent.values()) {
    // the problem of adding the parent's k-th edge (in the order given) to the ones before it
    const problemAt = (k: number): { siblings: number; message: string } | null => {
      const before = new Map(idx.slice(0, k).map((j) => [topology[j]!.id as string, topology[j]!]));
      const view = { knownEdges: () => [...before.keys()], record: (id: string) => before.get(id) ?? null, lifecycle: () => "ACTIVE" as const };
      const rec = topology[idx[k]!]!;
      return weightSumProblem(view as never, rec, `genesis edge ${rec.id}`);
    };
    if (problemAt(idx.length - 1) === null) continue;
    let lo = 0;
    let hi = idx.length - 1; // the prefix through hi overflows
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (problemAt(mid) === null) lo = mid + 1;
      else hi = mid;
    }
    out.push({ index: idx[hi]!, message: problemAt(hi)!.message });
  }
  return out.sort((a, b) => a.index - b.index);
}
