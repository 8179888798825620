/**
 * Single-server membership steps (governed.md R-M2): the voter sets before and after may differ by one voter at
 * most, counting both the voters added and the voters removed — swapping one voter for another, or removing two,
 * is two steps and refused `invalid-membership`; adding one or removing one is a single step.
 */
import { describe, expect, it } from "vitest";
import { validSingleStep } from "../src/index.ts";
import type { ClusterConfig } from "../src/index.ts";
import { Script } from "./support/script.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: [] };

describe("a membership change counts removed voters as well as added ones (R-M2)", () => {
  const cases: [string, ClusterConfig, boolean][] = [
    ["swapping c for d", { voters: ["a", "b", "d"], learners: [] }, false],
    ["removing b and c", { voters: ["a"], learners: [] }, false],
    ["demoting b and c to learners", { voters: ["a"], learners: ["b", "c"] }, false],
    ["removing c", { voters: ["a", "b"], learners: [] }, true],
    ["demoting c to a learner", { voters: ["a", "b"], learners: ["c"] }, true],
    ["adding d", { voters: ["a", "b", "c", "d"], learners: [] }, true],
  ];
  it.each(cases)("validSingleStep from {a, b, c}, %s", (_what, target, ok) => {
    expect(validSingleStep(ABC, target)).toBe(ok);
  });

  it("the leader refuses a swap and a double removal invalid-membership, appends nothing, and still accepts one removal", () => {
    const s = new Script(["a", "b", "c"]);
    s.elect("a");
    const a = s.core("a");
    const last = a.lastIndex;
    a.changeMembership(1, { voters: ["a", "b", "d"], learners: [] });
    a.changeMembership(2, { voters: ["a"], learners: [] });
    let rd = s.flush("a");
    expect(rd.outcomes).toEqual([
      { id: 1, ok: false, refusal: "invalid-membership" },
      { id: 2, ok: false, refusal: "invalid-membership" },
    ]);
    expect(rd.storage).toEqual([]);
    expect([a.lastIndex, a.config]).toEqual([last, ABC]);
    a.changeMembership(3, { voters: ["a", "b"], learners: [] });
    rd = s.flush("a");
    expect(rd.outcomes).toEqual([]);
    expect(a.lastIndex).toBe(last + 1);
    expect(a.config).toEqual({ voters: ["a", "b"], learners: [] });
  });
});
