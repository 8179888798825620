/**
 * Advisory claims and ids at their edges (claims.md §1, §4): the lease bound, expiry at exactly `expiresAt`,
 * a renewed claim keeping its `claimedAt`, the slot-size bound, code-unit order and which strings are
 * well-formed UTF-16. Added for the survivors Stryker found in advisory-claims.ts and claim-key.ts (issue 19).
 */
import { describe, expect, it } from "vitest";
import { claimAdvisory, compareCodeUnits, createClaims, dropAdvisory, MAX_SLOT_CLAIMS } from "../src/index.ts";
import type { AdvisorySlot } from "../src/index.ts";
import { isWellFormedUtf16 } from "../src/claim-key.ts";
import { thrown } from "./support/thrown.ts";


describe("claimAdvisory", () => {
  it("refuses bad ids, another peer's slot, bad times and leases; accepts a 1 ms lease", () => {
    const s = claimAdvisory(undefined, "p1", 0, "a", 10, 5);
    expect(thrown(() => claimAdvisory(undefined, "", 0, "a", 10, 5))).toBe("RangeError: peer must not be empty");
    expect(thrown(() => claimAdvisory(undefined, "p1", 0, "", 10, 5))).toBe("RangeError: item must not be empty");
    expect(thrown(() => claimAdvisory(s, "p2", 0, "a", 10, 5))).toBe("RangeError: a peer writes only its own slot");
    expect(thrown(() => claimAdvisory(s, "p1", 0, "a", -1, 5))).toBe("RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got -1");
    expect(thrown(() => claimAdvisory(s, "p1", 0, "a", 10, 0))).toBe("RangeError: ttlMs must be a whole number of ms from 1 to 3155760000000 (MAX_TTL_MS, 100 years)");
    expect(thrown(() => claimAdvisory(s, "p1", 0, "a", 10, 1.5))).toBe("RangeError: ttlMs must be a whole number of ms from 1 to 3155760000000 (MAX_TTL_MS, 100 years)");
    expect(claimAdvisory(s, "p1", 0, "b", 10, 1).claims).toStrictEqual([
      { item: "a", peer: "p1", claimedAt: 10, expiresAt: 15 },
      { item: "b", peer: "p1", claimedAt: 10, expiresAt: 11 },
    ]);
  });

  it("a renewal keeps claimedAt and moves expiresAt; claims expired at exactly now are dropped; items stay sorted", () => {
    let s = claimAdvisory(undefined, "p1", 0, "m", 10, 100);
    s = claimAdvisory(s, "p1", 0, "c", 20, 10); // expires at 30
    s = claimAdvisory(s, "p1", 0, "x", 20, 50);
    s = claimAdvisory(s, "p1", 0, "m", 30, 100); // at 30: c has expired (expiresAt 30 is not after now)
    expect(s.claims).toStrictEqual([
      { item: "m", peer: "p1", claimedAt: 10, expiresAt: 130 },
      { item: "x", peer: "p1", claimedAt: 20, expiresAt: 70 },
    ]);
    const t = claimAdvisory(claimAdvisory(undefined, "p1", 0, "c", 20, 10), "p1", 0, "a", 29, 5);
    expect(t.claims.map((c) => c.item)).toEqual(["a", "c"]); // c still live at 29
    expect(dropAdvisory(t, 0, "c").claims.map((c) => c.item)).toEqual(["a"]);
    expect(dropAdvisory(t, 0, "c").version > t.version).toBe(true);
  });

  it("a slot holds at most MAX_SLOT_CLAIMS live claims; renewing one of them in a full slot is fine", () => {
    let s: AdvisorySlot = { peer: "p1", version: 0n, claims: [] };
    const claims = Array.from({ length: MAX_SLOT_CLAIMS - 1 }, (_, i) => ({ item: `i${String(i).padStart(5, "0")}`, peer: "p1", claimedAt: 0, expiresAt: 100 }));
    s = { ...s, claims };
    s = claimAdvisory(s, "p1", 0, "z-last", 1, 100); // the 4096th
    expect(s.claims).toHaveLength(MAX_SLOT_CLAIMS);
    expect(thrown(() => claimAdvisory(s, "p1", 0, "z-more", 1, 100))).toBe(`RangeError: a slot holds at most ${MAX_SLOT_CLAIMS} claims`);
    expect(claimAdvisory(s, "p1", 0, "z-last", 2, 100).claims).toHaveLength(MAX_SLOT_CLAIMS);
    // expired claims do not count
    expect(claimAdvisory(s, "p1", 0, "z-more", 100, 100).claims.map((c) => c.item)).toEqual(["z-last", "z-more"]);
  });
});

describe("ids", () => {
  it("compareCodeUnits orders by UTF-16 code units, with 0 only for equal strings", () => {
    expect(compareCodeUnits("a", "b")).toBe(-1);
    expect(compareCodeUnits("b", "a")).toBe(1);
    expect(compareCodeUnits("a", "a")).toBe(0);
    expect(compareCodeUnits("Z", "a")).toBe(-1);
    expect(compareCodeUnits("\uffff", "\ud83d\ude00")).toBe(1); // code units, not code points
    expect(["b", "a", "c", "a"].sort(compareCodeUnits)).toEqual(["a", "a", "b", "c"]);
  });

  it("well-formed UTF-16: pairs pass, lone or reversed surrogates fail, at either end of each range", () => {
    for (const s of ["", "abc", "\ud800\udc00", "\udbff\udfff", "x\ud83d\ude00y", "\ud7ff", "\ue000", "\ud800\udc00\ud800\udfff"]) {
      expect(isWellFormedUtf16(s), JSON.stringify(s)).toBe(true);
    }
    for (const s of ["\ud800", "\udbff", "\udc00", "\udfff", "a\ud800", "\ud800a", "\udc00\ud800", "\ud800\ud800", "\ud800\ue000", "\ud800\udbff", "ok\udfff"]) {
      expect(isWellFormedUtf16(s), JSON.stringify(s)).toBe(false);
    }
  });

  it("an id is at most 1024 code units (a key after trimming)", () => {
    const t = createClaims();
    expect(t.take({ holder: "w", resources: [{ key: ` ${"k".repeat(1024)} `, mode: "shared" }] }, 1).ok).toBe(true);
    expect(t.take({ holder: "w", resources: [{ key: "k".repeat(1025), mode: "shared" }] }, 1)).toEqual({ ok: false, blocked: [], invalid: "key is longer than 1024 code units" });
  });
});
