// Eligibility when the weighted mean V is negative and not whole: only ev ≤ V may win (policy.md §5).
// The incremental engine compares integer keys with ⌊V⌋; rounding V toward zero instead would admit an
// ev of −1 against V = −3/2. Written from a surviving mutant of the engine's floor division.
import { describe, expect, it } from "vitest";
import { HeddlePolicy } from "../src/index.ts";
import { allocateWithEngine } from "../src/allocation-engine.ts";
import { allocateByRepeatedPick } from "../src/reference-allocation.ts";
import { edge } from "./edge-builder.ts";

const { pick, allocate, effectiveVirtualService: ev } = HeddlePolicy;

describe("eligibility below zero", () => {
  // a: ev −1 with a short deadline (q = 1); b: ev −2 with a long one (q = 5). V = −3/2.
  const edges = [edge("a", { gauge: [-1n, 0n], demand: [1n, 1n] }), edge("b", { gauge: [-2n, 0n], demand: [5n, 5n] })];
  const config = { quantum: 5n };

  it("only the edge at or below V = −3/2 is eligible, though the other's deadline is earlier", () => {
    expect(edges.map((e) => ev(e).toString())).toEqual(["-1/1", "-2/1"]);
    expect(pick(edges, config, 100n)).toEqual({ attachment: "b", amount: 5n });
  });

  it("the engine, the reference loop and allocate agree on the whole round", () => {
    const expected = [
      { attachment: "b", amount: 5n },
      { attachment: "a", amount: 1n },
    ];
    expect(allocateByRepeatedPick(edges, config, 100n, 10)).toEqual(expected);
    expect(allocateWithEngine(edges, config, 100n, 10)).toEqual(expected);
    expect(allocate(edges, config, 100n, 10)).toEqual(expected);
  });

});
