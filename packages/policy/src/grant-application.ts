import { checkedAdd, checkedSub } from "./checked-int64.ts";
import { grossVirtualService, joinGauge } from "./gauge.ts";
import type { Grant, PolicyEdge } from "./policy-edge.ts";

/**
 * The edge as it reads after `amount` more units were issued down it (policy.md §7's application step,
 * the same effect `ledger.delegate` has): `issued` and `baseIssued` rise by `amount`, the gauge is joined
 * with the checkpoint `{gross at the new base issuance, new base issuance}`. Spent and returned are
 * unchanged. Returns a new value; `edge` is untouched.
 */
export function applyGrantToEdge(edge: PolicyEdge, amount: bigint): PolicyEdge {
  const issued = checkedAdd(edge.summary.issued, amount);
  const baseIssued = checkedAdd(edge.baseIssued, amount);
  const checkpoint = { floor: grossVirtualService(edge.gauge, baseIssued, edge.record.weight), folded: baseIssued };
  const gauge = edge.gauge === null ? checkpoint : joinGauge(edge.gauge, checkpoint);
  const committedService = checkedSub(issued, edge.summary.returned);
  const outstanding = checkedSub(committedService, edge.summary.spent);
  return {
    ...edge,
    summary: { ...edge.summary, issued, committedService, outstanding },
    baseIssued,
    gauge,
  };
}

/** Applies `grant` to the matching edge(s) of `edges`, returning a new list in the same order. */
export function applyGrant(edges: readonly PolicyEdge[], grant: Grant): PolicyEdge[] {
  return edges.map((e) => (e.record.id === grant.attachment ? applyGrantToEdge(e, grant.amount) : e));
}
