// The CLI runs its TypeScript from source, so compiling it is most of a start; main.ts turns on Node's module
// compile cache (src/compile-cache.ts), and `heddle start` writes it as soon as the peer is up — a peer that is
// killed (SIGKILL, OOM, power) never reaches the clean exit at which Node would otherwise write it, and its
// restart would compile everything again.
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compileCacheDirectory } from "../src/compile-cache.ts";
import { eventually, heddle, heddleBackground, type Background } from "./support/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "heddle-compile-cache-"));
const started: Background[] = [];
afterAll(() => {
  for (const b of started) b.proc.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** The children's cache settings, whatever the test runner's own environment says (undefined: left out). */
const CLEAN = { NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: undefined, NODE_V8_COVERAGE: undefined, XDG_CACHE_HOME: undefined };

/** Bytes of cache files under `d` (Node keeps one subdirectory per Node version and V8 flags); 0 if `d` is absent. */
function cacheBytes(d: string): number {
  let n = 0;
  let names: string[];
  try {
    names = readdirSync(d, { recursive: true }) as string[];
  } catch {
    return 0;
  }
  for (const name of names) {
    const s = statSync(join(d, name), { throwIfNoEntry: false }); // a temporary file Node just renamed
    if (s?.isFile() === true) n += s.size;
  }
  return n;
}

describe("where the compile cache goes", () => {
  it("the user's own cache directory by default, never the machine-wide temporary directory", () => {
    expect(compileCacheDirectory({}, "/home/ada")).toBe("/home/ada/.cache/heddle/node-compile-cache");
    expect(compileCacheDirectory({ XDG_CACHE_HOME: "/var/cache/ada" }, "/home/ada")).toBe("/var/cache/ada/heddle/node-compile-cache");
    // the XDG base directory spec ignores a relative path
    expect(compileCacheDirectory({ XDG_CACHE_HOME: "cache" }, "/home/ada")).toBe("/home/ada/.cache/heddle/node-compile-cache");
  });

  it("NODE_COMPILE_CACHE names it; NODE_DISABLE_COMPILE_CACHE or V8 coverage turn it off", () => {
    expect(compileCacheDirectory({ NODE_COMPILE_CACHE: "/x" }, "/home/ada")).toBe("env");
    expect(compileCacheDirectory({ NODE_COMPILE_CACHE: "/x", NODE_DISABLE_COMPILE_CACHE: "1" }, "/home/ada")).toBeNull();
    expect(compileCacheDirectory({ NODE_V8_COVERAGE: "/tmp/cov" }, "/home/ada")).toBeNull();
    expect(compileCacheDirectory({ NODE_COMPILE_CACHE: "", NODE_DISABLE_COMPILE_CACHE: "" }, "/home/ada")).toBe("/home/ada/.cache/heddle/node-compile-cache");
  });
});

describe("the module compile cache of the heddle command", () => {
  it("a command that exits writes it under the user's home, private to the user", async () => {
    const home = join(dir, "home");
    expect((await heddle(["--help"], { env: { ...CLEAN, HOME: home } })).code).toBe(0);
    const cache = join(home, ".cache", "heddle", "node-compile-cache");
    expect(cacheBytes(cache)).toBeGreaterThan(0);
    expect(statSync(cache).mode & 0o777).toBe(0o700);
  }, 120_000);

  it("NODE_COMPILE_CACHE names the directory, and NODE_DISABLE_COMPILE_CACHE=1 writes none", async () => {
    const named = join(dir, "named");
    const off = join(dir, "off");
    const home = join(dir, "home-off");
    expect((await heddle(["--help"], { env: { ...CLEAN, HOME: home, NODE_COMPILE_CACHE: named } })).code).toBe(0);
    expect(cacheBytes(named)).toBeGreaterThan(0);
    expect((await heddle(["--help"], { env: { ...CLEAN, HOME: home, NODE_COMPILE_CACHE: off, NODE_DISABLE_COMPILE_CACHE: "1" } })).code).toBe(0);
    expect(cacheBytes(off)).toBe(0);
    expect(cacheBytes(join(home, ".cache"))).toBe(0);
  }, 120_000);

  it("heddle start writes it once the peer is up, so a peer killed with SIGKILL leaves it behind", async () => {
    const cluster = join(dir, "cluster");
    const init = await heddle(["init", "--peers", "1", "--mode", "static", "--supply", "100", "--tree", "a=1", cluster], { env: { ...CLEAN, NODE_DISABLE_COMPILE_CACHE: "1" } });
    expect(init.code, init.err).toBe(0);
    const cache = join(dir, "start");
    const peer = heddleBackground(["start", "--config", join(cluster, "peer-1", "heddle.json")], { env: { ...CLEAN, NODE_COMPILE_CACHE: cache } });
    started.push(peer);
    await peer.waitFor(/heddle peer started/, 40_000);
    // the daemon's whole module graph is far more than the CLI's own few files; without the flush nothing is
    // written while the peer runs, and this waits in vain
    const big = await eventually(async () => (cacheBytes(cache) > 1_000_000 ? true : undefined), 30_000, "a compile cache over 1 MB");
    expect(big).toBe(true);
    peer.proc.kill("SIGKILL");
    await peer.exited;
    expect(cacheBytes(cache)).toBeGreaterThan(1_000_000);
  }, 120_000);
});
