import { AttachmentId, GroupId, Rational, Weight } from "@heddle/ledger";
import type { EntitlementLedger, Gauge } from "@heddle/ledger";
import { applyGrantToEdge } from "../src/grant-application.ts";
import type { PolicyEdge } from "../src/policy-edge.ts";

/** Test-side description of one edge; every field has a neutral default. */
export interface EdgeSpec {
  /** Weight as `[num, den]` or an integer; default 1. */
  w?: bigint | readonly [bigint, bigint];
  /** Gauge as `[floor, folded]`; `null` = no gauge; default `{0, 0}`. */
  gauge?: readonly [Rational | bigint, bigint] | null;
  issued?: bigint;
  returned?: bigint;
  spent?: bigint;
  /** Base issuance; defaults to `issued`. */
  base?: bigint;
  /** Demand `[target, maxGrant]`; default `(10⁶, 10⁶)`. */
  demand?: readonly [bigint, bigint];
  offset?: Rational;
}

/** Builds a `Rational` from a bigint or passes a `Rational` through. */
export function rat(x: Rational | bigint, d = 1n): Rational {
  return x instanceof Rational ? x : Rational.of(x, d);
}

/** A `Weight` from the spec's `bigint | [num, den]` shorthand. */
export function weightOf(w: bigint | readonly [bigint, bigint] | undefined): Weight {
  if (w === undefined) return Weight.ONE;
  return typeof w === "bigint" ? Weight.of(w) : Weight.of(w[0], w[1]);
}

/** A complete `PolicyEdge` for tests. */
export function edge(id: string, s: EdgeSpec = {}): PolicyEdge {
  const issued = s.issued ?? 0n;
  const returned = s.returned ?? 0n;
  const spent = s.spent ?? 0n;
  const g = s.gauge === undefined ? ([0n, 0n] as const) : s.gauge;
  const gauge: Gauge | null = g === null ? null : { floor: rat(g[0]), folded: g[1] };
  const demand = s.demand ?? [1_000_000n, 1_000_000n];
  return {
    record: { id: AttachmentId(id), parent: GroupId("parent"), child: GroupId(`child-${id}`), weight: weightOf(s.w) },
    summary: {
      attachment: AttachmentId(id),
      issued,
      returned,
      spent,
      outstanding: issued - returned - spent,
      committedService: issued - returned,
    },
    demand: { targetOutstanding: demand[0], maximumUsefulGrant: demand[1] },
    gauge,
    baseIssued: s.base ?? issued,
    virtualOffset: s.offset ?? Rational.ZERO,
  };
}

/** The edge with its fields replaced (summary derived values recomputed). */
export function withChanges(e: PolicyEdge, c: Partial<Pick<PolicyEdge, "demand" | "gauge" | "virtualOffset">> & {
  returned?: bigint;
  spent?: bigint;
}): PolicyEdge {
  const returned = c.returned ?? e.summary.returned;
  const spent = c.spent ?? e.summary.spent;
  const issued = e.summary.issued;
  return {
    ...e,
    ...(c.demand === undefined ? {} : { demand: c.demand }),
    ...(c.gauge === undefined ? {} : { gauge: c.gauge }),
    ...(c.virtualOffset === undefined ? {} : { virtualOffset: c.virtualOffset }),
    summary: { ...e.summary, returned, spent, outstanding: issued - returned - spent, committedService: issued - returned },
  };
}

/** Issues `amount` down `e` and spends it at once ("saturated", policy.md §9). */
export function grantAndSpend(e: PolicyEdge, amount: bigint): PolicyEdge {
  const after = applyGrantToEdge(e, amount);
  return withChanges(after, { spent: after.summary.spent + amount });
}

/** Seats a newborn the way `ledger.seat` does: `{max(front, base/w), base}` (policy.md §6.3). */
export function seated(e: PolicyEdge, front: Rational): PolicyEdge {
  const own = Rational.perWeight(e.baseIssued, e.record.weight);
  return { ...e, gauge: { floor: Rational.max(front, own), folded: e.baseIssued } };
}

/** Counts grants per attachment id. */
export function tally(grants: readonly { attachment: string; amount: bigint }[]): Map<string, bigint> {
  const m = new Map<string, bigint>();
  for (const g of grants) m.set(g.attachment, (m.get(g.attachment) ?? 0n) + g.amount);
  return m;
}

/**
 * A parent's children as the node reads them from a ledger view, in the order of `ids`: each with its record,
 * summary, gauge and base issuance from `L`, and the demand (and virtual offset, default 0) of its spec.
 */
export function edgesFromLedger(L: EntitlementLedger, ids: readonly AttachmentId[], specs: readonly { target: bigint; maxGrant: bigint; offset?: Rational }[]): PolicyEdge[] {
  return ids.map((id, i) => {
    const s = specs[i]!;
    return {
      record: L.record(id)!,
      summary: L.edge(id)!,
      demand: { targetOutstanding: s.target, maximumUsefulGrant: s.maxGrant },
      gauge: L.gauge(id),
      baseIssued: L.baseIssuance(id),
      virtualOffset: s.offset ?? Rational.ZERO,
    };
  });
}
