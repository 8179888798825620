/**
 * Model-based test (issue 2 acceptance; ledger.md §6.4, §6.5, §12): random mutator sequences on
 * 3–4 replicas, each with its own view, with random partial, duplicated and reordered delivery of
 * patches and full-state exchanges. At every observable state the simulation checks: no replica's
 * own holdings go negative in its own view (refusal-free overspend is impossible), no holdings are
 * negative without a reported conflict, and conservation holds whenever §6.4's preconditions hold
 * on a view that is a join of replica states. After full delivery every replica `equals` every
 * other and encodes to identical text.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { params, RUNS } from "./arbitraries.ts";
import { conservationApplies, conservationSides, Simulation } from "./simulation.ts";
import type { SimConfig } from "./simulation.ts";

function converge(sim: Simulation): void {
  sim.deliverAll();
  const [first, ...rest] = sim.views;
  const text = first!.encode();
  const report = first!.validate();
  for (const v of rest) {
    expect(v.equals(first!)).toBe(true);
    expect(v.encode()).toBe(text);
    expect(v.validate()).toEqual(report);
  }
}

describe("model: replicas with partial, duplicated and reordered delivery", () => {
  it("I-7 §6.5 fixed topology plus new children: own holdings never negative, conservation on every join of replica states (exchanges included), full delivery converges clean", () => {
    const cfg: SimConfig = { replicas: 4, shared: false, transfers: true, reparents: false, steps: 60 };
    let deliveries = 0;
    let exchanges = 0;
    let checks = 0;
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const sim = new Simulation(cfg, seed).run();
        deliveries += sim.stats.deliveries;
        exchanges += sim.stats.exchanges;
        checks += sim.stats.conservationChecks;
        converge(sim);
        const v = sim.views[0]!;
        expect(v.validate()).toEqual([]);
        expect(conservationApplies(v)).toBe(true);
        const [minted, rhs] = conservationSides(v);
        expect(rhs).toBe(minted);
      }),
      params(),
    );
    if (RUNS < 200) return;
    expect(deliveries).toBeGreaterThan(0);
    expect(exchanges).toBeGreaterThan(0);
    expect(checks).toBeGreaterThan(0);
  });

  it("I-13 §6.5 with concurrent reshapes (close, per-replica drain, retire, activate): negative holdings are always reported, and every replica converges to the same state and report", () => {
    const cfg: SimConfig = { replicas: 3, shared: false, transfers: true, reparents: true, steps: 60 };
    let retires = 0;
    let conflicted = 0;
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const sim = new Simulation(cfg, seed).run();
        retires += sim.stats.retires;
        converge(sim);
        if (sim.views[0]!.validate().length > 0) conflicted++;
      }),
      params(),
    );
    if (RUNS < 200) return; // coverage of a small run is left to chance
    expect(retires).toBeGreaterThan(0);
    // races are real: some runs end with a reported conflict (e.g. §13.4's ClosureViolation)
    expect(conflicted).toBeGreaterThan(0);
  });
});
