import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const run = (file: string): string => execFileSync(process.execPath, [join(import.meta.dirname, "fixtures", file)], { encoding: "utf8", timeout: 60_000 });

describe("README examples", () => {
  it("the governed example (three peers, a mint, a reshape, a claim) runs and prints what the README says", () => {
    expect(run("governed-example.ts")).toBe(
      [
        "mint: applied",
        "create: applied, applied",
        "reshape: applied, applied, applied, applied",
        "claim: granted, token = its entry index",
        "rival: refused, held by deployer-1",
        "a: minted 300, team via team-w3 (weight 3/1), owner deployer-1",
        "b: minted 300, team via team-w3 (weight 3/1), owner deployer-1",
        "c: minted 300, team via team-w3 (weight 3/1), owner deployer-1",
        "",
      ].join("\n"),
    );
  }, 90_000);

  it("the Raft example runs and prints what the README says", () => {
    const out = run("readme-example.ts");
    // Real timers: under load a second election can move the entry past index 2, so the test pins
    // what must hold whatever the timing — every member applied the entry at the index the propose
    // returned, and the read index covers it — and the README shows the usual run.
    const m = /^a: (\d+) hello, log\nb: \1 hello, log\nc: \1 hello, log\ncommitted at \1; leader read index (\d+)\n$/.exec(out);
    expect(m, out).not.toBeNull();
    expect(Number(m![2])).toBeGreaterThanOrEqual(Number(m![1]));
  }, 90_000);
});
