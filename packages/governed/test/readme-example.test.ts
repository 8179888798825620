import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

describe("README example", () => {
  it("runs and prints what the README says", () => {
    const out = execFileSync(process.execPath, [join(import.meta.dirname, "fixtures", "readme-example.ts")], { encoding: "utf8" });
    expect(out).toBe("a: 2 hello, log\nb: 2 hello, log\nc: 2 hello, log\ncommitted at 2; leader read index 2\n");
  });
});
