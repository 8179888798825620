import { strykerConfig } from "./base.mjs";

export default strykerConfig({
  name: "ledger",
  mutate: ["packages/ledger/src/**/*.ts"],
  tests: ["packages/ledger/test/**/*.test.ts"],
  env: { HEDDLE_RUNS: "60" },
});
