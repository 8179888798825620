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
    // The direct unit tests written for the survivors of earlier runs (issue 19), one area each.
    "replication-peer-directory.test.ts",
    "replication-state-transfers.test.ts",
    "replication-inbound-acks-and-gaps.test.ts",
    "replication-inbound-cursors.test.ts",
    "replication-core-refusals-and-bounds.test.ts",
    "replication-driver-value-too-large.test.ts",
    "replication-config-validation.test.ts",
    "replication-outbound-deltas.test.ts",
    "replication-wire-envelope.test.ts",
    "replication-core-clock-and-accessors.test.ts",
    "replication-core-receive.test.ts",
    "replication-core-send.test.ts",
    "replication-inbound-resync-and-deadlines.test.ts",
    "replication-peer-directory-cost.test.ts",
    "replication-driver-shell.test.ts",
    "replication-wire-layout.test.ts",
    // about a CPU-second: builds 4,097 oversize groups
    "replication-value-too-large-seen-set.test.ts",
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
