/**
 * The clock and timer facility every node component receives (same shape as governed.md's `Timers`).
 * Node code never calls `Date.now`, `setTimeout` or `setInterval` directly.
 */
export interface Timers {
  now(): number;
  set(fn: () => void, ms: number): unknown;
  clear(h: unknown): void;
}

/** Real time: `Date.now` and `setTimeout`, for production shells and the libp2p seam. */
export const realTimers: Timers = {
  now: () => Date.now(),
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/**
 * A seeded uniform generator in [0, 1) (mulberry32). Simulations give the network and each node
 * their own generator, seeded from the run's seed, so one component's draws never shift another's.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
