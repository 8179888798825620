// Every package README opens with a runnable example, and the READMEs' examples and commands stay true to the code:
// - each opening example is a file, shown verbatim (only its leading comment may differ). The file is in the
//   type-check (tsconfig.json includes packages/*/examples and packages/*/test), so an API change breaks
//   `pnpm typecheck`, and a test runs it and checks what it prints (RUN_BY below);
// - a ```ts block whose first line names a file (`// packages/…/x.ts`) is that file, or an excerpt of it;
// - every `npx -y pnpm@10 …` command names a script or file that exists, and every repository path a README
//   names in backticks or links to exists.
// Reads files only: fast.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const read = (p: string) => readFileSync(join(ROOT, p), "utf8");
const PACKAGES = readdirSync(join(ROOT, "packages")).filter((p) => existsSync(join(ROOT, "packages", p, "package.json"))).sort();

/** Each package README's opening example: the file it shows, and the test that runs it. */
const OPENING: Record<string, { file: string; runBy: string } | { shell: string }> = {
  ledger: { file: "examples/readme.ts", runBy: "packages/ledger/test/impl-readme.test.ts" },
  policy: { file: "examples/readme.ts", runBy: "packages/policy/test/readme-example.test.ts" },
  seam: { file: "examples/two-seams.ts", runBy: "packages/seam/test/readme-example.test.ts" },
  node: { file: "examples/two-peers.ts", runBy: "packages/node/test/readme-example.test.ts" },
  governed: { file: "test/fixtures/governed-example.ts", runBy: "packages/governed/test/readme-example.test.ts" },
  claims: { file: "examples/granted.ts", runBy: "packages/claims/test/examples.test.ts" },
  daemon: { file: "examples/readme.ts", runBy: "packages/daemon/test/readme.test.ts" },
  client: { file: "examples/readme.ts", runBy: "packages/daemon/test/client-readme.test.ts" },
  // The CLI's opens with shell commands (init, up, status); the root README's cluster block, which runs the same
  // commands and more, is run as written by this test.
  cli: { shell: "packages/cli/test/readme.e2e.test.ts" },
};

/** Code blocks of a markdown text: their language and body. */
function blocks(md: string): { lang: string; body: string }[] {
  return [...md.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

/** The code without its leading comment lines (the header says where the file lives and how to run it). */
function code(text: string, pkg: string): string {
  const lines = text.replaceAll('"../src/index.ts"', `"@heddle/${pkg}"`).split("\n");
  while (lines.length > 0 && (lines[0]!.startsWith("//") || lines[0]!.trim() === "")) lines.shift();
  return lines.join("\n").trimEnd();
}

describe("package READMEs open with a runnable example", () => {
  it("every package is listed here", () => {
    expect(Object.keys(OPENING).sort()).toEqual(PACKAGES);
  });

  for (const pkg of PACKAGES) {
    it(`${pkg}: the opening example is ${"file" in (OPENING[pkg] ?? {}) ? "a type-checked file, shown verbatim, that a test runs" : "run by a test"}`, () => {
      const o = OPENING[pkg]!;
      const first = blocks(read(`packages/${pkg}/README.md`))[0];
      expect(first, `packages/${pkg}/README.md has no code block`).toBeDefined();
      if ("shell" in o) {
        expect(first!.lang).toBe("sh");
        expect(existsSync(join(ROOT, o.shell))).toBe(true);
        return;
      }
      expect(first!.lang, `packages/${pkg}/README.md opens with a ${first!.lang} block`).toBe("ts");
      expect(o.file).toMatch(/^(examples|test)\//); // covered by tsconfig.json's include
      const file = `packages/${pkg}/${o.file}`;
      expect(code(first!.body, pkg), `packages/${pkg}/README.md's first block differs from ${file}: copy the file into the README (or the README into the file)`).toBe(code(read(file), pkg));
      const runner = read(o.runBy);
      expect(runner.includes(o.file.split("/").pop()!) || runner.includes("README.md"), `${o.runBy} runs ${file}`).toBe(true);
    });
  }

  it("tsconfig.json type-checks every package's examples", () => {
    expect(JSON.parse(read("tsconfig.json")).include).toEqual(expect.arrayContaining(["packages/*/examples", "packages/*/test"]));
  });
});

describe("README code and commands name what exists", () => {
  const readmes = ["README.md", ...PACKAGES.map((p) => `packages/${p}/README.md`)];

  it("a ts block that names its file is that file, or an excerpt of it", () => {
    const problems: string[] = [];
    for (const r of readmes) {
      const pkg = r.split("/")[1] ?? "";
      for (const b of blocks(read(r))) {
        const named = /^\/\/\s*(packages\/\S+\.ts)\b/.exec(b.body)?.[1];
        if (b.lang !== "ts" || named === undefined) continue;
        if (!existsSync(join(ROOT, named))) {
          problems.push(`${r}: the block names ${named}, which does not exist`);
          continue;
        }
        const shown = code(b.body, pkg);
        const file = code(read(named), pkg);
        if (shown === file) continue;
        // an excerpt: its lines appear in the file, in order (a line's trailing comment may differ)
        let at = 0;
        for (const line of shown.split("\n").map((l) => l.replace(/\s+\/\/\s.*$/, "").trim()).filter((l) => l !== "")) {
          const next = file.indexOf(line, at);
          if (next < 0) {
            problems.push(`${r}: the block from ${named} shows a line the file does not have (after what matched): ${line}`);
            break;
          }
          at = next + line.length;
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("every `npx -y pnpm@10 …` command names a script or a file that exists", () => {
    const scripts = (dir: string): Record<string, string> => (JSON.parse(read(join(dir, "package.json"))) as { scripts?: Record<string, string> }).scripts ?? {};
    const byName = new Map(PACKAGES.map((p) => [(JSON.parse(read(`packages/${p}/package.json`)) as { name: string }).name, `packages/${p}`]));
    const problems: string[] = [];
    for (const r of readmes) {
      for (const m of read(r).matchAll(/npx -y pnpm@10 ([^`|#\n]+)/g)) {
        let words = m[1]!.trim().split(/\s+/);
        let dir = ".";
        if (words[0] === "--filter") {
          const d = byName.get(words[1]!);
          if (d === undefined) {
            problems.push(`${r}: ${m[0]} — no package ${words[1]}`);
            continue;
          }
          dir = d;
          words = words.slice(2);
        }
        const [verb, tool] = words;
        if (verb === undefined || verb === "install" || verb.startsWith("<")) continue;
        if (verb === "exec") {
          const target = tool === "vitest" && words[2] === "run" ? words[3] : words[2];
          if (target === undefined || target.startsWith("<") || target.startsWith("-")) continue;
          const path = tool === "node" ? join(dir, target) : target; // vitest runs from the root
          if (!existsSync(join(ROOT, path))) problems.push(`${r}: ${m[0].trim()} — ${path} does not exist`);
        } else if (!(verb in scripts(dir))) {
          problems.push(`${r}: ${m[0].trim()} — ${dir === "." ? "the root package" : dir} has no script ${verb}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("every repository path a README names or links to exists", () => {
    const problems: string[] = [];
    for (const r of readmes) {
      const text = read(r);
      const base = dirname(r);
      for (const m of text.matchAll(/\]\(([^)#\s]+)/g)) {
        const p = m[1]!;
        if (/^[a-z]+:/.test(p)) continue;
        if (!existsSync(join(ROOT, base, p))) problems.push(`${r}: the link ${p} leads nowhere`);
      }
      // `packages/…` from the repository root; `test/…`, `src/…`, … from the package (or the root)
      for (const m of text.matchAll(/`((?:packages|test|src|bench|examples|dashboard|docs|scripts)\/[\w./-]+\.(?:ts|js|json|md|html|css|svg|txt|png|tsv))`/g)) {
        const p = m[1]!;
        if (!existsSync(join(ROOT, base, p)) && !existsSync(join(ROOT, p))) problems.push(`${r}: names ${p}, which does not exist`);
      }
    }
    expect(problems).toEqual([]);
  });
});
