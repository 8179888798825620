/**
 * Honest runs (ledger.md §12): threaded mutator sequences where each call uses a replica as
 * itself and applies only `ok` patches. Pins I-6 (local safety), I-7 (conservation at every step
 * and after full-state exchanges), I-8 (overspend refusal, random), I-16 (witness) and I-18
 * (reparent preserves holdings, leaf and internal groups).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EntitlementLedger } from "../src/index.ts";
import { params, RUNS } from "./arbitraries.ts";
import { conservationApplies, conservationSides, Simulation, topologyAndMints } from "./simulation.ts";
import type { SimConfig } from "./simulation.ts";

type Stats = Simulation["stats"];
function tally(into: Partial<Record<keyof Stats, number>>, s: Stats): void {
  for (const [k, v] of Object.entries(s)) into[k as keyof Stats] = (into[k as keyof Stats] ?? 0) + v;
}

describe("honest runs on one shared view", () => {
  const cfg: SimConfig = { replicas: 3, shared: true, transfers: true, reparents: true, steps: 60 };

  it("I-6 I-7 I-8 I-18 no negative holdings, conservation after every step, exact overspend refusal, reparents preserve holdings; validate() empty at the end", () => {
    const total: Partial<Record<keyof Stats, number>> = {};
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const sim = new Simulation(cfg, seed).run();
        const v = sim.viewOf(0);
        expect(v.validate()).toEqual([]);
        expect(conservationApplies(v)).toBe(true);
        const [minted, rhs] = conservationSides(v);
        expect(rhs).toBe(minted);
        tally(total, sim.stats);
      }),
      params(Math.max(RUNS, 80)),
    );
    // the runs are not vacuous
    if (RUNS < 200) return;
    expect(total.reparents).toBeGreaterThan(0);
    expect(total.internalReparents).toBeGreaterThan(0);
    expect(total.holdingsPreserved).toBe(total.reparents);
    expect(total.transfers).toBeGreaterThan(0);
    expect(total.spends).toBeGreaterThan(0);
    expect(total.newChildren).toBeGreaterThan(0);
    expect(total.conservationChecks).toBeGreaterThan(total.ok! / 2);
    expect(total.refused).toBeGreaterThan(0);
  });
});

describe("I-16 witness", () => {
  /**
   * Every patch alone on EMPTY and on its producer's topology+mints, with no exception: since
   * ⟨1.1⟩ a retire patch's drain witness carries its writers' mints (§7.4), so it balances alone.
   * Returns how many retire patches were checked.
   */
  function cleanAlone(sim: Simulation): number {
    let retires = 0;
    for (const p of sim.log) {
      if (p.what.startsWith("retire(")) retires++;
      expect([p.what, EntitlementLedger.EMPTY.join(p.patch).validate()]).toEqual([p.what, []]);
      expect([p.what, topologyAndMints(p.base).join(p.patch).validate()]).toEqual([p.what, []]);
    }
    return retires;
  }

  it("I-16 without transfers, every patch alone on EMPTY and on topology+mints validates clean (several replicas, new children under former leaves)", () => {
    const cfg: SimConfig = { replicas: 3, shared: false, transfers: false, reparents: false, steps: 200 };
    let children = 0;
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const sim = new Simulation(cfg, seed).run();
        cleanAlone(sim);
        children += sim.stats.newChildren;
      }),
      params(Math.max(40, Math.floor(RUNS / 10))),
    );
    expect(children).toBeGreaterThan(0);
  });

  it("I-16 without transfers, reparent patches are clean alone too — every retire patch included, no exception (⟨1.1⟩ drain witness carries the writers' mints)", () => {
    const cfg: SimConfig = { replicas: 3, shared: true, transfers: false, reparents: true, steps: 30 };
    let reparents = 0;
    let retires = 0;
    let drainedSpends = 0;
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const sim = new Simulation(cfg, seed).run();
        retires += cleanAlone(sim);
        reparents += sim.stats.reparents;
        // retire patches whose drain witness carries spends: the case 1.0 reported as ConservationViolation
        for (const p of sim.log) if (p.what.startsWith("retire(") && p.patch.leafSpentTotal() > 0n) drainedSpends++;
      }),
      params(),
    );
    expect(reparents).toBeGreaterThan(0);
    expect(retires).toBeGreaterThan(0);
    expect(drainedSpends).toBeGreaterThan(0);
  });

  it("I-16 with transfers, every false report disappears once all patches are joined", () => {
    const cfg: SimConfig = { replicas: 3, shared: false, transfers: true, reparents: false, steps: 60 };
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const sim = new Simulation(cfg, seed).run();
        sim.deliverAll();
        for (const v of sim.views) expect(v.validate()).toEqual([]);
      }),
      params(),
    );
  });
});
