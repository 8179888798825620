/** `@heddle/cli` — the `heddle` command; its demo, bench and reshape recipe are usable as a library too. */
export { runDemo, TIMELINE, SETTLE_TIMEOUT_MS } from "./demo/run.ts";
export { parseDemoArgs, DEMO_HELP, DEMO_LIMITS, DemoUsageError } from "./demo/options.ts";
export type { DemoOptions } from "./demo/options.ts";
export { main, USAGE } from "./main.ts";
export { EXIT, UsageError } from "./exit-codes.ts";
export type { ExitCode } from "./exit-codes.ts";
export { benchPairs } from "./bench.ts";
export type { PairsBenchResult, PairsBenchOptions } from "./bench.ts";
export { reshape } from "./commands/reshape.ts";
export type { Io } from "./commands/io.ts";
