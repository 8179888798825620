// What the API needs from this peer's node: node.md §1's data plane. A static peer passes its
// `HeddleNode`; a governed peer passes its `GovernedHeddleNode`'s data plane (governed.md §2.2), whose
// writer gate refuses `reserve` until the peer has enrolled itself.
import type { EntitlementLedger, GroupId, ReplicaId } from "@heddle/ledger";
import type { BoundMetrics, CompleteResult, GossipClaims, NodeMetrics, ReservationRow, ReserveOptions, ReserveResult, ScheduleResult, Watch } from "@heddle/node";
import type { AttachmentId } from "@heddle/ledger";
import type { Demand } from "@heddle/policy";
import { DivisionByZeroError, LedgerOverflowError } from "@heddle/ledger";

/**
 * `data.boundMetrics(parent)`, or the reason it cannot be computed: children whose weights are so large
 * that the exact arithmetic leaves int64 (policy.md §2.3 lets that throw). One such parent must not take
 * down a read that covers every parent (GET /v1/bounds, /metrics, the dashboard).
 */
export function boundsOf(data: Pick<DataPlane, "boundMetrics">, parent: GroupId): BoundMetrics | { parent: GroupId; unavailable: string } {
  try {
    return data.boundMetrics(parent);
  } catch (e) {
    if (!(e instanceof LedgerOverflowError) && !(e instanceof DivisionByZeroError)) throw e;
    return { parent, unavailable: `${e.name}: ${e.message}; the weights of ${parent}'s children are too large for exact arithmetic — reshape them with smaller weights` };
  }
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
