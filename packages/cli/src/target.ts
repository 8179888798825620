// Which daemon a command talks to, and with which token: --config FILE (reads api.listen and the token
// file), or --url with --token / --token-file, or the same from HEDDLE_CONFIG / HEDDLE_URL /
// HEDDLE_TOKEN / HEDDLE_TOKEN_FILE.
import { readFileSync } from "node:fs";
import { ClientOptionError, HeddleClient } from "@heddle/client";
import { loadConfig } from "@heddle/daemon/config";
import { UsageError } from "./exit-codes.ts";

/** Global options every API command accepts. */
export interface TargetOptions {
  config?: string;
  url?: string;
  token?: string;
  "token-file"?: string;
  timeout?: string;
}

/** `parseArgs` option specs of {@link TargetOptions}. */
export const TARGET_OPTIONS = {
  config: { type: "string", short: "c" },
  url: { type: "string" },
  token: { type: "string" },
  "token-file": { type: "string" },
  timeout: { type: "string" },
} as const;

/** The help lines of {@link TARGET_OPTIONS}. */
export const TARGET_HELP = `Which daemon (first that applies):
  -c, --config FILE     the peer's config file: its api.listen and api.tokenFile   (env HEDDLE_CONFIG)
  --url URL             the daemon's API, e.g. http://127.0.0.1:7201               (env HEDDLE_URL)
  --token T | --token-file F   the bearer token                        (env HEDDLE_TOKEN, HEDDLE_TOKEN_FILE)
                        (--token, then --token-file, then the environment)
  --timeout S           seconds to wait for an answer (default 30)`;

/** Longest `--timeout`, in seconds: Node's timers hold at most 2^31 − 1 ms. */
export const MAX_TIMEOUT_S = Math.floor((2 ** 31 - 1) / 1000);

/** The URL and token a config file points at. */
export function targetOfConfig(file: string): { url: string; token: string; ca?: Buffer } {
  const c = loadConfig(file);
  const host = c.api.host.includes(":") ? `[${c.api.host}]` : c.api.host === "0.0.0.0" ? "127.0.0.1" : c.api.host;
  const scheme = c.api.tls !== null ? "https" : "http";
  let token: string;
  try {
    token = readFileSync(c.api.tokenFile, "utf8").trim();
  } catch (e) {
    throw new UsageError(`cannot read the token file ${c.api.tokenFile} named by ${file}: ${(e as Error).message}`);
  }
  return { url: `${scheme}://${host}:${c.api.port}`, token, ...(c.api.tls !== null ? { ca: readFileSync(c.api.tls.certFile) } : {}) };
}

function readTokenFile(file: string, what = "--token-file"): string {
  try {
    return readFileSync(file, "utf8").trim();
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${file}: ${(e as Error).message}`);
  }
}

/** A client for the daemon the options (or environment) name. */
export function clientOf(o: TargetOptions, processEnv: NodeJS.ProcessEnv = process.env): HeddleClient {
  // An empty variable counts as unset (a shell's HEDDLE_CONFIG= clears it).
  const env = Object.fromEntries(Object.entries(processEnv).filter(([, v]) => v !== undefined && v !== ""));
  const timeoutMs = o.timeout === undefined ? 30_000 : Math.ceil(Number(o.timeout) * 1000);
  // Node truncates a timer above 2^31 − 1 ms with a TimeoutOverflowWarning on stderr
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_S * 1000) {
    throw new UsageError(`--timeout must be a positive number of seconds, at most ${MAX_TIMEOUT_S} (about 24 days), got ${JSON.stringify(o.timeout)}`);
  }
  const configFile = o.config ?? (o.url === undefined ? env["HEDDLE_CONFIG"] : undefined);
  // An explicit --token, then an explicit --token-file, beat the config's token file and the environment.
  const explicitToken = o.token ?? (o["token-file"] !== undefined ? readTokenFile(o["token-file"]) : undefined);
  if (configFile !== undefined) {
    const t = targetOfConfig(configFile);
    return made(() => new HeddleClient({ url: o.url ?? t.url, token: explicitToken ?? t.token, timeoutMs, ...(t.ca !== undefined ? { ca: t.ca } : {}) }), configFile);
  }
  const url = o.url ?? env["HEDDLE_URL"];
  if (url === undefined) throw new UsageError("which daemon? give --config FILE (a peer's heddle.json) or --url URL with --token, or set HEDDLE_CONFIG");
  const envFile = env["HEDDLE_TOKEN_FILE"];
  const token = explicitToken ?? env["HEDDLE_TOKEN"] ?? (envFile !== undefined ? readTokenFile(envFile, "HEDDLE_TOKEN_FILE") : undefined);
  if (token === undefined) throw new UsageError("no token: give --token or --token-file (the peer's api.tokenFile), or set HEDDLE_TOKEN");
  return made(() => new HeddleClient({ url, token, timeoutMs }));
}

/** The client `make` builds, with a bad URL or token said in the command line's terms (exit 2, not an internal error). */
function made(make: () => HeddleClient, configFile?: string): HeddleClient {
  try {
    return make();
  } catch (e) {
    if (!(e instanceof ClientOptionError)) throw e;
    const from = e.option === "url" ? "--url / HEDDLE_URL" : e.option === "token" ? "--token / --token-file / HEDDLE_TOKEN" : `--${e.option}`;
    throw new UsageError(`${from}${configFile !== undefined ? ` (or the config ${configFile})` : ""}: ${e.message.slice(e.option.length + 2)}`);
  }
}
