// Runs the root README's "Run your own cluster" block as written, in bash, from the repository root.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The first ```sh block under the heading `## Run your own cluster`. */
export function clusterBlock(readme: string): string {
  const at = readme.indexOf("## Run your own cluster");
  if (at < 0) throw new Error("README has no 'Run your own cluster' section");
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (m === null) throw new Error("the section has no sh block");
  return m[1]!;
}

describe("README: Run your own cluster", () => {
  it("runs as written", async () => {
    const block = clusterBlock(readFileSync(`${ROOT}README.md`, "utf8"));
    expect(block).toContain("heddle init --peers 3");
    expect(block).toContain("curl");
    // Whatever happens, stop the daemons the block started and remove its folder.
    const script = `set -euo pipefail\ntrap 'code=$?; heddle down cluster >/dev/null 2>&1 || true; cd /; rm -rf "$HEDDLE_README_DIR"; exit $code' EXIT\n${block.replace('cd "$(mktemp -d)"', 'cd "$(mktemp -d)"; HEDDLE_README_DIR=$PWD')}`;
    const r = await new Promise<{ code: number; out: string; err: string }>((resolve) =>
      execFile("bash", ["-c", script], { cwd: ROOT, env: { ...process.env, HEDDLE_CONFIG: "" }, maxBuffer: 16 << 20, timeout: 240_000 }, (err, out, errOut) =>
        resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), out, err: errOut }),
      ),
    );
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    expect(r.out).toMatch(/3 peer\(s\) running in the background/);
    expect(r.out).toMatch(/2 of 2 other peer\(s\) connected/);
    expect(r.out).toMatch(/"charged":"7","outcome":"charged"/);
    expect(r.out).toMatch(/heddle down: stopped peer-1, peer-2, peer-3/);
    expect(r.out.match(/^mint 1000: applied at index/gm)).toHaveLength(3);
    expect(r.out).toMatch(/tenant-b now hangs under root with weight 2 \(edge root→tenant-b@2\); root→tenant-b is retired/);
    expect(r.out).toMatch(/├─ tenant-a\s+3\s+60\.0%/);
    expect(r.out).toMatch(/└─ tenant-b\s+2\s+40\.0%/);
    // the dashboard's address with the token in its fragment, and the fair shares in /metrics (3:2 after the reshape)
    expect(r.out).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dashboard#token=\S{16,}$/m);
    expect(r.out).toMatch(/^heddle_group_fair_share\{edge="[^"]+",parent="root",child="tenant-a"\} 0\.6$/m);
    expect(r.out).toMatch(/^heddle_group_fair_share\{edge="[^"]+",parent="root",child="tenant-b"\} 0\.4$/m);
  }, 300_000); // above the script's own 240 s budget: ~20 CLI processes start in turn, each CPU-starved on a busy machine
});
