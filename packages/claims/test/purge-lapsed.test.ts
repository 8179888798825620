/**
 * `purgeLapsedBefore(cutoff, max)`: drops the first `max` claims whose lease ended at or before `cutoff`, by expiry
 * then order taken — the same claims whatever the table's history (renewals, releases, replaced claims leave stale
 * entries in its expiry index; a table decoded from text has none), which is what lets every replica of a log call
 * it on each applied command and stay equal.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createClaims, decodeClaims } from "../src/index.ts";
import { expectedPurge } from "./support/purge-model.ts";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 300);

type Op =
  | { op: "take"; holder: number; key: number; ttl: number | null; dt: number }
  | { op: "renew"; holder: number; key: number; dt: number }
  | { op: "release"; holder: number; key: number; dt: number }
  | { op: "purge"; back: number; max: number; dt: number };

const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("take" as const), holder: fc.nat(1), key: fc.nat(3), ttl: fc.option(fc.integer({ min: 1, max: 50 }), { nil: null }), dt: fc.nat(20) }),
    fc.record({ op: fc.constant("renew" as const), holder: fc.nat(1), key: fc.nat(3), dt: fc.nat(20) }),
    fc.record({ op: fc.constant("release" as const), holder: fc.nat(1), key: fc.nat(3), dt: fc.nat(20) }),
    fc.record({ op: fc.constant("purge" as const), back: fc.nat(40), max: fc.nat(4), dt: fc.nat(20) }),
  ),
  { maxLength: 80 },
);

describe("purgeLapsedBefore", () => {
  it("drops exactly the first max lapsed-by-cutoff claims by expiry, whatever the history; a decoded copy drops the same", () => {
    fc.assert(
      fc.property(ops, (list: Op[]) => {
        const t = createClaims({ capacity: { k0: null, k1: 2 } });
        let now = 0;
        for (const o of list) {
          now += o.dt;
          if (o.op === "take") t.take({ holder: `h${o.holder}`, resources: [{ key: `k${o.key}`, mode: o.key < 2 ? "shared" : "exclusive" }], ...(o.ttl === null ? {} : { ttlMs: o.ttl }) }, now);
          else if (o.op === "renew") t.renew(`h${o.holder}`, `k${o.key}`, now);
          else if (o.op === "release") t.release(`h${o.holder}`, `k${o.key}`, now);
          else {
            const cutoff = Math.max(0, now - o.back);
            const copy = decodeClaims(t.encode()); // no stale index entries
            const want = expectedPurge(t, cutoff, o.max);
            expect(t.purgeLapsedBefore(cutoff, o.max)).toEqual(want);
            expect(copy.purgeLapsedBefore(cutoff, o.max)).toEqual(want);
            expect(copy.encode()).toBe(t.encode());
            // nothing dropped still held, and what is left past the cutoff is only what max left behind
            for (const c of want) expect(t.holders(c.key, cutoff)).not.toContain(c.holder);
            if (want.length < o.max) expect(expectedPurge(t, cutoff, 1)).toEqual([]);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("checks its arguments, and drops nothing held or without a lease", () => {
    const t = createClaims();
    t.take({ holder: "a", resources: [{ key: "forever", mode: "exclusive" }] }, 0);
    t.take({ holder: "b", resources: [{ key: "brief", mode: "exclusive" }], ttlMs: 10 }, 0);
    t.take({ holder: "c", resources: [{ key: "long", mode: "exclusive" }], ttlMs: 1_000 }, 0);
    expect(t.purgeLapsedBefore(9, 10)).toEqual([]);
    expect(t.purgeLapsedBefore(10, 10).map((c) => [c.holder, c.key, c.why])).toEqual([["b", "brief", "lease-lapsed"]]);
    expect(t.open(10).map((c) => c.key)).toEqual(["forever", "long"]);
    expect(() => t.purgeLapsedBefore(-1, 1)).toThrow(RangeError);
    expect(() => t.purgeLapsedBefore(10, 1.5)).toThrow(/max must be a safe integer ≥ 0/);
    expect(t.purgeLapsedBefore(10_000, 0)).toEqual([]);
    expect(t.purgeLapsedBefore(10_000, 5).map((c) => c.key)).toEqual(["long"]);
  });
});
