/**
 * `@heddle/policy` — exact EEVDF selection among a parent's children (policy.md). Pure functions of
 * per-edge numbers: which child edge gets the next quantum of this peer's holdings, and how big it is.
 */
export { Rational, Weight, LedgerOverflowError, DivisionByZeroError } from "@heddle/ledger";
export type { Gauge } from "@heddle/ledger";
export { PolicyInputError, PolicyInvariantError } from "./errors.ts";
export { DEMAND_NONE } from "./demand.ts";
export type { Demand } from "./demand.ts";
export { joinGauge, grossVirtualService } from "./gauge.ts";
export type { PolicyEdge, Grant } from "./policy-edge.ts";
export { validatePolicyConfig, I64_MAX } from "./policy-config.ts";
export type { PolicyConfig } from "./policy-config.ts";
export type { SettleInput, SettlePlan } from "./settle-joiners.ts";
export { HeddlePolicy } from "./heddle-policy.ts";
export type { HeddlePolicyApi } from "./heddle-policy.ts";
export { AllocationEngine } from "./allocation-engine.ts";
