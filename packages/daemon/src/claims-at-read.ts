// Granted claims with refusals answered at a read (issue 16 "Refusals without a commit"): a take that the applied
// table would refuse is answered by the Raft leader after a ReadIndex confirmation, without appending an entry.
// Grants, releases and renewals still go through the log unchanged.
import type { CallOptions, ClaimRequest, ClaimsOutcome, ClaimsVerbs, ControlView } from "./control-plane.ts";

/** What the read path needs of the governed node and its Raft member. */
export interface ReadRefusalSource {
  readonly claims: ClaimsVerbs;
  controlView(): Pick<ControlView, "appliedIndex">;
  /** A linearizable view: on the leader a ReadIndex confirmation, then the applied prefix reaches it. */
  sync(opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<unknown>;
  /** Whether this peer is the Raft leader right now (elsewhere `sync` would append a barrier: a commit). */
  isLeader(): boolean;
  /** The leader's clock, the same one that stamps entries (`LogEntry.stampedAt`). */
  now(): number;
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
 * (always correct, only dearer). Each wait lasts at most one commit and local apply, normally a few ms.
 */
export const MAX_TAKE_WAITS = 8;

/** The keys a take names, compared as the table compares them (trimmed); `[]` for a malformed request. */
function keysOf(request: ClaimRequest): string[] {
  const resources = (request as { resources?: unknown }).resources;
  if (!Array.isArray(resources)) return [];
  const keys = new Set<string>();
  for (const r of resources) if (typeof (r as { key?: unknown })?.key === "string") keys.add((r as { key: string }).key.trim());
  return [...keys];
}

/**
 * Wraps `source.claims` so that `take` answers a refusal from the leader's applied table whenever the table,
 * read at a confirmed ReadIndex and judged at the leader's clock (never earlier than `claimsNow`), refuses it.
 *
 * Why it is linearizable: the ReadIndex confirmation proves that no other leader committed anything after the
 * read index, and the table is judged once the applied prefix has reached it — so the refusal is the answer the
 * log's state gave at a point inside the call. Why it is cheap: a refused take costs one heartbeat round, no
 * append and no fsync; a take the local (unconfirmed) table would grant skips the read and is proposed at once.
 *
 * Contention: when many takes of one free key arrive together, the table is free for all of them until the first
 * grant applies, so each would be proposed and all but one refused *in the log* — one commit per refusal. Instead,
 * the leader proposes one take per key at a time: a take naming a key for which a take proposed here has not yet
 * settled waits for it (at most {@link MAX_TAKE_WAITS} times), then is judged again — normally refused at a read,
 * naming the new holder. Waiting never changes an answer's correctness: each answer is still a committed outcome
 * or a refusal at a confirmed read; it only keeps refusals out of the log.
 *
 * Not on this path: a take carrying an idempotency key (its recorded outcome must be the one answered), and any
 * take on a peer that is not the leader (there a confirmation would itself be a commit: governed.md §3.10 `sync()`
 * appends a barrier off the leader, follower-side ReadIndex is not in v1) — those are proposed, forwarded by Raft
 * to the leader (R-F1), and a refusal among them is answered from the log.
 */
export function claimsWithReadRefusals(source: ReadRefusalSource, counts?: ReadRefusalCounts): ClaimsVerbs {
  const inner = source.claims;
  /** Per key, the settlement of the take proposed here that names it and has not yet settled. */
  const inFlight = new Map<string, Promise<void>>();
  const propose = (request: ClaimRequest, opts: CallOptions): Promise<ClaimsOutcome> => {
    if (counts !== undefined) counts.proposed++;
    return inner.take(request, opts);
  };
  const proposeTracked = (request: ClaimRequest, opts: CallOptions, keys: readonly string[]): Promise<ClaimsOutcome> => {
    const p = propose(request, opts);
    const settled = p.then(
      () => {},
      () => {},
    );
    for (const k of keys) inFlight.set(k, settled);
    void settled.then(() => {
      for (const k of keys) if (inFlight.get(k) === settled) inFlight.delete(k);
    });
    return p;
  };
  const busy = (keys: readonly string[]): Promise<void>[] => {
    const out: Promise<void>[] = [];
    for (const k of keys) {
      const p = inFlight.get(k);
      if (p !== undefined) out.push(p);
    }
    return out;
  };
  const settle = (ps: readonly Promise<void>[], signal: AbortSignal | undefined): Promise<void> => {
    if (signal === undefined) return Promise.all(ps).then(() => {});
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      void Promise.all(ps).then(done);
    });
  };
  return {
    async take(request, opts = {}) {
      if (opts.key !== undefined || !source.isLeader()) return propose(request, opts);
      const keys = keysOf(request);
      // one deadline for the whole call: the waits and the read come out of the caller's time budget
      const started = source.now();
      const rest = (): CallOptions => (opts.timeoutMs === undefined ? opts : { ...opts, timeoutMs: Math.max(1, opts.timeoutMs - (source.now() - started)) });
      for (let waits = 0; ; ) {
        if (!source.isLeader()) return propose(request, rest());
        const pending = busy(keys);
        if (pending.length > 0 && waits < MAX_TAKE_WAITS && opts.signal?.aborted !== true) {
          waits++;
          if (counts !== undefined) counts.waitedForTake = (counts.waitedForTake ?? 0) + 1;
          await settle(pending, opts.signal);
          continue;
        }
        if (inner.view().wouldRefuse(request, source.now()) === undefined) return proposeTracked(request, rest(), keys);
        const budget = rest();
        await source.sync({ ...(budget.timeoutMs !== undefined ? { timeoutMs: budget.timeoutMs } : {}), ...(budget.signal !== undefined ? { signal: budget.signal } : {}) });
        // Judge and note the applied index in one synchronous step: nothing applies in between.
        const judgedAt = source.now();
        const refusal = inner.view().wouldRefuse(request, judgedAt);
        const readIndex = source.controlView().appliedIndex;
        if (refusal !== undefined) {
          if (counts !== undefined) counts.refusedAtRead++;
          return { kind: "refused-at-read", readIndex, judgedAt, claims: refusal };
        }
        // free at the read — but another take of these keys may have been proposed here while we read: wait for it
        if (busy(keys).length > 0 && waits < MAX_TAKE_WAITS) continue;
        if (counts !== undefined) counts.passedAfterRead++;
        return proposeTracked(request, rest(), keys);
      }
    },
    release: (holder, key, opts) => inner.release(holder, key, opts),
    releaseAll: (holder, opts) => inner.releaseAll(holder, opts),
    releaseScope: (scope, opts) => inner.releaseScope(scope, opts),
    renew: (holder, key, opts) => inner.renew(holder, key, opts),
    view: () => inner.view(),
  };
}
