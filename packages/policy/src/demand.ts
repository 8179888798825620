/**
 * What a child could still usefully hold (policy.md §3.1). Advisory: it steers which child is served
 * and nothing else; no spend path reads it. Both fields are `≥ 0`.
 */
export interface Demand {
  /** The outstanding entitlement the child would like to hold in total. */
  readonly targetOutstanding: bigint;
  /** The largest single grant the child can absorb. */
  readonly maximumUsefulGrant: bigint;
}

/** The demand of a child that wants nothing: `{ targetOutstanding: 0n, maximumUsefulGrant: 0n }`. */
export const DEMAND_NONE: Demand = Object.freeze({ targetOutstanding: 0n, maximumUsefulGrant: 0n });
