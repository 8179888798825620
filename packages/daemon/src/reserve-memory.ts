// The answers of keyed reserves the API replays to a retry (`Idempotency-Key`): an interface, and the
// in-memory kind embedders and tests use (the daemon keeps them in daemon.sqlite: daemon-state.ts).

/** A remembered reserve answer: what was asked (leaf and amount, normalised) and what was answered. */
export interface RememberedReserve {
  readonly body: string;
  readonly status: number;
  readonly payload: unknown;
}

/** Where the API keeps keyed reserve answers: in memory (embedding, tests) or in the daemon's daemon.sqlite (DaemonState). */
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
