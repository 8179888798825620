import { Rational } from "@heddle/ledger";
import type { AttachmentId } from "@heddle/ledger";
import { PolicyInputError } from "./errors.ts";
import { front, isDemanding } from "./front.ts";
import { validatePolicyEdges } from "./policy-edge.ts";
import type { PolicyEdge } from "./policy-edge.ts";
import { virtualService } from "./virtual-service.ts";
import { wakeOffset } from "./wake-offset.ts";

/** Input of {@link settleJoiners} (policy.md §6.6). */
export interface SettleInput {
  /** The parent's ACTIVE children, in id order. */
  readonly edges: readonly PolicyEdge[];
  /** The demanding state this peer recorded for each edge last round. */
  readonly observed: ReadonlyMap<AttachmentId, boolean>;
  /** Sleeper credit in service units, `≥ 0`. */
  readonly sleeperCredit: bigint;
}

/** What {@link settleJoiners} asks the caller to do (policy.md §6.6). */
export interface SettlePlan {
  /** The one front all joiners were placed against, `null` if there were no joiners or no front. */
  readonly front: Rational | null;
  /** Newborns to seat through `ledger.seat`, in id order, all at one value. */
  readonly seats: ReadonlyArray<{ readonly attachment: AttachmentId; readonly front: Rational }>;
  /** New stored offsets for the wakers (already joined with their old offsets by `max`). */
  readonly offsets: ReadonlyMap<AttachmentId, Rational>;
  /** Replaces the caller's record: each edge's demanding state, sampled before any grant. */
  readonly observed: ReadonlyMap<AttachmentId, boolean>;
}

/**
 * Seats newborns (no gauge) and clamps wakers (gauged, demanding, recorded as not demanding) against
 * **one** front computed with all joiners excluded together (policy.md §6.6), so none of them gets
 * credit for time it did not compete. An id absent from `observed` is never a waker.
 */
export function settleJoiners(input: SettleInput): SettlePlan {
  const { edges, observed, sleeperCredit } = input;
  validatePolicyEdges(edges);
  if (typeof sleeperCredit !== "bigint" || sleeperCredit < 0n) {
    throw new PolicyInputError(`sleeperCredit must be a bigint ≥ 0, got ${String(sleeperCredit)}`);
  }
  const newborns = edges.filter((e) => e.gauge === null);
  const wakers = edges.filter((e) => e.gauge !== null && isDemanding(e) && observed.get(e.record.id) === false);
  const nextObserved = new Map<AttachmentId, boolean>();
  for (const e of edges) nextObserved.set(e.record.id, isDemanding(e));

  const joiners = new Set<AttachmentId>([...newborns, ...wakers].map((e) => e.record.id));
  if (joiners.size === 0) return { front: null, seats: [], offsets: new Map(), observed: nextObserved };

  const F = front(edges, joiners);
  const seatAt = F ?? Rational.ZERO;
  const seats = newborns
    .map((e) => e.record.id)
    .sort() // UTF-16 code-unit order: the default string sort
    .map((attachment) => ({ attachment, front: seatAt }));
  const offsets = new Map<AttachmentId, Rational>();
  if (F !== null) {
    for (const k of wakers) {
      const clamp = wakeOffset(F, virtualService(k), k.record.weight, sleeperCredit);
      offsets.set(k.record.id, Rational.max(k.virtualOffset, clamp));
    }
  }
  return { front: F, seats, offsets, observed: nextObserved };
}
