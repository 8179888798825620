import { describe, expect, it } from "vitest";
import { FAMILIES, runSimulation, SimulationFailure } from "./support/simulation.ts";
import { logStoreStats, SIM_DISK } from "./support/sim-cluster.ts";

const SEEDS = Number(process.env.HEDDLE_RAFT_SEEDS ?? 380);
const FIRST = Number(process.env.HEDDLE_RAFT_FIRST_SEED ?? 1);
/** Most membership runs made past the range when it reached one of R-M4's rare cases in none (see below). */
const MORE_MEMBERSHIP_RUNS = 100;

describe("raft deterministic simulation (governed.md §5.1–5.2)", () => {
  it(`holds every invariant and linearizability over ${SEEDS} seeds`, () => {
    const perFamily = new Map<string, { runs: number; committed: number; ops: number; installs: number; changes: number; transfers: number; transferFailures: number; figure8: number; outsiderHeard: number; selfRemovalsTruncated: number }>();
    for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
      const r = runSimulation(seed);
      const f = perFamily.get(r.family) ?? { runs: 0, committed: 0, ops: 0, installs: 0, changes: 0, transfers: 0, transferFailures: 0, figure8: 0, outsiderHeard: 0, selfRemovalsTruncated: 0 };
      f.runs++;
      f.committed += r.committed;
      f.ops += r.completedOps;
      f.installs += r.snapshotsInstalled;
      f.changes += r.membershipChanges;
      f.transfers += r.transfersSucceeded;
      f.transferFailures += Object.values(r.transfersFailed).reduce((a, b) => a + b, 0);
      f.figure8 += r.figure8Rounds;
      f.outsiderHeard += r.outsiderFramesHeard;
      f.selfRemovalsTruncated += r.selfRemovalsTruncated;
      perFamily.set(r.family, f);
    }
    // The runs must have done real work, or the invariants checked nothing.
    for (const fam of FAMILIES) {
      const f = perFamily.get(fam);
      if (SEEDS >= FAMILIES.length) {
        expect(f, fam).toBeDefined();
        expect(f!.committed / f!.runs, `${fam} commits per run`).toBeGreaterThan(20);
        expect(f!.ops, `${fam} completed client ops`).toBeGreaterThan(0);
      }
    }
    if (SIM_DISK === "wal" && SEEDS >= FAMILIES.length) {
      // the disks ran on the log store: every restart recovered from it, segments rolled, and crashes that hit a
      // write in flight cut it (a rare event per run: writes are short; wal-storage.test.ts tears every byte)
      console.log(`log store under the simulation: ${JSON.stringify(logStoreStats)}`);
      expect(logStoreStats.recoveries).toBeGreaterThan(SEEDS);
      expect(logStoreStats.segmentsRolled).toBeGreaterThan(1);
      if (SEEDS >= 100) expect(logStoreStats.writesCut).toBeGreaterThan(0);
    }
    if (SEEDS >= FAMILIES.length) {
      expect(perFamily.get("snapshots-under-partitions")!.installs).toBeGreaterThan(0);
      expect(perFamily.get("membership")!.changes).toBeGreaterThan(0);
      // leadership really moved by transfer, and some transfers were refused or abandoned under the faults
      const t = perFamily.get("transfers")!;
      expect(t.transfers).toBeGreaterThan(t.runs);
      expect(t.transferFailures).toBeGreaterThan(0);
      // the Figure 8 schedule got as far as a third leader holding an earlier leader's uncommitted entries
      const f8 = perFamily.get("figure-8")!;
      expect(f8.figure8).toBeGreaterThan(f8.runs);
    }
    // R-M4's two regressions (governed.md §4.8), reached by the membership family and checked frame by frame
    // (a drop the amended rule does not call for, or a missing one, fails the run): lagging members heard leaders
    // their adopted configuration does not list, and crashed leaders' uncommitted self-removals were truncated
    if (SEEDS >= 100) {
      // each is a rare event (a few runs in a hundred), so which seeds reach it moves with any change to the core's
      // timing: should the range above reach one of them in no run, further membership runs are made, at most
      // MORE_MEMBERSHIP_RUNS of them (each still checked in full) — the assertion is that the case is reached
      const m = perFamily.get("membership")!;
      for (let k = 0, seed = FIRST + SEEDS; k < MORE_MEMBERSHIP_RUNS && (m.outsiderHeard === 0 || m.selfRemovalsTruncated === 0); seed++) {
        if (FAMILIES[seed % FAMILIES.length] !== "membership") continue;
        k++;
        const r = runSimulation(seed);
        m.outsiderHeard += r.outsiderFramesHeard;
        m.selfRemovalsTruncated += r.selfRemovalsTruncated;
      }
      expect(m.outsiderHeard, "lagging members caught up from a leader outside their configuration").toBeGreaterThan(0);
      expect(m.selfRemovalsTruncated, "uncommitted self-removals truncated by the next leader").toBeGreaterThan(0);
    }
  }, 60_000 + (SEEDS + MORE_MEMBERSHIP_RUNS) * 3_000);

  it("catches a store wiped on restart (R-P5), prints the seed, and the seed reproduces the failure exactly", () => {
    let caught: { seed: number; message: string } | null = null;
    for (let seed = 1; seed <= 30 && caught === null; seed++) {
      try {
        runSimulation(seed, "leader-crash-loop", "wipe-on-restart");
      } catch (e) {
        expect(e).toBeInstanceOf(SimulationFailure);
        caught = { seed, message: (e as Error).message };
      }
    }
    expect(caught, "a wiped store must break an invariant within 30 seeds").not.toBeNull();
    expect(caught!.message).toContain(`seed=${caught!.seed} `);
    expect(caught!.message).toMatch(/Election Safety|Leader Completeness|Log Matching|lost|durable|State Machine Safety/);
    expect(() => runSimulation(caught!.seed, "leader-crash-loop", "wipe-on-restart")).toThrow(caught!.message);
  });

  it("is deterministic: the same seed gives the same run", () => {
    for (const seed of [3, 14, 15]) expect(runSimulation(seed)).toEqual(runSimulation(seed));
  });
});
