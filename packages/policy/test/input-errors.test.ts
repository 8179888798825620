// Bad input is refused with a PolicyInputError whose message names the field, the edge and the value
// (policy.md §3.3–3.4; the project's "errors say what to do"), and every bound is exact: the last
// accepted value is accepted, the first refused one is refused. Written from Stryker's surviving mutants.
import { describe, expect, it } from "vitest";
import { AttachmentId, MAX, Rational } from "@heddle/ledger";
import { HeddlePolicy, PolicyInputError, PolicyInvariantError, validatePolicyConfig } from "../src/index.ts";
import type { PolicyConfig, PolicyEdge } from "../src/index.ts";
import { validateMaxGrants } from "../src/pick.ts";
import { edge } from "./edge-builder.ts";

const { pick, front, allocate, settleJoiners, wakeOffset } = HeddlePolicy;
const Q1: PolicyConfig = { quantum: 1n };

/** The PolicyInputError `f` throws; fails the test if it throws nothing or anything else. */
function refusal(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyInputError);
    expect((err as Error).name).toBe("PolicyInputError");
    return (err as Error).message;
  }
  throw new Error("expected a PolicyInputError, nothing was thrown");
}

const bad = (e: PolicyEdge, patch: Record<string, unknown>): PolicyEdge => ({ ...e, ...patch }) as PolicyEdge;

describe("policy config: messages and exact bounds", () => {
  it("names the field, the range and the value", () => {
    expect(refusal(() => validatePolicyConfig({ quantum: 0n }))).toBe("quantum must lie in 1 … 2^63 − 1, got 0");
    expect(refusal(() => validatePolicyConfig({ quantum: MAX + 1n }))).toBe(`quantum must lie in 1 … 2^63 − 1, got ${MAX + 1n}`);
    expect(refusal(() => validatePolicyConfig({ quantum: 1 as unknown as bigint }))).toBe("quantum must be a bigint, got number");
    expect(refusal(() => validatePolicyConfig({ quantum: 1n, perChildOutstandingCap: -1n }))).toBe(
      "perChildOutstandingCap must lie in 0 … 2^63 − 1, got -1",
    );
    expect(refusal(() => validatePolicyConfig({ quantum: 1n, sleeperCredit: -1n }))).toBe("sleeperCredit must lie in 0 … 2^63 − 1, got -1");
    expect(refusal(() => validatePolicyConfig(null as unknown as PolicyConfig))).toBe("policy config must be an object");
    expect(refusal(() => validatePolicyConfig("q" as unknown as PolicyConfig))).toBe("policy config must be an object");
    expect(refusal(() => pick([edge("a")], { quantum: 0n }, 1n))).toBe("quantum must lie in 1 … 2^63 − 1, got 0");
    expect(refusal(() => pick([edge("a")], { quantum: 1n, sleeperCredit: -2n }, 1n))).toBe(
      "sleeperCredit must lie in 0 … 2^63 − 1, got -2",
    );
    expect(refusal(() => pick([edge("a")], Q1, -1n))).toBe("localHoldings must lie in 0 … 2^63 − 1, got -1");
    expect(refusal(() => pick([edge("a")], Q1, MAX + 1n))).toBe(`localHoldings must lie in 0 … 2^63 − 1, got ${MAX + 1n}`);
  });

  it("accepts the ends of every range", () => {
    for (const c of [{ quantum: 1n }, { quantum: MAX }, { quantum: 1n, perChildOutstandingCap: 0n }, { quantum: 1n, sleeperCredit: 0n }])
      expect(() => validatePolicyConfig(c)).not.toThrow();
    expect(pick([edge("a")], { quantum: MAX }, MAX)).toEqual({ attachment: "a", amount: 1_000_000n });
    expect(pick([edge("a")], Q1, 0n)).toBeNull();
    // §5 step 0: zero holdings answer null before any need is computed — here the need (2^63 − 1 over an
    // outstanding of −5) would leave int64 and throw
    expect(pick([edge("a", { spent: 5n, demand: [MAX, 10n] })], Q1, 0n)).toBeNull();
    expect(() => pick([edge("a", { spent: 5n, demand: [MAX, 10n] })], Q1, 1n)).toThrow();
    // a cap of 0 is a real cap (nothing may be outstanding), not "unbounded"
    expect(pick([edge("a")], { quantum: 5n, perChildOutstandingCap: 0n }, 10n)).toBeNull();
    expect(pick([edge("a")], { quantum: 5n, perChildOutstandingCap: 2n }, 10n)).toEqual({ attachment: "a", amount: 2n });
  });
});

describe("policy edges: messages and exact bounds", () => {
  const a = edge("a", { issued: 4n });

  it("names the edge, the field and the value", () => {
    expect(refusal(() => pick([bad(a, { summary: { ...a.summary, attachment: AttachmentId("b") } })], Q1, 1n))).toBe(
      "edge a: record id differs from summary attachment b",
    );
    expect(refusal(() => pick([bad(a, { summary: { ...a.summary, issued: 4 } })], Q1, 1n))).toBe("edge a: issued must be a bigint, got number");
    expect(refusal(() => pick([bad(a, { summary: { ...a.summary, returned: 0 } })], Q1, 1n))).toBe("edge a: returned must be a bigint, got number");
    expect(refusal(() => pick([bad(a, { summary: { ...a.summary, spent: "0" } })], Q1, 1n))).toBe("edge a: spent must be a bigint, got string");
    expect(refusal(() => pick([bad(a, { baseIssued: 4 })], Q1, 1n))).toBe("edge a: baseIssued must be a bigint, got number");
    expect(refusal(() => pick([bad(a, { demand: { targetOutstanding: 1, maximumUsefulGrant: 1n } })], Q1, 1n))).toBe(
      "edge a: targetOutstanding must be a bigint, got number",
    );
    expect(refusal(() => pick([bad(a, { demand: { targetOutstanding: 1n, maximumUsefulGrant: undefined } })], Q1, 1n))).toBe(
      "edge a: maximumUsefulGrant must be a bigint, got undefined",
    );
    expect(refusal(() => pick([bad(a, { baseIssued: -1n })], Q1, 1n))).toBe("edge a: baseIssued -1 < 0");
    expect(refusal(() => pick([bad(a, { baseIssued: 5n })], Q1, 1n))).toBe("edge a: baseIssued 5 exceeds issued 4");
    expect(refusal(() => pick([edge("a", { demand: [-1n, 1n] })], Q1, 1n))).toBe("edge a: targetOutstanding < 0");
    expect(refusal(() => pick([edge("a", { demand: [1n, -1n] })], Q1, 1n))).toBe("edge a: maximumUsefulGrant < 0");
    expect(refusal(() => pick([bad(a, { virtualOffset: 0n })], Q1, 1n))).toBe("edge a: virtualOffset must be a Rational");
    // a JavaScript caller's look-alike weight is refused here, by name, not deep inside the pick (policy.md §3.3)
    const lookAlike = { num: 1n, den: 1n };
    for (const [weight, got] of [[lookAlike, "object"], [null, "null"], [1n, "bigint"], [undefined, "undefined"]] as const) {
      expect(refusal(() => pick([bad(a, { record: { ...a.record, weight } })], Q1, 1n))).toBe(
        `edge a: weight must be a Weight (build it with Weight.of(num, den)), got ${got}`,
      );
    }
    expect(refusal(() => front([bad(a, { record: { ...a.record, weight: { num: -1n, den: 1n } } })]))).toBe(
      "edge a: weight must be a Weight (build it with Weight.of(num, den)), got object",
    );
    expect(refusal(() => pick([edge("a", { gauge: [0n, -1n] })], Q1, 1n))).toBe("edge a: gauge.folded < 0");
    expect(refusal(() => pick([bad(a, { gauge: { floor: Rational.ZERO, folded: 0 } })], Q1, 1n))).toBe(
      "edge a: gauge.folded must be a bigint, got number",
    );
    expect(refusal(() => pick([bad(a, { gauge: { floor: 0n, folded: 0n } })], Q1, 1n))).toBe("edge a: gauge.floor must be a Rational");
    expect(refusal(() => pick([null as unknown as PolicyEdge], Q1, 1n))).toBe("policy edge must be an object");
    expect(refusal(() => pick("ab" as unknown as PolicyEdge[], Q1, 1n))).toBe("edges must be an array");
    expect(refusal(() => front("ab" as unknown as PolicyEdge[]))).toBe("edges must be an array");
  });

  it("refuses an edge listed twice, in every entry point, even when the two copies are identical", () => {
    const twice = [edge("a"), edge("b"), edge("a")];
    const msg = "edge a: listed twice (each child edge may appear once)";
    expect(refusal(() => pick(twice, Q1, 1n))).toBe(msg);
    expect(refusal(() => front(twice))).toBe(msg);
    expect(refusal(() => allocate(twice, Q1, 5n, 3))).toBe(msg);
    expect(refusal(() => settleJoiners({ edges: twice, observed: new Map<AttachmentId, boolean>(), sleeperCredit: 0n }))).toBe(msg);
    // distinct ids that differ only in case or by a prefix are distinct children
    expect(pick([edge("a"), edge("A"), edge("ab")], Q1, 1n)).not.toBeNull();
  });

  it("checks every edge, not only the first", () => {
    expect(refusal(() => pick([edge("a"), edge("b", { demand: [-1n, 1n] })], Q1, 1n))).toBe("edge b: targetOutstanding < 0");
  });

  it("accepts the ends of every range", () => {
    const ok = [
      edge("a", { issued: 4n, base: 0n }),
      edge("b", { issued: 4n, base: 4n }),
      edge("c", { demand: [0n, 0n] }),
      edge("d", { gauge: [0n, 0n] }),
      edge("e", { gauge: null }),
    ];
    for (const e of ok) expect(() => pick([e], Q1, 1n)).not.toThrow();
  });
});

describe("allocate checks its own inputs (its fast engine never calls pick)", () => {
  it("refuses a bad config, holdings or count with pick's messages", () => {
    const es = [edge("a"), edge("b")];
    expect(refusal(() => allocate(es, { quantum: 0n }, 5n, 3))).toBe("quantum must lie in 1 … 2^63 − 1, got 0");
    expect(refusal(() => allocate(es, { quantum: 1n, perChildOutstandingCap: -1n }, 5n, 3))).toBe(
      "perChildOutstandingCap must lie in 0 … 2^63 − 1, got -1",
    );
    expect(refusal(() => allocate(es, Q1, -1n, 3))).toBe("localHoldings must lie in 0 … 2^63 − 1, got -1");
    expect(refusal(() => allocate(es, Q1, 5n, -1))).toBe("maxGrants must be a non-negative safe integer, got -1");
    expect(refusal(() => allocate([edge("a"), edge("b", { issued: 1n, base: 2n })], Q1, 5n, 3))).toBe("edge b: baseIssued 2 exceeds issued 1");
    expect(allocate(es, Q1, 2n, 3)).toEqual([
      { attachment: "a", amount: 1n },
      { attachment: "b", amount: 1n },
    ]);
  });
});

describe("counts and sleeper credit", () => {
  it("maxGrants must be a non-negative safe integer", () => {
    expect(refusal(() => validateMaxGrants(-1))).toBe("maxGrants must be a non-negative safe integer, got -1");
    expect(refusal(() => validateMaxGrants(1.5))).toBe("maxGrants must be a non-negative safe integer, got 1.5");
    expect(refusal(() => validateMaxGrants(2 ** 53))).toBe(`maxGrants must be a non-negative safe integer, got ${2 ** 53}`);
    expect(() => validateMaxGrants(0)).not.toThrow();
    expect(allocate([edge("a")], Q1, 5n, 0)).toEqual([]);
  });

  it("sleeperCredit must be a bigint ≥ 0 for settleJoiners and wakeOffset, and 0 is accepted", () => {
    const input = { edges: [edge("a")], observed: new Map<AttachmentId, boolean>() };
    expect(refusal(() => settleJoiners({ ...input, sleeperCredit: -1n }))).toBe("sleeperCredit must be a bigint ≥ 0, got -1");
    expect(refusal(() => settleJoiners({ ...input, sleeperCredit: 1 as unknown as bigint }))).toBe("sleeperCredit must be a bigint ≥ 0, got 1");
    expect(() => settleJoiners({ ...input, sleeperCredit: 0n })).not.toThrow();
    expect(refusal(() => wakeOffset(Rational.ZERO, Rational.ZERO, edge("a").record.weight, -1n))).toBe("sleeperCredit must be a bigint ≥ 0, got -1");
    expect(refusal(() => wakeOffset(Rational.ZERO, Rational.ZERO, edge("a").record.weight, 2 as unknown as bigint))).toBe(
      "sleeperCredit must be a bigint ≥ 0, got 2",
    );
  });
});

describe("the error classes of the public surface (policy.md §1)", () => {
  it("PolicyInputError is a TypeError, PolicyInvariantError an Error, each named for itself", () => {
    const input = new PolicyInputError("bad");
    expect(input).toBeInstanceOf(TypeError);
    expect(input.name).toBe("PolicyInputError");
    expect(String(input)).toBe("PolicyInputError: bad");
    const invariant = new PolicyInvariantError("broken");
    expect(invariant).toBeInstanceOf(Error);
    expect(invariant).not.toBeInstanceOf(TypeError);
    expect(invariant.name).toBe("PolicyInvariantError");
    expect(String(invariant)).toBe("PolicyInvariantError: broken");
  });
});

describe("edge shape and the unbounded cap", () => {
  it("a non-object edge is refused as bad input, not a crash", () => {
    for (const v of [42, "a", true]) expect(refusal(() => pick([v as unknown as PolicyEdge], Q1, 1n))).toBe("policy edge must be an object");
  });

  it("an edge missing its record, summary, demand or gauge is refused as bad input naming the part, not a TypeError", () => {
    const good = edge("a", { demand: [10n, 10n] });
    for (const part of ["record", "summary", "demand"] as const) {
      for (const v of [undefined, null, 7]) {
        const bad = { ...good, [part]: v } as unknown as PolicyEdge;
        expect(refusal(() => pick([bad], Q1, 1n)), `${part}: ${String(v)}`).toBe(`policy edge ${part} must be an object (got ${v === null ? "null" : typeof v})`);
      }
    }
    for (const v of [undefined, 7]) {
      const bad = { ...good, gauge: v } as unknown as PolicyEdge;
      expect(refusal(() => pick([bad], Q1, 1n))).toBe(`edge a: gauge must be an object or null (got ${typeof v})`);
    }
  });

  it("perChildOutstandingCap = I64_MAX means unbounded (§3.4), even while outstanding is transiently negative (§3.3)", () => {
    // issued 0, spent 5: outstanding −5; a bounded cap of 2^63 − 1 would need MAX − (−5), which leaves int64
    const e = edge("a", { spent: 5n, demand: [10n, 10n] });
    expect(pick([e], { quantum: 4n, perChildOutstandingCap: MAX }, 100n)).toEqual({ attachment: "a", amount: 4n });
    expect(allocate([e], { quantum: 4n, perChildOutstandingCap: MAX }, 100n, 10).reduce((s, g) => s + g.amount, 0n)).toBe(15n);
  });
});
