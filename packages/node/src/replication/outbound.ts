import { LedgerReplica, type EntitlementLedger } from "@heddle/ledger";

/**
 * This replica's own delta stream (node.md §5.1 step 4, §5.5): local patches staged until the batch
 * window closes, then published as one delta under the next `seq` and kept, split into fragments, until
 * every known peer acknowledged it (or the buffer's limit pushes it out). Pure bookkeeping: the core
 * decides when to flush and whom to send what.
 */
export class OutboundDeltas {
  /** Last published seq of this incarnation. */
  seq = 0;
  readonly #buffer = new Map<number, readonly EntitlementLedger[]>();
  /**
   * The batch, held mutably: each staged patch joins it in place in time proportional to the patch. Joining
   * immutable values copied the batch's outer maps (and rebuilt its index for every mint) on each stage, so a burst
   * staged inside one batch window — a control-log replay publishes every mint at once — cost O(batch) per patch.
   */
  #staged: LedgerReplica | null = null;
  #flushAt: number | null = null;
  readonly #maxPending: number;

  constructor(maxPendingDeltas: number) {
    this.#maxPending = maxPendingDeltas;
  }

  /** Adds a committed local patch to the batch; returns the time the batch is due. */
  stage(patch: EntitlementLedger, now: number, batchMs: number): number {
    if (this.#staged === null) this.#staged = new LedgerReplica(patch);
    else this.#staged.apply(patch);
    this.#flushAt ??= now + batchMs;
    return this.#flushAt;
  }

  /** When the staged batch is due, or null when nothing is staged. */
  get flushAt(): number | null {
    return this.#flushAt;
  }

  /** Takes the staged batch (joined patches), or null. */
  takeStaged(): EntitlementLedger | null {
    const s = this.#staged;
    this.#staged = null;
    this.#flushAt = null;
    return s === null ? null : s.snapshot();
  }

  /** Buffers the fragments of the next delta and returns its seq. */
  append(fragments: readonly EntitlementLedger[]): number {
    this.seq++;
    this.#buffer.set(this.seq, fragments);
    while (this.#buffer.size > this.#maxPending) this.#buffer.delete(this.#buffer.keys().next().value as number);
    return this.seq;
  }

  /** The fragments of `seq`, if still buffered. */
  get(seq: number): readonly EntitlementLedger[] | undefined {
    return this.#buffer.get(seq);
  }

  /** True iff every seq in `from … to` is still buffered. */
  holds(from: number, to: number): boolean {
    if (from > to) return false;
    // Stryker disable next-line ConditionalExpression,LogicalOperator: the buffer holds only seqs 1 … seq, so the loop answers false for these ranges too; this answers without scanning
    if (from < 1 || to > this.seq) return false;
    for (let s = from; s <= to; s++) if (!this.#buffer.has(s)) return false;
    return true;
  }

  /** Drops every seq ≤ `ackedByAll` (§5.5); `append` already keeps at most `maxPendingDeltas`. */
  gc(ackedByAll: number): void {
    for (const s of this.#buffer.keys()) {
      if (s > ackedByAll) break;
      this.#buffer.delete(s);
    }
  }

  /** Buffered deltas (a metric, §14). */
  get pending(): number {
    return this.#buffer.size;
  }
}
