import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

describe("examples/ledger-walkthrough", () => {
  it("runs to completion, conserves at every step and converges", () => {
    const main = fileURLToPath(new URL("./main.ts", import.meta.url));
    const out = execFileSync(process.execPath, [main], { encoding: "utf8" });
    expect(out).toContain("walkthrough complete: the books balance");
    expect(out).not.toContain("VIOLATED");
    expect(out).toContain("replicas equal after merge: ✓");
    // Both refusals in the partition are overspend attempts.
    expect(out.match(/refused \(InsufficientHoldings/g)?.length).toBe(2);
  });
});
