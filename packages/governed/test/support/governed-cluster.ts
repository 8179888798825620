/**
 * A cluster of production `GovernedHeddleNode`s (each a `heddleStatic` data plane plus a `raftNode`) over the node
 * package's `MemoryNetwork` and one `VirtualTimers`, with seeded randomness everywhere, memory stores for the data
 * plane and simulated Raft disks whose writes land after a virtual delay and are lost when the peer crashes
 * mid-write. Virtual time advances one millisecond at a time, and every step yields one event-loop turn so the
 * apply loops and callers' promise chains run — one seed drives one run.
 */
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import type { AttachmentRecord } from "@heddle/ledger";
import type { ClaimsOptions } from "@heddle/claims";
import { memoryStore, MemoryNetwork, seededRandom } from "@heddle/node";
import { VirtualTimers } from "@heddle/seam/testing";
import type { HeddleConfig, HeddleStore, LinkFaults, Seam } from "@heddle/node";
import { heddleGoverned, OutcomeUnknownError, raftChannelTransport, raftNode } from "../../src/index.ts";
import type { CallOptions, ControlOutcome, ProposalKey, GovernedHeddleNode, LogEntry, PersistedState, RaftConfig, RaftNode, RaftStorage, StoredSnapshot } from "../../src/index.ts";

/** One event-loop turn: lets every promise chain of the current virtual millisecond run. */
export const yieldTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Settles `p` on virtual time: advances `timers` 1 ms per turn (up to 10 s of it) until `p` settles, then resolves
 * or rejects as `p` did (a rejection is never left unhandled meanwhile).
 */
export function settleOn(timers: VirtualTimers): <T>(p: Promise<T>) => Promise<T> {
  return async <T,>(p: Promise<T>): Promise<T> => {
    let done = false;
    const q = p.finally(() => (done = true));
    q.catch(() => {});
    for (let t = 0; t < 10_000 && !done; t++) {
      timers.advanceBy(1);
      await yieldTurn();
    }
    return q;
  };
}

export const g = (s: string): GroupId => GroupId(s);
export const e = (s: string): AttachmentId => AttachmentId(s);
export const r = (s: string): ReplicaId => ReplicaId(s);

/** An edge record `id: parent → child` of weight `w`. */
export function rec(id: string, parent: string, child: string, w: bigint = 1n): AttachmentRecord {
  return { id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(w) };
}

/** What a peer's Raft disk holds: only writes that completed. */
export interface RaftDisk {
  term: number;
  votedFor: string | null;
  snapshot: StoredSnapshot | null;
  entries: LogEntry[];
}

class DiskCrashed extends Error {}

/** A Raft storage over `disk` whose writes land after `delay()` virtual ms, or never once crashed. */
export function simRaftStorage(disk: RaftDisk, timers: VirtualTimers, delay: () => number): RaftStorage & { crash(): void } {
  let alive = true;
  const later = (apply: () => void): Promise<void> =>
    new Promise((resolve, reject) => {
      const land = (): void => {
        if (!alive) return reject(new DiskCrashed("crashed"));
        apply();
        resolve();
      };
      const d = delay();
      if (d <= 0) queueMicrotask(land);
      else timers.set(land, d);
    });
  return {
    crash() {
      alive = false;
    },
    load: async (): Promise<PersistedState> => ({ term: disk.term, votedFor: disk.votedFor, snapshot: disk.snapshot, entries: disk.entries.slice() }),
    saveTermAndVote: (t, v) => later(() => ((disk.term = t), (disk.votedFor = v))),
    append: (es) =>
      later(() => {
        const first = es[0];
        if (first !== undefined) disk.entries = [...disk.entries.filter((x) => x.index < first.index), ...es];
      }),
    truncateFrom: (i) => later(() => (disk.entries = disk.entries.filter((x) => x.index < i))),
    saveSnapshot: (s) => later(() => (disk.snapshot = s)),
    discardThrough: (i) => later(() => (disk.entries = disk.entries.filter((x) => x.index > i))),
    close: async () => {},
  };
}

/** One governed peer of the cluster: its node (replaced on restart) and what survives a crash. */
export interface GovPeer {
  readonly id: string;
  gov: GovernedHeddleNode;
  raft: RaftNode;
  seam: Seam;
  readonly disk: RaftDisk;
  readonly store: HeddleStore;
  storage: RaftStorage & { crash(): void };
  alive: boolean;
  boots: number;
  incarnation: string;
}

/** Options of a `GovernedCluster`. */
export interface GovernedClusterOptions {
  readonly seed: number;
  readonly voters: readonly string[];
  readonly learners?: readonly string[];
  readonly faults?: LinkFaults;
  readonly raft?: Partial<RaftConfig>;
  readonly claims?: ClaimsOptions;
  /** Per-peer claims options (read at every boot), overriding `claims`: a peer whose config differs. */
  readonly claimsOf?: (id: string) => ClaimsOptions | undefined;
  readonly snapshotEvery?: number;
  /** Applied indexes an `idem:` client's outcome is remembered for (`GovernedOptions.idempotencyWindow`). */
  readonly idempotencyWindow?: number;
  /** `RaftNodeOptions.coalesce` of every peer's Raft node (default: every key). */
  readonly coalesce?: (key: ProposalKey) => boolean;
  readonly root?: string;
  /** Upper bound of a Raft disk write's virtual delay in ms (uniform in [0, max]); default 2. */
  readonly diskDelayMs?: number;
  /** Wraps each peer's Raft node (e.g. a counting or failing stub) before the governed node gets it. */
  readonly wrapRaft?: (id: string, raft: RaftNode) => RaftNode;
}

/** The data-plane configuration every test peer runs with (node.md §16 defaults). */
export function testConfig(timers: VirtualTimers, random: () => number, store: HeddleStore): HeddleConfig {
  return {
    policy: { quantum: 10n },
    maxHoldingsPerPeer: 1_000_000n,
    antiEntropyIntervalMs: 100,
    resendRetryMs: 200,
    fullStateRetryMs: 500,
    timers,
    random,
    store,
  };
}

/** A seeded cluster of governed peers; see the file comment. */
export class GovernedCluster {
  readonly timers = new VirtualTimers();
  readonly net: MemoryNetwork;
  readonly peers = new Map<string, GovPeer>();
  readonly o: GovernedClusterOptions;
  readonly cluster: { voters: readonly string[]; learners: readonly string[] };
  readonly diskRandom: () => number;
  /** Apply-loop or node failures seen by the harness (tests assert it stays empty). */
  readonly errors: string[] = [];
  #draws = 0;

  constructor(o: GovernedClusterOptions) {
    this.o = o;
    this.net = new MemoryNetwork({ timers: this.timers, random: seededRandom(o.seed * 1000 + 1), faults: o.faults ?? { dropRate: 0, duplicateRate: 0, delayMs: [1, 3] } });
    this.diskRandom = seededRandom(o.seed * 1000 + 2);
    this.cluster = { voters: [...o.voters], learners: [...(o.learners ?? [])] };
    for (const id of [...o.voters, ...(o.learners ?? [])]) {
      const p: GovPeer = {
        id,
        gov: undefined as unknown as GovernedHeddleNode,
        raft: undefined as unknown as RaftNode,
        seam: undefined as unknown as Seam,
        disk: { term: 0, votedFor: null, snapshot: null, entries: [] },
        store: memoryStore(),
        storage: undefined as unknown as RaftStorage & { crash(): void },
        alive: false,
        boots: 0,
        incarnation: "",
      };
      this.peers.set(id, p);
      this.#boot(p, this.net.join(id));
    }
  }

  #boot(p: GovPeer, seam: Seam): void {
    p.boots++;
    p.seam = seam;
    this.#draws++;
    const maxDelay = this.o.diskDelayMs ?? 2;
    p.storage = simRaftStorage(p.disk, this.timers, () => Math.floor(this.diskRandom() * (maxDelay + 1)));
    let raft: RaftNode = raftNode({
      cluster: this.cluster,
      transport: raftChannelTransport(seam),
      storage: p.storage,
      timers: this.timers,
      ...(this.o.coalesce === undefined ? {} : { coalesce: this.o.coalesce }),
      random: seededRandom(this.o.seed * 1000 + 100 + this.#draws),
      config: { electionTimeoutMinMs: 150, electionTimeoutMaxMs: 300, heartbeatMs: 30, ...this.o.raft },
    });
    if (this.o.wrapRaft) raft = this.o.wrapRaft(p.id, raft);
    p.raft = raft;
    p.incarnation = `${p.id}-boot${p.boots}-seed${this.o.seed}`; // run-unique, never reused within a run
    p.gov = heddleGoverned({
      seam,
      self: ReplicaId(p.id),
      root: GroupId(this.o.root ?? "root"),
      config: testConfig(this.timers, seededRandom(this.o.seed * 1000 + 500 + this.#draws), p.store),
      raft,
      incarnation: p.incarnation,
      claims: this.o.claimsOf?.(p.id) ?? this.o.claims,
      snapshotEvery: this.o.snapshotEvery ?? 0,
      ...(this.o.idempotencyWindow === undefined ? {} : { idempotencyWindow: this.o.idempotencyWindow }),
    });
    p.alive = true;
  }

  peer(id: string): GovPeer {
    const p = this.peers.get(id);
    if (p === undefined) throw new Error(`no peer ${id}`);
    return p;
  }

  gov(id: string): GovernedHeddleNode {
    return this.peer(id).gov;
  }

  live(): GovPeer[] {
    return [...this.peers.values()].filter((p) => p.alive);
  }

  /** The live peer whose Raft node leads, if exactly one does at the highest term seen. */
  leader(): GovPeer | undefined {
    return this.live().find((p) => p.raft.role.get() === "leader");
  }

  /** Advances virtual time by `ms`, one millisecond and one event-loop turn at a time. */
  async run(ms: number): Promise<void> {
    for (let t = 0; t < ms; t++) {
      this.timers.advanceBy(1);
      await yieldTurn();
    }
  }

  /** Runs until `cond()` holds, failing after `maxMs` virtual ms. */
  async until(cond: () => boolean, maxMs: number, what: string): Promise<void> {
    for (let t = 0; t < maxMs; t++) {
      if (cond()) return;
      this.timers.advanceBy(1);
      await yieldTurn();
    }
    if (!cond()) throw new Error(`seed ${this.o.seed}: ${what} did not happen within ${maxMs} virtual ms`);
  }

  /** Awaits `p` while virtual time runs; fails after `maxMs`. */
  async settle<T>(p: Promise<T>, maxMs = 20_000): Promise<T> {
    let done = false;
    let value: T | undefined;
    let error: unknown;
    let failed = false;
    p.then(
      (v) => ((done = true), (value = v)),
      (err: unknown) => ((done = true), (failed = true), (error = err)),
    );
    await this.until(() => done, maxMs, "a call to settle");
    if (failed) throw error;
    return value as T;
  }

  /**
   * Runs a control call until its outcome is known: each try is bounded by `timeoutMs`; on `OutcomeUnknownError`
   * the call is retried with the key it reported (at most once applied, §3.10).
   */
  async known(call: (opts: CallOptions) => Promise<ControlOutcome>, timeoutMs = 4_000, tries = 8): Promise<ControlOutcome> {
    let key: ProposalKey | null = null;
    for (let i = 0; i < tries; i++) {
      try {
        return await this.settle(call(key === null ? { timeoutMs } : { key, timeoutMs }), timeoutMs + 1_000);
      } catch (err) {
        if (!(err instanceof OutcomeUnknownError) || err.key === null) throw err;
        key = err.key;
      }
    }
    throw new Error(`seed ${this.o.seed}: a call stayed unknown after ${tries} tries`);
  }

  async elect(maxMs = 5_000): Promise<GovPeer> {
    await this.until(() => this.leader() !== undefined, maxMs, "an election");
    return this.leader()!;
  }

  /** Crashes `id`: its disk keeps only completed writes; its seam goes silent; its node is discarded. */
  crash(id: string): void {
    const p = this.peer(id);
    if (!p.alive) return;
    p.alive = false;
    p.storage.crash();
    this.net.crash(id, "silent");
    void p.gov.shutdown().catch(() => {});
  }

  /** Rebuilds `id` from its disk and store on a fresh seam (a new incarnation). */
  restart(id: string): GovPeer {
    const p = this.peer(id);
    if (p.alive) throw new Error(`restart: ${id} is alive`);
    this.#boot(p, this.net.restart(id));
    return p;
  }

  /** True iff every live peer has applied `index`. */
  allApplied(index: number): boolean {
    return this.live().every((p) => p.gov.controlView().appliedIndex >= index);
  }

  /** True iff every pair of live peers holds byte-identical canonical ledgers. */
  ledgersConverged(): boolean {
    const ls = this.live().map((p) => p.gov.ledger.get().encode());
    return ls.every((x) => x === ls[0]);
  }

  /** Shuts every live peer down (virtual time keeps running, so in-flight disk writes can land). */
  async shutdown(): Promise<void> {
    const live = this.live();
    for (const p of live) p.alive = false;
    await this.settle(Promise.all(live.map((p) => p.gov.shutdown().catch(() => {}))), 10_000);
  }
}
