// The daemon's V8 young generation, pinned to one size.
//
// Left to V8, the young generation (two semi-spaces) of `heddle start` starts at 64 MiB after module loading,
// shrinks to 4 MiB when V8's memory reducer runs, then doubles back (8, 16, 32, 64 MiB) under steady load —
// all of it resident. The 10-minute soak (bench/soak.ts) measured exactly that: resident memory of each daemon
// stepping by ~50 MiB minutes into the run while the old generation, external memory and the native part stayed
// flat. It is bounded, but it makes a daemon's footprint depend on how long ago V8 last shrank it. Pinning the
// semi-space (minimum = maximum) makes the young generation a constant, so resident memory tracks what the
// daemon keeps. The flags exist only on the command line (`--min-semi-space-size` is refused in NODE_OPTIONS,
// and neither takes effect once the heap exists), so `heddle start` re-executes itself in place — same pid,
// same stdio — with them added, before it opens anything.

/** Each semi-space of the daemon's young generation, in MiB (the young generation holds two: 16 MiB). */
export const DAEMON_SEMI_SPACE_MIB = 8;

const FLAGS = [`--min-semi-space-size=${DAEMON_SEMI_SPACE_MIB}`, `--max-semi-space-size=${DAEMON_SEMI_SPACE_MIB}`] as const;

/** What decides the re-execution: the process's command line and environment. */
export interface ProcessLaunch {
  /** `process.argv`: the node binary, the script, then the command's arguments. */
  readonly argv: readonly string[];
  /** `process.execArgv`: node's own options. */
  readonly execArgv: readonly string[];
  /** `process.env.NODE_OPTIONS`. */
  readonly nodeOptions: string | undefined;
}

const SIZES_YOUNG_GENERATION = /--(?:min|max)[-_]semi[-_]space[-_]size(?:=|\s|$)|--max-young-generation-size/;

/**
 * The node options to re-execute `heddle start` with so that its young generation is pinned, or `null` when
 * nothing should change: another command, or the young generation is already sized by whoever launched the
 * process (its own flags in `execArgv` or `NODE_OPTIONS` win — that is also how to choose another size).
 * After one re-execution the flags are in `execArgv`, so this returns `null`: it cannot loop.
 */
export function pinnedYoungGenerationExecArgv(p: ProcessLaunch): string[] | null {
  if (p.argv[2] !== "start") return null;
  if (p.execArgv.some((a) => SIZES_YOUNG_GENERATION.test(a)) || SIZES_YOUNG_GENERATION.test(p.nodeOptions ?? "")) return null;
  return [...FLAGS, ...p.execArgv];
}

/**
 * Re-executes this process in place (`process.execve`: same pid, same open stdio) with the young generation
 * pinned, when {@link pinnedYoungGenerationExecArgv} says so. Returns only when it did not re-execute: on
 * platforms without `execve` (Windows) the daemon runs with V8's default sizing.
 */
export function pinYoungGeneration(): void {
  const execArgv = pinnedYoungGenerationExecArgv({ argv: process.argv, execArgv: process.execArgv, nodeOptions: process.env["NODE_OPTIONS"] });
  if (execArgv === null || typeof process.execve !== "function" || process.platform === "win32") return;
  process.execve(process.execPath, [process.execPath, ...execArgv, ...process.argv.slice(1)], process.env);
}
