import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { LedgerOverflowError, Rational } from "@heddle/ledger";
import { HeddlePolicy } from "../src/index.ts";
import type { Grant, PolicyConfig, PolicyEdge } from "../src/index.ts";
import { AllocationEngine, allocateWithEngine } from "../src/allocation-engine.ts";
import { applyGrant } from "../src/grant-application.ts";
import { allocateByRepeatedPick } from "../src/reference-allocation.ts";
import { DeadlineTree } from "../src/deadline-tree.ts";
import type { DeadlineNode } from "../src/deadline-tree.ts";
import { edge, withChanges } from "./edge-builder.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 300);
const show = (gs: readonly Grant[]): string[] => gs.map((g) => `${g.attachment}:${g.amount}`);

/** One generated edge, small enough for the engine to engage. */
const edgeArb = (id: string) =>
  fc
    .record({
      wn: fc.bigInt({ min: 1n, max: 12n }),
      wd: fc.bigInt({ min: 1n, max: 6n }),
      hasGauge: fc.boolean(),
      floorN: fc.bigInt({ min: -150n, max: 80n }),
      floorD: fc.bigInt({ min: 1n, max: 7n }),
      issued: fc.bigInt({ min: 0n, max: 60n }),
      returnedPart: fc.nat(100),
      spentPart: fc.nat(100),
      foldedPart: fc.nat(120),
      target: fc.bigInt({ min: 0n, max: 90n }),
      maxGrant: fc.bigInt({ min: 0n, max: 25n }),
      offN: fc.bigInt({ min: 0n, max: 30n }),
      offD: fc.bigInt({ min: 1n, max: 4n }),
      useOffset: fc.boolean(),
    })
    .map((r) => {
      const returned = (r.issued * BigInt(r.returnedPart)) / 100n;
      const spent = ((r.issued - returned) * BigInt(r.spentPart)) / 100n;
      // folded may exceed base issuance: a view holding a better-informed gauge than counters
      const folded = (r.issued * BigInt(r.foldedPart)) / 100n;
      return edge(id, {
        w: [r.wn, r.wd],
        gauge: r.hasGauge ? [Rational.of(r.floorN, r.floorD), folded] : null,
        issued: r.issued,
        returned,
        spent,
        demand: [r.target, r.maxGrant],
        offset: r.useOffset ? Rational.of(r.offN, r.offD) : Rational.ZERO,
      });
    });

const edgesArb = fc
  .uniqueArray(fc.stringMatching(/^[a-zA-Z0-9]{1,3}$/), { minLength: 0, maxLength: 9 })
  .chain((ids) => fc.tuple(...ids.sort().map((id) => edgeArb(id))));

const configArb: fc.Arbitrary<PolicyConfig> = fc.record({
  quantum: fc.bigInt({ min: 1n, max: 20n }),
  cap: fc.option(fc.bigInt({ min: 0n, max: 70n }), { nil: undefined }),
}).map(({ quantum, cap }) => (cap === undefined ? { quantum } : { quantum, perChildOutstandingCap: cap }));

describe("incremental engine = repeated pick", () => {
  it("identical grant sequences on generated edge sets (fast-check)", () => {
    let engaged = 0;
    let total = 0;
    fc.assert(
      fc.property(edgesArb, configArb, fc.bigInt({ min: 0n, max: 300n }), fc.integer({ min: 0, max: 400 }), (edges, config, h, maxGrants) => {
        const expected = allocateByRepeatedPick(edges, config, h, maxGrants);
        const got = allocateWithEngine(edges, config, h, maxGrants);
        total++;
        if (got !== null) engaged++;
        expect(got === null ? null : show(got)).toEqual(show(expected));
        expect(show(HeddlePolicy.allocate(edges, config, h, maxGrants))).toEqual(show(expected));
      }),
      { numRuns: RUNS },
    );
    // The engine declines only where its overflow bound cannot be proved (lcm of many distinct
    // denominators); the comparison above covers both paths, and the engine must carry nearly all.
    expect(engaged * 10).toBeGreaterThanOrEqual(total * 9);
  });

  it("identical in the holdings-trimmed tail (holdings below the quantum, mixed quanta), seeded", () => {
    for (let seed = 1; seed <= 200; seed++) {
      let x = seed * 2654435761;
      const next = (n: number): bigint => {
        x = (Math.imul(x ^ (x >>> 15), 2246822519) + 374761393) >>> 0;
        return BigInt(x % n);
      };
      const quantum = 6n + next(10);
      const edges = Array.from({ length: 3 + Number(next(6)) }, (_, i) =>
        edge(`t${i}`, { w: [1n + next(5), 1n + next(3)], gauge: [next(20), 0n], demand: [10n + next(40), 1n + next(Number(quantum) + 4)] }),
      );
      const h = next(Number(quantum) * 4);
      const expected = allocateByRepeatedPick(edges, { quantum }, h, 10_000);
      const got = allocateWithEngine(edges, { quantum }, h, 10_000);
      expect(got, `seed ${seed}`).not.toBeNull();
      expect(show(got!), `seed ${seed}`).toEqual(show(expected));
    }
  });

  it("after holdings fall below several quanta, every trimmed candidate competes on its trimmed deadline", () => {
    // quantum 13 > holdings 12, so the engine watches quanta from the start. a takes 4, d takes 6; with 2 left,
    // a, b, c and e (quanta 4, 4, 12, 7) are all trimmed to 2 while d's old quantum-6 record is still queued
    // above a's and b's. Eligible at V = 45/11: a (ev 4), b (2), d (4). Trimmed deadlines: b 2 + 2 = 4,
    // d 4 + 2/2 = 5, a 4 + 2 = 6, so the third grant is b:2; judged by their untrimmed quanta a and b would
    // sit at 8 and 6, and d would win.
    const edges = [
      edge("a", { gauge: [0n, 0n], demand: [18n, 4n] }),
      edge("b", { gauge: [2n, 0n], demand: [12n, 4n] }),
      edge("c", { w: [1n, 2n], gauge: [7n, 0n], demand: [12n, 12n] }),
      edge("d", { w: 2n, gauge: [1n, 0n], demand: [8n, 6n] }),
      edge("e", { gauge: [5n, 0n], demand: [9n, 7n] }),
    ];
    const config = { quantum: 13n };
    expect(show(allocateByRepeatedPick(edges, config, 12n, 100))).toEqual(["a:4", "d:6", "b:2"]);
    expect(show(allocateWithEngine(edges, config, 12n, 100)!)).toEqual(["a:4", "d:6", "b:2"]);
    expect(show(HeddlePolicy.allocate(edges, config, 12n, 100))).toEqual(["a:4", "d:6", "b:2"]);
  });

  it("identical across rounds while demands switch on and off, spends and returns land", () => {
    const roundArb = fc.record({
      h: fc.bigInt({ min: 0n, max: 120n }),
      toggles: fc.array(fc.tuple(fc.nat(8), fc.bigInt({ min: 0n, max: 90n }), fc.bigInt({ min: 0n, max: 25n })), { maxLength: 4 }),
      spends: fc.array(fc.tuple(fc.nat(8), fc.nat(100), fc.boolean()), { maxLength: 4 }),
    });
    fc.assert(
      fc.property(edgesArb, configArb, fc.array(roundArb, { minLength: 1, maxLength: 6 }), (initial, config, rounds) => {
        let view: PolicyEdge[] = initial;
        for (const r of rounds) {
          const expected = allocateByRepeatedPick(view, config, r.h, 10_000);
          const got = allocateWithEngine(view, config, r.h, 10_000);
          expect(got === null ? null : show(got)).toEqual(show(expected));
          for (const g of expected) view = applyGrant(view, g);
          for (const [i, target, maxGrant] of r.toggles) {
            const e = view[i % Math.max(1, view.length)];
            if (e === undefined) continue;
            view = view.map((x) => (x === e ? withChanges(x, { demand: { targetOutstanding: target, maximumUsefulGrant: maxGrant } }) : x));
          }
          for (const [i, pct, isReturn] of r.spends) {
            const e = view[i % Math.max(1, view.length)];
            if (e === undefined) continue;
            const out = e.summary.issued - e.summary.returned - e.summary.spent;
            if (out <= 0n) continue;
            const amount = (out * BigInt(pct)) / 100n;
            const changed = isReturn
              ? withChanges(e, { returned: e.summary.returned + amount })
              : withChanges(e, { spent: e.summary.spent + amount });
            view = view.map((x) => (x === e ? changed : x));
          }
        }
      }),
      { numRuns: Math.max(50, Math.floor(RUNS / 3)) },
    );
  });

  it("near the 64-bit edge, allocate returns or throws exactly what repeated pick does", () => {
    const P62 = 1n << 62n;
    const bigEdge = (id: string) =>
      fc
        .record({
          wn: fc.oneof(fc.bigInt({ min: 1n, max: 9n }), fc.bigInt({ min: 1n, max: P62 })),
          wd: fc.oneof(fc.bigInt({ min: 1n, max: 9n }), fc.bigInt({ min: 1n, max: P62 })),
          floorN: fc.oneof(fc.bigInt({ min: -50n, max: 50n }), fc.bigInt({ min: -P62, max: P62 })),
          floorD: fc.oneof(fc.bigInt({ min: 1n, max: 9n }), fc.bigInt({ min: 1n, max: P62 })),
          issued: fc.oneof(fc.bigInt({ min: 0n, max: 50n }), fc.bigInt({ min: 0n, max: P62 })),
        })
        .map((r) => edge(id, { w: [r.wn, r.wd], gauge: [Rational.of(r.floorN, r.floorD), 0n], issued: r.issued, spent: r.issued }));
    const outcome = (f: () => Grant[]): string[] | string => {
      try {
        return show(f());
      } catch (err) {
        if (err instanceof LedgerOverflowError) return "LedgerOverflowError";
        throw err;
      }
    };
    let threw = 0;
    fc.assert(
      fc.property(fc.tuple(bigEdge("a"), bigEdge("b"), bigEdge("c")), fc.bigInt({ min: 1n, max: 40n }), (edges, h) => {
        const config = { quantum: 3n };
        const expected = outcome(() => allocateByRepeatedPick(edges, config, h, 1000));
        if (expected === "LedgerOverflowError") threw++;
        expect(outcome(() => HeddlePolicy.allocate(edges, config, h, 1000))).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
    expect(threw).toBeGreaterThan(0);
  });

  it("the engine declines (falls back) on duplicate ids and on values that could overflow", () => {
    const config = { quantum: 1n };
    expect(AllocationEngine.prepare([edge("a"), edge("a")], config, 5n)).toBeNull();
    expect(AllocationEngine.prepare([edge("a", { gauge: [1n << 62n, 0n] }), edge("b")], config, 5n)).toBeNull();
    expect(AllocationEngine.prepare([edge("a"), edge("b")], config, 5n)).not.toBeNull();
  });

  it("allocate stops at maxGrants and at exhausted holdings", () => {
    const es = [edge("a"), edge("b", { w: 2n })];
    expect(HeddlePolicy.allocate(es, { quantum: 1n }, 100n, 7)).toHaveLength(7);
    expect(HeddlePolicy.allocate(es, { quantum: 1n }, 100n, 0)).toEqual([]);
    const all = HeddlePolicy.allocate(es, { quantum: 3n }, 100n, 1000);
    expect(all.reduce((s, g) => s + g.amount, 0n)).toBe(100n);
  });
});

describe("DeadlineTree", () => {
  it("earliestEligible equals a linear scan after random inserts and removals", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.nat(40), fc.integer({ min: -30, max: 30 }), fc.integer({ min: -30, max: 30 }), fc.integer({ min: -40, max: 40 })), { maxLength: 200 }),
        (ops) => {
          const tree = new DeadlineTree();
          const live = new Map<string, DeadlineNode>();
          for (const [ins, idn, key, dl, t] of ops) {
            const id = `n${idn}`;
            const cur = live.get(id);
            if (cur !== undefined && !ins) {
              tree.remove(cur);
              live.delete(id);
            } else if (cur === undefined && ins) {
              const node = { key: BigInt(key), deadline: BigInt(dl), id, left: null, right: null, height: 1 } as unknown as DeadlineNode;
              node.best = node;
              tree.insert(node);
              live.set(id, node);
            }
            let best: DeadlineNode | null = null;
            for (const n of live.values()) {
              if (n.key > BigInt(t)) continue;
              if (best === null || n.deadline < best.deadline || (n.deadline === best.deadline && n.id < best.id)) best = n;
            }
            expect(tree.earliestEligible(BigInt(t))?.id ?? null).toBe(best?.id ?? null);
            expect(tree.size).toBe(live.size);
          }
        },
      ),
      { numRuns: Math.max(50, Math.floor(RUNS / 3)) },
    );
  });
});
