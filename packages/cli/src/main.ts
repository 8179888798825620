#!/usr/bin/env node
// The `heddle` command.
import { readFileSync } from "node:fs";
import { processIo, type Io } from "./commands/io.ts";
import { enableHeddleCompileCache } from "./compile-cache.ts";
import { EXIT, HTTP_EXIT, UsageError } from "./exit-codes.ts";
import { pinYoungGeneration } from "./young-generation.ts";

// `heddle start` re-executes itself in place with a fixed-size young generation (young-generation.ts) before
// anything else loads; the modules below are imported after it so that their load is not paid twice.
// Then Node's module compile cache (compile-cache.ts): in the user's own cache directory, or NODE_COMPILE_CACHE;
// `start` writes it once the peer is up, so a peer that is killed still leaves it behind.
if (import.meta.main) {
  pinYoungGeneration();
  enableHeddleCompileCache();
}
const { ApiError, DaemonUnreachableError } = await import("@heddle/client");
const { ConfigError } = await import("@heddle/daemon/config");
const { DEMO_HELP, DemoUsageError, parseDemoArgs } = await import("./demo/options.ts");
const { API_COMMANDS, runApiCommand } = await import("./commands/api-commands.ts");

// Commands that need the daemon (libp2p, fastify, SQLite) or the demo load it on use, so the API verbs
// a script calls often start quickly.
const daemonCommands = () => import("./commands/daemon-commands.ts");

export const USAGE = `heddle — fair sharing of capacity across a tree of groups, on many peers

Usage: heddle <command> [options]          (heddle <command> --help for its options)

Run a cluster:
  init DIR            write a local cluster: a key, a token and a config per peer
  start --config F    run one peer in the foreground (libp2p, store, node, HTTP API)
  up DIR              start every peer of an init folder; Ctrl-C stops them all
                      (--detach: leave them running; heddle down DIR stops them)
  env --config F      print HEDDLE_URL / HEDDLE_TOKEN exports for curl and scripts
  dashboard --config F  print the URL of the peer's live dashboard (token in the fragment)
  demo                a live demo on real processes

Look:
  status              this peer, its ledger, and its view of every other peer
  tree                the group tree with weights, shares and holdings
  peers | holdings [GROUP] | bounds [PARENT]
  demand              standing demand, what is advertised (live or lapsed), whether refreshing it works

Work (for scripts):
  reserve LEAF MAX    prints a reservation id      complete ID COST     cancel ID     reservations
  demand LEAF TARGET [MAX_GRANT]                   bench --leaf LEAF

Operate (governed mode):
  mint AMOUNT         prepare | activate | close | retire EDGE     reshape CHILD --parent P --weight W
  enroll [PEER]       depart     sync     roster     outcome --idempotency-key K
  leader transfer PEER

Claims (every mode; each answer says what it guarantees):
  granted (governed mode):  claims take KEY... --holder H | release | renew | list
  keeper (gossiped):        claims keeper PART [--take] [--active] [--check] | look [PART] | close PART
  advisory (gossiped):      claims advisory ITEM [--ttl MS] | holders [ITEM] | drop ITEM | next ITEM...

Which daemon: --config FILE (a peer's heddle.json), or --url URL --token T; or HEDDLE_CONFIG.
Human tables by default; --json prints the API's JSON.

Exit codes: 0 ok · 1 internal error · 2 usage · 3 refused or conflict (409), or this peer cannot
serve it (501) · 4 daemon unreachable (nothing sent) · 5 token refused · 6 outcome unknown (a write sent, its
answer lost: retry with the same --idempotency-key, or heddle outcome) / daemon unavailable ·
7 request rejected as malformed · 8 invalid config · 9 daemon could not start · 10 not yours
(claims advisory: an earlier claimant holds the item; claims keeper --check, claims look --check:
this peer may not act; claims renew: the holder no longer holds the key; claims next: every item
is held by another peer; claims release --fencing-token: the holder holds a newer grant, left alone) ·
11 no such reservation (complete, cancel: no open reservation under the id; nothing charged)
`;

const TWO_WORD = new Set(["claims", "leader"]);

function apiErrorExit(e: InstanceType<typeof ApiError>, io: Io): number {
  const b = e.body;
  const code = HTTP_EXIT[e.status] ?? EXIT.internal;
  switch (code) {
    case EXIT.unauthorized:
      io.err(`heddle: the daemon refused the token (${b.message}). Pass the peer's config with --config FILE, or the token in its api.tokenFile with --token-file\n`);
      break;
    case EXIT.refused: {
      // 409: a refusal or conflict; 501: this peer does not serve the request at all (a node without gossiped claims)
      const detail = b.conflict ?? b.refusal;
      io.err(`heddle: ${b.message}${detail !== undefined ? `\n  ${JSON.stringify(detail)}` : ""}\n`);
      break;
    }
    case EXIT.unknown:
      io.err(`heddle: ${b.message}${b.key !== undefined ? `\n  key ${JSON.stringify(b.key)}` : ""}\n`);
      break;
    case EXIT.invalid:
      io.err(`heddle: the daemon rejected the request: ${b.message}\n`);
      break;
    default:
      io.err(`heddle: HTTP ${e.status}: ${b.message}\n`);
  }
  return code;
}

/** The value of `--idempotency-key K` (or `--idempotency-key=K`) on the command line, if given. */
function idempotencyKeyArg(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") return undefined;
    if (a === "--idempotency-key") return argv[i + 1];
    if (a.startsWith("--idempotency-key=")) return a.slice("--idempotency-key=".length);
  }
  return undefined;
}

/** Where to see whether a write to `path` applied, when its answer was lost. */
function lookFor(path: string): string {
  if (path.startsWith("/v1/reservations")) return "heddle reservations";
  if (path === "/v1/control/mint") return "heddle sync: its mintedTotal";
  if (path === "/v1/control/enroll" || path === "/v1/control/depart") return "heddle roster";
  if (path.startsWith("/v1/control/")) return "heddle tree";
  if (path.startsWith("/v1/claims/keeper")) return "heddle claims look";
  if (path.startsWith("/v1/claims/advisory")) return "heddle claims holders";
  if (path.startsWith("/v1/claims/")) return "heddle claims list";
  if (path.startsWith("/v1/demand")) return "heddle demand";
  return "heddle status";
}

/**
 * What to do about a write whose answer was lost (exit {@link EXIT.unknown}): with a key, retry under it (applied at
 * most once) or look it up; without one, look first — a plain retry may apply it twice.
 */
function unknownOutcomeHint(path: string, argv: readonly string[], label: string | undefined): string {
  if (label === "reshape") return "Run the same heddle reshape again: each of its steps is keyed, so it resumes where it stopped";
  const key = idempotencyKeyArg(argv);
  // the acts the control log decides: their outcome is kept under the key (GET /v1/control/outcome)
  const logged = path.startsWith("/v1/control/") || /^\/v1\/claims\/(take|release|renew|release-all|release-scope)$/.test(path);
  if (key !== undefined) {
    return `Retry with the same --idempotency-key ${key}: it applies at most once${logged ? `; or see what it did: heddle outcome --idempotency-key ${key}` : ""}`;
  }
  const keyable = label !== undefined && (API_COMMANDS[label]?.options ?? {})["idempotency-key"] !== undefined;
  return keyable
    ? `It was sent without --idempotency-key, so a plain retry may apply it twice: look first (${lookFor(path)}), and pass --idempotency-key so that a retry is safe`
    : `Look before retrying (${lookFor(path)})`;
}

/** This CLI's version: its package's. */
const HEDDLE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/**
 * node:util's parseArgs errors in the CLI's words: its unknown-option text suggests moving the word after `--` as a
 * positional argument, which misleads for a typo (`--jsn`) and for a negative number (`mint -5`).
 */
export function parseArgsMessage(e: Error & { code: string }): string {
  const m = /^Unknown option '([^']*)'/.exec(e.message);
  if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && m !== null) {
    const opt = m[1]!;
    if (/^-[0-9]/.test(opt)) return `${opt} looks like a negative number: amounts, weights, counts and times are positive`;
    return `unknown option ${opt}`;
  }
  return e.message;
}

/** Runs the command line `argv` (without node and script); resolves with the exit code. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const [cmd, ...rest] = argv;
  // the command as messages name it: `claims take`, not `claims`, so "heddle claims take --help" is what they point at
  let label = cmd;
  try {
    switch (cmd) {
      case undefined:
        // no command at all is a usage error (a script that lost its arguments must not pass)
        io.err(USAGE);
        return EXIT.usage;
      case "--version":
      case "-V":
      case "version":
        io.out(`heddle ${HEDDLE_VERSION} (node ${process.version})\n`);
        return EXIT.ok;
      case "help":
      case "-h":
      case "--help":
        io.out(USAGE);
        return EXIT.ok;
      case "demo": {
        let o;
        try {
          o = parseDemoArgs(rest, process.stdout.isTTY === true);
        } catch (e) {
          if (e instanceof DemoUsageError) {
            io.err(`heddle demo: ${e.message}\n`);
            return EXIT.usage;
          }
          throw e;
        }
        if (o === "help") {
          io.out(DEMO_HELP);
          return EXIT.ok;
        }
        return await (await import("./demo/run.ts")).runDemo(o);
      }
      case "init":
        return await (await daemonCommands()).initCommand(rest, io);
      case "start":
        return await (await daemonCommands()).startCommand(rest, io);
      case "up":
        return await (await daemonCommands()).upCommand(rest, io);
      case "down":
        return await (await daemonCommands()).downCommand(rest, io);
      case "env":
        return await (await daemonCommands()).envCommand(rest, io);
      case "dashboard":
        return await (await daemonCommands()).dashboardCommand(rest, io);
      case "reshape":
        return await (await import("./commands/reshape.ts")).reshapeCommand(rest, io);
      case "bench":
        return await (await import("./commands/bench.ts")).benchCommand(rest, io);
      default: {
        if (TWO_WORD.has(cmd)) {
          const subs = Object.entries(API_COMMANDS).filter(([k]) => k.startsWith(`${cmd} `));
          const list = () => `Usage: heddle ${cmd} <subcommand> [options]          (heddle ${cmd} <subcommand> --help for its options)\n\n${subs.map(([, c]) => `  ${c.usage.replace(/^heddle /, "")}\n      ${c.summary}`).join("\n")}\n`;
          const sub = rest[0];
          if (sub === "--help" || sub === "-h" || sub === "help") {
            io.out(list());
            return EXIT.ok;
          }
          if (sub === undefined || API_COMMANDS[`${cmd} ${sub}`] === undefined) {
            io.err(`heddle: ${cmd} needs one of: ${subs.map(([k]) => k.split(" ")[1]).join(", ")}${sub === undefined ? "" : ` (not ${JSON.stringify(sub)})`}; heddle ${cmd} --help lists them\n`);
            return EXIT.usage;
          }
          label = `${cmd} ${sub}`;
          return await runApiCommand(label, rest.slice(1), io);
        }
        if (API_COMMANDS[cmd] === undefined) {
          io.err(`heddle: unknown command ${cmd}; heddle help lists them\n`);
          return EXIT.usage;
        }
        return await runApiCommand(cmd, rest, io);
      }
    }
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`heddle ${label}: ${e.message}\n`);
      return EXIT.usage;
    }
    if ((e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.err(`heddle ${label}: ${parseArgsMessage(e as Error & { code: string })} (heddle ${label} --help lists the options)\n`);
      return EXIT.usage;
    }
    if (e instanceof ConfigError) {
      io.err(`heddle ${label}: ${e.message}\n`);
      return EXIT.config;
    }
    if (e instanceof DaemonUnreachableError && e.sent && e.request !== null && e.request.method !== "GET") {
      // a write that left: the daemon may have applied it, so "cannot reach the daemon, start it" would invite a
      // second act with nothing to tell the first was done
      io.err(`heddle: ${label}: ${e.message}\n  its outcome is unknown: it may or may not have applied. ${unknownOutcomeHint(e.request.path, argv, label)}\n`);
      if (argv.includes("--json")) io.out(`${JSON.stringify({ error: "outcome-unknown", code: e.code, url: e.url, method: e.request.method, path: e.request.path, message: e.message })}\n`);
      return EXIT.unknown;
    }
    if (e instanceof DaemonUnreachableError) {
      // the client's own message may already say how to start it: say it once
      const hint = e.sent
        ? "  it took the request but gave no whole answer: check that it is healthy (heddle status, its log), or give it longer with --timeout S"
        : e.message.includes("heddle start") ? "  (or 'heddle up DIR' for a local cluster), or check --url / HEDDLE_URL" : "  start it with 'heddle start --config FILE' (or 'heddle up DIR' for a local cluster), or check --url / HEDDLE_URL";
      io.err(`heddle: ${e.sent ? "no answer from the daemon" : "cannot reach the daemon"}: ${e.message}\n${hint}\n`);
      // --json: a script reads every outcome from stdout, this one too
      if (argv.includes("--json")) io.out(`${JSON.stringify({ error: "unreachable", code: e.code, url: e.url, message: e.message })}\n`);
      return EXIT.unreachable;
    }
    if (e instanceof ApiError) {
      // --json prints the API's answer, a refusal's or an error's too (a script reads who holds what from stdout);
      // the human line still goes to stderr and the exit code says what kind of answer it is
      if (argv.includes("--json")) io.out(`${JSON.stringify(e.body)}\n`);
      return apiErrorExit(e, io);
    }
    io.err(`heddle ${label ?? ""}: internal error: ${(e as Error).stack ?? String(e)}\n`);
    return EXIT.internal;
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
