// Mutation testing of heddle's pure cores with Stryker (issue 19). Not part of CI or `pnpm test`.
//
//   pnpm mutate policy                 one package (policy | claims | ledger | raft | replication)
//   pnpm mutate policy claims          several, one after the other
//   pnpm mutate all                    every core
//   pnpm mutate policy --incremental   reuse stryker/incremental/policy.json (written by every run, committed): only
//                                      mutants in changed code, or covered by changed tests, run again
//   pnpm mutate --table policy claims  print the table from the last reports without running anything
//   add --survivors to list every surviving / uncovered mutant under the table
//   --mutate=<glob>[,<glob>]           mutate only these files of the package (a partial score: say so)
//   --concurrency=<n>                  Stryker's worker processes (default 1, the shared-machine setting).
//                                      Stryker splits them into checkers and test runners: 1 and 2 gave one of
//                                      each, 3 two checkers and one runner, 4 two of each (its log, 2026-12-02).
//   --incremental --mutate=<files>     a chunk: results of the package's other files are carried over from
//                                      the incremental file, so chunks run in separate sittings add up to
//                                      the whole package (the table lists files with no result yet)
//
// Each package's settings are in stryker/<name>.config.mjs; reports land in reports/mutation/<name>.{json,html}.
// Stryker runs under `nice -n 10` with one test process, because the machine is shared.
// Exit codes: 0 all runs finished; 1 a Stryker run failed; 2 bad arguments.
import { spawnSync } from "node:child_process";
import { existsSync, globSync, readFileSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CORES = ["policy", "claims", "ledger", "raft", "replication"] as const;
type Core = (typeof CORES)[number];

interface MutantReport {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: { line: number; column: number } };
}
interface Report {
  files: Record<string, { mutants: MutantReport[] }>;
}

interface Row {
  name: string;
  mutants: number;
  killed: number;
  survived: number;
  timeout: number;
  noCoverage: number;
  errors: number;
  score: number;
  seconds: number | null;
  load: string | null;
}

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: pnpm mutate <${CORES.join("|")}|all>... [--incremental] [--table] [--survivors] [--mutate=<glob>] [--concurrency=<n>]\n`);
  process.exit(2);
}

/**
 * The last finished run's report, or — when the incremental file is newer (a run was interrupted: Stryker
 * records what it has tested when stopped) — the incremental file, which holds only the mutants tested
 * so far: the table then says "partial".
 */
function readReport(name: Core): { report: Report; partial: boolean } | null {
  const full = join(ROOT, "reports", "mutation", `${name}.json`);
  const incremental = join(ROOT, "stryker", "incremental", `${name}.json`);
  const age = (f: string): number => (existsSync(f) ? statSync(f).mtimeMs : -1);
  if (age(full) < 0 && age(incremental) < 0) return null;
  const partial = age(incremental) > age(full) + 1000;
  return { report: JSON.parse(readFileSync(partial ? incremental : full, "utf8")) as Report, partial };
}

function tally(name: string, report: Report, seconds: number | null, load: string | null): Row {
  const row: Row = { name, mutants: 0, killed: 0, survived: 0, timeout: 0, noCoverage: 0, errors: 0, score: 0, seconds, load };
  for (const f of Object.values(report.files))
    for (const m of f.mutants) {
      row.mutants++;
      if (m.status === "Killed") row.killed++;
      else if (m.status === "Survived") row.survived++;
      else if (m.status === "Timeout") row.timeout++;
      else if (m.status === "NoCoverage") row.noCoverage++;
      else row.errors++; // CompileError, RuntimeError, Ignored: not counted in the score, as Stryker does
    }
  const valid = row.killed + row.timeout + row.survived + row.noCoverage;
  row.score = valid === 0 ? 0 : (100 * (row.killed + row.timeout)) / valid;
  return row;
}

function printTable(rows: readonly Row[]): void {
  const head = ["package", "mutants", "killed", "survived", "timeout", "no cov", "errors", "score %", "wall", "load (1/5/15)"];
  const body = rows.map((r) => [
    r.name,
    String(r.mutants),
    String(r.killed),
    String(r.survived),
    String(r.timeout),
    String(r.noCoverage),
    String(r.errors),
    r.score.toFixed(2),
    r.seconds === null ? "-" : `${Math.floor(r.seconds / 60)}m${String(Math.round(r.seconds % 60)).padStart(2, "0")}s`,
    r.load ?? "-",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  process.stdout.write(`\n${line(head)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${body.map(line).join("\n")}\n`);
  process.stdout.write("errors = compile/runtime errors (the TypeScript checker rejected the mutant); not in the score\n");
}

/**
 * The files of `name`'s mutate globs (stryker/<name>.config.mjs) that have no result in `report`: never run (a
 * chunked run, `--mutate=`, has not reached them yet) or without a single mutant (re-exports, types only).
 * Listed under the table so that a score over some of the files is never read as the package's.
 */
async function filesWithoutResults(name: Core, report: Report): Promise<string[]> {
  // the config module sets the test-selection and run-count variables for its Stryker run: keep them out of this
  // process, whose environment the next package's Stryker run inherits
  const saved = { ...process.env };
  const config = (await import(pathToFileURL(join(ROOT, "stryker", `${name}.config.mjs`)).href)) as { default: { mutate: string[] } };
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  const files = new Set<string>();
  for (const g of config.default.mutate) for (const f of globSync(g, { cwd: ROOT })) files.add(f.split("\\").join("/"));
  return [...files].filter((f) => report.files[f] === undefined).sort();
}

function printSurvivors(name: Core, report: Report): void {
  const out: string[] = [];
  for (const [file, f] of Object.entries(report.files))
    for (const m of f.mutants)
      if (m.status === "Survived" || m.status === "NoCoverage")
        out.push(`  ${file}:${m.location.start.line}:${m.location.start.column}  ${m.status}  ${m.mutatorName}  ${JSON.stringify(m.replacement ?? "")}`);
  process.stdout.write(`\n${name}: ${out.length} surviving or uncovered mutants\n${out.join("\n")}\n`);
}

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith("--")));
const only = [...flags].find((f) => f.startsWith("--mutate="));
const concurrencyFlag = [...flags].find((f) => f.startsWith("--concurrency="));
for (const f of flags)
  if (!["--incremental", "--table", "--survivors"].includes(f) && f !== only && f !== concurrencyFlag) usage(`unknown flag ${f}`);
let concurrency: number | undefined;
if (concurrencyFlag !== undefined) {
  const text = concurrencyFlag.slice("--concurrency=".length);
  concurrency = /^[1-9][0-9]?$/.test(text) ? Number(text) : usage(`--concurrency wants a whole number 1–99, got "${text}"`);
}
const named = args.filter((a) => !a.startsWith("--"));
if (named.length === 0) usage("name at least one package");
const names: Core[] = named.includes("all") ? [...CORES] : named.map((n) => (CORES.includes(n as Core) ? (n as Core) : usage(`unknown package ${n}`)));

const rows: Row[] = [];
const notes: string[] = [];
let failed = false;
for (const name of names) {
  let seconds: number | null = null;
  let load: string | null = null;
  if (!flags.has("--table")) {
    const stryker = join(ROOT, "node_modules", "@stryker-mutator", "core", "bin", "stryker.js");
    const cmd = ["-n", "10", process.execPath, stryker, "run", join("stryker", `${name}.config.mjs`)];
    // Every run records its results in stryker/incremental/<name>.json; only --incremental reuses them.
    cmd.push("--incremental");
    if (!flags.has("--incremental")) cmd.push("--force");
    if (only !== undefined) cmd.push("--mutate", only.slice("--mutate=".length));
    if (concurrency !== undefined) cmd.push("--concurrency", String(concurrency));
    const started = performance.now();
    const result = spawnSync("nice", cmd, { cwd: ROOT, stdio: "inherit" });
    seconds = (performance.now() - started) / 1000;
    load = loadavg().map((l) => l.toFixed(2)).join(" ");
    if (result.status !== 0) {
      process.stderr.write(`mutate: Stryker failed for ${name} (exit ${result.status ?? result.signal})\n`);
      failed = true;
      continue;
    }
  }
  const found = readReport(name);
  if (found === null) {
    process.stderr.write(`mutate: no report for ${name}; run \`pnpm mutate ${name}\` first\n`);
    failed = true;
    continue;
  }
  rows.push(tally(found.partial ? `${name} (partial)` : name, found.report, seconds, load));
  const missing = await filesWithoutResults(name, found.report);
  if (missing.length > 0) notes.push(`${name}: no result for ${missing.join(", ")} (not run yet, or no mutant in it)`);
  if (flags.has("--survivors")) printSurvivors(name, found.report);
}
if (rows.length > 0) printTable(rows);
if (notes.length > 0) process.stdout.write(`${notes.join("\n")}\n`);
process.exit(failed ? 1 : 0);
