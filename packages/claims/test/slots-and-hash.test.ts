/**
 * Replicated slots, keeper state options and the stable hash at their edges (claims.md §3–4, node.md §6):
 * epoch bounds, which copy a join keeps whatever the order, `replaced`, a peer writing only its own slot,
 * the slot-size bound, timing and rule validation, and FNV-1a against an independent reference over
 * `TextEncoder`'s UTF-8 (which also turns a lone surrogate into U+FFFD). Stryker survivors (issue 19).
 */
import { describe, expect, it } from "vitest";
import {
  encodeKeeperSlot,
  firstVersion,
  fnv1a32,
  joinKeeperSlots,
  keeperState,
  MAX_SLOT_CLAIMS,
  putKeeperSlot,
  renewKeeperClaim,
  stableHash,
  versionAfter,
  writeKeeperClaim,
} from "../src/index.ts";
import type { KeeperSlot, KeeperSlots } from "../src/index.ts";
import { thrown } from "./support/thrown.ts";


describe("slot versions", () => {
  it("an epoch is a safe integer in 0 … 2^31 − 1", () => {
    expect(firstVersion(0)).toBe(0n);
    expect(firstVersion(2 ** 31 - 1)).toBe(BigInt(2 ** 31 - 1) * 2n ** 32n);
    for (const e of [-1, 2 ** 31, 1.5, Number.NaN]) expect(thrown(() => firstVersion(e)), String(e)).toBe(`RangeError: epoch must be in 0 … 2^31 − 1, got ${e}`);
    expect(versionAfter(undefined, 2)).toBe(2n * 2n ** 32n);
    expect(versionAfter(5n, 2)).toBe(2n * 2n ** 32n); // an older boot's version restarts at the new epoch's first
    expect(versionAfter(2n * 2n ** 32n + 7n, 2)).toBe(2n * 2n ** 32n + 8n);
  });
});

describe("keeper slots", () => {
  const slot = (peer: string, version: bigint, at: number): KeeperSlot => ({ peer, version, claims: [renewKeeperClaim(undefined, "inv", peer, at)] });

  it("a join keeps the higher version, and on equal versions the larger encoding, in any order", () => {
    const a1 = slot("a", 1n, 10);
    const a2 = slot("a", 2n, 5);
    const a2b = slot("a", 2n, 20); // a faulty writer: two values under one version
    const bigger = encodeKeeperSlot(a2b) > encodeKeeperSlot(a2) ? a2b : a2;
    const maps = [a1, a2, a2b].map((s) => new Map([[s.peer, s]]) as KeeperSlots);
    for (const [x, y, z] of [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]] as const) {
      const j = joinKeeperSlots(joinKeeperSlots(maps[x]!, maps[y]!), maps[z]!);
      expect(j.get("a")).toBe(bigger);
    }
    expect(joinKeeperSlots(maps[1]!, maps[0]!).get("a")).toBe(a2);
    expect(joinKeeperSlots(maps[0]!, maps[1]!).get("a")).toBe(a2);
    // versions compare as numbers, not as their decimal text ("9" > "10")
    const a9 = slot("a", 9n, 50);
    const a10 = slot("a", 10n, 5);
    expect(joinKeeperSlots(new Map([["a", a9]]), new Map([["a", a10]])).get("a")).toBe(a10);
    expect(joinKeeperSlots(new Map([["a", a10]]), new Map([["a", a9]])).get("a")).toBe(a10);
  });

  it("put reports whether the copy changed anything", () => {
    const a1 = slot("a", 1n, 10);
    const a2 = slot("a", 2n, 10);
    let r = putKeeperSlot(new Map(), a1);
    expect(r.replaced).toBe(true);
    r = putKeeperSlot(r.slots, a1);
    expect(r.replaced).toBe(false);
    const copy = { ...a1, claims: [...a1.claims] }; // an equal copy received again
    expect(putKeeperSlot(r.slots, copy)).toEqual({ slots: r.slots, replaced: false });
    expect(putKeeperSlot(r.slots, copy).slots.get("a")).toBe(a1);
    r = putKeeperSlot(r.slots, a2);
    expect([r.replaced, r.slots.get("a")]).toEqual([true, a2]);
    r = putKeeperSlot(r.slots, a1);
    expect([r.replaced, r.slots.get("a")]).toEqual([false, a2]);
  });

  it("a peer writes only its own slot, of at most MAX_SLOT_CLAIMS claims", () => {
    const mine = writeKeeperClaim(undefined, renewKeeperClaim(undefined, "p0", "me", 1), 0);
    expect(thrown(() => writeKeeperClaim(mine, renewKeeperClaim(undefined, "p1", "you", 1), 0))).toBe("RangeError: a peer writes only its own slot");
    const full: KeeperSlot = {
      peer: "me",
      version: 0n,
      claims: Array.from({ length: MAX_SLOT_CLAIMS }, (_, i) => renewKeeperClaim(undefined, `p${String(i).padStart(5, "0")}`, "me", 1)),
    };
    expect(thrown(() => writeKeeperClaim(full, renewKeeperClaim(undefined, "q", "me", 2), 0))).toBe(`RangeError: a slot holds at most ${MAX_SLOT_CLAIMS} claims`);
    expect(writeKeeperClaim(full, renewKeeperClaim(full.claims[0], "p00000", "me", 2), 0).claims).toHaveLength(MAX_SLOT_CLAIMS);
    const oneShort: KeeperSlot = { ...full, claims: full.claims.slice(1) };
    expect(writeKeeperClaim(oneShort, renewKeeperClaim(undefined, "q", "me", 2), 0).claims).toHaveLength(MAX_SLOT_CLAIMS);
  });
});

describe("keeper state options", () => {
  it("names a bad self, timing or rule; zero timings are allowed", () => {
    expect(thrown(() => keeperState({ self: "", epoch: 0, rules: {} }))).toBe("RangeError: self must not be empty");
    expect(thrown(() => keeperState({ self: "me", epoch: 0, rules: {}, timings: { aliveMs: -1 } }))).toBe("RangeError: aliveMs must be a safe integer ≥ 0");
    expect(thrown(() => keeperState({ self: "me", epoch: 0, rules: {}, timings: { settlingMs: 1.5 } }))).toBe("RangeError: settlingMs must be a safe integer ≥ 0");
    expect(thrown(() => keeperState({ self: "me", epoch: 0, rules: { inv: "anywhere" as "stays-put" } }))).toBe("RangeError: unknown rule anywhere for inv");
    const s = keeperState({ self: "me", epoch: 0, rules: { inv: "stays-put", doc: "follows-you" }, timings: { settlingMs: 0 } });
    expect(s.timings.settlingMs).toBe(0);
    expect([...s.rules]).toEqual([["inv", "stays-put"], ["doc", "follows-you"]]);
  });
});

describe("stable hash", () => {
  /** FNV-1a over TextEncoder's bytes: an independent reference. */
  function reference(text: string): number {
    let h = 0x811c9dc5;
    for (const b of new TextEncoder().encode(text)) h = Math.imul(h ^ b, 0x01000193);
    return h >>> 0;
  }

  it("fnv1a32 hashes the UTF-8 bytes, lone surrogates as U+FFFD, at every range edge", () => {
    const samples = [
      "", "a", "\u007f", "\u0080", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "\ud800\udc00", "\udbff\udfff", "x\ud83d\ude00y",
      "\ud800", "\udbff", "\udc00", "\udfff", "\ud800a", "a\ud800", "\ud800\ud800", "\udc00\ud800", "\ud800\ue000", "\ud800\udbff", "\ud800\udc00\udc00",
    ];
    for (const s of samples) expect(fnv1a32(s), JSON.stringify(s)).toBe(reference(s));
    expect(fnv1a32("")).toBe(0x811c9dc5);
  });

  it("stableHash is FNV-1a followed by MurmurHash3's 32-bit finaliser", () => {
    const fmix32 = (h: number): number => {
      h ^= h >>> 16;
      h = Math.imul(h, 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      h ^= h >>> 16;
      return h >>> 0;
    };
    for (const s of ["", "a", "b", "part-7", "\ud83d\ude00", "\ud800"]) expect(stableHash(s), s).toBe(fmix32(reference(s)));
    expect(new Set(["a", "b", "c", "aa", "ab"].map(stableHash)).size).toBe(5);
  });
});
