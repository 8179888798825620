import { LedgerReplica, Rational } from "@heddle/ledger";
import type { AttachmentId, EntitlementLedger, GroupId, LedgerReads, ReplicaId } from "@heddle/ledger";
import { HeddlePolicy, type Demand, type Grant, type PolicyConfig, type PolicyEdge } from "@heddle/policy";

/** What `schedule(parent)` returns (node.md §1, §7). */
export interface ScheduleResult {
  grants: Grant[];
  seated: AttachmentId[];
  clamped: AttachmentId[];
}

/** The empty result: nothing seated, clamped or granted. */
export function emptySchedule(): ScheduleResult {
  return { grants: [], seated: [], clamped: [] };
}

/**
 * The policy's view of `parent`'s children on `view` (node.md §7 `policyEdges`): ACTIVE children in id
 * order, divergent records skipped, with the folded live demand, gauge, base issuance and this peer's
 * stored wake offset (`ZERO` if none).
 */
export function policyEdges(
  view: LedgerReads,
  parent: GroupId,
  demand: (edge: AttachmentId) => Demand,
  offsets: ReadonlyMap<AttachmentId, Rational>,
): PolicyEdge[] {
  const out: PolicyEdge[] = [];
  for (const summary of view.childrenOf(parent)) {
    const record = view.record(summary.attachment);
    if (record === null) continue;
    out.push({
      record,
      summary,
      demand: demand(record.id),
      gauge: view.gauge(record.id),
      baseIssued: view.baseIssuance(record.id),
      virtualOffset: offsets.get(record.id) ?? Rational.ZERO,
    });
  }
  return out;
}

/** Everything one allocation round at a parent reads (node.md §7). */
export interface ScheduleInput {
  /**
   * The working copy: every seat and grant is applied to it as it is decided, so each reads the state
   * that absorbed the previous ones. The node passes its own replica inside a transaction it commits
   * or rolls back; a caller that wants the view untouched passes a copy.
   */
  readonly work: LedgerReplica;
  readonly parent: GroupId;
  readonly self: ReplicaId;
  /** Units earmarked at `parent` by open reservations (never delegated). */
  readonly earmarked: bigint;
  readonly demand: (edge: AttachmentId) => Demand;
  /** This peer's stored wake offsets (any parent; only `parent`'s children are read). */
  readonly offsets: ReadonlyMap<AttachmentId, Rational>;
  /** This peer's observed demanding flags from the previous round (any parent). */
  readonly observed: ReadonlyMap<AttachmentId, boolean>;
  readonly policy: PolicyConfig;
  readonly maxGrants: number;
}

/** The outcome of {@link planSchedule}: the patch to commit and the peer-local memory to keep. */
export interface SchedulePlan extends ScheduleResult {
  /** The joined patch of every seat and grant, `null` if nothing changed. */
  readonly patch: EntitlementLedger | null;
  /** `parent`'s current ACTIVE children (ids whose stored offset/flag the caller keeps). */
  readonly children: readonly AttachmentId[];
  /** New stored offsets for the clamped wakers (already max-joined with the old ones). */
  readonly offsets: ReadonlyMap<AttachmentId, Rational>;
  /** Each child's demanding flag sampled before any grant (replaces the stored flags). */
  readonly observed: ReadonlyMap<AttachmentId, boolean>;
  /** Delegations the ledger refused (a stale or inconsistent view; the round stopped there). */
  readonly refusals: number;
}

/**
 * One allocation round at `parent` (node.md §7), a function of the working copy: seat newborns and clamp
 * wakers against one front (`settleJoiners`), then grant this peer's unearmarked holdings at `parent`
 * quantum by quantum among the seated children, each grant applied with `delegate` on the working copy
 * that already absorbed the previous patches. Costs the size of `parent`'s children and of the patch,
 * never of the whole ledger. The grants are those of the literal loop
 * `pick` → `delegate` (policy.md §7; `HeddlePolicy.allocate` is that loop on an incremental engine, and
 * every grant is still applied with `delegate`, whose refusal stops the round).
 */
export function planSchedule(input: ScheduleInput): SchedulePlan {
  const { work, parent, self, policy } = input;
  const edges = policyEdges(work, parent, input.demand, input.offsets);
  const children = edges.map((e) => e.record.id);
  if (edges.length === 0) {
    return { grants: [], seated: [], clamped: [], patch: null, children, offsets: new Map(), observed: new Map(), refusals: 0 };
  }
  const observedHere = new Map<AttachmentId, boolean>();
  for (const id of children) {
    const o = input.observed.get(id);
    if (o !== undefined) observedHere.set(id, o);
  }
  const plan = HeddlePolicy.settleJoiners({ edges, observed: observedHere, sleeperCredit: policy.sleeperCredit ?? 0n });
  const patch = new LedgerReplica();
  let changed = false;
  const seated: AttachmentId[] = [];
  for (const { attachment, front } of plan.seats) {
    const r = work.seat(attachment, front);
    if (!r.ok) continue;
    patch.apply(r.patch);
    changed = true;
    seated.push(attachment);
  }
  const offsets = new Map(input.offsets);
  for (const [id, off] of plan.offsets) offsets.set(id, Rational.max(off, input.offsets.get(id) ?? Rational.ZERO));
  const grants: Grant[] = [];
  let refusals = 0;
  const h = work.holdings(parent, self) - input.earmarked;
  if (h > 0n) {
    const candidates = policyEdges(work, parent, input.demand, offsets).filter((e) => e.gauge !== null);
    const decided = candidates.length === 0 ? [] : HeddlePolicy.allocate(candidates, policy, h, input.maxGrants);
    for (const g of decided) {
      const r = work.delegate(self, g.attachment, g.amount);
      if (!r.ok) {
        refusals++;
        break;
      }
      patch.apply(r.patch);
      changed = true;
      grants.push(g);
    }
  }
  const newOffsets = new Map<AttachmentId, Rational>();
  for (const id of plan.offsets.keys()) newOffsets.set(id, offsets.get(id)!);
  return {
    grants,
    seated,
    clamped: [...plan.offsets.keys()],
    patch: changed ? patch.snapshot() : null,
    children,
    offsets: newOffsets,
    observed: plan.observed,
    refusals,
  };
}
