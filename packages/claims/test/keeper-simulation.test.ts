// Seeded simulation of keeper mode (claims.md §3): peers renew every minute, broadcast
// each write to the others over a lossy, delaying link, and look at every part every
// ten seconds, while the person moves between machines and takes parts on purpose.
// Under the spec's assumption — a lost broadcast is repaired by the next renewal, and
// delivery takes less than a renewal period — SETTLING guarantees that at no moment
// do two peers both believe they may act on a part. A failing run prints its seed.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PARTS, simulate } from "./support/keeper-sim.ts";

const RUNS = Number(process.env["HEDDLE_SIM_RUNS"] ?? 40);

describe("keeper simulation (seeded)", () => {
  it("never lets two peers act on one part at once, and someone does act", () => {
    const ticks = 3 * 360 + 1;
    let runs = 0;
    const total: Record<string, number> = { reminders: 0, invoices: 0 };
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 2, max: 4 }), (seed, peers) => {
        const { acted } = simulate(seed, peers, 3); // throws, naming the seed, if two act at once
        runs++;
        for (const part of PARTS) total[part] = (total[part] ?? 0) + (acted[part] ?? 0);
      }),
      { numRuns: RUNS },
    );
    // not vacuous: a run may have every machine quit for a while, but across runs each
    // part is acted on most of the time
    for (const part of PARTS) expect((total[part] ?? 0) / (runs * ticks)).toBeGreaterThan(0.6);
  });

  it("a fixed seed replays exactly", () => {
    expect(simulate(12345, 3, 1)).toEqual(simulate(12345, 3, 1));
  });
});
