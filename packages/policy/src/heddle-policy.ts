import type { AttachmentId, Rational, Weight } from "@heddle/ledger";
import { allocate } from "./allocate.ts";
import { front, isDemanding } from "./front.ts";
import { pick } from "./pick.ts";
import type { PolicyConfig } from "./policy-config.ts";
import type { Grant, PolicyEdge } from "./policy-edge.ts";
import { settleJoiners } from "./settle-joiners.ts";
import type { SettleInput, SettlePlan } from "./settle-joiners.ts";
import { effectiveVirtualService, virtualService } from "./virtual-service.ts";
import { wakeOffset } from "./wake-offset.ts";

/** The shape of {@link HeddlePolicy} (policy.md §1). */
export interface HeddlePolicyApi {
  /** One EEVDF selection (§5): the next grant, or `null`. */
  pick(edges: readonly PolicyEdge[], config: PolicyConfig, localHoldings: bigint): Grant | null;
  /** `v(e)`, virtual service from committed service (§4). */
  virtualService(edge: PolicyEdge): Rational;
  /** `ev(e) = v(e) + virtualOffset` (§4). */
  effectiveVirtualService(edge: PolicyEdge): Rational;
  /** `targetOutstanding − outstanding > 0` (§6.1). */
  isDemanding(edge: PolicyEdge): boolean;
  /** The front of the demanding set, or the max `ev` if none demand, or `null` (§6.2). */
  front(edges: readonly PolicyEdge[], excluding?: ReadonlySet<AttachmentId>): Rational | null;
  /** `max(0, front − vRaw − sleeperCredit/w)` (§6.5). */
  wakeOffset(front: Rational, vRaw: Rational, w: Weight, sleeperCredit: bigint): Rational;
  /** One joiner set against one front: seats, clamps and the new observed map (§6.6). */
  settleJoiners(input: SettleInput): SettlePlan;
  /** A multi-pick round, identical to repeated `pick` (§7). */
  allocate(edges: readonly PolicyEdge[], config: PolicyConfig, localHoldings: bigint, maxGrants: number): Grant[];
}

/**
 * Exact EEVDF selection among one parent's children on one peer (policy.md). Every member is a pure
 * function of its arguments: no I/O, no clock, no randomness, no floating point. It never creates
 * entitlement; it only says which child gets the next quantum of this peer's holdings.
 */
export const HeddlePolicy: HeddlePolicyApi = Object.freeze({
  pick,
  virtualService,
  effectiveVirtualService,
  isDemanding,
  front,
  wakeOffset,
  settleJoiners,
  allocate,
});
