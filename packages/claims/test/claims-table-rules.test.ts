// The claims table's judge, releases and renewals at the edges the Stryker run of 2026-12-03 left open
// (claims-table.ts, helper AE): a re-take in another scope, the per-holder bound with lapsed and re-moded
// claims, blocked resources in request order, lapsed claims left out of releaseAll/releaseScope, a key that
// is not a string, and wouldRefuse without `now`. Each test pins results exactly (toStrictEqual).
import { describe, expect, it } from "vitest";
import { createClaims } from "../src/index.ts";
import type { TakeRequest } from "../src/index.ts";
import { granted, refused } from "./support/outcomes.ts";

const ex = (key: string) => ({ key, mode: "exclusive" as const });
const sh = (key: string) => ({ key, mode: "shared" as const });
/** What a log entry carrying a number where the key belongs looks like once decoded. */
const notAString = 42 as unknown as string;

describe("rule 1: a re-take is idempotent only in the same mode AND scope", () => {
  it("the same mode in another scope is a new grant that moves the claim to the new scope", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [ex("k")], scope: "run-1" }, 1));
    const again = granted(t.take({ holder: "a", resources: [ex("k")], scope: "run-2" }, 2));
    expect(again.grants).toStrictEqual([{ key: "k", mode: "exclusive", token: 2, existing: false }]);
    expect(t.open()).toStrictEqual([{ key: "k", holder: "a", mode: "exclusive", token: 2, since: 2, scope: "run-2" }]);
    expect(t.releaseScope("run-1")).toStrictEqual([]);
    expect(t.owner("k")).toBe("a");
  });

  it("dropping the scope is a change of scope too", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [sh("k")], scope: "run-1" }, 1));
    const again = granted(t.take({ holder: "a", resources: [sh("k")] }, 2));
    expect(again.grants).toStrictEqual([{ key: "k", mode: "shared", token: 2, existing: false }]);
    expect(t.open()).toStrictEqual([{ key: "k", holder: "a", mode: "shared", token: 2, since: 2 }]);
  });
});

describe("rule 4: the per-holder bound counts what the holder holds now", () => {
  it("a lapsed claim does not count", () => {
    const t = createClaims({ maxPerHolder: 1 });
    granted(t.take({ holder: "a", resources: [ex("k1")], ttlMs: 10 }, 0));
    // at 20 the claim on k1 lapsed (recorded, not purged): a holds nothing
    const g = granted(t.take({ holder: "a", resources: [ex("k2")] }, 20));
    expect(g.grants).toStrictEqual([{ key: "k2", mode: "exclusive", token: 2, existing: false }]);
  });

  it("re-taking a lapsed claim counts it again, and is refused at the bound", () => {
    const t = createClaims({ maxPerHolder: 1 });
    granted(t.take({ holder: "a", resources: [ex("k1")], ttlMs: 10 }, 0));
    granted(t.take({ holder: "a", resources: [ex("k2")] }, 20));
    const r = refused(t.take({ holder: "a", resources: [ex("k1")] }, 30));
    expect(r.blocked).toStrictEqual([{ key: "k1", capacity: 1, reason: "per-holder-limit", holders: [] }]);
    expect(t.wouldRefuse({ holder: "a", resources: [ex("k1")] }, 30)).toStrictEqual(r);
    // all or nothing: the lapsed record is still there, reported as lapsed
    expect(t.lapsed().map((c) => [c.key, c.why])).toStrictEqual([["k1", "lease-lapsed"]]);
  });

  it("changing the mode of a live claim replaces it and does not count twice", () => {
    const t = createClaims({ maxPerHolder: 1 });
    granted(t.take({ holder: "a", resources: [ex("k")] }, 0));
    const g = granted(t.take({ holder: "a", resources: [sh("k")] }, 1));
    expect(g.grants).toStrictEqual([{ key: "k", mode: "shared", token: 2, existing: false }]);
    expect(t.open()).toStrictEqual([{ key: "k", holder: "a", mode: "shared", token: 2, since: 1 }]);
  });

  it("at the bound, only the resources that would add a claim are blocked", () => {
    const t = createClaims({ maxPerHolder: 1 });
    granted(t.take({ holder: "a", resources: [ex("k1")] }, 0));
    // k1 changes mode (replaces a live claim: no new claim), k2 would be a second claim
    const request: TakeRequest = { holder: "a", resources: [sh("k1"), ex("k2")] };
    const r = refused(t.take(request, 1));
    expect(r.blocked).toStrictEqual([{ key: "k2", capacity: 1, reason: "per-holder-limit", holders: [] }]);
    expect(t.wouldRefuse(request, 1)).toStrictEqual(r);
    expect(t.open()).toStrictEqual([{ key: "k1", holder: "a", mode: "exclusive", token: 1, since: 0 }]);
  });
});

describe("blocked resources come in request order", () => {
  it("per-holder-limit refusals interleave with the others by their place in the request", () => {
    const t = createClaims({ maxPerHolder: 2, capacity: { pool: 3 } });
    granted(t.take({ holder: "o", resources: [ex("k2"), ex("k4")] }, 0));
    const request: TakeRequest = {
      holder: "a",
      resources: [ex("k0"), ex("k1"), ex("k2"), sh("pool"), ex("k4"), ex("k5")],
    };
    const r = refused(t.take(request, 1));
    const limit = (key: string, capacity = 1) => ({ key, capacity, reason: "per-holder-limit", holders: [] });
    const held = (key: string) => ({ key, capacity: 1, reason: "held", holders: ["o"] });
    expect(r.blocked).toStrictEqual([limit("k0"), limit("k1"), held("k2"), limit("pool", 3), held("k4"), limit("k5")]);
    expect(t.wouldRefuse(request, 1)).toStrictEqual(r);
  });

  it("keys are placed by their trimmed spelling", () => {
    const t = createClaims({ maxPerHolder: 1 });
    granted(t.take({ holder: "o", resources: [ex("b")] }, 0));
    const r = refused(t.take({ holder: "a", resources: [ex(" c"), ex("b "), ex("a\t")] }, 1));
    expect(r.blocked.map((b) => [b.key, b.reason])).toStrictEqual([
      ["c", "per-holder-limit"],
      ["b", "held"],
      ["a", "per-holder-limit"],
    ]);
  });
});

describe("releaseAll and releaseScope name only what was still held", () => {
  it("releaseAll leaves out a lapsed claim but removes it", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [ex("k1")], ttlMs: 10 }, 0));
    granted(t.take({ holder: "a", resources: [ex("k2")] }, 1));
    expect(t.releaseAll("a", 20)).toStrictEqual(["k2"]);
    expect(t.open()).toStrictEqual([]);
    expect(t.lapsed()).toStrictEqual([]);
  });

  it("releaseScope leaves out a lapsed claim but removes it", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [ex("k1")], scope: "s", ttlMs: 10 }, 0));
    granted(t.take({ holder: "b", resources: [ex("k2")], scope: "s" }, 1));
    expect(t.releaseScope("s", 20)).toStrictEqual(["k2"]);
    expect(t.lapsed()).toStrictEqual([]);
  });
});

describe("a key that is not a string (a malformed log entry) matches nothing", () => {
  it("release returns false and leaves the holder's claims alone", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [ex("42")] }, 0));
    expect(t.release("a", notAString, 1)).toBe(false);
    expect(t.owner("42")).toBe("a");
  });

  it("renew returns false and does not extend the lease", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [ex("42")], ttlMs: 10 }, 0));
    expect(t.renew("a", notAString, 5)).toBe(false);
    expect(t.open()).toStrictEqual([{ key: "42", holder: "a", mode: "exclusive", token: 1, since: 0, expiresAt: 10 }]);
  });
});

describe("wouldRefuse without now judges at the table's latest now", () => {
  it("sees a lease lapse once the table's clock passed it", () => {
    const t = createClaims();
    granted(t.take({ holder: "o", resources: [ex("k")], ttlMs: 10 }, 0));
    const request: TakeRequest = { holder: "a", resources: [ex("k")] };
    expect(t.wouldRefuse(request)).toStrictEqual({
      ok: false,
      blocked: [{ key: "k", capacity: 1, reason: "held", holders: ["o"] }],
    });
    granted(t.take({ holder: "x", resources: [ex("other")] }, 10));
    expect(t.wouldRefuse(request)).toBeUndefined();
  });
});
