/**
 * The leader-side, best-effort proposal dedup cache (governed.md R-D4). It remembers, for the most recent
 * `limit` keyed application entries of the leader's log, which index carries each key, so a retried proposal
 * can be coalesced with the original instead of appended again.
 *
 * It is only a shortcut. The cache maps a key to an index and nothing else; every hit is re-checked against the
 * log itself (same index, kind, key and command bytes), so a truncated, compacted or differently-commanded entry
 * is a miss and the retry is appended as before — where the state machine's exact per-`(client, seq)` dedup
 * (R-D2) decides, as it always does. A key reused for a different command is therefore never coalesced: the state
 * machine still sees it and reports the misuse.
 */
import type { LogEntry, LogIndex, ProposalKey } from "./types.ts";

function keyId(k: ProposalKey): string {
  return `${k.seq}\u0000${k.client}`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  // Stryker disable next-line EqualityOperator: lengths are equal here, and one step past the end compares undefined with undefined
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Key → index of the latest entry carrying it, for at most `limit` keys (the oldest forgotten first). */
export class ProposalDedup {
  readonly limit: number;
  readonly #index = new Map<string, LogIndex>();
  readonly #coalesces: (key: ProposalKey) => boolean;

  /**
   * `coalesces` picks the keys the cache may answer (default: all). A key whose state-machine record can be
   * forgotten while its entry is still in the log (the control plane's `idem:` clients) must not be coalesced:
   * the retry would be pointed at an entry whose outcome nobody can read any more.
   */
  constructor(limit: number, coalesces: (key: ProposalKey) => boolean = () => true) {
    this.limit = limit;
    this.#coalesces = coalesces;
  }

  /** Number of keys remembered. */
  get size(): number {
    return this.#index.size;
  }

  /** Remembers `e` if it is a keyed application entry, forgetting the oldest key beyond the limit. */
  remember(e: LogEntry): void {
    // Stryker disable next-line ConditionalExpression: with limit 0 the key set below is evicted at once (size 1 > 0), so the map stays empty
    if (this.limit === 0) return;
    if (e.kind !== "app" || e.key === null || !this.#coalesces(e.key)) return;
    const id = keyId(e.key);
    this.#index.delete(id);
    this.#index.set(id, e.index);
    if (this.#index.size > this.limit) this.#index.delete(this.#index.keys().next().value!);
  }

  /**
   * The log entry an earlier proposal of exactly this `(key, command)` occupies, if remembered and still in the
   * log as it was; `entryAt` reads the live log.
   */
  lookup(key: ProposalKey | null, command: Uint8Array, entryAt: (i: LogIndex) => LogEntry | undefined): LogEntry | undefined {
    // Stryker disable next-line ConditionalExpression: with limit 0 remember() never keeps a key, so the lookup below misses anyway
    if (key === null || this.limit === 0) return undefined;
    const i = this.#index.get(keyId(key));
    if (i === undefined) return undefined;
    const e = entryAt(i);
    if (e === undefined || e.kind !== "app" || e.key === null || e.key.client !== key.client || e.key.seq !== key.seq) return undefined;
    return sameBytes(e.command, command) ? e : undefined;
  }

  /** Forgets everything (a node that stops leading keeps no cache). */
  clear(): void {
    this.#index.clear();
  }
}
