import type { AttachmentId, GroupId, PathKey, ReplicaId } from "./ids.ts";
import type { ServiceUnits } from "./int64.ts";
import type { Rational } from "./rational.ts";
import type { Weight } from "./weight.ts";

/** Edge lifecycle; join is the maximum rank (ledger.md §3.5). */
export type Lifecycle = "PREPARED" | "ACTIVE" | "CLOSING" | "RETIRED";

/** Rank of each lifecycle state: PREPARED 0 < ACTIVE 1 < CLOSING 2 < RETIRED 3. */
export const LIFECYCLE_RANK: Readonly<Record<Lifecycle, number>> = Object.freeze({
  PREPARED: 0,
  ACTIVE: 1,
  CLOSING: 2,
  RETIRED: 3,
});

/** An immutable parent→child edge with a weight (ledger.md §3.6). */
export interface AttachmentRecord {
  readonly id: AttachmentId;
  readonly parent: GroupId;
  readonly child: GroupId;
  readonly weight: Weight;
}

/** One mint act: credits `holder` with `amount` at group `root` (ledger.md §3.7). */
export interface MintRecord {
  readonly root: GroupId;
  readonly holder: ReplicaId;
  readonly amount: ServiceUnits;
}

/**
 * The published virtual-time seat of an edge (ledger.md §3.8): when the edge's base issuance
 * was `folded`, its gross virtual service was at least `floor`. Joined componentwise.
 */
export interface Gauge {
  readonly floor: Rational;
  readonly folded: ServiceUnits;
}

/** The whole parent-facing view of one child edge (ledger.md §3.9). */
export interface EdgeSummary {
  attachment: AttachmentId;
  issued: bigint;
  returned: bigint;
  spent: bigint;
  outstanding: bigint;
  committedService: bigint;
}

/** Every refusal kind a mutator can return (ledger.md §7.11). */
export type RefusalKind =
  | "InvalidArgument"
  | "UnknownEdge"
  | "DivergentRecord"
  | "AlreadyKnown"
  | "ChildIsRoot"
  | "MintIdInUse"
  | "ForeignRoot"
  | "NotARoot"
  | "WrongLifecycle"
  | "InboundAlreadyLive"
  | "WouldCreateCycle"
  | "NotDrained"
  | "AlreadySeated"
  | "ChildQuarantined"
  | "Quarantined"
  | "NotLiveInbound"
  | "InsufficientHoldings"
  | "NotALeaf"
  | "RootHasNoEdge"
  | "EmptyPath"
  | "MalformedPath";

/** Why a mutator declined. Compare `kind` (and `detail` where defined), never `message`. */
export interface Refusal {
  kind: RefusalKind;
  message: string;
  detail?: Readonly<Record<string, string>>;
}

/** A conflict reported by `validate()` (ledger.md §9), in rank order. */
export type LedgerConflict =
  | { kind: "PerEdgeSafety"; edge: AttachmentId }
  | { kind: "PersistentNegativeHoldings"; group: GroupId; replica: ReplicaId }
  | { kind: "RecordDivergence"; edge: AttachmentId }
  | { kind: "DualActiveInbound"; group: GroupId }
  | { kind: "ClosureViolation"; edge: AttachmentId }
  | { kind: "LineageCycle"; group: GroupId }
  | { kind: "ConservationViolation"; leafSpentTotal: bigint; mintedTotal: bigint }
  | { kind: "OrphanedTransferPath"; path: PathKey }
  | { kind: "MultipleRoots"; roots: GroupId[] };
