// The race that motivates the package (claims.md §5): members that all read an empty
// board and then all take the same key. Announcing would grant everyone; the table
// grants exactly one and every refusal names it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createClaims } from "../src/index.ts";

function race(members: readonly string[], withRoster: boolean) {
  const key = "src/parser.ts";
  const t = createClaims(withRoster ? { roster: [key, "src/lexer.ts"] } : {});
  // every member reads the board first: nothing is held by anyone yet
  for (const m of members) {
    expect(t.owner(key)).toBeUndefined();
    expect(t.open()).toEqual([]);
    if (withRoster) expect(t.free()).toContain(key);
  }
  // then every member takes what it saw was free
  const outcomes = members.map((m) => ({ m, o: t.take({ holder: m, resources: [{ key, mode: "exclusive" }] }, 130) }));
  const winners = outcomes.filter((x) => x.o.ok);
  expect(winners).toHaveLength(1);
  const winner = winners[0]?.m;
  for (const { m, o } of outcomes) {
    if (m === winner) continue;
    expect(o.ok).toBe(false);
    if (!o.ok) expect(o.blocked).toEqual([{ key, capacity: 1, reason: "held", holders: [winner] }]);
  }
  expect(t.holders(key)).toEqual([winner]);
  return winner;
}

describe("the motivating race", () => {
  for (const n of [3, 30]) {
    it(`${n} members read an empty board, then all take the same key: exactly one grant`, () => {
      const members = Array.from({ length: n }, (_, i) => `scout#${i + 1}`);
      expect(race(members, false)).toBe("scout#1");
      expect(race(members, true)).toBe("scout#1");
    });
  }

  it("holds in any arrival order: the first to ask holds it", () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(Array.from({ length: 30 }, (_, i) => `m${i}`), { minLength: 3 }), (members) => {
        expect(race(members, false)).toBe(members[0]);
      }),
      { numRuns: 200 },
    );
  });
});
