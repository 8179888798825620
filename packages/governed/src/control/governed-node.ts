/**
 * `heddleGoverned` and `GovernedHeddleNode` (governed.md §2): a data-plane `HeddleNode` (node.md §15: `heddleStatic`
 * with an empty supply and topology) plus the control plane — every control verb is one entry of the dedicated Raft
 * log, decided by `ControlState` from the committed prefix and flowing into the data plane through the node's
 * `controlSink()`. This file is the imperative shell: it allocates keys, proposes, retries, times out, runs the apply
 * loop and carries out the effects `ControlState.apply` returns, in one place. The data-plane methods never touch
 * the Raft node or await anything of the control plane (§3.11).
 */
import type { AttachmentId, AttachmentRecord, GroupId, ReplicaId } from "@heddle/ledger";
import { CLAIM_GUARANTEES } from "@heddle/claims";
import type { ClaimsOptions, ClaimsTable, TakeRequest } from "@heddle/claims";
import { heddleStatic, WatchCell } from "@heddle/node";
import type { ControlSink, HeddleConfig, HeddleNode, Seam, Watch } from "@heddle/node";
import { LeadershipLostError, NodeShutdownError, NotLeaderError, PayloadTooLargeError } from "../raft/errors.ts";
import type { ControlLog } from "./control-log.ts";
import type { Committed, LogIndex, ProposalKey } from "../raft/types.ts";
import { AUTO_CLIENT_PREFIX, amountArg, callOptionsArg, claimsStringArg, edgeArg, groupArg, recordArg, releaseTokenArg, replicaArg, takeArg } from "./call-arguments.ts";
import type { CallOptions, ReleaseOptions } from "./call-arguments.ts";
import { ControlState, IDEMPOTENCY_CLIENT_PREFIX } from "./control-state.ts";
import type { AppliedStep, ControlView } from "./control-state.ts";
import { digestOf, encodeEnvelope, MAX_CONTROL_ENTRY_BYTES } from "./envelope.ts";
import type { ControlCommand, ControlEnvelope } from "./envelope.ts";
import { ControlPlaneHaltedError, IncarnationReusedError, OutcomeUnknownError, shutdownError } from "./errors.ts";
import type { Amount, ControlOutcome } from "./outcome.ts";
import type { RosterView } from "./roster.ts";
import { retireWitness } from "./retire-witness.ts";

/** How long a control call or `sync()` waits, when the caller gives no `timeoutMs`. */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;
/**
 * Propose attempts per call (governed.md §3.10 "up to 5 attempts", §4.1 `proposeRetries`): every propose counts —
 * refused as retryable or left unanswered for {@link PROPOSE_ATTEMPT_TIMEOUT_MS} — whichever leader it went to; when
 * the last one fails the call rejects `OutcomeUnknownError` (retry with its key). Not counted: one that fails while
 * the log reports itself unreachable (`ControlLog.available` false), which reached no leader.
 */
export const PROPOSE_ATTEMPTS = 5;
/**
 * How long one propose attempt may go unanswered before it is abandoned and re-proposed under the same key (a
 * forward lost on the way is never answered, R-F4). The duplicate, if both commit, applies as a replay.
 */
export const PROPOSE_ATTEMPT_TIMEOUT_MS = 2_000;
/**
 * Shortest pause before re-proposing after a retryable refusal; longer while the leader that refused is still the one
 * known (up to the attempt timeout since that attempt began, see `#retryPause`).
 */
export const PROPOSE_RETRY_BACKOFF_MS = 25;
/**
 * Applied indexes between two `ControlState` snapshots (R-S4) by default. The control log is low-rate, so a
 * snapshot every 4 096 entries bounds both the replay at start and the log on disk without encoding the whole
 * state often; `snapshotEvery: 0` turns compaction off (governed.md §4.9's v1 stance).
 */
export const DEFAULT_SNAPSHOT_EVERY = 4096;

/** What `heddleGoverned` starts from (governed.md §2.1). */
export interface GovernedOptions {
  /** The node claims tags 1–3 of `muxSeam(seam)`; the Raft node uses tag 4 of the same seam. */
  readonly seam: Seam;
  readonly self: ReplicaId;
  readonly root: GroupId;
  /** Time, randomness and the store come from here; the Raft node must run on the same `config.timers`. */
  readonly config: HeddleConfig;
  /**
   * Required, dedicated to this package's log (G2): a `RaftNode`, or any other `ControlLog` (e.g. `etcdControlLog`).
   * Its id must equal `self` (G1).
   */
  readonly raft: ControlLog;
  /** Unique per process start (e.g. `crypto.randomUUID()`); never from a seeded PRNG in production. */
  readonly incarnation: string;
  /**
   * The replicated claims table's options: identical on every peer, unchanged for the life of the log. Fixed in the
   * log with `root` and `idempotencyWindow` (`ControlSettings`): a peer whose values differ halts instead of applying.
   */
  readonly claims?: ClaimsOptions;
  /**
   * Extension: applied indexes between `ControlState` snapshots published to Raft (R-S4), after which Raft discards
   * the log prefix; `0` never compacts. Default {@link DEFAULT_SNAPSHOT_EVERY}.
   */
  readonly snapshotEvery?: number;
  /**
   * Extension: applied indexes an `idem:` client's outcome is remembered for (`ControlStateOptions`); default
   * `DEFAULT_IDEMPOTENCY_WINDOW` (10 000). It decides outcomes, so it MUST be equal on every peer of the log, like `claims`.
   */
  readonly idempotencyWindow?: number;
}

/** Retires proposed with less than the full witness (`GovernedHeddleNode.retireWitnessCounts`). */
export interface RetireWitnessCounts {
  /** With the edge's slice but not the mints it needs to balance alone (they were over the budget). */
  readonly sliceOnly: number;
  /** With no witness: the slice alone was over the budget. */
  readonly omitted: number;
  /**
   * With the slice and its holders' mints, which still do not balance alone — a holder was funded by a transfer
   * (§3.6 joins only the slice's holders' mints, not the payer's). A peer that applies the log has those mints.
   */
  readonly unbalanced: number;
}

/** What `revoke` answers in v1: it reclaims nothing, always (governed.md §3.12). */
export type RevocationOutcome = { readonly kind: "notShipped" };

/** The fencing/revocation seam (governed.md §3.12): interface defined, behaviour not shipped. */
export interface RevocationSeam {
  revoke(holder: ReplicaId, at: GroupId): Promise<RevocationOutcome>;
}

/** The claims family (G2, claims.md §2): each call is one log entry; the leader stamps `now`. */
export interface GovernedClaims {
  /** Which of the three claim modes this is, and the guarantee it gives, in the words the daemon and CLI use. */
  readonly mode: "granted";
  readonly guarantee: string;
  take(request: TakeRequest, opts?: CallOptions): Promise<ControlOutcome>;
  /** With `opts.token`, ends only the grant stamped with that token (claims.md §2 `release`). */
  release(holder: string, key: string, opts?: ReleaseOptions): Promise<ControlOutcome>;
  releaseAll(holder: string, opts?: CallOptions): Promise<ControlOutcome>;
  releaseScope(scope: string, opts?: CallOptions): Promise<ControlOutcome>;
  renew(holder: string, key: string, opts?: CallOptions): Promise<ControlOutcome>;
  /** Reads of the local applied prefix; leases are judged at `claimsNow` unless a `now` is passed. */
  view(): Pick<ClaimsTable, "owner" | "holders" | "free" | "open" | "availability" | "checkFence" | "wouldRefuse">;
}

/** One governed peer (governed.md §2.2). */
export interface GovernedHeddleNode {
  readonly self: ReplicaId;

  // ── data plane: node.md semantics, delegated unchanged except for the writer gate (§3.9) ──
  readonly ledger: HeddleNode["ledger"];
  /** Refused with `{ kind: 'not-writable' }` while `!isWritable`. */
  reserve: HeddleNode["reserve"];
  complete: HeddleNode["complete"];
  cancel: HeddleNode["cancel"];
  advertise: HeddleNode["advertise"];
  advertiseMany: HeddleNode["advertiseMany"];
  /** The folded live demand for an edge as this node sees it (node.md §6): a read, ungated. */
  demand: HeddleNode["demand"];
  /** Grants nothing while `!isWritable`. */
  schedule: HeddleNode["schedule"];
  readonly partitionEvents: HeddleNode["partitionEvents"];
  boundMetrics: HeddleNode["boundMetrics"];
  readonly isWritable: boolean;

  // ── control plane: each call is one log entry; resolves after THIS node has applied it ──
  mint(holder: ReplicaId, amount: Amount, opts?: CallOptions): Promise<ControlOutcome>;
  prepare(record: AttachmentRecord, opts?: CallOptions): Promise<ControlOutcome>;
  activate(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome>;
  close(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome>;
  retire(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome>;
  enroll(replica: ReplicaId, opts?: CallOptions): Promise<ControlOutcome>;
  /** Always departs `self`; no argument by design. */
  depart(opts?: CallOptions): Promise<ControlOutcome>;

  readonly claims: GovernedClaims;

  // ── reads ──
  enrolledReplicas(): ReadonlySet<ReplicaId>;
  roster(): RosterView;
  /** The local applied prefix, not linearizable. */
  controlView(): ControlView;
  /**
   * Extension: the retires this process proposed with a trimmed witness because the witness it needs was over
   * `MAX_RETIRE_WITNESS_BYTES` (§3.6; see `retireWitness`). Each still retires the edge.
   */
  retireWitnessCounts(): RetireWitnessCounts;
  /**
   * A linearizable view: ReadIndex on the leader, a barrier entry elsewhere (§3.10). With `leaderOnly` (an
   * extension), never a barrier: off the leader, or when leadership is lost before the read is confirmed, it
   * rejects `NotLeaderError` — for a caller that reads on the leader to avoid a commit and has a cheaper way out.
   */
  sync(opts?: { timeoutMs?: number; signal?: AbortSignal; leaderOnly?: boolean }): Promise<ControlView>;

  readonly revocation: RevocationSeam;
  /** Rejects every pending call with `NodeShutdownError`, closes the Raft node and the data-plane node. */
  shutdown(): Promise<void>;

  // ── extensions beyond governed.md §2.2: read-only pass-throughs of the data-plane node ──
  /** This node's open reservations (node.md's extension), e.g. to cancel what a killed incarnation left open. */
  openReservations: HeddleNode["openReservations"];
  openReservationCount: HeddleNode["openReservationCount"];
  /** Units earmarked at a leaf by this node's open reservations (node.md §8). */
  earmarked: HeddleNode["earmarked"];
  /** What this node could reserve at a leaf now: its holdings there less its earmarks (node.md §8). */
  available: HeddleNode["available"];
  /** Peers the data plane's liveness currently considers unreachable (node.md §10). */
  readonly unreachable: HeddleNode["unreachable"];
  /** The data-plane node's counters (node.md §14). */
  metrics: HeddleNode["metrics"];
  /**
   * The error the control plane halted with (`null` while it runs): a malformed entry, a broken invariant, or this
   * peer's settings differing from those its log fixed (cause `SettingsMismatchError`, naming each setting). For
   * status pages and logs; every control call rejects with it too.
   */
  readonly controlHalted: Watch<ControlPlaneHaltedError | null>;
  /** Keeper and advisory claims of the data-plane node (claims.md §3–4, gossiped; no log entry). */
  readonly gossipClaims: HeddleNode["gossipClaims"];
  /**
   * The data-plane node's events (node.md's extension): `persist-failed` when its ledger store could not commit
   * (the node has failed closed), peers joining and leaving, ledger conflicts — for logs and alerts.
   */
  readonly events: HeddleNode["events"];
}

/** A caller waiting for its key to be applied here. */
interface Waiter {
  readonly key: ProposalKey;
  /** The command this call proposed under `key`: another command applied under the same key is not its answer. */
  readonly cmd: ControlCommand;
  /** `digestOf(cmd)`: an applied entry under `key` answers this call only when its command has this digest. */
  readonly digest: string;
  /**
   * The index this call's propose committed at, once it answered. An `open` waiter is answered only there, never by
   * the replay of an older entry under its key — and only once this process has applied a read index taken after
   * its boot (§3.9 b): the leader's dedup cache (R-D4) may answer a retried key with a pre-boot entry's index.
   */
  own: LogIndex | null;
  /**
   * An `open` waiter's answers at indexes applied before it could be answered (`own` still null, or the boot read not
   * yet applied): the one at `own` is its answer — the step's own outcome, which the record may no longer give once
   * the window has moved on.
   */
  readonly early: Map<LogIndex, ControlOutcome>;
  resolve(o: ControlOutcome): void;
  reject(e: Error): void;
  /** This process's own `enroll(self)` / `depart()`: opens / closes the writer gate when it applies. */
  readonly gate: "open" | "close" | null;
}

const keyId = (k: ProposalKey): string => `${k.client}\u0000${k.seq}`;

/**
 * The reason a settled call aborts its own propose attempt and apply wait with. One shared value: `abort()` without
 * a reason builds a `DOMException` (stack capture included) on every call, which the profile of a daemon at 64
 * clients put at a tenth of the leader's CPU, for an error nobody reads.
 */
const CALL_SETTLED = new Error("the control call settled");

function validateOptions(o: GovernedOptions): void {
  if (typeof o !== "object" || o === null) throw new TypeError("heddleGoverned needs an options object");
  const raft = o.raft as Partial<ControlLog> | undefined;
  if (typeof raft !== "object" || raft === null || typeof raft.propose !== "function" || typeof raft.committedFrom !== "function") {
    throw new TypeError("raft: a RaftNode (or another ControlLog) is required (governed mode has no nullable-consensus variant)");
  }
  if (raft.id !== o.self) throw new RangeError(`raft: its id ${JSON.stringify(raft.id)} must equal self ${JSON.stringify(o.self)} (G1)`);
  if (typeof o.incarnation !== "string") throw new TypeError("incarnation: must be a string, unique per process start");
  if (o.incarnation.length === 0) throw new RangeError("incarnation: must not be empty");
  if (o.snapshotEvery !== undefined && (!Number.isSafeInteger(o.snapshotEvery) || o.snapshotEvery < 0)) {
    throw new RangeError("snapshotEvery: must be a safe integer ≥ 0 (0 = never)");
  }
}

/**
 * Starts a governed peer (governed.md §2.1): validates the options, builds the data-plane node (`heddleStatic` with an
 * empty supply and topology: the same `EMPTY` genesis on every peer, G3) and starts the apply loop
 * (`raft.committedFrom(1)`) in the background. Returns at once. Call `enroll(self)` on every start before writing.
 */
export function heddleGoverned(opts: GovernedOptions): GovernedHeddleNode {
  validateOptions(opts);
  // RangeError on a bad claims option or window
  const state = new ControlState({ root: opts.root, claims: opts.claims, ...(opts.idempotencyWindow === undefined ? {} : { idempotencyWindow: opts.idempotencyWindow }) });
  const node = heddleStatic({ seam: opts.seam, self: opts.self, root: opts.root, supply: new Map(), topology: [], config: opts.config });
  return new GovernedNode(opts, state, node);
}

class GovernedNode implements GovernedHeddleNode {
  readonly self: ReplicaId;
  readonly claims: GovernedClaims;
  readonly revocation: RevocationSeam;
  readonly #opts: GovernedOptions;
  readonly #node: HeddleNode;
  readonly #sink: ControlSink;
  readonly #raft: ControlLog;
  readonly #state: ControlState;
  readonly #autoClient: string;
  readonly #snapshotEvery: number;
  #nextSeq = 1;
  /** Auto seqs whose calls are pending or ended with an unknown outcome (they hold the ackFloor down). */
  readonly #openSeqs = new Set<number>();
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #indexWaiters = new Set<{ index: LogIndex; resolve(): void; reject(e: Error): void }>();
  #writable = false;
  #shut = false;
  #stopping: Promise<void> | null = null;
  #stopped: Error | null = null;
  /**
   * The boot read (§3.9 b): a linearizable read index taken after this process started, and applied here. Started by
   * the first `enroll(self)`; `#bootApplied` once applied (every entry committed before the boot is then applied);
   * cleared when it fails, so the next `enroll(self)` takes another.
   */
  #bootRead: Promise<void> | null = null;
  #bootApplied = false;
  readonly #witnessCounts = { sliceOnly: 0, omitted: 0, unbalanced: 0 };
  /** An applied entry under this process's auto client id with a seq it never issued (R-D3). */
  #tripped = false;
  #lastSnapshot = 0;
  readonly #halted = new WatchCell<ControlPlaneHaltedError | null>(null);

  constructor(opts: GovernedOptions, state: ControlState, node: HeddleNode) {
    this.#opts = opts;
    this.self = opts.self;
    this.#node = node;
    this.#sink = node.controlSink();
    this.#raft = opts.raft;
    this.#state = state;
    this.#autoClient = `${AUTO_CLIENT_PREFIX}${opts.self}:${opts.incarnation}`;
    this.#snapshotEvery = opts.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
    this.claims = this.#claimsFamily(opts.claims ?? {});
    this.revocation = {
      // arguments are checked synchronously, like every verb's (§2.2): a bad one throws, it does not reject
      revoke: (holder: ReplicaId, at: GroupId): Promise<{ kind: "notShipped" }> => {
        replicaArg(holder, "revoke: holder");
        groupArg(at, "revoke: at");
        return Promise.resolve({ kind: "notShipped" });
      },
    };
    void this.#applyLoop();
  }

  // ============================================================================================ data plane (§3.9, §3.11)

  get ledger(): HeddleNode["ledger"] {
    return this.#node.ledger;
  }

  get partitionEvents(): HeddleNode["partitionEvents"] {
    return this.#node.partitionEvents;
  }

  get events(): HeddleNode["events"] {
    return this.#node.events;
  }

  get controlHalted(): Watch<ControlPlaneHaltedError | null> {
    return this.#halted;
  }

  /** Own enroll applied and not departed — and the log reachable, when it reports that (`ControlLog.available`). */
  get isWritable(): boolean {
    return this.#writable && (this.#raft.available?.get() ?? true);
  }

  reserve: HeddleNode["reserve"] = (leaf, maximumCost, opts) => {
    if (typeof leaf !== "string") throw new TypeError("reserve: leaf must be a GroupId");
    if (typeof maximumCost !== "bigint") throw new TypeError("reserve: maximumCost must be a bigint");
    if (!this.isWritable) return { ok: false, refusal: { kind: "not-writable" } };
    return this.#node.reserve(leaf, maximumCost, opts);
  };

  complete: HeddleNode["complete"] = (id, actualCost) => this.#node.complete(id, actualCost);
  cancel: HeddleNode["cancel"] = (id) => this.#node.cancel(id);
  advertise: HeddleNode["advertise"] = (edge, demand) => this.#node.advertise(edge, demand);
  advertiseMany: HeddleNode["advertiseMany"] = (changes) => this.#node.advertiseMany(changes);
  demand: HeddleNode["demand"] = (edge) => this.#node.demand(edge);
  boundMetrics: HeddleNode["boundMetrics"] = (parent) => this.#node.boundMetrics(parent);
  openReservations: HeddleNode["openReservations"] = () => this.#node.openReservations();
  openReservationCount: HeddleNode["openReservationCount"] = () => this.#node.openReservationCount();
  earmarked: HeddleNode["earmarked"] = (leaf) => this.#node.earmarked(leaf);
  available: HeddleNode["available"] = (leaf) => this.#node.available(leaf);
  metrics: HeddleNode["metrics"] = () => this.#node.metrics();

  get unreachable(): HeddleNode["unreachable"] {
    return this.#node.unreachable;
  }

  get gossipClaims(): HeddleNode["gossipClaims"] {
    return this.#node.gossipClaims;
  }

  schedule: HeddleNode["schedule"] = (parent) => {
    if (typeof parent !== "string") throw new TypeError("schedule: parent must be a GroupId");
    if (!this.isWritable) return { grants: [], seated: [], clamped: [] };
    return this.#node.schedule(parent);
  };

  // ============================================================================================ control verbs

  mint(holder: ReplicaId, amount: Amount, opts?: CallOptions): Promise<ControlOutcome> {
    const cmd: ControlCommand = { op: "mint", holder: replicaArg(holder, "mint: holder"), amount: amountArg(amount) };
    return this.#call(cmd, this.#options(opts, "mint"), null);
  }

  prepare(record: AttachmentRecord, opts?: CallOptions): Promise<ControlOutcome> {
    const cmd: ControlCommand = { op: "prepare", record: recordArg(record) };
    return this.#call(cmd, this.#options(opts, "prepare"), null);
  }

  activate(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome> {
    const cmd: ControlCommand = { op: "activate", edge: edgeArg(edge, "activate: edge") };
    return this.#call(cmd, this.#options(opts, "activate"), null);
  }

  close(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome> {
    const cmd: ControlCommand = { op: "close", edge: edgeArg(edge, "close: edge") };
    return this.#call(cmd, this.#options(opts, "close"), null);
  }

  /**
   * Local drain pre-check first (§3.7): when any replica's position on `edge` is non-zero in this node's view, the
   * act is refused without proposing (`notDrained`, `index: null`). Otherwise the proposal carries the retire
   * witness (§3.6): this node's slice of the edge joined with the mints of the replicas it names that it needs to
   * balance alone, within `MAX_RETIRE_WITNESS_BYTES` — past that the slice alone, or none (`retireWitnessCounts`).
   */
  retire(edge: AttachmentId, opts?: CallOptions): Promise<ControlOutcome> {
    const e = edgeArg(edge, "retire: edge");
    const o = this.#options(opts, "retire");
    const view = this.#node.ledger.get();
    const positions = new Map<ReplicaId, Amount>();
    for (const r of view.replicas()) {
      const p = view.edgePosition(e, r);
      if (p !== 0n) positions.set(r, p);
    }
    if (positions.size > 0) {
      const outstanding = view.edge(e)?.outstanding ?? 0n;
      return Promise.resolve({ kind: "conflict", index: null, key: null, conflict: { reason: "notDrained", edge: e, outstanding, positions } });
    }
    const witness = retireWitness(view, e, this.#opts.root, this.#state.minted());
    if (witness.kind === "slice") this.#witnessCounts.sliceOnly++;
    if (witness.kind === "none") this.#witnessCounts.omitted++;
    if (witness.kind === "unbalanced") this.#witnessCounts.unbalanced++;
    const cmd: ControlCommand = witness.text === null ? { op: "retire", edge: e } : { op: "retire", edge: e, witness: witness.text };
    return this.#call(cmd, o, null);
  }

  enroll(replica: ReplicaId, opts?: CallOptions): Promise<ControlOutcome> {
    const r = replicaArg(replica, "enroll: replica");
    return this.#call({ op: "enroll", replica: r }, this.#options(opts, "enroll"), r === this.self ? "open" : null);
  }

  depart(opts?: CallOptions): Promise<ControlOutcome> {
    return this.#call({ op: "depart", replica: this.self }, this.#options(opts, "depart"), "close");
  }

  /** Checks a verb's options; a retry under this node's own auto client may only name a seq it issued. */
  #options(opts: unknown, verb: string): CallOptions {
    const o = callOptionsArg(opts, verb, this.#autoClient);
    if (o.key?.client === this.#autoClient && o.key.seq >= this.#nextSeq) {
      throw new RangeError(`${verb}: key ${JSON.stringify(o.key)} names a seq this process never issued under its own auto client`);
    }
    return o;
  }

  #claimsFamily(options: ClaimsOptions): GovernedClaims {
    const state = this.#state;
    return {
      mode: "granted",
      guarantee: CLAIM_GUARANTEES.granted,
      take: (request, opts) => this.#call({ op: "claims.take", request: takeArg(request, options) }, this.#options(opts, "claims.take"), null),
      release: (holder, key, opts) => {
        const cmd = { op: "claims.release" as const, holder: claimsStringArg(holder, "claims.release: holder"), key: claimsStringArg(key, "claims.release: key") };
        if (typeof opts !== "object" || opts === null) return this.#call(cmd, this.#options(opts, "claims.release"), null);
        // the token is part of the act (it is in the entry and its digest); the rest are the call's options
        const { token, ...call } = opts;
        const fenced = releaseTokenArg(token);
        return this.#call(fenced === undefined ? cmd : { ...cmd, token: fenced }, this.#options(call, "claims.release"), null);
      },
      releaseAll: (holder, opts) => this.#call({ op: "claims.releaseAll", holder: claimsStringArg(holder, "claims.releaseAll: holder") }, this.#options(opts, "claims.releaseAll"), null),
      releaseScope: (scope, opts) => this.#call({ op: "claims.releaseScope", scope: claimsStringArg(scope, "claims.releaseScope: scope") }, this.#options(opts, "claims.releaseScope"), null),
      renew: (holder, key, opts) =>
        this.#call(
          { op: "claims.renew", holder: claimsStringArg(holder, "claims.renew: holder"), key: claimsStringArg(key, "claims.renew: key") },
          this.#options(opts, "claims.renew"),
          null,
        ),
      view: () => ({
        owner: (key, now) => state.claims.owner(key, now),
        holders: (key, now) => state.claims.holders(key, now),
        free: (now) => state.claims.free(now),
        open: (now) => state.claims.open(now),
        availability: (keys, now) => state.claims.availability(keys, now),
        checkFence: (key, token, now) => state.claims.checkFence(key, token, now),
        wouldRefuse: (request, now) => state.claims.wouldRefuse(request, now),
      }),
    };
  }

  /** The lowest seq of this process's auto-keyed acts still open (`#nextSeq` when none is): their ackFloor. */
  #lowestOpenSeq(): number {
    // a loop, not `Math.min(...set)`: that spreads every open seq into an array on every call (64 calls in flight
    // under load — allocation the leader's GC then pays for)
    let low = this.#nextSeq;
    for (const seq of this.#openSeqs) if (seq < low) low = seq;
    return low;
  }

  /**
   * The envelope of one act: version 2, carrying this peer's settings, while this member has not applied an entry
   * (or restored a snapshot) that fixed the log's — so the first entry of a log, whoever proposed it, fixes them.
   * Once they are fixed here they equal this member's own (it halts otherwise), and every entry it proposes is
   * ordered after the fixing one, so it proposes version 1: about 170 bytes less to write, send and decode per entry
   * (a claims take: 456 → 282 bytes). One call reuses its bytes for every attempt; a retry in a later call may carry
   * the other version, which the leader's dedup cache (R-D4, identical bytes only) then does not coalesce: that
   * retry is appended and applies as a replay of the recorded outcome, as any retry the cache misses does.
   */
  #envelope(key: ProposalKey | null, ackFloor: number, cmd: ControlCommand): ControlEnvelope {
    if (this.#state.fixedSettings !== null) return { v: 1, key, ackFloor, proposer: this.self, cmd };
    return { v: 2, key, ackFloor, proposer: this.self, cmd, settings: this.#state.settings };
  }

  /**
   * One control act: allocate (or take) the key, propose its entry, re-propose with the same key on a retryable
   * refusal (up to {@link PROPOSE_ATTEMPTS}), and resolve once this node has applied it. Timeout and abort reject
   * `OutcomeUnknownError {key}` without withdrawing the proposal.
   */
  #call(cmd: ControlCommand, o: CallOptions, gate: "open" | "close" | null): Promise<ControlOutcome> {
    if (this.#shut) return Promise.reject(new NodeShutdownError("the governed node was shut down"));
    if (this.#stopped !== null) return Promise.reject(this.#stopped);
    let key: ProposalKey;
    let ackFloor: number;
    let auto = false;
    if (o.key !== undefined && o.key.client === this.#autoClient) {
      // a retry of this process's own auto-keyed act: it stays open until it resolves
      key = { client: o.key.client, seq: o.key.seq };
      this.#openSeqs.add(key.seq);
      ackFloor = this.#lowestOpenSeq();
    } else if (o.key !== undefined) {
      key = { client: o.key.client, seq: o.key.seq };
      ackFloor = o.ackFloor ?? 0;
    } else {
      const tripped = this.#incarnationReused();
      if (tripped !== null) return Promise.reject(tripped);
      key = { client: this.#autoClient, seq: this.#nextSeq++ };
      this.#openSeqs.add(key.seq);
      auto = true;
      ackFloor = this.#lowestOpenSeq();
    }
    const bytes = encodeEnvelope(this.#envelope(key, ackFloor, cmd));
    if (bytes.length > MAX_CONTROL_ENTRY_BYTES) {
      if (auto) this.#openSeqs.delete(key.seq);
      throw new RangeError(`${cmd.op}: the entry would be ${bytes.length} bytes, above MAX_CONTROL_ENTRY_BYTES (${MAX_CONTROL_ENTRY_BYTES})`);
    }
    const timers = this.#opts.config.timers;
    return new Promise<ControlOutcome>((resolve, reject) => {
      let settled = false;
      const abort = new AbortController();
      const waiters = this.#waiters.get(keyId(key)) ?? new Set<Waiter>();
      this.#waiters.set(keyId(key), waiters);
      const finish = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        waiters.delete(w);
        if (waiters.size === 0 && this.#waiters.get(keyId(key)) === waiters) this.#waiters.delete(keyId(key));
        timers.clear(timer);
        o.signal?.removeEventListener("abort", onAbort);
        abort.abort(CALL_SETTLED);
        fn();
      };
      const w: Waiter = {
        key,
        cmd,
        digest: digestOf(cmd),
        own: null,
        early: new Map(),
        gate,
        resolve: (outcome) =>
          finish(() => {
            if (key.client === this.#autoClient) this.#openSeqs.delete(key.seq);
            resolve(outcome);
          }),
        reject: (e) => finish(() => reject(e)),
      };
      waiters.add(w);
      const unknown = (why: string, cause?: unknown): void =>
        w.reject(new OutcomeUnknownError(`${cmd.op}: ${why}; the act may still commit — retry with { key: ${JSON.stringify(key)} } to apply it at most once`, key, { cause }));
      const onAbort = (): void => unknown("aborted");
      const timer = timers.set(() => unknown(`no outcome within ${o.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS} ms`), o.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS);
      if (o.signal?.aborted) return onAbort();
      o.signal?.addEventListener("abort", onAbort, { once: true });
      // §3.9(b): this process's own enroll opens the gate only once it has applied a read index taken after its
      // boot; taken alongside the propose, so on the leader it costs one ReadIndex round and no extra wait
      const boot = gate === "open" ? this.#bootFloor(o.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS) : null;
      boot?.catch(() => {}); // awaited below once the propose answered; a call settled before that ignores it
      // a keyed retry proposes again even when its outcome is already applied here: the duplicate entry is
      // ordered after this call began and applies as a replay of the recorded outcome (§3.3 step 5)
      void (async () => {
        // Every failed propose is an attempt (§3.10: up to PROPOSE_ATTEMPTS), whichever leader it went to, so a
        // member cut off in a minority ends its call as unknown once they are spent instead of re-proposing until
        // its timeout — except one made while the log reports it cannot reach its consensus service at all
        // (`available` false, etcd): that reached no leader, and the call rides the outage out until its timeout.
        // `landed`: an earlier attempt may have appended the entry (refused as retryable, or never answered).
        let landed = false;
        let attempts = 0;
        while (!settled) {
          const target = this.#raft.leader.get();
          const began = timers.now();
          // one attempt: a forward lost on the way (or its answer) never answers, so an attempt is bounded too
          const attemptAbort = new AbortController();
          const stop = (): void => attemptAbort.abort(CALL_SETTLED);
          abort.signal.addEventListener("abort", stop, { once: true });
          const attemptTimer = timers.set(() => attemptAbort.abort(), PROPOSE_ATTEMPT_TIMEOUT_MS);
          let committedAt: LogIndex;
          try {
            committedAt = (await this.#raft.propose(bytes, key, attemptAbort.signal)).index;
          } catch (e) {
            if (settled) return;
            if (this.#shut) return w.reject(shutdownError(key));
            const unanswered = attemptAbort.signal.aborted && !abort.signal.aborted;
            // etcd refusing the entry as too large answers every attempt alike, so nothing was appended (its other
            // refusals may follow an attempt that timed out and landed: those stay unknown, with etcd's words as the cause)
            const tooLarge = e instanceof PayloadTooLargeError || ((e as Error).name === "EtcdRefusedError" && (e as { reason?: string }).reason === "too-large");
            if (tooLarge && !landed) {
              // refused before anything was appended (R-R7), and the bytes never change: a definite refusal, so the
              // seq this call allocated no longer holds the ackFloor down
              if (auto) this.#openSeqs.delete(key.seq);
              return w.reject(
                new PayloadTooLargeError(
                  e instanceof PayloadTooLargeError
                    ? `${cmd.op}: the ${bytes.length}-byte entry cannot fit one frame of the control log's transport; nothing was appended — make the command smaller, or raise the Raft node's message size limit`
                    : `${cmd.op}: the ${bytes.length}-byte entry is larger than the etcd cluster accepts; nothing was appended — make the command smaller, or run etcd with a larger --max-request-bytes (${(e as Error).message})`,
                  { cause: e },
                ),
              );
            }
            // refused before anything was sent, alike on every attempt: a malformed value under the etcd log's prefix
            // (it answers, but no member can append until an operator fixes it) or an argument (or clock) the log
            // refuses — a definite refusal, so the seq this call allocated no longer holds the ackFloor down
            if (!landed && (e instanceof RangeError || (e as Error).name === "EtcdLogCorruptError")) {
              if (auto) this.#openSeqs.delete(key.seq);
              return w.reject(e as Error);
            }
            if (!(unanswered || e instanceof LeadershipLostError || e instanceof NotLeaderError)) return unknown(`propose failed (${(e as Error).name}: ${(e as Error).message})`, e);
            landed = true;
            if (this.#raft.available?.get() !== false && ++attempts >= PROPOSE_ATTEMPTS) {
              return unknown(`all ${PROPOSE_ATTEMPTS} propose attempts were refused or went unanswered`, e);
            }
            if (!unanswered) await this.#retryPause(target, began, abort.signal);
            continue; // re-propose under the same key
          } finally {
            timers.clear(attemptTimer);
            abort.signal.removeEventListener("abort", stop);
          }
          // Committed at `committedAt`: an `open` waiter is answered there and nowhere else (§3.9 b) — and not
          // before the boot read is applied: a retry the leader coalesced (R-D4) with an entry committed before
          // this boot gets that entry's index, and the entries after it (a depart of this replica, say) must be
          // applied before the gate may open.
          w.own = committedAt;
          if (boot !== null) {
            try {
              await untilAborted(boot, abort.signal);
            } catch (e) {
              if (settled) return;
              return unknown(`committed at ${committedAt}, but no read index confirmed that this node has applied every entry committed before its boot, so the writer gate stays closed (${(e as Error).message})`, e);
            }
            if (settled) return;
          }
          const early = w.early.get(committedAt);
          if (early !== undefined) return this.#answer(w, early);
          // Usually the apply step of that entry resolves the waiter. But the leader's dedup cache
          // (R-D4) answers a retry whose key it remembers with the index of the entry that already carries it, and
          // when this node applied that entry before the retry began, no later step names the key again: once the
          // index is applied here, the outcome recorded for the key is the answer.
          try {
            await this.#appliedThrough(committedAt, abort.signal, CALL_SETTLED);
          } catch {
            return; // settled meanwhile (timeout, abort), or the loop halted / shut down: the waiter was told
          }
          if (!settled) this.#answerFromRecord(key, cmd, w.digest, committedAt);
          return;
        }
      })();
    });
  }

  /**
   * Resolves once this process has applied a linearizable read index taken after its boot (§3.9 b), starting that
   * read (a `sync()`: ReadIndex on the leader, a barrier entry elsewhere) the first time; one read serves every later
   * `enroll(self)`. A failed read is forgotten, so the next call starts another.
   */
  #bootFloor(timeoutMs: number): Promise<void> {
    if (this.#bootApplied) return Promise.resolve();
    this.#bootRead ??= this.#sync({ timeoutMs }).then(
      () => {
        this.#bootApplied = true;
      },
      (e: unknown) => {
        this.#bootRead = null;
        throw e;
      },
    );
    return this.#bootRead;
  }

  /**
   * The pause before re-proposing after a retryable refusal of an attempt that began at `began` and went to
   * `refused` (the leader known then): at least {@link PROPOSE_RETRY_BACKOFF_MS}; then at once if another leader is
   * known (or the log just became reachable again), else until one is or the attempt's
   * {@link PROPOSE_ATTEMPT_TIMEOUT_MS} has passed — so bounces off a leader that keeps refusing (or a stale one) are
   * spaced like unanswered attempts and do not spend the call's attempts in a few milliseconds. Ends early on abort.
   */
  #retryPause(refused: string | null, began: number, signal: AbortSignal): Promise<void> {
    const timers = this.#opts.config.timers;
    const moved = (): boolean => {
      const l = this.#raft.leader.get();
      return l !== null && l !== refused;
    };
    return new Promise<void>((resolve) => {
      const offs: (() => void)[] = [];
      let timer = timers.set(() => {
        if (moved()) return done();
        timer = timers.set(done, Math.max(0, began + PROPOSE_ATTEMPT_TIMEOUT_MS - timers.now()));
        offs.push(this.#raft.leader.subscribe(() => (moved() ? done() : undefined)));
        if (this.#raft.available !== undefined) offs.push(this.#raft.available.subscribe((up) => (up ? done() : undefined)));
      }, PROPOSE_RETRY_BACKOFF_MS);
      function done(): void {
        timers.clear(timer);
        for (const off of offs.splice(0)) off();
        signal.removeEventListener("abort", done);
        resolve();
      }
      if (signal.aborted) return done();
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * Answers the waiters of `key` for `cmd` (digest `digest`) from the session table once the entry at `index`, which
   * carries `key` and `cmd`, is applied here — a retry coalesced by the leader's dedup cache (R-D4), or one whose own
   * entry applied before its propose answered: exactly what an appended duplicate would have been answered — the
   * recorded outcome, `stale` below the client's floor, `keyReuse` if the key was recorded for another command.
   * Nothing recorded cannot follow an applied entry carrying the key; if it did, the waiter is left to its timeout
   * rather than guessed at.
   */
  #answerFromRecord(key: ProposalKey, cmd: ControlCommand, digest: string, index: LogIndex): void {
    const o = this.#state.replayOf(key, cmd, index);
    if (o !== null) return this.#resolve(key, o, index, digest);
    // an idem: outcome forgotten past its window while the leader's cache still pointed the retry at its entry
    // (a Raft node built without `coalesce` excluding idem: keys): say so now rather than at the caller's timeout
    if (key.client.startsWith(IDEMPOTENCY_CLIENT_PREFIX) && index <= this.#state.keyRetention().forgottenThrough) {
      const ws = this.#waiters.get(keyId(key));
      const why = `${cmd.op}: the log leader coalesced this retry with the entry at ${index}, whose outcome is older than the idempotency window (${this.#state.keyRetention().entries} entries) and forgotten; build the Raft node with coalesce excluding "${IDEMPOTENCY_CLIENT_PREFIX}" keys`;
      for (const w of [...(ws ?? [])]) if (w.digest === digest) w.reject(new OutcomeUnknownError(why, key));
    }
  }

  /** The incarnation tripwire (§3.10, R-D3): this process's auto client id holds a seq it never issued. */
  #incarnationReused(): IncarnationReusedError | null {
    const s = this.#state.sessionOf(this.#autoClient);
    if (s !== undefined && (s.highestSeq >= this.#nextSeq || s.floor > this.#nextSeq)) this.#tripped = true;
    if (!this.#tripped) return null;
    return new IncarnationReusedError(
      `incarnation ${JSON.stringify(this.#opts.incarnation)} of ${this.self} was used before: the applied log already holds acts of ${this.#autoClient}; start with a fresh incarnation (crypto.randomUUID())`,
    );
  }

  // ============================================================================================ reads

  enrolledReplicas(): ReadonlySet<ReplicaId> {
    return this.#state.roster.enrolled;
  }

  roster(): RosterView {
    return this.#state.roster;
  }

  controlView(): ControlView {
    return this.#state;
  }

  retireWitnessCounts(): RetireWitnessCounts {
    return { ...this.#witnessCounts };
  }

  /**
   * A linearizable view (§3.10): on the leader, `readIndex` then wait until applied; elsewhere (or when leadership
   * moves meanwhile) a key-less barrier entry, waiting until it is applied here. A lost barrier is re-proposed.
   */
  sync(opts: { timeoutMs?: number; signal?: AbortSignal; leaderOnly?: boolean } = {}): Promise<ControlView> {
    const leaderOnly = (opts as { leaderOnly?: unknown } | null)?.leaderOnly;
    if (leaderOnly !== undefined && typeof leaderOnly !== "boolean") throw new TypeError("sync: leaderOnly must be a boolean");
    return this.#sync(this.#options(opts, "sync"), leaderOnly === true);
  }

  async #sync(o: CallOptions, leaderOnly = false): Promise<ControlView> {
    if (this.#shut) throw new NodeShutdownError("the governed node was shut down");
    if (this.#stopped !== null) throw this.#stopped;
    const timers = this.#opts.config.timers;
    const abort = new AbortController();
    const timeoutMs = o.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const timer = timers.set(() => abort.abort(), timeoutMs);
    const onAbort = (): void => abort.abort();
    o.signal?.addEventListener("abort", onAbort, { once: true });
    if (o.signal?.aborted) abort.abort();
    const expired = (): never => {
      throw new OutcomeUnknownError(`sync: no linearizable view within ${timeoutMs} ms (or aborted)`, null);
    };
    // built only off the leader: on the leader (every refusal at a read) a sync is a ReadIndex round, no entry
    let barrier: Uint8Array | null = null;
    try {
      for (let attempt = 1; ; attempt++) {
        if (abort.signal.aborted) expired();
        let index: LogIndex;
        try {
          // a ReadIndex round takes no signal, and one a partitioned leader cannot confirm ends only when
          // check-quorum steps it down: the caller's deadline must end the wait
          if (this.#raft.role.get() === "leader") index = await untilAborted(this.#raft.readIndex(), abort.signal);
          else if (leaderOnly) throw new NotLeaderError("sync: this node is not the Raft leader (leaderOnly: no barrier appended)");
          else {
            barrier ??= encodeEnvelope(this.#envelope(null, 0, { op: "barrier" }));
            index = (await this.#raft.propose(barrier, null, abort.signal)).index;
          }
        } catch (e) {
          if (abort.signal.aborted) expired();
          if (this.#shut) throw new NodeShutdownError("the governed node was shut down");
          if (!(e instanceof LeadershipLostError || e instanceof NotLeaderError)) throw new OutcomeUnknownError(`sync: ${(e as Error).message}`, null, { cause: e });
          if (leaderOnly) throw e instanceof NotLeaderError ? e : new NotLeaderError(`sync: leadership was lost before the read was confirmed (leaderOnly: no barrier appended)`, { cause: e });
          await new Promise<void>((r) => timers.set(r, PROPOSE_RETRY_BACKOFF_MS * Math.min(attempt, 8)));
          continue;
        }
        await this.#appliedThrough(index, abort.signal);
        return this.#state;
      }
    } finally {
      timers.clear(timer);
      o.signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Resolves once this node has applied `index`; rejects on abort (with `aborted`, when the caller ignores that
   * rejection and wants no error built for it), halt or shutdown.
   */
  #appliedThrough(index: LogIndex, signal: AbortSignal, aborted?: Error): Promise<void> {
    if (this.#state.appliedIndex >= index) return Promise.resolve();
    // an already aborted signal never fires again: the wait would stay registered until `index` applies
    if (signal.aborted) return Promise.reject(aborted ?? new OutcomeUnknownError("sync: aborted while waiting for the local apply", null));
    return new Promise<void>((resolve, reject) => {
      const entry = {
        index,
        resolve: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
        reject: (e: Error) => {
          signal.removeEventListener("abort", onAbort);
          reject(e);
        },
      };
      const onAbort = (): void => {
        this.#indexWaiters.delete(entry);
        reject(aborted ?? new OutcomeUnknownError("sync: aborted while waiting for the local apply", null));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#indexWaiters.add(entry);
    });
  }

  // ============================================================================================ apply loop (§3.3)

  async #applyLoop(): Promise<void> {
    try {
      for await (const item of this.#raft.committedFrom(this.#state.appliedIndex + 1)) {
        if (this.#shut) return;
        this.#step(item);
      }
      if (!this.#shut) this.#stop(new NodeShutdownError("the Raft node closed under the governed node"));
    } catch (e) {
      if (this.#shut) return;
      this.#stop(e instanceof ControlPlaneHaltedError ? e : new ControlPlaneHaltedError(this.#state.appliedIndex + 1, e));
    }
  }

  /** One apply step, synchronous: fold the item, then carry out its effects in order. */
  #step(item: Committed): void {
    const step: AppliedStep = this.#state.apply(item); // throws ControlPlaneHaltedError: fail closed
    for (const patch of step.publish) this.#sink.publish(patch);
    for (const replica of step.enrolled) this.#sink.onEnrolled(replica);
    const key = step.envelope?.key ?? null;
    if (key !== null && key.client === this.#autoClient && key.seq >= this.#nextSeq) this.#tripped = true;
    // the command's digest only where a call waits on the key (the proposer): a follower pays no hash per entry
    if (key !== null && step.outcome !== null && this.#waiters.has(keyId(key))) this.#resolve(key, step.outcome, step.index, digestOf(step.envelope!.cmd));

    if (step.kind === "install") {
      for (const [id, ws] of [...this.#waiters]) {
        const [client, seq] = id.split("\u0000") as [string, string];
        const k = { client, seq: Number(seq) };
        const o = this.#state.outcomeOf(k);
        if (o === "unknown") continue;
        if (o === "pruned") {
          for (const w of [...ws]) w.reject(new OutcomeUnknownError("the outcome was pruned below its client's ackFloor", k));
          continue;
        }
        // the snapshot holds the outcome of whichever command came first under the key: a waiter for another
        // command is answered by its own entry (or, when the snapshot covers it, from the record once it is applied)
        for (const w of [...ws]) {
          const mine = this.#state.replayOf(k, w.cmd, step.index);
          if (mine !== null && !(mine.kind === "conflict" && mine.conflict.reason === "keyReuse")) this.#resolve(k, mine, step.index, w.digest);
        }
      }
      this.#lastSnapshot = step.index;
    }
    // §3.9(a): the gate follows the roster as applied — a depart of this replica (by any process of it) closes it
    if (this.#writable && (step.kind === "install" || step.envelope?.cmd.op === "depart") && !this.#state.roster.enrolled.has(this.self)) this.#writable = false;
    // deleting the entry being visited is safe in a Set's iteration; nothing is added meanwhile (resolving a
    // promise runs no code until this step returns)
    for (const w of this.#indexWaiters) {
      if (w.index <= step.index) {
        this.#indexWaiters.delete(w);
        w.resolve();
      }
    }
    if (this.#snapshotEvery > 0 && step.index - this.#lastSnapshot >= this.#snapshotEvery) {
      this.#lastSnapshot = step.index;
      this.#raft.publishSnapshot({ throughIndex: step.index, state: this.#state.encode() });
    }
  }

  /**
   * Answers the waiters of `key` whose command has digest `digest` with `outcome`, the answer at `index` to an entry
   * carrying `key` and that command (§3.3 step 6). A waiter for another command under the same key (§3.10 key
   * misuse) is not answered here but by its own entry, whose outcome can differ from any answer given now: `keyReuse`
   * while the key's record stands, but a fresh decision when an `idem:` record is forgotten in between (even in this
   * very step's window pruning).
   *
   * The writer gate (§3.9): an `open` waiter (this process's own `enroll(self)`) is answered only at the index its
   * own propose committed at, never by the replay of an older entry under its key, and only once the boot read is
   * applied too (so every entry committed before the boot is applied, b — the own index alone may be a pre-boot
   * entry the leader's dedup cache answered with); until then its answers wait in `early` for the call to take. It
   * then opens the gate only while the applied roster holds this replica (a). A `close` waiter (own `depart()`)
   * closes it on any applied answer.
   */
  #resolve(key: ProposalKey, outcome: ControlOutcome, index: LogIndex, digest: string): void {
    const ws = this.#waiters.get(keyId(key));
    if (ws === undefined) return;
    for (const w of [...ws]) {
      if (w.digest !== digest) continue;
      if (w.gate === "open") {
        if (w.own !== null && w.own !== index) continue;
        if (w.own === null || !this.#bootApplied) {
          w.early.set(index, outcome);
          continue;
        }
      }
      this.#answer(w, outcome);
    }
  }

  /** Answers one waiter with `outcome`, moving the writer gate first when it is this process's enroll/depart. */
  #answer(w: Waiter, outcome: ControlOutcome): void {
    if (outcome.kind === "applied" && w.gate !== null) this.#writable = w.gate === "open" && this.#state.roster.enrolled.has(this.self);
    w.resolve(outcome);
  }

  /** The apply loop stopped for good: every pending and later call fails with `e`. */
  #stop(e: Error): void {
    if (this.#stopped !== null) return;
    this.#stopped = e;
    if (e instanceof ControlPlaneHaltedError) this.#halted.set(e);
    for (const ws of [...this.#waiters.values()]) for (const w of [...ws]) w.reject(e);
    for (const w of [...this.#indexWaiters]) w.reject(e);
    this.#indexWaiters.clear();
  }

  /** Resolves once the Raft member and the node are stopped — for every caller, a second call included. */
  shutdown(): Promise<void> {
    return (this.#stopping ??= this.#stopAll());
  }

  async #stopAll(): Promise<void> {
    this.#shut = true;
    for (const ws of [...this.#waiters.values()]) for (const w of [...ws]) w.reject(shutdownError(w.key));
    for (const w of [...this.#indexWaiters]) w.reject(new NodeShutdownError("the governed node was shut down"));
    this.#indexWaiters.clear();
    await this.#raft.close();
    await this.#node.shutdown();
  }
}

/** `p`, or a rejection with the signal's reason once `signal` aborts first (`p`'s later rejection is then ignored). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
