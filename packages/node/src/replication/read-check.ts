import { LedgerOverflowError, MAX, PathKey, type AttachmentId, type EntitlementLedger, type LedgerReads, type ReplicaId } from "@heddle/ledger";

/**
 * Every sum the ledger's reads perform over a whole state that depends on its topology (ledger.md I-15):
 * `validate()` — each edge's debits `Σ leafSpent + Σ rollupSpent + Σ returned`, every `holdings(g, r)` of a group
 * named by a record, `Σ leafSpent` and `Σ mints` over the ledger, the transfer nets of orphaned paths — and
 * `holdings(root, r)` of every mint root (a root no record names is not among validate's groups). Throws
 * `LedgerOverflowError` iff one of them leaves int64. Costs the whole state (about 130 ms at 10,000 edges and 10
 * replicas): the join check runs it for an inbound value that changes the topology (a record, mint or lifecycle).
 */
export function checkAllReads(r: LedgerReads): void {
  r.validate();
  const replicas = r.replicas();
  for (const g of r.roots()) for (const who of replicas) r.holdings(g, who);
}

/**
 * {@link checkAllReads}, plus every replica's position `own + tnet` at every known edge and transfer path
 * (`edgePosition`, which a retire's drain gate and the daemon's edge view read for every replica; the topology
 * never changes it). What a node checks once, on the state restored from its store, before it starts.
 */
export function checkRestoredReads(r: EntitlementLedger): void {
  checkAllReads(r);
  const replicas = r.replicas();
  const keys = new Set<string>(r.knownEdges());
  for (const [k] of (JSON.parse(r.encode()) as { transfers?: Pairs<unknown> }).transfers ?? []) if (k !== (PathKey.ROOT as string)) keys.add(k);
  for (const e of keys) for (const who of replicas) r.edgePosition(e as AttachmentId, who);
}

/** The parts of a value a join check needs, read from its canonical encoding (ledger.md §10). */
interface Touched {
  /** A record, mint or lifecycle entry: lineages (and so which holdings are read at all) may change anywhere below. */
  topology: boolean;
  /** Edges at which a leaf-spent slot rose. */
  readonly leafSpent: Set<AttachmentId>;
  /** Edge (or path key of an edge) → the replicas whose slots or transfer rows at it the value raised. */
  readonly edges: Map<AttachmentId, Set<ReplicaId>>;
  /** Replicas whose root-path transfer rows (as donor or recipient) the value raised. */
  readonly rootParties: Set<ReplicaId>;
}

type Pairs<V> = [string, V][];
const COUNTERS = ["issued", "returned", "leafSpent", "rollupSpent"] as const;

function touched(value: EntitlementLedger): Touched {
  const o = JSON.parse(value.encode()) as Record<string, unknown>;
  const t: Touched = { topology: "records" in o || "mints" in o || "lifecycle" in o, leafSpent: new Set(), edges: new Map(), rootParties: new Set() };
  const at = (e: string): Set<ReplicaId> => {
    let s = t.edges.get(e as AttachmentId);
    if (s === undefined) t.edges.set(e as AttachmentId, (s = new Set()));
    return s;
  };
  for (const fam of COUNTERS) {
    for (const [e, slots] of (o[fam] as Pairs<Pairs<string>> | undefined) ?? []) {
      const s = at(e);
      for (const [who] of slots) s.add(who as ReplicaId);
      if (fam === "leafSpent") t.leafSpent.add(e as AttachmentId);
    }
  }
  for (const [e] of (o["gauges"] as Pairs<unknown> | undefined) ?? []) at(e);
  for (const [k, rows] of (o["transfers"] as Pairs<Pairs<Pairs<string>>> | undefined) ?? []) {
    const s = k === (PathKey.ROOT as string) ? t.rootParties : at(k);
    for (const [donor, row] of rows) {
      s.add(donor as ReplicaId);
      for (const [to] of row) s.add(to as ReplicaId);
    }
  }
  return t;
}

/**
 * `Σ_e Σ_r leafSpent` (the ledger-wide total `validate()` compares with the minted total), kept per edge so a
 * join re-reads only the edges it raised: summing 100,000 slots on every inbound delta would cost ~3 ms at
 * 10,000 edges, where the join costs ~0.1 ms. Every raise of the replica must reach it — inbound joins through
 * {@link checkReadsAfterJoin}, committed local patches through {@link LeafSpentTotal.observe} — or the total
 * drifts below the replica's. Its terms are non-negative, so the total leaves int64 iff the ledger's own
 * `leafSpentTotal()` (a checked left-to-right sum) throws, whatever the order.
 */
export class LeafSpentTotal {
  readonly #byEdge = new Map<AttachmentId, bigint>();
  #total = 0n;

  /** Reads every edge of `r` (boot: about 40 ms at 10,000 edges); throws `LedgerOverflowError` if an edge's own total leaves int64. */
  constructor(r: LedgerReads) {
    for (const e of r.knownEdges()) {
      const t = r.projectEdge(e).leafSpentTotal();
      if (t === 0n) continue;
      this.#byEdge.set(e, t);
      this.#total += t;
    }
  }

  get total(): bigint {
    return this.#total;
  }

  /**
   * The total with `edges` read again from `r` (the ledger's own per-edge sum), and a function that keeps it.
   * Throws `LedgerOverflowError` when `strict` and the total would leave int64 (nothing is kept then).
   */
  reread(r: LedgerReads, edges: Iterable<AttachmentId>, strict: boolean): () => void {
    const next = new Map<AttachmentId, bigint>();
    let total = this.#total;
    for (const e of edges) {
      const t = r.projectEdge(e).leafSpentTotal();
      total += t - (next.get(e) ?? this.#byEdge.get(e) ?? 0n);
      next.set(e, t);
    }
    if (strict && total > MAX) throw new LedgerOverflowError(`the ledger-wide leaf-spent total would be ${total}, outside the signed 64-bit range`);
    return () => {
      for (const [e, t] of next) {
        if (t === 0n) this.#byEdge.delete(e);
        else this.#byEdge.set(e, t);
      }
      this.#total = total;
    };
  }

  /** A committed local patch, already joined into `r`: its leaf-spent raises are counted (never refused: it is committed). */
  observe(r: LedgerReads, patch: EntitlementLedger): void {
    const t = touched(patch);
    if (t.leafSpent.size > 0) this.reread(r, t.leafSpent, false)();
  }
}

/**
 * Throws `LedgerOverflowError` iff {@link checkAllReads} would on `r`, given that it did not before `effective`
 * (what a join raised) was joined into `r`; on success returns a function that records the join in `leafSpent`
 * (call it once the join is kept). A value that changes the topology gets the whole check. Otherwise only what
 * the raised entries enter is read again, with the ledger's own functions:
 * - each edge they touch: its summary, and `validate()` of its projection (the edge's debits, exactly the sums
 *   `validate()` forms for it);
 * - each replica with a raised slot or transfer row at an edge (or path key): its position there (`own + tnet`, as
 *   orphaned paths and `edgePosition` read it) and its holdings at the edge's two ends (which read `own`,
 *   `netInflow` and `pos` of it);
 * - each party of a raised root-path transfer row: its holdings at every root (they read `tnet(root, ·)`);
 * - `Σ leafSpent` (through `leafSpent`, re-reading the edges whose leaf-spent slots rose), and `Σ mints`.
 * Costs the touched edges' slots plus, per party, the children of those edges' ends.
 */
export function checkReadsAfterJoin(r: LedgerReads, effective: EntitlementLedger, leafSpent: LeafSpentTotal): () => void {
  const t = touched(effective);
  if (t.topology) checkAllReads(r);
  if (!t.topology) {
    for (const [e, parties] of t.edges) {
      r.edge(e);
      r.projectEdge(e).validate();
      const recs = r.records(e); // every one: a divergent edge is a child of each parent its records name
      for (const who of parties) {
        for (const rec of recs) {
          r.holdings(rec.parent, who);
          r.holdings(rec.child, who);
        }
      }
    }
    if (t.rootParties.size > 0) for (const g of r.roots()) for (const who of t.rootParties) r.holdings(g, who);
    r.mintedTotal();
  }
  // Positions: the topology never changes one, so a value that changes it too gets them checked here.
  for (const [e, parties] of t.edges) for (const who of parties) r.edgePosition(e, who);
  return leafSpent.reread(r, t.leafSpent, true);
}
