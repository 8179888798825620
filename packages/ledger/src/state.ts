import type { AttachmentId, MintId, PathKey, ReplicaId } from "./ids.ts";
import type { AttachmentRecord, Gauge, Lifecycle, MintRecord } from "./types.ts";
import { LIFECYCLE_RANK } from "./types.ts";
import { Rational } from "./rational.ts";

/** One per-writer counter family: edge → replica → absolute value (never 0 when stored). */
export type Counter = Map<AttachmentId, Map<ReplicaId, bigint>>;
/** Transfer rows: path key → donor → recipient → absolute value. */
export type TransferTable = Map<PathKey, Map<ReplicaId, Map<ReplicaId, bigint>>>;

/** The four per-edge counter families, in encoding order. */
export const COUNTER_FAMILIES = ["issued", "returned", "leafSpent", "rollupSpent"] as const;
/** The name of one counter family. */
export type CounterFamily = (typeof COUNTER_FAMILIES)[number];

/**
 * The nine replicated components in normal form (ledger.md §4): no zero slots, no empty inner
 * maps, record sets sorted and non-empty. Instances owned by an immutable ledger are never
 * mutated; a mutable replica owns its maps outright.
 */
export interface State {
  records: Map<AttachmentId, readonly AttachmentRecord[]>;
  mints: Map<MintId, MintRecord>;
  issued: Counter;
  returned: Counter;
  leafSpent: Counter;
  rollupSpent: Counter;
  transfers: TransferTable;
  lifecycle: Map<AttachmentId, Lifecycle>;
  gauges: Map<AttachmentId, Gauge>;
}

/** A fresh empty state (the bottom element). */
export function emptyState(): State {
  return {
    records: new Map(),
    mints: new Map(),
    issued: new Map(),
    returned: new Map(),
    leafSpent: new Map(),
    rollupSpent: new Map(),
    transfers: new Map(),
    lifecycle: new Map(),
    gauges: new Map(),
  };
}

/** A new state whose outer maps are copies and whose inner maps are shared with `s`. */
export function shallowClone(s: State): State {
  return {
    records: new Map(s.records),
    mints: new Map(s.mints),
    issued: new Map(s.issued),
    returned: new Map(s.returned),
    leafSpent: new Map(s.leafSpent),
    rollupSpent: new Map(s.rollupSpent),
    transfers: new Map(s.transfers),
    lifecycle: new Map(s.lifecycle),
    gauges: new Map(s.gauges),
  };
}

/** Number of entries in the state, a cheap size measure used to pick the join base. */
export function stateSize(s: State): number {
  return (
    s.records.size +
    s.mints.size +
    s.issued.size +
    s.returned.size +
    s.leafSpent.size +
    s.rollupSpent.size +
    s.transfers.size +
    s.lifecycle.size +
    s.gauges.size
  );
}

function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function cmpBig(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Record order inside a set: parent, child, weight.num, weight.den (ledger.md §3.6). */
export function compareRecords(a: AttachmentRecord, b: AttachmentRecord): number {
  return (
    cmpStr(a.parent, b.parent) ||
    cmpStr(a.child, b.child) ||
    cmpBig(a.weight.num, b.weight.num) ||
    cmpBig(a.weight.den, b.weight.den)
  );
}

/** Mint order used by the join: root, holder, amount (ledger.md §3.7). */
export function compareMints(a: MintRecord, b: MintRecord): number {
  return cmpStr(a.root, b.root) || cmpStr(a.holder, b.holder) || cmpBig(a.amount, b.amount);
}

/** The rank of a lifecycle state. */
export function lifecycleRank(l: Lifecycle): number {
  return LIFECYCLE_RANK[l];
}

/** Sorted, duplicate-free union of two sorted record sets; returns `a` itself when `b` adds nothing. */
export function unionRecords(
  a: readonly AttachmentRecord[],
  b: readonly AttachmentRecord[],
): readonly AttachmentRecord[] {
  if (a === b) return a;
  const out: AttachmentRecord[] = [];
  let i = 0;
  let j = 0;
  let added = false;
  while (i < a.length || j < b.length) {
    if (j >= b.length) out.push(a[i++]!);
    else if (i >= a.length) {
      out.push(b[j++]!);
      added = true;
    } else {
      const c = compareRecords(a[i]!, b[j]!);
      if (c < 0) out.push(a[i++]!);
      else if (c > 0) {
        out.push(b[j++]!);
        added = true;
      } else {
        out.push(a[i++]!);
        j++;
      }
    }
  }
  return added ? Object.freeze(out) : a;
}

/**
 * Componentwise gauge join (ledger.md §3.8); returns `a` when `b` adds nothing. The floors are
 * compared exactly, not with §3.4's checked `compare`: the join only picks an operand, and a checked
 * compare throws on some in-range pairs (2^40 vs 1/2^40) but not others, which made the join
 * non-associative and merge-order dependent (README "Deviations"). Never throws.
 */
export function joinGauges(a: Gauge, b: Gauge): Gauge {
  const floor = Rational.maxExact(a.floor, b.floor);
  const folded = a.folded >= b.folded ? a.folded : b.folded;
  if (floor === a.floor && folded === a.folded) return a;
  if (floor === b.floor && folded === b.folded) return b;
  return Object.freeze({ floor, folded });
}

/**
 * Observes what a join changed, so a mutable replica can keep its derived indexes, its digest, an undo
 * log and the effective delta current without rebuilding or rescanning anything. Every callback but
 * the first three is optional; each `…Raised` fires after the write with the value before it
 * (`undefined` when the slot was absent).
 */
export interface JoinObserver {
  recordsChanged(edge: AttachmentId, before: readonly AttachmentRecord[] | undefined): void;
  mintAdded(id: MintId, before: MintRecord | undefined): void;
  replicaSeen(r: ReplicaId): void;
  /** Called before every write to any map of `dst` (outer or inner): an undo log records `before`. */
  willSet?(map: Map<unknown, unknown>, key: unknown, before: unknown): void;
  counterRaised?(fam: CounterFamily, e: AttachmentId, r: ReplicaId, before: bigint | undefined, after: bigint): void;
  transferRaised?(k: PathKey, d: ReplicaId, x: ReplicaId, before: bigint | undefined, after: bigint): void;
  lifecycleRaised?(e: AttachmentId, before: Lifecycle | undefined, after: Lifecycle): void;
  gaugeRaised?(e: AttachmentId, before: Gauge | undefined, after: Gauge): void;
}

/**
 * Joins `src` into `dst` in place, slot by slot (ledger.md §4.3). Inner maps of `dst` that are
 * not in `owned` are treated as shared and copied before their first write (copy-on-write), so
 * an immutable ledger can use this to build a new value; pass `owned = "all"` when `dst` owns
 * every inner map. Maps are never aliased from `src` into `dst`. Costs O(size of `src`).
 */
export function joinInto(dst: State, src: State, owned: Set<object> | "all", obs?: JoinObserver): void {
  const set = obs?.willSet === undefined
    ? <K, V>(m: Map<K, V>, k: K, v: V): void => void m.set(k, v)
    : <K, V>(m: Map<K, V>, k: K, v: V): void => {
        obs.willSet!(m as Map<unknown, unknown>, k, m.get(k));
        m.set(k, v);
      };
  const own = <M extends Map<unknown, unknown>>(outer: Map<unknown, M>, key: unknown, inner: M): M => {
    if (owned === "all" || owned.has(inner)) return inner;
    const copy = new Map(inner) as M;
    owned.add(copy);
    set(outer, key, copy);
    return copy;
  };
  const fresh = <M extends object>(m: M): M => {
    if (owned !== "all") owned.add(m);
    return m;
  };

  // Gauge joins are computed first and written last. They no longer throw (floors compare exactly),
  // so the join as a whole is total; the order is kept so nothing else needs to change if a
  // component ever gains a join that can fail.
  const gaugeUpdates: [AttachmentId, Gauge, Gauge | undefined][] = [];
  for (const [id, g] of src.gauges) {
    const cur = dst.gauges.get(id);
    const next = cur === undefined ? g : joinGauges(cur, g);
    if (next !== cur) gaugeUpdates.push([id, next, cur]);
  }

  for (const [id, recs] of src.records) {
    const cur = dst.records.get(id);
    const next = cur === undefined ? recs : unionRecords(cur, recs);
    if (next !== cur) {
      set(dst.records, id, next);
      obs?.recordsChanged(id, cur);
    }
  }
  for (const [id, m] of src.mints) {
    const cur = dst.mints.get(id);
    if (cur === undefined || compareMints(m, cur) > 0) {
      set(dst.mints, id, m);
      obs?.mintAdded(id, cur);
    }
  }
  for (const fam of COUNTER_FAMILIES) {
    if (src[fam].size === 0) continue;
    const d = dst[fam];
    for (const [edge, slots] of src[fam]) {
      let inner = d.get(edge);
      if (inner === undefined) {
        inner = fresh(new Map(slots));
        set(d, edge, inner);
        if (obs) {
          for (const [r, v] of slots) {
            obs.replicaSeen(r);
            obs.counterRaised?.(fam, edge, r, undefined, v);
          }
        }
        continue;
      }
      let writable: Map<ReplicaId, bigint> | undefined;
      for (const [r, v] of slots) {
        const old = inner.get(r);
        if (old === undefined || v > old) {
          writable ??= own(d, edge, inner);
          set(writable, r, v);
          if (old === undefined) obs?.replicaSeen(r);
          obs?.counterRaised?.(fam, edge, r, old, v);
        }
      }
    }
  }
  for (const [key, rows] of src.transfers) {
    let dRows = dst.transfers.get(key);
    if (dRows === undefined) {
      dRows = fresh(new Map());
      set(dst.transfers, key, dRows);
    }
    let rowsWritable: Map<ReplicaId, Map<ReplicaId, bigint>> | undefined;
    for (const [donor, row] of rows) {
      const dRow = dRows.get(donor);
      if (dRow === undefined) {
        rowsWritable ??= own(dst.transfers, key, dRows);
        set(rowsWritable, donor, fresh(new Map(row)));
        if (obs) {
          obs.replicaSeen(donor);
          for (const [x, v] of row) {
            obs.replicaSeen(x);
            obs.transferRaised?.(key, donor, x, undefined, v);
          }
        }
        continue;
      }
      let rowWritable: Map<ReplicaId, bigint> | undefined;
      for (const [rcpt, v] of row) {
        const old = dRow.get(rcpt);
        if (old === undefined || v > old) {
          if (rowWritable === undefined) {
            rowsWritable ??= own(dst.transfers, key, dRows);
            rowWritable = own(rowsWritable, donor, dRow);
          }
          set(rowWritable, rcpt, v);
          if (old === undefined) obs?.replicaSeen(rcpt);
          obs?.transferRaised?.(key, donor, rcpt, old, v);
        }
      }
    }
  }
  for (const [id, lc] of src.lifecycle) {
    const cur = dst.lifecycle.get(id);
    if (cur === undefined || LIFECYCLE_RANK[lc] > LIFECYCLE_RANK[cur]) {
      set(dst.lifecycle, id, lc);
      obs?.lifecycleRaised?.(id, cur, lc);
    }
  }
  for (const [id, g, before] of gaugeUpdates) {
    set(dst.gauges, id, g);
    obs?.gaugeRaised?.(id, before, g);
  }
}

/** Reads a counter slot (absent = 0). */
export function slot(c: Counter, e: AttachmentId, r: ReplicaId): bigint {
  return c.get(e)?.get(r) ?? 0n;
}

/** Reads a transfer slot (absent = 0). */
export function transferSlot(t: TransferTable, k: PathKey, d: ReplicaId, x: ReplicaId): bigint {
  return t.get(k)?.get(d)?.get(x) ?? 0n;
}

/**
 * The entries of `s` that `base` does not already dominate (what joining `s` into `base` would raise):
 * a valid patch, with `base ⊔ residual(s, base) = base ⊔ s`. Costs O(size of `s`) lookups in `base`.
 * Used to leave out of a frame what every receiver already holds (the genesis ledger).
 */
export function residual(s: State, base: State): State {
  const out = emptyState();
  for (const [e, recs] of s.records) {
    const cur = base.records.get(e);
    if (cur === undefined) {
      out.records.set(e, recs);
      continue;
    }
    const extra = recs.filter((r) => !cur.some((c) => compareRecords(c, r) === 0));
    if (extra.length > 0) out.records.set(e, Object.freeze(extra));
  }
  for (const [id, m] of s.mints) {
    const cur = base.mints.get(id);
    if (cur === undefined || compareMints(m, cur) > 0) out.mints.set(id, m);
  }
  for (const fam of COUNTER_FAMILIES) {
    for (const [e, slots] of s[fam]) {
      const cur = base[fam].get(e);
      let keep: Map<ReplicaId, bigint> | undefined;
      for (const [r, v] of slots) {
        if (cur !== undefined && (cur.get(r) ?? 0n) >= v) continue;
        (keep ??= new Map()).set(r, v);
      }
      if (keep !== undefined) out[fam].set(e, keep);
    }
  }
  for (const [k, rows] of s.transfers) {
    const curRows = base.transfers.get(k);
    let keepRows: Map<ReplicaId, Map<ReplicaId, bigint>> | undefined;
    for (const [d, row] of rows) {
      const curRow = curRows?.get(d);
      let keep: Map<ReplicaId, bigint> | undefined;
      for (const [x, v] of row) {
        if (curRow !== undefined && (curRow.get(x) ?? 0n) >= v) continue;
        (keep ??= new Map()).set(x, v);
      }
      if (keep !== undefined) (keepRows ??= new Map()).set(d, keep);
    }
    if (keepRows !== undefined) out.transfers.set(k, keepRows);
  }
  for (const [e, l] of s.lifecycle) {
    const cur = base.lifecycle.get(e);
    if (cur === undefined || LIFECYCLE_RANK[l] > LIFECYCLE_RANK[cur]) out.lifecycle.set(e, l);
  }
  for (const [e, g] of s.gauges) {
    const cur = base.gauges.get(e);
    if (cur === undefined || joinGauges(cur, g) !== cur) out.gauges.set(e, g);
  }
  return out;
}
