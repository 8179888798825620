/**
 * The retire witness (governed.md §3.6): the proposer's slice of the edge (`projectEdge`), joined with mints of the
 * replicas the slice names, so that the published RETIRED patch carries the draining counters a lagging replica may
 * not have yet (no transient `ClosureViolation`) and balances alone (ledger.md ⟨1.1⟩ §7.4: onto `EMPTY` it
 * validates empty).
 *
 * §3.6 joins *every* mint of those replicas, and so does this whenever they fit in {@link MAX_RETIRE_WITNESS_BYTES}.
 * That grows with the holder's mint count (top-ups), not with the edge, and after a few thousand mints the entry
 * passed `MAX_CONTROL_ENTRY_BYTES`, so the edge could never be retired. Past the budget the patch still balances
 * with fewer: the holder's holdings at the root must not go negative (its mints cover its net
 * inflow down the edge) and the slice's leaf spend must not exceed the mints carried. So the witness carries, per
 * replica, its largest mints until those hold, checked with `validate()`; every mint record in it is a real one
 * from the applied log, so joining it changes nothing on a replica that applied the log. Only when even that is
 * over {@link MAX_RETIRE_WITNESS_BYTES} does it shrink further: to the slice alone (the counters still travel;
 * alone onto `EMPTY` it reads as a conservation violation, which a governed peer never sees — it joined the mints
 * from the log before it applies the retire), and past that to no witness (a lagging replica may then report a
 * transient `ClosureViolation` until the draining deltas reach it). Neither changes what the retire decides.
 */
import { EntitlementLedger } from "@heddle/ledger";
import type { AttachmentId, GroupId, MintId, MintRecord, ReplicaId } from "@heddle/ledger";

/**
 * Largest retire witness a `retire` proposes, as UTF-8 bytes of its `encode()` text. A quarter of
 * `MAX_CONTROL_ENTRY_BYTES` (the witness is escaped once more inside the entry's JSON, and the rest of the entry is
 * small), and small enough that a retire stays one modest log entry to replicate and replay.
 */
export const MAX_RETIRE_WITNESS_BYTES = 128 * 1024;

/**
 * What a retire carries: `full` — slice and the mints it needs to balance alone (checked with `validate()`);
 * `unbalanced` — slice and every mint its holders have (or the largest ones past the budget), which still does not
 * balance alone: a holder was funded by a transfer, whose payer's mints §3.6 does not join either; `slice` — the
 * slice only, the mints over the budget; `none` — no witness (the slice alone is over the budget, or the edge has nothing to witness:
 * `text` null, `kind` `"empty"`).
 */
export type RetireWitness = { readonly kind: "full" | "unbalanced" | "slice"; readonly text: string } | { readonly kind: "none" | "empty"; readonly text: null };

/** Bytes one mint record adds to the encoded witness, at most, beyond its strings (keys, quotes, separators). */
const MINT_OVERHEAD_BYTES = 64;
const utf8 = new TextEncoder();
const bytesOf = (s: string): number => utf8.encode(s).length;

/**
 * Builds the witness `retire(edge)` proposes from the proposer's data-plane `view`, the applied control state's
 * mints and the log's `root`, within `budget` bytes (default {@link MAX_RETIRE_WITNESS_BYTES}).
 */
export function retireWitness(view: { projectEdge(id: AttachmentId): EntitlementLedger }, edge: AttachmentId, root: GroupId, minted: ReadonlyMap<MintId, MintRecord>, budget = MAX_RETIRE_WITNESS_BYTES): RetireWitness {
  const slice = view.projectEdge(edge);
  const holders = slice.replicas();
  if (slice.knownEdges().length === 0 && holders.length === 0) return { kind: "empty", text: null };
  const sliceText = slice.encode();
  const sliceBytes = bytesOf(sliceText);
  if (sliceBytes > budget) return { kind: "none", text: null };

  // each holder's mints, largest first (then by id: the same view builds the same witness)
  const held = new Set(holders);
  const byHolder = new Map<ReplicaId, [MintId, MintRecord][]>();
  for (const [id, m] of minted) {
    if (!held.has(m.holder)) continue;
    const list = byHolder.get(m.holder) ?? [];
    list.push([id, m]);
    byHolder.set(m.holder, list);
  }
  const larger = (a: [MintId, MintRecord], b: [MintId, MintRecord]): number => (a[1].amount === b[1].amount ? (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0) : a[1].amount > b[1].amount ? -1 : 1);
  for (const list of byHolder.values()) list.sort(larger);

  const room = budget - sliceBytes;
  // §3.6 as written — every mint of every holder — whenever it fits; the trimmed witness only past the budget
  const all = [...byHolder.values()].flat();
  if (estimate(all) <= room) {
    const every = joinAll([slice, ...all.map(mintPatch)]);
    const t = every.encode();
    if (bytesOf(t) <= budget) return { kind: every.validate().length === 0 ? "full" : "unbalanced", text: t };
  }
  const cover = coveringMints(slice, root, byHolder, larger, room);
  if (cover !== null) {
    const full = joinAll([slice, ...cover.map(mintPatch)]);
    const text = full.encode();
    if (bytesOf(text) <= budget) {
      return { kind: full.validate().length === 0 ? "full" : "unbalanced", text };
    }
  }
  return { kind: "slice", text: sliceText };
}

/**
 * The mints the slice needs to balance alone, largest first: for each holder, enough that its holdings at `root`
 * are not negative (its mints cover what it took down the edge net of returns), then enough, across holders, that
 * the mints carried cover the slice's leaf spend. `null` once their estimated size passes `room`.
 */
function coveringMints(
  slice: EntitlementLedger,
  root: GroupId,
  byHolder: ReadonlyMap<ReplicaId, readonly [MintId, MintRecord][]>,
  larger: (a: [MintId, MintRecord], b: [MintId, MintRecord]) => number,
  room: number,
): [MintId, MintRecord][] | null {
  const chosen: [MintId, MintRecord][] = [];
  let bytes = 0;
  const take = (m: [MintId, MintRecord]): boolean => {
    chosen.push(m);
    bytes += mintBytes(m);
    return bytes <= room;
  };
  // the largest mint of each holder, to read what is still missing off the ledger itself
  for (const list of byHolder.values()) if (!take(list[0]!)) return null;
  const base = joinAll([slice, ...chosen.map(mintPatch)]);
  let unspentMissing = base.leafSpentTotal() - base.mintedTotal();
  const rest: [MintId, MintRecord][] = [];
  for (const [holder, list] of byHolder) {
    let missing = -base.holdings(root, holder);
    let i = 1;
    for (; missing > 0n && i < list.length; i++) {
      if (!take(list[i]!)) return null;
      missing -= list[i]![1].amount;
      unspentMissing -= list[i]![1].amount;
    }
    rest.push(...list.slice(i));
  }
  if (unspentMissing > 0n) {
    rest.sort(larger);
    for (const m of rest) {
      if (unspentMissing <= 0n) break;
      if (!take(m)) return null;
      unspentMissing -= m[1].amount;
    }
  }
  return chosen;
}

function mintBytes([id, m]: [MintId, MintRecord]): number {
  return bytesOf(id) + bytesOf(m.holder) + bytesOf(m.root) + m.amount.toString().length + MINT_OVERHEAD_BYTES;
}

function estimate(ms: readonly [MintId, MintRecord][]): number {
  let n = 0;
  for (const m of ms) n += mintBytes(m);
  return n;
}

function mintPatch([id, m]: [MintId, MintRecord]): EntitlementLedger {
  const r = EntitlementLedger.EMPTY.mint(id, m.root, m.holder, m.amount);
  // a record the applied log holds is a valid mint: a refusal here is a broken invariant
  if (!r.ok) throw new Error(`retire witness: the applied mint ${id} does not rebuild (${r.refusal.message})`);
  return r.patch;
}

/** Joins pairwise, level by level: each join copies what it adds, so k patches cost O(k log k), not O(k²). */
function joinAll(ls: readonly EntitlementLedger[]): EntitlementLedger {
  let level = ls;
  while (level.length > 1) {
    const next: EntitlementLedger[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? level[i]!.join(level[i + 1]!) : level[i]!);
    level = next;
  }
  return level[0] ?? EntitlementLedger.EMPTY;
}
