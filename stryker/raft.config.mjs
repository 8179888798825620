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
    "raft-membership-single-step.test.ts",
    "raft-frame-hygiene-ceiling.test.ts",
    "raft-transfer-timeout-now.test.ts",
    "raft-commit-notice-replicating.test.ts",
    "raft-config-index-compaction.test.ts",
    "raft-elections-rounds-and-quorum.test.ts",
    "raft-frame-hygiene-terms.test.ts",
    "raft-codec-sizes-and-refusals.test.ts",
    "raft-config-validation.test.ts",
    "raft-proposal-dedup-cache.test.ts",
    "raft-value-comparisons.test.ts",
    "raft-restore-validation.test.ts",
    "raft-abort-held-and-coalesced.test.ts",
    "raft-proposal-dedup-kind.test.ts",
    "raft-core-views.test.ts",
    "raft-rare-frames.test.ts",
    "raft-timer-deadlines.test.ts",
    "raft-forward-cap.test.ts",
    "raft-transfer-target-voter.test.ts",
    "raft-pending-limits.test.ts",
    "raft-forwards-higher-term.test.ts",
    "raft-leader-call-refusals.test.ts",
    "raft-step-answers-and-traces.test.ts",
    "raft-durable-log.test.ts",
    "raft-elections-timer-lease-votes.test.ts",
    "raft-ready-contents.test.ts",
    "raft-transfer-after-stepdown.test.ts",
    "raft-elections-outcomes.test.ts",
    "raft-forwards-on-prevote.test.ts",
    "raft-stepdown-answers.test.ts",
    "raft-leader-appends-storage.test.ts",
    "raft-log-bookkeeping.test.ts",
    "raft-leader-sends.test.ts",
    "raft-append-rejections.test.ts",
    "raft-conflict-hint-floor.test.ts",
    "raft-append-answers.test.ts",
    "raft-commit-answers.test.ts",
    "raft-trace-and-membership-bounds.test.ts",
    "raft-commit-side-effects.test.ts",
    "raft-follower-snapshot-floor.test.ts",
    "raft-snapshot-sending.test.ts",
    "raft-forwards-answered-once.test.ts",
    "raft-snapshot-install.test.ts",
    "raft-vote-kept-and-first-ready.test.ts",
    "raft-frame-hygiene-append-entries.test.ts",
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
