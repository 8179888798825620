import { strykerConfig } from "./base.mjs";

// The Raft core: the pure state machine (`core.ts`: tick / step / ready / advance, no I/O, no timers) and
// the pure pieces it is built from — the frame codec and its size accounting, the config validation, the
// leader's proposal-dedup cache, the value types and the restore error. Left out: the driver (`node.ts`, the
// imperative shell that owns timers, storage and transport calls), the storage back ends (WAL files, SQLite,
// their workers, the in-memory store), the transport, the WAL checksum, and the linearizability checker
// (a test oracle, not protocol code).
export default strykerConfig({
  name: "raft",
  mutate: [
    "packages/governed/src/raft/core.ts",
    "packages/governed/src/raft/codec.ts",
    "packages/governed/src/raft/config.ts",
    "packages/governed/src/raft/dedup.ts",
    "packages/governed/src/raft/types.ts",
    "packages/governed/src/raft/errors.ts",
  ],
  tests: ["packages/governed/test/**/*.test.ts"],
  // Process, etcd and control-plane suites: slow, and they judge other code than the Raft core.
  exclude: [
    "packages/governed/test/*processes*.test.ts",
    "packages/governed/test/*etcd*.test.ts",
    "packages/governed/test/control-*.test.ts",
    "packages/governed/test/wal-storage*.test.ts",
    // The frame fuzzer runs governed peers over libp2p on real timers: minutes per run, and not deterministic.
    "packages/governed/test/fuzz-*.test.ts",
    "packages/governed/test/*readme*.test.ts",
    "packages/governed/test/linearizability.test.ts",
  ],
  // Cheapest first (seconds for the whole file, quiet machine): most core.ts mutants die in the regressions file.
  order: [
    "raft-errors.test.ts",
    "vote-rules.test.ts",
    "raft-regressions.test.ts",
    // One file per classified survivor area: small hand-built scenarios with no seeded loops, and the mutants they
    // were written for survive every file above, so they go before the seeded suites.
    "raft-mut-*",
    "core-model.test.ts",
    "codec.test.ts",
    "proposal-dedup.test.ts",
    "driver-simulation.test.ts",
    "raft-node.test.ts",
    "claims-on-raft.test.ts",
    "simulation.test.ts",
  ],
  // A surviving mutant of core.ts runs every test that covers it (nearly all of them), so the seeded suites
  // are cut to what a run of ~1 000 mutants can afford on two shared cores.
  env: {
    HEDDLE_RUNS: "60",
    HEDDLE_RAFT_MODEL_RUNS: "60",
    HEDDLE_RAFT_SEEDS: "60",
    HEDDLE_RAFT_DRIVER_SEEDS: "6",
    HEDDLE_RAFT_SIM_DISK: "memory",
    HEDDLE_CLAIMS_SEEDS: "8",
  },
});
