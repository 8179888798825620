/**
 * The driver (imperative shell) of the Raft core: it loads the store, runs the core's ready/advance cycle with
 * injected storage, transport, timers and randomness, and exposes the `RaftNode` API of governed.md §4.1.
 *
 * Group commit (R-R9): requests only mark the node dirty; one processing turn, scheduled with `timers.set(…, 0)`,
 * takes everything that arrived in the meantime as one `Ready`, so proposals that arrive together are appended
 * in one storage write. Persistence precedes every message that depends on it (R-P1, R-P2).
 *
 * Leader pipelining: a leader's ready that only appends (`RaftCore.pipelinable`) is sent and acknowledged at once
 * while its append is written in the background, so new entries reach followers while the leader's previous
 * sync is still running; appends queued meanwhile go to storage as one call. The leader counts its own entries
 * toward commitment only once written (`appendsDurable`). Every other ready waits for those writes, then
 * persists, then sends — storage calls are never concurrent and stay in order.
 *
 * Compaction in the background (issue 15): a node's own compaction (`saveSnapshot` + `discardThrough` of a
 * snapshot its state machine published, the `local` steps of a ready) is queued behind the pipelined appends and
 * written like them, while the node keeps sending. No message depends on it: the snapshot covers applied, hence
 * committed, entries that stay durable in the log until the snapshot is saved, and the prefix is discarded only
 * after (R-P4); the leader never counts it toward commitment. Blocking it silenced a leader for a whole snapshot
 * write (711 ms under load in a process test) — no heartbeats, so followers timed out and took over. What does
 * depend on a snapshot write stays blocking: a follower's acknowledgement of an InstallSnapshot is sent only once
 * the installed snapshot is durable (those steps are not `local`). A later ready that must persist before it
 * sends waits for every queued write first, so storage calls still never overlap and stay in ready order.
 */
import { WatchCell } from "@heddle/seam";
import type { Timers, Watch } from "@heddle/seam";
import { decodeMessage, encodeMessage } from "./codec.ts";
import { raftConfig } from "./config.ts";
import type { RaftConfig } from "./config.ts";
import { isLocalStep, RaftCore } from "./core.ts";
import type { Outcome, RaftRefusal, Ready, SnapshotStall, StorageOp } from "./core.ts";
import {
  InvalidMembershipError,
  LeadershipLostError,
  LeadershipTransferError,
  MembershipChangeInProgressError,
  NodeShutdownError,
  NotLeaderError,
  OverloadedError,
  PayloadTooLargeError,
  ProposalAbortedError,
} from "./errors.ts";
import type { RaftStorage } from "./storage.ts";
import type { RaftTraceEvent } from "./trace.ts";
import type { RaftTransport } from "./transport.ts";
import { sameConfig } from "./types.ts";
import type { ClusterConfig, Committed, HardState, LogEntry, LogIndex, NodeId, ProposalKey, Role } from "./types.ts";

/** Most trace events buffered for a slow `trace` reader; older ones are dropped (and counted). */
export const MAX_TRACE_BUFFER = 4096;
/**
 * Driver tick period: how often a leader's core clock is advanced (its heartbeats, quorum checks and commit notices
 * fall due every few ms). Any other member's clock is advanced at its election deadline (and by every input).
 */
export const TICK_MS = 10;

/** A running Raft member (governed.md §4.1). */
export interface RaftNode {
  readonly id: NodeId;
  readonly role: Watch<Role>;
  readonly leader: Watch<NodeId | null>;
  readonly commitIndex: Watch<LogIndex>;
  /** Latest configuration in the log, committed or not. */
  readonly membership: Watch<ClusterConfig>;
  /**
   * Resolves once the entry commits, with its position; rejects with the errors of `errors.ts`, or `RangeError`
   * for a key no frame can carry (`key.client` over `MAX_STRING_BYTES` UTF-8 bytes, `key.seq` not a safe integer ≥ 0).
   */
  propose(command: Uint8Array, key: ProposalKey | null, signal?: AbortSignal): Promise<{ index: LogIndex; term: number }>;
  /** Replays committed items from `fromIndex`, then tails live commits: every index exactly once, in order. */
  committedFrom(fromIndex: LogIndex): AsyncIterable<Committed>;
  /** Leader only: a linearizable read index (wait until your applied index reaches it). */
  readIndex(): Promise<LogIndex>;
  /**
   * Single-server membership change; resolves with the new configuration once committed. `RangeError` for a target
   * no frame can carry (a member id over `MAX_STRING_BYTES` UTF-8 bytes, a list over `MAX_CONFIG_MEMBERS`).
   */
  changeMembership(target: ClusterConfig): Promise<ClusterConfig>;
  /**
   * Leader only (`NotLeaderError` elsewhere): hands leadership to the voter `target` (§4.10) and resolves once
   * the target leads a later term — confirmed by the target's own leader frame, never by this node stepping
   * down. Rejects with `LeadershipTransferError` (`invalid-target`, `in-progress`, `timed-out` after one
   * `electionTimeoutMaxMs`, `superseded`). While it runs, proposals reaching this node as leader are held and
   * then refused with `NotLeaderError` — a `LeadershipLostError`, retried like one — unless the transfer was
   * abandoned with this node still leading, in which case they are appended.
   */
  transferLeadership(target: NodeId): Promise<void>;
  /** The state machine's snapshot of its applied state through `throughIndex`; the log prefix is discarded. */
  publishSnapshot(s: { throughIndex: LogIndex; state: Uint8Array }): void;
  readonly trace: AsyncIterable<RaftTraceEvent>;
  /** Frames refused so far, by reason (including undecodable ones). */
  refusedFrames(): ReadonlyMap<string, number>;
  /**
   * Snapshot transfers that cannot complete because the snapshot is above its receiver's `snapshotMaxBytes`: the
   * one this member refuses (until it has caught up), and — on the leader — each follower that refuses it. Empty
   * when none; each one's `message` names the setting, the snapshot's size and the member to raise it on.
   */
  snapshotStalls(): readonly SnapshotStall[];
  /**
   * Errors thrown by subscribers of `role`, `leader`, `commitIndex` and `membership`, caught so far. They are set
   * from the member's own processing turn: a subscriber's throw is a bug in the subscriber, and is counted (and
   * handed to `RaftNodeOptions.onSubscriberError`) instead of ending this member's processing.
   */
  subscriberErrors(): number;
  /** Resolves once the store is loaded and the node runs; rejects if the store is corrupt (R-P3). */
  readonly started: Promise<void>;
  /** Stops the node and rejects every pending call with `NodeShutdownError`. */
  close(): Promise<void>;
}

/** Options of `raftNode`. `timers` and `random` are required so a simulation can inject them. */
export interface RaftNodeOptions {
  readonly cluster: ClusterConfig;
  readonly transport: RaftTransport;
  readonly storage: RaftStorage;
  readonly timers: Timers;
  readonly random: () => number;
  readonly config?: Partial<RaftConfig>;
  /**
   * Runs `fn` once the current burst of input has been taken (the group-commit turn). Default
   * `timers.set(fn, 0)`, deterministic under virtual timers; production passes `setImmediate`, which runs right
   * after the I/O callbacks of one event-loop turn instead of waiting for the ~1 ms timer granularity.
   */
  readonly defer?: (fn: () => void) => void;
  /** Who may speak Raft to this member; frames from anyone else are refused as `not-member` (`RaftCoreOptions.admit`). */
  readonly admit?: (from: NodeId) => boolean;
  /**
   * Keys the leader's dedup cache (R-D4) may coalesce; default all. Under `heddleGoverned`, pass
   * `(k) => !k.client.startsWith(IDEMPOTENCY_CLIENT_PREFIX)`: an `idem:` outcome is forgotten after its window
   * while its entry may still be in the log, and a retry coalesced with that entry could not be answered.
   */
  readonly coalesce?: (key: ProposalKey) => boolean;
  /** Told of each error a `role`/`leader`/`commitIndex`/`membership` subscriber throws (counted in `subscriberErrors()` either way). */
  readonly onSubscriberError?: (error: unknown) => void;
}

function errorFor(r: RaftRefusal, detail?: string): Error {
  switch (r) {
    case "invalid-argument":
      return new RangeError(detail ?? "an argument exceeds a limit of the Raft codec");
    case "leadership-lost":
      return new LeadershipLostError("leadership was lost before the request was confirmed; it may still commit");
    case "not-leader":
      return new NotLeaderError("this node is not the leader");
    case "payload-too-large":
      return new PayloadTooLargeError("the command cannot fit one frame");
    case "membership-in-progress":
      return new MembershipChangeInProgressError("a configuration change is uncommitted, or the leader's no-op is not committed yet");
    case "invalid-membership":
      return new InvalidMembershipError("the target is not a single-server step from the current configuration");
    case "overloaded":
      return new OverloadedError("too many requests are waiting");
    case "aborted":
      return new ProposalAbortedError("aborted");
    case "transferring":
      return new NotLeaderError("the leader was handing leadership over; retry with the same key — it now goes to the new leader (or back here if the transfer was abandoned)");
    case "transfer-invalid-target":
      return new LeadershipTransferError("invalid-target", "the transfer target is not a voter of the current configuration (a learner or a stranger); choose a voter");
    case "transfer-in-progress":
      return new LeadershipTransferError("in-progress", "a transfer to another target is in progress; wait for it to end, then retry");
    case "transfer-timed-out":
      return new LeadershipTransferError("timed-out", "the target did not take over within one electionTimeoutMaxMs (unreachable or too far behind?); check it and retry");
    case "transfer-superseded":
      return new LeadershipTransferError("superseded", "another election decided leadership before the target took over; look at the current leader and retry if needed");
  }
}

/**
 * Storage work acknowledged before it is durable: a leader's pipelined appends (the ready, and the term it was
 * taken in) or a node's own compaction steps.
 */
type DeferredWrite =
  | { readonly kind: "append"; readonly rd: Ready; readonly term: number }
  | { readonly kind: "compaction"; readonly ops: readonly StorageOp[] };

interface Pending {
  resolve(o: Outcome & { ok: true }): void;
  reject(e: Error): void;
}

/** Starts a Raft member; see `RaftNode`. The store is loaded asynchronously (`started`). */
export function raftNode(o: RaftNodeOptions): RaftNode {
  return new Driver(o);
}

class Driver implements RaftNode {
  #subscriberErrors = 0;
  // a subscriber's throw must not end the processing turn that set the cell (the rest of its ready would be lost)
  readonly #onSubscriberError = (e: unknown): void => {
    this.#subscriberErrors++;
    try {
      this.#o.onSubscriberError?.(e);
    } catch {
      // a reporting hook that throws is a second bug of the same caller; it is already counted
    }
  };
  readonly id: NodeId;
  readonly role: WatchCell<Role>;
  readonly leader = new WatchCell<NodeId | null>(null, Object.is, this.#onSubscriberError);
  readonly commitIndex = new WatchCell<LogIndex>(0, Object.is, this.#onSubscriberError);
  readonly membership: WatchCell<ClusterConfig>;
  readonly started: Promise<void>;
  readonly #o: RaftNodeOptions;
  readonly #cfg: RaftConfig;
  #core: RaftCore | null = null;
  #closed = false;
  #scheduled = false;
  #running: Promise<void> | null = null;
  /** Writes acknowledged before they are durable (pipelined appends, own compactions), oldest first. */
  readonly #deferred: DeferredWrite[] = [];
  /** The deferred write in flight, if any: at most one storage call runs at a time. */
  #writer: Promise<void> | null = null;
  #tickHandle: unknown = null;
  /** When the armed tick fires (Infinity: none armed), and whether it was armed at a leader's cadence. */
  #tickAt = Infinity;
  #tickLeader = false;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  #delivered = 0;
  readonly #deliverWaiters = new Set<() => void>();
  readonly #traceBuffer: RaftTraceEvent[] = [];
  readonly #traceWaiters = new Set<() => void>();
  #undecodable = 0;
  #unsubscribe: (() => void) | null = null;
  #fatal: Error | null = null;

  constructor(o: RaftNodeOptions) {
    this.#o = o;
    this.#cfg = raftConfig(o.config);
    this.id = o.transport.self;
    this.role = new WatchCell<Role>(o.cluster.learners.includes(this.id) ? "learner" : "follower", Object.is, this.#onSubscriberError);
    this.membership = new WatchCell<ClusterConfig>(o.cluster, sameConfig, this.#onSubscriberError);
    this.started = this.#start();
    this.started.catch(() => {});
  }

  async #start(): Promise<void> {
    const persisted = await this.#o.storage.load();
    if (this.#closed) throw new NodeShutdownError("closed before start");
    this.#core = new RaftCore({ id: this.id, bootstrap: this.#o.cluster, persisted, config: this.#cfg, random: this.#o.random, now: this.#o.timers.now(), ...(this.#o.admit !== undefined ? { admit: this.#o.admit } : {}), ...(this.#o.coalesce !== undefined ? { coalesce: this.#o.coalesce } : {}) });
    this.#delivered = this.#core.floor;
    this.#unsubscribe = this.#o.transport.onFrame((from, frame) => this.#onFrame(from, frame));
    this.#tick();
    this.#schedule();
  }

  /**
   * Arms the clock timer. A leader ticks every TICK_MS. Any other member sleeps until its election deadline, but
   * arms no later than the shortest election timeout from now: each AppendEntries moves the deadline to at least
   * that far ahead, so a follower's timer needs no re-arming per message, and wakes about once per election
   * timeout instead of every TICK_MS (100 wakes a second cost an idle follower 1.3 % of a core, measured on the
   * bench's 5-member cluster).
   */
  #tick(): void {
    if (this.#closed || this.#core === null) return;
    const core = this.#core;
    const now = this.#o.timers.now();
    this.#tickLeader = core.role === "leader";
    const at = this.#tickLeader ? now + TICK_MS : Math.min(core.nextDeadline, now + this.#cfg.electionTimeoutMinMs);
    if (this.#tickHandle !== null) this.#o.timers.clear(this.#tickHandle);
    this.#tickAt = Math.max(at, now);
    this.#tickHandle = this.#o.timers.set(() => {
      this.#tickHandle = null;
      this.#tickAt = Infinity;
      if (this.#closed || this.#core === null) return;
      this.#core.tick(this.#o.timers.now());
      if (this.#core.hasReady()) this.#schedule();
      this.#tick();
    }, this.#tickAt - now);
  }

  /**
   * After an input: re-arms the clock when the member has just become leader, or when its core has a timeout due
   * before the armed tick (a step-down's fresh election deadline). A leader's tick is never postponed.
   */
  #retick(): void {
    const core = this.#core;
    if (core === null || this.#closed) return;
    if (core.role === "leader" ? !this.#tickLeader : core.nextDeadline < this.#tickAt) this.#tick();
  }

  #onFrame(from: NodeId, frame: Uint8Array): void {
    if (this.#closed || this.#core === null) return;
    const m = decodeMessage(frame);
    if (m === null) {
      this.#undecodable++;
      this.#pushTrace({ type: "frameRefused", from, reason: "undecodable" });
      return;
    }
    // keep the core's clock current, so a forwarded entry is stamped with the leader's now (R-F2)
    this.#core.tick(this.#o.timers.now());
    this.#core.step(from, m);
    this.#schedule();
    this.#retick();
  }

  #schedule(): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    const defer = this.#o.defer ?? ((fn: () => void) => void this.#o.timers.set(fn, 0));
    defer(() => {
      this.#scheduled = false;
      if (this.#running === null) {
        this.#running = this.#process().finally(() => {
          this.#running = null;
          if (this.#core?.hasReady() && !this.#closed) this.#schedule();
        });
      }
    });
  }

  async #process(): Promise<void> {
    const core = this.#core;
    if (core === null) return;
    while (!this.#closed && core.hasReady()) {
      core.setMaxMessageBytes(this.#o.transport.maxPayloadBytes ?? this.#cfg.maxMessageBytes);
      const rd = core.ready();
      // the node's own compaction goes after the ready's other steps (they never touch its indexes, `StorageOp`)
      const compaction = rd.storage.filter(isLocalStep);
      if (core.pipelinable(rd)) {
        // leader pipelining: write in the background, send at once; the next ready need not wait for this sync.
        // The write is handed to storage before the frames go out, so that its sync runs while they are encoded
        // and sent rather than after (at one client the sends took a fifth of a millisecond, and the leader's own
        // sync is half of the commit quorum)
        this.#deferred.push({ kind: "append", rd, term: core.term });
        if (compaction.length > 0) this.#deferred.push({ kind: "compaction", ops: compaction });
        this.#writeDeferred();
        for (const env of rd.earlyMessages) this.#o.transport.send(env.to, encodeMessage(env.message));
        for (const env of rd.messages) this.#o.transport.send(env.to, encodeMessage(env.message));
        for (const t of rd.trace) this.#pushTrace(t);
        core.advance(rd, { appendsPending: true });
        this.#afterReady(rd);
        continue;
      }
      const now = compaction.length > 0 ? rd.storage.filter((op) => !isLocalStep(op)) : rd.storage;
      try {
        for (const env of rd.earlyMessages) this.#o.transport.send(env.to, encodeMessage(env.message));
        if (rd.hardState !== null || now.length > 0) {
          // storage calls stay in the order the readies were taken (a ready that writes nothing before it sends
          // need not wait: its commits were counted from durable copies, and what is queued is pipelined
          // appends, which only a leader has, and compactions, which nothing sent depends on)
          await this.#deferredWritten();
          await this.#persist(rd.hardState, now);
        }
      } catch (e) {
        this.#failStop(e as Error);
        return;
      }
      if (this.#closed) return;
      for (const env of rd.messages) this.#o.transport.send(env.to, encodeMessage(env.message));
      if (compaction.length > 0) {
        this.#deferred.push({ kind: "compaction", ops: compaction });
        this.#writeDeferred();
      }
      for (const t of rd.trace) this.#pushTrace(t);
      core.advance(rd);
      this.#afterReady(rd);
    }
  }

  /**
   * Writes the deferred storage work, one call at a time, oldest first: pipelined appends queued together (while
   * the previous call was in flight) go in one storage call (group commit across readies), after which the core
   * hears which are durable; a compaction's steps run in their order.
   */
  #writeDeferred(): void {
    if (this.#writer !== null || this.#deferred.length === 0 || this.#closed) return;
    let write: Promise<void>;
    let appended: { rd: Ready; term: number }[] = [];
    const head = this.#deferred[0]!;
    if (head.kind === "append") {
      let n = 1;
      while (n < this.#deferred.length && this.#deferred[n]!.kind === "append") n++;
      appended = this.#deferred.splice(0, n) as { rd: Ready; term: number }[];
      const entries: LogEntry[] = [];
      for (const { rd } of appended) for (const op of rd.storage) if (op.op === "append") for (const e of op.entries) entries.push(e);
      write = this.#o.storage.append(entries);
    } else {
      this.#deferred.shift();
      write = this.#persist(null, head.ops);
    }
    this.#writer = write.then(
      () => {
        this.#writer = null;
        if (this.#closed || this.#core === null) return;
        for (const b of appended) this.#core.appendsDurable(b.rd, b.term);
        this.#writeDeferred();
        if (appended.length > 0) this.#schedule();
      },
      (e: unknown) => {
        this.#writer = null;
        this.#failStop(e as Error);
      },
    );
  }

  /** Resolves once no deferred write is queued or being written. */
  async #deferredWritten(): Promise<void> {
    while (this.#writer !== null) await this.#writer;
    if (this.#fatal !== null) throw this.#fatal;
  }

  async #persist(hardState: HardState | null, ops: readonly StorageOp[]): Promise<void> {
    const s = this.#o.storage;
    if (hardState !== null) await s.saveTermAndVote(hardState.term, hardState.votedFor);
    for (const op of ops) {
      switch (op.op) {
        case "snapshot":
          await s.saveSnapshot(op.snapshot);
          break;
        case "discardThrough":
          await s.discardThrough(op.index);
          break;
        case "truncateFrom":
          await s.truncateFrom(op.index);
          break;
        case "append":
          await s.append(op.entries);
          break;
      }
    }
  }

  #afterReady(rd: Ready): void {
    const core = this.#core!;
    for (const c of rd.committed) {
      const idx = c.kind === "install" ? c.snapshot.throughIndex : c.kind === "entry" ? c.entry.index : c.index;
      if (idx > this.#delivered) this.#delivered = idx;
    }
    if (rd.committed.length > 0) {
      const waiters = [...this.#deliverWaiters];
      this.#deliverWaiters.clear();
      for (const w of waiters) w();
    }
    for (const out of rd.outcomes) {
      const p = this.#pending.get(out.id);
      if (p === undefined) continue;
      this.#pending.delete(out.id);
      if (out.ok) p.resolve(out);
      else p.reject(errorFor(out.refusal, out.detail));
    }
    this.#retick();
    this.role.set(core.role);
    this.leader.set(core.leader);
    this.commitIndex.set(core.commitIndex);
    this.membership.set(core.config);
  }

  #failStop(e: Error): void {
    this.#fatal = e;
    void this.close();
  }

  #request(start: (core: RaftCore, id: number) => void): { id: number; promise: Promise<Outcome & { ok: true }> } {
    const id = this.#nextId++;
    const promise = new Promise<Outcome & { ok: true }>((resolve, reject) => {
      if (this.#closed) return reject(new NodeShutdownError(this.#fatal ? `node stopped: ${this.#fatal.message}` : "node closed"));
      this.#pending.set(id, { resolve, reject });
      this.started.then(
        () => {
          if (this.#closed || !this.#pending.has(id)) return;
          this.#core!.tick(this.#o.timers.now());
          start(this.#core!, id);
          this.#schedule();
          this.#retick();
        },
        (err: unknown) => {
          this.#pending.delete(id);
          reject(err as Error);
        },
      );
    });
    return { id, promise };
  }

  async propose(command: Uint8Array, key: ProposalKey | null, signal?: AbortSignal): Promise<{ index: LogIndex; term: number }> {
    if (signal?.aborted) throw new ProposalAbortedError("aborted before send");
    const { id, promise } = this.#request((core, rid) => core.propose(rid, command, key));
    const onAbort = (): void => {
      const p = this.#pending.get(id);
      if (p === undefined) return;
      this.#pending.delete(id);
      const unsent = this.#core?.abort(id) ?? true;
      // R-F5: before send nothing was sent; after send the command may still commit.
      p.reject(new ProposalAbortedError(unsent ? "aborted before send" : "aborted after send; the command may still commit"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const o = await promise;
      return { index: o.index, term: o.term };
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  async readIndex(): Promise<LogIndex> {
    const o = await this.#request((core, id) => core.readIndex(id)).promise;
    return o.index;
  }

  async changeMembership(target: ClusterConfig): Promise<ClusterConfig> {
    await this.#request((core, id) => core.changeMembership(id, target)).promise;
    return { voters: [...target.voters], learners: [...target.learners] };
  }

  async transferLeadership(target: NodeId): Promise<void> {
    await this.#request((core, id) => core.transferLeadership(id, target)).promise;
  }

  publishSnapshot(s: { throughIndex: LogIndex; state: Uint8Array }): void {
    if (this.#closed || this.#core === null) return;
    if (this.#core.compact(s.throughIndex, s.state)) this.#schedule();
  }

  snapshotStalls(): readonly SnapshotStall[] {
    return this.#core?.snapshotStalls ?? [];
  }

  subscriberErrors(): number {
    return this.#subscriberErrors;
  }

  refusedFrames(): ReadonlyMap<string, number> {
    const m = new Map<string, number>(this.#core?.refusedFrames ?? []);
    if (this.#undecodable > 0) m.set("undecodable", this.#undecodable);
    return m;
  }

  committedFrom(fromIndex: LogIndex): AsyncIterable<Committed> {
    const self = this;
    return {
      [Symbol.asyncIterator](): AsyncIterator<Committed> {
        let next = Math.max(1, fromIndex);
        return {
          async next(): Promise<IteratorResult<Committed>> {
            await self.started;
            for (;;) {
              if (self.#closed) return { done: true, value: undefined };
              const core = self.#core!;
              if (next <= self.#delivered) {
                const snap = core.snapshot;
                if (snap !== null && next <= snap.lastIndex) {
                  next = snap.lastIndex + 1;
                  return { done: false, value: { kind: "install", snapshot: { throughIndex: snap.lastIndex, state: snap.state } } };
                }
                const e = core.entryAt(next);
                if (e === undefined) throw new Error(`raft: committed index ${next} is missing from the log`);
                next++;
                return { done: false, value: e.kind === "app" ? { kind: "entry", entry: e } : { kind: "internal", index: e.index } };
              }
              await new Promise<void>((resolve) => self.#deliverWaiters.add(resolve));
            }
          },
          async return(): Promise<IteratorResult<Committed>> {
            return { done: true, value: undefined };
          },
        };
      },
    };
  }

  #pushTrace(t: RaftTraceEvent): void {
    if (this.#traceBuffer.length >= MAX_TRACE_BUFFER) this.#traceBuffer.shift();
    this.#traceBuffer.push(t);
    if (this.#traceWaiters.size === 0) return; // nobody reads the trace (the common case): no copy per event
    const w = [...this.#traceWaiters];
    this.#traceWaiters.clear();
    for (const f of w) f();
  }

  get trace(): AsyncIterable<RaftTraceEvent> {
    const self = this;
    return {
      [Symbol.asyncIterator](): AsyncIterator<RaftTraceEvent> {
        return {
          async next(): Promise<IteratorResult<RaftTraceEvent>> {
            for (;;) {
              const t = self.#traceBuffer.shift();
              if (t !== undefined) return { done: false, value: t };
              if (self.#closed) return { done: true, value: undefined };
              await new Promise<void>((resolve) => self.#traceWaiters.add(resolve));
            }
          },
        };
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#tickHandle !== null) this.#o.timers.clear(this.#tickHandle);
    this.#unsubscribe?.();
    const err = new NodeShutdownError(this.#fatal ? `node stopped: ${this.#fatal.message}` : "node closed");
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
    for (const w of [...this.#deliverWaiters, ...this.#traceWaiters]) w();
    this.#deliverWaiters.clear();
    this.#traceWaiters.clear();
    if (this.#running !== null) await this.#running.catch(() => {});
    if (this.#writer !== null) await this.#writer.catch(() => {});
    await this.#o.storage.close();
  }
}
