import { describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Rational } from "@heddle/ledger";
import { HeddlePolicy } from "../src/index.ts";
import type { PolicyConfig, PolicyEdge } from "../src/index.ts";
import { applyGrantToEdge } from "../src/grant-application.ts";
import { edge, withChanges } from "./edge-builder.ts";
import { SeededRandom } from "./seeded-random.ts";

const FIXTURE = fileURLToPath(new URL("./fixtures/determinism-vector.txt", import.meta.url));
const SEED = 424242;

/**
 * The golden scenario: a fixed-seed generator perturbs demand, spend and return around 240 single
 * picks and 12 allocation rounds over six edges with ratio weights, fractional seats and offsets.
 * Every decision, and every edge's `ev` after it, is written out as text.
 */
function scenario(): string {
  const rng = new SeededRandom(SEED);
  const lines: string[] = [`# @heddle/policy determinism vector, seed ${SEED}; regenerate only on a deliberate policy change`];
  let view: PolicyEdge[] = ["alpha", "Beta", "beta", "g10", "g9", "zeta"].sort().map((id) =>
    edge(id, {
      w: [rng.big(1, 9), rng.big(1, 5)],
      gauge: rng.chance(1, 6) ? null : [Rational.of(rng.big(0, 40), rng.big(1, 7)), 0n],
      demand: [rng.big(0, 60), rng.big(0, 15)],
      offset: rng.chance(1, 3) ? Rational.of(rng.big(0, 9), rng.big(1, 4)) : Rational.ZERO,
    }),
  );
  const config: PolicyConfig = { quantum: 5n, perChildOutstandingCap: 40n };
  const perturb = (): void => {
    view = view.map((e) => {
      let next = e;
      const out = next.summary.issued - next.summary.returned - next.summary.spent;
      if (out > 0n && rng.chance(1, 2)) next = withChanges(next, { spent: next.summary.spent + rng.big(1, Number(out)) });
      const out2 = next.summary.issued - next.summary.returned - next.summary.spent;
      if (out2 > 0n && rng.chance(1, 8)) next = withChanges(next, { returned: next.summary.returned + rng.big(1, Number(out2)) });
      if (rng.chance(1, 6)) {
        next = withChanges(next, {
          demand: rng.chance(1, 4)
            ? { targetOutstanding: 0n, maximumUsefulGrant: 0n }
            : { targetOutstanding: rng.big(0, 60), maximumUsefulGrant: rng.big(0, 15) },
        });
      }
      return next;
    });
  };
  const evs = (): string => view.map((e) => `${e.record.id}=${HeddlePolicy.effectiveVirtualService(e)}`).join(" ");
  for (let i = 0; i < 240; i++) {
    const h = rng.chance(1, 12) ? 0n : rng.big(1, 30);
    const g = HeddlePolicy.pick(view, config, h);
    if (g !== null) view = view.map((e) => (e.record.id === g.attachment ? applyGrantToEdge(e, g.amount) : e));
    lines.push(`pick ${i} h=${h} -> ${g === null ? "null" : `${g.attachment}:${g.amount}`} | ${evs()}`);
    perturb();
  }
  for (let r = 0; r < 12; r++) {
    const h = rng.big(0, 120);
    const grants = HeddlePolicy.allocate(view, config, h, 100_000);
    for (const g of grants) view = view.map((e) => (e.record.id === g.attachment ? applyGrantToEdge(e, g.amount) : e));
    lines.push(`allocate ${r} h=${h} -> ${grants.map((g) => `${g.attachment}:${g.amount}`).join(" ") || "none"} | ${evs()}`);
    perturb();
  }
  return lines.join("\n") + "\n";
}

describe("determinism vector", () => {
  it("reproduces the checked-in fixture byte for byte", () => {
    const text = scenario();
    if (process.env["HEDDLE_REGENERATE_VECTOR"] === "1") writeFileSync(FIXTURE, text);
    const fixture = readFileSync(FIXTURE, "utf8");
    expect(text).toBe(fixture);
    const picks = text.split("\n").filter((l) => l.startsWith("pick ") && !l.includes("-> null"));
    expect(picks.length).toBeGreaterThanOrEqual(100);
  });
});
