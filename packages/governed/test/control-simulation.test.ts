/**
 * The control plane's seeded simulation (see `support/control-simulation.ts`): 3 voters + 2 learners with faults,
 * operators retrying with keys, and the checks of governed.md §5.2 and §5.4 C14. `HEDDLE_CONTROL_SEEDS` sets the
 * number of seeds (200 in CI; 5 000 for the nightly size), `HEDDLE_SEED` the first one.
 */
import { describe, expect, it } from "vitest";
import { ControlSimulationFailure, runControlSimulation } from "./support/control-simulation.ts";
import type { ControlSimResult } from "./support/control-simulation.ts";

const SEEDS = Number(process.env.HEDDLE_CONTROL_SEEDS ?? 200);
const FIRST = Number(process.env.HEDDLE_SEED ?? 1);

async function run(seed: number, o: { runMs?: number; operators?: number } = {}): Promise<ControlSimResult> {
  try {
    return await runControlSimulation(seed, o);
  } catch (e) {
    if (e instanceof ControlSimulationFailure) console.error(e.message);
    throw e;
  }
}

describe("control-plane simulation: 3 voters + 2 learners, faults, keyed retries (governed.md §5.2, §5.4 C14)", () => {
  it(`keeps equal ControlStates at equal indexes, converges, mints exactly what was acknowledged, never overlaps grants, and stays linearizable over ${SEEDS} seeds`, async () => {
    const totals = { runs: 0, applied: 0, commands: 0, acked: 0, conflicts: 0, unknownRetried: 0, crashes: 0, installs: 0, syncs: 0, grants: 0, dataPlaneGrants: 0, idemKeys: 0, idemHeld: 0, idemRedecided: 0 };
    for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
      const r = await run(seed);
      totals.runs++;
      for (const k of Object.keys(totals) as (keyof typeof totals)[]) if (k !== "runs") totals[k] += r[k] as number;
      // a nightly-size run reports its progress, so a run cut short still says how far it got
      if (SEEDS >= 1_000 && totals.runs % 25 === 0) console.log(`control simulation: seeds ${FIRST}…${seed} passed (${totals.runs}/${SEEDS})`);
    }
    console.log(`control simulation: ${JSON.stringify(totals)}`);
    if (SEEDS >= 20) {
      // the runs did real work under real faults, or the checks checked nothing
      expect(totals.commands).toBeGreaterThan(1_000);
      expect(totals.conflicts).toBeGreaterThan(totals.runs);
      expect(totals.unknownRetried).toBeGreaterThan(totals.runs / 4);
      expect(totals.crashes).toBeGreaterThan(totals.runs / 2);
      expect(totals.installs).toBeGreaterThan(totals.runs / 4);
      expect(totals.syncs).toBeGreaterThan(totals.runs);
      expect(totals.grants).toBeGreaterThan(totals.runs);
      expect(totals.dataPlaneGrants).toBeGreaterThan(totals.runs);
      // idem: sessions were forgotten while the states stayed equal
      expect(totals.idemKeys).toBeGreaterThan(totals.runs);
      expect(totals.idemHeld).toBeLessThan(totals.idemKeys / 2);
    }
  }, 120_000 + SEEDS * 20_000);

  it("C14 determinism: one long run of more than 1 000 commands, conflicting on purpose", async () => {
    const r = await run(FIRST + 100_000, { runMs: 40_000, operators: 7 });
    expect(r.commands).toBeGreaterThan(1_000);
    expect(r.conflicts).toBeGreaterThan(100);
  }, 600_000);

  it("replays a seed exactly", async () => {
    expect(await run(3)).toEqual(await run(3));
  }, 120_000);
});
