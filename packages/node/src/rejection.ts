import type { PeerId } from "@heddle/seam";
import type { Timers } from "@heddle/seam";

/** Why an inbound frame was dropped whole (node.md §4.3). */
export type RejectReason =
  | "oversize"
  | "unknown-channel"
  | "bad-version"
  | "decode"
  | "schema"
  | "bad-value"
  | "genesis-mismatch"
  | "not-author"
  | "too-many-entries";

/** Every rejection reason, in the order of node.md §4.3. */
export const REJECT_REASONS: readonly RejectReason[] = [
  "oversize", "unknown-channel", "bad-version", "decode", "schema", "bad-value", "genesis-mismatch", "not-author", "too-many-entries",
];

/** The channels of the node, as named in events and metrics. */
export type ChannelName = "ledger" | "demand" | "liveness" | "claims" | "mux";

/** A `frame-rejected` notice: emitted at most once per (peer, reason) per `rejectLogIntervalMs`. */
export interface FrameRejected {
  kind: "frame-rejected";
  peer: PeerId;
  channel: ChannelName;
  reason: RejectReason;
}

/**
 * Counts rejected frames per reason and rate-limits their notices. Never throws on any input;
 * counting is the whole reaction to bad network input.
 */
export class RejectionCounter {
  readonly #counts = new Map<RejectReason, number>();
  readonly #lastLogged = new Map<string, number>();
  readonly #timers: Timers;
  readonly #intervalMs: number;
  readonly #notify: (e: FrameRejected) => void;

  constructor(timers: Timers, intervalMs: number, notify: (e: FrameRejected) => void) {
    this.#timers = timers;
    this.#intervalMs = intervalMs;
    this.#notify = notify;
  }

  reject(peer: PeerId, channel: ChannelName, reason: RejectReason): void {
    this.#counts.set(reason, (this.#counts.get(reason) ?? 0) + 1);
    const key = `${peer}\u0000${reason}`;
    const now = this.#timers.now();
    const last = this.#lastLogged.get(key);
    if (last !== undefined && now - last < this.#intervalMs) return;
    // Bound the rate-limit table: it only has to remember recent (peer, reason) pairs.
    if (this.#lastLogged.size >= 4096) this.#lastLogged.clear();
    this.#lastLogged.set(key, now);
    this.#notify({ kind: "frame-rejected", peer, channel, reason });
  }

  /** Counts per reason; every reason is present (0 when none). */
  counts(): Record<RejectReason, number> {
    const out = {} as Record<RejectReason, number>;
    for (const r of REJECT_REASONS) out[r] = this.#counts.get(r) ?? 0;
    return out;
  }

  total(): number {
    let n = 0;
    for (const v of this.#counts.values()) n += v;
    return n;
  }
}
