import { MAX } from "@heddle/ledger";
import { PolicyInputError } from "./errors.ts";

/** The largest signed 64-bit value; as a cap it means "unbounded" (policy.md §3.4). */
export const I64_MAX: bigint = MAX;

/** Per-parent tuning of the policy (policy.md §3.4). Check it with {@link validatePolicyConfig}. */
export interface PolicyConfig {
  /** Largest single grant, `> 0`. */
  readonly quantum: bigint;
  /** Largest outstanding entitlement per child, `≥ 0`; `undefined` or `I64_MAX` mean unbounded. */
  readonly perChildOutstandingCap?: bigint;
  /** Virtual-time credit a waking child may keep, in service units, `≥ 0`; default `0n`. */
  readonly sleeperCredit?: bigint;
}

function requireUnits(v: unknown, what: string, min: bigint): void {
  if (typeof v !== "bigint") throw new PolicyInputError(`${what} must be a bigint, got ${typeof v}`);
  if (v < min || v > MAX) throw new PolicyInputError(`${what} must lie in ${min} … 2^63 − 1, got ${v}`);
}

/**
 * Throws {@link PolicyInputError} unless `c` is a valid config: `quantum` a bigint in `1 … 2^63 − 1`,
 * `perChildOutstandingCap` (if given) and `sleeperCredit` (if given) bigints in `0 … 2^63 − 1`.
 * Every entry point of the policy calls it first.
 */
export function validatePolicyConfig(c: PolicyConfig): void {
  if (typeof c !== "object" || c === null) throw new PolicyInputError("policy config must be an object");
  requireUnits(c.quantum, "quantum", 1n);
  if (c.perChildOutstandingCap !== undefined) requireUnits(c.perChildOutstandingCap, "perChildOutstandingCap", 0n);
  if (c.sleeperCredit !== undefined) requireUnits(c.sleeperCredit, "sleeperCredit", 0n);
}

/** The per-child cap as a bigint, or `null` when unbounded (`undefined` or `I64_MAX`). */
export function boundedCap(c: PolicyConfig): bigint | null {
  const cap = c.perChildOutstandingCap;
  return cap === undefined || cap === I64_MAX ? null : cap;
}

/** Throws {@link PolicyInputError} unless `h` is a bigint holdings value in `0 … 2^63 − 1`. */
export function validateHoldings(h: bigint): void {
  requireUnits(h, "localHoldings", 0n);
}
