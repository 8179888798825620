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
  /** Takes proposed straight away (the local table would grant, or this peer is not the leader, or a key was given). */
  proposed: number;
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
 * Not on this path: a take carrying an idempotency key (its recorded outcome must be the one answered), and any
 * take on a peer that is not the leader (there a confirmation would itself be a commit).
 */
export function claimsWithReadRefusals(source: ReadRefusalSource, counts?: ReadRefusalCounts): ClaimsVerbs {
  const inner = source.claims;
  const propose = (request: ClaimRequest, opts: CallOptions): Promise<ClaimsOutcome> => {
    if (counts !== undefined) counts.proposed++;
    return inner.take(request, opts);
  };
  return {
    async take(request, opts = {}) {
      if (opts.key !== undefined || !source.isLeader()) return propose(request, opts);
      if (inner.view().wouldRefuse(request, source.now()) === undefined) return propose(request, opts);
      await source.sync({ ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}), ...(opts.signal !== undefined ? { signal: opts.signal } : {}) });
      // Judge and note the applied index in one synchronous step: nothing applies in between.
      const judgedAt = source.now();
      const refusal = inner.view().wouldRefuse(request, judgedAt);
      const readIndex = source.controlView().appliedIndex;
      if (refusal === undefined) {
        if (counts !== undefined) counts.passedAfterRead++;
        return propose(request, opts);
      }
      if (counts !== undefined) counts.refusedAtRead++;
      return { kind: "refused-at-read", readIndex, judgedAt, claims: refusal };
    },
    release: (holder, key, opts) => inner.release(holder, key, opts),
    releaseAll: (holder, opts) => inner.releaseAll(holder, opts),
    releaseScope: (scope, opts) => inner.releaseScope(scope, opts),
    renew: (holder, key, opts) => inner.renew(holder, key, opts),
    view: () => inner.view(),
  };
}
