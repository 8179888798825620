import { describe, expect, it } from "vitest";
import { AttachmentId, Rational, Weight } from "@heddle/ledger";
import { DEMAND_NONE, HeddlePolicy, grossVirtualService, joinGauge } from "../src/index.ts";
import type { PolicyEdge } from "../src/index.ts";
import { applyGrant } from "../src/grant-application.ts";
import { allocateByRepeatedPick } from "../src/reference-allocation.ts";
import { edge, rat, seated, tally } from "./edge-builder.ts";

const { pick, allocate, front, effectiveVirtualService: ev, wakeOffset, settleJoiners, virtualService } = HeddlePolicy;
const ids = (gs: readonly { attachment: string; amount: bigint }[]): string[] => gs.map((g) => `${g.attachment}:${g.amount}`);
const none = new Map<AttachmentId, boolean>();

describe("§8.1 one parent, one round, every step", () => {
  const edges = [
    edge("a", { w: 2n, gauge: [1n, 0n], issued: 6n, returned: 2n, spent: 1n, demand: [8n, 5n] }),
    edge("b", { w: 1n, gauge: null, issued: 2n, spent: 2n, demand: [3n, 1n] }),
    edge("c", { w: [1n, 2n], gauge: [0n, 0n], issued: 1n, demand: [1n, 9n] }),
    edge("d", { w: 1n, gauge: [5n, 0n], demand: [10n, 10n] }),
  ];
  const config = { quantum: 4n, perChildOutstandingCap: 10n };

  it("ev of each edge and the first pick", () => {
    expect(edges.map((e) => ev(e).toString())).toEqual(["3/1", "2/1", "2/1", "5/1"]);
    expect(pick(edges, config, 9n)).toEqual({ attachment: "b", amount: 1n });
  });

  it("allocate continues b:1 b:1 a:4 b:1 a:1 d:1 with the tabled ev after each grant", () => {
    const grants = allocate(edges, config, 9n, 100);
    expect(ids(grants)).toEqual(["b:1", "b:1", "a:4", "b:1", "a:1", "d:1"]);
    expect(ids(allocateByRepeatedPick(edges, config, 9n, 100))).toEqual(ids(grants));
    const expectedEv = [
      ["3/1", "3/1", "2/1", "5/1"],
      ["3/1", "4/1", "2/1", "5/1"],
      ["5/1", "4/1", "2/1", "5/1"],
      ["5/1", "5/1", "2/1", "5/1"],
      ["11/2", "5/1", "2/1", "5/1"],
      ["11/2", "5/1", "2/1", "6/1"],
    ];
    const holdingsAfter = [8n, 7n, 3n, 2n, 1n, 0n];
    let view: PolicyEdge[] = edges;
    let h = 9n;
    grants.forEach((g, i) => {
      view = applyGrant(view, g);
      h -= g.amount;
      expect(view.map((e) => ev(e).toString())).toEqual(expectedEv[i]);
      expect(h).toBe(holdingsAfter[i]);
    });
    expect(pick(view, config, h)).toBeNull();
  });

  it("front over the demanding set, with and without d", () => {
    expect(front(edges)?.toString()).toBe("13/4");
    expect(front(edges, new Set([AttachmentId("d")]))?.toString()).toBe("8/3");
  });
});

describe("§8.2 tie-break by id in UTF-16 order", () => {
  const mk = (x: string, y: string) => [
    edge(x, { gauge: [0n, 0n] }),
    edge(y, { gauge: [0n, 0n] }),
  ];
  it("alternates a, b, a, b … starting with a", () => {
    const g = allocate(mk("a", "b"), { quantum: 1n }, 1_000_000n, 10);
    expect(g.map((x) => x.attachment)).toEqual(["a", "b", "a", "b", "a", "b", "a", "b", "a", "b"]);
    expect(pick(mk("b", "a"), { quantum: 1n }, 10n)?.attachment).toBe("a");
  });
  it('"B" < "b": renaming a to B makes B win the first pick', () => {
    expect(pick(mk("b", "B"), { quantum: 1n }, 10n)?.attachment).toBe("B");
    expect(pick([edge("a10"), edge("a9")], { quantum: 1n }, 10n)?.attachment).toBe("a10");
  });
});

describe("§8.3 front over the demanding set, not all children", () => {
  it("runner at 20 with an idle sibling at 0: front 20; newborn at 20 splits 10/10, at 10 takes 15", () => {
    const r = edge("r", { issued: 20n, spent: 20n });
    const i = edge("i", { demand: [DEMAND_NONE.targetOutstanding, DEMAND_NONE.maximumUsefulGrant] });
    expect(front([i, r])?.toString()).toBe("20/1");
    const n = edge("n", { gauge: null });
    const at = (seat: bigint) => tally(allocate([i, seated(n, rat(seat)), r], { quantum: 1n }, 1_000_000n, 20));
    expect(at(20n)).toEqual(new Map([["n", 10n], ["r", 10n]]));
    expect(at(10n)).toEqual(new Map([["n", 15n], ["r", 5n]]));
  });
  it("mirror: runner at 10, satisfied sibling at 40: front 10; newborn takes 15 of 30 there, 8 of 30 at 25", () => {
    const r = edge("r", { issued: 10n, spent: 10n });
    const s = edge("s", { issued: 40n, spent: 40n, demand: [0n, 0n] });
    expect(front([r, s])?.toString()).toBe("10/1");
    const n = edge("n", { gauge: null });
    const share = (seat: bigint) => tally(allocate([seated(n, rat(seat)), r, s], { quantum: 1n }, 1_000_000n, 30)).get("n");
    expect(share(10n)).toBe(15n);
    expect(share(25n)).toBe(8n);
  });
});

describe("§8.4 a newborn and a waker in one round", () => {
  const e1 = edge("e1", { gauge: [200n, 200n], issued: 200n, spent: 200n, demand: [10_000n, 0n] });
  const e2 = edge("e2", { gauge: [0n, 0n], demand: [10_000n, 0n] });
  const e3 = edge("e3", { gauge: null, demand: [10_000n, 0n] });
  it("one front for both joiners; the next round splits 100/100/100", () => {
    const plan = settleJoiners({ edges: [e1, e2, e3], observed: new Map([[AttachmentId("e2"), false]]), sleeperCredit: 0n });
    expect(plan.front?.toString()).toBe("200/1");
    expect(plan.seats.map((s) => [s.attachment, s.front.toString()])).toEqual([["e3", "200/1"]]);
    expect([...plan.offsets].map(([k, v]) => [k, v.toString()])).toEqual([["e2", "200/1"]]);
    expect([...plan.observed]).toEqual([["e1", true], ["e2", true], ["e3", true]]);
    const e3s = seated(e3, plan.seats[0]!.front);
    expect(e3s.gauge?.floor.toString()).toBe("200/1");
    expect(e3s.gauge?.folded).toBe(0n);

    const d = { demand: { targetOutstanding: 10_000n, maximumUsefulGrant: 10n } };
    const next = [
      { ...e1, ...d },
      { ...e2, ...d, virtualOffset: plan.offsets.get(AttachmentId("e2"))! },
      { ...e3s, ...d },
    ];
    const grants = allocate(next, { quantum: 10n }, 300n, 100_000);
    expect(tally(grants)).toEqual(new Map([["e1", 100n], ["e2", 100n], ["e3", 100n]]));
    expect(grants.reduce((s, g) => s + g.amount, 0n)).toBe(300n);
  });
  it("two separately computed fronts would seat e3 at 100 and clamp e2 to 150", () => {
    const seatFront = front([e1, e2]);
    expect(seatFront?.toString()).toBe("100/1");
    const clampFront = front([e1, seated(e3, seatFront!)]);
    expect(clampFront?.toString()).toBe("150/1");
  });
});

describe("§8.5 wake clamp", () => {
  it("lands on the front, keeps sleeper credit, never pulls a child back", () => {
    expect(wakeOffset(rat(20n), rat(0n), Weight.ONE, 0n).toString()).toBe("20/1");
    expect(wakeOffset(rat(20n), rat(0n), Weight.of(3n, 2n), 6n).toString()).toBe("16/1");
    expect(wakeOffset(rat(5n), rat(9n), Weight.ONE, 0n).toString()).toBe("0/1");
  });
});

describe("§8.6 gauge joins", () => {
  const g = (f: Rational | bigint, folded: bigint) => ({ floor: rat(f), folded });
  it("componentwise join pairs the stale floor with the better fold", () => {
    const j = joinGauge(g(Rational.of(281n, 4n), 0n), g(70n, 20n));
    expect(j.floor.toString()).toBe("281/4");
    expect(j.folded).toBe(20n);
    expect(grossVirtualService(j, 20n, Weight.ONE).toString()).toBe("281/4");
  });
  it("two blind grantors merge to exactly seat + total issuance; a further grant checkpoints {69, 19}", () => {
    const seat = edge("e", { gauge: [50n, 0n] });
    let g1 = seat;
    for (let i = 0; i < 10; i++) g1 = applyGrant([g1], { attachment: AttachmentId("e"), amount: 1n })[0]!;
    let g2 = seat;
    for (let i = 0; i < 8; i++) g2 = applyGrant([g2], { attachment: AttachmentId("e"), amount: 1n })[0]!;
    expect([g1.gauge?.floor.toString(), g1.gauge?.folded]).toEqual(["60/1", 10n]);
    expect([g2.gauge?.floor.toString(), g2.gauge?.folded]).toEqual(["58/1", 8n]);
    const joined = joinGauge(g1.gauge!, g2.gauge!);
    expect([joined.floor.toString(), joined.folded]).toEqual(["60/1", 10n]);
    const merged = edge("e", { gauge: [joined.floor, joined.folded], issued: 18n });
    expect(virtualService(merged).toString()).toBe("68/1");
    const after = applyGrant([merged], { attachment: AttachmentId("e"), amount: 1n })[0]!;
    expect([after.gauge?.floor.toString(), after.gauge?.folded]).toEqual(["69/1", 19n]);
  });
  it("a stale seat {70, 0} joined with the honest {70, 20} reads 70, zero overshoot", () => {
    const j = joinGauge(g(70n, 0n), g(70n, 20n));
    expect(grossVirtualService(j, 20n, Weight.ONE).toString()).toBe("70/1");
  });
  it("ledger.md §13.5 reads: weight 2/3 no gauge issued 10 → 15; hand-built gross 65, virtual 61", () => {
    expect(grossVirtualService(null, 10n, Weight.of(2n, 3n)).toString()).toBe("15/1");
    const e = edge("e", { gauge: [50n, 5n], issued: 20n, returned: 4n });
    expect(grossVirtualService(e.gauge, 20n, Weight.ONE).toString()).toBe("65/1");
    expect(virtualService(e).toString()).toBe("61/1");
  });
});
