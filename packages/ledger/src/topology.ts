import type { AttachmentId, GroupId, MintId, ReplicaId } from "./ids.ts";
import type { State } from "./state.ts";
import { COUNTER_FAMILIES } from "./state.ts";
import type { AttachmentRecord, Lifecycle, MintRecord } from "./types.ts";

function insertSorted<T extends string>(arr: T[], v: T): void {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  if (arr[lo] !== v) arr.splice(lo, 0, v);
}

const NONE: readonly never[] = Object.freeze([]);

/**
 * The derived indexes of a state (ledger.md §5.1): inbound and child edges per group, the
 * groups named by records, the mint roots, mints per holder and every replica. Built once from a
 * state, then kept current incrementally by a mutable replica as joins add to it (every input
 * only grows, so the indexes only grow).
 */
export class TopologyIndex {
  private readonly inboundOf = new Map<GroupId, AttachmentId[]>();
  private readonly childEdgesOf = new Map<GroupId, AttachmentId[]>();
  private readonly groupSet = new Set<GroupId>();
  private readonly rootCount = new Map<GroupId, number>();
  private rootList: GroupId[] | null = null;
  private readonly mintsOf = new Map<ReplicaId, MintId[]>();
  private readonly replicaSet = new Set<ReplicaId>(); // named by a counter slot or transfer
  private readonly holderCount = new Map<ReplicaId, number>(); // named by this many mints
  private replicaList: ReplicaId[] | null = null;
  private groupList: GroupId[] | null = null;

  /** A copy that can grow independently (O(size of the index), no re-sorting). */
  clone(): TopologyIndex {
    const c = Object.create(TopologyIndex.prototype) as TopologyIndex;
    const copyLists = <K, V>(m: Map<K, V[]>) => new Map([...m].map(([k, v]) => [k, [...v]]));
    Object.assign(c, {
      inboundOf: copyLists(this.inboundOf),
      childEdgesOf: copyLists(this.childEdgesOf),
      groupSet: new Set(this.groupSet),
      rootCount: new Map(this.rootCount),
      rootList: this.rootList,
      mintsOf: copyLists(this.mintsOf),
      replicaSet: new Set(this.replicaSet),
      holderCount: new Map(this.holderCount),
      replicaList: this.replicaList,
      groupList: this.groupList,
    });
    return c;
  }

  constructor(s: State) {
    for (const [id, recs] of s.records) this.recordsChanged(id, undefined, recs);
    for (const [id, m] of s.mints) this.mintAdded(id, undefined, m);
    for (const fam of COUNTER_FAMILIES) {
      for (const slots of s[fam].values()) for (const r of slots.keys()) this.replicaSeen(r);
    }
    for (const rows of s.transfers.values()) {
      for (const [d, row] of rows) {
        this.replicaSeen(d);
        for (const x of row.keys()) this.replicaSeen(x);
      }
    }
  }

  /** Registers the records of `id` (a superset of `before`). */
  recordsChanged(id: AttachmentId, before: readonly AttachmentRecord[] | undefined, now: readonly AttachmentRecord[]): void {
    for (const r of now) {
      // Stryker disable next-line ConditionalExpression: `false` re-registers an already registered record, a no-op (insertSorted skips a present id, groupSet.has skips a known group); this also hides the killed `true` variant
      if (before !== undefined && before.includes(r)) continue;
      let ins = this.inboundOf.get(r.child);
      if (ins === undefined) this.inboundOf.set(r.child, (ins = []));
      insertSorted(ins, id);
      let outs = this.childEdgesOf.get(r.parent);
      if (outs === undefined) this.childEdgesOf.set(r.parent, (outs = []));
      insertSorted(outs, id);
      if (!this.groupSet.has(r.parent)) {
        this.groupSet.add(r.parent);
        this.groupList = null;
      }
      if (!this.groupSet.has(r.child)) {
        this.groupSet.add(r.child);
        this.groupList = null;
      }
    }
  }

  /** Registers mint `id` now holding `now` (replacing `before`, if any). */
  mintAdded(id: MintId, before: MintRecord | undefined, now: MintRecord): void {
    if (before !== undefined) {
      const n = this.rootCount.get(before.root)! - 1;
      if (n === 0) this.rootCount.delete(before.root);
      else this.rootCount.set(before.root, n);
      const list = this.mintsOf.get(before.holder)!;
      list.splice(list.indexOf(id), 1);
      if (list.length === 0) this.mintsOf.delete(before.holder);
      const h = this.holderCount.get(before.holder)! - 1;
      if (h === 0) this.holderCount.delete(before.holder);
      else this.holderCount.set(before.holder, h);
      this.replicaList = null;
    }
    this.rootCount.set(now.root, (this.rootCount.get(now.root) ?? 0) + 1);
    this.rootList = null;
    let list = this.mintsOf.get(now.holder);
    if (list === undefined) this.mintsOf.set(now.holder, (list = []));
    insertSorted(list, id);
    this.holderCount.set(now.holder, (this.holderCount.get(now.holder) ?? 0) + 1);
    this.replicaList = null;
  }

  /** Registers a replica named by some slot. */
  replicaSeen(r: ReplicaId): void {
    if (!this.replicaSet.has(r)) {
      this.replicaSet.add(r);
      this.replicaList = null;
    }
  }

  /** Sorted ids of edges with some record whose child is `g`. */
  inbound(g: GroupId): readonly AttachmentId[] {
    return this.inboundOf.get(g) ?? NONE;
  }

  /** Sorted ids of edges with some record whose parent is `g` (any lifecycle). */
  childEdges(g: GroupId): readonly AttachmentId[] {
    return this.childEdgesOf.get(g) ?? NONE;
  }

  /** Sorted groups named by any record. */
  groups(): readonly GroupId[] {
    return (this.groupList ??= [...this.groupSet].sort());
  }

  /** True iff `g` is named by some record. */
  hasGroup(g: GroupId): boolean {
    return this.groupSet.has(g);
  }

  /** Sorted distinct mint roots. */
  roots(): readonly GroupId[] {
    return (this.rootList ??= [...this.rootCount.keys()].sort());
  }

  /** True iff some mint has root `g`. */
  isRoot(g: GroupId): boolean {
    return this.rootCount.has(g);
  }

  /** Sorted ids of the mints held by `r`. */
  mintsHeldBy(r: ReplicaId): readonly MintId[] {
    return this.mintsOf.get(r) ?? NONE;
  }

  /**
   * True iff `r` is named by some counter slot or transfer — not whether it is a replica at all: one named
   * only as a mint holder drops out when that mint's record is replaced by a greater one, so a slot must
   * register its owner even when a mint already names it.
   */
  namedBySlot(r: ReplicaId): boolean {
    return this.replicaSet.has(r);
  }

  /** Sorted replicas: mint holders, slot owners, transfer donors and recipients. */
  replicas(): readonly ReplicaId[] {
    if (this.replicaList === null) {
      const all = new Set(this.replicaSet);
      for (const r of this.holderCount.keys()) all.add(r);
      this.replicaList = [...all].sort();
    }
    return this.replicaList;
  }
}

/** `lc(e)`: the stored lifecycle, or ACTIVE for an edge without one (ledger.md §5). */
export function lc(s: State, e: AttachmentId): Lifecycle {
  return s.lifecycle.get(e) ?? "ACTIVE";
}

/** `live(e)`: ACTIVE or CLOSING. */
export function live(s: State, e: AttachmentId): boolean {
  const l = lc(s, e);
  return l === "ACTIVE" || l === "CLOSING";
}

/** `rec(e)`: the single record of `e`, or undefined when unknown or divergent. */
export function rec(s: State, e: AttachmentId): AttachmentRecord | undefined {
  const r = s.records.get(e);
  return r !== undefined && r.length === 1 ? r[0] : undefined;
}

/** Result of the lineage walk (ledger.md §5.2). */
export interface Walk {
  path: AttachmentId[] | null;
  onCycle: boolean;
}

/**
 * The lineage walk of ledger.md §5.2: the root-first live path to `g` (`[]` for the root), or null
 * when `g` is quarantined (a fork, no live inbound, a divergent record, a cycle) or detached (the
 * walk ends at a top group that is not a mint root).
 */
export function walk(s: State, ix: TopologyIndex, g: GroupId): Walk {
  const path: AttachmentId[] = [];
  const seen = new Set<GroupId>();
  let cur = g;
  for (;;) {
    if (seen.has(cur)) return { path: null, onCycle: cur === g };
    seen.add(cur);
    const ins = ix.inbound(cur);
    if (ins.length === 0) {
      // A top group that is not a mint root is detached (⟨1.1⟩): its inbound record, or the
      // root's mints, have not arrived. Reading it as a root would let a spend below it skip the
      // roll-up through the missing edge.
      return ix.isRoot(cur) ? { path: path.reverse(), onCycle: false } : { path: null, onCycle: false };
    }
    let only: AttachmentId | undefined;
    let count = 0;
    for (const e of ins) {
      if (live(s, e)) {
        count++;
        only = e;
      }
    }
    if (count !== 1) return { path: null, onCycle: false };
    const r = rec(s, only!);
    if (r === undefined) return { path: null, onCycle: false };
    path.push(only!);
    cur = r.parent;
  }
}

/** `knownEdges()`: sorted keys of records, lifecycle, gauges and the four counters. */
export function knownEdges(s: State): AttachmentId[] {
  const set = new Set<AttachmentId>(s.records.keys());
  for (const k of s.lifecycle.keys()) set.add(k);
  for (const k of s.gauges.keys()) set.add(k);
  for (const fam of COUNTER_FAMILIES) for (const k of s[fam].keys()) set.add(k);
  return [...set].sort();
}

/** True iff `e ∈ knownEdges()`, without building the list. */
export function isKnownEdge(s: State, e: AttachmentId): boolean {
  return (
    s.records.has(e) ||
    s.lifecycle.has(e) ||
    s.gauges.has(e) ||
    s.issued.has(e) ||
    s.returned.has(e) ||
    s.leafSpent.has(e) ||
    s.rollupSpent.has(e)
  );
}
