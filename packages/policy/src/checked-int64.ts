/** Checked 64-bit arithmetic (policy.md §2.2's `chk`): the ledger's, so both packages throw alike. */
export { checked as chk, checkedAdd, checkedSub } from "@heddle/ledger";

/** The smaller of two bigints. */
export function minBig(a: bigint, b: bigint): bigint {
  // Stryker disable next-line EqualityOperator: with a === b either bigint is the same value
  return a < b ? a : b;
}
