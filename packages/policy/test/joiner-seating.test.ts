// settleJoiners' plan is a list the caller replays through ledger.seat: it must come out in id order
// (UTF-16) even when the caller's list is not, and a waker's offset is its clamp against the one front.
// Written from Stryker's uncovered mutants of the seating sort.
import { describe, expect, it } from "vitest";
import { AttachmentId, Rational } from "@heddle/ledger";
import { HeddlePolicy } from "../src/index.ts";
import { edge } from "./edge-builder.ts";

const { settleJoiners } = HeddlePolicy;

describe("settleJoiners: seating order", () => {
  it("seats newborns in UTF-16 id order whatever order the edges arrive in", () => {
    const runner = edge("m", { gauge: [20n, 0n] });
    const plan = settleJoiners({
      edges: [edge("z", { gauge: null }), runner, edge("B", { gauge: null }), edge("b", { gauge: null }), edge("a", { gauge: null })],
      observed: new Map(),
      sleeperCredit: 0n,
    });
    expect(plan.seats.map((s) => s.attachment)).toEqual(["B", "a", "b", "z"]);
    expect(plan.seats.every((s) => s.front.equals(Rational.of(20n)))).toBe(true);
    expect(plan.front?.equals(Rational.of(20n))).toBe(true);
  });

  it("a newborn recorded as not demanding is seated, never also clamped as a waker", () => {
    const runner = edge("m", { gauge: [20n, 0n] });
    const sleeper = edge("w", { gauge: [5n, 0n] });
    const plan = settleJoiners({
      edges: [runner, edge("n", { gauge: null }), sleeper],
      observed: new Map([[AttachmentId("n"), false], [AttachmentId("w"), false], [AttachmentId("m"), true]]),
      sleeperCredit: 0n,
    });
    expect(plan.seats.map((s) => s.attachment)).toEqual(["n"]);
    expect([...plan.offsets.keys()]).toEqual(["w"]);
    expect(plan.offsets.get(AttachmentId("w"))?.equals(Rational.of(15n))).toBe(true);
  });
});
