// The rules of the granted table (claims.md §1–2), one behaviour per test.
import { describe, expect, it } from "vitest";
import { createClaims, heldList, MAX_RESOURCES_PER_TAKE } from "../src/index.ts";
import { granted, refused } from "./support/outcomes.ts";

describe("keys and roster (§1)", () => {
  it("trims surrounding white space and nothing else", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "  src/x.ts\n", mode: "exclusive" }] }, 0));
    expect(t.owner("src/x.ts")).toBe("a");
    const other = refused(t.take({ holder: "b", resources: [{ key: "src/x.ts", mode: "exclusive" }] }, 0));
    expect(other.blocked[0]).toMatchObject({ key: "src/x.ts", reason: "held", holders: ["a"] });
    // no case folding, no path clean-up: other spellings are other keys
    granted(t.take({ holder: "b", resources: [{ key: "SRC/x.ts", mode: "exclusive" }] }, 0));
    granted(t.take({ holder: "c", resources: [{ key: "./src/x.ts", mode: "exclusive" }] }, 0));
  });

  it("refuses a key off the roster and lists the roster", () => {
    const t = createClaims({ roster: ["src/console.ts", "src/parser.ts"] });
    const r = refused(t.take({ holder: "a", resources: [{ key: "console.ts", mode: "exclusive" }] }, 0));
    expect(r.blocked).toEqual([
      { key: "console.ts", capacity: 1, reason: "not-on-roster", holders: [], roster: ["src/console.ts", "src/parser.ts"] },
    ]);
    expect(t.open()).toEqual([]);
  });

  it("without a roster any key may be taken, and free() cannot say what is left", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "invented:1", mode: "exclusive" }] }, 0));
    expect(t.free()).toBeUndefined();
  });

  it("rejects malformed options as bugs", () => {
    expect(() => createClaims({ roster: ["a", " a"] })).toThrow(RangeError);
    expect(() => createClaims({ roster: ["a"], capacity: { b: 2 } })).toThrow(RangeError);
    expect(() => createClaims({ capacity: { a: 0 } })).toThrow(RangeError);
    expect(() => createClaims({ maxPerHolder: 0 })).toThrow(RangeError);
  });
});

describe("capacities and modes (§1)", () => {
  it("an unlisted key is a mutex", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "k", mode: "shared" }] }, 0));
    const r = refused(t.take({ holder: "b", resources: [{ key: "k", mode: "shared" }] }, 0));
    expect(r.blocked[0]).toMatchObject({ reason: "capacity", capacity: 1, holders: ["a"] });
  });

  it("a pool of N admits N shared holders, then refuses naming all of them", () => {
    const t = createClaims({ capacity: { "engineer:runs": 3 } });
    for (const h of ["w1", "w2", "w3"]) granted(t.take({ holder: h, resources: [{ key: "engineer:runs", mode: "shared" }] }, 0));
    const r = refused(t.take({ holder: "w4", resources: [{ key: "engineer:runs", mode: "shared" }] }, 0));
    expect(r.blocked[0]).toEqual({ key: "engineer:runs", capacity: 3, reason: "capacity", holders: ["w1", "w2", "w3"] });
    expect(t.availability(["engineer:runs"])[0]?.free).toBe(0);
    t.release("w2", "engineer:runs");
    expect(t.availability(["engineer:runs"])[0]?.free).toBe(1);
    granted(t.take({ holder: "w4", resources: [{ key: "engineer:runs", mode: "shared" }] }, 0));
  });

  it("is a reader/writer lock with capacity null", () => {
    const t = createClaims({ capacity: { doc: null } });
    for (let i = 0; i < 50; i++) granted(t.take({ holder: `r${i}`, resources: [{ key: "doc", mode: "shared" }] }, 0));
    expect(t.availability(["doc"])[0]?.free).toBeNull();
    const w = refused(t.take({ holder: "writer", resources: [{ key: "doc", mode: "exclusive" }] }, 0));
    expect(w.blocked[0]?.reason).toBe("held");
    expect(w.blocked[0]?.holders).toHaveLength(50);
    for (let i = 0; i < 50; i++) t.release(`r${i}`, "doc");
    granted(t.take({ holder: "writer", resources: [{ key: "doc", mode: "exclusive" }] }, 0));
    const r = refused(t.take({ holder: "r0", resources: [{ key: "doc", mode: "shared" }] }, 0));
    expect(r.blocked[0]).toMatchObject({ reason: "held", holders: ["writer"] });
    expect(t.availability(["doc"])[0]?.free).toBe(0);
  });

  it("one holder converting its own claim from shared to exclusive is not contention", () => {
    const t = createClaims({ capacity: { doc: null } });
    const first = granted(t.take({ holder: "a", resources: [{ key: "doc", mode: "shared" }] }, 0));
    const up = granted(t.take({ holder: "a", resources: [{ key: "doc", mode: "exclusive" }] }, 1));
    expect(up.grants[0]?.existing).toBe(false);
    expect(up.grants[0]?.token).toBeGreaterThan(first.grants[0]?.token ?? Infinity);
    expect(t.open()).toHaveLength(1);
    expect(t.checkFence("doc", first.grants[0]?.token ?? 0)).toBe(false);
  });
});

describe("take (§2)", () => {
  it("is all or nothing across resources", () => {
    const t = createClaims({ capacity: { pool: 2 } });
    granted(t.take({ holder: "x", resources: [{ key: "c", mode: "exclusive" }] }, 0));
    const before = t.encode();
    const r = refused(
      t.take({ holder: "y", resources: [{ key: "a", mode: "exclusive" }, { key: "pool", mode: "shared" }, { key: "c", mode: "exclusive" }] }, 0),
    );
    expect(r.blocked.map((b) => b.key)).toEqual(["c"]);
    expect(t.encode()).toBe(before);
    expect(t.owner("a")).toBeUndefined();
    const ok = granted(t.take({ holder: "y", resources: [{ key: "a", mode: "exclusive" }, { key: "pool", mode: "shared" }] }, 0));
    expect(ok.grants.map((g) => g.key)).toEqual(["a", "pool"]);
    expect(new Set(ok.grants.map((g) => g.token)).size).toBe(1);
  });

  it("re-taking what one holds succeeds, writes nothing and returns the same token", () => {
    const t = createClaims();
    const first = granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }], scope: "run-1" }, 0));
    const text = t.encode();
    const again = granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }], scope: "run-1" }, 0));
    expect(again.grants).toEqual([{ key: "k", mode: "exclusive", token: first.grants[0]?.token, existing: true }]);
    expect(t.encode()).toBe(text);
  });

  it("lists every blocked resource with its own reason", () => {
    const t = createClaims({ roster: ["a", "b", "c"], capacity: { b: 1 } });
    granted(t.take({ holder: "p", resources: [{ key: "a", mode: "exclusive" }, { key: "b", mode: "shared" }] }, 0));
    const r = refused(
      t.take({ holder: "q", resources: [{ key: "a", mode: "shared" }, { key: "b", mode: "shared" }, { key: "nope", mode: "shared" }, { key: "c", mode: "shared" }] }, 0),
    );
    expect(r.blocked.map((b) => [b.key, b.reason, b.holders])).toEqual([
      ["a", "held", ["p"]],
      ["b", "capacity", ["p"]],
      ["nope", "not-on-roster", []],
    ]);
  });

  it("maxPerHolder caps what one holder holds", () => {
    const t = createClaims({ maxPerHolder: 1 });
    granted(t.take({ holder: "a", resources: [{ key: "x", mode: "exclusive" }] }, 0));
    const r = refused(t.take({ holder: "a", resources: [{ key: "y", mode: "exclusive" }] }, 0));
    expect(r.blocked).toEqual([{ key: "y", capacity: 1, reason: "per-holder-limit", holders: [] }]);
    // re-taking what it holds is not a new key
    granted(t.take({ holder: "a", resources: [{ key: "x", mode: "exclusive" }] }, 0));
    t.release("a", "x");
    granted(t.take({ holder: "a", resources: [{ key: "y", mode: "exclusive" }] }, 0));
  });

  it("refuses malformed requests without changing anything", () => {
    const t = createClaims();
    const cases: Parameters<typeof t.take>[0][] = [
      { holder: "", resources: [{ key: "k", mode: "exclusive" }] },
      { holder: "a", resources: [] },
      { holder: "a", resources: [{ key: "   ", mode: "exclusive" }] },
      { holder: "a", resources: [{ key: "k", mode: "exclusive" }, { key: " k", mode: "shared" }] },
      { holder: "a", resources: [{ key: "k", mode: "exclusive" }], ttlMs: 0 },
      { holder: "a", resources: [{ key: "k", mode: "exclusive" }], ttlMs: 1.5 },
      { holder: "a", resources: [{ key: "\ud800", mode: "exclusive" }] },
      { holder: "a", resources: [{ key: "k", mode: "both" as "shared" }] },
      { holder: "a", resources: Array.from({ length: MAX_RESOURCES_PER_TAKE + 1 }, (_, i) => ({ key: `k${i}`, mode: "shared" as const })) },
    ];
    for (const c of cases) {
      const r = refused(t.take(c, 0));
      expect(r.invalid).toBeTypeOf("string");
      expect(r.blocked).toEqual([]);
    }
    expect(t.open()).toEqual([]);
    expect(t.lastToken).toBe(0);
  });

  it("rejects a bad now as a bug", () => {
    const t = createClaims();
    expect(() => t.take({ holder: "a", resources: [{ key: "k", mode: "shared" }] }, Number.NaN)).toThrow(RangeError);
    expect(() => t.take({ holder: "a", resources: [{ key: "k", mode: "shared" }] }, -1)).toThrow(RangeError);
    expect(() => t.take({ holder: "a", resources: [{ key: "k", mode: "shared" }] }, Infinity)).toThrow(RangeError);
    // a sub-millisecond clock is cut to whole milliseconds, the same on every replica
    const g = t.take({ holder: "a", resources: [{ key: "k", mode: "shared" }], ttlMs: 10 }, 5.75);
    expect(g.ok).toBe(true);
    expect(t.open()[0]).toMatchObject({ since: 5, expiresAt: 15 });
    expect(t.now).toBe(5);
  });
});

describe("release (§2)", () => {
  it("only the holder can release, and releaseAll returns what was held in the order taken", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "k2", mode: "exclusive" }] }, 0));
    granted(t.take({ holder: "b", resources: [{ key: "k1", mode: "exclusive" }] }, 0));
    granted(t.take({ holder: "a", resources: [{ key: "k1b", mode: "exclusive" }, { key: "k0", mode: "exclusive" }] }, 0));
    expect(t.release("b", "k2")).toBe(false);
    expect(t.owner("k2")).toBe("a");
    expect(t.release("a", "nothing")).toBe(false);
    expect(t.releaseAll("a")).toEqual(["k2", "k1b", "k0"]);
    expect(t.open().map((h) => h.key)).toEqual(["k1"]);
    expect(t.releaseAll("a")).toEqual([]);
  });

  it("a release with the grant's token releases it", () => {
    const t = createClaims();
    const g = granted(t.take({ holder: "a", resources: [{ key: "deploy", mode: "exclusive" }] }, 0)).grants[0]!;
    expect(t.release("a", "deploy", undefined, g.token)).toBe(true);
    expect(t.owner("deploy")).toBeUndefined();
    expect(t.checkFence("deploy", g.token)).toBe(false);
  });

  it("a late retry with an earlier grant's token releases nothing: the holder's newer grant stays", () => {
    const t = createClaims();
    const first = granted(t.take({ holder: "a", resources: [{ key: "deploy", mode: "exclusive" }] }, 0)).grants[0]!;
    expect(t.release("a", "deploy", 1, first.token)).toBe(true);
    const second = granted(t.take({ holder: "a", resources: [{ key: "deploy", mode: "exclusive" }] }, 2)).grants[0]!;
    expect(second.token).toBeGreaterThan(first.token);
    // the first release, retried after its answer was lost
    expect(t.release("a", "deploy", 3, first.token)).toBe(false);
    expect(t.owner("deploy")).toBe("a");
    expect(t.checkFence("deploy", second.token)).toBe(true);
    expect(t.open()).toEqual([expect.objectContaining({ key: "deploy", holder: "a", token: second.token })]);
    // a token that names no grant at all, or is not a whole number, ends nothing either
    expect(t.release("a", "deploy", 3, second.token + 1)).toBe(false);
    expect(t.release("a", "deploy", 3, Number.NaN)).toBe(false);
    expect(t.checkFence("deploy", second.token)).toBe(true);
    // without a token, release is unchanged: whatever the holder holds goes
    expect(t.release("a", "deploy")).toBe(true);
    expect(t.owner("deploy")).toBeUndefined();
  });

  it("a token names the holder's own grant: another holder's token releases nothing", () => {
    const t = createClaims({ capacity: { pool: null } });
    const a = granted(t.take({ holder: "a", resources: [{ key: "pool", mode: "shared" }] }, 0)).grants[0]!;
    const b = granted(t.take({ holder: "b", resources: [{ key: "pool", mode: "shared" }] }, 0)).grants[0]!;
    expect(t.release("a", "pool", 0, b.token)).toBe(false);
    expect(t.holders("pool")).toEqual(["a", "b"]);
    expect(t.release("a", "pool", 0, a.token)).toBe(true);
    expect(t.holders("pool")).toEqual(["b"]);
  });
});

describe("leases and fencing (§2 rules 5, 7)", () => {
  it("a lapsed lease holds nothing, is reported as lapsed, and its token is stale once re-granted", () => {
    const t = createClaims();
    const a = granted(t.take({ holder: "a", resources: [{ key: "invoice-seq", mode: "exclusive" }], ttlMs: 1000 }, 0));
    const tokenA = a.grants[0]?.token ?? 0;
    expect(t.checkFence("invoice-seq", tokenA, 999)).toBe(true);
    expect(t.owner("invoice-seq", 1000)).toBeUndefined();
    expect(t.lapsed(1000)).toEqual([expect.objectContaining({ key: "invoice-seq", holder: "a", why: "lease-lapsed" })]);
    expect(t.renew("a", "invoice-seq", 1000)).toBe(false);
    const b = granted(t.take({ holder: "b", resources: [{ key: "invoice-seq", mode: "exclusive" }] }, 1500));
    expect(b.superseded).toEqual([expect.objectContaining({ holder: "a", token: tokenA, why: "lease-lapsed" })]);
    // superseding removes the lapsed claim: it is reported once, in the grant, and is gone from the table after
    expect(t.lapsed()).toEqual([]);
    expect(t.purge()).toEqual([]);
    expect((JSON.parse(t.encode()) as { claims: unknown[][] }).claims.map((c) => c[1])).toEqual(["b"]);
    const tokenB = b.grants[0]?.token ?? 0;
    expect(tokenB).toBeGreaterThan(tokenA);
    // the paused holder wakes up and writes with its old token: rejected
    expect(t.checkFence("invoice-seq", tokenA)).toBe(false);
    expect(t.checkFence("invoice-seq", tokenB)).toBe(true);
    expect(t.release("a", "invoice-seq")).toBe(false);
    expect(t.owner("invoice-seq")).toBe("b");
  });

  it("renew extends a lease from the time of renewal", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }], ttlMs: 100 }, 0));
    expect(t.renew("a", "k", 90)).toBe(true);
    expect(t.owner("k", 150)).toBe("a");
    expect(t.owner("k", 190)).toBeUndefined();
    expect(t.renew("b", "k", 100)).toBe(false);
  });

  it("uses a caller's token (a log index) and refuses one that does not rise", () => {
    const t = createClaims();
    const g = granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }] }, 0, 17));
    expect(g.grants[0]?.token).toBe(17);
    t.release("a", "k");
    expect(refused(t.take({ holder: "b", resources: [{ key: "k", mode: "exclusive" }] }, 0, 17)).invalid).toMatch(/token/);
    expect(granted(t.take({ holder: "b", resources: [{ key: "k", mode: "exclusive" }] }, 0)).grants[0]?.token).toBe(18);
  });

  it("time never runs backwards for mutators", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }], ttlMs: 10 }, 100));
    granted(t.take({ holder: "b", resources: [{ key: "j", mode: "exclusive" }], ttlMs: 10 }, 50));
    expect(t.now).toBe(100);
    expect(t.open().find((h) => h.key === "j")?.since).toBe(100);
  });
});

describe("scopes (§2 rule 6)", () => {
  it("a claim in an ended scope holds nothing before any release arrives", () => {
    const ended = new Set<string>();
    const t = createClaims({ scopeEnded: (s) => ended.has(s) });
    granted(t.take({ holder: "w", resources: [{ key: "pkg:core", mode: "exclusive" }], scope: "run-7" }, 0));
    granted(t.take({ holder: "w", resources: [{ key: "area:ui", mode: "exclusive" }], scope: "ws-1" }, 0));
    ended.add("run-7"); // the run crashed; no event
    expect(t.owner("pkg:core")).toBeUndefined();
    expect(t.lapsed()).toEqual([expect.objectContaining({ key: "pkg:core", why: "scope-ended" })]);
    granted(t.take({ holder: "v", resources: [{ key: "pkg:core", mode: "exclusive" }] }, 1));
    expect(refused(t.take({ holder: "v", resources: [{ key: "x", mode: "exclusive" }], scope: "run-7" }, 1)).invalid).toMatch(/ended/);
    expect(t.owner("area:ui")).toBe("w");
  });

  it("releaseScope releases every claim in the scope, whoever took it", () => {
    const t = createClaims();
    granted(t.take({ holder: "coordinator", resources: [{ key: "a", mode: "exclusive" }], scope: "run-1" }, 0));
    granted(t.take({ holder: "worker", resources: [{ key: "b", mode: "exclusive" }], scope: "run-1" }, 0));
    granted(t.take({ holder: "worker", resources: [{ key: "c", mode: "exclusive" }], scope: "run-2" }, 0));
    expect(t.releaseScope("run-1")).toEqual(["a", "b"]);
    expect(t.open().map((h) => h.key)).toEqual(["c"]);
  });
});

describe("reads (§2)", () => {
  it("free, open, availability and heldList", () => {
    const t = createClaims({ roster: ["a", "b", "c"], capacity: { c: 2 } });
    expect(t.free()).toEqual(["a", "b", "c"]);
    granted(t.take({ holder: "scout#3", resources: [{ key: "b", mode: "exclusive" }], label: "parser work" }, 5));
    granted(t.take({ holder: "scout#1", resources: [{ key: "c", mode: "shared" }], scope: "run-1", ttlMs: 60 }, 6));
    expect(t.free()).toEqual(["a", "c"]);
    expect(t.availability(["c", "zz"])).toEqual([
      { key: "c", capacity: 2, onRoster: true, holders: [expect.objectContaining({ holder: "scout#1" })], free: 1 },
      { key: "zz", capacity: 1, onRoster: false, holders: [], free: 0 },
    ]);
    expect(heldList(t.open())).toBe(
      "b: held by scout#3 (exclusive, token 1, since 5) — parser work\n" +
        "c: held by scout#1 (shared, token 2, since 6, scope run-1, lease until 66)",
    );
    expect(heldList([])).toBe("nothing is held");
  });

  it("purge drops what holds nothing and reports it", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }], ttlMs: 5 }, 0));
    granted(t.take({ holder: "b", resources: [{ key: "j", mode: "exclusive" }] }, 0));
    expect(t.purge(10).map((l) => l.key)).toEqual(["k"]);
    expect(t.lapsed()).toEqual([]);
    expect(t.open().map((h) => h.key)).toEqual(["j"]);
  });
});
