/**
 * Mutation-testing gaps (issue 19, helper I) of `Rational`/`Weight` (ledger.md §3.3, §3.4) and of the
 * replica list cache of `TopologyIndex` (§5.1): exact argument-error words, that values are frozen,
 * field equality on both fields, the canonical zero, `max` answering `a` on a tie, and the sorted
 * replica list staying cached while nothing new is named. Every fixture is built inside its test.
 */
import { describe, expect, it } from "vitest";
import { DivisionByZeroError, LedgerOverflowError, MAX } from "../src/index.ts";
import { emptyState } from "../src/state.ts";
import { TopologyIndex } from "../src/topology.ts";
import { E, G, R, Rational, Weight } from "./arbitraries.ts";

const any = <T>(x: unknown): T => x as T;

describe("Rational: argument errors name the argument and what was received", () => {
  it("a non-bigint numerator, denominator or service-unit count is a TypeError saying which", () => {
    expect(() => Rational.of(any<bigint>(1), 2n)).toThrow(new TypeError("Rational numerator must be a bigint, got number"));
    expect(() => Rational.of(1n, any<bigint>("2"))).toThrow(new TypeError("Rational denominator must be a bigint, got string"));
    expect(() => Rational.perWeight(any<bigint>(3), Weight.ONE)).toThrow(new TypeError("service units must be a bigint, got number"));
  });

  it("a zero denominator and a zero divisor are DivisionByZeroErrors with their own words", () => {
    expect(() => Rational.of(3n, 0n)).toThrow(DivisionByZeroError);
    expect(() => Rational.of(3n, 0n)).toThrow(/^Rational 3\/0 has a zero denominator$/);
    const half = Rational.of(1n, 2n);
    expect(() => half.div(Rational.ZERO)).toThrow(DivisionByZeroError);
    // div checks its divisor itself: the message names the dividend, not a `…/0` rational
    expect(() => half.div(Rational.ZERO)).toThrow(/^division of 1\/2 by zero$/);
  });
});

describe("Rational.of checks its numerator's range itself", () => {
  it("2^63 over a positive denominator throws (no negation or |n| would catch it)", () => {
    expect(() => Rational.of(MAX + 1n)).toThrow(LedgerOverflowError);
    expect(() => Rational.of(MAX + 1n, 3n)).toThrow(/^value 9223372036854775808 is outside the signed 64-bit range$/);
    expect(Rational.of(MAX).num).toBe(MAX);
  });
});

describe("Weight: argument errors name the argument and what was received", () => {
  it("a non-bigint part is a TypeError; a part outside 1 … 2^63−1 is a RangeError naming the weight", () => {
    expect(() => Weight.of(any<bigint>(1), 2n)).toThrow(new TypeError("Weight numerator must be a bigint, got number"));
    expect(() => Weight.of(1n, any<bigint>(null))).toThrow(new TypeError("Weight denominator must be a bigint, got object"));
    expect(() => Weight.of(0n, 2n)).toThrow(new RangeError("Weight 0/2 must have both parts in 1 … 2^63 − 1"));
  });
});

describe("Rational and Weight values are frozen", () => {
  it("however they were made", () => {
    for (const v of [Rational.of(1n, 2n), Rational.of(-6n, 4n), Rational.ZERO, Rational.ONE, Weight.of(2n, 3n), Weight.ONE]) {
      expect(Object.isFrozen(v)).toBe(true);
    }
  });
});

describe("equals compares both fields", () => {
  it("same denominator, other numerator, and same numerator, other denominator, are unequal", () => {
    expect(Rational.of(1n, 2n).equals(Rational.of(3n, 2n))).toBe(false);
    expect(Rational.of(1n, 2n).equals(Rational.of(1n, 3n))).toBe(false);
    expect(Rational.of(2n, 4n).equals(Rational.of(1n, 2n))).toBe(true);
    expect(Weight.of(1n, 2n).equals(Weight.of(3n, 2n))).toBe(false);
    expect(Weight.of(1n, 2n).equals(Weight.of(1n, 3n))).toBe(false);
    expect(Weight.of(2n, 4n).equals(Weight.of(1n, 2n))).toBe(true);
  });
});

describe("Rational: the canonical zero and max on a tie", () => {
  it("every zero is Rational.ZERO itself, whatever its denominator", () => {
    expect(Rational.of(0n, 5n)).toBe(Rational.ZERO);
    expect(Rational.of(0n, -7n)).toBe(Rational.ZERO);
    expect(Rational.of(1n, 3n).sub(Rational.of(1n, 3n))).toBe(Rational.ZERO);
  });

  it("max(a, b) is a when a equals b (a ≥ b), b only when b is greater", () => {
    const a = Rational.of(1n, 2n);
    const b = Rational.of(2n, 4n);
    expect(a).not.toBe(b);
    expect(Rational.max(a, b)).toBe(a);
    expect(Rational.max(b, a)).toBe(b);
    const c = Rational.of(2n, 3n);
    expect(Rational.max(a, c)).toBe(c);
    expect(Rational.max(c, a)).toBe(c);
  });
});

describe("TopologyIndex: the sorted replica list", () => {
  it("stays the same cached list while no new replica is named, and is rebuilt when one is", () => {
    const s = emptyState();
    s.records.set(E("e1"), [{ id: E("e1"), parent: G("a"), child: G("b"), weight: Weight.ONE }]);
    const ix = new TopologyIndex(s);
    ix.replicaSeen(R("bob"));
    ix.replicaSeen(R("alice"));
    const before = ix.replicas();
    expect(before).toEqual(["alice", "bob"]);
    expect(ix.replicas()).toBe(before); // a second read is the cached list, not a re-sort
    ix.replicaSeen(R("bob")); // already known: the cache stays
    expect(ix.replicas()).toBe(before);
    ix.replicaSeen(R("carol"));
    expect(ix.replicas()).toEqual(["alice", "bob", "carol"]);
  });
});
