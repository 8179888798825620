/**
 * Stryker survivors in `claims-table.ts` lines 51–236 (session 17, helper AD): the option bounds read at their
 * edge, a malformed resource or a valid scope in front of a bad field, time refusals of the methods that take an
 * optional `now`, the order taken surviving a decode, and the per-scope index after single releases.
 */
import { describe, expect, it } from "vitest";
import { createClaims, decodeClaims, MAX_ROSTER_KEYS } from "../src/index.ts";
import type { ClaimsOptions, TakeRequest } from "../src/index.ts";
import { thrown } from "./support/thrown.ts";

const BAD_NOW = "RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got -1";

describe("option lists at MAX_ROSTER_KEYS", () => {
  it("a roster of MAX_ROSTER_KEYS entries is read key by key; one more is refused on its length alone", () => {
    expect(MAX_ROSTER_KEYS).toBe(1_000_000);
    // every entry names the same key: at the bound the first repeat is what is refused
    const roster = new Array<string>(MAX_ROSTER_KEYS).fill("a");
    expect(thrown(() => createClaims({ roster }))).toBe('RangeError: roster lists "a" twice');
    roster.push("a");
    expect(thrown(() => createClaims({ roster }))).toBe("RangeError: roster lists more than 1000000 keys");
  });

  it("a capacity map of MAX_ROSTER_KEYS keys is read key by key; one more is refused on its length alone", () => {
    // integer-like keys are kept as elements, so the map is cheap to build; "0" is not on the roster
    const capacity: Record<string, number> = {};
    for (let i = 0; i < MAX_ROSTER_KEYS; i++) capacity[i] = 1;
    const options: ClaimsOptions = { roster: ["a"], capacity };
    expect(thrown(() => createClaims(options))).toBe('RangeError: capacity names "0", which is not on the roster');
    capacity[MAX_ROSTER_KEYS] = 1;
    expect(thrown(() => createClaims(options))).toBe("RangeError: capacity lists more than 1000000 keys");
  });
});

describe("a malformed take, checked in full", () => {
  const r = (key: string) => ({ key, mode: "shared" }) as TakeRequest["resources"][number];

  it("an undefined resource is refused for its key, not thrown on", () => {
    const t = createClaims();
    const request = { holder: "w", resources: [r("a"), undefined] } as unknown as TakeRequest;
    expect(t.take(request, 1)).toEqual({ ok: false, blocked: [], invalid: "each resource needs a string key" });
    expect(t.wouldRefuse(request, 1)).toBeUndefined();
    expect(t.open()).toEqual([]);
  });

  it("a valid scope does not end the checks: the lease and the label after it are still checked", () => {
    const t = createClaims();
    const cases: [Partial<TakeRequest>, string][] = [
      [{ ttlMs: 0 }, "ttlMs must be a whole number of ms from 1 to 3155760000000 (MAX_TTL_MS, 100 years)"],
      [{ ttlMs: 2.5 }, "ttlMs must be a whole number of ms from 1 to 3155760000000 (MAX_TTL_MS, 100 years)"],
      [{ label: "l".repeat(4097) }, "label must be a string of at most 4096 code units"],
      [{ label: 7 as unknown as string }, "label must be a string of at most 4096 code units"],
    ];
    for (const [extra, invalid] of cases) {
      const request = { holder: "w", resources: [r("a")], scope: "run-1", ...extra } as TakeRequest;
      expect(t.take(request, 1), JSON.stringify(extra).slice(0, 40)).toEqual({ ok: false, blocked: [], invalid });
    }
    expect(t.open()).toEqual([]);
    expect(t.take({ holder: "w", resources: [r("a")], scope: "run-1", ttlMs: 1, label: "l".repeat(4096) }, 1).ok).toBe(true);
  });
});

describe("a bad time given to a method whose now is optional", () => {
  it("every mutator refuses it with the message that names `now`", () => {
    const t = createClaims();
    t.take({ holder: "w", resources: [{ key: "a", mode: "shared" }], scope: "s" }, 5);
    expect(thrown(() => t.release("w", "a", -1))).toBe(BAD_NOW);
    expect(thrown(() => t.releaseAll("w", -1))).toBe(BAD_NOW);
    expect(thrown(() => t.releaseScope("s", -1))).toBe(BAD_NOW);
    expect(thrown(() => t.purge(-1))).toBe(BAD_NOW);
    expect(thrown(() => t.release("w", "a", Number.NaN))).toBe("RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got NaN");
    // nothing was released, and the clock did not move
    expect(t.holders("a")).toEqual(["w"]);
    expect(t.now).toBe(5);
  });

  it("every read refuses it with the message that names `now`", () => {
    const t = createClaims({ roster: ["a"] });
    t.take({ holder: "w", resources: [{ key: "a", mode: "shared" }] }, 5);
    const reads: [string, () => unknown][] = [
      ["owner", () => t.owner("a", -1)],
      ["holders", () => t.holders("a", -1)],
      ["free", () => t.free(-1)],
      ["open", () => t.open(-1)],
      ["lapsed", () => t.lapsed(-1)],
      ["availability", () => t.availability(["a"], -1)],
      ["checkFence", () => t.checkFence("a", 1, -1)],
    ];
    for (const [name, read] of reads) expect(thrown(read), name).toBe(BAD_NOW);
  });
});

describe("the order taken survives a decode", () => {
  function decoded() {
    const t = createClaims();
    t.take({ holder: "w", resources: [{ key: "b", mode: "exclusive" }] }, 1);
    t.take({ holder: "w", resources: [{ key: "a", mode: "exclusive" }] }, 2);
    t.take({ holder: "v", resources: [{ key: "c", mode: "exclusive" }] }, 3);
    return decodeClaims(t.encode());
  }

  it("releaseAll on a decoded table reports the keys in the order taken", () => {
    expect(decoded().releaseAll("w")).toEqual(["b", "a"]);
  });

  it("claims taken after the decode keep the decoded ones and come after them", () => {
    const t = decoded();
    for (const key of ["d", "e", "f", "g"]) t.take({ holder: "w", resources: [{ key, mode: "exclusive" }] }, 4);
    expect(t.open().map((h) => h.key)).toEqual(["b", "a", "c", "d", "e", "f", "g"]);
    expect(t.releaseAll("w")).toEqual(["b", "a", "d", "e", "f", "g"]);
    expect(t.open().map((h) => h.key)).toEqual(["c"]);
  });
});

describe("the per-scope index follows single releases", () => {
  const take = (holder: string, key: string, scope?: string): TakeRequest =>
    scope === undefined ? { holder, resources: [{ key, mode: "exclusive" }] } : { holder, resources: [{ key, mode: "exclusive" }], scope };

  it("a claim released on its own is not released again with its scope, nor is the holder's later claim", () => {
    const t = createClaims();
    t.take(take("w", "a", "s"), 1);
    expect(t.release("w", "a")).toBe(true);
    expect(t.releaseScope("s")).toEqual([]);
    // the same holder takes the same key again, outside the scope
    t.take(take("w", "a", "s"), 2);
    expect(t.release("w", "a")).toBe(true);
    t.take(take("w", "a"), 3);
    expect(t.releaseScope("s")).toEqual([]);
    expect(t.owner("a")).toBe("w");
    expect(t.release("w", "a")).toBe(true);
  });

  it("releasing one claim of a scope leaves the scope's other claims to releaseScope", () => {
    const t = createClaims();
    t.take(take("w1", "a", "s"), 1);
    t.take(take("w2", "b", "s"), 1);
    t.take(take("w3", "c", "s"), 1);
    expect(t.release("w2", "b")).toBe(true);
    expect(t.releaseScope("s")).toEqual(["a", "c"]);
    expect(t.open()).toEqual([]);
  });
});
