import { holdingsOnPath, pos, readGauge, edgeTotal } from "./accounting.ts";
import type { View } from "./accounting.ts";
import { isValidId, PathKey } from "./ids.ts";
import type { AttachmentId, GroupId, MintId, ReplicaId } from "./ids.ts";
import { add, MAX } from "./int64.ts";
import { addWitness, PatchBuilder } from "./patch.ts";
import { Rational } from "./rational.ts";
import type { State } from "./state.ts";
import { COUNTER_FAMILIES, compareMints, slot, transferSlot } from "./state.ts";
import { isKnownEdge, lc, live, rec, walk } from "./topology.ts";
import type { AttachmentRecord, MintRecord, Refusal, RefusalKind } from "./types.ts";
import { Weight } from "./weight.ts";

/** A mutator's outcome before the patch is wrapped as a ledger value. */
export type RawResult = { ok: true; patch: State } | { ok: false; refusal: Refusal };

function refuse(kind: RefusalKind, message: string, detail?: Record<string, string>): RawResult {
  const refusal: Refusal = detail === undefined ? { kind, message } : { kind, message, detail: Object.freeze(detail) };
  return { ok: false, refusal: Object.freeze(refusal) };
}

function ok(p: PatchBuilder): RawResult {
  return { ok: true, patch: p.s };
}

function isAmount(v: unknown, min: bigint): v is bigint {
  return typeof v === "bigint" && v >= min && v <= MAX;
}

function badIds(...ids: unknown[]): boolean {
  return ids.some((id) => !isValidId(id));
}

/** A dense array of valid ids (holes in a sparse array count as invalid). */
function isIdList(path: unknown): path is readonly AttachmentId[] {
  if (!Array.isArray(path)) return false;
  for (let i = 0; i < path.length; i++) if (!isValidId(path[i])) return false;
  return true;
}

/** A record whose ids are valid, whose ends differ and whose weight is a reduced positive ratio. */
export function isValidRecord(r: unknown): r is AttachmentRecord {
  if (typeof r !== "object" || r === null) return false;
  const x = r as Partial<AttachmentRecord>;
  if (badIds(x.id, x.parent, x.child) || x.parent === x.child) return false;
  const w = x.weight;
  if (!(w instanceof Weight)) return false;
  return true;
}

/** Normalises a caller's record into a frozen value holding a `Weight` instance. */
function freezeRecord(r: AttachmentRecord): AttachmentRecord {
  return Object.freeze({ id: r.id, parent: r.parent, child: r.child, weight: r.weight });
}

/** Refusal for edges that are unknown (no record) or divergent, else the single record. */
function singleRecord(v: View, edge: unknown): AttachmentRecord | RawResult {
  if (!isValidId(edge)) return refuse("InvalidArgument", "edge must be a non-empty, well-formed id");
  const recs = v.s.records.get(edge as AttachmentId);
  if (recs === undefined) return refuse("UnknownEdge", `edge ${edge} has no record`);
  if (recs.length !== 1) return refuse("DivergentRecord", `edge ${edge} has ${recs.length} divergent records`);
  return recs[0]!;
}

function isResult(x: AttachmentRecord | RawResult): x is RawResult {
  return "ok" in x;
}

/** `mint` (ledger.md §7.3). */
export function mint(v: View, id: MintId, root: GroupId, holder: ReplicaId, amount: bigint): RawResult {
  if (badIds(id, root, holder) || !isAmount(amount, 0n)) return refuse("InvalidArgument", "mint needs valid ids and an amount in 0 … 2^63−1");
  const m: MintRecord = Object.freeze({ root, holder, amount });
  const cur = v.s.mints.get(id);
  if (cur !== undefined && compareMints(cur, m) !== 0) return refuse("MintIdInUse", `mint id ${id} already names another mint`);
  const roots = v.ix.roots();
  if (!(roots.length === 0 || (roots.length === 1 && roots[0] === root))) return refuse("ForeignRoot", `the ledger's root is ${roots.join(", ")}, not ${root}`);
  if (v.ix.inbound(root).length !== 0) return refuse("NotARoot", `${root} has an inbound record`);
  const p = new PatchBuilder();
  p.mint(id, m);
  return ok(p);
}

/** `prepare` (ledger.md §7.4). */
export function prepare(v: View, record: AttachmentRecord): RawResult {
  if (!isValidRecord(record)) return refuse("InvalidArgument", "record needs valid ids, parent ≠ child and a Weight");
  if (isKnownEdge(v.s, record.id)) return refuse("AlreadyKnown", `edge ${record.id} is already known`);
  if (v.ix.isRoot(record.child)) return refuse("ChildIsRoot", `${record.child} is a mint root`);
  const p = new PatchBuilder();
  p.record(freezeRecord(record));
  p.lifecycle(record.id, "PREPARED");
  return ok(p);
}

/** `activate` (ledger.md §7.4). */
export function activate(v: View, edge: AttachmentId): RawResult {
  const r = singleRecord(v, edge);
  if (isResult(r)) return r;
  const s = v.s;
  const l = lc(s, edge);
  if (l !== "PREPARED" && l !== "ACTIVE") return refuse("WrongLifecycle", `edge ${edge} is ${l}`);
  for (const e of v.ix.inbound(r.child)) {
    if (e !== edge && live(s, e)) return refuse("InboundAlreadyLive", `${r.child} already has live inbound ${e}`);
  }
  const seen = new Set<GroupId>();
  let cur = r.parent;
  for (;;) {
    if (cur === r.child) return refuse("WouldCreateCycle", `activating ${edge} would put ${r.child} above itself`);
    if (seen.has(cur)) break;
    seen.add(cur);
    let only: AttachmentId | undefined;
    let count = 0;
    for (const e of v.ix.inbound(cur)) {
      if (live(s, e)) {
        count++;
        only = e;
      }
    }
    if (count !== 1) break;
    const up = rec(s, only!);
    if (up === undefined) break;
    cur = up.parent;
  }
  const p = new PatchBuilder();
  p.lifecycle(edge, "ACTIVE");
  return ok(p);
}

/** `close` (ledger.md §7.4). */
export function close(v: View, edge: AttachmentId): RawResult {
  const r = singleRecord(v, edge);
  if (isResult(r)) return r;
  const l = lc(v.s, edge);
  // Only activate makes an edge live (⟨1.1⟩): CLOSING counts as live, so closing a PREPARED edge
  // would bypass activate's InboundAlreadyLive and WouldCreateCycle guards.
  if (l !== "ACTIVE" && l !== "CLOSING") return refuse("WrongLifecycle", `edge ${edge} is ${l}, not ACTIVE or CLOSING`);
  const p = new PatchBuilder();
  p.lifecycle(edge, "CLOSING");
  return ok(p);
}

/** `retire` (ledger.md §7.4), with the drain witness. */
export function retire(v: View, edge: AttachmentId): RawResult {
  const r = singleRecord(v, edge);
  if (isResult(r)) return r;
  const s = v.s;
  const l = lc(s, edge);
  // PREPARED: abandon an edge that never went live (⟨1.1⟩); its counter maps are empty in an honest run.
  if (l !== "CLOSING" && l !== "PREPARED") return refuse("WrongLifecycle", `edge ${edge} is ${l}, not CLOSING or PREPARED`);
  const undrained: [string, string][] = [];
  for (const rep of v.ix.replicas()) {
    const x = pos(s, edge, rep);
    if (x !== 0n) undrained.push([rep, x.toString()]);
  }
  // fromEntries defines own properties, so a replica named "__proto__" is reported, not swallowed.
  if (undrained.length > 0) return refuse("NotDrained", `edge ${edge} still has non-zero positions`, Object.fromEntries(undrained));
  const p = new PatchBuilder();
  p.lifecycle(edge, "RETIRED");
  // Drain witness: the edge's whole counter maps and gauge at observed values, and (⟨1.1⟩) the mints
  // of every writer on it, so the patch balances alone (without transfers Lf(e, r) ≤ mints(r)).
  const writers = new Set<ReplicaId>();
  for (const fam of COUNTER_FAMILIES) {
    const slots = s[fam].get(edge);
    if (slots === undefined) continue;
    for (const [rep, x] of slots) {
      p.counter(fam, edge, rep, x);
      // Stryker disable next-line ConditionalExpression,EqualityOperator: every stored slot is > 0 (PatchBuilder.counter drops ≤ 0, both decoders drop 0 and refuse negatives, join keeps a max), so `true` and `x >= 0n` read the same
      if (x > 0n) writers.add(rep);
    }
  }
  for (const rep of writers) p.mintsOf(v, rep);
  const g = s.gauges.get(edge);
  if (g !== undefined) p.gauge(edge, g);
  return ok(p);
}

/** `seat` (ledger.md §7.5). */
export function seat(v: View, edge: AttachmentId, front: Rational): RawResult {
  if (!(front instanceof Rational)) return refuse("InvalidArgument", "front must be a Rational");
  const r = singleRecord(v, edge);
  if (isResult(r)) return r;
  if (v.s.gauges.has(edge)) return refuse("AlreadySeated", `edge ${edge} already has a gauge`);
  const obs = edgeTotal(v.s.issued, edge);
  const p = new PatchBuilder();
  p.gauge(edge, Object.freeze({ floor: Rational.max(front, Rational.perWeight(obs, r.weight)), folded: obs }));
  return ok(p);
}

/** `delegate` (ledger.md §7.6): parent → child, with the gauge checkpoint. */
export function delegate(v: View, replica: ReplicaId, edge: AttachmentId, amount: bigint): RawResult {
  if (badIds(replica) || !isAmount(amount, 1n)) return refuse("InvalidArgument", "delegate needs a valid replica and an amount in 1 … 2^63−1");
  const r = singleRecord(v, edge);
  if (isResult(r)) return r;
  const s = v.s;
  const l = lc(s, edge);
  if (l !== "ACTIVE") return refuse("WrongLifecycle", `edge ${edge} is ${l}, not ACTIVE`);
  if (walk(s, v.ix, r.child).path === null) return refuse("ChildQuarantined", `child ${r.child} is quarantined`);
  const parentPath = walk(s, v.ix, r.parent).path;
  // Stryker disable next-line StringLiteral: unreachable — edge is live and the child's walk is [edge, …walk(parent)], so a non-null child walk implies a non-null parent walk
  if (parentPath === null) return refuse("Quarantined", `parent ${r.parent} is quarantined`);
  const h = holdingsOnPath(v, r.parent, replica, parentPath);
  if (amount > h) return refuse("InsufficientHoldings", `${replica} holds ${h} at ${r.parent}, asked ${amount}`);
  const p = new PatchBuilder();
  p.counter("issued", edge, replica, add(slot(s.issued, edge, replica), amount));
  p.counter("returned", edge, replica, slot(s.returned, edge, replica));
  p.counter("leafSpent", edge, replica, slot(s.leafSpent, edge, replica));
  p.counter("rollupSpent", edge, replica, slot(s.rollupSpent, edge, replica));
  const after = add(edgeTotal(s.issued, edge), amount);
  p.gauge(edge, Object.freeze({ floor: readGauge(s.gauges.get(edge), after, r.weight), folded: after }));
  addWitness(p, v, replica, parentPath);
  return ok(p);
}

/** `release` (ledger.md §7.7): child → parent over the child's live inbound edge. */
export function release(v: View, replica: ReplicaId, edge: AttachmentId, amount: bigint): RawResult {
  if (badIds(replica) || !isAmount(amount, 1n)) return refuse("InvalidArgument", "release needs a valid replica and an amount in 1 … 2^63−1");
  const r = singleRecord(v, edge);
  if (isResult(r)) return r;
  const s = v.s;
  const path = walk(s, v.ix, r.child).path;
  if (path === null) return refuse("Quarantined", `child ${r.child} is quarantined`);
  if (path[path.length - 1] !== edge) return refuse("NotLiveInbound", `${edge} is not ${r.child}'s live inbound edge`);
  const h = holdingsOnPath(v, r.child, replica, path);
  if (amount > h) return refuse("InsufficientHoldings", `${replica} holds ${h} at ${r.child}, asked ${amount}`);
  const p = new PatchBuilder();
  p.counter("returned", edge, replica, add(slot(s.returned, edge, replica), amount));
  addWitness(p, v, replica, path);
  return ok(p);
}

/** `transfer` (ledger.md §7.8): hands holdings to another replica on the same path. */
export function transfer(v: View, group: GroupId, from: ReplicaId, to: ReplicaId, amount: bigint): RawResult {
  if (badIds(group, from, to) || from === to || !isAmount(amount, 1n)) return refuse("InvalidArgument", "transfer needs valid ids, from ≠ to and an amount in 1 … 2^63−1");
  const s = v.s;
  const path = walk(s, v.ix, group).path;
  if (path === null) return refuse("Quarantined", `${group} is quarantined`);
  const h = holdingsOnPath(v, group, from, path);
  if (amount > h) return refuse("InsufficientHoldings", `${from} holds ${h} at ${group}, asked ${amount}`);
  const key = path.length === 0 ? PathKey.ROOT : PathKey.of(path[path.length - 1]!);
  const p = new PatchBuilder();
  p.transfer(key, from, to, add(transferSlot(s.transfers, key, from, to), amount));
  addWitness(p, v, from, path);
  return ok(p);
}

function chargePath(v: View, replica: ReplicaId, path: readonly AttachmentId[], amount: bigint): RawResult {
  const s = v.s;
  const p = new PatchBuilder();
  const k = path.length - 1;
  p.counter("leafSpent", path[k]!, replica, add(slot(s.leafSpent, path[k]!, replica), amount));
  for (let i = 0; i < k; i++) {
    p.counter("rollupSpent", path[i]!, replica, add(slot(s.rollupSpent, path[i]!, replica), amount));
  }
  addWitness(p, v, replica, path);
  return ok(p);
}

/** `spend` (ledger.md §7.9): consumes at a leaf along its current lineage. */
export function spend(v: View, replica: ReplicaId, group: GroupId, amount: bigint): RawResult {
  if (badIds(replica, group) || !isAmount(amount, 0n)) return refuse("InvalidArgument", "spend needs valid ids and an amount in 0 … 2^63−1");
  if (v.ix.childEdges(group).length !== 0) return refuse("NotALeaf", `${group} has child edges`);
  if (amount === 0n) return ok(new PatchBuilder());
  const path = walk(v.s, v.ix, group).path;
  if (path === null) return refuse("Quarantined", `${group} is quarantined`);
  if (path.length === 0) return refuse("RootHasNoEdge", `${group} is a top group with no edge to charge`);
  const h = holdingsOnPath(v, group, replica, path);
  if (amount > h) return refuse("InsufficientHoldings", `${replica} holds ${h} at ${group}, asked ${amount}`);
  return chargePath(v, replica, path, amount);
}

/** `chargeCaptured` (ledger.md §7.10): charges a path captured at admission, unchecked against holdings. */
export function chargeCaptured(v: View, replica: ReplicaId, path: readonly AttachmentId[], amount: bigint): RawResult {
  if (badIds(replica) || !isAmount(amount, 0n) || !isIdList(path)) {
    return refuse("InvalidArgument", "chargeCaptured needs a valid replica, a list of edge ids and an amount in 0 … 2^63−1");
  }
  if (amount === 0n) return ok(new PatchBuilder());
  if (path.length === 0) return refuse("EmptyPath", "the captured path is empty");
  const s = v.s;
  if (new Set(path).size !== path.length) return refuse("MalformedPath", "the captured path repeats an edge");
  for (const e of path) if (!s.records.has(e)) return refuse("MalformedPath", `edge ${e} of the captured path has no record`);
  // ⟨1.1⟩ the path starts at the root: a mid-tree path debits the child edge without the roll-up
  // through the parent's inbound edge, so the parent's holdings would rise by the amount charged.
  if (!s.records.get(path[0]!)!.some((r) => v.ix.isRoot(r.parent))) {
    return refuse("MalformedPath", `the captured path starts at ${path[0]}, whose parent is not the root`);
  }
  for (let i = 0; i + 1 < path.length; i++) {
    const a = s.records.get(path[i]!)!;
    const b = s.records.get(path[i + 1]!)!;
    if (!a.some((ra) => b.some((rb) => ra.child === rb.parent))) {
      return refuse("MalformedPath", `${path[i]} does not lead into ${path[i + 1]}`);
    }
  }
  return chargePath(v, replica, path, amount);
}

