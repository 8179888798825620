import { describe, expect, it } from "vitest";
import { LedgerOverflowError, Rational } from "@heddle/ledger";
import { HeddlePolicy } from "../src/index.ts";
import type { Grant, PolicyConfig, PolicyEdge } from "../src/index.ts";
import { applyGrantToEdge } from "../src/grant-application.ts";
import { edge, withChanges } from "./edge-builder.ts";
import type { EdgeSpec } from "./edge-builder.ts";
import { oraclePick } from "./oracle.ts";
import { SeededRandom, seedFromEnv } from "./seeded-random.ts";

const WEIGHTS: readonly (readonly [bigint, bigint])[] = [[1n, 1n], [2n, 1n], [1n, 2n], [3n, 2n]];
const GAUGES: readonly (readonly [Rational, bigint] | null)[] = [
  null,
  [Rational.ZERO, 0n],
  [Rational.of(1n, 2n), 0n],
  [Rational.of(3n), 1n],
];
const COUNTERS: readonly (readonly [bigint, bigint, bigint])[] = [[0n, 0n, 0n], [2n, 0n, 1n], [5n, 1n, 2n], [7n, 3n, 0n]];
const DEMANDS: readonly (readonly [bigint, bigint])[] = [[0n, 0n], [3n, 2n], [10n, 10n]];
const OFFSETS: readonly Rational[] = [Rational.ZERO, Rational.of(1n, 3n)];
const QUANTA = [1n, 3n];
const HOLDINGS = [0n, 1n, 5n];
const CAPS: readonly (bigint | null)[] = [null, 4n];

function gridEdges(id: string): PolicyEdge[] {
  const out: PolicyEdge[] = [];
  for (const w of WEIGHTS)
    for (const g of GAUGES)
      for (const [issued, returned, spent] of COUNTERS)
        for (const demand of DEMANDS)
          for (const offset of OFFSETS) {
            const spec: EdgeSpec = { w, gauge: g, issued, returned, spent, demand, offset };
            out.push(edge(id, spec));
          }
  return out;
}

function describeCase(edges: readonly PolicyEdge[], config: PolicyConfig, h: bigint): string {
  const es = edges.map((e) => ({
    id: e.record.id,
    w: String(e.record.weight),
    gauge: e.gauge === null ? null : [String(e.gauge.floor), String(e.gauge.folded)],
    issued: String(e.summary.issued),
    returned: String(e.summary.returned),
    spent: String(e.summary.spent),
    base: String(e.baseIssued),
    demand: [String(e.demand.targetOutstanding), String(e.demand.maximumUsefulGrant)],
    offset: String(e.virtualOffset),
  }));
  return JSON.stringify({ edges: es, quantum: String(config.quantum), cap: String(config.perChildOutstandingCap), holdings: String(h) });
}

const sameGrant = (a: Grant | null, b: { attachment: string; amount: bigint } | null): boolean =>
  a === null || b === null ? a === b : a.attachment === b.attachment && a.amount === b.amount;

interface Tally {
  rounds: number;
  reached: number;
  skipped: number;
  mismatches: string[];
}

function compare(t: Tally, edges: readonly PolicyEdge[], quantum: bigint, cap: bigint | null, h: bigint): void {
  const config: PolicyConfig = cap === null ? { quantum } : { quantum, perChildOutstandingCap: cap };
  t.rounds++;
  let mine: Grant | null;
  try {
    mine = HeddlePolicy.pick(edges, config, h);
  } catch (err) {
    if (err instanceof LedgerOverflowError) {
      t.skipped++;
      return;
    }
    throw err;
  }
  const theirs = oraclePick(edges, quantum, cap, h);
  if (theirs.reachedEligibility) t.reached++;
  if (!sameGrant(mine, theirs.grant) && t.mismatches.length < 5) {
    t.mismatches.push(`${describeCase(edges, config, h)} → pick ${JSON.stringify(mine, (_, v) => (typeof v === "bigint" ? String(v) : v))} oracle ${JSON.stringify(theirs.grant, (_, v) => (typeof v === "bigint" ? String(v) : v))}`);
  }
}

describe("§10 oracle comparison", () => {
  it("agrees with pick on every input of the exhaustive 1–2 edge grid", () => {
    // HEDDLE_ORACLE_GRID_STRIDE=k visits every k-th pair only (mutation runs, stryker/policy.config.mjs);
    // the default, 1, is the whole grid.
    const stride = Number(process.env["HEDDLE_ORACLE_GRID_STRIDE"] ?? 1);
    const as = gridEdges("a");
    const bs = gridEdges("b");
    const t: Tally = { rounds: 0, reached: 0, skipped: 0, mismatches: [] };
    // Five mismatches (or one overflow) already decide the test: stop there rather than walk the other
    // 1.7 million cases, so a broken pick fails in moments (mutation runs depend on this).
    const failed = (): boolean => t.mismatches.length >= 5 || t.skipped > 0;
    let shift = 0; // with a stride, each `a` starts at a different `b`, so every b is still met
    grid: for (const quantum of QUANTA)
      for (const h of HOLDINGS)
        for (const cap of CAPS) {
          for (const a of as) compare(t, [a], quantum, cap, h);
          for (const a of as) {
            for (let j = shift++ % stride; j < bs.length; j += stride) {
              compare(t, [a, bs[j]!], quantum, cap, h);
              compare(t, [bs[j]!, a], quantum, cap, h);
            }
            if (failed()) break grid;
          }
        }
    expect(t.mismatches).toEqual([]);
    expect(t.skipped).toBe(0);
    if (stride === 1) expect(t.rounds).toBe(12 * (384 + 2 * 384 * 384));
    expect(t.reached * 2).toBeGreaterThan(t.rounds);
  });

  it("agrees with pick on ≥ 100 000 seeded closed-loop rounds over 3–6 edges", () => {
    const rounds = Number(process.env["HEDDLE_ORACLE_ROUNDS"] ?? 100_000);
    const rng = new SeededRandom(seedFromEnv(20261129));
    const t: Tally = { rounds: 0, reached: 0, skipped: 0, mismatches: [] };
    try {
      while (t.rounds < rounds) {
        const k = rng.int(3, 6);
        let view: PolicyEdge[] = Array.from({ length: k }, (_, i) => {
          const issued = rng.big(0, 30);
          const returned = rng.big(0, Number(issued));
          const spent = rng.big(0, Number(issued - returned));
          const folded = rng.big(0, Number(issued));
          const gauge = rng.chance(1, 5) ? null : ([Rational.of(rng.big(-20, 60), rng.big(1, 6)), folded] as const);
          return edge(`e${rng.int(0, 9)}${i}`, {
            w: [rng.big(1, 9), rng.big(1, 4)],
            gauge,
            issued,
            returned,
            spent,
            base: issued,
            demand: [rng.big(0, 40), rng.big(0, 12)],
            offset: rng.chance(1, 3) ? Rational.of(rng.big(0, 20), rng.big(1, 5)) : Rational.ZERO,
          });
        });
        view.sort((x, y) => (x.record.id < y.record.id ? -1 : x.record.id > y.record.id ? 1 : 0));
        const quantum = rng.big(1, 6);
        const cap = rng.chance(1, 2) ? null : rng.big(0, 30);
        const steps = rng.int(20, 80);
        for (let s = 0; s < steps && t.rounds < rounds; s++) {
          const h = rng.chance(1, 10) ? 0n : rng.big(1, 25);
          compare(t, view, quantum, cap, h);
          const g = oraclePick(view, quantum, cap, h).grant;
          view = view.map((e) => {
            let next = g !== null && e.record.id === g.attachment ? applyGrantToEdge(e, g.amount) : e;
            const out = next.summary.issued - next.summary.returned - next.summary.spent;
            if (out > 0n && rng.chance(1, 2)) next = withChanges(next, { spent: next.summary.spent + rng.big(1, Number(out)) });
            const out2 = next.summary.issued - next.summary.returned - next.summary.spent;
            if (out2 > 0n && rng.chance(1, 6)) next = withChanges(next, { returned: next.summary.returned + rng.big(1, Number(out2)) });
            if (rng.chance(1, 8)) {
              next = withChanges(next, {
                demand: rng.chance(1, 3)
                  ? { targetOutstanding: 0n, maximumUsefulGrant: 0n }
                  : { targetOutstanding: rng.big(0, 40), maximumUsefulGrant: rng.big(0, 12) },
              });
            }
            return next;
          });
        }
      }
    } catch (err) {
      throw new Error(`oracle sweep failed with seed ${rng.seed}: ${String(err)}`);
    }
    expect(t.mismatches, `seed ${rng.seed}`).toEqual([]);
    expect(t.rounds).toBe(rounds);
    expect(t.reached * 2, `seed ${rng.seed}: too few rounds reached eligibility`).toBeGreaterThan(t.rounds);
  });
});
