// What the API needs from the governed control plane, stated as the interface of governed.md §2.2–2.3.
// The daemon codes its control routes against this; `governedControlPlane` (governed-adapter.ts) fits a
// `GovernedHeddleNode` into it. A static peer has no control plane: its routes answer 409 `static-mode`.
import type { AttachmentId, AttachmentRecord, GroupId, Lifecycle, MintId, ReplicaId } from "@heddle/ledger";
import type { EtcdLogStatus } from "@heddle/governed";
import type { ReadRefusalCounts } from "./claims-at-read.ts";

/** An exactly-once key (governed.md §3.10). */
export interface ProposalKey {
  readonly client: string;
  readonly seq: number;
}

/** Options of one control call (governed.md §2.2). */
export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  key?: ProposalKey;
  ackFloor?: number;
}

/** A structured conflict (governed.md §2.3); the `reason` names it, the rest is its payload. */
export interface ControlConflict {
  readonly reason: string;
  readonly [field: string]: unknown;
}

/** The outcome of one control act (governed.md §2.3). */
export type ControlOutcome =
  | { kind: "applied"; index: number; key: ProposalKey; noop: boolean; mintId?: MintId; claims?: unknown; heldToken?: number | null }
  | { kind: "conflict"; index: number | null; key: ProposalKey | null; conflict: ControlConflict };

/** What a claims take answers: a control outcome, or a refusal answered at a read. */
export type ClaimsOutcome =
  | ControlOutcome
  /**
   * A claims take the leader refused from its applied table after a ReadIndex confirmation, without appending an
   * entry: linearizable (the table was current at `readIndex`, leases judged at `judgedAt` on the leader's clock),
   * but recorded nowhere — a retry is judged afresh.
   */
  | { kind: "refused-at-read"; readIndex: number; judgedAt: number; claims: unknown };

/** A claim request (claims.md §2 `take`, without `now`). */
export interface ClaimRequest {
  holder: string;
  resources: { key: string; mode: "exclusive" | "shared" }[];
  scope?: string;
  ttlMs?: number;
  label?: string;
}

/** Reads of the replicated claims table at the local applied prefix. */
export interface ClaimsView {
  /** `now` (claims.md §2 rule 9): the time leases are judged at; default the table's own clock (`claimsNow`). */
  owner(key: string, now?: number): string | undefined | null;
  holders(key: string, now?: number): readonly string[];
  free(): readonly string[] | undefined;
  open(now?: number): readonly unknown[];
  availability(keys: readonly string[]): unknown;
  checkFence(key: string, token: number): boolean;
  /** The refusal a take would get at `now` from this applied prefix (claims.md §2 `wouldRefuse`); `undefined`: it would grant. */
  wouldRefuse(request: ClaimRequest, now?: number): { ok: false; blocked: readonly unknown[] } | undefined;
}

/** The claims family (governed.md §2.2 `GovernedClaims`). */
export interface ClaimsVerbs {
  take(request: ClaimRequest, opts?: CallOptions): Promise<ClaimsOutcome>;
  /** With `opts.token`, ends only the grant stamped with that token (claims.md §2 `release`). */
  release(holder: string, key: string, opts?: CallOptions & { readonly token?: number }): Promise<ControlOutcome>;
  releaseAll(holder: string, opts?: CallOptions): Promise<ControlOutcome>;
  releaseScope(scope: string, opts?: CallOptions): Promise<ControlOutcome>;
  renew(holder: string, key: string, opts?: CallOptions): Promise<ControlOutcome>;
  view(): ClaimsView;
  /**
   * The time a take arriving now would be judged at (this peer's clock, raised to the log's latest stamp): what a
   * read of who holds what should judge leases at, so that it agrees with the next take's answer. Absent: the
   * table's own clock (`claimsNow`), which stands still while no claims command is applied.
   */
  judgeTime?(): number;
}

/** The enrolled roster (governed.md §2.2 `RosterView`). */
export interface RosterView {
  readonly appliedIndex: number;
  readonly enrolled: ReadonlySet<ReplicaId>;
}

/** The control state at the local applied prefix (governed.md §2.2 `ControlView`). */
export interface ControlView {
  readonly appliedIndex: number;
  record(edge: AttachmentId): AttachmentRecord | undefined;
  lifecycle(edge: AttachmentId): Lifecycle | undefined;
  liveInbound(child: GroupId): readonly AttachmentId[];
  minted(): ReadonlyMap<MintId, { root: GroupId; holder: ReplicaId; amount: bigint }>;
  mintedTotal(): bigint;
  readonly roster: RosterView;
  outcomeOf(key: ProposalKey): ControlOutcome | "unknown" | "pruned";
  /**
   * How long `Idempotency-Key` sessions (`idem:` clients) are remembered: the last `entries` applied indexes;
   * everything recorded at or below `forgottenThrough` is gone; `sessions` are held now (governed README).
   */
  keyRetention?(): { readonly entries: number; readonly forgottenThrough: number; readonly sessions: number };
  /** The latest stamp of any applied entry, never below the claims clock (`@heddle/governed`'s extension). */
  readonly latestStamp?: number;
}

/** The Raft member's state, for status and leader transfer. */
export interface RaftStatus {
  readonly role: string;
  readonly leader: string | null;
  readonly commitIndex: number;
  readonly voters: readonly string[];
  readonly learners: readonly string[];
  /**
   * The embedded member's log store: `kind` (`store.raftLog`), where it is, and the first write failure that
   * stopped the member (null while it writes).
   */
  readonly log?: { readonly kind: "wal" | "sqlite"; readonly path: string; readonly failed: string | null };
  /**
   * On etcd (`mode.etcd`): the log's `status()` — the newest head (index, stamp, the member that stamped it), a
   * malformed head's message (`corrupt`), and `clockAhead` while the head's stamp stands more than `maxClockAheadMs`
   * past this peer's clock. Absent on the embedded Raft.
   */
  readonly etcd?: EtcdLogStatus;
  /**
   * Snapshots that cannot be installed because the receiver's `mode.raft.snapshotMaxBytes` is below their size
   * (`RaftNode.snapshotStalls()`): as the follower that cannot catch up (`receiving`) or its leader (`sending`), each
   * with both sizes and a message naming what to raise where. Empty while none; absent on etcd.
   */
  readonly snapshotStalls?: readonly { readonly side: "receiving" | "sending"; readonly peer: string; readonly snapshotBytes: number; readonly snapshotMaxBytes: number; readonly message: string }[];
}

/** Everything the API's control routes call (governed.md §2.2, plus Raft status and leader transfer). */
export interface ControlPlane {
  mint(holder: ReplicaId, amount: bigint, opts?: CallOptions): Promise<ControlOutcome>;
  prepare(record: AttachmentRecord, opts?: CallOptions): Promise<ControlOutcome>;
  activate(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome>;
  close(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome>;
  retire(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome>;
  enroll(replica: ReplicaId, opts?: CallOptions): Promise<ControlOutcome>;
  depart(opts?: CallOptions): Promise<ControlOutcome>;
  readonly claims: ClaimsVerbs;
  readonly isWritable: boolean;
  roster(): RosterView;
  controlView(): ControlView;
  sync(opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ControlView>;
  raft(): RaftStatus;
  /** Moves Raft leadership to `to` (governed.md §4.10); rejects if this peer is not the leader. */
  transferLeadership(to: string, opts?: { timeoutMs?: number }): Promise<void>;
  /** The claims read path's counters so far (`claimsWithReadRefusals`), for `/metrics`; absent where there is none. */
  claimsReadPath?(): Readonly<ReadRefusalCounts>;
  /** Retires this peer proposed with a trimmed or unbalanced witness (governed.md §3.6), for `/metrics`; absent where there is none. */
  retireWitnessCounts?(): { readonly sliceOnly: number; readonly omitted: number; readonly unbalanced: number };
  /** Why the control plane halted (`null` while it runs); absent where it cannot tell. */
  halted?(): ControlHalt | null;
}

/**
 * A halted control plane, as `/v1/status` shows it: the index it stopped at, what to do (config keys named), and —
 * when this peer's settings differ from those its control log fixed — each differing setting with its config key.
 */
export interface ControlHalt {
  readonly index: number;
  readonly message: string;
  readonly settings: readonly { readonly setting: string; readonly configKey: string }[];
}

/**
 * Where the daemon takes each decision-affecting setting of `@heddle/governed` (`ControlSettingName`) from: the key
 * to fix when a peer's value differs from its control log's.
 */
export const CONTROL_SETTING_CONFIG_KEYS: Readonly<Record<string, string>> = {
  root: "mode.root",
  "claims.roster": "mode.claims.roster",
  "claims.capacity": "mode.claims.capacity",
  "claims.maxPerHolder": "mode.claims.maxPerHolder",
  idempotencyWindow: "the idempotencyWindow option of startDaemon",
};

const configKeyOf = (setting: string): string => CONTROL_SETTING_CONFIG_KEYS[setting] ?? setting;

/**
 * `ControlHalt` of a `ControlPlaneHaltedError` (recognised by shape, as the API recognises control errors by name):
 * a settings mismatch (its cause has `differences` and `explain`) is told with this daemon's config keys.
 */
export function controlHaltOf(e: Error & { index?: unknown; cause?: unknown }): ControlHalt {
  const index = typeof e.index === "number" ? e.index : 0;
  const cause = e.cause as { differences?: readonly { setting: string }[]; explain?: (name: (s: string) => string) => string } | undefined;
  if (cause !== undefined && Array.isArray(cause.differences) && typeof cause.explain === "function") {
    return {
      index,
      message: `control plane halted at index ${index}: ${cause.explain(configKeyOf)}`,
      settings: cause.differences.map((d) => ({ setting: d.setting, configKey: configKeyOf(d.setting) })),
    };
  }
  return { index, message: e.message, settings: [] };
}

/** The error names of governed.md §2.2's table, recognised by name so the API maps them to statuses. */
export const CONTROL_ERRORS = {
  outcomeUnknown: "OutcomeUnknownError",
  /** Nothing was proposed (a claims take whose time ran out before it was): definitely not applied. */
  notProposed: "ProposalAbortedError",
  incarnationReused: "IncarnationReusedError",
  halted: "ControlPlaneHaltedError",
  shutdown: "NodeShutdownError",
} as const;
