import { configDefaults, defineConfig } from "vitest/config";

// Vitest settings for Stryker runs only (see stryker/base.mjs): the test files come from the Stryker config
// of the package being mutated, through HEDDLE_MUTATE_TESTS / HEDDLE_MUTATE_EXCLUDE.
const list = (v: string | undefined): string[] => (v ?? "").split(",").filter((s) => s !== "");

const include = list(process.env["HEDDLE_MUTATE_TESTS"]);
if (include.length === 0) throw new Error("stryker/vitest.config.ts: HEDDLE_MUTATE_TESTS is empty; run through scripts/mutate.ts");

export default defineConfig({
  test: {
    include,
    exclude: [...configDefaults.exclude, ...list(process.env["HEDDLE_MUTATE_EXCLUDE"])],
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
