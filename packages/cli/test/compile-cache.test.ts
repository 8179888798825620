// The CLI runs its TypeScript from source, so compiling it is most of a start; main.ts turns on Node's module
// compile cache, and `heddle start` writes it as soon as the peer is up — a peer that is killed (SIGKILL, OOM,
// power) never reaches the clean exit at which Node would otherwise write it, and its restart would compile
// everything again.
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { eventually, heddle, heddleBackground, type Background } from "./support/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "heddle-compile-cache-"));
const started: Background[] = [];
afterAll(() => {
  for (const b of started) b.proc.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Bytes of cache files under `d` (Node keeps one subdirectory per Node version and V8 flags). */
function cacheBytes(d: string): number {
  let n = 0;
  for (const name of readdirSync(d, { recursive: true }) as string[]) {
    const s = statSync(join(d, name), { throwIfNoEntry: false }); // a temporary file Node just renamed
    if (s?.isFile() === true) n += s.size;
  }
  return n;
}

describe("the module compile cache", () => {
  it("a command that exits writes it to NODE_COMPILE_CACHE, and NODE_DISABLE_COMPILE_CACHE=1 turns it off", async () => {
    const on = join(dir, "on");
    const off = join(dir, "off");
    expect((await heddle(["--help"], { env: { NODE_COMPILE_CACHE: on } })).code).toBe(0);
    expect(cacheBytes(on)).toBeGreaterThan(0);
    expect((await heddle(["--help"], { env: { NODE_COMPILE_CACHE: off, NODE_DISABLE_COMPILE_CACHE: "1" } })).code).toBe(0);
    let wrote = true;
    try {
      wrote = cacheBytes(off) > 0;
    } catch {
      wrote = false; // not even created
    }
    expect(wrote).toBe(false);
  }, 60_000);

  it("heddle start writes it once the peer is up, so a peer killed with SIGKILL leaves it behind", async () => {
    const cluster = join(dir, "cluster");
    const init = await heddle(["init", "--peers", "1", "--mode", "static", "--supply", "100", "--tree", "a=1", cluster], { env: { NODE_DISABLE_COMPILE_CACHE: "1" } });
    expect(init.code, init.err).toBe(0);
    const cache = join(dir, "start");
    const peer = heddleBackground(["start", "--config", join(cluster, "peer-1", "heddle.json")], { env: { NODE_COMPILE_CACHE: cache } });
    started.push(peer);
    await peer.waitFor(/heddle peer started/);
    // the daemon's whole module graph is far more than the CLI's own few files; without the flush nothing is
    // written while the peer runs, and this waits in vain
    const big = await eventually(async () => (cacheBytes(cache) > 1_000_000 ? true : undefined), 30_000, "a compile cache over 1 MB");
    expect(big).toBe(true);
    peer.proc.kill("SIGKILL");
    await peer.exited;
    expect(cacheBytes(cache)).toBeGreaterThan(1_000_000);
  }, 60_000);
});
