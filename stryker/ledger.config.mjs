import { strykerConfig } from "./base.mjs";

export default strykerConfig({
  name: "ledger",
  mutate: ["packages/ledger/src/**/*.ts"],
  tests: ["packages/ledger/test/**/*.test.ts"],
  // The README check compares the README's code block with examples/readme.ts and runs that file in a child
  // process: it judges the docs, and a child process per mutant would be slow; the example's calls are
  // exercised by the other suites.
  exclude: ["packages/ledger/test/impl-readme.test.ts"],
  env: { HEDDLE_RUNS: "60" },
});
