// What a CLI call that only talks to a daemon's API loads. `heddle status` and its siblings read a config file
// (`--config`) and send one HTTP request; they must not load the node, its libp2p seam or the replication
// engine, which cost about a second of CPU at every call when the config loader pulled them in through
// `@heddle/node`'s index for one function. The child process records every module URL it resolves.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const CLI_DIR = fileURLToPath(new URL("..", import.meta.url));

const PROBE = `
import { registerHooks } from "node:module";
const seen = [];
registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); seen.push(r.url); return r; } });
await import(process.argv[1]);
process.stdout.write(JSON.stringify(seen));
`;

/** Every module URL resolved while importing `specifier` from the CLI package, in a fresh process. */
function resolvedBy(specifier: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--input-type=module", "-e", PROBE, specifier], { cwd: CLI_DIR, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`probe of ${specifier} failed: ${stderr}`));
      else resolve(JSON.parse(stdout) as string[]);
    });
  });
}

const heavy = (urls: string[]): string[] => urls.filter((u) => /\/(libp2p|@libp2p|@chainsafe)\/|\/packages\/(seam|node\/src\/(index|heddle-node|replication))\b/.test(u));

describe("the API commands' start-up", () => {
  // main.ts itself: its top-level imports are what every command pays (its `import.meta.main` guard keeps the
  // import from running a command)
  for (const specifier of ["@heddle/daemon/config", "./src/commands/api-commands.ts", "./src/main.ts"]) {
    it(`${specifier} loads no node, seam or libp2p module`, async () => {
      const urls = await resolvedBy(specifier);
      // the probe saw the import itself (a probe that records nothing would pass vacuously)
      expect(urls.some((u) => u.includes("/packages/daemon/src/config.ts"))).toBe(true);
      expect(heavy(urls)).toEqual([]);
    }, 60_000);
  }

  it("the filter would see the node if it were loaded", async () => {
    const urls = await resolvedBy("@heddle/node");
    expect(heavy(urls).length).toBeGreaterThan(0);
  }, 60_000);
});
