/**
 * claims.md §5: the replicated table on the governed cluster. Claims granted through different peers never
 * overlap under partitions (a stranded minority leader among them), leader changes and restarts — checked on
 * every replica after every apply and by replaying the committed log from scratch — a take acknowledged to a
 * client is in the committed log with the outcome it was told, and a stale token is rejected on every replica
 * after its lease lapses and the key is re-granted.
 */
import { describe, expect, it } from "vitest";
import { ClaimsReplica, encodeClaimsEntry } from "./support/claims-replica.ts";
import type { ClaimsCommand } from "./support/claims-replica.ts";
import { ClaimsSimulationFailure, runClaimsSimulation, SIM_CLAIMS_OPTIONS } from "./support/claims-simulation.ts";
import type { ClaimsSabotage } from "./support/claims-simulation.ts";

const SEEDS = Number(process.env.HEDDLE_CLAIMS_SEEDS ?? 150);
const FIRST = Number(process.env.HEDDLE_CLAIMS_FIRST_SEED ?? 1);

function run(seed: number, sabotage?: ClaimsSabotage): ReturnType<typeof runClaimsSimulation> {
  try {
    return runClaimsSimulation(seed, sabotage);
  } catch (e) {
    if (e instanceof ClaimsSimulationFailure) console.error(e.message); // the message names the seed
    throw e;
  }
}

describe("replicated claims table on the governed Raft log (claims.md §2, §5; governed.md §3.4–3.5)", () => {
  it(`never overlaps grants, loses an acknowledged take or accepts a stale token over ${SEEDS} seeds (3 and 5 voters)`, () => {
    const totals = { runs: 0, committed: 0, acked: 0, granted: 0, refused: 0, fence: 0, restarts: 0, minority: 0, elections: 0 };
    const voters = new Set<number>();
    for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
      const r = run(seed);
      voters.add(r.voters);
      totals.runs++;
      totals.committed += r.committed;
      totals.acked += r.ackedTakes;
      totals.granted += r.grantedTakes;
      totals.refused += r.refusedTakes;
      totals.fence += r.fencePairs;
      totals.restarts += r.restarts;
      totals.minority += r.minorityLeaders;
      totals.elections += r.elections;
    }
    console.log(`claims-on-raft: ${JSON.stringify(totals)}`);
    // The runs must have done real work under real faults, or the checks checked nothing.
    if (SEEDS >= 10) {
      expect([...voters].sort()).toEqual([3, 5]);
      expect(totals.committed / totals.runs).toBeGreaterThan(30);
      expect(totals.granted).toBeGreaterThan(totals.runs * 5);
      expect(totals.refused).toBeGreaterThan(totals.runs * 5); // contention happened
      expect(totals.fence).toBeGreaterThan(totals.runs); // the stale-token scenario completed, several times a run
      expect(totals.restarts).toBeGreaterThan(totals.runs);
      expect(totals.minority).toBeGreaterThan(0);
      expect(totals.elections).toBeGreaterThan(totals.runs * 2);
    }
  }, 60_000 + SEEDS * 2_000);

  it("is deterministic: the same seed gives the same run", () => {
    for (const seed of [4, 7]) expect(runClaimsSimulation(seed)).toEqual(runClaimsSimulation(seed));
  }, 60_000);

  for (const sabotage of ["apply-uncommitted", "local-clock"] as const) {
    it(`catches a replica that ${sabotage === "apply-uncommitted" ? "applies entries before they commit" : "uses its own clock instead of the leader's stamp"}; the failure names its seed and the seed reproduces it`, () => {
      let caught: { seed: number; message: string } | null = null;
      for (let seed = 1; seed <= 20 && caught === null; seed++) {
        try {
          runClaimsSimulation(seed, sabotage);
        } catch (e) {
          if (!(e instanceof ClaimsSimulationFailure)) throw e;
          caught = { seed, message: e.message };
        }
      }
      expect(caught, `${sabotage} must break a check within 20 seeds`).not.toBeNull();
      expect(caught!.message).toContain(`seed=${caught!.seed} `);
      expect(() => runClaimsSimulation(caught!.seed, sabotage)).toThrow(caught!.message);
    }, 120_000);
  }
});

describe("the claims family on the production ControlState (governed.md §3.4)", () => {
  it("stamps with the leader's time clamped never to run backwards, uses the log index as the token, and decides a duplicate once", () => {
    const m = new ClaimsReplica(SIM_CLAIMS_OPTIONS);
    const take = (holder: string, ttlMs: number): ClaimsCommand => ({ op: "take", request: { holder, resources: [{ key: "mutex/a", mode: "exclusive" }], ttlMs } });
    const entry = (index: number, stampedAt: number, command: ClaimsCommand, seq: number) => ({
      kind: "entry" as const,
      entry: { index, term: 1, kind: "app" as const, key: { client: "c", seq }, command: encodeClaimsEntry(command, { client: "c", seq }), stampedAt },
    });
    m.apply({ kind: "internal", index: 1 });
    const a = m.apply(entry(2, 1_000, take("A", 100), 1))!;
    expect(a.result).toMatchObject({ op: "take", outcome: { ok: true, grants: [{ token: 2 }] } });
    // a later leader whose clock is behind: time stays at 1_000, so A still holds and B is refused
    const b = m.apply(entry(3, 400, take("B", 100), 2))!;
    expect(b.now).toBe(1_000);
    expect(b.result).toMatchObject({ op: "take", outcome: { ok: false } });
    // the same proposal committed again (a retry): the recorded outcome, nothing changes
    const again = m.apply(entry(4, 5_000, take("B", 100), 2))!;
    expect(again.duplicate).toBe(true);
    expect(again.text).toBe(b.text);
    expect(m.claimsNow).toBe(1_000);
    // stamped time passes A's lease: B is granted with token 5, and A's token 2 is stale
    const c = m.apply(entry(5, 1_100, take("B", 100), 3))!;
    expect(c.result).toMatchObject({ op: "take", outcome: { ok: true, grants: [{ token: 5 }] } });
    expect(m.table.checkFence("mutex/a", 2)).toBe(false);
    expect(m.table.checkFence("mutex/a", 5)).toBe(true);
    expect(() => m.apply({ kind: "internal", index: 7 })).toThrow(/roster advanced to 7 after 5/);
  });
});
