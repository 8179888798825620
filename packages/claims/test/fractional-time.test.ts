// A fractional time (a clock with sub-millisecond resolution) is stored as whole milliseconds by every mutator
// (whole-ms.ts), so the table's encoding stays integral and decodes again. Before the fix `#advance` checked the
// time but kept the raw fraction as the table's clock, and `encode()` then wrote a text `decodeClaims` refuses.
import { describe, expect, it } from "vitest";
import { createClaims, decodeClaims } from "../src/index.ts";
import { granted } from "./support/outcomes.ts";

describe("fractional times", () => {
  it("a take, release or renewal at a fractional time moves the clock to the whole millisecond below it", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }], ttlMs: 100 }, 5.5));
    expect(t.open().map((h) => [h.key, h.since, h.expiresAt])).toEqual([["k", 5, 105]]);
    expect(JSON.parse(t.encode()).now).toBe(5);
    expect(decodeClaims(t.encode()).encode()).toBe(t.encode());
    t.release("a", "k", 7.9);
    expect(JSON.parse(t.encode()).now).toBe(7);
    expect(decodeClaims(t.encode()).encode()).toBe(t.encode());
  });

  it("a time of -0 is stored as 0", () => {
    const t = createClaims();
    granted(t.take({ holder: "a", resources: [{ key: "k", mode: "exclusive" }] }, -0));
    expect(Object.is(t.now, 0)).toBe(true);
    expect(Object.is(t.open()[0]!.since, 0)).toBe(true);
    t.release("a", "k", -0);
    expect(Object.is(t.now, 0)).toBe(true);
  });
});
