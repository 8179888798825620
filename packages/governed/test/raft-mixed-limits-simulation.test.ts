/**
 * The seeded simulation (governed.md §5.1–5.2) with members whose limits differ (`SimOptions.mixedLimits`): each
 * member runs its own `maxEntriesPerMessage` (n2 takes one entry per frame) and `maxMessageBytes` (n2 takes 300
 * bytes), and a frame longer than its receiver's `maxMessageBytes` is dropped on arrival, as a seam drops a frame
 * above its `maxFrameBytes`. Every invariant of the simulation holds, the client history is linearizable, and —
 * families with near-true clocks only, where the settle phase asserts it — every member converges on the leader's
 * state.
 *
 * Found in review: a follower refused (or its transport dropped) every frame above its own limit without a word and
 * the leader sent the same frame again at every heartbeat, so replication to it stalled for good and the run did not
 * converge. `HEDDLE_RAFT_MIXED_SEEDS` seeds (default 20) from `HEDDLE_RAFT_FIRST_SEED` (default 1); a failing run
 * names its seed: `runSimulation(seed, family, undefined, { mixedLimits: true })` replays it.
 */
import { describe, expect, it } from "vitest";
import { FAMILIES, runSimulation } from "./support/simulation.ts";
import type { Family } from "./support/simulation.ts";

const SEEDS = Number(process.env.HEDDLE_RAFT_MIXED_SEEDS ?? 20);
const FIRST = Number(process.env.HEDDLE_RAFT_FIRST_SEED ?? 1);
/** Every family but skewed clocks, whose runs skip the convergence check. */
const CONVERGING: readonly Family[] = FAMILIES.filter((f) => f !== "skewed-clocks");

describe("raft simulation with mixed limits across members", () => {
  it(`commits, converges and stays linearizable over ${SEEDS} seeds`, () => {
    let tooManyEntries = 0;
    let oversizeDropped = 0;
    for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
      const family = CONVERGING[seed % CONVERGING.length]!;
      const r = runSimulation(seed, family, undefined, { mixedLimits: true });
      expect(r.committed, `seed ${seed} (${family}) committed entries`).toBeGreaterThan(20);
      tooManyEntries += r.tooManyEntries;
      oversizeDropped += r.oversizeDropped;
    }
    // the limits really bit: frames were refused for their entry count and dropped for their size
    if (SEEDS >= 5) {
      expect(tooManyEntries).toBeGreaterThan(0);
      expect(oversizeDropped).toBeGreaterThan(0);
    }
  }, 60_000 + SEEDS * 5_000);

  it("is deterministic: the same seed gives the same run", () => {
    expect(runSimulation(4, "lossy", undefined, { mixedLimits: true })).toEqual(runSimulation(4, "lossy", undefined, { mixedLimits: true }));
  }, 60_000);
});
