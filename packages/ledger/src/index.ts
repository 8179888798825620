/**
 * `@heddle/ledger` — a CRDT entitlement ledger (ledger.md). Supply is minted at the root,
 * delegated down a tree of attachment edges, spent at leaves and released when unused;
 * replicas merge by join and never overspend without coordination.
 */
export { LedgerOverflowError, DivisionByZeroError, LedgerDecodeError, LedgerIdTooLongError } from "./errors.ts";
export { MAX, MIN, addUnits, chk as checked, add as checkedAdd, sub as checkedSub, mul as checkedMul, neg as checkedNeg } from "./int64.ts";
export type { ServiceUnits } from "./int64.ts";
export { GroupId, AttachmentId, MintId, ReplicaId, PathKey } from "./ids.ts";
export { Weight } from "./weight.ts";
export { Rational } from "./rational.ts";
export { LIFECYCLE_RANK } from "./types.ts";
export type {
  Lifecycle,
  AttachmentRecord,
  MintRecord,
  Gauge,
  EdgeSummary,
  RefusalKind,
  Refusal,
  LedgerConflict,
} from "./types.ts";
export { EntitlementLedger, LedgerReads } from "./ledger.ts";
export type { MutationResult } from "./ledger.ts";
export { LedgerReplica } from "./replica.ts";
export { LEDGER_FORMAT } from "./encoding.ts";
export type { LedgerTransaction } from "./replica.ts";
export { LEDGER_BINARY_FORMAT, ByteWriter, ByteReader } from "./binary.ts";
export { fnv1a64, fnv1a64Reference } from "./fnv.ts";
