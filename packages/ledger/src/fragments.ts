import { encodeStateBinary } from "./binary.ts";
import type { AttachmentId, ReplicaId } from "./ids.ts";
import type { State } from "./state.ts";
import { COUNTER_FAMILIES, emptyState } from "./state.ts";

/**
 * Splitting a ledger value into fragments that each fit a byte budget (node.md §4.2), by the owner of
 * the format. Every entry belongs to one group — everything keyed by one `AttachmentId` (record set,
 * lifecycle, gauge, the four counters, the transfer rows under that edge's path key) is one group, so
 * an edge's `issued` slot never travels without its gauge checkpoint (policy.md §6.4); each mint is a
 * group; each donor row of the root path's transfers is a group. Groups are packed greedily in key
 * order. The join of the fragments is the original value, because every entry lands in exactly one
 * fragment and component joins are per key.
 */
export interface LedgerFragments {
  /** States whose binary form is at most the budget; together they hold every group that fits. */
  readonly fragments: State[];
  /** Groups whose own binary form exceeds the budget; they were left out. */
  readonly oversize: { group: string; bytes: number }[];
}

interface Group {
  readonly key: string;
  readonly s: State;
  bytes: number;
}

function groupsOf(s: State): Group[] {
  const byKey = new Map<string, State>();
  const at = (key: string): State => {
    let g = byKey.get(key);
    if (g === undefined) byKey.set(key, (g = emptyState()));
    return g;
  };
  for (const [e, recs] of s.records) at(`e\u0000${e}`).records.set(e, recs);
  for (const [id, m] of s.mints) at(`m\u0000${id}`).mints.set(id, m);
  for (const fam of COUNTER_FAMILIES) for (const [e, slots] of s[fam]) at(`e\u0000${e}`)[fam].set(e, slots);
  for (const [k, rows] of s.transfers) {
    if (k !== "") {
      at(`e\u0000${k}`).transfers.set(k, rows);
      continue;
    }
    for (const [d, row] of rows) at(`r\u0000${d}`).transfers.set(k, new Map([[d, row]]));
  }
  for (const [e, l] of s.lifecycle) at(`e\u0000${e}`).lifecycle.set(e, l);
  for (const [e, g] of s.gauges) at(`e\u0000${e}`).gauges.set(e, g);
  return [...byKey.keys()].sort().map((key) => ({ key, s: byKey.get(key)!, bytes: 0 }));
}

function mergeInto(dst: State, src: State): void {
  for (const [e, recs] of src.records) dst.records.set(e, recs);
  for (const [id, m] of src.mints) dst.mints.set(id, m);
  for (const fam of COUNTER_FAMILIES) for (const [e, slots] of src[fam]) dst[fam].set(e, slots);
  for (const [k, rows] of src.transfers) {
    const cur = dst.transfers.get(k);
    if (cur === undefined) dst.transfers.set(k, new Map(rows));
    else for (const [d, row] of rows) cur.set(d as ReplicaId, row);
  }
  for (const [e, l] of src.lifecycle) dst.lifecycle.set(e as AttachmentId, l);
  for (const [e, g] of src.gauges) dst.gauges.set(e, g);
}

function stateOf(groups: readonly Group[]): State {
  const s = emptyState();
  for (const g of groups) mergeInto(s, g.s);
  return s;
}

/**
 * Splits `s` into fragments whose binary form (with `known` strings) is at most `budget` bytes. A value
 * that fits is returned whole (one fragment holding `s` itself). Fragments share inner maps with `s`:
 * read them, never write them.
 */
export function splitState(s: State, budget: number, known: readonly string[] = []): LedgerFragments {
  if (encodeStateBinary(s, known).length <= budget) return { fragments: [s], oversize: [] };
  const oversize: { group: string; bytes: number }[] = [];
  const fitting: Group[] = [];
  for (const g of groupsOf(s)) {
    g.bytes = encodeStateBinary(g.s, known).length;
    if (g.bytes > budget) oversize.push({ group: g.key.slice(2), bytes: g.bytes });
    else fitting.push(g);
  }
  const fragments: State[] = [];
  // A packed fragment is usually smaller than the sum of its groups (one header, one string table), but
  // string indices can widen past 127, so each packed fragment is checked and halved if it overflows.
  const emit = (list: Group[]): void => {
    if (list.length === 0) return;
    const merged = stateOf(list);
    if (list.length === 1 || encodeStateBinary(merged, known).length <= budget) {
      fragments.push(merged);
      return;
    }
    const mid = list.length >> 1;
    emit(list.slice(0, mid));
    emit(list.slice(mid));
  };
  let current: Group[] = [];
  let estimate = 0;
  for (const g of fitting) {
    // No `current.length > 0` test is needed: an empty pack has estimate 0, and every fitting group
    // has g.bytes <= budget, so an empty pack is never flushed.
    if (estimate + g.bytes > budget) {
      emit(current);
      current = [];
      estimate = 0;
    }
    current.push(g);
    estimate += g.bytes;
  }
  emit(current);
  if (fragments.length === 0) fragments.push(emptyState());
  return { fragments, oversize };
}
