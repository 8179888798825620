import { LedgerOverflowError } from "./errors.ts";

/** The largest signed 64-bit value, `2^63 − 1`. */
export const MAX: bigint = (1n << 63n) - 1n;
/** The smallest signed 64-bit value, `−2^63`. */
export const MIN: bigint = -(1n << 63n);

/** Returns `x` if it lies in the signed 64-bit range, else throws {@link LedgerOverflowError}. */
export function chk(x: bigint): bigint {
  if (x > MAX || x < MIN) throw new LedgerOverflowError(`value ${x} is outside the signed 64-bit range`);
  return x;
}

/** Checked `a + b`. */
export function add(a: bigint, b: bigint): bigint {
  return chk(a + b);
}

/** Checked `a − b`. */
export function sub(a: bigint, b: bigint): bigint {
  return chk(a - b);
}

/** Checked `a × b`. */
export function mul(a: bigint, b: bigint): bigint {
  return chk(a * b);
}

/** Checked `−a` (so `−(−2^63)` throws). */
export function neg(a: bigint): bigint {
  return chk(-a);
}

/** Checked `|a|`. */
export function abs(a: bigint): bigint {
  return a < 0n ? neg(a) : a;
}

/** Greatest common divisor of two non-negative bigints (`gcd(0, 0) = 0`). */
export function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) {
    const t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/** Throws `TypeError` unless `v` is a bigint: quantities are never JS numbers (ledger.md §2.1). */
export function requireBigint(v: unknown, what: string): bigint {
  if (typeof v !== "bigint") throw new TypeError(`${what} must be a bigint, got ${typeof v}`);
  return v;
}

/** Service units: a bigint in `0 … MAX` (ledger.md §3.2). */
export type ServiceUnits = bigint;

/** Checked sum of two service-unit amounts. */
export function addUnits(a: ServiceUnits, b: ServiceUnits): ServiceUnits {
  return add(a, b);
}
