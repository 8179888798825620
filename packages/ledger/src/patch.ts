import { PathKey } from "./ids.ts";
import type { AttachmentId, MintId, ReplicaId } from "./ids.ts";
import type { View } from "./accounting.ts";
import type { CounterFamily, State } from "./state.ts";
import { joinGauges, lifecycleRank, slot, unionRecords } from "./state.ts";
import type { AttachmentRecord, Gauge, Lifecycle, MintRecord } from "./types.ts";

/** A map that is always empty: shared by the untouched components of every new patch. */
class SealedEmptyMap<K, V> extends Map<K, V> {
  override set(): this {
    throw new Error("internal: write to a shared empty component");
  }
}
const SEALED: Map<never, never> = new SealedEmptyMap();

/** An empty state whose components all share one sealed empty map until first written. */
function sparseEmptyState(): State {
  return {
    records: SEALED,
    mints: SEALED,
    issued: SEALED,
    returned: SEALED,
    leafSpent: SEALED,
    rollupSpent: SEALED,
    transfers: SEALED,
    lifecycle: SEALED,
    gauges: SEALED,
  };
}

/** The component `k` of `s`, replaced by a fresh map first if it is the shared empty one. */
function writable<K extends keyof State>(s: State, k: K): State[K] {
  if (s[k] === SEALED) s[k] = new Map() as State[K];
  return s[k];
}

/**
 * Accumulates a patch: slots at absolute values, joined (max) as they are added, so a
 * mutation's own slots and its witness can overlap without care (ledger.md §4.4).
 */
export class PatchBuilder {
  readonly s: State = sparseEmptyState();

  /** Sets a counter slot to at least `v` (zero values are never stored). */
  counter(fam: CounterFamily, e: AttachmentId, r: ReplicaId, v: bigint): void {
    if (v <= 0n) return;
    let inner = this.s[fam].get(e);
    if (inner === undefined) writable(this.s, fam).set(e, (inner = new Map()));
    const old = inner.get(r);
    if (old === undefined || v > old) inner.set(r, v);
  }

  /** Sets a transfer slot to at least `v`. */
  transfer(k: PathKey, d: ReplicaId, x: ReplicaId, v: bigint): void {
    if (v <= 0n) return;
    let rows = this.s.transfers.get(k);
    if (rows === undefined) writable(this.s, "transfers").set(k, (rows = new Map()));
    let row = rows.get(d);
    if (row === undefined) rows.set(d, (row = new Map()));
    const old = row.get(x);
    if (old === undefined || v > old) row.set(x, v);
  }

  /** Adds a mint. */
  mint(id: MintId, m: MintRecord): void {
    writable(this.s, "mints").set(id, m);
  }

  /** Adds a record. */
  record(r: AttachmentRecord): void {
    const cur = this.s.records.get(r.id);
    writable(this.s, "records").set(r.id, cur === undefined ? Object.freeze([r]) : unionRecords(cur, [r]));
  }

  /** Raises a lifecycle entry. */
  lifecycle(e: AttachmentId, l: Lifecycle): void {
    const cur = this.s.lifecycle.get(e);
    if (cur === undefined || lifecycleRank(l) > lifecycleRank(cur)) writable(this.s, "lifecycle").set(e, l);
  }

  /** Joins a gauge. */
  gauge(e: AttachmentId, g: Gauge): void {
    const cur = this.s.gauges.get(e);
    writable(this.s, "gauges").set(e, cur === undefined ? g : joinGauges(cur, g));
  }

  /** Republishes, at observed values, every mint held by `r`. */
  mintsOf(v: View, r: ReplicaId): void {
    for (const id of v.ix.mintsHeldBy(r)) this.mint(id, v.s.mints.get(id)!);
  }
}

/**
 * The witness of ledger.md §7.1: republishes, at current values, the credits that justify a
 * check of `actor`'s holdings on the root-first `path`, so a receiver that gets the patch before
 * its funding does not report a false conflict.
 */
export function addWitness(p: PatchBuilder, v: View, actor: ReplicaId, path: readonly AttachmentId[]): void {
  const s = v.s;
  const issuedRepublished = new Set<AttachmentId>();
  for (const e of path) {
    const i = slot(s.issued, e, actor);
    if (i > 0n) issuedRepublished.add(e);
    p.counter("issued", e, actor, i);
    p.counter("returned", e, actor, slot(s.returned, e, actor));
    p.counter("leafSpent", e, actor, slot(s.leafSpent, e, actor));
    p.counter("rollupSpent", e, actor, slot(s.rollupSpent, e, actor));
  }
  p.mintsOf(v, actor);
  for (let j = 0; j <= path.length; j++) {
    const key = j === 0 ? PathKey.ROOT : PathKey.of(path[j - 1]!);
    const rows = s.transfers.get(key);
    if (rows === undefined) continue;
    const mine = rows.get(actor);
    if (mine !== undefined) for (const [x, val] of mine) p.transfer(key, actor, x, val);
    for (const [d, row] of rows) {
      if (d === actor) continue;
      const x = row.get(actor);
      if (x === undefined || x <= 0n) continue;
      p.transfer(key, d, actor, x);
      p.mintsOf(v, d);
      for (let i = 0; i < j; i++) {
        const e = path[i]!;
        const di = slot(s.issued, e, d);
        if (di > 0n) issuedRepublished.add(e);
        p.counter("issued", e, d, di);
        p.counter("returned", e, d, slot(s.returned, e, d));
      }
    }
  }
  for (const e of issuedRepublished) {
    const g = s.gauges.get(e);
    if (g !== undefined) p.gauge(e, g);
  }
}
