/**
 * Thrown when a checked 64-bit operation leaves `[−2^63, 2^63 − 1]` (ledger.md §2.1).
 * Deterministic: two conforming implementations throw on exactly the same inputs.
 */
export class LedgerOverflowError extends RangeError {
  override name = "LedgerOverflowError";
}

/** Thrown by `Rational.of(n, 0n)` and by dividing by a zero `Rational` (ledger.md §3.4). */
export class DivisionByZeroError extends RangeError {
  override name = "DivisionByZeroError";
}

/** Thrown by `EntitlementLedger.decode` on input that is not a valid encoding (ledger.md §10). */
export class LedgerDecodeError extends Error {
  override name = "LedgerDecodeError";
}

/** A decoded value names an id longer than the decoder's `maxIdLength` (a receiver's limit; ledger.md sets none). */
export class LedgerIdTooLongError extends LedgerDecodeError {
  override name = "LedgerIdTooLongError";
}
