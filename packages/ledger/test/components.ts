/**
 * The nine replicated components of a ledger (ledger.md §4.1), read back from its canonical
 * encoding into plain maps, so tests can check stored values slot by slot without relying on the
 * implementation's internals.
 */
import { EntitlementLedger } from "../src/index.ts";
import type { Lifecycle } from "../src/index.ts";

/** `[parent, child, num, den]` of one record, numbers as bigint. */
export type Rec = readonly [string, string, bigint, bigint];

/** Decoded components; counter maps are keyed `edge|replica` (transfers `key|donor|recipient`). */
export interface Components {
  readonly records: Map<string, Rec[]>;
  readonly mints: Map<string, readonly [string, string, bigint]>;
  readonly counters: Record<"issued" | "returned" | "leafSpent" | "rollupSpent", Map<string, bigint>>;
  readonly transfers: Map<string, bigint>;
  readonly lifecycle: Map<string, Lifecycle>;
  readonly gauges: Map<string, readonly [bigint, bigint, bigint]>;
}

/** Families of per-writer counters keyed by edge. */
export const COUNTER_FAMILIES = ["issued", "returned", "leafSpent", "rollupSpent"] as const;

type Pair<T> = [string, T];

/** Parses `x.encode()` into {@link Components}. */
export function components(x: EntitlementLedger): Components {
  const o = JSON.parse(x.encode()) as Record<string, unknown>;
  const c: Components = {
    records: new Map(),
    mints: new Map(),
    counters: { issued: new Map(), returned: new Map(), leafSpent: new Map(), rollupSpent: new Map() },
    transfers: new Map(),
    lifecycle: new Map(),
    gauges: new Map(),
  };
  for (const [id, recs] of (o.records ?? []) as Pair<string[][]>[]) {
    c.records.set(
      id,
      recs.map(([p, q, n, d]) => [p!, q!, BigInt(n!), BigInt(d!)] as const),
    );
  }
  for (const [id, [root, holder, amount]] of (o.mints ?? []) as Pair<[string, string, string]>[]) {
    c.mints.set(id, [root, holder, BigInt(amount)]);
  }
  for (const fam of COUNTER_FAMILIES) {
    for (const [e, slots] of (o[fam] ?? []) as Pair<Pair<string>[]>[]) {
      for (const [r, v] of slots) c.counters[fam].set(`${e}|${r}`, BigInt(v));
    }
  }
  for (const [k, rows] of (o.transfers ?? []) as Pair<Pair<Pair<string>[]>[]>[]) {
    for (const [d, slots] of rows) for (const [x, v] of slots) c.transfers.set(`${k}|${d}|${x}`, BigInt(v));
  }
  for (const [e, lc] of (o.lifecycle ?? []) as Pair<Lifecycle>[]) c.lifecycle.set(e, lc);
  for (const [e, [n, d, f]] of (o.gauges ?? []) as Pair<[string, string, string]>[]) {
    c.gauges.set(e, [BigInt(n), BigInt(d), BigInt(f)]);
  }
  return c;
}

/** Rank of a lifecycle (§3.5). */
export const rank = (l: Lifecycle): number => ["PREPARED", "ACTIVE", "CLOSING", "RETIRED"].indexOf(l);

/** Exact comparison of two fractions with positive denominators (test-side, unbounded bigint). */
export function cmpFrac(an: bigint, ad: bigint, bn: bigint, bd: bigint): number {
  const l = an * bd;
  const r = bn * ad;
  return l < r ? -1 : l > r ? 1 : 0;
}

/** The §3.7 total order on mint records: root, holder (code units), then amount. */
export function cmpMint(a: readonly [string, string, bigint], b: readonly [string, string, bigint]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0;
}
