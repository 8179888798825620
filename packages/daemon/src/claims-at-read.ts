// Granted claims with refusals answered at a read (issue 16 "Refusals without a commit"): a take that the applied
// table would refuse is answered by the Raft leader after a ReadIndex confirmation, without appending an entry.
// Grants, releases and renewals still go through the log unchanged.
import { DEFAULT_CALL_TIMEOUT_MS, LeadershipLostError, ProposalAbortedError } from "@heddle/governed";
import type { Timers } from "@heddle/node";
import type { CallOptions, ClaimRequest, ClaimsOutcome, ClaimsVerbs, ControlView } from "./control-plane.ts";

/** What the read path needs of the governed node and its Raft member. */
export interface ReadRefusalSource {
  readonly claims: ClaimsVerbs;
  controlView(): Pick<ControlView, "appliedIndex">;
  /**
   * A linearizable view: on the leader a ReadIndex confirmation, then the applied prefix reaches it. Called with
   * `leaderOnly: true`: off the leader, or once leadership is lost before the confirmation, it must reject
   * (`NotLeaderError`, a `LeadershipLostError`) rather than append a barrier — a commit per waiting take.
   */
  sync(opts?: { timeoutMs?: number; signal?: AbortSignal; leaderOnly?: boolean }): Promise<unknown>;
  /** Whether this peer is the Raft leader right now (elsewhere `sync` would append a barrier: a commit). */
  isLeader(): boolean;
  /** The leader's clock, the same one that stamps entries (`LogEntry.stampedAt`); it also times the call's budget. */
  now(): number;
  /**
   * The earliest time a take may be judged at, whatever `now` says: the latest stamp the applied log holds
   * (`ControlView.latestStamp`) and, on a log that clamps stamps, the newest stamp its confirmed reads saw
   * (`ControlLog.stampFloor`; after a snapshot install the applied stamp restarts from the snapshot's `claimsNow`).
   * On an etcd control log a proposal is stamped no earlier than the newest entry of any kind, which a peer whose
   * clock runs ahead may have pushed past this peer's clock; a lease judged live at this peer's clock could then be
   * lapsed for the log. Judging later only refuses less, so this is always safe.
   * Only the judging time is raised: the call's time budget stays on `now`, which does not jump with the log.
   */
  judgeFloor?(): number;
  /** Bounds a wait for another take by what is left of the caller's time. */
  readonly timers: Pick<Timers, "set" | "clear">;
}

/** Counters of the read path, for `/metrics` and tests. */
export interface ReadRefusalCounts {
  /** Takes answered with a refusal at a read, without a commit. */
  refusedAtRead: number;
  /** Takes the local table refused but the confirmed read let through to the log (the holder had just gone). */
  passedAfterRead: number;
  /** Takes proposed (the local table would grant, or this peer is not the leader, or a key was given). */
  proposed: number;
  /** Times a take waited for another take of one of its keys, proposed here and not yet applied, to settle. */
  waitedForTake?: number;
}

/**
 * At most this many waits for an in-flight take of the same key per call; then the take is proposed as it is
 * (always correct, only dearer). A wait lasts until the other take settles — its commit and local apply, normally
 * a few ms — but never beyond what is left of this call's own `timeoutMs` (`DEFAULT_CALL_TIMEOUT_MS` when it has
 * none), or past its signal.
 */
export const MAX_TAKE_WAITS = 8;

/**
 * The error of a take whose time ran out (or whose signal aborted) before it was proposed — while it waited for
 * another take of its key, or for a confirmed read. Nothing was proposed, so nothing will commit: unlike
 * `OutcomeUnknownError`, a definite "not applied" (the API answers 503 `unavailable`, retrying is safe).
 */
function notProposed(why: string, cause?: unknown): ProposalAbortedError {
  return new ProposalAbortedError(`claims take: ${why}; nothing was proposed, so it will not commit (retrying is safe)`, cause === undefined ? undefined : { cause });
}

/**
 * The keys a take names, compared as the table compares them (trimmed), each with whether it is taken exclusively
 * (anything but `shared`, or named twice with an exclusive mode, counts as exclusive); empty for a malformed request.
 */
function keysOf(request: ClaimRequest): Map<string, boolean> {
  const resources = (request as { resources?: unknown }).resources;
  const keys = new Map<string, boolean>();
  if (!Array.isArray(resources)) return keys;
  for (const r of resources) {
    const { key, mode } = (r ?? {}) as { key?: unknown; mode?: unknown };
    if (typeof key === "string") keys.set(key.trim(), keys.get(key.trim()) === true || mode !== "shared");
  }
  return keys;
}

/** A take proposed here and not yet settled, as one of the keys it names sees it. */
interface InFlightTake {
  readonly settled: Promise<void>;
  readonly exclusive: boolean;
}

/**
 * Wraps `source.claims` so that `take` answers a refusal from the leader's applied table whenever the table,
 * read at a confirmed ReadIndex and judged at the leader's clock (never earlier than `claimsNow`), refuses it.
 *
 * Why it is linearizable: the ReadIndex confirmation, started after the call began, proves that nothing past the
 * read index had been committed (by any leader) when its round started, and the table is judged once the applied
 * prefix has reached it — so
 * the refusal is the answer the log's state gave at a point inside the call. One confirmation serves the whole
 * call: every entry past its read index was committed after the call began (by this leader, or by a later one
 * elected after the confirmation), so judging the applied table again later in the call — after waiting for
 * another take — is still the log's state at a point inside the call. Why it is cheap: a refused take costs at
 * most one heartbeat round (shared with every read of that round), no append and no fsync; a take the local
 * (unconfirmed) table would grant skips the read and is proposed at once.
 *
 * Contention: when many takes of one free key arrive together, the table is free for all of them until the first
 * grant applies, so each would be proposed and all but one refused *in the log* — one commit per refusal. Instead,
 * the leader proposes one take per key at a time: a take naming a key for which a take proposed here has not yet
 * settled waits for it (at most {@link MAX_TAKE_WAITS} times) while its confirmed read runs alongside, then is
 * judged again — normally refused at once, naming the new holder. It waits only when those takes could make it
 * refuse: shared takes of a key with a free unit for each of them (readers of a `capacity: null` key, slots of a
 * pool) are proposed together, at once. Waiting never changes an answer's correctness: each answer is still a
 * committed outcome or a refusal at a confirmed read; it only keeps refusals out of the log.
 *
 * Not on this path: a take carrying an idempotency key (its recorded outcome must be the one answered), and any
 * take on a peer that is not the leader (there a confirmation would itself be a commit: governed.md §3.10 `sync()`
 * appends a barrier off the leader, follower-side ReadIndex is not in v1) — those are proposed, forwarded by Raft
 * to the leader (R-F1), and a refusal among them is answered from the log.
 */
export function claimsWithReadRefusals(source: ReadRefusalSource, counts?: ReadRefusalCounts): ClaimsVerbs {
  const inner = source.claims;
  const judgeTime = (): number => Math.max(source.now(), source.judgeFloor?.() ?? 0);
  /** Per key, the takes proposed here that name it and have not yet settled. */
  const inFlight = new Map<string, Set<InFlightTake>>();
  const propose = (request: ClaimRequest, opts: CallOptions): Promise<ClaimsOutcome> => {
    // counted once the node took it: a malformed take throws here (the API's 400) and was never proposed
    const p = inner.take(request, opts);
    if (counts !== undefined) counts.proposed++;
    return p;
  };
  const proposeTracked = (request: ClaimRequest, opts: CallOptions, keys: ReadonlyMap<string, boolean>): Promise<ClaimsOutcome> => {
    const p = propose(request, opts);
    const settled = p.then(
      () => {},
      () => {},
    );
    const tracked: [string, InFlightTake][] = [];
    for (const [k, exclusive] of keys) {
      const t = { settled, exclusive };
      let set = inFlight.get(k);
      if (set === undefined) inFlight.set(k, (set = new Set()));
      set.add(t);
      tracked.push([k, t]);
    }
    void settled.then(() => {
      for (const [k, t] of tracked) {
        const set = inFlight.get(k);
        set?.delete(t);
        if (set?.size === 0) inFlight.delete(k);
      }
    });
    return p;
  };
  /**
   * The in-flight takes this take must wait for: those of a key where, once they apply, this take could be refused
   * (claims.md §1) — this take or one of them is exclusive, or the key's free units do not exceed their number.
   * Shared takes of an unlimited key, or of a pool with room for all of them, go to the log together.
   */
  const busy = (keys: ReadonlyMap<string, boolean>): Promise<void>[] => {
    const out: Promise<void>[] = [];
    for (const [k, exclusive] of keys) {
      const set = inFlight.get(k);
      if (set === undefined || set.size === 0) continue;
      let blocks = exclusive;
      for (const t of set) blocks ||= t.exclusive;
      if (!blocks) {
        const free = (inner.view().availability([k]) as readonly { free?: number | null }[])[0]?.free;
        blocks = free !== null && (free === undefined || free <= set.size);
      }
      if (blocks) for (const t of set) out.push(t.settled);
    }
    return out;
  };
  /** Waits for `ps` to settle, for at most `budget.timeoutMs` and until `budget.signal` aborts; `true`: they settled. */
  const settle = (ps: readonly Promise<void>[], budget: CallOptions): Promise<boolean> =>
    new Promise<boolean>((resolve) => {
      const signal = budget.signal;
      let timer: unknown;
      const done = (settled: boolean): void => {
        if (timer !== undefined) source.timers.clear(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(settled);
      };
      const onAbort = (): void => done(false);
      if (budget.timeoutMs !== undefined) timer = source.timers.set(() => done(false), budget.timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      void Promise.all(ps).then(() => done(true));
    });
  return {
    async take(request, opts = {}) {
      if (opts.key !== undefined || !source.isLeader()) return propose(request, opts);
      const keys = keysOf(request);
      // One deadline for the whole call: the waits, the read and the proposal come out of the caller's time budget
      // — without a `timeoutMs`, the default a control call gets, counted from here (not granted afresh to the
      // read and again to the proposal after waits of their own).
      const budgetMs = opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
      const started = source.now();
      /** The caller's options for what is left of its time; throws once none is left (or it aborted). */
      const rest = (): CallOptions => {
        if (opts.signal?.aborted === true) throw notProposed("the call was aborted before the take was proposed");
        const left = budgetMs - (source.now() - started);
        if (left <= 0) throw notProposed(`its ${budgetMs} ms ran out before it was proposed`);
        return { ...opts, timeoutMs: left };
      };
      /**
       * This call's confirmed read, started at most once and only after the call began: once it is confirmed, the
       * applied table is a linearizable view for the rest of the call (see the function's comment), so a take that
       * then waits for another take of its key is judged again without a second round.
       */
      let confirmation: Promise<unknown> | null = null;
      /**
       * Ends a confirmed read left in flight when the call ends without it (it would hold its deadline timer and an
       * apply waiter until then; being leader-only, it never appends a barrier). Cleared once the read settles:
       * aborting builds a DOMException, 9 % of a leader's busy time when every refusal did it.
       */
      let readAbort: AbortController | null = null;
      const confirm = (budget: CallOptions): Promise<unknown> => {
        if (confirmation === null) {
          const ac = (readAbort = new AbortController());
          const onCallerAbort = (): void => ac.abort();
          opts.signal?.addEventListener("abort", onCallerAbort, { once: true });
          if (opts.signal?.aborted === true) ac.abort();
          confirmation = source
            .sync({ ...(budget.timeoutMs !== undefined ? { timeoutMs: budget.timeoutMs } : {}), signal: ac.signal, leaderOnly: true })
            .finally(() => {
              readAbort = null;
              opts.signal?.removeEventListener("abort", onCallerAbort);
            });
          // a read left behind when the take is proposed after all must not end as an unhandled rejection
          confirmation.catch(() => {});
        }
        return confirmation;
      };
      const proposeNow = (budget: CallOptions, tracked: boolean): Promise<ClaimsOutcome> =>
        tracked ? proposeTracked(request, budget, keys) : propose(request, budget);
      try {
        for (let waits = 0; ; ) {
          const budget = rest();
          if (!source.isLeader()) return proposeNow(budget, false);
          const pending = busy(keys);
          if (pending.length > 0 && waits < MAX_TAKE_WAITS) {
            waits++;
            if (counts !== undefined) counts.waitedForTake = (counts.waitedForTake ?? 0) + 1;
            // The read runs alongside the wait: once the other take settles, this one is normally refused, and its
            // confirmation is then already there (one round overlapped with the other take's commit, not after it).
            void confirm(budget);
            if (!(await settle(pending, budget))) {
              throw notProposed(opts.signal?.aborted === true ? "the call was aborted while it waited for another take of its key" : `its ${budgetMs} ms ran out while it waited for another take of its key`);
            }
            continue;
          }
          if (inner.view().wouldRefuse(request, judgeTime()) === undefined) return proposeNow(budget, true);
          try {
            await confirm(budget);
          } catch (e) {
            // the read ran out of time: the take itself was never proposed
            if ((e as Error | undefined)?.name === "OutcomeUnknownError") throw notProposed(`no confirmed read within its time (${(e as Error).message})`, e);
            // leadership moved before the read was confirmed: the log decides (forwarded, if this peer now follows)
            if (e instanceof LeadershipLostError) return proposeNow(rest(), source.isLeader());
            throw e;
          }
          // Judge and note the applied index in one synchronous step: nothing applies in between.
          const judgedAt = judgeTime();
          const refusal = inner.view().wouldRefuse(request, judgedAt);
          const readIndex = source.controlView().appliedIndex;
          if (refusal !== undefined) {
            if (counts !== undefined) counts.refusedAtRead++;
            return { kind: "refused-at-read", readIndex, judgedAt, claims: refusal };
          }
          // free at the read — but another take of these keys may have been proposed here while we read: wait for it
          if (busy(keys).length > 0 && waits < MAX_TAKE_WAITS) continue;
          const left = rest();
          if (counts !== undefined) counts.passedAfterRead++;
          return proposeNow(left, true);
        }
      } finally {
        (readAbort as AbortController | null)?.abort(); // assigned inside `confirm`, which TypeScript does not follow
      }
    },
    release: (holder, key, opts) => inner.release(holder, key, opts),
    releaseAll: (holder, opts) => inner.releaseAll(holder, opts),
    releaseScope: (scope, opts) => inner.releaseScope(scope, opts),
    renew: (holder, key, opts) => inner.renew(holder, key, opts),
    view: () => inner.view(),
    judgeTime,
  };
}
