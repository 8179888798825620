import { Rational } from "@heddle/ledger";
import { grossVirtualService } from "./gauge.ts";
import type { PolicyEdge } from "./policy-edge.ts";

/**
 * `v(e) = gross(e) − returned/w` (policy.md §4): the edge's virtual service from committed service
 * (issued, not spent), so a grant moves a child forward the moment it is issued and a release moves it
 * back. Exact; throws `LedgerOverflowError` where a checked 64-bit implementation would.
 */
export function virtualService(edge: PolicyEdge): Rational {
  const w = edge.record.weight;
  return grossVirtualService(edge.gauge, edge.baseIssued, w).sub(Rational.perWeight(edge.summary.returned, w));
}

/** `ev(e) = v(e) + virtualOffset` (policy.md §4): the virtual service the policy schedules by. */
export function effectiveVirtualService(edge: PolicyEdge): Rational {
  return virtualService(edge).add(edge.virtualOffset);
}
