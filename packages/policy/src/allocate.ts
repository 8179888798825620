import { allocateWithEngine } from "./allocation-engine.ts";
import { validateMaxGrants } from "./pick.ts";
import { validateHoldings, validatePolicyConfig } from "./policy-config.ts";
import type { PolicyConfig } from "./policy-config.ts";
import { validatePolicyEdges } from "./policy-edge.ts";
import type { Grant, PolicyEdge } from "./policy-edge.ts";
import { allocateByRepeatedPick } from "./reference-allocation.ts";

/**
 * A multi-pick round (policy.md §7): the grants repeated `pick` makes when each grant is applied to a
 * private copy of its edge (issued and base issuance rise, the gauge takes the checkpoint) and the holdings
 * fall, until `pick` returns `null` or `maxGrants` grants were made. Runs on the incremental
 * {@link AllocationEngine} (O(log k) per grant) whenever the round provably stays in the 64-bit range, and
 * on the literal loop otherwise — so it returns, and throws, exactly what the loop would.
 */
export function allocate(
  edges: readonly PolicyEdge[],
  config: PolicyConfig,
  localHoldings: bigint,
  maxGrants: number,
): Grant[] {
  validatePolicyConfig(config);
  validatePolicyEdges(edges);
  validateHoldings(localHoldings);
  validateMaxGrants(maxGrants);
  return (
    allocateWithEngine(edges, config, localHoldings, maxGrants) ??
    allocateByRepeatedPick(edges, config, localHoldings, maxGrants)
  );
}
