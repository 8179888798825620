// Shared Stryker settings for heddle's pure cores. Each `<name>.config.mjs` beside this file names what to
// mutate and which tests judge the mutants; `node scripts/mutate.ts` runs one or all and prints the scores.
// Not part of CI or `pnpm test`: a full run takes tens of minutes per package on two cores.

// pnpm's isolated node_modules hides sibling packages from @stryker-mutator/core, so its default plugin glob
// ("@stryker-mutator/*") finds nothing: hand it the plugins' entry points resolved from here.
const plugins = ["@stryker-mutator/vitest-runner", "@stryker-mutator/typescript-checker"].map((p) => import.meta.resolve(p));

/**
 * @param {object} p
 * @param {string} p.name short package name, used for report and incremental file names
 * @param {string[]} p.mutate globs of the files to mutate (relative to the repo root)
 * @param {string[]} p.tests globs of the test files that judge the mutants
 * @param {string[]} [p.exclude] test globs left out (slow end-to-end / process tests)
 * @param {Record<string, string>} [p.env] reduced run counts for property tests and simulations
 * @param {string[]} [p.order] test file names (basenames), cheapest first: a mutant's covering files run in this
 *   order and the run stops at the first failure, so a mutant a quick file kills never waits for a slow one.
 *   Files not named run after these; an entry ending in `*` names every file starting with the rest. Without
 *   it vitest runs the largest (or slowest) files first.
 * @returns {import("@stryker-mutator/api/core").PartialStrykerOptions}
 */
export function strykerConfig({ name, mutate, tests, exclude = [], env = {}, order = [] }) {
  // The vitest runner's worker inherits this process's environment; stryker/vitest.config.ts reads these.
  process.env.HEDDLE_MUTATE_TESTS = tests.join(",");
  process.env.HEDDLE_MUTATE_EXCLUDE = exclude.join(",");
  process.env.HEDDLE_MUTATE_ORDER = order.join(",");
  for (const [k, v] of Object.entries(env)) process.env[k] ??= v;
  return {
    $schema: "../node_modules/@stryker-mutator/core/schema/stryker-schema.json",
    packageManager: "pnpm",
    plugins,
    mutate,
    testRunner: "vitest",
    vitest: { configFile: "stryker/vitest.config.ts", related: true },
    checkers: ["typescript"],
    tsconfigFile: `stryker/tsconfig.${name}.json`,
    typescriptChecker: { prioritizePerformanceOverAccuracy: true },
    coverageAnalysis: "perTest",
    // Two shared cores: one test process at a time (the script also runs Stryker under `nice`).
    concurrency: 1,
    // Load on the shared machine swings a lot; a generous factor keeps slow-but-surviving mutants from
    // being misread as timeouts (which would count as killed).
    timeoutFactor: 3,
    timeoutMS: 30_000,
    reporters: ["clear-text", "progress-append-only", "json", "html"],
    jsonReporter: { fileName: `reports/mutation/${name}.json` },
    htmlReporter: { fileName: `reports/mutation/${name}.html` },
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
    // Committed (not ignored): Stryker's own suggestion for sharing results, and here the only way a core too large
    // for one sitting (the Raft core: 3 000 mutants, hours) adds up across sittings on machines that do not persist.
    incrementalFile: `stryker/incremental/${name}.json`,
    tempDirName: ".stryker-tmp",
    cleanTempDir: true,
    ignorePatterns: ["reports", "stryker/incremental", ".ci-results", "coverage", "docs"],
    thresholds: { high: 90, low: 85, break: null },
  };
}
