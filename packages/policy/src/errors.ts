/**
 * Thrown when the policy is handed inconsistent input — a caller bug, never a network condition
 * (policy.md §3.3–3.4): a non-positive quantum, an edge whose record and summary disagree, a negative
 * demand or base issuance, negative holdings, and so on. Nothing has been computed when it is thrown.
 */
export class PolicyInputError extends TypeError {
  override name = "PolicyInputError";
}

/**
 * Thrown when the policy detects a bug in itself at run time (policy.md §5 step 3): an empty eligible
 * set, which exact arithmetic makes impossible. The message lists every candidate's id, `ev` and weight.
 * The policy never substitutes a fallback decision and carries on.
 */
export class PolicyInvariantError extends Error {
  override name = "PolicyInvariantError";
}
