/**
 * Members compact at different indexes (governed-node.ts `compactionPhase`): had every member snapshotted at the
 * same applied index, every follower would be writing its snapshot at once — answering no append meanwhile — and
 * the leader's check-quorum would step down. Each member sits at `fnv1a64(self) mod every` on a grid of `every`
 * indexes and compacts once per grid cell, wherever its last snapshot (published or installed) lies.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { RaftNode } from "../src/index.ts";
import { compactionDue, compactionPhase } from "../src/control/governed-node.ts";
import { GovernedCluster, r } from "./support/governed-cluster.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 200);

/** The indexes at which a member compacts while applying `from+1 … to` one by one after a snapshot at `from`. */
function compactions(from: number, to: number, every: number, phase: number): number[] {
  const out: number[] = [];
  let last = from;
  for (let i = from + 1; i <= to; i++)
    if (compactionDue(last, i, every, phase)) {
      out.push(i);
      last = i;
    }
  return out;
}

describe("the compaction grid", () => {
  it("once per `every` indexes, at k·every − phase, from wherever the last snapshot lies", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.nat(), fc.nat(200), fc.nat(300), (every, phaseSeed, from, span) => {
        const phase = phaseSeed % every;
        const got = compactions(from, from + span, every, phase);
        for (const i of got) expect((i + phase) % every).toBe(0);
        for (let k = 1; k < got.length; k++) expect(got[k]! - got[k - 1]!).toBe(every);
        // none missed: the first is the first grid line after `from`, and no grid line ≤ from + span is skipped
        const firstLine = (Math.floor((from + phase) / every) + 1) * every - phase;
        expect(got[0] ?? null).toBe(firstLine <= from + span ? firstLine : null);
        expect(got.length).toBe(Math.floor((from + span + phase) / every) - Math.floor((from + phase) / every));
      }),
      { numRuns: RUNS },
    );
  });

  it("phase 0 is the old rule: every `every` applied indexes from the last snapshot on the grid", () => {
    expect(compactions(0, 20, 4, 0)).toEqual([4, 8, 12, 16, 20]);
    expect(compactions(0, 20, 4, 1)).toEqual([3, 7, 11, 15, 19]);
    // an installed snapshot at another member's point (9) does not pull this member onto it
    expect(compactions(9, 20, 4, 1)).toEqual([11, 15, 19]);
    expect(compactions(0, 100, 0, 0)).toEqual([]); // snapshotEvery 0: never
  });

  it("the phase is a pure function of the id, inside 0 … every − 1, and tells the usual ids apart", () => {
    for (const every of [1, 4, 16, 4096]) {
      for (const id of ["n1", "n2", "n3", "peer-1", "12D3KooWGzh"]) {
        const p = compactionPhase(id, every);
        expect(p).toBe(compactionPhase(id, every));
        expect(Number.isInteger(p) && p >= 0 && p < every).toBe(true);
      }
    }
    expect(compactionPhase("n1", 0)).toBe(0);
    const phases = ["n1", "n2", "n3", "n4", "n5"].map((id) => compactionPhase(id, 4096));
    expect(new Set(phases).size).toBe(5);
  });
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});

describe("in a running cluster", () => {
  it("each member publishes its snapshots on its own grid line, so no two members with different phases compact together", async () => {
    const every = 16;
    const ids = ["n1", "n2", "n3"];
    const phases = new Map(ids.map((id) => [id, compactionPhase(id, every)]));
    expect(new Set(phases.values()).size).toBe(3); // the ids chosen must sit at different points of this grid
    const published = new Map<string, number[]>(ids.map((id) => [id, []]));
    const wrapRaft = (id: string, raft: RaftNode): RaftNode =>
      new Proxy(raft, {
        get: (t, k) => {
          if (k === "publishSnapshot")
            return (s: { throughIndex: number; state: Uint8Array }) => {
              published.get(id)!.push(s.throughIndex);
              t.publishSnapshot(s);
            };
          const v: unknown = Reflect.get(t, k, t);
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        },
      });
    const c = new GovernedCluster({ seed: 4711, voters: ids, learners: [], snapshotEvery: every, wrapRaft });
    cleanups.push(() => c.shutdown());
    const leader = await c.elect();
    for (let i = 0; i < 60; i++) expect((await c.settle(leader.gov.mint(r("n1"), 1n))).kind).toBe("applied");
    await c.until(() => c.allApplied(leader.gov.controlView().appliedIndex), 5_000, "every member applying the mints");
    const applied = leader.gov.controlView().appliedIndex;
    expect(applied).toBeGreaterThan(3 * every);
    for (const id of ids) {
      const phase = phases.get(id)!;
      const got = published.get(id)!;
      // every grid line of this member up to the applied index, and nothing else
      expect(got, `member ${id} (phase ${phase})`).toEqual(compactions(0, applied, every, phase));
    }
    const [a, b, d] = ids.map((id) => new Set(published.get(id)!));
    for (const i of a!) expect(b!.has(i) || d!.has(i)).toBe(false);
  });
});
