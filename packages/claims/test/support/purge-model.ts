import type { ClaimsTable, LapsedClaim } from "../../src/index.ts";

/**
 * The reference model of `purgeLapsedBefore(cutoff, max)`: what the purge must drop, read off the whole lapsed list
 * (no expiry index) — the first `max` claims whose lease ended at or before `cutoff`, by expiry then order taken.
 */
export function expectedPurge(t: ClaimsTable, cutoff: number, max: number): LapsedClaim[] {
  return t
    .lapsed(cutoff)
    .filter((c) => c.why === "lease-lapsed")
    .map((c, i) => ({ c, i }))
    .sort((a, b) => (a.c.expiresAt ?? 0) - (b.c.expiresAt ?? 0) || a.i - b.i)
    .slice(0, max)
    .map(({ c }) => c);
}
