import { describe, expect, it } from "vitest";
import { AttachmentId, Rational, Weight } from "@heddle/ledger";
import {
  DEMAND_NONE,
  HeddlePolicy,
  PolicyInputError,
  validatePolicyConfig,
} from "../src/index.ts";
import type { PolicyConfig, PolicyEdge } from "../src/index.ts";
import { weightedMean } from "../src/weighted-mean.ts";
import { edge, grantAndSpend, rat, seated, tally, withChanges } from "./edge-builder.ts";
import { SeededRandom, seedFromEnv } from "./seeded-random.ts";

const { pick, front, virtualService, effectiveVirtualService: ev, wakeOffset, settleJoiners, isDemanding } = HeddlePolicy;
const Q1: PolicyConfig = { quantum: 1n };
const AMPLE = 1_000_000_000n;
const idle = { demand: [DEMAND_NONE.targetOutstanding, DEMAND_NONE.maximumUsefulGrant] as const };

/** Saturated closed loop: each grant is spent at once. Returns the grant sequence and the final view. */
function saturated(edges: PolicyEdge[], config: PolicyConfig, picks: number): { order: string[]; view: PolicyEdge[] } {
  const order: string[] = [];
  let view = edges;
  for (let i = 0; i < picks; i++) {
    const g = pick(view, config, AMPLE);
    if (g === null) break;
    order.push(g.attachment);
    view = view.map((e) => (e.record.id === g.attachment ? grantAndSpend(e, g.amount) : e));
  }
  return { order, view };
}

function counts(order: string[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const x of order) c[x] = (c[x] ?? 0) + 1;
  return c;
}

describe("§9 required properties", () => {
  it("weight-ratio convergence: 3:1 over 4 000 picks is exactly 3 000 / 1 000", () => {
    const { order } = saturated([edge("a", { w: 3n }), edge("b", { w: 1n })], Q1, 4000);
    expect(counts(order)).toEqual({ a: 3000, b: 1000 });
  });

  it("three-way ratio 4:2:1 over 7 000 picks is exactly 4 000 / 2 000 / 1 000", () => {
    const { order } = saturated([edge("a", { w: 4n }), edge("b", { w: 2n }), edge("c", { w: 1n })], Q1, 7000);
    expect(counts(order)).toEqual({ a: 4000, b: 2000, c: 1000 });
  });

  it("hoarder throttled: all 50 picks go to the fresh child, the 51st to the hoarder", () => {
    const { order } = saturated([edge("h", { issued: 50n, spent: 50n }), edge("n")], Q1, 51);
    expect(order.slice(0, 50).every((x) => x === "n")).toBe(true);
    expect(order[50]).toBe("h");
  });

  it("returner recovers: after releasing its 50 it stands level with a fresh sibling", () => {
    const r = edge("r", { issued: 50n, spent: 50n });
    const o = edge("o");
    expect(pick([o, r], Q1, AMPLE)?.attachment).toBe("o");
    const back = withChanges(r, { returned: 50n, spent: 0n });
    expect(virtualService(back).equals(Rational.ZERO)).toBe(true);
    expect(virtualService(o).equals(Rational.ZERO)).toBe(true);
    expect(saturated([o, back], Q1, 6).order).toEqual(["o", "r", "o", "r", "o", "r"]);
  });

  it("no idle credit when clamped: 10 / 10 alternating a, s; without the clamp s takes all 20", () => {
    const ran = saturated([edge("a"), edge("s", idle)], Q1, 20);
    expect(counts(ran.order)).toEqual({ a: 20 });
    const [a, s] = ran.view as [PolicyEdge, PolicyEdge];
    const woke = withChanges(s, { demand: { targetOutstanding: 1_000_000n, maximumUsefulGrant: 1_000_000n } });
    const offset = wakeOffset(virtualService(a), virtualService(woke), Weight.ONE, 0n);
    expect(offset.toString()).toBe("20/1");
    const clamped = saturated([a, withChanges(woke, { virtualOffset: offset })], Q1, 20).order;
    expect(clamped).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? "a" : "s")));
    expect(counts(saturated([a, woke], Q1, 20).order)).toEqual({ s: 20 });
  });

  it("neutral creation: a newborn seated at v(o) = 30 splits the next 20 picks 10 / 10", () => {
    const ran = saturated([edge("o")], Q1, 30).view;
    const o = ran[0]!;
    expect(virtualService(o).toString()).toBe("30/1");
    const n = edge("n", { gauge: null });
    const plan = settleJoiners({ edges: [n, o], observed: new Map([[AttachmentId("o"), true]]), sleeperCredit: 0n });
    expect(plan.seats).toEqual([{ attachment: "n", front: rat(30n) }]);
    expect(counts(saturated([seated(n, plan.seats[0]!.front), o], Q1, 20).order)).toEqual({ n: 10, o: 10 });
  });

  it("fractional front 109/10: a newborn seated there is eligible and does not win; h does", () => {
    const l = edge("l", { issued: 11n, spent: 11n });
    const h = edge("h", { w: 9n, issued: 98n, spent: 98n });
    const f = front([l, h])!;
    expect(f.toString()).toBe("109/10");
    const n = seated(edge("n", { gauge: null }), f);
    const all = [h, l, n];
    const V = weightedMean(all.map((e) => ({ weight: e.record.weight, ev: ev(e) })));
    expect(ev(n).compare(V)).toBeLessThanOrEqual(0);
    expect(pick(all, Q1, AMPLE)).toEqual({ attachment: "h", amount: 1n });
  });

  it("lone candidate exact: Weight(3,7), seat 5, issued = spent = 11, quantum 4", () => {
    const o = edge("o", { w: [3n, 7n], gauge: [5n, 0n], issued: 11n, spent: 11n });
    expect(virtualService(o).toString()).toBe("92/3");
    expect(front([o])?.toString()).toBe("92/3");
    expect(pick([o], { quantum: 4n }, AMPLE)).toEqual({ attachment: "o", amount: 4n });
  });

  it("trims: target 30, maxGrant 20, quantum 100, holdings 15 → 15", () => {
    expect(pick([edge("t", { demand: [30n, 20n] })], { quantum: 100n }, 15n)?.amount).toBe(15n);
    expect(pick([edge("t", { demand: [30n, 20n] })], { quantum: 100n }, 25n)?.amount).toBe(20n);
    expect(pick([edge("t", { demand: [30n, 40n], issued: 12n })], { quantum: 100n }, 99n)?.amount).toBe(18n);
    expect(pick([edge("t", { demand: [30n, 40n], issued: 2n })], { quantum: 100n, perChildOutstandingCap: 7n }, 99n)?.amount).toBe(5n);
    expect(pick([edge("t", { demand: [30n, 40n], issued: 7n })], { quantum: 100n, perChildOutstandingCap: 7n }, 99n)).toBeNull();
  });

  it("null cases: no demand, holdings 0, empty edge list", () => {
    expect(pick([edge("a", idle)], Q1, 10n)).toBeNull();
    expect(pick([edge("a")], Q1, 0n)).toBeNull();
    expect(pick([], Q1, 10n)).toBeNull();
    expect(HeddlePolicy.allocate([edge("a")], Q1, 0n, 10)).toEqual([]);
  });

  it("eligibility never empty: 30 parents × 60 picks, winner always has ev ≤ V, ineligibles common", () => {
    const rng = new SeededRandom(seedFromEnv(9301));
    let rounds = 0;
    let roundsWithIneligible = 0;
    try {
      for (let p = 0; p < 30; p++) {
        const k = rng.int(2, 5);
        const config: PolicyConfig = { quantum: rng.big(1, 7) };
        let view = Array.from({ length: k }, (_, i) =>
          edge(`c${i}`, {
            w: [rng.big(1, 9), rng.big(1, 4)],
            gauge: [rng.big(0, 39), 0n],
            offset: rat(rng.big(0, 29)),
            demand: [10n ** 12n, 10n ** 12n],
          }),
        );
        for (let i = 0; i < 60; i++) {
          const g = pick(view, config, AMPLE);
          expect(g).not.toBeNull();
          const V = weightedMean(view.map((e) => ({ weight: e.record.weight, ev: ev(e) })));
          const winner = view.find((e) => e.record.id === g!.attachment)!;
          expect(ev(winner).compare(V)).toBeLessThanOrEqual(0);
          rounds++;
          if (view.some((e) => ev(e).compare(V) > 0)) roundsWithIneligible++;
          view = view.map((e) => (e === winner ? grantAndSpend(e, g!.amount) : e));
        }
      }
    } catch (err) {
      throw new Error(`eligibility sweep failed with seed ${rng.seed}: ${String(err)}`);
    }
    expect(rounds).toBe(1800);
    expect(roundsWithIneligible * 2).toBeGreaterThan(rounds);
  });

  it("front rules of §6.2", () => {
    const runner = edge("r", { issued: 20n, spent: 20n });
    const idler = edge("i", idle);
    expect(front([runner, idler])?.toString()).toBe("20/1");
    const waker = edge("w");
    expect(front([runner, waker])?.toString()).toBe("10/1");
    expect(front([runner, waker], new Set([AttachmentId("w")]))?.toString()).toBe("20/1");
    const noGrant = edge("m", { demand: [5n, 0n] });
    expect(isDemanding(noGrant)).toBe(true);
    expect(front([runner, noGrant])?.toString()).toBe("10/1");
    expect(front([edge("x", { ...idle, issued: 30n, spent: 30n }), edge("y", { ...idle, issued: 10n, spent: 10n })])?.toString()).toBe("30/1");
    expect(front([])).toBeNull();
    expect(front([runner], new Set([AttachmentId("r")]))).toBeNull();
    expect(front([edge("o", { ...idle, offset: rat(20n) })])?.toString()).toBe("20/1");
  });

  it("settleJoiners: an id absent from observed is never a waker; no front, no clamp", () => {
    const runner = edge("r", { issued: 20n, spent: 20n });
    const stranger = edge("s");
    const plan = settleJoiners({ edges: [runner, stranger], observed: new Map(), sleeperCredit: 0n });
    expect(plan.front).toBeNull();
    expect(plan.offsets.size).toBe(0);
    expect(plan.seats).toEqual([]);
    const lone = settleJoiners({ edges: [edge("z", { gauge: null }), edge("y", { gauge: null })], observed: new Map(), sleeperCredit: 0n });
    expect(lone.front).toBeNull();
    expect(lone.seats).toEqual([{ attachment: "y", front: Rational.ZERO }, { attachment: "z", front: Rational.ZERO }]);
    const clampKept = settleJoiners({
      edges: [runner, edge("k", { offset: rat(50n) })],
      observed: new Map([[AttachmentId("k"), false]]),
      sleeperCredit: 0n,
    });
    expect(clampKept.offsets.get(AttachmentId("k"))?.toString()).toBe("50/1");
  });

  it("invalid input is a PolicyInputError", () => {
    const good = edge("a");
    expect(() => validatePolicyConfig({ quantum: 0n })).toThrow(PolicyInputError);
    expect(() => validatePolicyConfig({ quantum: 1 as unknown as bigint })).toThrow(PolicyInputError);
    expect(() => validatePolicyConfig({ quantum: 1n, perChildOutstandingCap: -1n })).toThrow(PolicyInputError);
    expect(() => validatePolicyConfig({ quantum: 1n, sleeperCredit: -1n })).toThrow(PolicyInputError);
    expect(() => pick([good], Q1, -1n)).toThrow(PolicyInputError);
    expect(() => pick([{ ...good, summary: { ...good.summary, attachment: AttachmentId("b") } }], Q1, 1n)).toThrow(PolicyInputError);
    expect(() => pick([{ ...good, baseIssued: -1n }], Q1, 1n)).toThrow(PolicyInputError);
    expect(() => pick([edge("a", { issued: 3n, base: 4n })], Q1, 1n)).toThrow(PolicyInputError);
    expect(() => pick([edge("a", { demand: [-1n, 1n] })], Q1, 1n)).toThrow(PolicyInputError);
    expect(() => pick([edge("a", { demand: [1n, -1n] })], Q1, 1n)).toThrow(PolicyInputError);
    expect(() => pick([edge("a", { gauge: [0n, -1n] })], Q1, 1n)).toThrow(PolicyInputError);
    expect(() => front([edge("a", { gauge: [0n, -1n] })])).toThrow(PolicyInputError);
    expect(() => HeddlePolicy.allocate([edge("a", { gauge: [0n, -1n] })], Q1, 5n, 3)).toThrow(PolicyInputError);
    expect(() => HeddlePolicy.allocate([good], Q1, 5n, -1)).toThrow(PolicyInputError);
    expect(() => settleJoiners({ edges: [edge("a", { gauge: [0n, -1n] })], observed: new Map(), sleeperCredit: 0n })).toThrow(PolicyInputError);
    expect(pick([good], { quantum: 1n, perChildOutstandingCap: 2n ** 63n - 1n }, 1n)).toEqual({ attachment: "a", amount: 1n });
  });

  it("a weighted mean V is never below the least ev, so the eligible set cannot be empty", () => {
    const rng = new SeededRandom(seedFromEnv(77));
    for (let i = 0; i < 200; i++) {
      const es = Array.from({ length: rng.int(1, 6) }, (_, j) =>
        edge(`e${j}`, { w: [rng.big(1, 9), rng.big(1, 9)], gauge: [rat(rng.big(-50, 50), rng.big(1, 6)), 0n] }),
      );
      const evs = es.map(ev);
      const V = weightedMean(es.map((e, j) => ({ weight: e.record.weight, ev: evs[j]! })));
      const least = evs.reduce((m, x) => (x.compare(m) < 0 ? x : m));
      expect(least.compare(V), `seed ${rng.seed}`).toBeLessThanOrEqual(0);
    }
  });
});

describe("allocate and tally agree on a §9 setup", () => {
  it("allocate over saturated-like ample demand hands out the holdings in weight ratio", () => {
    const g = HeddlePolicy.allocate([edge("a", { w: 3n }), edge("b")], Q1, 400n, 1000);
    expect(tally(g)).toEqual(new Map([["a", 300n], ["b", 100n]]));
  });
});
