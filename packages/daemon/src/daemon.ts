// One heddle peer as a long-running service: libp2p, the SQLite store, the node, the scheduler and the
// HTTP API, started in that order and stopped in reverse. Embeddable: `startDaemon` runs it in-process
// (tests, benches, other tools); `heddle start` runs it as a process.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { privateKeyFromProtobuf } from "@libp2p/crypto/keys";
import type { PrivateKey } from "@libp2p/interface";
import { GroupId, ReplicaId } from "@heddle/ledger";
import {
  BootstrapError,
  heddleStatic,
  libp2pSeam,
  peerIdOf,
  realTimers,
  sqliteStore,
  StoreMismatchError,
  type HeddleConfig,
  type HeddleStore,
  type HeddleNode,
  type Libp2pSeam,
} from "@heddle/node";
import type { FastifyInstance } from "fastify";
import { buildApi } from "./api.ts";
import { ConfigError, loadConfig, raftTimingIssues, type DaemonConfig } from "./config.ts";
import { addressIssues } from "./config-addresses.ts";
import type { ControlPlane } from "./control-plane.ts";
import type { DataPlane } from "./data-plane.ts";
import { heddleGoverned, RaftConfigError, type RaftStorage } from "@heddle/governed";
import { LiveDashboard } from "./dashboard.ts";
import { RaftLogChoiceError, startGovernedPeer } from "./governed-peer.ts";
import { EtcdStartError } from "./etcd-log.ts";
import { createLogger, type Logger } from "./log.ts";
import { DaemonMetrics, timedStore } from "./metrics.ts";
import { logNodeEvent } from "./node-event-log.ts";
import { transportCountersOf, type PeerReads, type RaftWatches } from "./peer-reads.ts";
import { Scheduler } from "./scheduler.ts";
import { DAEMON_STATE_FILE, DaemonState } from "./daemon-state.ts";
import type { ReserveMemory } from "./reserve-memory.ts";

/** Why a daemon did not start; `reason` says which input to fix. */
export type DaemonStartReason = "config" | "key" | "token" | "tls" | "store" | "p2p-port" | "api-port" | "raft" | "etcd";

/** A daemon that could not start, with a message that says what to do. */
export class DaemonStartError extends Error {
  readonly reason: DaemonStartReason;
  /**
   * The peer id this daemon would have run as, on a port already in use (`p2p-port`, `api-port`): the CLI asks the
   * API at that port whether it is this very peer, already running; `null` otherwise.
   */
  readonly self: string | null;

  constructor(reason: DaemonStartReason, message: string, options?: { cause?: unknown; self?: string }) {
    super(message, options);
    this.name = "DaemonStartError";
    this.reason = reason;
    this.self = options?.self ?? null;
  }
}

/** Options of {@link startDaemon}. */
export interface StartDaemonOptions {
  /** Where the daemon logs; default: the config's `log` settings, to stderr. */
  readonly logger?: Logger;
  /**
   * The ledger store to use instead of `store.dir/ledger.sqlite` (embedding only: tests, and the API bench
   * that isolates HTTP cost from fsync cost with `memoryStore()`). Not settable from a config file.
   */
  readonly store?: HeddleStore;
  /**
   * How many control-log entries an `Idempotency-Key` is remembered for (`GovernedOptions.idempotencyWindow`,
   * default 10 000). Embedding only (tests that cross the window): it decides outcomes, so every peer of a cluster
   * must use the same value, which is why no config file sets it.
   */
  readonly idempotencyWindow?: number;
  /**
   * Segment size of the governed Raft log (`raft-wal/`) instead of the store's 16 MiB default (embedding only: the
   * storage-fault tests roll segments on a small disk). Not settable from a config file.
   */
  readonly raftSegmentBytes?: number;
  /**
   * Wraps the governed Raft log store this daemon opens (embedding only: the storage-fault tests inject a full or
   * read-only disk into it as any user). Not settable from a config file.
   */
  readonly wrapRaftLog?: (inner: RaftStorage) => RaftStorage;
  /**
   * Wraps the store of keyed reserve answers in `daemon.sqlite` (embedding only: the crash tests fail a keyed
   * reserve between its steps — before the reservation, between its commit and its answer's, after both). Not
   * settable from a config file; unused when `store` is given (then the answers live in memory).
   */
  readonly wrapReserveMemory?: (inner: ReserveMemory) => ReserveMemory;
}

/** A running daemon. */
export interface RunningDaemon {
  /** The API's base URL, e.g. `http://127.0.0.1:7201` (the real port when the config said 0). */
  readonly url: string;
  /** The bearer token every API call must carry. */
  readonly token: string;
  /** This peer's id (its `ReplicaId`). */
  readonly self: string;
  readonly mode: "static" | "governed";
  /** The libp2p addresses this peer listens on. */
  readonly p2pAddrs: readonly string[];
  readonly config: DaemonConfig;
  /**
   * Stops cleanly: stops accepting API calls and waits for those in flight (control calls included),
   * stops the scheduler, shuts the node down (closing the store), closes libp2p. Idempotent.
   */
  close(): Promise<void>;
}

/** Minimum length of an API token (init writes 43 characters: 32 random bytes, base64url). */
export const MIN_TOKEN_LENGTH = 16;

function readToken(file: string): string {
  let t: string;
  try {
    t = readFileSync(file, "utf8").trim();
  } catch (e) {
    throw new DaemonStartError("token", `api.tokenFile ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); heddle init writes one, or put a random string of at least ${MIN_TOKEN_LENGTH} characters there (mode 0600)`);
  }
  // visible ASCII only: a client sends a header in Latin-1, so any other character would reach us as other bytes
  if (t.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(t)) {
    throw new DaemonStartError("token", `api.tokenFile ${file} must hold one token of at least ${MIN_TOKEN_LENGTH} visible ASCII characters (no white space), e.g. 32 random bytes in base64url as heddle init writes`);
  }
  return t;
}

function readKey(file: string): PrivateKey {
  if (!existsSync(file)) throw new DaemonStartError("key", `identity.keyFile ${file} does not exist; heddle init creates the key of every peer (the key is the peer's identity, so it is never made up at start)`);
  try {
    return privateKeyFromProtobuf(readFileSync(file));
  } catch (e) {
    throw new DaemonStartError("key", `identity.keyFile ${file} is not a libp2p private key: ${(e as Error).message}`);
  }
}

function isAddrInUse(e: unknown): boolean {
  const m = `${(e as Error)?.message ?? ""} ${(e as NodeJS.ErrnoException)?.code ?? ""}`;
  return /EADDRINUSE|address already in use/i.test(m);
}

/** The node config (node.md §12) a daemon config describes. */
export function nodeConfigOf(c: DaemonConfig, store: HeddleConfig["store"]): HeddleConfig {
  const n = c.node;
  return {
    policy: {
      quantum: n.quantum,
      ...(n.perChildOutstandingCap !== undefined ? { perChildOutstandingCap: n.perChildOutstandingCap } : {}),
      ...(n.sleeperCredit !== undefined ? { sleeperCredit: n.sleeperCredit } : {}),
    },
    maxHoldingsPerPeer: n.maxHoldingsPerPeer,
    timers: realTimers,
    random: Math.random,
    store,
    demandTtlMs: n.demandTtlMs,
    antiEntropyIntervalMs: n.antiEntropyIntervalMs,
    heartbeat: n.heartbeat,
    maxGrantsPerSchedule: n.maxGrantsPerSchedule,
    ...(n.maxFrameBytes !== undefined ? { maxFrameBytes: n.maxFrameBytes } : {}),
    ...(n.compactAfterPatches !== undefined ? { compactAfterPatches: n.compactAfterPatches } : {}),
    ...(n.compactAfterPatchBytes !== undefined ? { compactAfterPatchBytes: n.compactAfterPatchBytes } : {}),
    claims: c.claims,
  };
}

/**
 * The libp2p seam's frame limit for `node.maxFrameBytes`. The node keeps min(its own limit, its channel's), and a
 * channel of the seam's mux carries one byte less than the seam (the channel tag), so a limit above the seam's default
 * needs a seam one byte larger, or the node stays at the default (1 MiB) whatever the config says. Below it the seam
 * keeps its default, as before: a smaller node limit refuses large frames as `oversize` without also shrinking the
 * Raft frames of channel 4, which follow the seam.
 */
export function seamFrameLimitOf(c: DaemonConfig): { maxFrameBytes?: number } {
  const n = c.node.maxFrameBytes;
  return n === undefined || n + 1 <= SEAM_DEFAULT_FRAME_BYTES ? {} : { maxFrameBytes: n + 1 };
}

/** `LIBP2P_SEAM_DEFAULTS.maxFrameBytes` of `@heddle/seam` (not a dependency of this package; frame-limit.test.ts checks it). */
export const SEAM_DEFAULT_FRAME_BYTES = 1_048_576;

/**
 * Starts one peer from its config (a path or a resolved {@link DaemonConfig}). Resolves once the API
 * listens; rejects with {@link ConfigError} or {@link DaemonStartError} (everything started so far is
 * stopped again).
 */
export async function startDaemon(configOrPath: DaemonConfig | string, opts: StartDaemonOptions = {}): Promise<RunningDaemon> {
  const config = typeof configOrPath === "string" ? loadConfig(configOrPath) : configOrPath;
  const addresses = addressIssues(config);
  if (addresses.length > 0) throw new ConfigError(config.file, addresses);
  const token = readToken(config.api.tokenFile);
  const key = readKey(config.keyFile);
  const self = peerIdOf(key);
  const logger = opts.logger ?? createLogger({ format: config.log.format, level: config.log.level, base: { peer: self.slice(-8) } });
  if (!config.roster.some((p) => p.id === self)) {
    throw new ConfigError(config.file, [{ field: "identity.keyFile", problem: `holds the key of peer ${self}, which is not in the roster` }]);
  }
  // a config built in memory has not been through parseConfig: its Raft timings are checked before anything opens
  if (config.mode.kind === "governed" && config.mode.etcd === undefined) {
    const raftIssues = raftTimingIssues(config.mode.raft);
    if (raftIssues.length > 0) throw new ConfigError(config.file, raftIssues);
  }
  let tls: { key: Buffer; cert: Buffer } | null = null;
  if (config.api.tls !== null) {
    try {
      tls = { key: readFileSync(config.api.tls.keyFile), cert: readFileSync(config.api.tls.certFile) };
    } catch (e) {
      throw new DaemonStartError("tls", `api.tls: ${(e as Error).message}`);
    }
    // the HTTPS server parses them only when the API is built, after the store and node started: a bad PEM is found
    // here, as the TLS start error it is, not as an internal error from deep in the start
    try {
      createSecureContext({ key: tls.key, cert: tls.cert });
    } catch (e) {
      throw new DaemonStartError(
        "tls",
        `api.tls.keyFile ${config.api.tls.keyFile} / api.tls.certFile ${config.api.tls.certFile}: not a usable PEM private key and certificate chain (${(e as Error).message}); point them at the PEM key and its matching certificate (-----BEGIN PRIVATE KEY----- / -----BEGIN CERTIFICATE-----)`,
        { cause: e },
      );
    }
  }
  const mode = config.mode;
  const cleanups: (() => Promise<void> | void)[] = [];
  const unwind = async () => {
    for (const f of cleanups.reverse()) {
      try {
        await f();
      } catch (e) {
        logger.warn("cleanup failed", { error: (e as Error).message });
      }
    }
  };

  try {
    mkdirSync(config.storeDir, { recursive: true, mode: 0o700 });
    let seam: Libp2pSeam;
    try {
      seam = await libp2pSeam({
        privateKey: key,
        listen: [...config.listen],
        roster: config.roster.filter((p) => p.id !== self).map((p) => ({ id: p.id, addrs: [...p.addrs] })),
        allowOnlyRoster: true,
        timers: realTimers,
        random: Math.random,
        redialMinMs: 250,
        redialMaxMs: 5_000,
        ...seamFrameLimitOf(config),
      });
    } catch (e) {
      if (isAddrInUse(e)) throw new DaemonStartError("p2p-port", `p2p.listen ${config.listen.join(", ")}: the address is in use by another process; stop it or pick another port`, { cause: e, self });
      throw new DaemonStartError("p2p-port", `p2p.listen ${config.listen.join(", ")}: libp2p could not listen: ${(e as Error).message}`, { cause: e });
    }
    cleanups.push(() => seam.close());

    const storePath = join(config.storeDir, "ledger.sqlite");
    const metrics = new DaemonMetrics();
    cleanups.push(() => metrics.close());
    let data: DataPlane;
    let control: ControlPlane | null = null;
    let raft: RaftWatches | null = null;
    let partitionEvents: HeddleNode["partitionEvents"];
    // the data-plane node's events, in either mode: a ledger store that cannot commit must reach the log
    let nodeEvents: HeddleNode["events"];
    // The store this daemon opened itself; closed again if the node cannot start on it (a leaked SQLite
    // handle keeps a read-only shared-memory mapping that makes the next open in this process fail).
    let ownStore: HeddleStore | null = null;
    try {
      const store = timedStore(opts.store ?? (ownStore = sqliteStore(storePath)), metrics);
      if (mode.kind === "static") {
        const node = heddleStatic({
          seam,
          self: ReplicaId(self),
          root: mode.root,
          supply: mode.supply,
          topology: mode.topology,
          config: nodeConfigOf(config, store),
        });
        cleanups.push(() => node.shutdown());
        nodeEvents = node.events;
        data = node;
        partitionEvents = node.partitionEvents;
      } else {
        const peer = await startGovernedPeer({ heddleGoverned, seam, self: ReplicaId(self), mode, storeDir: config.storeDir, raftLog: config.raftLog, ...(opts.raftSegmentBytes !== undefined ? { raftSegmentBytes: opts.raftSegmentBytes } : {}), ...(opts.wrapRaftLog !== undefined ? { wrapRaftLog: opts.wrapRaftLog } : {}), config: nodeConfigOf(config, store), logger, ...(opts.idempotencyWindow === undefined ? {} : { idempotencyWindow: opts.idempotencyWindow }) });
        cleanups.push(() => peer.close());
        data = peer.node;
        control = peer.control;
        // The Raft gauges exist only on the embedded Raft member; the etcd log has no role or term of ours.
        const member = peer.raft;
        if ("role" in member && "commitIndex" in member) raft = { role: member.role, leader: member.leader, commitIndex: member.commitIndex, membership: member.membership, term: peer.term, refusedFrames: () => member.refusedFrames(), subscriberErrors: () => member.subscriberErrors() };
        partitionEvents = peer.node.partitionEvents;
        nodeEvents = peer.node.events;
      }
    } catch (e) {
      try {
        ownStore?.close();
      } catch {
        // already closed by the node
      }
      if (e instanceof RaftLogChoiceError) throw new DaemonStartError("store", `${e.message} (config ${config.file ?? "(inline)"})`, { cause: e });
      if (e instanceof EtcdStartError) throw new DaemonStartError("etcd", `${e.message} (config ${config.file ?? "(inline)"})`, { cause: e });
      if (e instanceof StoreMismatchError) {
        throw new DaemonStartError("store", `store ${storePath} belongs to another cluster or peer (${e.message}); point store.dir at this cluster's store or at an empty directory`, { cause: e });
      }
      if (e instanceof RaftConfigError) throw new ConfigError(config.file, [{ field: "mode.raft", problem: `is refused by the Raft member: ${e.message.replace(/\bheartbeatMs\b/g, "heartbeatIntervalMs")}` }]);
      // the node's refusals of what its store holds (boot counter, a restored ledger leaving int64) are about the store, not the config
      if (e instanceof BootstrapError && e.message.startsWith("store: ")) throw new DaemonStartError("store", `store ${storePath} cannot be served from: ${e.message.slice("store: ".length)}`, { cause: e });
      if (e instanceof BootstrapError) throw new ConfigError(config.file, [{ field: "mode", problem: `does not make a valid genesis: ${e.message}` }]);
      throw new DaemonStartError("store", `store ${storePath} could not be opened: ${(e as Error).message}`, { cause: e });
    }
    const liveness = new Map<string, { kind: string; at: number; reason?: string }>();
    const offLive = partitionEvents.subscribe((e) => {
      liveness.set(e.peer, { kind: e.kind, at: Date.now(), ...(e.reason !== undefined ? { reason: e.reason } : {}) });
      logger.info(`peer ${e.kind}`, { other: e.peer, ...(e.reason !== undefined ? { reason: e.reason } : {}) });
    });
    cleanups.push(offLive);
    const storeName = opts.store === undefined ? storePath : "(embedder's store)";
    const offEvents = nodeEvents.subscribe((e) => logNodeEvent(logger, e, storeName));
    cleanups.push(offEvents);
    const closedAtBoot = data.gossipClaims?.closedAtBoot ?? [];
    if (closedAtBoot.length > 0) {
      // restored from the store, on parts the operator removed from the config: closed (and sent) by the node at boot
      logger.warn("keeper claims closed at start: their parts are no longer in claims.keeper.parts", { parts: closedAtBoot.join(", ") });
    }
    // a store failure inside the node's construction (that close's write, at boot) emitted its persist-failed event
    // before anything here subscribed: say so now, or the log would never tell why every write answers 503
    if (data.metrics?.().failed === true) {
      logger.error("store commit failed at start: the node has failed closed; restart it once the store is writable", { store: storeName });
    }

    // Standing demand and keyed reserve answers outlive the process (not when an embedder brings its own
    // ledger store: it chose what is durable).
    let state: DaemonState | null = null;
    if (opts.store === undefined) {
      try {
        state = new DaemonState(join(config.storeDir, DAEMON_STATE_FILE), config.limits.maxIdempotencyEntries, { peer: data.self, genesis: data.genesisDigest ?? "(none)" });
      } catch (e) {
        throw new DaemonStartError("store", `${join(config.storeDir, DAEMON_STATE_FILE)} could not be opened: ${(e as Error).message}`, { cause: e });
      }
      const opened = state;
      cleanups.push(() => opened.close());
    }
    const scheduler = new Scheduler({
      node: data,
      root: GroupId(mode.root),
      timers: realTimers,
      intervalMs: config.schedulerIntervalMs,
      demandTtlMs: config.node.demandTtlMs,
      maxStanding: config.limits.maxStandingDemands,
      onError: (e) => logger.error("schedule round failed", { error: (e as Error).stack ?? String(e) }),
      ...(state !== null ? { memory: state } : {}),
    });
    if (state !== null) {
      let saved;
      try {
        saved = state.standing();
      } catch (e) {
        throw new DaemonStartError("store", `${join(config.storeDir, DAEMON_STATE_FILE)}: ${(e as Error).message}`, { cause: e });
      }
      scheduler.restore(saved);
      if (saved.length > 0) logger.info("standing demand restored", { edges: scheduler.standing().length, lapsed: saved.length - scheduler.standing().length });
    }
    scheduler.start();
    cleanups.push(() => scheduler.stop());

    const reads: PeerReads = {
      data,
      mode: mode.kind,
      root: GroupId(mode.root),
      roster: config.roster,
      connected: () => seam.peers.get(),
      lastLiveness: () => liveness,
      control,
      raft,
      transport: transportCountersOf(seam),
    };
    metrics.attach(reads);
    const dashboard = new LiveDashboard({ reads, token, partitionEvents, logger, metrics });
    cleanups.push(() => dashboard.close());

    let app: FastifyInstance;
    app = await buildApi({
      metrics,
      dashboard,
      data,
      control,
      scheduler,
      mode: mode.kind,
      root: GroupId(mode.root),
      token,
      logger,
      limits: config.limits,
      ...(state !== null ? { reserveMemory: opts.wrapReserveMemory === undefined ? state.reserveMemory() : opts.wrapReserveMemory(state.reserveMemory()) } : {}),
      demandTtlMs: config.node.demandTtlMs,
      tuning: { maxHoldingsPerPeer: config.node.maxHoldingsPerPeer, quantum: config.node.quantum },
      tls,
      roster: config.roster,
      connected: () => seam.peers.get(),
      addrs: () => seam.addrs(),
      lastLiveness: () => liveness,
      startedAt: Date.now(),
    });
    try {
      await app.listen({ host: config.api.host, port: config.api.port });
    } catch (e) {
      await app.close().catch(() => {});
      if (isAddrInUse(e)) throw new DaemonStartError("api-port", `api.listen ${config.api.host}:${config.api.port}: the address is in use by another process; stop it or pick another port`, { cause: e, self });
      throw new DaemonStartError("api-port", `api.listen ${config.api.host}:${config.api.port}: cannot listen: ${(e as Error).message}`, { cause: e });
    }
    const addr = app.server.address();
    const port = typeof addr === "object" && addr !== null ? addr.port : config.api.port;
    const host = config.api.host.includes(":") ? `[${config.api.host}]` : config.api.host;
    const url = `${tls !== null ? "https" : "http"}://${host}:${port}`;
    logger.info("heddle peer started", { mode: mode.kind, api: url, p2p: seam.addrs().join(" "), store: config.storeDir, epoch: data.epoch ?? null });

    let closing: Promise<void> | null = null;
    return {
      url,
      token,
      self,
      mode: mode.kind,
      p2pAddrs: seam.addrs(),
      config,
      close() {
        closing ??= (async () => {
          logger.info("stopping: no new API calls; finishing those in flight");
          await app.close();
          await unwind();
          logger.info("stopped");
        })();
        return closing;
      },
    };
  } catch (e) {
    await unwind();
    throw e;
  }
}
