import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

describe("README example", () => {
  it("runs and prints what the README says", () => {
    const out = execFileSync(process.execPath, [join(import.meta.dirname, "..", "examples", "two-peers.ts")], { encoding: "utf8" });
    expect(out).toBe(
      "equal: true\nalice at team, seen by bob: 25n\ndemand for the team, seen by alice: { targetOutstanding: 50n, maximumUsefulGrant: 40n }\n",
    );
  });
});
