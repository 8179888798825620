import { Rational, Weight } from "@heddle/ledger";
import type { AttachmentId, AttachmentRecord, EdgeSummary, Gauge } from "@heddle/ledger";
import { checkedSub } from "./checked-int64.ts";
import type { Demand } from "./demand.ts";
import { PolicyInputError } from "./errors.ts";

/**
 * Everything the policy reads about one child edge of a parent (policy.md §1, §3.3). A plain value:
 * the policy never mutates it and never reads anything else.
 */
export interface PolicyEdge {
  /** The immutable edge record: id, parent, child, weight. */
  readonly record: AttachmentRecord;
  /** The edge's effective counters; `summary.attachment` must equal `record.id`. */
  readonly summary: EdgeSummary;
  /** The folded live demand of the child (node.md §6). */
  readonly demand: Demand;
  /** The replicated seat; `null` means nobody has seated this edge in this view. */
  readonly gauge: Gauge | null;
  /** Base issuance, the gauge's fold axis; `0 ≤ baseIssued ≤ summary.issued`. */
  readonly baseIssued: bigint;
  /** The local wake clamp, `Rational.ZERO` if none. */
  readonly virtualOffset: Rational;
}

/** A decision of the policy: give `amount > 0` units to edge `attachment`. */
export interface Grant {
  /** The edge that receives the grant. */
  readonly attachment: AttachmentId;
  /** The grant size, `> 0`. */
  readonly amount: bigint;
}

function requireBig(v: unknown, what: string, id: string): void {
  if (typeof v !== "bigint") throw new PolicyInputError(`edge ${id}: ${what} must be a bigint, got ${typeof v}`);
}

/**
 * Throws {@link PolicyInputError} unless `e` is consistent (policy.md §3.3): `record.id =
 * summary.attachment`, a `Weight` weight, `0 ≤ baseIssued ≤ summary.issued`, both demand fields `≥ 0`, `gauge.folded ≥ 0`,
 * a `Rational` offset and floor.
 */
export function validatePolicyEdge(e: PolicyEdge): void {
  if (typeof e !== "object" || e === null) throw new PolicyInputError("policy edge must be an object");
  for (const part of ["record", "summary", "demand"] as const) {
    if (typeof e[part] !== "object" || e[part] === null) throw new PolicyInputError(`policy edge ${part} must be an object (got ${e[part] === null ? "null" : typeof e[part]})`);
  }
  const id = String(e.record.id);
  if (e.record.id !== e.summary.attachment) {
    throw new PolicyInputError(`edge ${id}: record id differs from summary attachment ${String(e.summary.attachment)}`);
  }
  if (!(e.record.weight instanceof Weight)) {
    const got = e.record.weight === null ? "null" : typeof e.record.weight;
    throw new PolicyInputError(`edge ${id}: weight must be a Weight (build it with Weight.of(num, den)), got ${got}`);
  }
  requireBig(e.summary.issued, "issued", id);
  requireBig(e.summary.returned, "returned", id);
  requireBig(e.summary.spent, "spent", id);
  requireBig(e.baseIssued, "baseIssued", id);
  requireBig(e.demand.targetOutstanding, "targetOutstanding", id);
  requireBig(e.demand.maximumUsefulGrant, "maximumUsefulGrant", id);
  if (e.baseIssued < 0n) throw new PolicyInputError(`edge ${id}: baseIssued ${e.baseIssued} < 0`);
  if (e.baseIssued > e.summary.issued) {
    throw new PolicyInputError(`edge ${id}: baseIssued ${e.baseIssued} exceeds issued ${e.summary.issued}`);
  }
  if (e.demand.targetOutstanding < 0n) throw new PolicyInputError(`edge ${id}: targetOutstanding < 0`);
  if (e.demand.maximumUsefulGrant < 0n) throw new PolicyInputError(`edge ${id}: maximumUsefulGrant < 0`);
  if (!(e.virtualOffset instanceof Rational)) throw new PolicyInputError(`edge ${id}: virtualOffset must be a Rational`);
  if (e.gauge !== null) {
    if (typeof e.gauge !== "object") throw new PolicyInputError(`edge ${id}: gauge must be an object or null (got ${typeof e.gauge})`);
    requireBig(e.gauge.folded, "gauge.folded", id);
    if (e.gauge.folded < 0n) throw new PolicyInputError(`edge ${id}: gauge.folded < 0`);
    if (!(e.gauge.floor instanceof Rational)) throw new PolicyInputError(`edge ${id}: gauge.floor must be a Rational`);
  }
}

/**
 * Validates every edge in order (see {@link validatePolicyEdge}) and refuses a repeated id: the edges are
 * one parent's children, each attachment at most once, and the id tie-breaks of §5 assume so.
 */
export function validatePolicyEdges(edges: readonly PolicyEdge[]): void {
  if (!Array.isArray(edges)) throw new PolicyInputError("edges must be an array");
  const seen = new Set<string>();
  for (const e of edges) {
    validatePolicyEdge(e);
    if (seen.has(e.record.id)) throw new PolicyInputError(`edge ${e.record.id}: listed twice (each child edge may appear once)`);
    seen.add(e.record.id);
  }
}

/** `issued − returned − spent`, checked (policy.md §3.3); may be transiently negative. */
export function outstandingOf(e: PolicyEdge): bigint {
  return checkedSub(checkedSub(e.summary.issued, e.summary.returned), e.summary.spent);
}

/** `targetOutstanding − outstanding`, checked: how much more the child would like to hold. */
export function needOf(e: PolicyEdge): bigint {
  return checkedSub(e.demand.targetOutstanding, outstandingOf(e));
}
