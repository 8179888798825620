import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight, type AttachmentRecord } from "@heddle/ledger";
import type { Demand } from "@heddle/policy";
import {
  MemoryNetwork, heddleStatic, memoryStore, seededRandom,
  type HeddleConfig, type HeddleNode, type HeddleStore, type LinkFaults, type NodeEvent, type PartitionEvent, type Seam, type StoreTx,
} from "../src/index.ts";
import { VirtualTimers } from "../src/testing.ts";

/** `Demand(target, maxGrant)`. */
export const D = (targetOutstanding: bigint, maximumUsefulGrant: bigint): Demand => ({ targetOutstanding, maximumUsefulGrant });
/** node.md §16 "hungry". */
export const HUNGRY = D(1_000n, 1_000n);

export const g = (s: string) => GroupId(s);
export const e = (s: string) => AttachmentId(s);
export const r = (s: string) => ReplicaId(s);

/** An edge record `id: parent → child` of weight `w`. */
export function rec(id: string, parent: string, child: string, w: bigint | [bigint, bigint] = 1n): AttachmentRecord {
  const [n, d] = Array.isArray(w) ? w : [w, 1n];
  return { id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(n, d) };
}

/** node.md §16 default topology: `root → {g1 via e1, g2 via e2}`. */
export const FLAT = [rec("e1", "root", "g1"), rec("e2", "root", "g2")];

/** Options of a simulated cluster. */
export interface ClusterOptions {
  seed: number;
  supply: Record<string, bigint>;
  topology?: AttachmentRecord[];
  faults?: LinkFaults;
  config?: Partial<Omit<HeddleConfig, "timers" | "random" | "store">>;
  /** Wrap each peer's store (e.g. `failingStore`). */
  wrapStore?: (id: string, s: HeddleStore) => HeddleStore;
  maxFrameBytes?: number;
}

/** One simulated peer: its node (replaced on restart), its store (kept across restarts) and what it saw. */
export interface SimNode {
  id: string;
  node: HeddleNode;
  store: HeddleStore;
  events: NodeEvent[];
  partitions: PartitionEvent[];
  alive: boolean;
  boots: number;
  /** The raw seam the node runs on (tests may send on it as this peer). */
  seam: Seam;
}

/**
 * node.md §16's harness: heddleStatic peers over one MemoryNetwork, one VirtualTimers, memory stores.
 * Every generator is seeded from `seed` (network `seed·1000`, peer k `seed·1000 + k + 1`, restarts
 * further), so one seed replays one run exactly.
 */
export class Cluster {
  readonly timers = new VirtualTimers();
  readonly net: MemoryNetwork;
  readonly peers = new Map<string, SimNode>();
  readonly o: ClusterOptions;
  readonly config: Omit<HeddleConfig, "random" | "store">;
  #draws = 0;
  /** Per peer: stops the current incarnation's store writes that only a live process would make (see `crash`). */
  readonly #kill = new Map<string, () => void>();
  readonly #stopping = new Map<string, Promise<void>>();

  constructor(o: ClusterOptions) {
    this.o = o;
    this.net = new MemoryNetwork({ timers: this.timers, random: seededRandom(o.seed * 1000), faults: o.faults, maxFrameBytes: o.maxFrameBytes });
    this.config = {
      policy: { quantum: 10n },
      maxHoldingsPerPeer: 1_000n,
      antiEntropyIntervalMs: 100,
      resendRetryMs: 200,
      fullStateRetryMs: 500,
      ...o.config,
      timers: this.timers,
    };
    for (const id of Object.keys(o.supply).sort()) {
      let store: HeddleStore = memoryStore();
      if (o.wrapStore) store = o.wrapStore(id, store);
      const sn: SimNode = { id, node: undefined as unknown as HeddleNode, store, events: [], partitions: [], alive: true, boots: 0, seam: undefined as unknown as Seam };
      this.peers.set(id, sn);
      this.#start(sn, this.net.join(id));
    }
    this.timers.advanceBy(1);
  }

  #start(sn: SimNode, seam: ReturnType<MemoryNetwork["join"]>, config: ClusterOptions["config"] = {}): void {
    sn.boots++;
    sn.seam = seam;
    this.#draws++;
    sn.node = heddleStatic({
      seam,
      self: ReplicaId(sn.id),
      root: GroupId("root"),
      supply: new Map(Object.entries(this.o.supply).map(([k, v]) => [ReplicaId(k), v])),
      topology: this.o.topology ?? FLAT,
      config: { ...this.config, ...config, random: seededRandom(this.o.seed * 1000 + this.#draws), store: this.#incarnation(sn) },
    });
    sn.node.events.subscribe((ev) => sn.events.push(ev));
    sn.node.partitionEvents.subscribe((ev) => sn.partitions.push(ev));
    sn.alive = true;
  }

  /**
   * `sn.store` as this incarnation sees it. `crash` stops the node through `shutdown()`, which (unlike a dead
   * process) commits the inbound values merged since the last commit; after a crash that merged-only commit is
   * dropped, so a restart reads what a killed process would have left.
   */
  #incarnation(sn: SimNode): HeddleStore {
    const store = sn.store;
    let dead = false;
    this.#kill.set(sn.id, () => (dead = true));
    const mergedOnly = (tx: StoreTx) =>
      tx.putReservations === undefined && tx.deleteReservations === undefined && tx.keeperSlot === undefined && (tx.patches ?? []).every((p) => p.origin === "merged");
    return {
      get durable() {
        return store.durable;
      },
      boot: (self, genesis) => store.boot(self, genesis),
      commit: (tx) => {
        if (!(dead && mergedOnly(tx))) store.commit(tx);
      },
      compact: (state) => store.compact(state),
      close: () => store.close(),
    };
  }

  n(id: string): HeddleNode {
    const p = this.peers.get(id);
    if (!p) throw new Error(`no peer ${id}`);
    return p.node;
  }

  /** Crash `id` (its node object is discarded; its store is kept). */
  crash(id: string, mode: "silent" | "disconnect" = "silent"): void {
    const p = this.peers.get(id)!;
    this.net.crash(id, mode);
    p.alive = false;
    this.#kill.get(id)!();
    this.#stopping.set(id, p.node.shutdown());
  }

  /** Resolves once the node `crash(id)` stopped has closed its store (a new process opening the file waits for this). */
  stopped(id: string): Promise<void> {
    return this.#stopping.get(id) ?? Promise.resolve();
  }

  /** Rebuild `id` from its store on a fresh seam; `config` overrides the cluster's for this incarnation (an edited config). */
  restart(id: string, config?: ClusterOptions["config"]): void {
    const p = this.peers.get(id)!;
    this.#start(p, this.net.restart(id), config);
  }

  live(): SimNode[] {
    return [...this.peers.values()].filter((p) => p.alive);
  }

  /** True iff every pair of live nodes has byte-identical canonical ledgers. */
  converged(): boolean {
    const ls = this.live().map((p) => p.node.ledger.get().encode());
    return ls.every((x) => x === ls[0]);
  }

  /** node.md §16 "settle": advance until converged, failing after 200 × antiEntropyIntervalMs. */
  settle(): void {
    const step = this.config.antiEntropyIntervalMs ?? 100;
    for (let t = 0; t < 200; t++) {
      if (this.converged()) return;
      this.timers.advanceBy(step);
    }
    if (!this.converged()) throw new Error(`seed ${this.o.seed}: no convergence after ${200 * step} ms`);
  }

  async shutdown(): Promise<void> {
    for (const p of this.live()) await p.node.shutdown();
  }
}

/** Σ mint = Σ_{g,r} holdings(g, r) + Σ leaf-spent on `l` (ledger.md's conservation identity). */
export function conservation(l: EntitlementLedger): { minted: bigint; held: bigint; leafSpent: bigint; negative: string[] } {
  let held = 0n;
  const negative: string[] = [];
  for (const grp of l.groups()) {
    for (const rep of l.replicas()) {
      const h = l.holdings(grp, rep);
      if (h < 0n) negative.push(`${grp}/${rep}=${h}`);
      held += h;
    }
  }
  return { minted: l.mintedTotal(), held, leafSpent: l.leafSpentTotal(), negative };
}

/** Runs `fn(seed)` for each seed, rethrowing a failure with the seed in its message. */
export function forSeeds(seeds: number[], fn: (seed: number) => void): void {
  for (const s of seeds) {
    try {
      fn(s);
    } catch (err) {
      const m = (err as Error).message;
      (err as Error).message = `HEDDLE_SEED=${s} reproduces this: ${m}`;
      throw err;
    }
  }
}

/** The seeds a test runs: `HEDDLE_SEED` alone if set, else `count` seeds from `base`. */
export function seedList(count: number, base = 1): number[] {
  const one = process.env.HEDDLE_SEED;
  if (one !== undefined && one !== "") return [Number(one)];
  return Array.from({ length: count }, (_, i) => base + i);
}
