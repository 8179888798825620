/**
 * Keeper mode's claim values on their own (claims.md §3): a renewal keeps what it does not change, a closed
 * claim reopens as a new one, liveness ends exactly `aliveMs` after the last renewal, and the keeper choice
 * breaks every tie the same way. Compared with `toStrictEqual`, so a field carried as `undefined` (instead of
 * left out, as the slot encoding expects) fails. Added for the survivors Stryker found (issue 19).
 */
import { describe, expect, it } from "vitest";
import { chooseKeeper, closeKeeperClaim, KEEPER_DEFAULTS, keeperClaimAlive, keeperClaimHolds, renewKeeperClaim } from "../src/index.ts";
import type { KeeperClaim } from "../src/index.ts";
import { thrown } from "./support/thrown.ts";


describe("renewKeeperClaim", () => {
  it("a new claim starts now; a renewal keeps claimedAt, activeAt, takenAt and wroteUpTo unless it changes them", () => {
    const c0 = renewKeeperClaim(undefined, "inv", "p1", 100);
    expect(c0).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 100, renewedAt: 100, activeAt: 100 });
    const c1 = renewKeeperClaim(c0, "inv", "p1", 200, { take: true, wroteUpTo: 150, active: 180 });
    expect(c1).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 100, renewedAt: 200, activeAt: 180, takenAt: 200, wroteUpTo: 150 });
    const c2 = renewKeeperClaim(c1, "inv", "p1", 300);
    expect(c2).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 100, renewedAt: 300, activeAt: 180, takenAt: 200, wroteUpTo: 150 });
    const c3 = renewKeeperClaim(c2, "inv", "p1", 400, { take: false, wroteUpTo: 390 });
    expect(c3).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 100, renewedAt: 400, activeAt: 180, takenAt: 200, wroteUpTo: 390 });
    // a renewal from an earlier clock reading never moves renewedAt before claimedAt
    expect(renewKeeperClaim(c0, "inv", "p1", 50).renewedAt).toBe(100);
  });

  it("a closed claim reopens as a new claim (claimedAt and activeAt start again), keeping takenAt", () => {
    const c = renewKeeperClaim(renewKeeperClaim(undefined, "inv", "p1", 100), "inv", "p1", 150, { take: true, wroteUpTo: 120 });
    const closed = closeKeeperClaim(c, 200);
    expect(closed).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 100, renewedAt: 200, activeAt: 100, takenAt: 150, closedAt: 200, wroteUpTo: 120 });
    const reopened = renewKeeperClaim(closed, "inv", "p1", 300);
    expect(reopened).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 300, renewedAt: 300, activeAt: 300, takenAt: 150, wroteUpTo: 120 });
  });

  it("refuses a renewal of another part's or another peer's claim, and bad ids and times", () => {
    const c = renewKeeperClaim(undefined, "inv", "p1", 100);
    const msg = "RangeError: a renewal continues the same peer's claim on the same part";
    expect(thrown(() => renewKeeperClaim(c, "other", "p1", 200))).toBe(msg);
    expect(thrown(() => renewKeeperClaim(c, "inv", "p2", 200))).toBe(msg);
    expect(thrown(() => renewKeeperClaim(undefined, "", "p1", 1))).toBe("RangeError: part must not be empty");
    expect(thrown(() => renewKeeperClaim(undefined, "inv", "", 1))).toBe("RangeError: peer must not be empty");
    expect(thrown(() => renewKeeperClaim(undefined, "inv", "p1", -1))).toBe("RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got -1");
    expect(thrown(() => renewKeeperClaim(undefined, "inv", "p1", 1, { active: -1 }))).toBe("RangeError: active must be a number of milliseconds in 0 … 2^53 − 1, got -1");
    expect(thrown(() => renewKeeperClaim(undefined, "inv", "p1", 1, { wroteUpTo: -1 }))).toBe("RangeError: wroteUpTo must be a number of milliseconds in 0 … 2^53 − 1, got -1");
    expect(renewKeeperClaim(undefined, "inv", "p1", 1.5, { active: 2.7, wroteUpTo: 3.2 })).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 1, renewedAt: 1, activeAt: 2, wroteUpTo: 3 });
  });
});

describe("closeKeeperClaim", () => {
  it("closes at the later of now and the last renewal, keeping or replacing wroteUpTo", () => {
    const c = renewKeeperClaim(undefined, "inv", "p1", 100);
    expect(closeKeeperClaim(c, 90)).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 100, renewedAt: 100, activeAt: 100, closedAt: 100 });
    expect(closeKeeperClaim(c, 200, 180)).toStrictEqual({ part: "inv", peer: "p1", claimedAt: 100, renewedAt: 200, activeAt: 100, closedAt: 200, wroteUpTo: 180 });
    const w = renewKeeperClaim(c, "inv", "p1", 150, { wroteUpTo: 140 });
    expect(closeKeeperClaim(w, 200).wroteUpTo).toBe(140);
    expect(thrown(() => closeKeeperClaim(c, 200, -5))).toBe("RangeError: wroteUpTo must be a number of milliseconds in 0 … 2^53 − 1, got -5");
  });
});

describe("liveness and holding", () => {
  it("a claim is alive until exactly aliveMs after its last renewal, and never once closed", () => {
    const c = renewKeeperClaim(undefined, "inv", "p1", 1_000);
    const end = 1_000 + KEEPER_DEFAULTS.aliveMs;
    expect(keeperClaimAlive(c, end - 1)).toBe(true);
    expect(keeperClaimAlive(c, end)).toBe(false);
    expect(keeperClaimAlive(c, 1_000, { ...KEEPER_DEFAULTS, aliveMs: 10 })).toBe(true);
    expect(keeperClaimAlive(c, 1_010, { ...KEEPER_DEFAULTS, aliveMs: 10 })).toBe(false);
    expect(keeperClaimAlive(closeKeeperClaim(c, 1_000), 1_000)).toBe(false);
  });

  it("a lapsed unclosed claim still holds a stays-put part until unclosedMs, a follows-you part not at all", () => {
    const c = renewKeeperClaim(undefined, "inv", "p1", 0);
    const t = KEEPER_DEFAULTS;
    expect(keeperClaimHolds(c, "follows-you", t.aliveMs - 1)).toBe(true);
    expect(keeperClaimHolds(c, "follows-you", t.aliveMs)).toBe(false);
    expect(keeperClaimHolds(c, "stays-put", t.aliveMs)).toBe(true);
    expect(keeperClaimHolds(c, "stays-put", t.unclosedMs - 1)).toBe(true);
    expect(keeperClaimHolds(c, "stays-put", t.unclosedMs)).toBe(false);
    expect(keeperClaimHolds(closeKeeperClaim(c, 0), "stays-put", 0)).toBe(false);
  });
});

describe("chooseKeeper", () => {
  const claim = (peer: string, o: Partial<KeeperClaim> = {}): KeeperClaim => ({ part: "inv", peer, claimedAt: 10, renewedAt: 10, activeAt: 10, ...o });

  it("stays-put: the latest takenAt, else the oldest claim; ties to the smaller peer, whatever the order", () => {
    const a = claim("a", { claimedAt: 5, renewedAt: 5 });
    const b = claim("b", { takenAt: 8 });
    const c = claim("c", { takenAt: 9 });
    const d = claim("d", { takenAt: 9 });
    for (const order of [[a, b, c, d], [d, c, b, a], [b, d, a, c]]) {
      expect(chooseKeeper(order, "inv", "stays-put", 20)?.peer).toBe("c");
    }
    // nobody took it: the oldest claim; equal ages go to the smaller peer
    const x = claim("x", { claimedAt: 7 });
    const y = claim("y", { claimedAt: 6 });
    const z = claim("z", { claimedAt: 6 });
    for (const order of [[x, y, z], [z, y, x], [x, z, y]]) expect(chooseKeeper(order, "inv", "stays-put", 20)?.peer).toBe("y");
    expect(chooseKeeper([claim("m", { claimedAt: 3 }), claim("k", { claimedAt: 4 })], "inv", "stays-put", 20)?.peer).toBe("m");
  });

  it("follows-you: the latest activeAt; ties to the smaller peer; claims on other parts and closed claims ignored", () => {
    const a = claim("a", { activeAt: 12 });
    const b = claim("b", { activeAt: 15 });
    const c = claim("c", { activeAt: 15 });
    const other = { ...claim("0", { activeAt: 99 }), part: "other" };
    const closed = claim("1", { activeAt: 99, closedAt: 10 });
    for (const order of [[a, b, c, other, closed], [closed, other, c, b, a]]) {
      expect(chooseKeeper(order, "inv", "follows-you", 20)?.peer).toBe("b");
    }
    expect(chooseKeeper([other, closed], "inv", "follows-you", 20)).toBeUndefined();
    expect(chooseKeeper([], "inv", "stays-put", 20)).toBeUndefined();
  });
});
