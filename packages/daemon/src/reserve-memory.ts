// The answers of keyed reserves the API replays to a retry (`Idempotency-Key`): an interface, and the
// in-memory kind embedders and tests use (the daemon keeps them in daemon.sqlite: daemon-state.ts).
// They are kept under the key's tag (reserveTagOf), the same tag the reservation carries in its id, so the
// node's own store can answer for a reservation whose answer was never recorded (a crash between the two).
import { createHash } from "node:crypto";

/**
 * The tag a keyed reserve's reservation carries in its id (`ReserveOptions.tag` of `@heddle/node`) and its answer
 * is remembered under: the first 32 hex digits (128 bits) of SHA-256 of the `Idempotency-Key`.
 */
export function reserveTagOf(idempotencyKey: string): string {
  return createHash("sha256").update(idempotencyKey, "utf8").digest("hex").slice(0, 32);
}

/** A remembered reserve answer: what was asked (leaf and amount, normalised) and what was answered. */
export interface RememberedReserve {
  readonly body: string;
  readonly status: number;
  readonly payload: unknown;
}

/** Where the API keeps keyed reserve answers, by {@link reserveTagOf} of the key: in memory (embedding, tests) or in the daemon's daemon.sqlite (DaemonState). */
export interface ReserveMemory {
  get(key: string): RememberedReserve | undefined;
  put(key: string, answer: RememberedReserve): void;
}

/** An in-memory {@link ReserveMemory} holding the newest `limit` keys (oldest dropped first). */
export function memoryReserveMemory(limit: number): ReserveMemory {
  const m = new Map<string, RememberedReserve>();
  return {
    get: (k) => m.get(k),
    put: (k, a) => {
      m.delete(k);
      m.set(k, a);
      while (m.size > limit) m.delete(m.keys().next().value!);
    },
  };
}
