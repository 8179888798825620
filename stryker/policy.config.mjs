import { strykerConfig } from "./base.mjs";

export default strykerConfig({
  name: "policy",
  mutate: ["packages/policy/src/**/*.ts"],
  tests: ["packages/policy/test/**/*.test.ts"],
  // The oracle's exhaustive grid (1.7M cases, ~30 s) at every 31st pair: a surviving mutant runs every test
  // that covers it, and validation code is covered by all of them.
  env: { HEDDLE_RUNS: "60", HEDDLE_ORACLE_ROUNDS: "10000", HEDDLE_ORACLE_GRID_STRIDE: "31", HEDDLE_SIM_SCENARIOS: "4" },
});
