import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

describe("README example", () => {
  it("runs and prints what the README says", () => {
    const out = execFileSync(process.execPath, [join(import.meta.dirname, "fixtures", "readme-example.ts")], { encoding: "utf8" });
    // Real timers: under load a second election can move the entry past index 2, so the test pins
    // what must hold whatever the timing — every member applied the entry at the index the propose
    // returned, and the read index covers it — and the README shows the usual run.
    const m = /^a: (\d+) hello, log\nb: \1 hello, log\nc: \1 hello, log\ncommitted at \1; leader read index (\d+)\n$/.exec(out);
    expect(m, out).not.toBeNull();
    expect(Number(m![2])).toBeGreaterThanOrEqual(Number(m![1]));
  });
});
