// Node's module compile cache for the `heddle` command.
//
// The CLI is TypeScript run from source, so compiling it is most of a start: a daemon's imports cost ~1.9 CPU-s
// cold and ~1.2 CPU-s with V8's code cache (README, "start-up"). Node's own default directory,
// os.tmpdir()/node-compile-cache, is shared by every user of the machine, and whoever creates it first owns it;
// Node checks the cached code against each source file's checksum, which guards against staleness, not against
// tampering. So unless the user names a directory (NODE_COMPILE_CACHE), heddle keeps its cache in the user's
// own cache directory, created private (0700).
import { enableCompileCache } from "node:module";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** What decides where the cache goes, or whether there is one. */
export interface CompileCacheEnv {
  readonly NODE_COMPILE_CACHE?: string | undefined;
  readonly NODE_DISABLE_COMPILE_CACHE?: string | undefined;
  /** V8 coverage is collected: Node's docs say the cache makes it less precise. */
  readonly NODE_V8_COVERAGE?: string | undefined;
  readonly XDG_CACHE_HOME?: string | undefined;
}

/**
 * The compile cache decision: `null` for none (turned off, or coverage is being collected), `"env"` for the
 * directory the user named in NODE_COMPILE_CACHE (Node reads it itself), otherwise heddle's directory in the
 * user's cache: `$XDG_CACHE_HOME/heddle/node-compile-cache`, else `~/.cache/heddle/node-compile-cache`.
 */
export function compileCacheDirectory(env: CompileCacheEnv, home: string): string | "env" | null {
  if (env.NODE_DISABLE_COMPILE_CACHE !== undefined && env.NODE_DISABLE_COMPILE_CACHE !== "") return null;
  if (env.NODE_V8_COVERAGE !== undefined && env.NODE_V8_COVERAGE !== "") return null;
  if (env.NODE_COMPILE_CACHE !== undefined && env.NODE_COMPILE_CACHE !== "") return "env";
  const base = env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME.startsWith("/") ? env.XDG_CACHE_HOME : join(home, ".cache");
  return join(base, "heddle", "node-compile-cache");
}

/**
 * Turns the cache on as {@link compileCacheDirectory} decides. Never throws: the cache is an optimisation, and
 * an unwritable home (a service account without one) only means a slower start.
 */
export function enableHeddleCompileCache(env: CompileCacheEnv = process.env): void {
  let dir: string | "env" | null;
  try {
    dir = compileCacheDirectory(env, homedir());
  } catch {
    return; // no home directory to be found
  }
  if (dir === null) return;
  if (dir === "env") {
    enableCompileCache();
    return;
  }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch {
    return;
  }
  enableCompileCache(dir);
}
