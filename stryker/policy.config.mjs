import { strykerConfig } from "./base.mjs";

export default strykerConfig({
  name: "policy",
  mutate: ["packages/policy/src/**/*.ts"],
  tests: ["packages/policy/test/**/*.test.ts"],
  env: { HEDDLE_RUNS: "60", HEDDLE_ORACLE_ROUNDS: "10000", HEDDLE_SIM_SCENARIOS: "4" },
});
