import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

describe("README", () => {
  it("opens with an example that runs and prints what its comments say", () => {
    const readme = readFileSync(fileURLToPath(new URL("../README.md", import.meta.url)), "utf8");
    const code = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(code).toBeDefined();
    const file = fileURLToPath(new URL(`./.readme-example-${process.pid}.ts`, import.meta.url));
    writeFileSync(file, code!);
    try {
      const run = spawnSync(process.execPath, [file], { encoding: "utf8" });
      expect(run.stderr).toBe("");
      const lines = run.stdout.trim().split("\n");
      expect(lines[0]).toBe("{ attachment: 'interactive', amount: 4n }");
      expect(lines[1]).toMatch(/^interactive:4 batch:4 interactive:4 interactive:4 interactive:4 batch:4 /);
      const units = (name: string) => (lines[1]!.match(new RegExp(`${name}:4`, "g")) ?? []).length * 4;
      expect([units("interactive"), units("batch")]).toEqual([28, 12]);
      expect(lines[2]).toBe("0/1");
    } finally {
      rmSync(file, { force: true });
    }
  });
});
