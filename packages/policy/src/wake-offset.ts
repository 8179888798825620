import { Rational } from "@heddle/ledger";
import type { Weight } from "@heddle/ledger";
import { PolicyInputError } from "./errors.ts";

/**
 * The wake clamp (policy.md §6.5): `max(0, front − vRaw − sleeperCredit/w)`. With no sleeper credit a
 * waker lands exactly on the front; a child already ahead of the front is never pulled back (result 0).
 * Callers join the stored offset with `max`, never replace it.
 */
export function wakeOffset(front: Rational, vRaw: Rational, w: Weight, sleeperCredit: bigint): Rational {
  if (typeof sleeperCredit !== "bigint" || sleeperCredit < 0n) {
    throw new PolicyInputError(`sleeperCredit must be a bigint ≥ 0, got ${String(sleeperCredit)}`);
  }
  return Rational.max(Rational.ZERO, front.sub(vRaw).sub(Rational.perWeight(sleeperCredit, w)));
}
