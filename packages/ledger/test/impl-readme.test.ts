import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

describe("README example", () => {
  it("is the same code as examples/readme.ts", () => {
    const readme = readFileSync(here("../README.md"), "utf8");
    const block = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;
    const file = readFileSync(here("../examples/readme.ts"), "utf8");
    expect(file.endsWith(block)).toBe(true);
  });

  it("runs and prints what its comments say", () => {
    const out = execFileSync(process.execPath, [here("../examples/readme.ts")], { encoding: "utf8" });
    expect(out.trim().split("\n")).toEqual(["40n 50n 6n", "false", "true []"]);
  });
});
