import { strykerConfig } from "./base.mjs";

// The Raft core: the pure state machine and what it is built from. The storage back ends (WAL files,
// SQLite, their workers) and the transport are I/O shells tested by process tests, not by the fast suite.
export default strykerConfig({
  name: "raft",
  mutate: [
    "packages/governed/src/raft/**/*.ts",
    "!packages/governed/src/raft/{sqlite-storage,sqlite-worker,wal-files,wal-log,wal-records,wal-storage,wal-worker,transport}.ts",
  ],
  tests: ["packages/governed/test/**/*.test.ts"],
  // Process, etcd and control-plane suites: slow, and they judge other code than the Raft core.
  exclude: [
    "packages/governed/test/*processes*.test.ts",
    "packages/governed/test/*etcd*.test.ts",
    "packages/governed/test/control-*.test.ts",
    "packages/governed/test/wal-storage.test.ts",
    "packages/governed/test/*readme*.test.ts",
  ],
  env: {
    HEDDLE_RUNS: "60",
    HEDDLE_RAFT_MODEL_RUNS: "60",
    HEDDLE_RAFT_SEEDS: "60",
    HEDDLE_RAFT_DRIVER_SEEDS: "6",
    HEDDLE_RAFT_SIM_DISK: "memory",
    HEDDLE_CLAIMS_SEEDS: "20",
  },
});
