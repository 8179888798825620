/**
 * Rounds whose literal loop (repeated `pick`, policy.md §7) leaves the signed 64-bit range: `allocate` must
 * throw `LedgerOverflowError` there too (§2.2: throw in the same cases; §3.3: a derived value outside int64
 * throws), never answer from its exact unbounded engine. Each case is one the engine's overflow bound must
 * decline; they were found by planting Stryker's surviving mutants of that bound (issue 19) and searching
 * for an input on which `allocate` and the loop disagree (seeded search, /work/runs/mutate2-policy-hunt-*.log).
 */
import { describe, expect, it } from "vitest";
import { LedgerOverflowError, MAX, Rational } from "@heddle/ledger";
import { HeddlePolicy } from "../src/index.ts";
import type { Grant, PolicyConfig, PolicyEdge } from "../src/index.ts";
import { allocateByRepeatedPick } from "../src/reference-allocation.ts";
import { edge } from "./edge-builder.ts";

const outcome = (f: () => readonly Grant[]): string => {
  try {
    return f().map((g) => `${g.attachment}:${g.amount}`).join(" ");
  } catch (err) {
    if (err instanceof LedgerOverflowError) return "LedgerOverflowError";
    throw err;
  }
};

/** `allocate` and the literal loop both throw LedgerOverflowError on this round. */
function bothOverflow(edges: readonly PolicyEdge[], config: PolicyConfig, h: bigint): void {
  expect(outcome(() => allocateByRepeatedPick(edges, config, h, 30))).toBe("LedgerOverflowError");
  expect(outcome(() => HeddlePolicy.allocate(edges, config, h, 30))).toBe("LedgerOverflowError");
}

describe("allocate throws LedgerOverflowError wherever repeated pick does", () => {
  it("a demand target above 2^63 − 1: need = target − outstanding leaves int64 (§3.3)", () => {
    for (const target of [MAX + 1n, MAX + 50n, 1n << 64n]) {
      const e = edge("a", { demand: [target, 5n] });
      expect(() => HeddlePolicy.pick([e], { quantum: 3n }, 10n)).toThrow(LedgerOverflowError);
      bothOverflow([e, edge("b")], { quantum: 3n }, 10n);
    }
    // at exactly 2^63 − 1 the need is still in range: the round runs, on either path
    const ok = HeddlePolicy.allocate([edge("a", { demand: [MAX, 5n] })], { quantum: 3n }, 10n, 30);
    expect(ok.reduce((s, g) => s + g.amount, 0n)).toBe(10n);
  });

  it("outstanding above 2^63 − 1 through a negative spend (transiently negative counters are allowed)", () => {
    bothOverflow(
      [edge("a", { w: [4n, 7n], gauge: null, issued: MAX, returned: 6n, spent: -4398046511104n, demand: [2787666732740942530n, 12n], offset: Rational.of(1n, 228n) })],
      { quantum: 18014398509481984n, perChildOutstandingCap: 997n },
      536870914n,
    );
  });

  it("committed above 2^63 − 1 through a large negative return", () => {
    bothOverflow(
      [
        edge("a", { w: [4n, 9n], gauge: [Rational.of(13n, 6n), 4n], issued: 7n, returned: -1000033149928484490n, spent: -862n, demand: [67108866n, 10n] }),
        edge("b", { w: [2n, 7n], gauge: null, issued: 461n, demand: [204n, 8589934594n], offset: Rational.of(667n, 144115188075855871n) }),
        edge("c", { w: [2n, 3n], gauge: [Rational.of(-3n, 2n), 3n], issued: MAX - 1n, returned: -17n, spent: -442523268190629020n, demand: [162n, 18n], offset: Rational.of(8n) }),
      ],
      { quantum: 8n },
      35n,
    );
  });

  it("a weight of 2^29 against a floor in sevenths: the virtual-time products overflow", () => {
    bothOverflow([edge("a", { w: [536870912n, 1n], gauge: [Rational.of(27n, 7n), 703n], issued: 5n, base: 2n, demand: [178n, 11n] })], { quantum: 4n }, 14n);
  });

  it("a weight of 4/773 beside an offset near 2^56", () => {
    bothOverflow(
      [
        edge("a", { w: [4n, 773n], gauge: [8n, 0n], issued: 5n, spent: 1n, demand: [536870913n, 1n] }),
        edge("b", { w: [1n, 3n], gauge: null, issued: 7n, returned: 3n, spent: 17n, demand: [426n, 14n], offset: Rational.of(74209320608496010n) }),
      ],
      { quantum: 7n },
      19n,
    );
  });

  it("three edges whose folds and weights reach 2^48 and 2^57 together", () => {
    bothOverflow(
      [
        edge("a", { gauge: [Rational.of(3n, 2n), 281474976710654n], issued: 20n, returned: 5n, spent: 2050n, demand: [98898580664980180n, 17n] }),
        edge("b", { w: [11n, 355n], gauge: [6n, 75n], issued: 30n, base: 15n, spent: 187546216510637264n, demand: [8192n, 2n] }),
        edge("c", { w: [171n, 5n], gauge: [24n, 10n], issued: 17179869185n, base: 8589934592n, demand: [17n, 17n] }),
      ],
      { quantum: 1096069215967444280n },
      8n,
    );
  });

  it("cap room above 2^63 − 1: a cap of 10 over an outstanding near −2^63 (§3.4's capRoom = cap − outstanding)", () => {
    // spent 2^63 − 3 leaves outstanding −2^63 + 3, need 2^63 − 1 (in range), but capRoom 2^63 + 7 is not:
    // the first pick throws. The holdings (20) are large enough that room − holdings is back in range.
    bothOverflow(
      [edge("a", { gauge: null, spent: MAX - 2n, demand: [2n, 5n] }), edge("b", { demand: [30n, 3n] })],
      { quantum: 3n, perChildOutstandingCap: 10n },
      20n,
    );
  });

  it("committed service leaves int64 during the round: issued above the base issuance, a negative return", () => {
    // committed = (2^63 − 21) − (−15) = 2^63 − 6; the second grant of 3 makes it 2^63 and the literal loop
    // throws as it applies that grant. The base issuance (0: the rest is relocation credit, §3.3 allows
    // baseIssued ≤ issued) and every other value are small, so only the committed counter can overflow.
    bothOverflow(
      [edge("a", { gauge: null, issued: MAX - 20n, base: 0n, returned: -15n, spent: MAX - 5n, demand: [100n, 100n] })],
      { quantum: 3n },
      10n,
    );
  });

  it("outstanding leaves int64 during the round: a negative spend and a target above 2^63 − 1", () => {
    // outstanding = 10 − (−(2^63 − 16)) = 2^63 − 6, need = (2^63 + 49) − outstanding = 55 (in range); the
    // second grant of 3 takes outstanding to 2^63 and the loop throws there.
    bothOverflow([edge("a", { gauge: null, issued: 10n, spent: -(MAX - 15n), demand: [MAX + 50n, 100n] })], { quantum: 3n }, 10n);
  });

  it("the first eligibility test overflows: a floor in 65536ths beside a weight of 65536/3", () => {
    // pick's first `ev ≤ V` comparison multiplies ev(a)'s numerator by V's denominator, about 2^74.4. Only the
    // bound's last conjunct (the ev-against-V products) declines this round; the other five hold.
    bothOverflow(
      [
        edge("a", { gauge: [Rational.of(-10413645n, 65536n), 0n], issued: 94080578n, returned: 2539422n, spent: 91541156n, demand: [60n, 7n] }),
        edge("b", { w: [65536n, 3n], gauge: [-9n, 0n], issued: 10251708n, spent: 10251708n, demand: [189n, 1n] }),
      ],
      { quantum: 5n },
      5n,
    );
  });

  it("the first eligibility test overflows just past 2^63: a floor in 64ths and an offset in fifths on one edge", () => {
    // ev(a) = 4740381313/64 − 3·101856984 + 46715235467264/5 (denominator 320) against V: the product is
    // 12 437 969 666 786 980 160 ≈ 2^63.43. The largest per-edge denominator is a's (320; b's is 4): a bound
    // that took the last edge's instead of the largest would let the round through.
    bothOverflow(
      [
        edge("a", { w: [1n, 3n], gauge: [Rational.of(4740381313n, 64n), 0n], issued: 101856984n, spent: 101856984n, demand: [27n, 7n], offset: Rational.of(46715235467264n, 5n) }),
        edge("b", { w: 4n, gauge: [-5656427n, 0n], demand: [189n, 1n] }),
      ],
      { quantum: 6n },
      31n,
    );
  });
});
