// Governed mode: the Raft member (SQLite log under store.dir, Raft frames on channel 4 of the peer's seam)
// and the governed node (governed.md §2) fitted to the API's `ControlPlane`, plus the `enroll(self)` every
// start must make (§3.9) before the peer may write ledger slots.
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { AttachmentId, AttachmentRecord, ReplicaId } from "@heddle/ledger";
import { IDEMPOTENCY_CLIENT_PREFIX, raftChannelTransport, raftConfig, raftNode, sqliteRaftStorage, walRaftStorage, type ControlLog, type EtcdControlLog, type RaftNode, type RaftStorage } from "@heddle/governed";
import { realTimers, WatchCell, type EventStream, type HeddleConfig, type NodeEvent, type PartitionEvent, type Seam, type Watch } from "@heddle/node";
import { claimsWithReadRefusals, type ReadRefusalCounts } from "./claims-at-read.ts";
import { raftConfigOf, type GovernedMode } from "./config.ts";
import { CONTROL_ERRORS, controlHaltOf } from "./control-plane.ts";
import type { CallOptions, ClaimsVerbs, ControlOutcome, ControlPlane, ControlView, RosterView } from "./control-plane.ts";
import type { DataPlane } from "./data-plane.ts";
import type { Logger } from "./log.ts";
import { openEtcdLog } from "./etcd-log.ts";

/** What the daemon uses of a `GovernedHeddleNode` (governed.md §2.2). */
export interface GovernedNodeLike
  extends Omit<DataPlane, "self">,
    Pick<ControlPlane, "mint" | "prepare" | "activate" | "close" | "retire" | "enroll" | "depart" | "claims" | "roster"> {
  readonly self: ReplicaId;
  readonly isWritable: boolean;
  readonly partitionEvents: EventStream<PartitionEvent>;
  /** The data-plane node's events (the store's `persist-failed` above all), logged by the daemon. */
  readonly events: EventStream<NodeEvent>;
  controlView(): ControlView;
  sync(opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ControlView>;
  shutdown(): Promise<void>;
  /** The error the control plane halted with, `null` while it runs (`GovernedHeddleNode.controlHalted`). */
  readonly controlHalted?: Watch<Error | null>;
  /** Retires this process proposed with less than the full witness (`GovernedHeddleNode.retireWitnessCounts`). */
  retireWitnessCounts?(): { readonly sliceOnly: number; readonly omitted: number; readonly unbalanced: number };
}

/** `heddleGoverned`'s signature (governed.md §2.1), as the daemon calls it. */
export type HeddleGovernedFn = (opts: { seam: Seam; self: ReplicaId; root: GovernedMode["root"]; config: HeddleConfig; raft: ControlLog; incarnation: string; idempotencyWindow?: number; claims?: GovernedMode["claims"] }) => GovernedNodeLike;

/** An error the API maps to 409 `refused` with `refusal.kind = "not-leader"`. */
export class NotLeaderHereError extends Error {
  readonly leader: string | null;

  constructor(leader: string | null) {
    super(leader === null ? "no leader is known right now; retry in a moment" : `this peer is not the Raft leader; run it against the leader, ${leader}`);
    this.name = "NotLeaderHereError";
    this.leader = leader;
  }
}

/**
 * A leader transfer this peer cannot make because its control log is on etcd (`mode.etcd`), where heddle peers are
 * clients and etcd elects its own leader. Named `LeadershipTransferError`, as the Raft member's refusals are, so the
 * API answers 409 `{refusal: {kind: "transfer-failed", reason: "etcd"}}` (it maps control errors by `name`).
 */
export class EtcdLeadershipTransferError extends Error {
  override readonly name = "LeadershipTransferError";
  readonly reason = "etcd";

  constructor() {
    super("the control log is on etcd (mode.etcd), which elects its own leader: move etcd's leader with `etcdctl move-leader` instead");
  }
}

const isRaft = (log: ControlLog): log is RaftNode => "membership" in log && "transferLeadership" in log;

/** The `ControlPlane` of a governed node and its control log (a Raft member, or etcd's log: `mode.etcd`). */
export function governedControlPlane(g: GovernedNodeLike, raft: ControlLog, log: { kind: "wal" | "sqlite"; path: string; failed(): string | null } | null = null): ControlPlane {
  const readPath: ReadRefusalCounts = { refusedAtRead: 0, passedAfterRead: 0, proposed: 0, waitedForTake: 0 };
  return {
    mint: (h, a, o) => g.mint(h, a, o),
    prepare: (r, o) => g.prepare(r, o),
    activate: (e, o) => g.activate(e, o),
    close: (e, o) => g.close(e, o),
    retire: (e, o) => g.retire(e, o),
    enroll: (r, o) => g.enroll(r, o),
    depart: (o) => g.depart(o),
    claims: claimsWithReadRefusals({ claims: g.claims, controlView: () => g.controlView(), sync: (o) => g.sync(o), isLeader: () => raft.role.get() === "leader", now: () => realTimers.now(), judgeFloor: () => Math.max(g.controlView().latestStamp ?? 0, raft.stampFloor?.() ?? 0), timers: realTimers }, readPath),
    claimsReadPath: () => readPath,
    ...(g.retireWitnessCounts !== undefined ? { retireWitnessCounts: () => g.retireWitnessCounts!() } : {}),
    halted: () => {
      const e = g.controlHalted?.get() ?? null;
      return e === null ? null : controlHaltOf(e);
    },
    get isWritable() {
      return g.isWritable;
    },
    roster: () => g.roster(),
    controlView: () => g.controlView(),
    sync: (o) => g.sync(o),
    raft: () => {
      // on etcd, heddle peers are clients: no voters of ours; the commit index is this peer's applied index
      if (!isRaft(raft)) {
        const etcd = "status" in raft && typeof raft.status === "function" ? (raft as EtcdControlLog).status() : undefined;
        return { role: "etcd", leader: raft.leader.get(), commitIndex: g.controlView().appliedIndex, voters: [], learners: [], ...(etcd !== undefined ? { etcd } : {}) };
      }
      const m = raft.membership.get();
      return {
        role: raft.role.get(),
        leader: raft.leader.get(),
        commitIndex: raft.commitIndex.get(),
        voters: [...m.voters],
        learners: [...m.learners],
        snapshotStalls: raft.snapshotStalls().map((s) => ({ side: s.side, peer: s.peer, snapshotBytes: s.snapshotBytes, snapshotMaxBytes: s.snapshotMaxBytes, message: s.message.replace(/\bsnapshotMaxBytes\b/g, "mode.raft.snapshotMaxBytes") })),
        ...(log !== null ? { log: { kind: log.kind, path: log.path, failed: log.failed() } } : {}),
      };
    },
    async transferLeadership(to) {
      if (!isRaft(raft)) throw new EtcdLeadershipTransferError();
      if (raft.role.get() !== "leader") throw new NotLeaderHereError(raft.leader.get());
      await raft.transferLeadership(to);
    },
  };
}

/**
 * `storage` with the term it loads and saves reported to `term`: Raft makes every new term durable before
 * acting in it (R-P1), so this is the member's current term on followers as well as leaders.
 */
export function termObservingStorage(storage: RaftStorage, term: { set(v: number): void }): RaftStorage {
  return {
    async load() {
      const s = await storage.load();
      term.set(s.term);
      return s;
    },
    async saveTermAndVote(t, votedFor) {
      await storage.saveTermAndVote(t, votedFor);
      term.set(t);
    },
    append: (entries) => storage.append(entries),
    truncateFrom: (index) => storage.truncateFrom(index),
    saveSnapshot: (s) => storage.saveSnapshot(s),
    discardThrough: (index) => storage.discardThrough(index),
    close: () => storage.close(),
  };
}

/** The Raft log store a governed peer runs on (`store.raftLog`). */
export type RaftLogChoice = "auto" | "wal" | "sqlite";

/** Where and what the Raft log store is, for status and the start-up log. */
export interface RaftLogInfo {
  readonly kind: "wal" | "sqlite";
  readonly path: string;
  /** Why this store: the configured key, or what `auto` found in `store.dir`. */
  readonly why: string;
}

/** The Raft log directory of the segmented log store, under `store.dir`. */
export const RAFT_WAL_DIR = "raft-wal";
/** The SQLite Raft log of stores made before the segmented log store (and of `store.raftLog: "sqlite"`). */
export const RAFT_SQLITE_FILE = "raft.sqlite";
/**
 * Where the segmented log store does its writes and data syncs: on libuv's I/O pool from the main thread
 * (`"io-pool"`). Measured against `"worker"` through the daemon's API (README, "Raft log store"): the same commit
 * latency at one client, less CPU per call (no message round trip and copy of every batch to a worker).
 */
export const RAFT_WAL_THREAD = "io-pool";

/** A Raft log store that cannot be chosen as configured: names `store.raftLog` and what to do. */
export class RaftLogChoiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RaftLogChoiceError";
  }
}

/**
 * Picks the Raft log store in `storeDir`. `auto` keeps an existing `raft.sqlite` (stores made before the segmented
 * log store keep working, unmigrated) and otherwise uses `raft-wal/`. A store never starts on an empty log of
 * one kind when it holds the other: that would restart the member with no term, vote or log under the same id
 * (R-P5), so `wal` beside a `raft.sqlite`, `sqlite` beside a `raft-wal/` with segments, or both present, refuse.
 */
export function chooseRaftLog(storeDir: string, choice: RaftLogChoice): RaftLogInfo {
  const sqlitePath = join(storeDir, RAFT_SQLITE_FILE);
  const walPath = join(storeDir, RAFT_WAL_DIR);
  const hasSqlite = existsSync(sqlitePath);
  const hasWal = existsSync(walPath) && readdirSync(walPath).some((n) => n.endsWith(".seg"));
  if (hasSqlite && hasWal) {
    throw new RaftLogChoiceError(`store.dir ${storeDir} holds two Raft logs, ${RAFT_SQLITE_FILE} and ${RAFT_WAL_DIR}/; only one can be this member's — move the one it did not run on away (store.raftLog is "${choice}")`);
  }
  if (choice === "wal") {
    if (hasSqlite) throw new RaftLogChoiceError(`store.raftLog is "wal" but store.dir ${storeDir} holds a SQLite Raft log (${RAFT_SQLITE_FILE}); starting on an empty log would lose this member's term, vote and entries. Set store.raftLog to "auto" or "sqlite" to keep using it`);
    return { kind: "wal", path: walPath, why: 'store.raftLog "wal"' };
  }
  if (choice === "sqlite") {
    if (hasWal) throw new RaftLogChoiceError(`store.raftLog is "sqlite" but store.dir ${storeDir} holds a segmented Raft log (${RAFT_WAL_DIR}/); starting on an empty log would lose this member's term, vote and entries. Set store.raftLog to "auto" or "wal" to keep using it`);
    return { kind: "sqlite", path: sqlitePath, why: 'store.raftLog "sqlite"' };
  }
  if (hasSqlite) return { kind: "sqlite", path: sqlitePath, why: `an existing ${RAFT_SQLITE_FILE} (store.raftLog "auto" keeps it; new stores use ${RAFT_WAL_DIR}/)` };
  return { kind: "wal", path: walPath, why: 'store.raftLog "auto" on a store without raft.sqlite' };
}

/** Opens the store `chooseRaftLog` picked (`segmentBytes`: the segmented log's, for tests). */
export function openRaftLog(info: RaftLogInfo, segmentBytes?: number): RaftStorage {
  if (info.kind === "sqlite") return sqliteRaftStorage(info.path, { thread: "worker" });
  return walRaftStorage(info.path, { thread: RAFT_WAL_THREAD, ...(segmentBytes !== undefined ? { segmentBytes } : {}) });
}

/**
 * `storage` with its first write failure logged once, as an operator needs it: the Raft member stops on it (it
 * fails closed — control calls answer 503 `NodeShutdownError`), and only a restart on a writable disk resumes it.
 */
export function failureReportingStorage(storage: RaftStorage, info: RaftLogInfo, logger: Logger, failed: { error: string | null }): RaftStorage {
  const watch = async <T>(op: string, p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (e) {
      if (failed.error === null) {
        failed.error = `${op}: ${(e as Error).message}`;
        logger.error("raft log write failed: the Raft member has stopped (failed closed); restart it once the disk is writable", { store: info.path, op, error: (e as Error).message });
      }
      throw e;
    }
  };
  return {
    load: () => storage.load(),
    saveTermAndVote: (t, v) => watch("saveTermAndVote", storage.saveTermAndVote(t, v)),
    append: (es) => watch("append", storage.append(es)),
    truncateFrom: (i) => watch("truncateFrom", storage.truncateFrom(i)),
    saveSnapshot: (s) => watch("saveSnapshot", storage.saveSnapshot(s)),
    discardThrough: (i) => watch("discardThrough", storage.discardThrough(i)),
    close: () => storage.close(),
  };
}

/** A started governed peer. */
export interface GovernedPeer {
  readonly node: GovernedNodeLike;
  /** The Raft member, or the etcd log (`mode.etcd`). */
  readonly raft: RaftNode | EtcdControlLog;
  /** The Raft term, as the member persists it (stays 0 on the etcd log, which has no term of ours). */
  readonly term: Watch<number>;
  readonly control: ControlPlane;
  /** The Raft log store (null on the etcd log). */
  readonly raftLog: RaftLogInfo | null;
  /** Stops the enroll loop, the node and the Raft member. */
  close(): Promise<void>;
}

/** Longest wait between two attempts of the start-up `enroll(self)`. */
export const ENROLL_RETRY_MAX_MS = 5_000;

/**
 * Starts the Raft member and the governed node, then enrolls this peer in the background, retrying with the
 * same key after an unknown outcome until it applies (a peer started before a quorum is up simply waits).
 */
export async function startGovernedPeer(o: {
  heddleGoverned: HeddleGovernedFn;
  seam: Seam;
  self: ReplicaId;
  mode: GovernedMode;
  storeDir: string;
  /** `store.raftLog` (default `"auto"`). */
  raftLog?: RaftLogChoice;
  /** The segmented log's segment size (tests; default the store's). */
  raftSegmentBytes?: number;
  /** Wraps the Raft log store (tests inject storage faults). */
  wrapRaftLog?: (inner: RaftStorage) => RaftStorage;
  config: HeddleConfig;
  logger: Logger;
  /** Tests only: `GovernedOptions.idempotencyWindow` (default 10 000; equal on every peer). */
  idempotencyWindow?: number;
}): Promise<GovernedPeer> {
  const term = new WatchCell(0);
  // The daemon never changes the Raft membership at run time, so its configured voters and learners are every member
  // there will be: a roster peer outside them is heard on the data-plane channels only, never on Raft (issue 17).
  const members = new Set<string>([...o.mode.voters, ...o.mode.learners]);
  const raftLog = o.mode.etcd !== undefined ? null : chooseRaftLog(o.storeDir, o.raftLog ?? "auto");
  const failed: { error: string | null } = { error: null };
  let subscriberErrorLogged = false;
  if (raftLog !== null) o.logger.info(`raft log: ${raftLog.kind === "wal" ? "segmented log store" : "SQLite"} at ${raftLog.path}`, { why: raftLog.why });
  const raft: RaftNode | EtcdControlLog = raftLog === null ? await openEtcdLog(o.mode.etcd!, o.self, (m) => o.logger.warn(m)) : await startRaftMember(raftLog);
  async function startRaftMember(info: RaftLogInfo): Promise<RaftNode> {
    // checked first, so a bad `mode.raft` never opens the log store it would then have to close
    const config = raftConfig(raftConfigOf(o.mode.raft));
    const storage = termObservingStorage(failureReportingStorage((o.wrapRaftLog ?? ((s) => s))(openRaftLog(info, o.raftSegmentBytes)), info, o.logger, failed), term);
    try {
      return raftNode({
        cluster: { voters: [...o.mode.voters], learners: [...o.mode.learners] },
        transport: raftChannelTransport(o.seam, (m) => o.logger.warn(m)),
        storage,
        timers: realTimers,
        random: Math.random,
        config,
        defer: (fn) => void setImmediate(fn),
        admit: (from) => members.has(from),
        // an Idempotency-Key's outcome is forgotten after its window while its entry may still be in the log: its
        // retries are appended and answered by the control state, never pointed at an entry nobody can answer for
        coalesce: (key) => !key.client.startsWith(IDEMPOTENCY_CLIENT_PREFIX),
        // a status/metrics subscriber of the member's cells that throws is a daemon bug: logged, the member goes on
        // (the first one only: one on every commit would flood the log)
        onSubscriberError: (e) => {
          if (subscriberErrorLogged) return;
          subscriberErrorLogged = true;
          o.logger.error("raft member caught an error thrown by a subscriber of its role/leader/commit index: a bug, which it contained and went on; report it with this line (later ones are not logged)", { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
        },
      });
    } catch (e) {
      // the member never started, so nothing else will close the log store it was given
      await storage.close().catch(() => {});
      throw e;
    }
  }
  try {
    await raft.started;
  } catch (e) {
    await raft.close().catch(() => {});
    throw e;
  }
  let node: GovernedNodeLike;
  try {
    node = o.heddleGoverned({
      seam: o.seam,
      self: o.self,
      root: o.mode.root,
      config: o.config,
      raft,
      incarnation: randomUUID(),
      ...(o.idempotencyWindow === undefined ? {} : { idempotencyWindow: o.idempotencyWindow }),
      ...(o.mode.claims === undefined ? {} : { claims: o.mode.claims }),
    });
  } catch (e) {
    await raft.close().catch(() => {});
    throw e;
  }
  let stopped = false;
  // a halted control plane is logged once, in the words of this config file (a settings mismatch names its keys)
  const logHalt = (e: Error | null): void => {
    if (e === null || stopped) return;
    const h = controlHaltOf(e);
    o.logger.error(h.message, { index: h.index, ...(h.settings.length > 0 ? { configKeys: h.settings.map((s) => s.configKey) } : {}) });
  };
  const unsubscribeHalt = node.controlHalted?.subscribe(logHalt);
  logHalt(node.controlHalted?.get() ?? null);
  const enrolled = (async () => {
    let key: CallOptions["key"];
    for (let attempt = 0, delay = 250; !stopped; attempt++) {
      try {
        const out = await node.enroll(o.self, { timeoutMs: 10_000, ...(key !== undefined ? { key } : {}) });
        o.logger.info("enrolled: this peer may write ledger slots", { index: out.index ?? null });
        return;
      } catch (e) {
        if (stopped) return;
        // halted for good (logged above): retrying would only repeat the error
        if ((e as Error).name === CONTROL_ERRORS.halted) return;
        const k = (e as { key?: CallOptions["key"] }).key;
        if (k !== undefined) key = k;
        if (attempt === 0 || attempt % 10 === 0) o.logger.info("waiting to enroll (no Raft quorum yet?)", { error: (e as Error).message });
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, ENROLL_RETRY_MAX_MS);
      }
    }
  })();
  return {
    node,
    raft,
    term,
    control: governedControlPlane(node, raft, raftLog === null ? null : { kind: raftLog.kind, path: raftLog.path, failed: () => failed.error }),
    raftLog,
    async close() {
      stopped = true;
      unsubscribeHalt?.();
      await node.shutdown();
      await enrolled.catch(() => {});
      await raft.close();
    },
  };
}
