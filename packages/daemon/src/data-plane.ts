// What the API needs from this peer's node: node.md §1's data plane. A static peer passes its
// `HeddleNode`; a governed peer passes its `GovernedHeddleNode`'s data plane (governed.md §2.2), whose
// writer gate refuses `reserve` until the peer has enrolled itself.
import type { EntitlementLedger, GroupId, ReplicaId } from "@heddle/ledger";
import type { BoundMetrics, CompleteResult, GossipClaims, NodeMetrics, ReservationRow, ReserveOptions, ReserveResult, ScheduleResult, Watch } from "@heddle/node";
import type { AttachmentId } from "@heddle/ledger";
import type { Demand } from "@heddle/policy";
import { DivisionByZeroError, LedgerOverflowError, Rational } from "@heddle/ledger";
import { INT64_MAX } from "./schema.ts";

/** What {@link boundsOf} needs to say why a parent's bounds cannot be computed: the node's `E` and `q` and the roster. */
export interface BoundTuning {
  readonly maxHoldingsPerPeer: bigint;
  readonly quantum: bigint;
  readonly roster: readonly { readonly id: string }[];
}

/**
 * `data.boundMetrics(parent)`, or the reason it cannot be computed: node.md §11's exact arithmetic left int64
 * (a `LedgerOverflowError`; policy.md §2.3 lets the weight arithmetic throw too). One such parent must not take
 * down a read that covers every parent (GET /v1/bounds, /metrics, the dashboard). With `tuning`, the reason names
 * what overflowed and the setting to change.
 */
export function boundsOf(data: Pick<DataPlane, "boundMetrics" | "ledger" | "self">, parent: GroupId, tuning?: BoundTuning): BoundMetrics | { parent: GroupId; unavailable: string } {
  try {
    return data.boundMetrics(parent);
  } catch (e) {
    if (!(e instanceof LedgerOverflowError) && !(e instanceof DivisionByZeroError)) throw e;
    return { parent, unavailable: `${e.name}: ${e.message}; ${boundFailureCause(data, parent, tuning)}` };
  }
}

/** Which of node.md §11's terms leaves int64 at `parent`, and what to change; checked in the order the node computes them. */
function boundFailureCause(data: Pick<DataPlane, "ledger" | "self">, parent: GroupId, tuning: BoundTuning | undefined): string {
  const view = data.ledger.get();
  if (tuning !== undefined) {
    // The peers this peer counts — at least the roster, itself and every replica with a slot in the ledger. (The
    // configured worst case n·E + q is not a cause: the node saturates it at 2^63 − 1 rather than throw.)
    const replicas = new Set<string>([data.self, ...tuning.roster.map((r) => r.id), ...view.replicas()]);
    const { quantum: q } = tuning;
    let steerable = 0n;
    for (const r of replicas) {
      const h = view.holdings(parent, r as ReplicaId);
      if (h > 0n) steerable += h;
    }
    if (steerable + q > INT64_MAX) {
      return `the current bound (node.md §11: the holdings at ${parent}, ${steerable}, + node.quantum ${q}) leaves int64; lower node.quantum to at most ${INT64_MAX - steerable}`;
    }
  }
  let sum = Rational.ZERO;
  try {
    for (const c of view.childrenOf(parent)) {
      const rec = view.record(c.attachment);
      if (rec !== null) sum = sum.add(Rational.of(rec.weight.num, rec.weight.den));
    }
  } catch (e) {
    if (!(e instanceof LedgerOverflowError)) throw e;
    return `the weights of ${parent}'s children are too large for exact arithmetic — reshape them with smaller weights`;
  }
  return `the weight shares of ${parent}'s demanding children, scaled by their committed service, are too large for exact arithmetic — reshape them with weights whose numerators and denominators are smaller`;
}

/** The data-plane calls the API and the scheduler use; the optional ones enrich status and holdings. */
export interface DataPlane {
  readonly self: ReplicaId;
  readonly ledger: Watch<EntitlementLedger>;
  /** node.md §8; a keyed reserve passes its key's tag (`opts.tag`), which the node commits in the reservation's id. */
  reserve(leaf: GroupId, maximumCost: bigint, opts?: ReserveOptions): ReserveResult;
  complete(id: string, actualCost: bigint): CompleteResult;
  cancel(id: string): CompleteResult;
  advertise(edge: AttachmentId, demand: Demand): void;
  /** All or nothing; throws `DemandLimitError` for a slot past the board's limits. */
  advertiseMany(changes: Iterable<readonly [AttachmentId, Demand]>): void;
  schedule(parent: GroupId): ScheduleResult;
  boundMetrics(parent: GroupId): BoundMetrics;
  /** The folded live demand for `edge` on this peer's board (node.md §6); the dashboard draws a child without demand neutrally. */
  demand?(edge: AttachmentId): Demand;
  readonly unreachable?: Watch<ReadonlySet<ReplicaId>>;
  readonly epoch?: number;
  readonly genesisDigest?: string;
  /** Open reservations; the API reads them once at start to answer keyed reserves committed before a crash. */
  openReservations?(): ReservationRow[];
  /** How many reservations are open; with it the API enforces `limits.maxOpenReservations`. */
  openReservationCount?(): number;
  earmarked?(leaf: GroupId): bigint;
  available?(leaf: GroupId): bigint;
  metrics?(): NodeMetrics;
  /** Keeper and advisory claims of this peer's node (claims.md §3–4); the API's keeper/advisory routes answer 501 without. */
  readonly gossipClaims?: GossipClaims;
}
