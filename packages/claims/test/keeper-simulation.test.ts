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

  // claims.md §3 heard-from: "for what must never happen twice, the keeper additionally requires that every other
  // peer with a claim on the part has been heard from … within othersHeard; otherwise it reports that it cannot be
  // sure". A partitioned peer's claim lapses past ALIVE on the other side without ever being closed — the peer may
  // still be running and acting there — so it must still be waited for; a follows-you part used to stop waiting at
  // ALIVE, and both sides of a split longer than ALIVE + SETTLING were sure at once. And settling (§3: "so the others'
  // claims have had time to arrive") must have passed while hearing the others: two sides that each settled alone
  // were both sure the moment a healed link brought one copy each way, before the newer claims had crossed.
  it("with the link split for minutes to hours, never lets two peers be sure of one part at once", () => {
    let runs = 0;
    let cut = 0;
    const total: Record<string, number> = { reminders: 0, invoices: 0 };
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 2, max: 4 }), (seed, peers) => {
        const run = simulate(seed, peers, 4, { partitions: true }); // throws, naming the seed, if two are sure at once
        runs++;
        cut += run.cutMs;
        for (const part of PARTS) total[part] = (total[part] ?? 0) + (run.sure[part] ?? 0);
      }),
      { numRuns: Math.max(1, Math.floor(RUNS / 2)) },
    );
    // not vacuous: the link was split for a good share of the time, and outside the splits someone was sure
    expect(cut / (runs * 4 * 3_600_000)).toBeGreaterThan(0.2);
    for (const part of PARTS) expect((total[part] ?? 0) / (runs * (4 * 360 + 1))).toBeGreaterThan(0.2);
  });

  it("replays the seeds that found two peers sure at once (a claim lapsed past ALIVE; a split healing)", () => {
    // [seed, peers]: 1 and 2 (like most seeds) failed while a follows-you claim that lapsed past ALIVE unclosed was no
    // longer waited for; 171297269, one in about a thousand, once that was fixed — both sides of a healing split, each
    // settled in its own view, were sure as soon as they heard each other again
    for (const [seed, peers] of [[1, 2], [2, 2], [171297269, 2]] as const) {
      expect(() => simulate(seed, peers, 4, { partitions: true })).not.toThrow();
    }
  });

  it("a fixed seed replays exactly", () => {
    expect(simulate(12345, 3, 1)).toEqual(simulate(12345, 3, 1));
  });
});
