import { PathKey } from "./ids.ts";
import type { AttachmentId, GroupId, ReplicaId } from "./ids.ts";
import { add, sub } from "./int64.ts";
import { Rational } from "./rational.ts";
import type { Counter, State } from "./state.ts";
import { slot } from "./state.ts";
import type { TopologyIndex } from "./topology.ts";
import { rec, walk } from "./topology.ts";
import type { EdgeSummary, Gauge } from "./types.ts";
import type { Weight } from "./weight.ts";

/** A state together with its derived indexes: everything a read needs. */
export interface View {
  readonly s: State;
  readonly ix: TopologyIndex;
}

/** `Σ_r c[e][r]`, checked (non-negative terms, so order cannot change whether it overflows). */
export function edgeTotal(c: Counter, e: AttachmentId): bigint {
  let t = 0n;
  const slots = c.get(e);
  if (slots !== undefined) for (const v of slots.values()) t = add(t, v);
  return t;
}

/** `netInflow(e, r) = I − Rt`. */
export function netInflow(s: State, e: AttachmentId, r: ReplicaId): bigint {
  return sub(slot(s.issued, e, r), slot(s.returned, e, r));
}

/** `own(e, r) = I − Rt − Lf − Ru`, left to right, checked. */
export function own(s: State, e: AttachmentId, r: ReplicaId): bigint {
  return sub(sub(sub(slot(s.issued, e, r), slot(s.returned, e, r)), slot(s.leafSpent, e, r)), slot(s.rollupSpent, e, r));
}

/** `tnet(k, r)`: transfers into `r` at key `k` minus `r`'s own row. */
export function tnet(s: State, k: PathKey, r: ReplicaId): bigint {
  const rows = s.transfers.get(k);
  if (rows === undefined) return 0n;
  let inflow = 0n;
  for (const row of rows.values()) {
    const v = row.get(r);
    if (v !== undefined) inflow = add(inflow, v);
  }
  let outflow = 0n;
  const mine = rows.get(r);
  if (mine !== undefined) for (const v of mine.values()) outflow = add(outflow, v);
  return sub(inflow, outflow);
}

/** `pos(e, r) = own(e, r) + tnet(PathKey.of(e), r)`. */
export function pos(s: State, e: AttachmentId, r: ReplicaId): bigint {
  return add(own(s, e, r), tnet(s, PathKey.of(e), r));
}

/** Sum of the mints held by `r` at root `g` (ascending mint id). */
export function mintedTo(v: View, g: GroupId, r: ReplicaId): bigint {
  let h = 0n;
  for (const id of v.ix.mintsHeldBy(r)) {
    const m = v.s.mints.get(id)!;
    if (m.root === g) h = add(h, m.amount);
  }
  return h;
}

/** `holdings(g, r)` for a group whose lineage `walk(g).path` is already known (ledger.md §6.2). */
export function holdingsOnPath(v: View, g: GroupId, r: ReplicaId, path: readonly AttachmentId[] | null): bigint {
  if (path === null) return 0n;
  const s = v.s;
  const children = v.ix.childEdges(g);
  let h: bigint;
  if (path.length === 0) {
    // g is the root: a walk ending at any other top group is detached (null), ledger.md §5.2
    h = add(mintedTo(v, g, r), tnet(s, PathKey.ROOT, r));
    for (const c of children) h = sub(h, netInflow(s, c, r));
    return h;
  }
  h = pos(s, path[path.length - 1]!, r);
  for (const c of children) h = sub(h, own(s, c, r));
  return h;
}

/** `holdings(g, r)` (ledger.md §6.2): 0 for a quarantined, detached or unknown group. */
export function holdings(v: View, g: GroupId, r: ReplicaId): bigint {
  return holdingsOnPath(v, g, r, walk(v.s, v.ix, g).path);
}

/** `edge(e)` without the known-edge check: the summary of ledger.md §6.3. */
export function summarize(s: State, e: AttachmentId): EdgeSummary {
  const issued = edgeTotal(s.issued, e);
  const returned = edgeTotal(s.returned, e);
  const spent = add(edgeTotal(s.leafSpent, e), edgeTotal(s.rollupSpent, e));
  return {
    attachment: e,
    issued,
    returned,
    spent,
    outstanding: sub(sub(issued, returned), spent),
    committedService: sub(issued, returned),
  };
}

/** `read(g, iss, w)` of ledger.md §6.6. */
export function readGauge(g: Gauge | undefined | null, iss: bigint, w: Weight): Rational {
  if (g === undefined || g === null) return Rational.perWeight(iss, w);
  return g.floor.add(Rational.perWeight(sub(iss, g.folded), w));
}

/** `grossVirtualService(e)`: null when the record is unknown or divergent. */
export function grossVirtualService(s: State, e: AttachmentId): Rational | null {
  const r = rec(s, e);
  if (r === undefined) return null;
  return readGauge(s.gauges.get(e), edgeTotal(s.issued, e), r.weight);
}

/** `virtualService(e) = gross − perWeight(Σ_r Rt, w)`. */
export function virtualService(s: State, e: AttachmentId): Rational | null {
  const r = rec(s, e);
  if (r === undefined) return null;
  const gross = readGauge(s.gauges.get(e), edgeTotal(s.issued, e), r.weight);
  return gross.sub(Rational.perWeight(edgeTotal(s.returned, e), r.weight));
}
