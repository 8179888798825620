import * as acct from "./accounting.ts";
import type { View } from "./accounting.ts";
import { ByteReader, decodeStateBinary, encodeStateBinary } from "./binary.ts";
import { stateDigest, type DigestSum } from "./digest.ts";
import { decodeState, encodeState } from "./encoding.ts";
import { LedgerDecodeError } from "./errors.ts";
import { splitState } from "./fragments.ts";
import { isValidId } from "./ids.ts";
import type { AttachmentId, GroupId, MintId, PathKey, ReplicaId } from "./ids.ts";
import { MAX, requireBigint } from "./int64.ts";
import * as mut from "./mutators.ts";
import type { RawResult } from "./mutators.ts";
import type { Rational } from "./rational.ts";
import type { State } from "./state.ts";
import { COUNTER_FAMILIES, compareMints, compareRecords, emptyState, joinInto, residual, shallowClone, stateSize } from "./state.ts";
import { isKnownEdge, knownEdges, lc, rec, TopologyIndex, walk } from "./topology.ts";
import type { AttachmentRecord, EdgeSummary, Gauge, LedgerConflict, Lifecycle, Refusal } from "./types.ts";
import { leafSpentTotal, mintedTotal, validate } from "./validate.ts";

/** A mutator's outcome: a small patch to join, or a refusal that changed nothing (ledger.md §3.10). */
export type MutationResult = { ok: true; patch: EntitlementLedger } | { ok: false; refusal: Refusal };

function str(x: unknown, what: string): string {
  if (typeof x !== "string") throw new TypeError(`${what} must be a string, got ${typeof x}`);
  return x;
}

/**
 * The reads of ledger.md §6, shared by the immutable {@link EntitlementLedger} and the mutable
 * {@link LedgerReplica}. Reads never throw except `LedgerOverflowError`, and `TypeError` for
 * arguments of the wrong type; unknown ids are not errors.
 */
export abstract class LedgerReads implements View {
  /** @internal */ abstract readonly s: State;
  /** @internal */ abstract readonly ix: TopologyIndex;

  // ---- reads (ledger.md §6) ----

  /** Entitlement `replica` may delegate, transfer or spend at `group`; 0 when quarantined, detached or unknown. */
  holdings(group: GroupId, replica: ReplicaId): bigint {
    return acct.holdings(this, str(group, "group") as GroupId, str(replica, "replica") as ReplicaId);
  }

  /** The parent-facing summary of an edge, or null when it is not known. */
  edge(id: AttachmentId): EdgeSummary | null {
    str(id, "edge");
    return isKnownEdge(this.s, id) ? acct.summarize(this.s, id) : null;
  }

  /** Summaries of `parent`'s ACTIVE child edges, ascending id (the scheduling view). */
  childrenOf(parent: GroupId): EdgeSummary[] {
    str(parent, "parent");
    return this.ix.childEdges(parent).filter((e) => lc(this.s, e) === "ACTIVE").map((e) => acct.summarize(this.s, e));
  }

  /** The single record of an edge, or null when unknown or divergent. */
  record(id: AttachmentId): AttachmentRecord | null {
    return rec(this.s, str(id, "edge") as AttachmentId) ?? null;
  }

  /** Every record of an edge (more than one means divergence), sorted; empty when unknown. */
  records(id: AttachmentId): readonly AttachmentRecord[] {
    return this.s.records.get(str(id, "edge") as AttachmentId) ?? [];
  }

  /** The lifecycle of a known edge (ACTIVE when only its record arrived), else null. */
  lifecycle(id: AttachmentId): Lifecycle | null {
    str(id, "edge");
    return isKnownEdge(this.s, id) ? lc(this.s, id) : null;
  }

  /**
   * The root-first live path to `group` (`[]` for the root), or null when quarantined or detached
   * (the walk ends at a top group that is not a mint root, ledger.md §5.2).
   */
  lineageOf(group: GroupId): AttachmentId[] | null {
    return walk(this.s, this.ix, str(group, "group") as GroupId).path;
  }

  /** True iff `group` has no child edge of any lifecycle. */
  isLeaf(group: GroupId): boolean {
    return this.ix.childEdges(str(group, "group") as GroupId).length === 0;
  }

  /** `pos(e, r)`: the replica's share of the edge's outstanding, including transfers. */
  edgePosition(id: AttachmentId, replica: ReplicaId): bigint {
    return acct.pos(this.s, str(id, "edge") as AttachmentId, str(replica, "replica") as ReplicaId);
  }

  /** The edge's published gauge, or null. */
  gauge(id: AttachmentId): Gauge | null {
    return this.s.gauges.get(str(id, "edge") as AttachmentId) ?? null;
  }

  /** `Σ_r issued[e][r]`: the gauge's fold axis. */
  baseIssuance(id: AttachmentId): bigint {
    return acct.edgeTotal(this.s.issued, str(id, "edge") as AttachmentId);
  }

  /** Gross virtual service of the edge (ledger.md §6.6), or null when unknown or divergent. */
  grossVirtualService(id: AttachmentId): Rational | null {
    return acct.grossVirtualService(this.s, str(id, "edge") as AttachmentId);
  }

  /** Virtual service net of returns (ledger.md §6.6), or null when unknown or divergent. */
  virtualService(id: AttachmentId): Rational | null {
    return acct.virtualService(this.s, str(id, "edge") as AttachmentId);
  }

  /** Σ of all mint amounts. */
  mintedTotal(): bigint {
    return mintedTotal(this);
  }

  /** Σ of every leaf-spent slot. */
  leafSpentTotal(): bigint {
    return leafSpentTotal(this);
  }

  /** Sorted ids of every edge named by any component but transfers. */
  knownEdges(): AttachmentId[] {
    return knownEdges(this.s);
  }

  /** Sorted groups named by any record. */
  groups(): GroupId[] {
    return [...this.ix.groups()];
  }

  /** Sorted distinct mint roots. */
  roots(): GroupId[] {
    return [...this.ix.roots()];
  }

  /** Sorted replicas named by any mint, slot or transfer. */
  replicas(): ReplicaId[] {
    return [...this.ix.replicas()];
  }

  /** The sub-ledger of one edge: its records, lifecycle, gauge, counters and transfer rows. */
  projectEdge(id: AttachmentId): EntitlementLedger {
    str(id, "edge");
    return EntitlementLedger.fromState(projectEdgeState(this.s, id));
  }

  /** Every conflict in the state, sorted (ledger.md §9). A diagnostic, never a gate. */
  validate(): LedgerConflict[] {
    return validate(this);
  }

  /**
   * The entries of this value that `base` does not already hold (what joining this into `base` would
   * raise): `base ⊔ this.beyond(base) = base ⊔ this`. O(size of this). A sender uses it to leave out of
   * a frame what every receiver already has — the genesis ledger.
   */
  beyond(base: LedgerReads): EntitlementLedger {
    return EntitlementLedger.fromState(residual(this.s, base.s));
  }

  /** The compact binary form (`heddle-ledger-bin/1`, see `LEDGER_BINARY_FORMAT`); `known` strings are not sent. */
  encodeBinary(known: readonly string[] = []): Uint8Array {
    return encodeStateBinary(this.s, known);
  }

}

/**
 * The replicated entitlement ledger (ledger.md): an immutable value. Reads derive holdings,
 * summaries and conflicts from the nine grow-only components; mutators check feasibility on this
 * view and return a patch (or a refusal); `join` is the least upper bound, so replicas that
 * absorbed the same patches in any order, with repeats, are `equals`.
 *
 * For a hot path that applies many small patches, {@link LedgerReplica} holds the same state
 * mutably and joins in place in time proportional to the patch.
 */
export class EntitlementLedger extends LedgerReads {
  /** @internal */ override readonly s: State;
  #ix: TopologyIndex | undefined;
  #text: string | undefined;
  #digestHex: string | undefined;
  #digestSum: DigestSum | undefined;
  #binary: { key: string; bytes: Uint8Array } | undefined;

  /** @internal Use `EMPTY`, `bootstrap`, `decode`, mutators and `join`. */
  constructor(s: State, ix?: TopologyIndex) {
    super();
    this.s = s;
    this.#ix = ix;
    Object.freeze(this);
  }

  /** @internal Wraps a state this value will own; the caller must never mutate it again. */
  static fromState(s: State): EntitlementLedger {
    return new EntitlementLedger(s);
  }

  /** @internal The derived indexes, built on first use. */
  override get ix(): TopologyIndex {
    return (this.#ix ??= new TopologyIndex(this.s));
  }

  /** The bottom element: every component empty. */
  static readonly EMPTY: EntitlementLedger = new EntitlementLedger(emptyState());

  /**
   * A ledger holding one mint per entry of `mint`, keyed `JSON.stringify([root, nonce, holder])`
   * (ledger.md §7.2). The same act on two replicas converges to one entry.
   * Throws `TypeError`/`RangeError` on invalid input.
   */
  static bootstrap(root: GroupId, mint: ReadonlyMap<ReplicaId, bigint>, nonce: string): EntitlementLedger {
    str(root, "root");
    str(nonce, "nonce");
    if (!isValidId(root)) throw new RangeError("root must be a non-empty, well-formed id");
    if (!nonce.isWellFormed()) throw new RangeError("nonce must be a well-formed string");
    if (!(mint instanceof Map)) throw new TypeError("mint must be a Map of replica → amount");
    const s = emptyState();
    for (const [holder, amount] of mint) {
      str(holder, "holder");
      if (!isValidId(holder)) throw new RangeError("holder must be a non-empty, well-formed id");
      requireBigint(amount, "mint amount");
      if (amount < 0n || amount > MAX) throw new RangeError(`mint amount ${amount} is outside 0 … 2^63−1`);
      s.mints.set(JSON.stringify([root, nonce, holder]) as MintId, Object.freeze({ root, holder: holder as ReplicaId, amount }));
    }
    return new EntitlementLedger(s);
  }

  /** Decodes canonical (or repairable) text; throws `LedgerDecodeError` on invalid input (ledger.md §10). */
  static decode(text: string): EntitlementLedger {
    return new EntitlementLedger(decodeState(text));
  }

  /** The canonical encoding: equal ledgers encode to identical text (ledger.md §10). */
  encode(): string {
    return (this.#text ??= encodeState(this.s));
  }

  /** The binary form, cached for the last `known` list (a value measured for splitting is then framed for free). */
  override encodeBinary(known: readonly string[] = []): Uint8Array {
    // JSON keeps the list's boundaries: ids may contain U+0000, so a joined key would let ["a\0b"] and
    // ["a", "b"] share a cache entry and answer one list's bytes for the other.
    const key = JSON.stringify(known);
    const c = this.#binary;
    if (c !== undefined && c.key === key) return c.bytes;
    const bytes = encodeStateBinary(this.s, known);
    this.#binary = { key, bytes };
    return bytes;
  }

  /**
   * Decodes the binary form written by `encodeBinary(known)` (the same `known` strings); throws
   * `LedgerDecodeError` on anything the canonical decoder would refuse, or on trailing bytes, and
   * `LedgerIdTooLongError` (a `LedgerDecodeError`) on an id longer than `maxIdLength` code units.
   */
  static decodeBinary(bytes: Uint8Array, known: readonly string[] = [], maxIdLength = Infinity): EntitlementLedger {
    const r = new ByteReader(bytes);
    const s = decodeStateBinary(r, known, maxIdLength);
    if (r.remaining !== 0) throw new LedgerDecodeError("trailing bytes after the ledger value");
    return new EntitlementLedger(s);
  }

  /**
   * The state digest (16 hex digits): a sum of per-entry hashes, so equal states have equal digests and a
   * {@link LedgerReplica} keeps the same value current in O(1) per changed slot. Computed once per value.
   */
  digest(): string {
    return (this.#digestHex ??= this.digestSum().hex());
  }

  /** @internal The digest as a running sum (a replica starts from it). */
  digestSum(): DigestSum {
    return (this.#digestSum ??= stateDigest(this.s));
  }

  /**
   * This value as fragments whose binary form (with `known`) fits `budget` bytes (node.md §4.2): each
   * edge's entries stay together (so an edge's `issued` never travels without its gauge), each mint and
   * each root-path donor row is its own group. Their join is this value minus the `oversize` groups,
   * which cannot fit any fragment. A value that fits comes back whole.
   */
  fragments(budget: number, known: readonly string[] = []): { fragments: EntitlementLedger[]; oversize: { group: string; bytes: number }[] } {
    // Measured through the cache, so a value that fits is then framed for free. Past this check splitState
    // never answers `this.s` itself (its own first check is this one), so every fragment is a new value.
    if (this.encodeBinary(known).length <= budget) return { fragments: [this], oversize: [] };
    const r = splitState(this.s, budget, known);
    return { fragments: r.fragments.map((f) => EntitlementLedger.fromState(f)), oversize: r.oversize };
  }

  /** The least upper bound of two ledgers: idempotent, commutative, associative, EMPTY is the identity. */
  join(other: EntitlementLedger): EntitlementLedger {
    if (!(other instanceof EntitlementLedger)) throw new TypeError("join expects an EntitlementLedger");
    if (other === this) return this;
    const [big, small] = stateSize(this.s) >= stateSize(other.s) ? [this, other] : [other, this];
    if (stateSize(small.s) === 0) return big;
    const s = shallowClone(big.s);
    joinInto(s, small.s, new Set());
    // The indexes depend only on records, mints and the replica set; when the smaller side adds
    // none of those, the larger side's (never mutated) index describes the result exactly.
    return new EntitlementLedger(s, big.#ix !== undefined && addsNoTopology(big, small.s) ? big.#ix : undefined);
  }

  /** True iff both have the same normal form (equivalently, identical encodings). */
  equals(other: EntitlementLedger): boolean {
    if (!(other instanceof EntitlementLedger)) throw new TypeError("equals expects an EntitlementLedger");
    return this === other || this.encode() === other.encode();
  }

  // ---- mutators (ledger.md §7) ----

  /** Records a mint act (ledger.md §7.3). */
  mint(id: MintId, root: GroupId, holder: ReplicaId, amount: bigint): MutationResult {
    return wrap(mut.mint(this, id, root, holder, amount));
  }

  /** Creates an edge in PREPARED (ledger.md §7.4). */
  prepare(record: AttachmentRecord): MutationResult {
    return wrap(mut.prepare(this, record));
  }

  /** Makes an edge ACTIVE (ledger.md §7.4). */
  activate(edge: AttachmentId): MutationResult {
    return wrap(mut.activate(this, edge));
  }

  /**
   * Moves an ACTIVE edge to CLOSING: it drains, no new entitlement crosses it (ledger.md §7.4).
   * Refuses a PREPARED edge — only `activate` makes an edge live.
   */
  close(edge: AttachmentId): MutationResult {
    return wrap(mut.close(this, edge));
  }

  /**
   * Retires a CLOSING edge drained per replica, or abandons a PREPARED one, with its drain witness:
   * the edge's counters and gauge plus the mints of every replica with a slot on it (ledger.md §7.4).
   */
  retire(edge: AttachmentId): MutationResult {
    return wrap(mut.retire(this, edge));
  }

  /** Seats an unseated edge at the parent's front (ledger.md §7.5). */
  seat(edge: AttachmentId, front: Rational): MutationResult {
    return wrap(mut.seat(this, edge, front));
  }

  /** Hands `amount` of `replica`'s holdings at the parent down `edge` (ledger.md §7.6). */
  delegate(replica: ReplicaId, edge: AttachmentId, amount: bigint): MutationResult {
    return wrap(mut.delegate(this, replica, edge, amount));
  }

  /** Returns `amount` of `replica`'s holdings at the child up its live inbound `edge` (ledger.md §7.7). */
  release(replica: ReplicaId, edge: AttachmentId, amount: bigint): MutationResult {
    return wrap(mut.release(this, replica, edge, amount));
  }

  /** Hands holdings at `group` from `from` to `to` (ledger.md §7.8). */
  transfer(group: GroupId, from: ReplicaId, to: ReplicaId, amount: bigint): MutationResult {
    return wrap(mut.transfer(this, group, from, to, amount));
  }

  /** Consumes `amount` at leaf `group` along its current lineage (ledger.md §7.9). */
  spend(replica: ReplicaId, group: GroupId, amount: bigint): MutationResult {
    return wrap(mut.spend(this, replica, group, amount));
  }

  /** Charges a path captured at admission, whatever the topology is now (ledger.md §7.10). */
  chargeCaptured(replica: ReplicaId, path: readonly AttachmentId[], amount: bigint): MutationResult {
    return wrap(mut.chargeCaptured(this, replica, path, amount));
  }
}

/** True iff joining `small` into `big` adds no record, mint or replica (so `big`'s index still fits). */
function addsNoTopology(big: EntitlementLedger, small: State): boolean {
  for (const [e, recs] of small.records) {
    const cur = big.s.records.get(e);
    if (cur === undefined || recs.some((r) => !cur.some((c) => compareRecords(c, r) === 0))) return false;
  }
  for (const [id, m] of small.mints) {
    const cur = big.s.mints.get(id);
    if (cur === undefined || compareMints(cur, m) !== 0) return false;
  }
  // slot owners must already be slot-named in the reused index, not only mint holders (see namedBySlot)
  const known = { has: (r: ReplicaId) => big.ix.namedBySlot(r) };
  for (const fam of COUNTER_FAMILIES) {
    for (const slots of small[fam].values()) for (const r of slots.keys()) if (!known.has(r)) return false;
  }
  for (const rows of small.transfers.values()) {
    for (const [d, row] of rows) {
      if (!known.has(d)) return false;
      for (const x of row.keys()) if (!known.has(x)) return false;
    }
  }
  return true;
}

/** @internal Wraps a raw mutator outcome as a public result. */
export function wrap(r: RawResult): MutationResult {
  return r.ok ? { ok: true, patch: new EntitlementLedger(r.patch) } : r;
}

/** @internal The state of `projectEdge(e)`. */
export function projectEdgeState(s: State, e: AttachmentId): State {
  const p = emptyState();
  const recs = s.records.get(e);
  if (recs !== undefined) p.records.set(e, recs);
  const l = s.lifecycle.get(e);
  if (l !== undefined) p.lifecycle.set(e, l);
  const g = s.gauges.get(e);
  if (g !== undefined) p.gauges.set(e, g);
  for (const fam of COUNTER_FAMILIES) {
    const slots = s[fam].get(e);
    if (slots !== undefined) p[fam].set(e, new Map(slots));
  }
  const rows = s.transfers.get(e as string as PathKey);
  if (rows !== undefined) {
    p.transfers.set(e as string as PathKey, new Map([...rows].map(([d, row]) => [d, new Map(row)])));
  }
  return p;
}
