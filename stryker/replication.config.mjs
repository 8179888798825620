import { strykerConfig } from "./base.mjs";

// The replication core (node.md §§7–10) in packages/node/src/replication, judged by the in-memory suites.
export default strykerConfig({
  name: "replication",
  mutate: ["packages/node/src/replication/**/*.ts"],
  tests: [
    "packages/node/test/replication*.test.ts",
    "packages/node/test/acceptance-core.test.ts",
    "packages/node/test/acceptance-chaos.test.ts",
    "packages/node/test/peer-bad-input.test.ts",
    "packages/node/test/heddle-node.test.ts",
    "packages/node/test/liveness.test.ts",
    "packages/node/test/wire.test.ts",
  ],
  // Cheapest first (measured one after another under equal load): direct unit tests, then the seeded suites.
  order: [
    "replication-mut-*",
    "replication-cursors.test.ts",
    "liveness.test.ts",
    "acceptance-core.test.ts",
    "heddle-node.test.ts",
    "peer-bad-input.test.ts",
    "replication-core-model.test.ts",
    "wire.test.ts",
    "replication.test.ts",
    "replication-model.test.ts",
    "acceptance-chaos.test.ts",
    "replication-chaos.test.ts",
  ],
  env: {
    HEDDLE_RUNS: "60",
    HEDDLE_MODEL_RUNS: "40",
    HEDDLE_CHAOS_SEEDS: "15",
    HEDDLE_SEEDS: "15",
    HEDDLE_BAD_INPUT_RUNS: "300",
  },
});
