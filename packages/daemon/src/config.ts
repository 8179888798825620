// Reading a peer's config file: parse, check against the schema, check what a schema cannot say
// (cross-field rules), resolve relative paths, fill in defaults.
import { readFileSync } from "node:fs";
import { resolveEtcdLog, type EtcdLogSettings } from "./etcd-config.ts";
import { dirname, isAbsolute, resolve } from "node:path";
import { isIP } from "node:net";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import type { AttachmentRecord } from "@heddle/ledger";
import type { HeddleConfig } from "@heddle/node";
import { createClaims, type ClaimsOptions } from "@heddle/claims";
import { resolveClaimsGossipConfig } from "@heddle/node/claims-config";
import {
  GovernedModeSchema,
  PeerConfigOuterSchema,
  StaticModeSchema,
  type GovernedModeDocument,
  type PeerConfigDocument,
} from "./config-schema.ts";
import { amountOf, checker, INT64_MAX, renderIssues, type FieldIssue } from "./schema.ts";
import { genesisWeightProblems } from "./weight-sum.ts";

/** A config that cannot be used: every problem, each naming its field. */
export class ConfigError extends Error {
  readonly issues: readonly FieldIssue[];
  readonly file: string | null;

  constructor(file: string | null, issues: readonly FieldIssue[]) {
    super(`${file ?? "config"} is not a valid heddle config:\n${renderIssues(issues)}`);
    this.name = "ConfigError";
    this.issues = issues;
    this.file = file;
  }
}

/** Static mode, resolved: the genesis inputs of `heddleStatic` (node.md §13). */
export interface StaticMode {
  readonly kind: "static";
  readonly root: GroupId;
  readonly supply: ReadonlyMap<ReplicaId, bigint>;
  readonly topology: readonly AttachmentRecord[];
}

/** Governed mode, resolved: the Raft voters and learners (governed.md §1 G1). */
export interface GovernedMode {
  readonly kind: "governed";
  readonly root: GroupId;
  readonly voters: readonly string[];
  readonly learners: readonly string[];
  readonly raft: { electionTimeoutMinMs?: number; electionTimeoutMaxMs?: number; heartbeatIntervalMs?: number; snapshotMaxBytes?: number };
  /** Set: the control log lives on this etcd cluster instead of the embedded Raft (issue 18). */
  readonly etcd?: EtcdLogSettings;
  /** The granted claims table's options (`mode.claims`): identical on every peer, fixed for the log's life. */
  readonly claims?: ClaimsOptions;
}

/** Node tunables with their defaults filled in (amounts as bigint). */
export interface NodeTuning {
  readonly quantum: bigint;
  readonly maxHoldingsPerPeer: bigint;
  readonly perChildOutstandingCap?: bigint;
  readonly sleeperCredit?: bigint;
  readonly demandTtlMs: number;
  readonly antiEntropyIntervalMs: number;
  readonly heartbeat: { intervalMs: number; timeoutMs: number; reconnectWindowMs: number };
  readonly maxFrameBytes?: number;
  readonly maxGrantsPerSchedule: number;
  readonly compactAfterPatches?: number;
  readonly compactAfterPatchBytes?: number;
}

/** Named limits of the API and the daemon (each enforced; see the README's limits table). */
export interface DaemonLimits {
  readonly maxBodyBytes: number;
  readonly controlTimeoutMs: number;
  readonly maxStandingDemands: number;
  readonly maxIdempotencyEntries: number;
  readonly maxOpenReservations: number;
  readonly maxConnections: number;
  readonly requestTimeoutMs: number;
}

/** A peer's config, checked and resolved: absolute paths, defaults filled in. */
export interface DaemonConfig {
  /** The file it came from (`null` when built in memory). */
  readonly file: string | null;
  readonly keyFile: string;
  readonly listen: readonly string[];
  readonly announce: readonly string[];
  /** Every peer of the cluster, this one included. */
  readonly roster: readonly { id: string; addrs: string[] }[];
  readonly mode: StaticMode | GovernedMode;
  readonly storeDir: string;
  /** Governed mode's Raft log store (`store.raftLog`): see `openRaftLog` in governed-peer.ts. */
  readonly raftLog: "auto" | "wal" | "sqlite";
  readonly api: { readonly host: string; readonly port: number; readonly tokenFile: string; readonly tls: { keyFile: string; certFile: string } | null };
  readonly node: NodeTuning;
  /** Keeper and advisory claims, as the node takes them (`HeddleConfig.claims`). */
  readonly claims: NonNullable<HeddleConfig["claims"]>;
  readonly schedulerIntervalMs: number;
  readonly limits: DaemonLimits;
  readonly log: { readonly format: "text" | "json"; readonly level: "debug" | "info" | "warn" | "error" };
}

/** Defaults of every optional field. */
export const CONFIG_DEFAULTS = Object.freeze({
  quantum: 10n,
  maxHoldingsPerPeer: 1_000_000n,
  demandTtlMs: 30_000,
  antiEntropyIntervalMs: 1_000,
  heartbeat: { intervalMs: 1_000, timeoutMs: 3_000, reconnectWindowMs: 60_000 },
  maxGrantsPerSchedule: 10_000,
  schedulerIntervalMs: 100,
  limits: { maxBodyBytes: 65_536, controlTimeoutMs: 10_000, maxStandingDemands: 4_096, maxIdempotencyEntries: 10_000, maxOpenReservations: 100_000, maxConnections: 1_024, requestTimeoutMs: 30_000 },
  log: { format: "text" as const, level: "info" as const },
});

/**
 * `scheduler.intervalMs` may be at most `node.demandTtlMs` / this. The scheduler re-advertises an entry at its first
 * round once the entry is a third of the TTL old (scheduler.ts), so two advertisements can be up to TTL / 3 + interval
 * apart; node.md §6 has callers refresh at least every TTL / 2, hence interval ≤ TTL / 2 − TTL / 3 = TTL / 6.
 */
export const SCHEDULER_INTERVAL_TTL_DIVISOR = 6;

const outer = checker(PeerConfigOuterSchema);
const staticMode = checker(StaticModeSchema);
const governedMode = checker(GovernedModeSchema);

/** Reads and checks the config file at `path`; throws {@link ConfigError} naming every bad field. */
export function loadConfig(path: string): DaemonConfig {
  const file = resolve(path);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === "ENOENT";
    throw new ConfigError(file, [{ field: "(file)", problem: missing ? "does not exist; heddle init DIR writes one per peer (DIR/peer-N/heddle.json)" : `cannot be read: ${(e as Error).message}` }]);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(file, [{ field: "(document)", problem: `is not valid JSON: ${(e as Error).message}` }]);
  }
  return parseConfig(doc, file);
}

/** True for 127.0.0.0/8, ::1 and `localhost`. */
export function isLoopback(host: string): boolean {
  const h = host.startsWith("[") ? host.slice(1, -1) : host;
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1";
  return false;
}

function parseWeight(w: number | string): Weight {
  if (typeof w === "number") return Weight.of(BigInt(w), 1n);
  const [n, d] = w.split("/");
  return Weight.of(BigInt(n!), BigInt(d ?? "1"));
}

/**
 * Checks a parsed config document and resolves it; relative paths resolve against the directory of
 * `file` (or the working directory). Throws {@link ConfigError}.
 */
export function parseConfig(doc: unknown, file: string | null = null): DaemonConfig {
  const r = outer.check(doc);
  const issues: FieldIssue[] = r.ok ? [] : [...r.issues];
  let mode: StaticMode | GovernedMode | null = null;
  const d = doc as PeerConfigDocument;
  const rosterOk = r.ok || !issues.some((i) => i.field.startsWith("roster"));
  const rosterIds = rosterOk && Array.isArray(d?.roster) ? d.roster.map((e) => e.id) : null;
  // Repeated peer ids (whether each is a peer id, and each address a multiaddr, needs libp2p's parsers: startDaemon
  // checks those, config-addresses.ts, so that reading a config loads no libp2p module)
  if (r.ok) {
    const seen = new Set<string>();
    d.roster.forEach((e, i) => {
      if (seen.has(e.id)) issues.push({ field: `roster[${i}].id`, problem: `repeats peer id ${e.id}` });
      seen.add(e.id);
    });
  }
  // The mode is checked against the schema of its kind, so its errors name fields inside it.
  const m = (doc as { mode?: { kind?: unknown } } | null)?.mode;
  if (m !== undefined && m !== null && typeof m === "object" && (m.kind === "static" || m.kind === "governed")) {
    const mr = m.kind === "static" ? staticMode.check(m) : governedMode.check(m);
    if (!mr.ok) for (const i of mr.issues) issues.push({ field: i.field === "(document)" ? "mode" : `mode.${i.field}`, problem: i.problem });
    else mode = resolveMode(mr.value as PeerConfigDocument["mode"], rosterIds, issues, file === null ? process.cwd() : dirname(file));
  }
  if (issues.length > 0) throw new ConfigError(file, issues);

  // Cross-field rules the schema cannot express.
  const [host, portText] = splitHostPort(d.api.listen);
  const port = Number(portText);
  if (port > 65_535) issues.push({ field: "api.listen", problem: `port ${port} is out of range (0 … 65535)` });
  if (!isLoopback(host) && d.api.tls === undefined) {
    issues.push({ field: "api.tls", problem: `is missing: api.listen ${d.api.listen} is beyond loopback, which requires TLS (set api.tls.keyFile and api.tls.certFile)` });
  }
  const n = d.node ?? {};
  const hb = {
    intervalMs: n.heartbeatIntervalMs ?? CONFIG_DEFAULTS.heartbeat.intervalMs,
    timeoutMs: n.heartbeatTimeoutMs ?? CONFIG_DEFAULTS.heartbeat.timeoutMs,
    reconnectWindowMs: n.reconnectWindowMs ?? CONFIG_DEFAULTS.heartbeat.reconnectWindowMs,
  };
  if (hb.intervalMs >= hb.timeoutMs) issues.push({ field: "node.heartbeatTimeoutMs", problem: `must exceed node.heartbeatIntervalMs (${hb.intervalMs})` });
  const big = (v: string | number | undefined, field: string): bigint | undefined => {
    if (v === undefined) return undefined;
    const b = amountOf(v);
    if (b === null) issues.push({ field, problem: "is above 2^63 − 1" });
    return b ?? undefined;
  };
  const quantum = big(n.quantum, "node.quantum") ?? CONFIG_DEFAULTS.quantum;
  const maxHoldingsPerPeer = big(n.maxHoldingsPerPeer, "node.maxHoldingsPerPeer") ?? CONFIG_DEFAULTS.maxHoldingsPerPeer;
  // node.md §11's configuredWorstCase n·E + q, n at least the roster: exact int64, or every bound is unavailable
  const peersCounted = BigInt(Math.max(1, d.roster.length));
  if (peersCounted * maxHoldingsPerPeer + quantum > INT64_MAX) {
    issues.push(
      quantum + peersCounted > INT64_MAX
        ? { field: "node.quantum", problem: `is ${quantum}: with ${peersCounted} roster peers, the bound n·node.maxHoldingsPerPeer + node.quantum (node.md §11) leaves 2^63 − 1 whatever node.maxHoldingsPerPeer is; set it to at most ${INT64_MAX - peersCounted}` }
        : { field: "node.maxHoldingsPerPeer", problem: `is ${maxHoldingsPerPeer}: ${peersCounted} roster peers × it + node.quantum (${quantum}) — the bound of node.md §11 — leaves 2^63 − 1, so no bound could be computed; set it to at most ${(INT64_MAX - quantum) / peersCounted} (or lower node.quantum)` },
    );
  }
  const perChildOutstandingCap = big(n.perChildOutstandingCap, "node.perChildOutstandingCap");
  const sleeperCredit = big(n.sleeperCredit, "node.sleeperCredit");
  const demandTtlMs = n.demandTtlMs ?? CONFIG_DEFAULTS.demandTtlMs;
  const schedulerIntervalMs = d.scheduler?.intervalMs ?? CONFIG_DEFAULTS.schedulerIntervalMs;
  if (schedulerIntervalMs * SCHEDULER_INTERVAL_TTL_DIVISOR > demandTtlMs) {
    issues.push({
      field: "scheduler.intervalMs",
      problem: `is ${schedulerIntervalMs}, above node.demandTtlMs / ${SCHEDULER_INTERVAL_TTL_DIVISOR} (${Math.floor(demandTtlMs / SCHEDULER_INTERVAL_TTL_DIVISOR)} with node.demandTtlMs ${demandTtlMs}): the scheduler re-advertises demand at its first round after the demand is a third of node.demandTtlMs old, so a refresh can come up to node.demandTtlMs / 3 + scheduler.intervalMs apart, and node.md §6 requires one at least every node.demandTtlMs / 2 — lower scheduler.intervalMs or raise node.demandTtlMs`,
    });
  }
  const claims = resolveClaims(d.claims, issues);
  if (issues.length > 0) throw new ConfigError(file, issues);

  const base = file === null ? process.cwd() : dirname(file);
  const at = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  return {
    file,
    keyFile: at(d.identity.keyFile),
    listen: [...d.p2p.listen],
    announce: [...(d.p2p.announce ?? [])],
    roster: d.roster.map((e) => ({ id: e.id, addrs: [...e.addrs] })),
    mode: mode!,
    storeDir: at(d.store.dir),
    raftLog: d.store.raftLog ?? "auto",
    api: {
      host: host.startsWith("[") ? host.slice(1, -1) : host,
      port,
      tokenFile: at(d.api.tokenFile),
      tls: d.api.tls === undefined ? null : { keyFile: at(d.api.tls.keyFile), certFile: at(d.api.tls.certFile) },
    },
    node: {
      quantum,
      maxHoldingsPerPeer,
      ...(perChildOutstandingCap !== undefined ? { perChildOutstandingCap } : {}),
      ...(sleeperCredit !== undefined ? { sleeperCredit } : {}),
      demandTtlMs,
      antiEntropyIntervalMs: n.antiEntropyIntervalMs ?? CONFIG_DEFAULTS.antiEntropyIntervalMs,
      heartbeat: hb,
      ...(n.maxFrameBytes !== undefined ? { maxFrameBytes: n.maxFrameBytes } : {}),
      maxGrantsPerSchedule: n.maxGrantsPerSchedule ?? CONFIG_DEFAULTS.maxGrantsPerSchedule,
      ...(n.compactAfterPatches !== undefined ? { compactAfterPatches: n.compactAfterPatches } : {}),
      ...(n.compactAfterPatchBytes !== undefined ? { compactAfterPatchBytes: n.compactAfterPatchBytes } : {}),
    },
    claims,
    schedulerIntervalMs,
    limits: { ...CONFIG_DEFAULTS.limits, ...(d.limits ?? {}) },
    log: { ...CONFIG_DEFAULTS.log, ...(d.log ?? {}) },
  };
}

/**
 * `mode.claims` as the claims table takes it. The schema checked each field's shape; what only the table knows (a key
 * listed twice after trimming, a capacity for a key off the roster, an empty id) is checked by building a table, and
 * reported against the field to change.
 */
function resolveGrantedClaims(c: NonNullable<GovernedModeDocument["claims"]>, issues: FieldIssue[]): ClaimsOptions | undefined {
  const options: ClaimsOptions = {
    ...(c.roster !== undefined ? { roster: [...c.roster] } : {}),
    ...(c.capacity !== undefined ? { capacity: { ...c.capacity } } : {}),
    ...(c.maxPerHolder !== undefined ? { maxPerHolder: c.maxPerHolder } : {}),
  };
  try {
    createClaims(options);
  } catch (e) {
    const m = (e as Error).message;
    const field = /^capacity/.test(m) ? "mode.claims.capacity" : /^maxPerHolder/.test(m) ? "mode.claims.maxPerHolder" : "mode.claims.roster";
    issues.push({ field, problem: m });
    return undefined;
  }
  return options;
}

/** The `claims` section as the node takes it; cross-field problems are reported against the field to change. */
function resolveClaims(c: PeerConfigDocument["claims"], issues: FieldIssue[]): NonNullable<HeddleConfig["claims"]> {
  if (c === undefined) return {};
  const k = c.keeper;
  const timings = {
    ...(k?.renewEveryMs !== undefined ? { renewEveryMs: k.renewEveryMs } : {}),
    ...(k?.aliveMs !== undefined ? { aliveMs: k.aliveMs } : {}),
    ...(k?.settlingMs !== undefined ? { settlingMs: k.settlingMs } : {}),
    ...(k?.unclosedMs !== undefined ? { unclosedMs: k.unclosedMs } : {}),
    ...(k?.othersHeardMs !== undefined ? { othersHeardMs: k.othersHeardMs } : {}),
  };
  const out = {
    keeperRules: { ...(k?.parts ?? {}) },
    keeperTimings: timings,
    ...(c.antiEntropyMs !== undefined ? { antiEntropyMs: c.antiEntropyMs } : {}),
    ...(c.advisory?.ttlMs !== undefined ? { advisoryTtlMs: c.advisory.ttlMs } : {}),
    ...(c.maxClaimsPerSlot !== undefined ? { maxClaimsPerSlot: c.maxClaimsPerSlot } : {}),
  };
  try {
    resolveClaimsGossipConfig(out);
  } catch (e) {
    const m = (e as Error).message;
    // the daemon sets no tickMs (the node's 1 s default): a tick that misses a renewal is fixed by widening aliveMs
    const field = /claims\.keeperTimings\.settlingMs/.test(m)
      ? "claims.keeper.settlingMs"
      : /claims\.tickMs/.test(m)
        ? "claims.keeper.aliveMs"
        : /claims\.antiEntropyMs/.test(m)
          ? "claims.antiEntropyMs"
          : /renewEveryMs/.test(m)
            ? "claims.keeper.renewEveryMs"
            : "claims";
    issues.push({ field, problem: m.replace(/^HeddleConfig\.claims\.\S+ /, "") });
  }
  return out;
}

/**
 * The embedded Raft member's timing defaults and its fixed commit-notice period (`DEFAULT_RAFT_CONFIG` of
 * `@heddle/governed`, governed.md §4.1). Repeated here so that reading a config does not load `@heddle/governed`
 * (the CLI's API verbs import this module); config.test.ts checks they still equal the Raft's own.
 */
export const RAFT_TIMING_DEFAULTS = Object.freeze({ electionTimeoutMinMs: 150, electionTimeoutMaxMs: 300, heartbeatMs: 50, commitNoticeMs: 5 });

/** `mode.raft` as the Raft member takes it (`RaftConfig`): the config's `heartbeatIntervalMs` is Raft's `heartbeatMs`. */
export function raftConfigOf(r: GovernedMode["raft"]): { electionTimeoutMinMs?: number; electionTimeoutMaxMs?: number; heartbeatMs?: number; snapshotMaxBytes?: number } {
  return {
    ...(r.snapshotMaxBytes !== undefined ? { snapshotMaxBytes: r.snapshotMaxBytes } : {}),
    ...(r.electionTimeoutMinMs !== undefined ? { electionTimeoutMinMs: r.electionTimeoutMinMs } : {}),
    ...(r.electionTimeoutMaxMs !== undefined ? { electionTimeoutMaxMs: r.electionTimeoutMaxMs } : {}),
    ...(r.heartbeatIntervalMs !== undefined ? { heartbeatMs: r.heartbeatIntervalMs } : {}),
  };
}

/**
 * The Raft member's timing rules (`raftConfig` in `@heddle/governed`'s raft/config.ts, R-E8) checked on `mode.raft`
 * with the defaults filled in: electionTimeoutMinMs < electionTimeoutMaxMs, heartbeatIntervalMs <
 * electionTimeoutMinMs, and heartbeatIntervalMs above Raft's commit-notice period. Each issue names the key to change:
 * the one the file sets (the later of the two when it sets both).
 */
export function raftTimingIssues(r: GovernedMode["raft"]): FieldIssue[] {
  const d = RAFT_TIMING_DEFAULTS;
  const issues: FieldIssue[] = [];
  const min = r.electionTimeoutMinMs ?? d.electionTimeoutMinMs;
  const max = r.electionTimeoutMaxMs ?? d.electionTimeoutMaxMs;
  const hb = r.heartbeatIntervalMs ?? d.heartbeatMs;
  const shown = (key: keyof GovernedMode["raft"], v: number) => `mode.raft.${key} (${v}${r[key] === undefined ? ", the default" : ""})`;
  if (min >= max) {
    if (r.electionTimeoutMaxMs !== undefined) issues.push({ field: "mode.raft.electionTimeoutMaxMs", problem: `must exceed ${shown("electionTimeoutMinMs", min)}: the election timeout is drawn from [min, max)` });
    else issues.push({ field: "mode.raft.electionTimeoutMinMs", problem: `must be below ${shown("electionTimeoutMaxMs", max)}: the election timeout is drawn from [min, max)` });
  }
  if (hb >= min) {
    if (r.heartbeatIntervalMs !== undefined) issues.push({ field: "mode.raft.heartbeatIntervalMs", problem: `must be below ${shown("electionTimeoutMinMs", min)}, or followers start elections between heartbeats` });
    else issues.push({ field: "mode.raft.electionTimeoutMinMs", problem: `must exceed ${shown("heartbeatIntervalMs", hb)}, or followers start elections between heartbeats` });
  }
  if (hb <= d.commitNoticeMs) {
    issues.push({ field: "mode.raft.heartbeatIntervalMs", problem: `must exceed ${d.commitNoticeMs}, the Raft member's commit-notice period (commitNoticeMs), which is not configurable` });
  }
  return issues;
}

/** Splits `host:port` (IPv6 in brackets). */
export function splitHostPort(s: string): [string, string] {
  const i = s.lastIndexOf(":");
  return [s.slice(0, i), s.slice(i + 1)];
}

function resolveMode(m: PeerConfigDocument["mode"], rosterIds: readonly string[] | null, issues: FieldIssue[], base: string): StaticMode | GovernedMode {
  // With a broken roster (already reported), membership checks would only repeat that problem.
  const roster = { has: (id: string) => rosterIds === null || rosterIds.includes(id) };
  if (m.kind === "governed") {
    const voters = new Set<string>();
    m.voters.forEach((v, i) => {
      if (!roster.has(v)) issues.push({ field: `mode.voters[${i}]`, problem: `names ${v}, which is not in the roster` });
      if (voters.has(v)) issues.push({ field: `mode.voters[${i}]`, problem: `repeats ${v}` });
      voters.add(v);
    });
    m.learners.forEach((l, i) => {
      if (!roster.has(l)) issues.push({ field: `mode.learners[${i}]`, problem: `names ${l}, which is not in the roster` });
      if (voters.has(l)) issues.push({ field: `mode.learners[${i}]`, problem: `${l} is also a voter` });
    });
    if (m.voters.length === 0 && m.etcd === undefined) issues.push({ field: "mode.voters", problem: "is empty: name at least one Raft voter, or set mode.etcd to keep the control log on etcd" });
    if (m.etcd === undefined) issues.push(...raftTimingIssues(m.raft ?? {}));
    const etcd = m.etcd === undefined ? undefined : resolveEtcdLog(m.etcd, base, issues);
    const claims = m.claims === undefined ? undefined : resolveGrantedClaims(m.claims, issues);
    return { kind: "governed", root: GroupId(m.root), voters: [...m.voters], learners: [...m.learners], raft: { ...(m.raft ?? {}) }, ...(etcd !== undefined ? { etcd } : {}), ...(claims !== undefined ? { claims } : {}) };
  }
  const supply = new Map<ReplicaId, bigint>();
  let total = 0n;
  for (const [id, amount] of Object.entries(m.supply)) {
    const a = amountOf(amount);
    if (a === null) issues.push({ field: `mode.supply.${id}`, problem: "is above 2^63 − 1" });
    else total += a;
    if (!roster.has(id)) issues.push({ field: `mode.supply.${id}`, problem: "names a peer that is not in the roster" });
    supply.set(ReplicaId(id), a ?? 0n);
  }
  if (total > (1n << 63n) - 1n) issues.push({ field: "mode.supply", problem: "sums above 2^63 − 1" });
  for (const id of rosterIds ?? []) if (!Object.hasOwn(m.supply, id)) issues.push({ field: `mode.supply.${id}`, problem: "is missing: every roster peer needs a supply (0 is allowed)" });
  const ids = new Set<string>();
  const topology: AttachmentRecord[] = [];
  /** Each parsed edge's index in `mode.topology`. */
  const at = new Map<string, number>();
  m.topology.forEach((e, i) => {
    if (ids.has(e.id)) issues.push({ field: `mode.topology[${i}].id`, problem: `repeats edge id ${e.id}` });
    ids.add(e.id);
    if (e.parent === e.child) issues.push({ field: `mode.topology[${i}].child`, problem: "equals the parent" });
    let weight: Weight;
    try {
      weight = parseWeight(e.weight);
    } catch (x) {
      issues.push({ field: `mode.topology[${i}].weight`, problem: (x as Error).message });
      return;
    }
    topology.push({ id: AttachmentId(e.id), parent: GroupId(e.parent), child: GroupId(e.child), weight });
    at.set(e.id, i);
  });
  // Every genesis edge is ACTIVE: a parent whose children's weights sum past int64 could never be scheduled (the
  // API refuses such a prepare; weight-sum.ts). Named at the entry that tips its parent over, in the file's order.
  for (const bad of genesisWeightProblems(topology)) issues.push({ field: `mode.topology[${at.get(topology[bad.index]!.id)!}].weight`, problem: bad.message });
  return { kind: "static", root: GroupId(m.root), supply, topology };
}
