import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

function heddle(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), out: stdout + stderr });
    });
  });
}

describe("heddle demo, end to end", () => {
  it("documents its options", async () => {
    const r = await heddle(["demo", "--help"]);
    expect(r.code).toBe(0);
    for (const flag of ["--peers", "--duration", "--seed", "--weights", "--dashboard-port", "--no-dashboard"]) expect(r.out).toContain(flag);
  });

  it("refuses a bad option with exit status 2", async () => {
    const r = await heddle(["demo", "--peers", "1"]);
    expect(r.code).toBe(2);
    expect(r.out).toContain("--peers");
  });

  it("runs 3 peer processes through a cut, a SIGKILL and a restart, and every check passes", async () => {
    const r = await heddle(["demo", "--peers", "3", "--duration", "12", "--seed", "3", "--weights", "2:1", "--no-live"]);
    expect(r.out).toContain("peer 1 cut off");
    expect(r.out).toContain("peer 2 killed with SIGKILL");
    expect(r.out).toContain("peer 2 restarted from its SQLite store");
    expect(r.out).toContain("every peer holds byte-identical ledgers");
    expect(r.out).not.toContain("✗");
    expect(r.out).toContain("demo passed");
    // peer 0 served its dashboard for the run, and said where
    expect(r.out).toMatch(/dashboard of peer 0 \(open it in a browser\): http:\/\/127\.0\.0\.1:\d+\/dashboard#token=[A-Za-z0-9_-]{20,}/);
    expect(r.code).toBe(0);
  }, 120_000);

  it("--governed: supply and tree through the Raft log, the tenant weights reshaped midway by the recipe, and every check passes", async () => {
    const r = await heddle(["demo", "--governed", "--peers", "3", "--duration", "14", "--seed", "5", "--weights", "3:1", "--no-live"]);
    expect(r.out).toContain("minted and the tree prepared and activated through the log");
    expect(r.out).toContain("reshape: tenant weights 3:1 → 1:3");
    expect(r.out).toContain("tenants now 1:3");
    expect(r.out).toContain("peer 2 restarted from its SQLite store");
    expect(r.out).toMatch(/root {6}tenant-a \(gen 2\) +1 /);
    expect(r.out).toContain("✓ the tenant weights changed midway by the reshape recipe: now 1:3");
    expect(r.out).not.toContain("✗");
    expect(r.out).toContain("demo passed");
    expect(r.out).toMatch(/dashboard of peer 0 \(open it in a browser\): http:\/\/127\.0\.0\.1:\d+\/dashboard#token=[A-Za-z0-9_-]{20,}/);
    expect(r.code).toBe(0);
  }, 300_000);
});
