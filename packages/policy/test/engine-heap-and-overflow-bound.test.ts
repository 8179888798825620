/**
 * Rounds that tell apart Stryker survivors (issue 19, seventeenth session) in the allocation engine's
 * quantum heap and in its 64-bit overflow bound. Each expected outcome is the literal loop's (repeated
 * `pick`, policy.md §7), which `allocate` must reproduce: the same grants, or the same
 * `LedgerOverflowError` (§2.2).
 */
import { describe, expect, it } from "vitest";
import { LedgerOverflowError, MAX, Rational } from "@heddle/ledger";
import { HeddlePolicy } from "../src/index.ts";
import type { Grant, PolicyConfig, PolicyEdge } from "../src/index.ts";
import { allocateByRepeatedPick } from "../src/reference-allocation.ts";
import { edge } from "./edge-builder.ts";

/** The grants as `id:amount`, or the name of the overflow error. */
function outcomeOf(run: () => readonly Grant[]): string[] | "LedgerOverflowError" {
  try {
    return run().map((g) => `${g.attachment}:${g.amount}`);
  } catch (err) {
    if (err instanceof LedgerOverflowError) return "LedgerOverflowError";
    throw err;
  }
}

/** The literal loop gives `expected`, and `allocate` gives the same. */
function agrees(edges: readonly PolicyEdge[], config: PolicyConfig, h: bigint, expected: string[] | "LedgerOverflowError"): void {
  expect(outcomeOf(() => allocateByRepeatedPick(edges, config, h, 100))).toEqual(expected);
  expect(outcomeOf(() => HeddlePolicy.allocate(edges, config, h, 100))).toEqual(expected);
}

describe("the quantum heap: a candidate that finished its demand no longer counts", () => {
  it("after the largest quantum's owner is satisfied, the next largest is still trimmed by the holdings", () => {
    // Quantum 10 over holdings 8, so the heap watches every tree candidate from the start. All three sit at
    // ev 0 = V. a (weight 6, need 6) has deadline 6/6 = 1 and wins its 6; its demand is then met, so it leaves
    // the round while its heap record (quantum 6, the largest) is still on top. Two units remain: b's quantum 5
    // is trimmed to 2 (deadline 0 + 2), level with c's (need 2, deadline 2), and the tie goes to "b" < "c".
    // An engine that still answered a's finished record would stop its sweep there and leave b in the tree
    // at its untrimmed deadline 5, handing the last two units to c.
    const edges = [
      edge("a", { w: 6n, demand: [6n, 6n] }),
      edge("b", { demand: [5n, 5n] }),
      edge("c", { demand: [2n, 2n] }),
    ];
    agrees(edges, { quantum: 10n }, 8n, ["a:6", "b:2"]);
  });
});

describe("the overflow bound covers the service a round can still add", () => {
  // One edge of weight 1 whose offset already puts ev at about 2^62: with holdings and quantum just above
  // 2^62, pick's first deadline ev + q passes 2^63 − 1, so the literal loop throws. The bound's A must count
  // the round's holdings at least once to decline it; with them cancelled (h subtracted in `units`, or the h/w
  // term subtracted) A is about 2^62, every conjunct holds and the unbounded engine would answer a grant.
  const ev = (1n << 62n) - 10n;
  const h = (1n << 62n) + 100n;

  it("ev 2^62 − 10 with 2^62 + 100 to give: the first deadline overflows, on either path", () => {
    const e = edge("a", { gauge: null, offset: Rational.of(ev), demand: [MAX, MAX] });
    agrees([e], { quantum: h }, h, "LedgerOverflowError");
  });

  it("the same edge with 100 fewer units to give stays in range, and both paths grant them all", () => {
    const e = edge("a", { gauge: null, offset: Rational.of(ev), demand: [MAX, MAX] });
    const room = MAX - ev;
    agrees([e], { quantum: room }, room, [`a:${room}`]);
  });
});

describe("the overflow bound scales the service already counted by the weight's denominator", () => {
  // Weight 1/512 and a floor in halves: V = (Σ w·ev) / (Σ w) multiplies an ev numerator near 2^60 by 512, so
  // the literal loop's first pick overflows. The bound must count 2^50 units at 512 per unit (u·wd/wn); at
  // u/wd/wn its A is about 2^41 and its product 2^61 would let the engine answer three units.
  it("a fold of 2^50 units: ev = 1/2 − 2^59", () => {
    const e = edge("a", { w: [1n, 512n], gauge: [Rational.of(1n, 2n), 1n << 50n], demand: [100n, 100n] });
    agrees([e], { quantum: 3n }, 3n, "LedgerOverflowError");
  });

  it("a return of 2^50 units: ev = 1/2 − 2^59", () => {
    const e = edge("a", { w: [1n, 512n], gauge: [Rational.of(1n, 2n), 0n], returned: 1n << 50n, demand: [100n, 100n] });
    agrees([e], { quantum: 3n }, 3n, "LedgerOverflowError");
  });
});
