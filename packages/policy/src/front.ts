import { Rational } from "@heddle/ledger";
import type { AttachmentId } from "@heddle/ledger";
import { needOf, validatePolicyEdges } from "./policy-edge.ts";
import type { PolicyEdge } from "./policy-edge.ts";
import { effectiveVirtualService } from "./virtual-service.ts";
import { weightedMean } from "./weighted-mean.ts";

/**
 * `targetOutstanding − outstanding > 0` (policy.md §6.1): the child is competing, whatever this peer's
 * holdings, the child's `maximumUsefulGrant` or the caps allow this round.
 */
export function isDemanding(edge: PolicyEdge): boolean {
  return needOf(edge) > 0n;
}

/**
 * The parent's front over the edges not in `excluding` (policy.md §6.2): `null` when none survive; the
 * weighted mean of `ev` over the surviving **demanding** edges when there are any; otherwise the maximum
 * `ev` over the survivors. Joiners are seated and clamped here, so they get no credit for time they did
 * not compete. Exact, in input order.
 */
export function front(edges: readonly PolicyEdge[], excluding: ReadonlySet<AttachmentId> = new Set()): Rational | null {
  validatePolicyEdges(edges);
  const survivors = edges.filter((e) => !excluding.has(e.record.id));
  const demanding = survivors.filter(isDemanding);
  if (demanding.length > 0) {
    return weightedMean(demanding.map((e) => ({ weight: e.record.weight, ev: effectiveVirtualService(e) })));
  }
  let best: Rational | null = null;
  for (const e of survivors) {
    const ev = effectiveVirtualService(e);
    best = best === null ? ev : Rational.max(best, ev);
  }
  return best;
}
