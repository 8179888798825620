import { LedgerOverflowError, MAX, MIN } from "@heddle/ledger";

/** `x` if it lies in the signed 64-bit range, else `LedgerOverflowError` (policy.md §2.2's `chk`). */
export function chk(x: bigint): bigint {
  if (x > MAX || x < MIN) throw new LedgerOverflowError(`value ${x} is outside the signed 64-bit range`);
  return x;
}

/** Checked `a − b`. */
export function checkedSub(a: bigint, b: bigint): bigint {
  return chk(a - b);
}

/** Checked `a + b`. */
export function checkedAdd(a: bigint, b: bigint): bigint {
  return chk(a + b);
}

/** The smaller of two bigints. */
export function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
