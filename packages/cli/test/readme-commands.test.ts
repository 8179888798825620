// The README's command table says what the CLI takes: every command is in it with every option it accepts, and
// every option it shows for a command is one that command accepts. The usage line a mistake prints names the
// same options. Runs the commands in-process (help and usage errors only: no daemon).
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { API_COMMANDS } from "../src/commands/api-commands.ts";
import { EXIT } from "../src/exit-codes.ts";
import { TARGET_OPTIONS } from "../src/target.ts";
import { run } from "./support/fake-daemon.ts";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** Options every API command takes (which daemon, --json, --help): the README documents them once, below the table. */
const COMMON = new Set([...Object.keys(TARGET_OPTIONS), "json", "help"]);

/** The commands that are not API verbs, with the options their --help lists. */
const OTHERS = ["init", "start", "up", "down", "env", "dashboard", "reshape", "bench", "demo"];

/** `--x` options a help text lists: on its Usage line, or at the start of an indented line. */
function helpOptions(help: string): string[] {
  const usage = /^Usage: .*$/m.exec(help)?.[0] ?? "";
  const listed = [...help.matchAll(/^\s{2,}(?:-\w, )?--([a-z][a-z-]*)/gm)].map((m) => m[1]!);
  return [...new Set([...[...usage.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]!), ...listed])].filter((o) => !COMMON.has(o)).sort();
}

/** Every command with the options it accepts (beyond COMMON). */
async function commands(): Promise<Map<string, string[]>> {
  const all = new Map<string, string[]>();
  for (const [name, cmd] of Object.entries(API_COMMANDS)) all.set(name, Object.keys(cmd.options ?? {}).filter((o) => !COMMON.has(o)).sort());
  for (const name of OTHERS) {
    const r = await run([name, "--help"]);
    expect(r.code, `heddle ${name} --help: ${r.err}`).toBe(EXIT.ok);
    all.set(name, helpOptions(r.out));
  }
  return all;
}

/** The README's command table: per row, the backticked command forms of its first cell, and the whole row. */
function tableRows(): { forms: string[]; row: string }[] {
  const lines = README.split("\n");
  const at = lines.findIndex((l) => l.startsWith("| Command | What |"));
  const rows: { forms: string[]; row: string }[] = [];
  for (const l of lines.slice(at + 2)) {
    if (!l.startsWith("|")) break;
    const first = l.slice(1).split(/(?<!\\)\|/)[0]!;
    rows.push({ forms: [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replaceAll("\\|", "|")), row: l });
  }
  return rows;
}

/** The command a form like `claims take KEY… --holder H` shows: the longest command name it starts with. */
function commandOf(form: string, names: string[]): string | undefined {
  return names.filter((n) => form === n || form.startsWith(`${n} `)).sort((a, b) => b.length - a.length)[0];
}

describe("README command table", () => {
  // No daemon: a command that needs one must not find one through the environment.
  beforeAll(() => {
    for (const v of ["HEDDLE_CONFIG", "HEDDLE_URL", "HEDDLE_TOKEN", "HEDDLE_TOKEN_FILE"]) delete process.env[v];
  });

  it("shows every command, in a row that names each option the command accepts", async () => {
    const all = await commands();
    const rows = tableRows();
    const problems: string[] = [];
    for (const [name, options] of all) {
      const row = rows.find((r) => r.forms.some((f) => commandOf(f, [...all.keys()]) === name));
      if (row === undefined) {
        problems.push(`${name}: not in the table`);
        continue;
      }
      // the demo's many options have a section of their own
      const text = name === "demo" ? `${row.row}\n${README.slice(README.indexOf("## The demo"))}` : row.row;
      for (const o of options) if (!text.includes(`--${o}`)) problems.push(`${name}: its row${name === "demo" ? " and section" : ""} do${name === "demo" ? "" : "es"} not name --${o}`);
    }
    expect(problems).toEqual([]);
  });

  it("shows for each command only options it accepts", async () => {
    const all = await commands();
    const problems: string[] = [];
    for (const { forms } of tableRows()) {
      for (const form of forms) {
        const name = commandOf(form, [...all.keys()]);
        if (name === undefined) continue;
        for (const m of form.matchAll(/--([a-z][a-z-]*)/g)) if (!all.get(name)!.includes(m[1]!) && !COMMON.has(m[1]!)) problems.push(`${form}: ${name} takes no --${m[1]}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("a command run without its required arguments prints a usage line naming each of its options", async () => {
    const all = await commands();
    const problems: string[] = [];
    for (const [name, options] of all) {
      if (name === "demo") continue; // it runs the demo
      const r = await run(name.split(" "));
      if (r.code !== EXIT.usage || !/usage: heddle /i.test(r.err)) continue; // runs without arguments (reads), or asks otherwise
      for (const o of options) if (!r.err.includes(`--${o}`)) problems.push(`heddle ${name}: the usage line does not name --${o}: ${r.err.trim()}`);
    }
    expect(problems).toEqual([]);
  });
});
