/**
 * The byte cap on one group-committed append of the etcd control log (`etcd-log.ts`), as a pure value: what the log
 * learns from etcd's answers about how large a transaction the cluster takes (its `--max-request-bytes`, which the
 * log cannot read).
 */

/** Successful appends in a row after which the cap grows (towards `max`, see `EtcdBatchLimit`). */
export const ETCD_BATCH_GROW_AFTER = 16;
/**
 * Successful appends after which a batch size etcd refused is forgotten, so the cap may grow to `max` again: the
 * operator may since have raised `--max-request-bytes`, and a limit learned once must not hold for the life of the
 * process. Until then the cap stays below the smallest refused size.
 */
export const ETCD_BATCH_REFUSAL_MEMORY = 1024;

/**
 * The cap starts at `max`. When etcd refuses a batch of `b` command bytes as too large, the cap drops to `b / 2`
 * (the batch is split) and `b` is remembered. After every `ETCD_BATCH_GROW_AFTER` successful appends in a row the cap
 * grows — at most doubling, and while a refused size is remembered only halfway towards it, so it never reaches a size
 * etcd refused — up to `max`. A remembered refused size is forgotten after `ETCD_BATCH_REFUSAL_MEMORY` successful
 * appends. Found in review: the cap only ever halved, so one burst against a lower limit kept every later
 * transaction small (and throughput low) for the life of the process.
 */
export class EtcdBatchLimit {
  readonly max: number;
  #bytes: number;
  /** The smallest batch size etcd refused that is still remembered, or null. */
  #refused: number | null = null;
  #successesInRow = 0;
  #successesSinceRefusal = 0;

  constructor(max: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`EtcdBatchLimit: max must be a positive integer, got ${String(max)}`);
    this.max = max;
    this.#bytes = max;
  }

  /** Most command bytes the next transaction may carry (a single entry larger than this still goes alone). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The smallest refused batch size still remembered (the cap stays below it), or null. */
  get refused(): number | null {
    return this.#refused;
  }

  /** etcd refused a batch of `batchBytes` command bytes as too large (and it was split). */
  onRefused(batchBytes: number): void {
    this.#refused = this.#refused === null ? batchBytes : Math.min(this.#refused, batchBytes);
    this.#bytes = Math.max(1, Math.min(this.#bytes, Math.floor(batchBytes / 2)));
    this.#successesInRow = 0;
    this.#successesSinceRefusal = 0;
  }

  /** etcd wrote a batch. */
  onWritten(): void {
    if (this.#refused !== null && ++this.#successesSinceRefusal >= ETCD_BATCH_REFUSAL_MEMORY) this.#refused = null;
    if (++this.#successesInRow < ETCD_BATCH_GROW_AFTER) return;
    this.#successesInRow = 0;
    let next = Math.min(this.max, this.#bytes * 2);
    const r = this.#refused;
    if (r !== null) next = Math.min(next, this.#bytes + Math.floor((r - this.#bytes) / 2));
    this.#bytes = Math.max(this.#bytes, next);
  }
}
