/**
 * A time argument as this package stores it: whole milliseconds. A fraction (a clock
 * with sub-millisecond resolution) is dropped, identically on every peer, so encodings
 * stay integral; a negative, non-finite or unsafe value is a bug of the caller and
 * throws `RangeError`.
 */
export function wholeMs(n: unknown, what: string): number {
  if (typeof n === "number" && Number.isFinite(n) && n >= 0 && n <= Number.MAX_SAFE_INTEGER) return Math.floor(n);
  throw new RangeError(`${what} must be a number of milliseconds in 0 … 2^53 − 1, got ${String(n)}`);
}
