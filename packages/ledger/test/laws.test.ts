/**
 * Lattice laws and merge properties over random states (ledger.md §4.3, §12 I-1, I-2, I-3, I-10,
 * I-11, I-13, I-20).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AttachmentId, LedgerConflict, Lifecycle } from "../src/index.ts";
import { LedgerReplica } from "../src/index.ts";
import {
  apply,
  E,
  EntitlementLedger,
  extremeLedgerArb,
  G,
  ledgerArb,
  LIFECYCLES,
  params,
  POOL,
  R,
  refused,
  state,
  stateSpecArb,
  Weight,
} from "./arbitraries.ts";
import { cmpFrac, cmpMint, components, COUNTER_FAMILIES, rank } from "./components.ts";
import { Simulation } from "./simulation.ts";

const EMPTY = EntitlementLedger.EMPTY;
const same = (a: EntitlementLedger, b: EntitlementLedger): void => {
  expect(a.equals(b)).toBe(true);
  expect(a.encode()).toBe(b.encode());
};
/** I-1's laws on three states: idempotent, commutative, associative. */
const semilattice = (a: EntitlementLedger, b: EntitlementLedger, c: EntitlementLedger): void => {
  same(a.join(a), a);
  same(a.join(b), b.join(a));
  same(a.join(b).join(c), a.join(b.join(c)));
};

describe("I-1 join is a semilattice with EMPTY as identity", () => {
  it("I-1 idempotent, commutative, associative, EMPTY identity", () => {
    fc.assert(
      fc.property(ledgerArb, ledgerArb, ledgerArb, (a, b, c) => {
        semilattice(a, b, c);
        same(a.join(EMPTY), a);
        same(EMPTY.join(a), a);
      }),
      params(),
    );
  });

  it("I-1 join does not modify its operands", () => {
    fc.assert(
      fc.property(ledgerArb, ledgerArb, (a, b) => {
        const ta = a.encode();
        const tb = b.encode();
        a.join(b);
        expect(a.encode()).toBe(ta);
        expect(b.encode()).toBe(tb);
      }),
      params(),
    );
  });
});

describe("I-1 on gauges whose floors span the whole decodable range (§3.8; README 'Deviations')", () => {
  // A checked compare (§3.4) of 2^40 with 1/2^40 throws while 2 with either does not, so a checked
  // gauge join threw in one merge order and not the other, and a node that refuses such a frame
  // split from its peers for good. The join only picks one operand, so it compares exactly.
  it("I-1 join never throws; idempotent, commutative, associative; each floor is the exact max of the operands'", () => {
    fc.assert(
      fc.property(extremeLedgerArb, extremeLedgerArb, extremeLedgerArb, (a, b, c) => {
        semilattice(a, b, c);
        same(a.join(c).join(b), c.join(b).join(a));
        const ca = components(a);
        const cb = components(b);
        const cj = components(a.join(b));
        for (const k of new Set([...ca.gauges.keys(), ...cb.gauges.keys()])) {
          const x = ca.gauges.get(k);
          const y = cb.gauges.get(k);
          let want = x ?? y;
          if (x !== undefined && y !== undefined) {
            const floor = cmpFrac(x[0], x[1], y[0], y[1]) >= 0 ? [x[0], x[1]] : [y[0], y[1]];
            want = [floor[0]!, floor[1]!, x[2] > y[2] ? x[2] : y[2]];
          }
          expect([k, cj.gauges.get(k)]).toEqual([k, want]);
        }
      }),
      params(),
    );
  });

  it("I-1 a LedgerReplica applying the same states in opposite orders, or from binary frames, converges on the immutable join", () => {
    fc.assert(
      fc.property(extremeLedgerArb, extremeLedgerArb, extremeLedgerArb, (a, b, c) => {
        const want = a.join(b).join(c).encode();
        expect(new LedgerReplica().apply(a).apply(b).apply(c).encode()).toBe(want);
        expect(new LedgerReplica().apply(c).apply(b).apply(a).encode()).toBe(want);
        const bin = (x: EntitlementLedger): EntitlementLedger => EntitlementLedger.decodeBinary(x.encodeBinary());
        expect(new LedgerReplica(bin(b)).apply(bin(c)).apply(bin(a)).encode()).toBe(want);
      }),
      params(),
    );
  });
});

describe("I-2 order-free convergence", () => {
  it("I-2 folding 2–5 states in several shuffles gives equal states", () => {
    fc.assert(
      fc.property(
        fc.array(ledgerArb, { minLength: 2, maxLength: 5 }),
        fc.array(fc.array(fc.nat(), { minLength: 5, maxLength: 5 }), { minLength: 3, maxLength: 3 }),
        (xs, orders) => {
          const ref = xs.reduce((a, b) => a.join(b), EMPTY);
          for (const keys of orders) {
            const perm = xs
              .map((x, i) => [keys[i]!, i, x] as const)
              .sort((p, q) => p[0] - q[0] || p[1] - q[1])
              .map(([, , x]) => x);
            // fold from the right half of the time, grouping differently
            const folded = keys[0]! % 2 === 0
              ? perm.reduce((a, b) => a.join(b), EMPTY)
              : perm.reduceRight((a, b) => b.join(a), EMPTY);
            same(folded, ref);
          }
        },
      ),
      params(),
    );
  });
});

describe("I-3 monotonicity: every stored value of a ⊔ b is the max of the operands'", () => {
  it("I-3 counters, transfers, lifecycle, gauges, records, mints", () => {
    fc.assert(
      fc.property(ledgerArb, ledgerArb, (a, b) => {
        const ca = components(a);
        const cb = components(b);
        const cj = components(a.join(b));
        for (const fam of COUNTER_FAMILIES) {
          const keys = new Set([...ca.counters[fam].keys(), ...cb.counters[fam].keys(), ...cj.counters[fam].keys()]);
          for (const k of keys) {
            const x = ca.counters[fam].get(k) ?? 0n;
            const y = cb.counters[fam].get(k) ?? 0n;
            expect([fam, k, cj.counters[fam].get(k) ?? 0n]).toEqual([fam, k, x > y ? x : y]);
          }
        }
        const tkeys = new Set([...ca.transfers.keys(), ...cb.transfers.keys(), ...cj.transfers.keys()]);
        for (const k of tkeys) {
          const x = ca.transfers.get(k) ?? 0n;
          const y = cb.transfers.get(k) ?? 0n;
          expect([k, cj.transfers.get(k) ?? 0n]).toEqual([k, x > y ? x : y]);
        }
        const lkeys = new Set([...ca.lifecycle.keys(), ...cb.lifecycle.keys(), ...cj.lifecycle.keys()]);
        for (const k of lkeys) {
          const x = ca.lifecycle.get(k);
          const y = cb.lifecycle.get(k);
          const want = x === undefined ? y : y === undefined ? x : rank(x) >= rank(y) ? x : y;
          expect([k, cj.lifecycle.get(k)]).toEqual([k, want]);
        }
        const gkeys = new Set([...ca.gauges.keys(), ...cb.gauges.keys(), ...cj.gauges.keys()]);
        for (const k of gkeys) {
          const x = ca.gauges.get(k);
          const y = cb.gauges.get(k);
          let want = x ?? y;
          if (x !== undefined && y !== undefined) {
            const floor = cmpFrac(x[0], x[1], y[0], y[1]) >= 0 ? [x[0], x[1]] : [y[0], y[1]];
            want = [floor[0]!, floor[1]!, x[2] > y[2] ? x[2] : y[2]];
          }
          expect([k, cj.gauges.get(k)]).toEqual([k, want]);
        }
        const rkeys = new Set([...ca.records.keys(), ...cb.records.keys(), ...cj.records.keys()]);
        for (const k of rkeys) {
          const union = new Set([...(ca.records.get(k) ?? []), ...(cb.records.get(k) ?? [])].map((r) => r.join("|")));
          expect([k, new Set((cj.records.get(k) ?? []).map((r) => r.join("|")))]).toEqual([k, union]);
        }
        const mkeys = new Set([...ca.mints.keys(), ...cb.mints.keys(), ...cj.mints.keys()]);
        for (const k of mkeys) {
          const x = ca.mints.get(k);
          const y = cb.mints.get(k);
          const want = x === undefined ? y : y === undefined ? x : cmpMint(x, y) >= 0 ? x : y;
          expect([k, cj.mints.get(k)]).toEqual([k, want]);
        }
      }),
      params(),
    );
  });

  it("I-3 a ⊑ a ⊔ b: re-joining either operand changes nothing", () => {
    fc.assert(
      fc.property(ledgerArb, ledgerArb, (a, b) => {
        const j = a.join(b);
        same(j.join(a), j);
        same(j.join(b), j);
      }),
      params(),
    );
  });
});

describe("I-10 projection homomorphism", () => {
  const edgeArb = fc.constantFrom(...POOL.edges, "nowhere").map(E);

  it("I-10 projectEdge(e)(a ⊔ b) = projectEdge(e)(a) ⊔ projectEdge(e)(b); edge(e) agrees with its projection", () => {
    fc.assert(
      fc.property(ledgerArb, ledgerArb, edgeArb, (a, b, e) => {
        same(a.join(b).projectEdge(e), a.projectEdge(e).join(b.projectEdge(e)));
        expect(a.projectEdge(e).edge(e)).toEqual(a.edge(e));
        expect(a.join(b).projectEdge(e).edge(e)).toEqual(a.join(b).edge(e));
      }),
      params(),
    );
  });

  it("I-10 the projection holds exactly records, lifecycle, gauge, the four counters at e and transfers[PathKey.of(e)]", () => {
    fc.assert(
      fc.property(ledgerArb, edgeArb, (a, e) => {
        const o = JSON.parse(a.encode()) as Record<string, unknown>;
        const want: Record<string, unknown> = { format: "heddle-ledger/1" };
        for (const key of ["records", "issued", "returned", "leafSpent", "rollupSpent", "transfers", "lifecycle", "gauges"]) {
          const kept = ((o[key] ?? []) as [string, unknown][]).filter(([k]) => k === e);
          if (kept.length > 0) want[key] = kept;
        }
        expect(a.projectEdge(e).encode()).toBe(JSON.stringify(want));
      }),
      params(),
    );
  });
});

describe("I-11 closure dominance", () => {
  const root = G("root");
  const A = G("A");
  const eA = E("eA");
  const alice = R("alice");

  /** A funded root with eA: root→A at the given lifecycle, as each replica would hold it. */
  function at(lc: Lifecycle): EntitlementLedger {
    let s = EntitlementLedger.bootstrap(root, new Map([[alice, 100n]]), "n");
    s = apply(s, s.prepare({ id: eA, parent: root, child: A, weight: Weight.ONE }));
    if (lc === "PREPARED") return s;
    s = apply(s, s.activate(eA));
    if (lc === "ACTIVE") return s;
    s = apply(s, s.close(eA));
    if (lc === "CLOSING") return s;
    return apply(s, s.retire(eA));
  }

  for (const high of ["CLOSING", "RETIRED"] as const) {
    for (const low of LIFECYCLES.filter((l) => rank(l) < rank(high))) {
      it(`I-11 ${high} ⊔ ${low} and ${low} ⊔ ${high} stay ${high}; activate and delegate refuse`, () => {
        const h = at(high);
        const l = at(low);
        for (const j of [h.join(l), l.join(h), l.join(h).join(l), h.join(l.join(h))]) {
          expect(j.lifecycle(eA)).toBe(high);
          expect(refused(j.activate(eA)).kind).toBe("WrongLifecycle");
          expect(refused(j.delegate(alice, eA, 1n)).kind).toBe("WrongLifecycle");
        }
      });
    }
  }

  it("I-11 adversarial merge orders never lower a lifecycle rank already seen", () => {
    fc.assert(
      fc.property(
        fc.array(stateSpecArb, { minLength: 2, maxLength: 6 }),
        fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
        (specs, order) => {
          const xs = specs.map(state);
          let view = EMPTY;
          const seen = new Map<string, number>();
          for (const k of order) {
            const x = xs[k % xs.length]!;
            view = k % 3 === 0 ? x.join(view) : view.join(x);
            for (const [e, lc] of components(x).lifecycle) seen.set(e, Math.max(seen.get(e) ?? -1, rank(lc)));
            for (const e of POOL.edges) {
              const want = seen.get(e);
              const got = components(view).lifecycle.get(e);
              if (want === undefined) continue;
              expect(got === undefined ? -1 : rank(got)).toBe(want);
            }
          }
        },
      ),
      params(),
    );
  });
});

/** Independent check of the §9 sort: kind rank, then the listed fields. */
const KIND_RANK: Record<LedgerConflict["kind"], number> = {
  PerEdgeSafety: 0,
  PersistentNegativeHoldings: 1,
  RecordDivergence: 2,
  DualActiveInbound: 3,
  ClosureViolation: 4,
  LineageCycle: 5,
  ConservationViolation: 6,
  OrphanedTransferPath: 8,
  MultipleRoots: 9,
};
function fields(c: LedgerConflict): (string | bigint)[] {
  switch (c.kind) {
    case "PerEdgeSafety":
    case "RecordDivergence":
    case "ClosureViolation":
      return [c.edge];
    case "PersistentNegativeHoldings":
      return [c.group, c.replica];
    case "DualActiveInbound":
    case "LineageCycle":
      return [c.group];
    case "ConservationViolation":
      return [c.leafSpentTotal, c.mintedTotal];
    case "OrphanedTransferPath":
      return [c.path];
    case "MultipleRoots":
      return [c.roots.join("\u0000")];
  }
}
function cmpConflict(a: LedgerConflict, b: LedgerConflict): number {
  const r = KIND_RANK[a.kind] - KIND_RANK[b.kind];
  if (r !== 0) return r;
  const fa = fields(a);
  const fb = fields(b);
  for (let i = 0; i < fa.length; i++) {
    if (fa[i]! < fb[i]!) return -1;
    if (fa[i]! > fb[i]!) return 1;
  }
  return 0;
}

describe("I-13 conflicts surface identically", () => {
  it("I-13 validate(a ⊔ b) = validate(b ⊔ a), strictly sorted, pure", () => {
    fc.assert(
      fc.property(ledgerArb, ledgerArb, (a, b) => {
        const ab = a.join(b);
        const before = ab.encode();
        const v = ab.validate();
        expect(b.join(a).validate()).toEqual(v);
        expect(ab.validate()).toEqual(v);
        expect(EntitlementLedger.decode(before).validate()).toEqual(v);
        expect(ab.encode()).toBe(before);
        for (let i = 1; i < v.length; i++) expect(cmpConflict(v[i - 1]!, v[i]!)).toBeLessThan(0);
        for (const c of v) {
          if (c.kind === "MultipleRoots") expect([...c.roots].sort()).toEqual(c.roots);
        }
      }),
      params(),
    );
  });
});

describe("I-20 determinism", () => {
  /** Splits a state into single-entry patches (one per stored slot), built by decode. */
  function pieces(x: EntitlementLedger): EntitlementLedger[] {
    const o = JSON.parse(x.encode()) as Record<string, unknown>;
    const out: EntitlementLedger[] = [];
    for (const [key, v] of Object.entries(o)) {
      if (key === "format") continue;
      for (const entry of v as [string, unknown][]) {
        out.push(EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", [key]: [entry] })));
      }
    }
    return out;
  }

  function reads(s: EntitlementLedger): unknown {
    const groups = [...POOL.groups, "root", "nowhere"].map(G);
    const reps = [...POOL.replicas, "nobody"].map(R);
    const edges: AttachmentId[] = [...POOL.edges, "nowhere"].map(E);
    return {
      text: s.encode(),
      knownEdges: s.knownEdges(),
      groups: s.groups(),
      roots: s.roots(),
      replicas: s.replicas(),
      minted: s.mintedTotal(),
      leaf: s.leafSpentTotal(),
      validate: s.validate(),
      perGroup: groups.map((g) => [
        g,
        s.lineageOf(g),
        s.isLeaf(g),
        s.childrenOf(g),
        reps.map((r) => s.holdings(g, r)),
      ]),
      perEdge: edges.map((e) => [
        e,
        s.edge(e),
        s.record(e),
        s.lifecycle(e),
        s.gauge(e)?.floor.toString(),
        s.gauge(e)?.folded,
        s.baseIssuance(e),
        s.grossVirtualService(e)?.toString(),
        s.virtualService(e)?.toString(),
        reps.map((r) => s.edgePosition(e, r)),
      ]),
    };
  }

  it("I-20 reads are identical across equal states built by different join orders", () => {
    fc.assert(
      fc.property(ledgerArb, fc.array(fc.nat(), { minLength: 40, maxLength: 40 }), (x, keys) => {
        const ps = pieces(x);
        const shuffled = ps
          .map((p, i) => [keys[i % keys.length]! + i * 7919, p] as const)
          .sort((a, b) => a[0] - b[0])
          .map(([, p]) => p);
        const y = shuffled.reduce((a, b) => b.join(a), EMPTY);
        const z = ps.reduce((a, b) => a.join(b), EMPTY);
        expect(y.equals(x)).toBe(true);
        expect(reads(y)).toEqual(reads(x));
        expect(reads(z)).toEqual(reads(x));
      }),
      params(),
    );
  });

  it("I-20 sets are sorted by UTF-16 code units, not code points or locale", () => {
    const s = state({
      records: {
        "e\uFFFF": [["g\uFFFF", "Z", 1n]],
        "e\u{1F600}": [["g\u{1F600}", "a", 1n]],
        e1: [["a", "b", 1n]],
      },
      mints: { m: ["r\uFFFF", "x\u{1F600}", 1n], n: ["r\u{1F600}", "xZ", 1n] },
      issued: { e1: { "x\uFFFF": 1n, "x\u{1F600}": 1n, xa: 1n, xZ: 1n } },
    });
    const cu = (xs: readonly string[]): string[] => [...xs].sort();
    expect(s.knownEdges()).toEqual(cu(["e1", "e\u{1F600}", "e\uFFFF"]));
    expect(s.knownEdges()).toEqual(["e1", "e\u{1F600}", "e\uFFFF"]);
    expect(s.groups()).toEqual(["Z", "a", "b", "g\u{1F600}", "g\uFFFF"]);
    expect(s.roots()).toEqual(["r\u{1F600}", "r\uFFFF"]);
    expect(s.replicas()).toEqual(["xZ", "xa", "x\u{1F600}", "x\uFFFF"]);
    expect(s.validate()).toContainEqual({ kind: "MultipleRoots", roots: ["r\u{1F600}", "r\uFFFF"] });
  });
});

describe("I-9 idempotent re-delivery", () => {
  it("I-9 delivering an honest run's patches with random duplicates and in random order equals delivering each once; history rises once", () => {
    fc.assert(
      fc.property(fc.integer(), fc.array(fc.nat(), { minLength: 1, maxLength: 60 }), (seed, picks) => {
        const sim = new Simulation({ replicas: 3, shared: true, transfers: true, reparents: false, steps: 15 }, seed).run();
        const patches = sim.log.map((p) => p.patch);
        if (patches.length === 0) return;
        const base = Simulation.base(sim.cfg);
        let dup = base;
        const once = new Set<number>();
        for (const k of picks) {
          const i = k % patches.length;
          dup = dup.join(patches[i]!);
          once.add(i);
        }
        let single = base;
        for (const i of [...once].sort((a, b) => a - b)) single = single.join(patches[i]!);
        same(dup, single);
        expect(dup.leafSpentTotal()).toBe(single.leafSpentTotal());
        // and every patch re-delivered onto the final view changes nothing
        const full = patches.reduce((v, p) => v.join(p), base);
        same(full, sim.viewOf(0));
        for (const p of patches) same(full.join(p).join(p), full);
      }),
      params(),
    );
  });
});
