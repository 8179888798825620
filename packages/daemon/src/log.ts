// The daemon's structured log: one JSON object per line (`format: "json"`) or one readable line per
// event (`format: "text"`, the default). Fields are plain values; bigints print as decimal strings.

/** Log levels, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Where the daemon writes what it does. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  readonly format: "text" | "json";
  readonly level: LogLevel;
  /** Where lines go; default `process.stderr`. */
  readonly write?: (line: string) => void;
  /** Fixed fields on every line (e.g. the peer id). */
  readonly base?: Record<string, unknown>;
  readonly now?: () => Date;
}

function plain(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Error) return v.message;
  return v;
}

function textValue(v: unknown): string {
  const p = plain(v);
  if (typeof p === "string") return /[\s"=]/.test(p) || p === "" ? JSON.stringify(p) : p;
  return JSON.stringify(p, (_k, x) => plain(x));
}

/** A logger writing lines in `format`, dropping those below `level`. */
export function createLogger(o: LoggerOptions): Logger {
  const write = o.write ?? ((line: string) => void process.stderr.write(line));
  const now = o.now ?? (() => new Date());
  const base = o.base ?? {};
  const emit = (level: LogLevel, msg: string, fields: Record<string, unknown> = {}) => {
    if (RANK[level] < RANK[o.level]) return;
    const t = now().toISOString();
    if (o.format === "json") {
      write(`${JSON.stringify({ time: t, level, msg, ...base, ...fields }, (_k, x) => plain(x))}\n`);
      return;
    }
    const kv = Object.entries({ ...base, ...fields })
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => ` ${k}=${textValue(v)}`)
      .join("");
    write(`${t} ${level.toUpperCase().padEnd(5)} ${msg}${kv}\n`);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

/** A logger that drops everything (embedded servers in tests). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
