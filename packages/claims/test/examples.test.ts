// The README's examples are these files, and they run: neither can rot unseen.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
// Type-only imports put the examples in the type-checked program without running them here.
import type {} from "../examples/advisory.ts";
import type {} from "../examples/granted.ts";
import type {} from "../examples/keeper.ts";
import type {} from "../examples/release-token.ts";
import { demo as fencedStoreDemo } from "../examples/fenced-store.ts";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

async function output(name: string): Promise<string> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    lines.push(args.map(String).join(" "));
  });
  try {
    await import(`../examples/${name}.ts`);
  } finally {
    spy.mockRestore();
  }
  return lines.join("\n");
}

afterEach(() => vi.restoreAllMocks());

describe("examples", () => {
  it("granted: one grant, refusals name the holder, the stale token is rejected", async () => {
    const out = await output("granted");
    expect(out).toContain("scout#1 holds src/parser.ts with token 1");
    expect(out).toContain("scout#2 refused: src/parser.ts is held by scout#1");
    expect(out).toContain("scout#3 refused: src/parser.ts is held by scout#1");
    expect(out).toContain("write stamped with token 1 accepted: false");
  });

  it("release-token: the late retry of a release names the old grant and leaves the newer one", async () => {
    const out = await output("release-token");
    expect(out).toContain("took db/schema with token 1; released: true");
    expect(out).toContain("late retry with token 1 released: false");
    expect(out).toContain("token 2 still current: true");
  });

  it("fenced store: the paused holder's late write is rejected, the newer holder's content stays", () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    fencedStoreDemo();
    const out = lines.join("\n");
    expect(out).toContain("numberer-a writes with token 1: true");
    expect(out).toContain("numberer-b writes with token 2: true");
    expect(out).toContain("numberer-a wakes and writes with token 1: rejected (stale-token: highest is 2)");
    expect(out).toContain('invoices.csv: "1001\\n1002\\n"');
  });

  it("keeper: both peers agree; the keeper acts only once settled", async () => {
    const out = await output("keeper");
    expect(out).toContain("t=10s keeper: desk (laptop agrees: true); desk may act: false");
    expect(out).toContain("t=125s keeper: desk (laptop agrees: true); desk may act: true, sure: false");
    expect(out).toContain("t=126s keeper: desk (laptop agrees: true); desk may act: true, sure: true");
  });

  it("advisory: duplicates are listed after one merge", async () => {
    const out = await output("advisory");
    expect(out).toMatch(/lost problem\/\d to agent-/);
  });

  it("the README shows what each example really prints", async () => {
    const readme = readFileSync(here("../README.md"), "utf8");
    for (const name of ["granted", "release-token", "keeper", "advisory"]) {
      const file = readFileSync(here(`../examples/${name}.ts`), "utf8").replaceAll('"../src/index.ts"', '"@heddle/claims"');
      const after = readme.slice(readme.indexOf(file) + file.length);
      const printed = /```\n\n[\s\S]*?```\n([\s\S]*?)\n```/.exec(after)?.[1];
      vi.resetModules();
      expect(printed, `README output of examples/${name}.ts`).toBe(await output(name));
    }
  });

  it("the README shows exactly these files", () => {
    const readme = readFileSync(here("../README.md"), "utf8");
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
    for (const name of ["granted", "release-token", "keeper", "advisory"]) {
      const file = readFileSync(here(`../examples/${name}.ts`), "utf8").replaceAll('"../src/index.ts"', '"@heddle/claims"');
      expect(blocks, `README block for examples/${name}.ts`).toContain(file);
    }
  });
});
