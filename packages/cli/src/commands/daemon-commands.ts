// The commands that make and run daemons: init, start, up, env.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { flushCompileCache } from "node:module";
import { parseStrict } from "../args.ts";
import { ApiError, DaemonUnreachableError } from "@heddle/client";
import { CONFIG_FILE, ConfigError, DaemonStartError, initCluster, loadConfig, startDaemon, TreeSpecError, type DaemonConfig } from "@heddle/daemon";
import { EXIT, UsageError } from "../exit-codes.ts";
import { table } from "../table.ts";
import { clientOf, targetOfConfig } from "../target.ts";
import type { Io } from "./io.ts";

const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));

export const INIT_HELP = `heddle init — write a local cluster: a key, a token and a config per peer

Usage: heddle init [--peers N] [--mode static|governed] [options] DIR

  --peers N          peers, 1…64 (default 3)
  --mode M           governed: mint, reshape, enroll and claims through the Raft log (default;
                     1, 3 or 5 voters, the other peers learners)
                     static: supply and tree fixed at genesis (--supply, --tree)
  --base-port P      peer i listens on P+i (libp2p) and P+100+i (API); default: ports free now,
                     outside the kernel's range for outgoing connections (so none takes them later)
  --supply N         static: root supply of every peer (default 1000)
  --tree SPEC        static: the genesis tree, parent>child=weight items separated by commas;
                     child=weight hangs under the root (default "tenant-a=3,tenant-b=1")

Writes DIR/peer-<i>/{peer.key, token, heddle.json} (key and token mode 0600) and prints what to run next.
`;

/** `heddle init` */
export async function initCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseStrict({
    args: argv,
    allowPositionals: true,
    options: {
      peers: { type: "string", default: "3" },
      mode: { type: "string", default: "governed" },
      "base-port": { type: "string" },
      supply: { type: "string" },
      tree: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return io.out(INIT_HELP), EXIT.ok;
  if (positionals.length !== 1) throw new UsageError("give exactly one folder: heddle init --peers 3 DIR");
  const peers = Number(values.peers);
  if (!Number.isInteger(peers) || peers < 1 || peers > 64) throw new UsageError("--peers must be an integer 1…64");
  if (values.mode !== "static" && values.mode !== "governed") throw new UsageError("--mode must be static or governed");
  if (values.mode === "governed" && (values.supply !== undefined || values.tree !== undefined)) {
    throw new UsageError("--supply and --tree set a static genesis; a governed cluster mints and builds its tree at run time (heddle mint, heddle reshape) — or give --mode static");
  }
  const basePort = values["base-port"] === undefined ? undefined : Number(values["base-port"]);
  if (basePort !== undefined && (!Number.isInteger(basePort) || basePort < 1024 || basePort + 100 + peers > 65_535)) throw new UsageError("--base-port must leave room for P+100+N within 1024…65535");
  if (values.supply !== undefined && !/^[0-9]{1,18}$/.test(values.supply)) throw new UsageError("--supply must be a non-negative integer");
  let written;
  try {
    written = await initCluster({
      dir: positionals[0]!,
      peers,
      mode: values.mode,
      ...(basePort !== undefined ? { basePort } : {}),
      ...(values.supply !== undefined ? { supply: BigInt(values.supply) } : {}),
      ...(values.tree !== undefined ? { tree: values.tree } : {}),
    });
  } catch (e) {
    if (e instanceof TreeSpecError) throw new UsageError(e.message);
    io.err(`heddle init: ${(e as Error).message}\n`);
    return EXIT.usage;
  }
  if (values.json) return io.out(`${JSON.stringify(written)}\n`), EXIT.ok;
  const dir = positionals[0]!;
  const rel = (p: string) => relative(process.cwd(), p) || ".";
  io.out(`Wrote a ${values.mode} cluster of ${peers} peer(s) in ${dir}:\n\n`);
  io.out(table(["peer", "id", "API", "libp2p", "config"], written.map((p) => [`peer-${p.index}`, p.id, p.apiUrl, p.p2pAddr, rel(p.config)])));
  io.out(`
Next:
  heddle up ${dir}                                   # start every peer (Ctrl-C stops them all)
  export HEDDLE_CONFIG=${rel(written[0]!.config)}    # talk to peer-1
  heddle status
`);
  return EXIT.ok;
}

export const START_HELP = `heddle start — run one peer in the foreground

Usage: heddle start --config FILE [--log-format text|json] [--log-level debug|info|warn|error]

Starts libp2p, the SQLite store, the node, its scheduler and the HTTP API. Logs go to stderr (readable
lines, or one JSON object per line with --log-format json). SIGTERM or SIGINT stops it cleanly: no new
API calls, calls in flight finish, the store is closed; a second signal while it stops exits at once
(exit 1). Exit 0 after a clean stop, 8 on a bad config, 9 when it cannot start (busy port, store of
another cluster, missing key or token; a peer already running as this config says so, with its pid).

Memory: the process re-executes itself once at start (same pid) with node's young generation fixed at
16 MiB (--min/--max-semi-space-size=8), so its resident memory does not step as V8 resizes it. Give node
your own --max-semi-space-size (in NODE_OPTIONS or on node's command line) to choose another size.
`;

/** `heddle start` */
export async function startCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseStrict({
    args: argv,
    options: {
      config: { type: "string", short: "c" },
      "log-format": { type: "string" },
      "log-level": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return io.out(START_HELP), EXIT.ok;
  const file = values.config ?? process.env["HEDDLE_CONFIG"];
  if (file === undefined) throw new UsageError("give the peer's config: heddle start --config FILE");
  const fmt = values["log-format"];
  if (fmt !== undefined && fmt !== "text" && fmt !== "json") throw new UsageError("--log-format must be text or json");
  const lvl = values["log-level"];
  if (lvl !== undefined && !["debug", "info", "warn", "error"].includes(lvl)) throw new UsageError("--log-level must be debug, info, warn or error");
  let config: DaemonConfig;
  try {
    config = loadConfig(file);
  } catch (e) {
    if (e instanceof ConfigError) return io.err(`heddle start: ${e.message}\n`), EXIT.config;
    throw e;
  }
  config = { ...config, log: { format: (fmt as "text" | "json" | undefined) ?? config.log.format, level: (lvl as DaemonConfig["log"]["level"] | undefined) ?? config.log.level } };
  let daemon;
  try {
    daemon = await startDaemon(config);
  } catch (e) {
    if (e instanceof ConfigError) return io.err(`heddle start: ${e.message}\n`), EXIT.config;
    if (e instanceof DaemonStartError) {
      // a taken port is most often this peer itself, started before (`heddle up` refuses a running folder the same way)
      const running = (e.reason === "p2p-port" || e.reason === "api-port") && e.self !== null ? await alreadyRunning(file, e.self) : null;
      return io.err(`heddle start: ${running ?? e.message}\n`), EXIT.startFailed;
    }
    throw e;
  }
  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const stop = (sig: string) => {
      if (stopping) {
        io.err(`heddle start: second ${sig}: exiting without waiting\n`);
        process.exit(EXIT.internal);
      }
      stopping = true;
      daemon.close().then(
        () => resolveExit(EXIT.ok),
        (e: unknown) => {
          io.err(`heddle start: shutdown failed: ${(e as Error).message}\n`);
          resolveExit(EXIT.internal);
        },
      );
    };
    // `on`, not `once`: a second signal while closing must reach `stop` (which exits at once), not Node's
    // default handler (which would kill the process with the signal and skip the message).
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
    // every module of a running peer is loaded now: write the compile cache (compile-cache.ts) while the
    // process is alive, since Node otherwise writes it only at a clean exit and a killed peer would leave none
    // (it fails silently: a cache miss must not stop a peer)
    flushCompileCache();
  });
}

export const UP_HELP = `heddle up — start every peer of an init folder, for local use

Usage: heddle up DIR [--detach] [--log-format text|json]

Runs 'heddle start --config DIR/peer-<i>/heddle.json' for every peer as a child process, prefixes their
logs with [peer-<i>], prints a table once every API answers (and, governed, every peer has enrolled), and stops them all on Ctrl-C (SIGINT) or
SIGTERM (a second one kills the peers still stopping). A peer that dies is reported; the others keep running.

  --detach   leave the peers running in the background and return once every API answers; each peer logs
             to DIR/peer-<i>/daemon.log and its pid is in DIR/peer-<i>/daemon.pid. Stop them with heddle down DIR.
`;

export const DOWN_HELP = `heddle down — stop the peers 'heddle up --detach' started

Usage: heddle down DIR
Sends SIGTERM to every DIR/peer-<i>/daemon.pid and waits until each has stopped cleanly. A pid file
whose process is gone, or is not 'heddle start' of that peer's config (a pid reused after a crash or
reboot), is removed and nothing is signalled.
`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `pid` is a `heddle start` of `configFile`: alive and, where the OS shows command lines
 * (/proc), started with that config. A pid file can outlive its daemon (a crash, a reboot) and the pid be
 * reused by an unrelated process, which `down` must not signal.
 */
export function isDaemonOf(pid: number, configFile: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return false;
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return process.platform !== "linux"; // no /proc to ask: trust the pid file
  }
  const args = cmdline.split("\0");
  const at = args.indexOf("--config");
  if (!args.includes("start") || at < 0 || at + 1 >= args.length) return false;
  return samePath(args[at + 1]!, configFile);
}

function samePath(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return resolve(a) === resolve(b);
  }
}

function readPid(file: string): number {
  try {
    return Number(readFileSync(file, "utf8").trim());
  } catch {
    return NaN;
  }
}

/** \`heddle down\` */
export async function downCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseStrict({ args: argv, allowPositionals: true, options: { help: { type: "boolean", short: "h" } } });
  if (values.help) return io.out(DOWN_HELP), EXIT.ok;
  if (positionals.length !== 1) throw new UsageError("give the folder: heddle down DIR");
  const pids: { name: string; pid: number; file: string }[] = [];
  for (const conf of peerConfigs(resolve(positionals[0]!))) {
    const file = join(dirname(conf), "daemon.pid");
    if (!existsSync(file)) continue;
    const pid = readPid(file);
    if (isDaemonOf(pid, conf)) {
      process.kill(pid, "SIGTERM");
      pids.push({ name: peerName(conf), pid, file });
    } else unlinkSync(file);
  }
  const deadline = Date.now() + 30_000;
  while (pids.some((p) => alive(p.pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const stuck = pids.filter((p) => alive(p.pid));
  for (const p of pids) if (!alive(p.pid) && existsSync(p.file)) unlinkSync(p.file);
  if (stuck.length > 0) return io.err(`heddle down: ${stuck.map((p) => `${p.name} (pid ${p.pid})`).join(", ")} did not stop within 30 s\n`), EXIT.internal;
  io.out(pids.length === 0 ? "heddle down: no peer was running\n" : `heddle down: stopped ${pids.map((p) => p.name).join(", ")}\n`);
  return EXIT.ok;
}

/** A peer's name in messages: its init folder's, `peer-<i>` (not its position in the list: a folder may be gone). */
function peerName(configFile: string): string {
  return basename(dirname(configFile));
}

/** The config files of an init folder, in peer order. */
export function peerConfigs(dir: string): string[] {
  if (!existsSync(dir)) throw new UsageError(`${dir} does not exist; create a cluster with: heddle init --peers 3 ${dir}`);
  const peers = readdirSync(dir)
    .map((n) => /^peer-([0-9]+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((m) => join(dir, m[0], CONFIG_FILE))
    .filter((f) => existsSync(f));
  if (peers.length === 0) throw new UsageError(`${dir} holds no peer-<i>/${CONFIG_FILE}; create a cluster with: heddle init --peers 3 ${dir}`);
  return peers;
}

/** A daemon of one peer's config found running: its pid (when known), its API and, if `up --detach` started it, its pid file. */
interface RunningPeer {
  readonly pid: number | null;
  readonly url: string;
  readonly pidFile: string | null;
}

/**
 * The daemon `file` configures, if it runs now: its pid file (`up --detach`) names a live `heddle start` of `file`,
 * or its API answers — as peer `self` when that is given; without it any HTTP answer counts (a refused connection
 * does not). `up` asks before it starts anything, `start` once its ports turn out to be taken.
 */
async function runningPeer(file: string, self: string | null = null): Promise<RunningPeer | null> {
  const url = targetOfConfig(file).url;
  const pidFile = join(dirname(file), "daemon.pid");
  if (existsSync(pidFile)) {
    const pid = readPid(pidFile);
    // not this process: `up --detach` writes the pid file of the `start` it spawns before that one listens
    if (pid !== process.pid && isDaemonOf(pid, file)) return { pid, url, pidFile };
  }
  const client = clientOf({ config: file, timeout: "2" });
  try {
    const st = (await client.status()) as { self?: unknown; pid?: unknown };
    if (self !== null && st.self !== self) return null;
    return { pid: typeof st.pid === "number" ? st.pid : null, url, pidFile: null };
  } catch (e) {
    return self === null && e instanceof ApiError ? { pid: null, url, pidFile: null } : null;
  } finally {
    client.close();
  }
}

/**
 * `start` whose p2p or API port is taken: when the taker is this very peer (its pid file, or its API answering as
 * `self`), what to say instead of "in use by another process" — or null.
 */
async function alreadyRunning(file: string, self: string): Promise<string | null> {
  let r: RunningPeer | null;
  try {
    r = await runningPeer(file, self);
  } catch {
    return null; // no way to ask (the token file went away): the daemon's own message stands
  }
  if (r === null) return null;
  const stop =
    r.pidFile !== null
      ? `heddle up --detach started it (pid file ${r.pidFile}): heddle down ${dirname(dirname(file))} stops it`
      : r.pid !== null
        ? `stop it with kill ${r.pid} (SIGTERM stops it cleanly), or Ctrl-C where it runs, before starting it again`
        : "stop it (Ctrl-C where it runs) before starting it again";
  return `this peer (${self}) is already running: pid ${r.pid ?? "unknown"}, API ${r.url}; ${stop}`;
}

/** The last lines of a peer's log, indented, naming the file — what a detached peer said before it exited. */
function logTail(log: string, lines = 8): string {
  let text: string;
  try {
    text = readFileSync(log, "utf8");
  } catch {
    return `  (no log at ${log})`;
  }
  const tail = text.trimEnd().split("\n").slice(-lines).map((l) => `  | ${l}`).join("\n");
  return `  the end of ${log}:\n${tail}`;
}

export async function upCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseStrict({
    args: argv,
    allowPositionals: true,
    options: { "log-format": { type: "string" }, detach: { type: "boolean" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) return io.out(UP_HELP), EXIT.ok;
  const detach = values.detach === true;
  if (positionals.length !== 1) throw new UsageError("give the folder heddle init wrote: heddle up DIR");
  const configs = peerConfigs(resolve(positionals[0]!));
  for (const f of configs) {
    try {
      loadConfig(f);
    } catch (e) {
      if (e instanceof ConfigError) return io.err(`heddle up: ${e.message}\n`), EXIT.config;
      throw e;
    }
  }
  // A peer already running (a detached `up`, another foreground `up`, a `start`): refuse before starting anything —
  // a second set would die on the taken ports while the readiness check, answered by the first set, reported success
  for (const file of configs) {
    const r = await runningPeer(file);
    if (r === null) continue;
    const name = peerName(file);
    io.err(
      r.pidFile !== null
        ? `heddle up: ${name} is already running (pid file ${r.pidFile}); heddle down ${positionals[0]} stops it\n`
        : `heddle up: ${name} is already running: its API at ${r.url} answers (started by another heddle up or heddle start — stop that one first)\n`,
    );
    return EXIT.startFailed;
  }
  const children: { name: string; file: string; proc: ChildProcess; exited: Promise<number> }[] = [];
  let stopping = false;
  let started = false;
  const stopAll = async () => {
    stopping = true;
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGTERM");
    const codes = await Promise.all(children.map((c) => c.exited));
    // the peers this run started are gone: their pid files must not outlive them
    if (detach) for (const c of children) rmSync(join(dirname(c.file), "daemon.pid"), { force: true });
    return codes;
  };
  for (const file of configs) {
    const name = peerName(file);
    const args = [MAIN, "start", "--config", file, ...(values["log-format"] !== undefined ? ["--log-format", values["log-format"]] : [])];
    let proc: ChildProcess;
    if (detach) {
      const pidFile = join(dirname(file), "daemon.pid");
      const log = openSync(join(dirname(file), "daemon.log"), "a");
      proc = spawn(process.execPath, args, { stdio: ["ignore", log, log], detached: true });
      closeSync(log);
      writeFileSync(pidFile, `${proc.pid}\n`);
    } else {
      proc = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
      for (const s of [proc.stdout!, proc.stderr!]) createInterface({ input: s }).on("line", (l) => io.err(`[${name}] ${l}\n`));
    }
    const exited = new Promise<number>((res) =>
      proc.on("exit", (code, signal) => {
        // while starting, the readiness loop below says it (and stops the others)
        if (!stopping && started) io.err(`heddle up: ${name} exited (${signal ?? `code ${code}`}); the others keep running\n`);
        res(code ?? 1);
      }),
    );
    children.push({ name, file, proc, exited });
  }

  // Wait until every API answers (or a peer fails to start).
  const deadline = Date.now() + 60_000;
  const ready = new Set<string>();
  while (ready.size < children.length && Date.now() < deadline) {
    for (const c of children) {
      if (ready.has(c.name)) continue;
      if (c.proc.exitCode !== null) {
        const code = c.proc.exitCode;
        // a detached peer's reason is in its log (a foreground one's was printed above, prefixed with its name)
        io.err(`heddle up: ${c.name} could not start (exit ${code}); stopping the others${detach ? `\n${logTail(join(dirname(c.file), "daemon.log"))}` : ""}\n`);
        await stopAll();
        return code === EXIT.config ? EXIT.config : EXIT.startFailed;
      }
      try {
        const client = clientOf({ config: c.file, timeout: "2" });
        const st = (await client.status()) as { control: { isWritable: boolean } | null };
        client.close();
        // A governed peer is ready once it has enrolled itself (a Raft quorum is up and it may write).
        if (st.control === null || st.control.isWritable) ready.add(c.name);
      } catch (e) {
        if (!(e instanceof DaemonUnreachableError) && !(e instanceof ApiError)) throw e;
      }
    }
    if (ready.size < children.length) await new Promise((r) => setTimeout(r, 150));
  }
  if (ready.size < children.length) {
    io.err("heddle up: not every peer answered within 60 s; stopping\n");
    await stopAll();
    return EXIT.startFailed;
  }
  io.out(
    `\nheddle up: ${children.length} peer(s) running ${detach ? `in the background (heddle down ${positionals[0]} stops them; logs in each peer's daemon.log)` : "(Ctrl-C stops them all)"}\n` +
      table(
        ["peer", "API", "pid", "config"],
        children.map((c) => [c.name, targetOfConfig(c.file).url, c.proc.pid ?? "-", relative(process.cwd(), c.file)]),
      ),
  );
  started = true;
  if (detach) {
    for (const c of children) c.proc.unref();
    return EXIT.ok;
  }
  return new Promise<number>((resolveExit) => {
    const onSignal = () => {
      if (stopping) {
        // a second signal: stop waiting for clean shutdowns
        io.err("heddle up: second signal: killing every peer still running\n");
        for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGKILL");
        return;
      }
      io.err("heddle up: stopping every peer\n");
      void stopAll().then(() => resolveExit(EXIT.ok));
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    // When every child is gone on its own, there is nothing left to run.
    void Promise.all(children.map((c) => c.exited)).then(() => {
      if (!stopping) {
        io.err("heddle up: every peer has exited\n");
        resolveExit(EXIT.startFailed);
      }
    });
  });
}

export const ENV_HELP = `heddle env — print shell exports for a peer's API (for curl and scripts)

Usage: heddle env --config FILE
Prints: export HEDDLE_URL=…  and  export HEDDLE_TOKEN=…   (use: eval "$(heddle env --config FILE)")
`;

/** `heddle env` */
export async function envCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseStrict({ args: argv, options: { config: { type: "string", short: "c" }, help: { type: "boolean", short: "h" } } });
  if (values.help) return io.out(ENV_HELP), EXIT.ok;
  const file = values.config ?? process.env["HEDDLE_CONFIG"];
  if (file === undefined) throw new UsageError("give the peer's config: heddle env --config FILE");
  const t = targetOfConfig(file);
  io.out(`export HEDDLE_URL=${t.url}\nexport HEDDLE_TOKEN=${t.token}\n`);
  return EXIT.ok;
}

export const DASHBOARD_HELP = `heddle dashboard — print the address of a peer's live dashboard

Usage: heddle dashboard --config FILE
Prints: the page's URL with the API token in its fragment (#token=…), which the browser keeps to itself
(fragments are never sent to a server) and the page removes from the address bar once read. Open it in a
browser on this machine; without the fragment the page asks for the token.
`;

/** `heddle dashboard`: the daemon serves the page at `/dashboard` on its API port. */
export async function dashboardCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseStrict({ args: argv, options: { config: { type: "string", short: "c" }, help: { type: "boolean", short: "h" } } });
  if (values.help) return io.out(DASHBOARD_HELP), EXIT.ok;
  const file = values.config ?? process.env["HEDDLE_CONFIG"];
  if (file === undefined) throw new UsageError("give the peer's config: heddle dashboard --config FILE");
  const t = targetOfConfig(file);
  io.out(`${t.url}/dashboard#token=${encodeURIComponent(t.token)}\n`);
  return EXIT.ok;
}
