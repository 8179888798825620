/**
 * The two `ControlLog` backends behind one harness (issue 18), for the conformance suite, the acceptance tests on
 * etcd and the backend bench: three members, each a log plus a production `GovernedHeddleNode` on real time, with a
 * way to cut one member off its log and let it back (`disconnect`/`reconnect`), to open another member on the same
 * log (`reopen`), and to close everything.
 *
 * - `raft`: three `raftNode`s on one in-process `MemoryNetwork` (channel 4 of each peer's seam), memory storage;
 *   `disconnect` partitions the member away from the other two.
 * - `etcd`: a real 3-member etcd cluster on loopback (`EtcdCluster`); each heddle member reaches etcd through its
 *   own `CutProxy`, so `disconnect` cuts its connections (its watch included) and refuses new ones.
 */
import { randomUUID } from "node:crypto";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { memoryStore, MemoryNetwork, realTimers, seededRandom } from "@heddle/node";
import type { HeddleConfig, Seam } from "@heddle/node";
import type { ClaimsOptions } from "@heddle/claims";
import { etcdControlLog, heddleGoverned, memoryRaftStorage, raftChannelTransport, raftNode } from "../../src/index.ts";
import type { ControlLog, EtcdControlLog, GovernedHeddleNode, RaftConfig, RaftNode, RaftStorage } from "../../src/index.ts";
import { CutProxy, EtcdCluster, sleep } from "./etcd-cluster.ts";

export type BackendName = "raft" | "etcd";

export interface Member {
  readonly id: string;
  log: ControlLog;
  gov: GovernedHeddleNode;
}

export interface BackendOptions {
  readonly snapshotEvery?: number;
  readonly claims?: ClaimsOptions;
  /** Members to start (default 3). */
  readonly members?: number;
  /** etcd: key prefix (default a fresh one per harness). */
  readonly prefix?: string;
  /** etcd: an already running cluster to use (not stopped on close). */
  readonly etcd?: EtcdCluster;
  /** Fast Raft timing for tests. */
  readonly raft?: Partial<RaftConfig>;
  /** Raft: each member's storage (default in memory). */
  readonly raftStorage?: (id: string) => RaftStorage;
}

const FAST_RAFT: Partial<RaftConfig> = { heartbeatMs: 20, electionTimeoutMinMs: 150, electionTimeoutMaxMs: 300 };

function config(seed: number): HeddleConfig {
  return { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000_000n, antiEntropyIntervalMs: 100, resendRetryMs: 200, fullStateRetryMs: 500, timers: realTimers, random: seededRandom(seed), store: memoryStore() };
}

export abstract class Backend {
  abstract readonly name: BackendName;
  readonly members: Member[] = [];
  readonly net = new MemoryNetwork({ timers: realTimers, random: seededRandom(11), faults: { dropRate: 0, duplicateRate: 0, delayMs: [0, 1] } });
  readonly root = GroupId("root");
  readonly opts: BackendOptions;
  readonly #seams = new Map<string, Seam>();

  constructor(opts: BackendOptions) {
    this.opts = opts;
  }

  protected seam(id: string): Seam {
    let s = this.#seams.get(id);
    if (s === undefined) this.#seams.set(id, (s = this.net.join(id)));
    return s;
  }

  /** A new seam for a restarted member (the old node's seam is closed, or crashed here if still live). */
  protected freshSeam(id: string): void {
    this.#seams.delete(id);
    let s: Seam;
    try {
      s = this.net.join(id);
    } catch {
      this.net.crash(id, "disconnect");
      s = this.net.restart(id);
    }
    this.#seams.set(id, s);
  }

  protected govern(id: string, log: ControlLog, incarnation: string = randomUUID()): GovernedHeddleNode {
    return heddleGoverned({
      seam: this.seam(id),
      self: ReplicaId(id),
      root: this.root,
      config: config(id.charCodeAt(id.length - 1)),
      raft: log,
      incarnation,
      ...(this.opts.claims !== undefined ? { claims: this.opts.claims } : {}),
      ...(this.opts.snapshotEvery !== undefined ? { snapshotEvery: this.opts.snapshotEvery } : {}),
    });
  }

  /** Cuts member `i` off the log (Raft: partitioned; etcd: its connections cut and refused). */
  abstract disconnect(i: number): void;
  abstract reconnect(i: number): void;
  /** Shuts member `i`'s node down and starts a new one (a new process start) on a new log instance. */
  abstract reopen(i: number, incarnation?: string): Promise<Member>;
  abstract close(): Promise<void>;

  /** Every member's `appliedIndex` reached `index`. */
  async applied(index: number, timeoutMs = 20_000, members: Member[] = this.members): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (members.some((m) => m.gov.controlView().appliedIndex < index)) {
      if (Date.now() > until) throw new Error(`not applied through ${index}: ${members.map((m) => m.gov.controlView().appliedIndex).join(", ")}`);
      await sleep(10);
    }
  }

  /** Every member enrolls itself (opens its writer gate). */
  async enrollAll(): Promise<void> {
    for (const m of this.members) await m.gov.enroll(ReplicaId(m.id), { timeoutMs: 20_000 });
  }
}

export class RaftBackend extends Backend {
  readonly name = "raft";
  readonly ids: string[];

  private constructor(opts: BackendOptions) {
    super(opts);
    this.ids = Array.from({ length: opts.members ?? 3 }, (_, i) => `m${i + 1}`);
  }

  static async start(opts: BackendOptions = {}): Promise<RaftBackend> {
    const b = new RaftBackend(opts);
    for (const id of b.ids) {
      const log = b.#raft(id);
      b.members.push({ id, log, gov: b.govern(id, log) });
    }
    const until = Date.now() + 20_000;
    while (!b.members.some((m) => (m.log as RaftNode).role.get() === "leader")) {
      if (Date.now() > until) throw new Error("raft: no leader");
      await sleep(10);
    }
    return b;
  }

  #raft(id: string): RaftNode {
    return raftNode({
      cluster: { voters: this.ids, learners: [] },
      transport: raftChannelTransport(this.seam(id)),
      storage: this.opts.raftStorage?.(id) ?? memoryRaftStorage(),
      timers: realTimers,
      random: seededRandom(100 + this.ids.indexOf(id)),
      config: { ...FAST_RAFT, ...this.opts.raft },
      defer: setImmediate,
    });
  }

  disconnect(i: number): void {
    this.net.partition([[this.ids[i]!]], "silent");
  }

  reconnect(_i: number): void {
    this.net.heal();
  }

  reopen(): Promise<Member> {
    throw new Error("raft backend: reopen is not supported by this harness (the etcd backend's is)");
  }

  async close(): Promise<void> {
    for (const m of this.members) await m.gov.shutdown().catch(() => {});
  }
}

export class EtcdBackend extends Backend {
  readonly name = "etcd";
  readonly etcd: EtcdCluster;
  readonly prefix: string;
  readonly proxies: CutProxy[] = [];
  readonly #ownCluster: boolean;

  private constructor(opts: BackendOptions, etcd: EtcdCluster, own: boolean) {
    super(opts);
    this.etcd = etcd;
    this.#ownCluster = own;
    this.prefix = opts.prefix ?? `heddle-test/${randomUUID()}/`;
  }

  static async start(opts: BackendOptions = {}): Promise<EtcdBackend> {
    const etcd = opts.etcd ?? (await EtcdCluster.start(3));
    const b = new EtcdBackend(opts, etcd, opts.etcd === undefined);
    const n = opts.members ?? 3;
    for (let i = 0; i < n; i++) {
      // member i talks to etcd member i % 3 through its own proxy (the etcd client fails over between endpoints
      // by itself; one endpoint per heddle member keeps "cut this member off" exact)
      const k = i % etcd.members.length;
      b.proxies.push(await CutProxy.start(() => etcd.members[k]!.clientPort));
      const id = `m${i + 1}`;
      const log = b.log(i);
      await log.started;
      b.members.push({ id, log, gov: b.govern(id, log) });
    }
    return b;
  }

  /** A new log instance for member `i` (through its proxy). */
  log(i: number, extra: { unavailableAfterMs?: number } = {}): EtcdControlLog {
    return etcdControlLog({ id: `m${i + 1}`, endpoints: [this.proxies[i]!.url], prefix: this.prefix, callTimeoutMs: 2_000, unavailableAfterMs: extra.unavailableAfterMs ?? 1_500, probeEveryMs: 250 });
  }

  disconnect(i: number): void {
    this.proxies[i]!.hold();
  }

  reconnect(i: number): void {
    this.proxies[i]!.resume();
  }

  async reopen(i: number, incarnation?: string): Promise<Member> {
    const m = this.members[i]!;
    await m.gov.shutdown();
    this.freshSeam(m.id);
    const log = this.log(i);
    await log.started;
    m.log = log;
    m.gov = this.govern(m.id, log, incarnation);
    return m;
  }

  async close(): Promise<void> {
    for (const m of this.members) await m.gov.shutdown().catch(() => {});
    for (const p of this.proxies) await p.close();
    if (this.#ownCluster) await this.etcd.stop();
  }
}

export function startBackend(name: BackendName, opts: BackendOptions = {}): Promise<Backend> {
  return name === "raft" ? RaftBackend.start(opts) : EtcdBackend.start(opts);
}
