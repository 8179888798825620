import { Rational } from "@heddle/ledger";
import type { AttachmentId, Weight } from "@heddle/ledger";
import { checkedSub, minBig } from "./checked-int64.ts";
import { PolicyInputError, PolicyInvariantError } from "./errors.ts";
import { boundedCap, validateHoldings, validatePolicyConfig } from "./policy-config.ts";
import type { PolicyConfig } from "./policy-config.ts";
import { outstandingOf, validatePolicyEdges } from "./policy-edge.ts";
import type { Grant, PolicyEdge } from "./policy-edge.ts";
import { effectiveVirtualService } from "./virtual-service.ts";
import { weightedMean } from "./weighted-mean.ts";

/** A candidate of one pick: an edge this peer could serve now, with its trimmed quantum. */
interface Candidate {
  readonly id: AttachmentId;
  readonly weight: Weight;
  readonly q: bigint;
  readonly ev: Rational;
}

/**
 * The edge's quantum before the holdings trim: `min(quantum, need, maximumUsefulGrant, capRoom)`, or
 * `null` when `need ≤ 0` (policy.md §5 step 1; `cap` is `null` when unbounded). The edge is a candidate
 * iff holdings are positive and this is positive.
 */
export function untrimmedQuantum(e: PolicyEdge, quantum: bigint, cap: bigint | null): bigint | null {
  const outstanding = outstandingOf(e);
  const need = checkedSub(e.demand.targetOutstanding, outstanding);
  // Stryker disable next-line ConditionalExpression,EqualityOperator: a need ≤ 0 gives a quantum ≤ 0 (cap − outstanding stays in int64 there), which pick, the only caller, drops one line after the call
  if (need <= 0n) return null;
  let q = minBig(minBig(quantum, need), e.demand.maximumUsefulGrant);
  if (cap !== null) q = minBig(q, checkedSub(cap, outstanding));
  return q;
}

/**
 * One EEVDF selection (policy.md §5): among the edges whose trimmed quantum is positive, the eligible
 * ones (`ev ≤ V`, `V` the weighted mean of the candidates' `ev`) compete on virtual deadline
 * `ev + q/w`, ties by the smallest id in UTF-16 order. Returns `null` when holdings are zero or there is
 * no candidate. Exact; iterates edges in the order given.
 */
export function pick(edges: readonly PolicyEdge[], config: PolicyConfig, localHoldings: bigint): Grant | null {
  validatePolicyConfig(config);
  validatePolicyEdges(edges);
  validateHoldings(localHoldings);
  // policy.md §5 step 0: null before any need is computed (a need can leave int64 on valid input: target 2^63 − 1 over a negative outstanding)
  if (localHoldings === 0n) return null;
  const cap = boundedCap(config);

  const candidates: Candidate[] = [];
  for (const e of edges) {
    const untrimmed = untrimmedQuantum(e, config.quantum, cap);
    if (untrimmed === null) continue;
    const q = minBig(untrimmed, localHoldings);
    if (q <= 0n) continue;
    candidates.push({ id: e.record.id, weight: e.record.weight, q, ev: effectiveVirtualService(e) });
  }
  if (candidates.length === 0) return null;

  const V = weightedMean(candidates);

  let winner: Candidate | null = null;
  let winnerDeadline: Rational | null = null;
  for (const c of candidates) {
    if (c.ev.compare(V) > 0) continue;
    const deadline = c.ev.add(Rational.perWeight(c.q, c.weight));
    if (winner === null || winnerDeadline === null) {
      winner = c;
      winnerDeadline = deadline;
      continue;
    }
    const cmp = deadline.compare(winnerDeadline);
    if (cmp < 0 || (cmp === 0 && c.id < winner.id)) {
      winner = c;
      winnerDeadline = deadline;
    }
  }
  if (winner === null) {
    // Stryker disable next-line ArrowFunction,StringLiteral: unreachable with genuine Weights (policy.md §5 step 3): V is an exact mean of the candidates with positive weights (Weight.of enforces 1 … MAX), so the least ev is eligible
    const list = candidates.map((c) => `${c.id} ev=${c.ev} w=${c.weight}`).join("; ");
    // Stryker disable next-line StringLiteral: unreachable, as above
    throw new PolicyInvariantError(`empty eligible set at V=${V}: ${list}`);
  }
  return { attachment: winner.id, amount: winner.q };
}

/** Throws {@link PolicyInputError} unless `n` is a non-negative safe integer count of grants. */
export function validateMaxGrants(n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new PolicyInputError(`maxGrants must be a non-negative safe integer, got ${n}`);
}
