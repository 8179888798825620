/** `@heddle/cli` — the `heddle` command; its demo is usable as a library too. */
export { runDemo, TIMELINE, SETTLE_TIMEOUT_MS } from "./demo/run.ts";
export { parseDemoArgs, DEMO_HELP, DEMO_LIMITS, DemoUsageError } from "./demo/options.ts";
export type { DemoOptions } from "./demo/options.ts";
