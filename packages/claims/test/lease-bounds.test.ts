/**
 * Leases are bounded so that every expiry stays a safe integer (limits.ts `MAX_TTL_MS`): an expiry past 2^53 could
 * not be encoded, so a table (or an advisory slot) holding one could not be snapshotted, restored or replicated.
 */
import { describe, expect, it } from "vitest";
import { claimAdvisory, createClaims, decodeClaims, MAX_TTL_MS } from "../src/index.ts";

const r = (key: string) => ({ key, mode: "exclusive" as const });

describe("lease bounds (MAX_TTL_MS)", () => {
  it("a take asks for at most MAX_TTL_MS; at the bound it is granted and the table round-trips", () => {
    const t = createClaims();
    const now = 1_764_800_000_000;
    expect(t.take({ holder: "a", resources: [r("k")], ttlMs: MAX_TTL_MS }, now)).toMatchObject({ ok: true });
    expect(t.take({ holder: "b", resources: [r("j")], ttlMs: MAX_TTL_MS + 1 }, now)).toEqual({
      ok: false,
      blocked: [],
      invalid: `ttlMs must be a whole number of ms from 1 to ${MAX_TTL_MS} (MAX_TTL_MS, 100 years)`,
    });
    expect(t.wouldRefuse({ holder: "b", resources: [r("j")], ttlMs: MAX_TTL_MS + 1 }, now)).toBeUndefined(); // not a contention refusal
    expect(decodeClaims(t.encode()).encode()).toBe(t.encode());
  });

  it("with a clock near 2^53 a take whose expiry would not be a safe integer is invalid, and a renewal is not made", () => {
    const t = createClaims();
    const top = Number.MAX_SAFE_INTEGER - 100;
    expect(t.take({ holder: "a", resources: [r("k")], ttlMs: 100 }, top)).toMatchObject({ ok: true });
    expect(t.take({ holder: "b", resources: [r("j")], ttlMs: 101 }, top)).toEqual({
      ok: false,
      blocked: [],
      invalid: `the lease would end past the largest safe integer (now ${top} + ttlMs 101)`,
    });
    expect(t.renew("a", "k", top)).toBe(true); // ends at exactly 2^53 − 1
    // a renewal at top + 1 would end at 2^53: refused, and the lease keeps its end
    expect(t.renew("a", "k", top + 1)).toBe(false);
    expect(t.owner("k", top + 1)).toBe("a");
    expect(decodeClaims(t.encode()).encode()).toBe(t.encode());
  });

  it("an advisory claim is bounded the same way (every peer would refuse the slot otherwise)", () => {
    expect(() => claimAdvisory(undefined, "p1", 0, "item", 10, MAX_TTL_MS + 1)).toThrow(RangeError);
    expect(() => claimAdvisory(undefined, "p1", 0, "item", Number.MAX_SAFE_INTEGER - 5, 10)).toThrow(/past the largest safe integer/);
    expect(claimAdvisory(undefined, "p1", 0, "item", 10, MAX_TTL_MS).claims[0]!.expiresAt).toBe(10 + MAX_TTL_MS);
  });
});
