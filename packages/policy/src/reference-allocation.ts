import { checkedSub } from "./checked-int64.ts";
import { applyGrantToEdge } from "./grant-application.ts";
import { pick } from "./pick.ts";
import type { PolicyConfig } from "./policy-config.ts";
import type { Grant, PolicyEdge } from "./policy-edge.ts";

/**
 * The allocation round of policy.md §7 done literally: `pick`, apply the grant to a private copy of the
 * edge, lower the holdings, repeat until `pick` returns `null` or `maxGrants` grants were made. O(k) per
 * grant over k edges. It is the definition the incremental engine must match, and `allocate`'s fallback
 * when the engine cannot prove the round free of 64-bit overflow.
 */
export function allocateByRepeatedPick(
  edges: readonly PolicyEdge[],
  config: PolicyConfig,
  localHoldings: bigint,
  maxGrants: number,
): Grant[] {
  const copy = [...edges];
  let h = localHoldings;
  const grants: Grant[] = [];
  while (grants.length < maxGrants) {
    const g = pick(copy, config, h);
    if (g === null) break;
    // `pick` refuses a repeated id (validatePolicyEdges), so exactly one edge carries the winning id.
    const i = copy.findIndex((e) => e.record.id === g.attachment);
    const target = copy[i];
    // Stryker disable next-line StringLiteral: unreachable: pick names one of the edges it was given, and copy holds them all
    if (target === undefined) throw new Error("unreachable: pick named an edge not in the list");
    copy[i] = applyGrantToEdge(target, g.amount);
    h = checkedSub(h, g.amount);
    grants.push(g);
  }
  return grants;
}
