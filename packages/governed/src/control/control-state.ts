/**
 * The control state machine (governed.md §3.2–3.5, §3.8, §3.10, R-S4): a pure value folded from the committed log,
 * one index at a time, by `apply`. It decides every act from the log prefix alone — the envelope, the entry index,
 * the leader's stamp, this state and the construction constants `root` and `claims` options — and returns the
 * effects the shell carries out (patches to publish into the data plane, enrollments to announce, the outcome to
 * hand to a waiting caller). It does no I/O and reads no clock.
 *
 * A tagged entry that does not decode, or an invariant that breaks while applying (an index out of order, a ledger
 * mutator refusing on the projection where the decision predicted success), halts it: `apply` throws
 * `ControlPlaneHaltedError` now and on every later call. Halting is preferable to diverging.
 */
import { hash } from "node:crypto";
import { createClaims, decodeClaims } from "@heddle/claims";
import type { ClaimsOptions, ClaimsTable } from "@heddle/claims";
import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, LIFECYCLE_RANK, MAX, MintId, ReplicaId, Weight } from "@heddle/ledger";
import type { AttachmentRecord, Lifecycle, MintRecord, MutationResult } from "@heddle/ledger";
import type { Committed, LogEntry, LogIndex, ProposalKey } from "../raft/types.ts";
import { canonicalJson } from "./canonical-json.ts";
import type { Canonical } from "./canonical-json.ts";
import { decodeEntry, digestOf } from "./envelope.ts";
import type { ControlCommand, ControlEnvelope } from "./envelope.ts";
import { canonicalClaims, canonicalClaimsOfTable, controlSettings, fixedSettingsFromJson, fixedSettingsJson, settingsDifferences, settingsDigest, SettingsMismatchError } from "./control-settings.ts";
import type { CanonicalClaims, ControlSettings, FixedSettings } from "./control-settings.ts";
import { ControlPlaneHaltedError } from "./errors.ts";
import { outcomeFromJson, outcomeJson } from "./outcome.ts";
import type { Amount, ControlConflict, ControlOutcome } from "./outcome.ts";
import { Roster } from "./roster.ts";
import type { RosterTransition, RosterView } from "./roster.ts";

/**
 * The format tag of a `ControlState` snapshot of a log whose settings are not fixed yet (byte for byte what builds
 * before settings wrote); `CONTROL_STATE_FORMAT_SETTINGS` once they are. A decoder refuses any other.
 */
export const CONTROL_STATE_FORMAT = "heddle-control-state/1";

/** The format tag of a `ControlState` snapshot that carries the log's fixed settings (`settings`, after `sessions`). */
export const CONTROL_STATE_FORMAT_SETTINGS = "heddle-control-state/2";

/**
 * The prefix of windowed clients: a session whose client starts with it is remembered only while its recorded
 * outcomes are among the last `idempotencyWindow` applied indexes (see `ControlState`). The daemon maps each HTTP
 * `Idempotency-Key` to one such client (`idem:<sha256 prefix>`, seq 1), so a keyed call costs one session each.
 */
export const IDEMPOTENCY_CLIENT_PREFIX = "idem:";

/**
 * How many applied indexes a windowed client's outcome is remembered for, by default: a retry under an
 * `idem:` key within the last 10 000 control-log entries replays its outcome, an older one is a new call. Measured
 * (governed README): a session costs ~205 B of snapshot and ~10–16 µs of decode CPU, so 10 000 caps them near 2 MB
 * — below the 4.0 MB the crash trials reached unbounded — where 100 000 would allow 20 MB; and 10 000 entries of a
 * low-rate control log are hours of retries (the daemon remembers as many reserve results).
 */
export const DEFAULT_IDEMPOTENCY_WINDOW = 10_000;

/**
 * The construction constants every peer of one log shares (governed.md §3.5). They decide outcomes, so the log fixes
 * them (`ControlSettings`, see `ControlState`): a member whose values differ halts with `SettingsMismatchError`.
 */
export interface ControlStateOptions {
  readonly root: GroupId;
  /** The replicated claims table's options; identical on every peer, unchanged for the life of the log. */
  readonly claims?: ClaimsOptions;
  /**
   * Extension: applied indexes an `idem:` client's outcome is remembered for (≥ 1; default
   * {@link DEFAULT_IDEMPOTENCY_WINDOW}). It decides outcomes (a retry past it is a new act), so like `root` and
   * `claims` it MUST be equal on every peer and unchanged for the life of the log.
   */
  readonly idempotencyWindow?: number;
}

/** What the state remembers of windowed (`idem:`) clients now: `ControlState.keyRetention()`. */
export interface KeyRetention {
  /** The window: an `idem:` outcome is remembered while its index is among the last `entries` applied. */
  readonly entries: number;
  /**
   * Every `idem:` outcome recorded at an index ≤ this is forgotten (`max(0, appliedIndex − entries)`); 0 means
   * none ever was, so an `idem:` key without an outcome was never used in this log.
   */
  readonly forgottenThrough: LogIndex;
  /** `idem:` sessions held now (each holds at least one outcome inside the window). */
  readonly sessions: number;
}

/** The read-only view of the applied prefix (governed.md §2.2). Reads are of the local applied prefix, not linearizable. */
export interface ControlView {
  readonly appliedIndex: LogIndex;
  record(edge: AttachmentId): AttachmentRecord | undefined;
  lifecycle(edge: AttachmentId): Lifecycle | undefined;
  /** ACTIVE or CLOSING inbound edges of `child`, sorted; length ≤ 1 by construction. */
  liveInbound(child: GroupId): readonly AttachmentId[];
  minted(): ReadonlyMap<MintId, MintRecord>;
  mintedTotal(): Amount;
  readonly roster: RosterView;
  /**
   * The recorded outcome of `key`; `'pruned'` once its client's floor passed it; `'unknown'` if not applied here —
   * or, for an `idem:` client, recorded at an index ≤ `keyRetention().forgottenThrough` and forgotten since.
   */
  outcomeOf(key: ProposalKey): ControlOutcome | "unknown" | "pruned";
  /** Extension: the retention window of `idem:` clients and what it holds now. */
  keyRetention(): KeyRetention;
  /** Extension: this member's decision-affecting settings (canonical) and their digest. */
  readonly settings: ControlSettings;
  readonly settingsDigest: string;
  /** Extension: the settings the log fixed and the entry that fixed them; `null` until an applied entry carried some. */
  readonly fixedSettings: FixedSettings | null;
  /**
   * Extension: the latest stamp of any entry applied here, never below the claims clock — the earliest time at
   * which the log could judge a claims command proposed now (a read that judges claims judges no earlier).
   */
  readonly latestStamp: number;
}

/** What applying one committed item did: the effects the shell carries out, in order, within the same step. */
export interface AppliedStep {
  readonly index: LogIndex;
  readonly kind: "internal" | "foreign" | "control" | "install";
  /** The decoded envelope of a control entry. */
  readonly envelope: ControlEnvelope | null;
  /** The outcome of a keyed control entry (a recorded replay, `stale` and `keyReuse` included). */
  readonly outcome: ControlOutcome | null;
  /** True when the act was decided by this step (not a replay of a recorded outcome, not stale, not key reuse). */
  readonly decided: boolean;
  /** Patches to publish into the data plane (governed.md §3.6), in order. */
  readonly publish: readonly EntitlementLedger[];
  /** Replicas to announce through `onEnrolled` (every applied enroll, noop included; everyone after an install). */
  readonly enrolled: readonly ReplicaId[];
}

/** One client's exactly-once record (governed.md §3.10). */
interface Session {
  floor: number;
  readonly outcomes: Map<number, { readonly digest: string; readonly outcome: ControlOutcome }>;
}

/** Canonical text of recorded outcomes, computed once per outcome value (the state text repeats them). */
const outcomeText = new WeakMap<ControlOutcome, string>();

function recordedText(o: ControlOutcome): string {
  let t = outcomeText.get(o);
  if (t === undefined) {
    t = canonicalJson(outcomeJson(o));
    outcomeText.set(o, t);
  }
  return t;
}

/** An invariant broke while applying: the apply loop halts (never skips). */
class BrokenInvariant extends Error {}

const LIVE: ReadonlySet<Lifecycle> = new Set<Lifecycle>(["ACTIVE", "CLOSING"]);

function sameRecord(a: AttachmentRecord, b: AttachmentRecord): boolean {
  return a.id === b.id && a.parent === b.parent && a.child === b.child && a.weight.equals(b.weight);
}

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * `mint:${client}:${seq}` — unique because keys are, stable across retries because a retry reuses its key.
 * When that would be longer than the ids peers accept on the wire (node.md §4.3: 256 code units; a longer
 * one makes every ledger frame carrying the mint a `schema` refusal, so anti-entropy could never deliver it),
 * it is `mint:h:${first 32 hex digits of sha256(client)}:${seq}` instead — still one id per key.
 */
export function mintIdOf(key: ProposalKey): MintId {
  const plain = `mint:${key.client}:${key.seq}`;
  if (plain.length <= MINT_ID_MAX_LENGTH) return MintId(plain);
  return MintId(`mint:h:${hash("sha256", key.client, "hex").slice(0, 32)}:${key.seq}`);
}

/** The longest mint id written as is (node.md §4.3's id limit; `MAX_ID_LENGTH` of `@heddle/node`). */
const MINT_ID_MAX_LENGTH = 256;

/** A recorded outcome of a windowed client, in the order its index was applied. */
interface WindowedOutcome {
  readonly index: LogIndex;
  readonly client: string;
  readonly seq: number;
}

function windowOf(v: number | undefined): number {
  if (v === undefined) return DEFAULT_IDEMPOTENCY_WINDOW;
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`idempotencyWindow: must be a safe integer ≥ 1, got ${v}`);
  return v;
}

const windowed = (client: string): boolean => client.startsWith(IDEMPOTENCY_CLIENT_PREFIX);

function claimsOptionsOf(options: ClaimsOptions | undefined): CanonicalClaims {
  if (options?.scopeEnded !== undefined) {
    throw new RangeError("claims.scopeEnded: the replicated claims table has no scope liveness; a scope ends only by a committed releaseScope");
  }
  return canonicalClaims(options ?? {});
}

/**
 * How long a claim whose lease ended stays in the replicated claims table — reported by `lapsed()` and in a later
 * take's `superseded` — before an applied claims command drops it (claims.md rule 5: reported as lapsed, then gone).
 */
export const LAPSED_CLAIM_RETENTION_MS = 3_600_000;

/** Most lapsed claims one applied claims command drops: bounded work per entry, twice what one take can add. */
export const LAPSED_CLAIMS_PER_APPLY = 512;

/**
 * `ControlState` of governed.md §3.2. Mutated only by `apply`, in index order; two peers that applied the same
 * prefix hold equal states (`encode()` gives equal bytes — the property the simulations check after every step).
 *
 * Retention of windowed sessions (an extension of §3.10, whose "one record per process incarnation" does not hold
 * for the daemon's one-session-per-`Idempotency-Key` mapping): after every apply step at index `i` (entry,
 * internal, install), an outcome recorded under an `idem:` client at an index ≤ `i − window` is dropped, and an
 * `idem:` session left without outcomes is deleted (its floor with it). The retained set is therefore a function
 * of the recorded outcomes and `appliedIndex` alone — never of when a peer restored a snapshot or how often it
 * applies — so a peer that replayed and one that installed a snapshot hold equal states; the rule reads only
 * indexes already in `heddle-control-state/1` snapshots, so the format is unchanged and older snapshots (taken
 * without pruning) restore as they are and converge at the next step. Each recorded outcome has its own index (the
 * entry that decided it), so an index-ordered queue makes a step's pruning cost the number of outcomes it drops.
 * A retry under a forgotten key is decided again as a new act: `mint` then finds its `mintIdOf(key)` already
 * minted and answers a noop (never a second mint); the other verbs' own noop rules make most late duplicates
 * harmless (governed README, "Idempotency-key retention"). Auto and explicit clients are untouched (§3.10).
 *
 * Why a window of indexes rather than a count of sessions or a clock: a count would make a busy period forget a
 * quiet key sooner, and a clock is not an input to the state machine (§3.5); log indexes are, and "remembered for
 * the last N control-log entries" is a promise an operator can check against `appliedIndex`.
 *
 * Settings (§3.5's construction constants, checked): `settings` is this member's canonical `ControlSettings` (root,
 * claims options, window). The first control entry carrying settings (envelope v2) fixes the log's (`fixedSettings`,
 * part of the state and of its snapshots, format `heddle-control-state/2`); right then — before that entry is
 * decided — and on restoring a snapshot that carries them, a member whose own settings differ halts with a
 * `SettingsMismatchError` naming each differing setting. Entries applied while nothing is fixed (a log written before
 * settings existed) are decided as before; a later entry whose settings differ from the fixed ones is decided under
 * the fixed ones (its proposer halts when it applies the fixing entry, before its own).
 */
export class ControlState implements ControlView {
  readonly root: GroupId;
  /** This member's decision-affecting settings, canonical. */
  readonly settings: ControlSettings;
  readonly #claimsOptions: CanonicalClaims;
  /** The log's settings, once an entry (or a restored snapshot) fixed them. */
  #fixed: FixedSettings | null = null;
  #records = new Map<AttachmentId, AttachmentRecord>();
  #lifecycle = new Map<AttachmentId, Lifecycle>();
  #inbound = new Map<GroupId, AttachmentId[]>();
  #mints = new Map<MintId, MintRecord>();
  #mintedTotal = 0n;
  /**
   * The projection: a ledger that has joined only control patches; a patch factory, its counters stay empty. Held
   * mutably (its mutators apply their own patch in place, in time proportional to the patch, indexes kept current):
   * an immutable value's join copies its outer maps and rebuilds its index whenever a mint is added, which made each
   * mint's apply step cost O(mints so far) and a replay quadratic, against §3.11's bounded apply step.
   */
  #projection = new LedgerReplica();
  #roster = new Roster();
  #sessions = new Map<string, Session>();
  readonly #window: number;
  /** Outcomes recorded under windowed clients, by ascending index (some already dropped by a floor). */
  #windowQueue: WindowedOutcome[] = [];
  #windowHead = 0;
  /** Windowed sessions held now. */
  #windowedSessions = 0;
  /** Windowed sessions a restored snapshot holds without outcomes: deleted by the next step's pruning. */
  #emptyWindowed: string[] = [];
  #claims: ClaimsTable;
  #claimsNow = 0;
  /** The latest `stampedAt` of any entry applied by this process (not replicated state: not in snapshots). */
  #latestStamp = 0;
  #halted: ControlPlaneHaltedError | null = null;

  constructor(options: ControlStateOptions) {
    this.root = GroupId(options.root);
    this.#claimsOptions = claimsOptionsOf(options.claims);
    this.#claims = createClaims(this.#claimsOptions.options);
    this.#window = windowOf(options.idempotencyWindow);
    this.settings = Object.freeze(controlSettings(this.root, this.#claimsOptions, this.#window));
  }

  /** The log's settings and the entry that fixed them; `null` while no applied entry carried any. */
  get fixedSettings(): FixedSettings | null {
    return this.#fixed;
  }

  /** `settingsDigest` of this member's settings: one value to compare across peers (status, logs). */
  get settingsDigest(): string {
    return settingsDigest(this.settings);
  }

  /** Halts unless `fixed` equals this member's settings (`where` names what fixed them, for the message). */
  #checkSettings(fixed: FixedSettings, where: string): void {
    const differences = settingsDifferences(fixed.settings, this.settings);
    if (differences.length > 0) throw new SettingsMismatchError(where, fixed, differences);
  }

  // ---------------------------------------------------------------------------------------------- reads

  get appliedIndex(): LogIndex {
    return this.#roster.appliedIndex;
  }

  get roster(): RosterView {
    return this.#roster;
  }

  /** The replicated claims table (read it; only `apply` changes it). */
  get claims(): ClaimsTable {
    return this.#claims;
  }

  /** The `now` of the last applied claims command (0 at start); never decreases. */
  get claimsNow(): number {
    return this.#claimsNow;
  }

  /**
   * The latest stamp of any entry applied here, and never below `claimsNow`: the earliest time at which a claims
   * command proposed now could be judged by the log. On etcd a proposal is stamped no earlier than the newest entry
   * of any kind, which can be ahead of `claimsNow` (a mint stamped by a peer whose clock runs ahead), so a read that
   * judges claims must not judge earlier than this. Not part of the replicated state (after a snapshot install it
   * restarts from the snapshot's `claimsNow`; the etcd log's `stampFloor` covers that gap for a read that judges).
   */
  get latestStamp(): number {
    return Math.max(this.#latestStamp, this.#claimsNow);
  }

  /** The error the state halted with, if it did. */
  get halted(): ControlPlaneHaltedError | null {
    return this.#halted;
  }

  /**
   * The projection ledger (records, lifecycles and mints of every applied act), as an immutable value: the same
   * object until the next act changes the projection. Taking it is O(1); the next change after it then copies the
   * components it writes once (copy-on-write), so read it when needed, not after every apply.
   */
  get projection(): EntitlementLedger {
    return this.#projection.snapshot();
  }

  record(edge: AttachmentId): AttachmentRecord | undefined {
    return this.#records.get(edge);
  }

  lifecycle(edge: AttachmentId): Lifecycle | undefined {
    return this.#lifecycle.get(edge);
  }

  liveInbound(child: GroupId): readonly AttachmentId[] {
    return (this.#inbound.get(child) ?? []).filter((e) => LIVE.has(this.#lifecycle.get(e)!));
  }

  /** Every mint, in id order (UTF-16 code units): the same order on a replica that replayed the log and on one that installed a snapshot. */
  minted(): ReadonlyMap<MintId, MintRecord> {
    return new Map([...this.#mints].sort((a, b) => byId(a[0], b[0])));
  }

  mintedTotal(): Amount {
    return this.#mintedTotal;
  }

  outcomeOf(key: ProposalKey): ControlOutcome | "unknown" | "pruned" {
    const s = this.#sessions.get(key.client);
    if (s === undefined) return "unknown";
    const r = s.outcomes.get(key.seq);
    if (r !== undefined) return r.outcome;
    return key.seq < s.floor ? "pruned" : "unknown";
  }

  /**
   * What a duplicate entry of `(key, cmd)` at `index` would be answered now, without applying anything (§3.3 step 5
   * as a read): `stale` below the client's floor, the recorded outcome when the digests match, `keyReuse` when they
   * differ, `null` when nothing is recorded. The shell answers a retry the leader's dedup cache (R-D4) coalesced
   * with an entry already applied here by it.
   */
  replayOf(key: ProposalKey, cmd: ControlCommand, index: LogIndex): ControlOutcome | null {
    const s = this.#sessions.get(key.client);
    if (s === undefined) return null;
    if (key.seq < s.floor) return { kind: "conflict", index, key, conflict: { reason: "stale", key } };
    const prior = s.outcomes.get(key.seq);
    if (prior === undefined) return null;
    if (prior.digest === digestOf(cmd)) return prior.outcome;
    return { kind: "conflict", index, key, conflict: { reason: "keyReuse", key } };
  }

  keyRetention(): KeyRetention {
    return { entries: this.#window, forgottenThrough: Math.max(0, this.appliedIndex - this.#window), sessions: this.#windowedSessions };
  }

  /** What the session table holds for `client`: its floor and the highest recorded seq (the incarnation tripwire). */
  sessionOf(client: string): { readonly floor: number; readonly highestSeq: number } | undefined {
    const s = this.#sessions.get(client);
    if (s === undefined) return undefined;
    let highestSeq = 0;
    for (const seq of s.outcomes.keys()) if (seq > highestSeq) highestSeq = seq;
    return { floor: s.floor, highestSeq };
  }

  // ---------------------------------------------------------------------------------------------- apply

  /**
   * Folds the next committed item (governed.md §3.3) and returns its effects. Throws `ControlPlaneHaltedError` on a
   * malformed tagged entry, an out-of-order index, a broken invariant or a snapshot that cannot be restored — and on
   * every call after that.
   */
  apply(item: Committed): AppliedStep {
    if (this.#halted !== null) throw this.#halted;
    const index = item.kind === "install" ? item.snapshot.throughIndex : item.kind === "entry" ? item.entry.index : item.index;
    try {
      switch (item.kind) {
        case "internal":
          this.#roster.advance(index);
          this.#pruneWindow();
          return { index, kind: "internal", envelope: null, outcome: null, decided: false, publish: [], enrolled: [] };
        case "install": {
          const step = this.#install(index, item.snapshot.state);
          this.#pruneWindow();
          return step;
        }
        case "entry": {
          const step = this.#entry(item.entry);
          this.#pruneWindow();
          return step;
        }
      }
    } catch (e) {
      this.#halted = e instanceof ControlPlaneHaltedError ? e : new ControlPlaneHaltedError(index, e);
      throw this.#halted;
    }
  }

  #entry(entry: LogEntry): AppliedStep {
    const index = entry.index;
    if (index !== this.appliedIndex + 1) throw new BrokenInvariant(`entry ${index} arrived after ${this.appliedIndex}`);
    if (entry.stampedAt > this.#latestStamp) this.#latestStamp = Math.floor(entry.stampedAt);
    const d = decodeEntry(entry.command);
    if (d.kind === "foreign") {
      this.#roster.advance(index);
      return { index, kind: "foreign", envelope: null, outcome: null, decided: false, publish: [], enrolled: [] };
    }
    if (d.kind === "malformed") throw new ControlPlaneHaltedError(index, new Error(`malformed control entry: ${d.why}`), entry.key);
    const env = d.envelope;
    if (env.settings !== undefined && this.#fixed === null) {
      // the first entry carrying settings fixes the log's, for good; a member whose own differ halts here, before
      // this entry (or any later one) is decided under them
      const fixed: FixedSettings = { settings: env.settings, fixedAt: index, fixedBy: env.proposer };
      this.#checkSettings(fixed, "the control log's");
      this.#fixed = fixed;
    }
    this.#roster.advance(index);
    const none = { index, kind: "control" as const, envelope: env, publish: [], enrolled: [] };
    if (env.key === null) return { ...none, outcome: null, decided: false }; // the barrier: no session, no effect
    const key = env.key;
    // §3.3 step 4: the session floor rises to the client's ackFloor; outcomes below it are dropped
    let s = this.#sessions.get(key.client);
    if (s === undefined) {
      s = { floor: 0, outcomes: new Map() };
      this.#sessions.set(key.client, s);
      if (windowed(key.client)) this.#windowedSessions++;
    }
    if (env.ackFloor > s.floor) {
      s.floor = env.ackFloor;
      for (const seq of [...s.outcomes.keys()]) if (seq < s.floor) s.outcomes.delete(seq);
    }
    // §3.3 step 5
    if (key.seq < s.floor) {
      // a windowed session keeps nothing without an outcome (its floor goes with it)
      if (s.outcomes.size === 0 && windowed(key.client)) this.#dropSession(key.client);
      return { ...none, outcome: { kind: "conflict", index, key, conflict: { reason: "stale", key } }, decided: false };
    }
    const digest = digestOf(env.cmd);
    const prior = s.outcomes.get(key.seq);
    if (prior !== undefined) {
      if (prior.digest === digest) return { ...none, outcome: prior.outcome, decided: false };
      return { ...none, outcome: { kind: "conflict", index, key, conflict: { reason: "keyReuse", key } }, decided: false };
    }
    const d2 = this.#decide(env, key, index, entry.stampedAt);
    s.outcomes.set(key.seq, { digest, outcome: d2.outcome });
    if (windowed(key.client)) this.#windowQueue.push({ index, client: key.client, seq: key.seq });
    return { index, kind: "control", envelope: env, outcome: d2.outcome, decided: true, publish: d2.publish, enrolled: d2.enrolled };
  }

  // ---------------------------------------------------------------------------------------------- decide (§3.4)

  #decide(env: ControlEnvelope, key: ProposalKey, index: LogIndex, stampedAt: number): { outcome: ControlOutcome; publish: EntitlementLedger[]; enrolled: ReplicaId[] } {
    const conflict = (c: ControlConflict): { outcome: ControlOutcome; publish: EntitlementLedger[]; enrolled: ReplicaId[] } => ({
      outcome: { kind: "conflict", index, key, conflict: c },
      publish: [],
      enrolled: [],
    });
    const applied = (publish: EntitlementLedger[] = [], extra: { noop?: boolean; mintId?: MintId } = {}) => ({
      outcome: { kind: "applied" as const, index, key, noop: extra.noop ?? false, ...(extra.mintId === undefined ? {} : { mintId: extra.mintId }) },
      publish,
      enrolled: [] as ReplicaId[],
    });
    const noop = () => applied([], { noop: true });
    const cmd: ControlCommand = env.cmd;
    switch (cmd.op) {
      case "mint": {
        const id = mintIdOf(key);
        // A mint id is minted once: the session answers a retry inside its window, but a windowed key past it (or a
        // session record lost any other way) reaches here again. Same record → the act already happened (noop, with
        // its id); another record under the same key → keyReuse, as the session would have answered.
        const existing = this.#mints.get(id);
        if (existing !== undefined) {
          if (existing.holder === cmd.holder && existing.amount === cmd.amount) return applied([], { noop: true, mintId: id });
          return conflict({ reason: "keyReuse", key });
        }
        const total = this.#mintedTotal + cmd.amount;
        if (total > MAX) return conflict({ reason: "overflow", what: "mintedTotal" });
        const patch = this.#project("mint", this.#projection.mint(id, this.root, cmd.holder, cmd.amount));
        this.#mints.set(id, Object.freeze({ root: this.root, holder: cmd.holder, amount: cmd.amount }));
        this.#mintedTotal = total;
        return applied([patch], { mintId: id });
      }
      case "prepare": {
        const r = cmd.record;
        if (r.parent === r.child) return conflict({ reason: "invalidRecord", edge: r.id, detail: "selfLoop" });
        if (r.child === this.root) return conflict({ reason: "invalidRecord", edge: r.id, detail: "rootAsChild" });
        const existing = this.#records.get(r.id);
        if (existing !== undefined) {
          if (sameRecord(existing, r)) return noop();
          return conflict({ reason: "recordMismatch", edge: r.id, existing, proposed: r });
        }
        const patch = this.#project("prepare", this.#projection.prepare(r));
        this.#records.set(r.id, Object.freeze({ id: r.id, parent: r.parent, child: r.child, weight: r.weight }));
        this.#lifecycle.set(r.id, "PREPARED");
        const list = this.#inbound.get(r.child) ?? [];
        list.push(r.id);
        list.sort(byId);
        this.#inbound.set(r.child, list);
        return applied([patch]);
      }
      case "activate": {
        const r = this.#records.get(cmd.edge);
        if (r === undefined) return conflict({ reason: "unknownEdge", edge: cmd.edge });
        const current = this.#lifecycle.get(cmd.edge)!;
        if (LIFECYCLE_RANK[current] >= LIFECYCLE_RANK.CLOSING) return conflict({ reason: "lifecycleRegression", edge: cmd.edge, current, requested: "ACTIVE" });
        const incumbent = this.liveInbound(r.child).find((e) => e !== cmd.edge);
        if (incumbent !== undefined) return conflict({ reason: "dualInbound", child: r.child, incumbent, rejected: cmd.edge });
        const path = this.#cyclePath(r);
        if (path !== null) return conflict({ reason: "wouldCycle", edge: cmd.edge, path });
        if (current === "ACTIVE") return noop();
        const patch = this.#project("activate", this.#projection.activate(cmd.edge));
        this.#lifecycle.set(cmd.edge, "ACTIVE");
        return applied([patch]);
      }
      case "close": {
        if (!this.#records.has(cmd.edge)) return conflict({ reason: "unknownEdge", edge: cmd.edge });
        const current = this.#lifecycle.get(cmd.edge)!;
        if (current === "RETIRED") return conflict({ reason: "lifecycleRegression", edge: cmd.edge, current, requested: "CLOSING" });
        if (current === "PREPARED") return conflict({ reason: "notActive", edge: cmd.edge, current });
        if (current === "CLOSING") return noop();
        const patch = this.#project("close", this.#projection.close(cmd.edge));
        this.#lifecycle.set(cmd.edge, "CLOSING");
        return applied([patch]);
      }
      case "retire": {
        if (!this.#records.has(cmd.edge)) return conflict({ reason: "unknownEdge", edge: cmd.edge });
        const current = this.#lifecycle.get(cmd.edge)!;
        if (current === "RETIRED") return noop();
        if (current === "ACTIVE") return conflict({ reason: "notClosing", edge: cmd.edge, current });
        let witness: EntitlementLedger | null = null;
        if (cmd.witness !== undefined) {
          try {
            witness = EntitlementLedger.decode(cmd.witness);
          } catch (e) {
            throw new ControlPlaneHaltedError(index, new Error(`malformed control entry: the retire witness does not decode (${(e as Error).message})`), key);
          }
        }
        // ledger 1.1 retires a PREPARED edge directly (abandoning it) and a drained CLOSING one
        const patch = this.#project("retire", this.#projection.retire(cmd.edge));
        this.#lifecycle.set(cmd.edge, "RETIRED");
        // the witness travels in the published patch only: the projection's counters stay empty
        return applied([witness === null ? patch : patch.join(witness)]);
      }
      case "enroll": {
        const changed = this.#roster.enroll(cmd.replica);
        const out = applied([], { noop: !changed });
        out.enrolled.push(cmd.replica);
        return out;
      }
      case "depart": {
        if (env.proposer !== cmd.replica) return conflict({ reason: "notSelf", replica: cmd.replica, proposer: env.proposer });
        return this.#roster.depart(cmd.replica) ? applied() : noop();
      }
      case "barrier":
        return applied([], { noop: true }); // unreachable: a barrier carries no key (the decoder enforces it)
      case "claims.take":
      case "claims.release":
      case "claims.releaseAll":
      case "claims.releaseScope":
      case "claims.renew": {
        // the leader's stamp, clamped so time never runs backwards across leaders (§3.4)
        const now = Math.max(this.#claimsNow, Math.floor(stampedAt));
        this.#claimsNow = now;
        const t = this.#claims;
        // after the command has its answer (a take's `superseded` still lists what it replaced): leases that ended
        // more than LAPSED_CLAIM_RETENTION_MS ago leave the table, at most LAPSED_CLAIMS_PER_APPLY per entry — without
        // it, takes of ever-new keys by holders that crash grow the table and every snapshot for good. Judged by the
        // table and `now` alone, so every replica drops the same claims.
        const outcome = this.#claimsOutcome(cmd, now, index, key);
        t.purgeLapsedBefore(Math.max(0, now - LAPSED_CLAIM_RETENTION_MS), LAPSED_CLAIMS_PER_APPLY);
        return { outcome, publish: [], enrolled: [] };
      }
    }
  }

  /** One claims command on the table at `now`, and its outcome. */
  #claimsOutcome(cmd: Extract<ControlCommand, { op: `claims.${string}` }>, now: number, index: LogIndex, key: ProposalKey): ControlOutcome {
    const t = this.#claims;
    if (cmd.op === "claims.release" && cmd.token !== undefined) {
      if (t.release(cmd.holder, cmd.key, now, cmd.token)) return { kind: "applied", index, key, noop: false, claims: true };
      // say which grant the holder has now, so the caller tells "a newer grant stays" from "held nothing"
      const held = t.availability([cmd.key], now)[0]?.holders.find((h) => h.holder === cmd.holder)?.token ?? null;
      return { kind: "applied", index, key, noop: false, claims: false, heldToken: held };
    }
    const result =
      cmd.op === "claims.take"
        ? t.take(cmd.request, now, index)
        : cmd.op === "claims.release"
          ? t.release(cmd.holder, cmd.key, now)
          : cmd.op === "claims.renew"
            ? t.renew(cmd.holder, cmd.key, now)
            : cmd.op === "claims.releaseAll"
              ? t.releaseAll(cmd.holder, now)
              : t.releaseScope(cmd.scope, now);
    return { kind: "applied", index, key, noop: false, claims: result };
  }

  /**
   * Walks up from `r.parent` through live inbound edges (sorted ids; at most one each by construction). Returns the
   * edges walked when the walk reaches `r.child` (activating `r` would close a loop), else null.
   */
  #cyclePath(r: AttachmentRecord): AttachmentId[] | null {
    const path: AttachmentId[] = [];
    const seen = new Set<GroupId>();
    let cur = r.parent;
    for (;;) {
      if (cur === r.child) return path;
      if (seen.has(cur)) throw new BrokenInvariant(`the live edges above ${r.parent} already form a cycle through ${cur}`);
      seen.add(cur);
      const up = this.liveInbound(cur);
      if (up.length === 0) return null;
      if (up.length > 1) throw new BrokenInvariant(`${cur} has ${up.length} live inbound edges`);
      path.push(up[0]!);
      cur = this.#records.get(up[0]!)!.parent;
    }
  }

  /**
   * A mutator's outcome on the projection, which already holds its patch (a `LedgerReplica`'s mutators apply their
   * own patch before returning); a refusal here is a broken invariant (halt).
   */
  #project(what: string, r: MutationResult): EntitlementLedger {
    if (!r.ok) throw new BrokenInvariant(`the projection refused ${what} where the decision predicted success: ${r.refusal.kind} (${r.refusal.message})`);
    return r.patch;
  }

  // ---------------------------------------------------------------------------------------------- retention

  /** Drops windowed outcomes at indexes ≤ appliedIndex − window, and windowed sessions left without outcomes. */
  #pruneWindow(): void {
    for (const client of this.#emptyWindowed.splice(0)) {
      const s = this.#sessions.get(client);
      if (s !== undefined && s.outcomes.size === 0) this.#dropSession(client);
    }
    const through = this.appliedIndex - this.#window;
    const q = this.#windowQueue;
    let h = this.#windowHead;
    while (h < q.length && q[h]!.index <= through) {
      const w = q[h++]!;
      const s = this.#sessions.get(w.client);
      // the outcome may be gone already (a floor dropped it), or be a later one under the same key
      if (s === undefined || s.outcomes.get(w.seq)?.outcome.index !== w.index) continue;
      s.outcomes.delete(w.seq);
      if (s.outcomes.size === 0) this.#dropSession(w.client);
    }
    if (h > 1024 && h * 2 > q.length) {
      this.#windowQueue = q.slice(h);
      h = 0;
    }
    this.#windowHead = h;
  }

  #dropSession(client: string): void {
    if (this.#sessions.delete(client) && windowed(client)) this.#windowedSessions--;
  }

  // ---------------------------------------------------------------------------------------------- snapshots (R-S4)

  /**
   * The canonical text of the whole state (equal states, equal text): what `encode` writes. Built by hand around
   * pieces that are already canonical text (the projection's and the claims table's encodings, recorded outcomes).
   */
  stateText(): string {
    const records = [...this.#records.values()].sort((a, b) => byId(a.id, b.id));
    const sessions = [...this.#sessions].sort((a, b) => byId(a[0], b[0]));
    const sessionsText = sessions
      .map(([client, s]) => {
        const outs = [...s.outcomes]
          .sort((a, b) => a[0] - b[0])
          .map(([seq, o]) => `[${seq},${JSON.stringify(o.digest)},${recordedText(o.outcome)}]`)
          .join(",");
        return `[${JSON.stringify(client)},${s.floor},[${outs}]]`;
      })
      .join(",");
    // keys in code-unit order, as canonicalJson would write them
    return (
      `{"appliedIndex":${this.appliedIndex}` +
      `,"claims":${JSON.stringify(this.#claims.encode())}` +
      `,"claimsNow":${this.#claimsNow}` +
      `,"format":${JSON.stringify(this.#fixed === null ? CONTROL_STATE_FORMAT : CONTROL_STATE_FORMAT_SETTINGS)}` +
      `,"lifecycle":${canonicalJson([...this.#lifecycle].sort((a, b) => byId(a[0], b[0])))}` +
      `,"mints":${canonicalJson([...this.#mints].sort((a, b) => byId(a[0], b[0])).map(([id, m]) => [id, m.root, m.holder, m.amount]))}` +
      `,"projection":${JSON.stringify(this.#projection.encode())}` +
      `,"records":${canonicalJson(records.map((r) => [r.id, r.parent, r.child, r.weight.num, r.weight.den]))}` +
      `,"root":${JSON.stringify(this.root)}` +
      `,"roster":${canonicalJson(this.#roster.transitions.map((t) => [t.index, t.replica, t.enrolled]))}` +
      `,"sessions":[${sessionsText}]` +
      (this.#fixed === null ? "" : `,"settings":${canonicalJson(fixedSettingsJson(this.#fixed))}`) +
      "}"
    );
  }

  /** The snapshot bytes of the whole state (governed.md R-S4): UTF-8 of `stateText()`. */
  encode(): Uint8Array {
    return new TextEncoder().encode(this.stateText());
  }

  /**
   * Rebuilds a state from `encode()` bytes. The snapshot must be of the same `root` and claims options (a replay
   * from index 1 must decide alike) and, when it carries the log's fixed settings, of equal settings (else the cause
   * is a `SettingsMismatchError`); anything `encode` could not have produced throws.
   */
  static decode(bytes: Uint8Array, options: ControlStateOptions): ControlState {
    const st = new ControlState(options);
    st.#restore(bytes);
    return st;
  }

  #install(index: LogIndex, bytes: Uint8Array): AppliedStep {
    if (index <= this.appliedIndex) throw new BrokenInvariant(`snapshot through ${index} installed after ${this.appliedIndex}`);
    this.#restore(bytes);
    if (this.appliedIndex !== index) throw new BrokenInvariant(`snapshot through ${index} holds a state applied through ${this.appliedIndex}`);
    return { index, kind: "install", envelope: null, outcome: null, decided: false, publish: [this.#projection.snapshot()], enrolled: [...this.#roster.enrolled].sort(byId) };
  }

  #restore(bytes: Uint8Array): void {
    const bad = (why: string): never => {
      throw new BrokenInvariant(`snapshot: ${why}`);
    };
    let doc: Record<string, unknown>;
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      doc = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return bad("not UTF-8 JSON");
    }
    if (typeof doc !== "object" || doc === null || (doc.format !== CONTROL_STATE_FORMAT && doc.format !== CONTROL_STATE_FORMAT_SETTINGS)) {
      bad(`format is neither ${CONTROL_STATE_FORMAT} nor ${CONTROL_STATE_FORMAT_SETTINGS}`);
    }
    let fixed: FixedSettings | null = null;
    if (doc.format === CONTROL_STATE_FORMAT && this.#fixed !== null) bad(`no settings, where the log fixed them at index ${this.#fixed.fixedAt}`);
    if (doc.format === CONTROL_STATE_FORMAT_SETTINGS) {
      try {
        fixed = fixedSettingsFromJson(doc.settings);
      } catch (e) {
        return bad((e as Error).message);
      }
      // before anything else: the message then names the setting to fix, not the first field that disagrees
      this.#checkSettings(fixed, "those of the snapshot this member was handed");
    } else if ("settings" in doc) bad(`settings in a ${CONTROL_STATE_FORMAT} snapshot`);
    if (doc.root !== this.root) bad(`root is ${JSON.stringify(doc.root)}, this peer's is ${JSON.stringify(this.root)}`);
    const arr = (v: unknown, what: string): unknown[] => (Array.isArray(v) ? v : bad(`${what} must be an array`));
    const str = (v: unknown, what: string): string => (typeof v === "string" && v.length > 0 ? v : bad(`${what} must be a non-empty string`));
    const int = (v: unknown, what: string): number => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : bad(`${what} must be a safe integer ≥ 0`));
    const big = (v: unknown, what: string): bigint => (typeof v === "string" && /^(0|[1-9][0-9]*)$/.test(v) ? BigInt(v) : bad(`${what} must be a decimal string`));
    const applied = int(doc.appliedIndex, "appliedIndex");

    const records = new Map<AttachmentId, AttachmentRecord>();
    const inbound = new Map<GroupId, AttachmentId[]>();
    for (const x of arr(doc.records, "records")) {
      const [id, parent, child, num, den] = arr(x, "record");
      const r = Object.freeze({ id: AttachmentId(str(id, "record id")), parent: GroupId(str(parent, "parent")), child: GroupId(str(child, "child")), weight: Weight.of(big(num, "num"), big(den, "den")) });
      records.set(r.id, r);
      const list = inbound.get(r.child) ?? [];
      list.push(r.id);
      inbound.set(r.child, list);
    }
    for (const list of inbound.values()) list.sort(byId);
    const lifecycle = new Map<AttachmentId, Lifecycle>();
    for (const x of arr(doc.lifecycle, "lifecycle")) {
      const [id, lc] = arr(x, "lifecycle entry");
      if (typeof lc !== "string" || !(lc in LIFECYCLE_RANK)) bad("lifecycle value");
      const e = AttachmentId(str(id, "lifecycle id"));
      if (!records.has(e)) bad(`lifecycle of ${e} without its record`);
      lifecycle.set(e, lc as Lifecycle);
    }
    if (lifecycle.size !== records.size) bad("a record without a lifecycle");
    const mints = new Map<MintId, MintRecord>();
    let total = 0n;
    for (const x of arr(doc.mints, "mints")) {
      const [id, root, holder, amount] = arr(x, "mint");
      const m = Object.freeze({ root: GroupId(str(root, "mint root")), holder: ReplicaId(str(holder, "mint holder")), amount: big(amount, "mint amount") });
      if (m.root !== this.root) bad("a mint at another root");
      total += m.amount;
      mints.set(MintId(str(id, "mint id")), m);
    }
    if (total > MAX) bad("mintedTotal overflows");
    let projection: EntitlementLedger;
    try {
      projection = EntitlementLedger.decode(str(doc.projection, "projection"));
    } catch (e) {
      return bad(`projection: ${(e as Error).message}`);
    }
    if (projection.mintedTotal() !== total) bad("the projection's mints disagree with the mint list");
    for (const [e, r] of records) {
      const pr = projection.record(e);
      if (pr === null || !sameRecord(pr, r) || projection.lifecycle(e) !== lifecycle.get(e)) bad(`the projection disagrees about ${e}`);
    }
    if (projection.knownEdges().length !== records.size) bad("the projection knows other edges");
    const transitions: RosterTransition[] = arr(doc.roster, "roster").map((x) => {
      const [index, replica, enrolled] = arr(x, "roster transition");
      if (typeof enrolled !== "boolean") bad("roster transition flag");
      return { index: int(index, "roster index"), replica: ReplicaId(str(replica, "roster replica")), enrolled: enrolled as boolean };
    });
    const roster = Roster.restore(applied, transitions);
    const sessions = new Map<string, Session>();
    for (const x of arr(doc.sessions, "sessions")) {
      const [client, floor, outcomes] = arr(x, "session");
      const s: Session = { floor: int(floor, "session floor"), outcomes: new Map() };
      for (const y of arr(outcomes, "session outcomes")) {
        const [seq, digest, outcome] = arr(y, "session outcome");
        const sq = int(seq, "seq");
        if (sq < s.floor) bad("an outcome below its session's floor");
        s.outcomes.set(sq, { digest: str(digest, "digest"), outcome: outcomeFromJson(outcome) });
      }
      sessions.set(str(client, "client"), s);
    }
    const claimsText = str(doc.claims, "claims");
    let claims = decodeClaims(claimsText);
    // compared in canonical spelling (a capacity of 1 is an unlisted key's): a snapshot of an older build may list it
    const got = JSON.parse(claimsText) as Record<string, unknown>;
    const theirs = canonicalClaimsOfTable(got);
    const mine = this.#claimsOptions;
    if (canonicalJson(theirs.roster) !== canonicalJson(mine.roster)) bad("the claims table was built with other roster options");
    if (canonicalJson(theirs.capacity) !== canonicalJson(mine.capacity)) bad("the claims table was built with other capacity options");
    if (theirs.maxPerHolder !== mine.maxPerHolder) bad("the claims table was built with other maxPerHolder options");
    const claimsNow = int(doc.claimsNow, "claimsNow");
    if (claims.now !== claimsNow) bad(`claimsNow ${claimsNow} differs from the claims table's now ${claims.now}`);
    // the retention queue, rebuilt from the recorded indexes (a recorded outcome always carries its entry's index)
    const queue: WindowedOutcome[] = [];
    const emptyWindowed: string[] = [];
    let windowedSessions = 0;
    for (const [client, s] of sessions) {
      if (!windowed(client)) continue;
      windowedSessions++;
      if (s.outcomes.size === 0) emptyWindowed.push(client);
      for (const [seq, o] of s.outcomes) {
        const at = o.outcome.index;
        if (at === null || at > applied) return bad(`an outcome of ${client} recorded at index ${at}, applied through ${applied}`);
        queue.push({ index: at, client, seq });
      }
    }
    queue.sort((a, b) => a.index - b.index);
    this.#records = records;
    this.#lifecycle = lifecycle;
    this.#inbound = inbound;
    this.#mints = mints;
    this.#mintedTotal = total;
    this.#projection = new LedgerReplica(projection);
    this.#roster = roster;
    this.#sessions = sessions;
    this.#windowQueue = queue;
    this.#windowHead = 0;
    this.#windowedSessions = windowedSessions;
    this.#emptyWindowed = emptyWindowed;
    this.#claims = claims;
    this.#claimsNow = claimsNow;
    this.#fixed = fixed;
    if (this.stateText() !== text) bad("not the canonical encoding of the state it holds");
    if (canonicalJson(got.capacity as Canonical) !== canonicalJson(mine.capacity.length === 0 ? undefined : (mine.capacity as Canonical))) {
      // an older build's table listing a capacity of 1: the same decisions, re-spelled as this member builds its
      // table, so that its later snapshots equal those of members that replayed
      const { roster, capacity, maxPerHolder, now, lastToken, claims: held, format } = got;
      claims = decodeClaims(JSON.stringify({ format, roster, capacity: mine.capacity.length === 0 ? undefined : mine.capacity, maxPerHolder, now, lastToken, claims: held }));
      this.#claims = claims;
    }
  }
}
