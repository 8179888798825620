/**
 * The worked examples of ledger.md §13, every number in them.
 */
import { describe, expect, it } from "vitest";
import { apply, E, EntitlementLedger, G, ok, R, Rational, refused, state, Weight } from "./arbitraries.ts";
import type { EdgeSummary } from "../src/index.ts";

const alice = R("alice");
const bob = R("bob");
const root = G("root");
const A = G("A");
const B = G("B");
const A1 = G("A1");
const eA = E("eA");
const eB = E("eB");
const eA1 = E("eA1");

function summary(
  id: string,
  issued: bigint,
  returned: bigint,
  spent: bigint,
  outstanding: bigint,
  committedService: bigint,
): EdgeSummary {
  return { attachment: E(id), issued, returned, spent, outstanding, committedService };
}

/** §13.1 base: bootstrap plus the three edges prepared and activated. */
function base131(): EntitlementLedger {
  let s = EntitlementLedger.bootstrap(root, new Map([[alice, 100n], [bob, 50n]]), "genesis");
  for (const [id, parent, child, w] of [
    [eA, root, A, 3n],
    [eB, root, B, 1n],
    [eA1, A, A1, 1n],
  ] as const) {
    s = apply(s, s.prepare({ id, parent, child, weight: Weight.of(w) }));
    s = apply(s, s.activate(id));
  }
  return s;
}

type Row = readonly [bigint, bigint];
type Table = readonly [Row, Row, Row, Row]; // root, A, B, A1

function holdingsTable(s: EntitlementLedger): Table {
  const at = (g: typeof root): Row => [s.holdings(g, alice), s.holdings(g, bob)];
  return [at(root), at(A), at(B), at(A1)];
}

/** §13.1 steps as closures over the previous state, with the table row expected after each. */
const steps131: readonly [string, (s: EntitlementLedger) => ReturnType<EntitlementLedger["spend"]>, Table][] = [
  ["delegate(alice, eA, 60)", (s) => s.delegate(alice, eA, 60n), [[40n, 50n], [60n, 0n], [0n, 0n], [0n, 0n]]],
  ["delegate(alice, eA1, 25)", (s) => s.delegate(alice, eA1, 25n), [[40n, 50n], [35n, 0n], [0n, 0n], [25n, 0n]]],
  ["delegate(bob, eB, 20)", (s) => s.delegate(bob, eB, 20n), [[40n, 30n], [35n, 0n], [0n, 20n], [25n, 0n]]],
  ["transfer(A1, alice, bob, 10)", (s) => s.transfer(A1, alice, bob, 10n), [[40n, 30n], [35n, 0n], [0n, 20n], [15n, 10n]]],
  ["spend(bob, A1, 4)", (s) => s.spend(bob, A1, 4n), [[40n, 30n], [35n, 0n], [0n, 20n], [15n, 6n]]],
  ["release(alice, eA, 5)", (s) => s.release(alice, eA, 5n), [[45n, 30n], [30n, 0n], [0n, 20n], [15n, 6n]]],
];

/** Runs §13.1 and returns the base, each patch, and each intermediate state. */
function run131(): { base: EntitlementLedger; patches: EntitlementLedger[]; states: EntitlementLedger[] } {
  const base = base131();
  const patches: EntitlementLedger[] = [];
  const states: EntitlementLedger[] = [];
  let s = base;
  for (const [, step] of steps131) {
    const p = ok(step(s));
    patches.push(p);
    s = s.join(p);
    states.push(s);
  }
  return { base, patches, states };
}

describe("§13.1 three-level tree, two replicas", () => {
  it("start row: root (100, 50), everything else (0, 0)", () => {
    expect(holdingsTable(base131())).toEqual([[100n, 50n], [0n, 0n], [0n, 0n], [0n, 0n]]);
  });

  it("each step yields its table row", () => {
    const { states } = run131();
    steps131.forEach(([name, , row], i) => {
      expect([name, holdingsTable(states[i]!)]).toEqual([name, row]);
    });
  });

  it("final summaries, totals, conservation and an empty report", () => {
    const s = run131().states.at(-1)!;
    expect(s.edge(eA)).toEqual(summary("eA", 60n, 5n, 4n, 51n, 55n));
    expect(s.edge(eA1)).toEqual(summary("eA1", 25n, 0n, 4n, 21n, 25n));
    expect(s.edge(eB)).toEqual(summary("eB", 20n, 0n, 0n, 20n, 20n));
    expect(s.leafSpentTotal()).toBe(4n);
    expect(s.mintedTotal()).toBe(150n);
    let sum = 0n;
    for (const g of [root, A, B, A1]) for (const r of [alice, bob]) sum += s.holdings(g, r);
    expect(sum).toBe(146n);
    expect(sum + s.leafSpentTotal()).toBe(s.mintedTotal());
    expect(s.validate()).toEqual([]);
  });

  it("positions and lineage", () => {
    const s = run131().states.at(-1)!;
    expect(s.edgePosition(eA, alice)).toBe(55n);
    expect(s.edgePosition(eA, bob)).toBe(-4n);
    expect(s.edgePosition(eA1, alice)).toBe(15n);
    expect(s.edgePosition(eA1, bob)).toBe(6n);
    expect(s.lineageOf(A1)).toEqual([eA, eA1]);
    // Bob's holdings at A: pos(eA, bob) − own(eA1, bob) = −4 − (−4) = 0.
    expect(s.holdings(A, bob)).toBe(0n);
  });

  it("the spend of step 5 wrote exactly its slots and the witness listed in §13.1", () => {
    const { patches } = run131();
    const expected = state({
      mints: {
        [JSON.stringify(["root", "genesis", "alice"])]: ["root", "alice", 100n],
        [JSON.stringify(["root", "genesis", "bob"])]: ["root", "bob", 50n],
      },
      issued: { eA: { alice: 60n }, eA1: { alice: 25n } },
      leafSpent: { eA1: { bob: 4n } },
      rollupSpent: { eA: { bob: 4n } },
      transfers: { eA1: { alice: { bob: 10n } } },
      gauges: { eA: [20n, 1n, 60n], eA1: [25n, 1n, 25n] },
    });
    expect(patches[4]!.encode()).toBe(expected.encode());
    expect(patches[4]!.equals(expected)).toBe(true);
  });

  it("checkpoints (no seats written): eA (20, 60), eA1 (25, 25), eB (20, 20); virtualService(eA) = 55/3", () => {
    const s = run131().states.at(-1)!;
    const g = (id: typeof eA): [string, bigint] | null => {
      const x = s.gauge(id);
      return x === null ? null : [x.floor.toString(), x.folded];
    };
    expect(g(eA)).toEqual(["20/1", 60n]);
    expect(g(eA1)).toEqual(["25/1", 25n]);
    expect(g(eB)).toEqual(["20/1", 20n]);
    expect(s.virtualService(eA)!.equals(Rational.of(55n, 3n))).toBe(true);
    expect(s.grossVirtualService(eA)!.equals(Rational.of(20n))).toBe(true);
    expect(s.baseIssuance(eA)).toBe(60n);
  });

  it("childrenOf lists the ACTIVE child edges in ascending id order", () => {
    const s = run131().states.at(-1)!;
    expect(s.childrenOf(root)).toEqual([s.edge(eA), s.edge(eB)]);
    expect(s.childrenOf(A)).toEqual([s.edge(eA1)]);
    expect(s.childrenOf(A1)).toEqual([]);
  });
});

describe("§13.2 partial delivery", () => {
  it("carol with base + patches 1, 3, 5 reads the §13.2 figures and a clean report", () => {
    const { base, patches, states } = run131();
    const carol = base.join(patches[0]!).join(patches[2]!).join(patches[4]!);
    expect(holdingsTable(carol)).toEqual([[40n, 30n], [35n, 0n], [0n, 20n], [15n, 6n]]);
    expect(carol.validate()).toEqual([]);
    const full = carol.join(patches[1]!).join(patches[3]!).join(patches[5]!);
    expect(full.equals(states.at(-1)!)).toBe(true);
    expect(full.encode()).toBe(states.at(-1)!.encode());
  });

  it("patch 5 alone on EMPTY: validate() = [], mintedTotal() = 150", () => {
    const { patches } = run131();
    const alone = EntitlementLedger.EMPTY.join(patches[4]!);
    expect(alone.validate()).toEqual([]);
    expect(alone.mintedTotal()).toBe(150n);
  });
});

const p3 = R("p3");
const g = G("g");
const h = G("h");
const e1 = E("e1");
const e2 = E("e2");
const e3 = E("e3");

function bootP3(): EntitlementLedger {
  let s = EntitlementLedger.bootstrap(root, new Map([[p3, 10n]]), "n");
  for (const [id, parent, child] of [
    [e1, root, g],
    [e2, g, h],
  ] as const) {
    s = apply(s, s.prepare({ id, parent, child, weight: Weight.ONE }));
    s = apply(s, s.activate(id));
  }
  return s;
}

const rgh = (s: EntitlementLedger): bigint[] => [s.holdings(root, p3), s.holdings(g, p3), s.holdings(h, p3)];

describe("§13.3 reparenting an internal group", () => {
  it("every figure of the recipe", () => {
    let s = bootP3();
    s = apply(s, s.delegate(p3, e1, 10n));
    s = apply(s, s.delegate(p3, e2, 6n));
    s = apply(s, s.spend(p3, h, 3n));
    expect(rgh(s)).toEqual([0n, 4n, 3n]);
    s = apply(s, s.prepare({ id: e3, parent: root, child: g, weight: Weight.ONE }));
    s = apply(s, s.close(e1));
    s = apply(s, s.release(p3, e2, 3n));
    s = apply(s, s.release(p3, e1, 7n));
    expect(s.edge(e1)).toEqual(summary("e1", 10n, 7n, 3n, 0n, 3n));
    expect(s.edgePosition(e1, p3)).toBe(0n);
    const beforeRetire = rgh(s);
    s = apply(s, s.retire(e1));
    expect(s.lineageOf(g)).toBeNull(); // reshape window: quarantined
    expect(s.lineageOf(h)).toBeNull();
    expect(s.validate()).toEqual([]); // silent
    s = apply(s, s.activate(e3));
    expect(rgh(s)).toEqual([7n, 0n, 0n]);
    expect(rgh(s)).toEqual(beforeRetire); // I-18 on this fixture
    expect(s.leafSpentTotal()).toBe(3n);
    expect(s.validate()).toEqual([]);
    expect(s.lineageOf(h)).toEqual([e3, e2]);
    s = apply(s, s.delegate(p3, e3, 4n));
    s = apply(s, s.delegate(p3, e2, 2n));
    s = apply(s, s.spend(p3, h, 2n));
    expect(rgh(s)).toEqual([3n, 2n, 0n]);
    expect(s.leafSpentTotal()).toBe(5n);
    expect(s.edge(e2)).toEqual(summary("e2", 8n, 3n, 5n, 0n, 5n));
    expect(s.edge(e1)).toEqual(summary("e1", 10n, 7n, 3n, 0n, 3n)); // old generation frozen
    expect(s.validate()).toEqual([]);
    expect(s.mintedTotal()).toBe(10n);
    expect(rgh(s).reduce((a, b) => a + b) + s.leafSpentTotal()).toBe(10n);
  });
});

describe("§13.4 concurrent retire race", () => {
  it("ClosureViolation, quarantine, then the new generation reads g −6, h 6 and spend surfaces three conflicts", () => {
    const base = bootP3();
    let P = base;
    P = apply(P, P.delegate(p3, e1, 10n));
    P = apply(P, P.delegate(p3, e2, 6n));
    let Q = base;
    Q = apply(Q, Q.close(e1));
    Q = apply(Q, Q.retire(e1));
    let s = P.join(Q);
    expect(s.lifecycle(e1)).toBe("RETIRED");
    expect(s.edge(e1)!.outstanding).toBe(10n);
    expect(s.validate()).toEqual([{ kind: "ClosureViolation", edge: e1 }]);
    expect(Q.join(P).validate()).toEqual(s.validate());
    expect(s.lineageOf(g)).toBeNull();
    expect(s.lineageOf(h)).toBeNull();
    expect(s.holdings(g, p3)).toBe(0n);
    expect(s.holdings(h, p3)).toBe(0n);
    s = apply(s, s.prepare({ id: e3, parent: root, child: g, weight: Weight.ONE }));
    s = apply(s, s.activate(e3));
    expect(s.holdings(g, p3)).toBe(-6n);
    expect(s.holdings(h, p3)).toBe(6n);
    s = apply(s, s.spend(p3, h, 6n));
    expect(s.validate()).toEqual([
      { kind: "PerEdgeSafety", edge: e3 },
      { kind: "PersistentNegativeHoldings", group: g, replica: p3 },
      { kind: "ClosureViolation", edge: e1 },
    ]);
    expect(s.edge(e3)).toEqual(summary("e3", 0n, 0n, 6n, -6n, 0n));
  });
});

describe("§13.5 gauge", () => {
  const E_ = G("E");
  const e = E("e");
  const [G1, G2, G3] = [R("G1"), R("G2"), R("G3")];
  function funded(): EntitlementLedger {
    let s = EntitlementLedger.bootstrap(root, new Map([[G1, 100n], [G2, 100n], [G3, 100n]]), "n");
    s = apply(s, s.prepare({ id: e, parent: root, child: E_, weight: Weight.ONE }));
    s = apply(s, s.activate(e));
    return s;
  }
  const pair = (s: EntitlementLedger): [string, bigint] => {
    const x = s.gauge(e)!;
    return [x.floor.toString(), x.folded];
  };
  function grants(s: EntitlementLedger, who: typeof G1, n: number): EntitlementLedger {
    for (let i = 0; i < n; i++) s = apply(s, s.delegate(who, e, 1n));
    return s;
  }

  it("seat, concurrent grantors, exact merged read, a third grantor", () => {
    let s = funded();
    s = apply(s, s.seat(e, Rational.of(50n)));
    expect(pair(s)).toEqual(["50/1", 0n]);
    const v1 = grants(s, G1, 10);
    expect(pair(v1)).toEqual(["60/1", 10n]);
    const v2 = grants(s, G2, 8);
    expect(pair(v2)).toEqual(["58/1", 8n]);
    const j = v1.join(v2);
    expect(pair(j)).toEqual(["60/1", 10n]);
    expect(j.baseIssuance(e)).toBe(18n);
    expect(j.grossVirtualService(e)!.equals(Rational.of(68n))).toBe(true);
    const v3 = grants(j, G3, 1);
    expect(pair(v3)).toEqual(["69/1", 19n]);
    expect(v3.grossVirtualService(e)!.equals(Rational.of(69n))).toBe(true);
  });

  it("a stale seat is absorbed: (70, 20) ⊔ (70, 0) reads 70", () => {
    const f = funded();
    let s = apply(f, f.seat(e, Rational.of(50n)));
    s = grants(s, G1, 20);
    expect(pair(s)).toEqual(["70/1", 20n]);
    const stale = ok(f.seat(e, Rational.of(70n)));
    expect(pair(f.join(stale))).toEqual(["70/1", 0n]);
    const j = s.join(stale);
    expect(pair(j)).toEqual(["70/1", 20n]);
    expect(j.grossVirtualService(e)!.equals(Rational.of(70n))).toBe(true);
    expect(stale.join(s).equals(j)).toBe(true);
  });

  it("weight 2/3, no gauge, issued 10 reads 15", () => {
    const s = state({ records: { e: [["root", "E", 2n, 3n]] }, issued: { e: { G1: 10n } } });
    expect(s.gauge(e)).toBeNull();
    expect(s.grossVirtualService(e)!.equals(Rational.of(15n))).toBe(true);
  });

  it("weight 1/2 given as 2/4: seat(7/2) then delegate 3 gives (19/2, 3)", () => {
    let s = EntitlementLedger.bootstrap(root, new Map([[G1, 100n]]), "n");
    s = apply(s, s.prepare({ id: e, parent: root, child: E_, weight: Weight.of(2n, 4n) }));
    s = apply(s, s.activate(e));
    expect(s.record(e)!.weight.equals(Weight.of(1n, 2n))).toBe(true);
    s = apply(s, s.seat(e, Rational.of(7n, 2n)));
    expect(pair(s)).toEqual(["7/2", 0n]);
    s = apply(s, s.delegate(G1, e, 3n));
    expect(pair(s)).toEqual(["19/2", 3n]);
    // the same through a decoded 2/4 record
    const d = state({ records: { e: [["root", "E", 2n, 4n]] }, gauges: { e: [7n, 2n, 0n] }, mints: { m: ["root", "G1", 9n] } });
    const p = ok(d.delegate(G1, e, 3n));
    expect(pair(d.join(p))).toEqual(["19/2", 3n]);
  });

  it("hand-built: weight 1, issued 20, returned 4, gauge (50, 5) → gross 65, virtual 61", () => {
    const s = state({
      records: { e: [["root", "E", 1n]] },
      issued: { e: { G1: 20n } },
      returned: { e: { G1: 4n } },
      gauges: { e: [50n, 1n, 5n] },
    });
    expect(s.grossVirtualService(e)!.equals(Rational.of(65n))).toBe(true);
    expect(s.virtualService(e)!.equals(Rational.of(61n))).toBe(true);
  });

  it("seat refuses once a gauge exists (from a seat or a checkpoint)", () => {
    let s = funded();
    const seated = apply(s, s.seat(e, Rational.of(5n)));
    expect(refused(seated.seat(e, Rational.of(9n))).kind).toBe("AlreadySeated");
    s = apply(s, s.delegate(G1, e, 4n)); // checkpoint seats at origin 4/1
    expect(pair(s)).toEqual(["4/1", 4n]);
    expect(refused(s.seat(e, Rational.of(50n))).kind).toBe("AlreadySeated");
  });
});
