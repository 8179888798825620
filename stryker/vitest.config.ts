import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

// Vitest settings for Stryker runs only (see stryker/base.mjs): the test files come from the Stryker config
// of the package being mutated, through HEDDLE_MUTATE_TESTS / HEDDLE_MUTATE_EXCLUDE.
const list = (v: string | undefined): string[] => (v ?? "").split(",").filter((s) => s !== "");

const include = list(process.env["HEDDLE_MUTATE_TESTS"]);
if (include.length === 0) throw new Error("stryker/vitest.config.ts: HEDDLE_MUTATE_TESTS is empty; run through scripts/mutate.ts");

const order = list(process.env["HEDDLE_MUTATE_ORDER"]);

/**
 * Runs a mutant's covering test files cheapest first (the config's `order`), keeping vitest's own order among
 * files the list does not name, after the named ones. Stryker stops a mutant's run at its first failing test, so
 * this decides how long a killed mutant takes; vitest's default puts the largest or slowest files first.
 */
class CheapestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    // An entry ending in "*" names every file whose name starts with what precedes it.
    const rank = (f: TestSpecification): number => {
      const name = basename(f.moduleId);
      const i = order.findIndex((o) => (o.endsWith("*") ? name.startsWith(o.slice(0, -1)) : name === o));
      return i === -1 ? order.length : i;
    };
    return base.map((f, i) => ({ f, i, r: rank(f) })).sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.f);
  }
}

export default defineConfig({
  test: {
    include,
    exclude: [...configDefaults.exclude, ...list(process.env["HEDDLE_MUTATE_EXCLUDE"])],
    ...(order.length > 0 ? { sequence: { sequencer: CheapestFirst } } : {}),
    // One fixed fast-check seed for properties that name none (see the file).
    setupFiles: [fileURLToPath(new URL("./fast-check-seed.ts", import.meta.url))],
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
