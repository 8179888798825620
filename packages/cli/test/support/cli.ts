// Runs the `heddle` command as an OS process, as a user would.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

/** One finished `heddle` run. */
export interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs `heddle ...args` to completion. */
export function heddle(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { maxBuffer: 16 << 20, cwd: opts.cwd, env: { ...process.env, ...(opts.env ?? {}) } }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : 1, out: stdout, err: stderr });
    });
  });
}

/** `heddle ...args --json`, parsed; throws with the output if it failed. */
export async function heddleJson<T = any>(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<T> {
  const r = await heddle([...args, "--json"], opts);
  if (r.code !== 0) throw new Error(`heddle ${args.join(" ")} exited ${r.code}: ${r.err}`);
  return JSON.parse(r.out) as T;
}

/** A long-running `heddle` process (up, start) with its output collected line by line. */
export interface Background {
  readonly proc: ChildProcess;
  readonly lines: string[];
  /** Resolves with the first line matching `re` (already seen or later); rejects after `ms`. */
  waitFor(re: RegExp, ms?: number): Promise<string>;
  readonly exited: Promise<number | null>;
}

/** Starts `heddle ...args` in the background. */
export function heddleBackground(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Background {
  const proc = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"], cwd: opts.cwd, env: { ...process.env, ...(opts.env ?? {}) } });
  const lines: string[] = [];
  const waiters = new Set<{ re: RegExp; resolve: (l: string) => void }>();
  for (const s of [proc.stdout!, proc.stderr!]) {
    createInterface({ input: s }).on("line", (l) => {
      lines.push(l);
      for (const w of waiters) if (w.re.test(l)) (waiters.delete(w), w.resolve(l));
    });
  }
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  return {
    proc,
    lines,
    exited,
    waitFor(re, ms = 60_000) {
      const seen = lines.find((l) => re.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = { re, resolve };
        waiters.add(w);
        setTimeout(() => {
          if (waiters.delete(w)) reject(new Error(`no line matching ${re} within ${ms} ms; output:\n${lines.join("\n")}`));
        }, ms);
      });
    },
  };
}

/** Polls `f` until it returns a non-undefined value; rejects after `ms` with the last error. */
export async function eventually<T>(f: () => Promise<T | undefined>, ms = 30_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${ms} ms${last !== undefined ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Runs `heddle ...argv` in this process against a running daemon (`--url`, `--token` added), collecting what it prints. */
export async function heddleOn(on: { url: string; token: string }, argv: string[]): Promise<Run> {
  const { main } = await import("../../src/main.ts");
  let out = "";
  let err = "";
  const code = await main([...argv, "--url", on.url, "--token", on.token], { out: (x) => void (out += x), err: (x) => void (err += x), tty: false });
  return { code, out, err };
}
