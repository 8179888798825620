/**
 * The expiry index behind `purgeLapsedBefore` stays bounded: every leased take and renewal adds an entry, and a
 * release, replacement or renewal leaves the old one stale. Stale entries are counted and the index is rebuilt from
 * the live records once they pass max(EXPIRY_INDEX_SLACK, live leased claims); `purge()` drops them all. A rebuild
 * changes no decision: `purgeLapsedBefore` still drops the same claims as a decoded copy (which has no stale entries).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createClaims, decodeClaims } from "../src/index.ts";
import { expectedPurge } from "./support/purge-model.ts";
import type { ClaimsTable } from "../src/index.ts";
import { expiryIndexSize } from "../src/claims-table.ts";
import { EXPIRY_INDEX_SLACK } from "../src/limits.ts";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 100);

function size(t: ClaimsTable): number {
  const n = expiryIndexSize(t);
  if (n === undefined) throw new Error("expiryIndexSize answered undefined for a table createClaims made");
  return n;
}

/** Leased claims recorded (held or lapsed, not yet dropped): each needs one index entry. */
function leased(t: ClaimsTable, now: number): number {
  return [...t.open(now), ...t.lapsed(now)].filter((c) => c.expiresAt !== undefined).length;
}

function bound(live: number): number {
  return live + Math.max(EXPIRY_INDEX_SLACK, live);
}

describe("expiry index bound", () => {
  it("a leased mutex taken, renewed and released 20,000 times on one key keeps its index within the bound", () => {
    const t = createClaims();
    let peak = 0;
    for (let i = 0; i < 20_000; i++) {
      const o = t.take({ holder: "worker", resources: [{ key: "job", mode: "exclusive" }], ttlMs: 3_600_000 }, i);
      expect(o.ok).toBe(true);
      expect(t.renew("worker", "job", i)).toBe(true);
      expect(t.release("worker", "job", i)).toBe(true);
      peak = Math.max(peak, size(t));
    }
    expect(t.open()).toEqual([]);
    expect(peak).toBeLessThanOrEqual(bound(1));
    t.purge();
    expect(size(t)).toBe(0);
  });

  it("purge() drops every stale entry and keeps one per leased claim still recorded", () => {
    const t = createClaims({ capacity: { pool: null } });
    for (let h = 0; h < 10; h++) t.take({ holder: `h${h}`, resources: [{ key: "pool", mode: "shared" }], ttlMs: 100 }, 0);
    t.take({ holder: "forever", resources: [{ key: "pool", mode: "shared" }] }, 0);
    for (let at = 1; at <= 50; at++) for (let h = 0; h < 5; h++) t.renew(`h${h}`, "pool", at);
    for (let h = 5; h < 8; h++) t.release(`h${h}`, "pool", 50);
    expect(size(t)).toBe(10 + 50 * 5);
    // at 120: h8, h9 (expiry 100) have lapsed and go; h0..h4 (renewed to 150) and the lease-less claim stay
    expect(t.purge(120).map((c) => c.holder)).toEqual(["h8", "h9"]);
    expect(size(t)).toBe(5);
    expect(t.purgeLapsedBefore(150, 10).map((c) => c.holder)).toEqual(["h0", "h1", "h2", "h3", "h4"]);
    expect(size(t)).toBe(0);
    expect(t.open(150).map((c) => c.holder)).toEqual(["forever"]);
  });

  it("renewals past the slack rebuild the index without changing what purgeLapsedBefore drops", () => {
    const t = createClaims({ capacity: { pool: null } });
    for (let h = 0; h < 4; h++) t.take({ holder: `h${h}`, resources: [{ key: "pool", mode: "shared" }], ttlMs: 10 + h }, 0);
    for (let i = 0; i < 3 * EXPIRY_INDEX_SLACK; i++) {
      t.renew(`h${i % 2}`, "pool", 1);
      expect(size(t)).toBeLessThanOrEqual(bound(4));
    }
    // h0 renewed at 1 → 11, h1 renewed at 1 → 12, h2 → 12, h3 → 13: expiry, then order taken
    expect(t.purgeLapsedBefore(100, 10).map((c) => [c.holder, c.expiresAt])).toEqual([
      ["h0", 11],
      ["h1", 12],
      ["h2", 12],
      ["h3", 13],
    ]);
    expect(size(t)).toBe(0);
  });
});

type Op =
  | { op: "take"; holder: number; key: number; ttl: number | null; dt: number }
  | { op: "renews"; holder: number; key: number; times: number; dt: number }
  | { op: "renewAll"; times: number; dt: number }
  | { op: "release"; holder: number; key: number; dt: number }
  | { op: "purge"; dt: number }
  | { op: "purgeBefore"; back: number; max: number; dt: number };

const ops = fc.array(
  fc.oneof(
    { arbitrary: fc.record({ op: fc.constant("take" as const), holder: fc.nat(2), key: fc.nat(3), ttl: fc.option(fc.integer({ min: 1, max: 60 }), { nil: null }), dt: fc.nat(10) }), weight: 3 },
    // bursts of renewals (dt 0 between them) drive the stale count past the slack within a short sequence
    { arbitrary: fc.record({ op: fc.constant("renews" as const), holder: fc.nat(2), key: fc.nat(3), times: fc.integer({ min: 1, max: 1500 }), dt: fc.nat(10) }), weight: 3 },
    // every leased claim held, renewed `times` times each: stale entries pile up fast across several holders
    { arbitrary: fc.record({ op: fc.constant("renewAll" as const), times: fc.integer({ min: 1, max: 600 }), dt: fc.nat(10) }), weight: 2 },
    fc.record({ op: fc.constant("release" as const), holder: fc.nat(2), key: fc.nat(3), dt: fc.nat(10) }),
    fc.record({ op: fc.constant("purge" as const), dt: fc.nat(10) }),
    fc.record({ op: fc.constant("purgeBefore" as const), back: fc.nat(40), max: fc.nat(4), dt: fc.nat(10) }),
  ),
  { maxLength: 40, size: "max" },
);

describe("expiry index rebuilds", () => {
  it("keep the index within the bound and change no outcome: the table and a decoded copy decide alike", () => {
    fc.assert(
      fc.property(ops, (list: Op[]) => {
        const t = createClaims({ capacity: { k0: null, k1: 2 } });
        let now = 0;
        for (const o of list) {
          now += o.dt;
          const copy = decodeClaims(t.encode()); // the same records, no stale index entries
          const res = "key" in o ? `k${o.key}` : "";
          if (o.op === "take") {
            const req = { holder: `h${o.holder}`, resources: [{ key: res, mode: o.key < 2 ? ("shared" as const) : ("exclusive" as const) }], ...(o.ttl === null ? {} : { ttlMs: o.ttl }) };
            expect(t.take(req, now)).toEqual(copy.take(req, now));
          } else if (o.op === "renews") {
            const limit = bound(leased(t, now)); // a renewal records no claim and drops none
            for (let i = 0; i < o.times; i++) {
              const a = t.renew(`h${o.holder}`, res, now);
              const b = copy.renew(`h${o.holder}`, res, now);
              if (a !== b) throw new Error(`renewal ${i}: the table answered ${a}, its decoded copy ${b}`);
              if (size(t) > limit) throw new Error(`renewal ${i}: expiry index holds ${size(t)} entries, above ${limit}`);
            }
          } else if (o.op === "renewAll") {
            const limit = bound(leased(t, now));
            const held = t.open(now).filter((c) => c.expiresAt !== undefined);
            for (let i = 0; i < o.times; i++) {
              for (const c of held) {
                const a = t.renew(c.holder, c.key, now);
                const b = copy.renew(c.holder, c.key, now);
                if (a !== b) throw new Error(`renewal ${i} of ${c.holder} on ${c.key}: the table answered ${a}, its decoded copy ${b}`);
                if (size(t) > limit) throw new Error(`renewal ${i}: expiry index holds ${size(t)} entries, above ${limit}`);
              }
            }
          } else if (o.op === "release") {
            expect(t.release(`h${o.holder}`, res, now)).toBe(copy.release(`h${o.holder}`, res, now));
          } else if (o.op === "purge") {
            expect(t.purge(now)).toEqual(copy.purge(now));
            expect(size(t)).toBe(leased(t, now));
          } else {
            const cutoff = Math.max(0, now - o.back);
            const want = expectedPurge(t, cutoff, o.max);
            expect(t.purgeLapsedBefore(cutoff, o.max)).toEqual(want);
            expect(copy.purgeLapsedBefore(cutoff, o.max)).toEqual(want);
          }
          expect(t.encode()).toBe(copy.encode());
          expect(size(t)).toBeLessThanOrEqual(bound(leased(t, now)));
        }
      }),
      { numRuns: RUNS },
    );
  });
});
