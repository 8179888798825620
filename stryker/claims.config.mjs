import { strykerConfig } from "./base.mjs";

export default strykerConfig({
  name: "claims",
  mutate: ["packages/claims/src/**/*.ts"],
  tests: ["packages/claims/test/**/*.test.ts"],
  env: { HEDDLE_RUNS: "60", HEDDLE_SIM_RUNS: "10" },
});
