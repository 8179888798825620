// Governed mode: the Raft member (SQLite log under store.dir, Raft frames on channel 4 of the peer's seam)
// and the governed node (governed.md §2) fitted to the API's `ControlPlane`, plus the `enroll(self)` every
// start must make (§3.9) before the peer may write ledger slots.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { AttachmentId, AttachmentRecord, ReplicaId } from "@heddle/ledger";
import { IDEMPOTENCY_CLIENT_PREFIX, raftChannelTransport, raftNode, sqliteRaftStorage, type ControlLog, type EtcdControlLog, type RaftNode, type RaftStorage } from "@heddle/governed";
import { realTimers, WatchCell, type EventStream, type HeddleConfig, type PartitionEvent, type Seam, type Watch } from "@heddle/node";
import { claimsWithReadRefusals, type ReadRefusalCounts } from "./claims-at-read.ts";
import type { GovernedMode } from "./config.ts";
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
  controlView(): ControlView;
  sync(opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ControlView>;
  shutdown(): Promise<void>;
}

/** `heddleGoverned`'s signature (governed.md §2.1), as the daemon calls it. */
export type HeddleGovernedFn = (opts: { seam: Seam; self: ReplicaId; root: GovernedMode["root"]; config: HeddleConfig; raft: ControlLog; incarnation: string; idempotencyWindow?: number }) => GovernedNodeLike;

/** An error the API maps to 409 `refused` with `refusal.kind = "not-leader"`. */
export class NotLeaderHereError extends Error {
  readonly leader: string | null;

  constructor(leader: string | null) {
    super(leader === null ? "no leader is known right now; retry in a moment" : `this peer is not the Raft leader; run it against the leader, ${leader}`);
    this.name = "NotLeaderHereError";
    this.leader = leader;
  }
}

const isRaft = (log: ControlLog): log is RaftNode => "membership" in log && "transferLeadership" in log;

/** The `ControlPlane` of a governed node and its control log (a Raft member, or etcd's log: `mode.etcd`). */
export function governedControlPlane(g: GovernedNodeLike, raft: ControlLog): ControlPlane {
  const readPath: ReadRefusalCounts = { refusedAtRead: 0, passedAfterRead: 0, proposed: 0, waitedForTake: 0 };
  return {
    mint: (h, a, o) => g.mint(h, a, o),
    prepare: (r, o) => g.prepare(r, o),
    activate: (e, o) => g.activate(e, o),
    close: (e, o) => g.close(e, o),
    retire: (e, o) => g.retire(e, o),
    enroll: (r, o) => g.enroll(r, o),
    depart: (o) => g.depart(o),
    claims: claimsWithReadRefusals({ claims: g.claims, controlView: () => g.controlView(), sync: (o) => g.sync(o), isLeader: () => raft.role.get() === "leader", now: () => realTimers.now(), timers: realTimers }, readPath),
    claimsReadPath: () => readPath,
    get isWritable() {
      return g.isWritable;
    },
    roster: () => g.roster(),
    controlView: () => g.controlView(),
    sync: (o) => g.sync(o),
    raft: () => {
      // on etcd, heddle peers are clients: no voters of ours; the commit index is this peer's applied index
      if (!isRaft(raft)) return { role: "etcd", leader: raft.leader.get(), commitIndex: g.controlView().appliedIndex, voters: [], learners: [] };
      const m = raft.membership.get();
      return { role: raft.role.get(), leader: raft.leader.get(), commitIndex: raft.commitIndex.get(), voters: [...m.voters], learners: [...m.learners] };
    },
    async transferLeadership(to) {
      if (!isRaft(raft)) throw new Error("the control log is on etcd (mode.etcd): move etcd's leader with `etcdctl move-leader`");
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

/** A started governed peer. */
export interface GovernedPeer {
  readonly node: GovernedNodeLike;
  /** The Raft member, or the etcd log (`mode.etcd`). */
  readonly raft: RaftNode | EtcdControlLog;
  /** The Raft term, as the member persists it (stays 0 on the etcd log, which has no term of ours). */
  readonly term: Watch<number>;
  readonly control: ControlPlane;
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
  config: HeddleConfig;
  logger: Logger;
  /** Tests only: `GovernedOptions.idempotencyWindow` (default 10 000; equal on every peer). */
  idempotencyWindow?: number;
}): Promise<GovernedPeer> {
  const term = new WatchCell(0);
  // The daemon never changes the Raft membership at run time, so its configured voters and learners are every member
  // there will be: a roster peer outside them is heard on the data-plane channels only, never on Raft (issue 17).
  const members = new Set<string>([...o.mode.voters, ...o.mode.learners]);
  const raft: RaftNode | EtcdControlLog = o.mode.etcd !== undefined ? await openEtcdLog(o.mode.etcd, o.self) : raftNode({
    cluster: { voters: [...o.mode.voters], learners: [...o.mode.learners] },
    transport: raftChannelTransport(o.seam, (m) => o.logger.warn(m)),
    storage: termObservingStorage(sqliteRaftStorage(join(o.storeDir, "raft.sqlite"), { thread: "worker" }), term),
    timers: realTimers,
    random: Math.random,
    config: o.mode.raft,
    defer: (fn) => void setImmediate(fn),
    admit: (from) => members.has(from),
    // an Idempotency-Key's outcome is forgotten after its window while its entry may still be in the log: its
    // retries are appended and answered by the control state, never pointed at an entry nobody can answer for
    coalesce: (key) => !key.client.startsWith(IDEMPOTENCY_CLIENT_PREFIX),
  });
  try {
    await raft.started;
  } catch (e) {
    await raft.close().catch(() => {});
    throw e;
  }
  let node: GovernedNodeLike;
  try {
    node = o.heddleGoverned({ seam: o.seam, self: o.self, root: o.mode.root, config: o.config, raft, incarnation: randomUUID(), ...(o.idempotencyWindow === undefined ? {} : { idempotencyWindow: o.idempotencyWindow }) });
  } catch (e) {
    await raft.close().catch(() => {});
    throw e;
  }
  let stopped = false;
  const enrolled = (async () => {
    let key: CallOptions["key"];
    for (let attempt = 0, delay = 250; !stopped; attempt++) {
      try {
        const out = await node.enroll(o.self, { timeoutMs: 10_000, ...(key !== undefined ? { key } : {}) });
        o.logger.info("enrolled: this peer may write ledger slots", { index: out.index ?? null });
        return;
      } catch (e) {
        if (stopped) return;
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
    control: governedControlPlane(node, raft),
    async close() {
      stopped = true;
      await node.shutdown();
      await enrolled.catch(() => {});
      await raft.close();
    },
  };
}
