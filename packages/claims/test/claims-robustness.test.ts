// Bad input is refused or rejected with a typed error, never thrown as anything else;
// large tables stay correct through index compaction.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClaimsDecodeError, createClaims, decodeAdvisorySlot, decodeClaims, decodeKeeperSlot } from "../src/index.ts";
import type { TakeRequest } from "../src/index.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 300);

function sampleText(): string {
  const t = createClaims({ capacity: { pool: 2 } });
  t.take({ holder: " spaced holder ", resources: [{ key: "pool", mode: "shared" }], scope: " run 1 ", label: "\ud800 odd" }, 3);
  t.take({ holder: "b", resources: [{ key: "x", mode: "exclusive" }], ttlMs: 10 }, 4);
  return t.encode();
}

describe("decoders reject, never crash", () => {
  it("round-trips holders and scopes with surrounding spaces (only keys are trimmed)", () => {
    const text = sampleText();
    expect(decodeClaims(text).encode()).toBe(text);
    expect(decodeClaims(text).holders("pool")).toEqual([" spaced holder "]);
  });

  it("any JSON value or mutated text is either a valid table or a ClaimsDecodeError", () => {
    const text = sampleText();
    const mutated = fc
      .tuple(fc.nat(text.length - 1), fc.nat(text.length - 1), fc.string({ maxLength: 3 }))
      .map(([i, j, s]) => text.slice(0, Math.min(i, j)) + s + text.slice(Math.max(i, j)));
    const values = fc.oneof(mutated, fc.json(), fc.string());
    fc.assert(
      fc.property(values, (input) => {
        for (const decode of [decodeClaims, decodeKeeperSlot, decodeAdvisorySlot] as const) {
          try {
            decode(input);
          } catch (e) {
            expect(e).toBeInstanceOf(ClaimsDecodeError);
          }
        }
        try {
          const t = decodeClaims(input);
          expect(decodeClaims(t.encode()).encode()).toBe(t.encode());
        } catch (e) {
          expect(e).toBeInstanceOf(ClaimsDecodeError);
        }
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it("a take with any shape of request is granted or refused, never thrown", () => {
    const anything = fc.anything();
    const request = fc.oneof(
      anything,
      fc.record({ holder: anything, resources: anything }),
      fc.record({ holder: fc.string(), resources: fc.array(fc.record({ key: anything, mode: anything })), scope: anything, ttlMs: anything, label: anything }),
    );
    fc.assert(
      fc.property(request, (r) => {
        const t = createClaims({ roster: ["a", "b"] });
        const out = t.take(r as TakeRequest, 1);
        expect(typeof out.ok).toBe("boolean");
        expect(t.release(r as string, r as string)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("large tables", () => {
  it("stay correct while thousands of keys are taken and released (index compaction)", () => {
    const t = createClaims();
    for (let i = 0; i < 5000; i++) t.take({ holder: `h${i % 7}`, resources: [{ key: `k${i}`, mode: "exclusive" }] }, i);
    // three keys in four released: more emptied keys than half the index, so it compacts
    for (let i = 0; i < 5000; i++) if (i % 4 !== 1) expect(t.release(`h${i % 7}`, `k${i}`)).toBe(true);
    for (let i = 0; i < 5000; i++) expect(t.owner(`k${i}`)).toBe(i % 4 !== 1 ? undefined : `h${i % 7}`);
    // freed keys can be taken again, held ones are still refused with their holder
    expect(t.take({ holder: "z", resources: [{ key: "k0", mode: "exclusive" }] }, 6000).ok).toBe(true);
    const r = t.take({ holder: "z", resources: [{ key: "k1", mode: "exclusive" }] }, 6000);
    expect(r.ok ? [] : r.blocked[0]?.holders).toEqual(["h1"]);
    expect(t.open()).toHaveLength(1251);
    expect(decodeClaims(t.encode()).encode()).toBe(t.encode());
  });
});
