import { SeamSubscriberError, sortedIds, type PeerId, type Seam, type SendResult } from "./seam.ts";
import type { Timers } from "./timers.ts";
import { WatchCell, sameMembers, type Watch } from "./watch.ts";

/** Per-link fault model: drop and duplicate probabilities and a uniform integer delay range in ms. */
export interface LinkFaults {
  dropRate: number;
  duplicateRate: number;
  delayMs: readonly [min: number, max: number];
}

/** How a partition, cut or crash looks to peers: a black hole, or closed connections. */
export type CutMode = "silent" | "disconnect";

/** Construction options of a `MemoryNetwork`. */
export interface MemoryNetworkOptions {
  timers: Timers;
  random: () => number;
  /** Default 1 MiB. */
  maxFrameBytes?: number;
  faults?: LinkFaults;
}

/** Traffic counters of a `MemoryNetwork`. */
export interface MemoryNetworkStats {
  sent: number;
  delivered: number;
  dropped: number;
  duplicated: number;
  blocked: number;
  /** Bytes of every accepted send (each destination counted once, before faults). */
  bytesSent: number;
}

/** Default size limit of the in-memory fabric. */
export const MEMORY_MAX_FRAME_BYTES = 1_048_576;

const NO_FAULTS: LinkFaults = { dropRate: 0, duplicateRate: 0, delayMs: [0, 0] };

function checkFaults(f: LinkFaults): LinkFaults {
  const [min, max] = f.delayMs;
  if (!(f.dropRate >= 0 && f.dropRate <= 1)) throw new RangeError(`dropRate must be in [0, 1], got ${f.dropRate}`);
  if (!(f.duplicateRate >= 0 && f.duplicateRate <= 1)) throw new RangeError(`duplicateRate must be in [0, 1], got ${f.duplicateRate}`);
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || max < min) {
    throw new RangeError(`delayMs must be integers 0 <= min <= max, got [${min}, ${max}]`);
  }
  return { dropRate: f.dropRate, duplicateRate: f.duplicateRate, delayMs: [min, max] };
}

interface Cut {
  readonly from: PeerId;
  readonly to: PeerId;
  readonly mode: CutMode;
}

interface Endpoint {
  readonly seam: MemorySeam;
  state: "live" | "crashed-silent" | "crashed-disconnect" | "closed";
}

/**
 * A deterministic in-process fabric with seeded faults (node.md §3.3). Every delivery and membership
 * notification is a callback on the shared `Timers`, and every fault is drawn from the injected
 * `random`, so one seed reproduces one run exactly. Draw order per destination: drop; if kept,
 * duplicate; then a delay for the original and, if duplicated, one for the copy.
 */
export class MemoryNetwork {
  readonly #timers: Timers;
  readonly #random: () => number;
  readonly #maxFrameBytes: number;
  readonly #faults = new Map<string, LinkFaults>();
  readonly #endpoints = new Map<PeerId, Endpoint>();
  #groups: Map<PeerId, number> | null = null;
  #groupMode: CutMode = "silent";
  readonly #cuts: Cut[] = [];
  #refreshPending = false;
  readonly #stats: MemoryNetworkStats = { sent: 0, delivered: 0, dropped: 0, duplicated: 0, blocked: 0, bytesSent: 0 };

  constructor(opts: MemoryNetworkOptions) {
    this.#timers = opts.timers;
    this.#random = opts.random;
    this.#maxFrameBytes = opts.maxFrameBytes ?? MEMORY_MAX_FRAME_BYTES;
    if (!Number.isInteger(this.#maxFrameBytes) || this.#maxFrameBytes < 2) throw new RangeError("maxFrameBytes must be an integer >= 2");
    this.#faults.set("*\u0000*", checkFaults(opts.faults ?? NO_FAULTS));
  }

  /**
   * Adds peer `id` and returns its seam. `maxFrameBytes` may be set per peer (at most the network's)
   * so tests can exercise an inbound frame larger than the receiver accepts.
   */
  join(id: PeerId, opts: { maxFrameBytes?: number } = {}): Seam {
    if (typeof id !== "string" || id.length === 0) throw new TypeError("peer id must be a non-empty string");
    const existing = this.#endpoints.get(id);
    if (existing !== undefined && existing.state !== "closed") throw new Error(`peer ${id} already joined; use restart() after crash()`);
    return this.#attach(id, opts.maxFrameBytes ?? this.#maxFrameBytes);
  }

  /** Sets the faults of the directed link `from → to`; `'*'` is a wildcard; the most specific entry wins. */
  setFaults(from: PeerId | "*", to: PeerId | "*", f: LinkFaults): void {
    this.#faults.set(`${from}\u0000${to}`, checkFaults(f));
  }

  /** Splits peers into groups; unlisted peers form one more group. Replaces any earlier partition. */
  partition(groups: PeerId[][], mode: CutMode): void {
    const m = new Map<PeerId, number>();
    groups.forEach((g, i) => {
      for (const p of g) m.set(p, i);
    });
    this.#groups = m;
    this.#groupMode = mode;
    this.#scheduleRefresh();
  }

  /** Cuts the directed link `from → to` only. */
  cut(from: PeerId, to: PeerId, mode: CutMode): void {
    this.#cuts.push({ from, to, mode });
    this.#scheduleRefresh();
  }

  /** Removes every partition and cut and restores membership. */
  heal(): void {
    this.#groups = null;
    this.#cuts.length = 0;
    this.#scheduleRefresh();
  }

  /** The seam of `id` stops sending and receiving. `silent`: peers keep it as a member; `disconnect`: they see it leave. */
  crash(id: PeerId, mode: CutMode): void {
    const ep = this.#endpoints.get(id);
    if (ep === undefined || ep.state !== "live") throw new Error(`crash: peer ${id} is not live`);
    ep.state = mode === "silent" ? "crashed-silent" : "crashed-disconnect";
    ep.seam.kill();
    this.#scheduleRefresh();
  }

  /** A fresh seam for a crashed (or closed) id; the caller rebuilds its node from its store. */
  restart(id: PeerId): Seam {
    const ep = this.#endpoints.get(id);
    if (ep === undefined || ep.state === "live") throw new Error(`restart: peer ${id} is not crashed`);
    return this.#attach(id, ep.seam.maxFrameBytes);
  }

  stats(): MemoryNetworkStats {
    return { ...this.#stats };
  }

  #attach(id: PeerId, maxFrameBytes: number): Seam {
    if (!Number.isInteger(maxFrameBytes) || maxFrameBytes < 2 || maxFrameBytes > this.#maxFrameBytes) {
      throw new RangeError(`maxFrameBytes must be in 2…${this.#maxFrameBytes}`);
    }
    const seam = new MemorySeam(id, maxFrameBytes, this);
    this.#endpoints.set(id, { seam, state: "live" });
    this.#scheduleRefresh();
    return seam;
  }

  #faultsFor(from: PeerId, to: PeerId): LinkFaults {
    return (
      this.#faults.get(`${from}\u0000${to}`) ??
      this.#faults.get(`${from}\u0000*`) ??
      this.#faults.get(`*\u0000${to}`) ??
      this.#faults.get("*\u0000*")!
    );
  }

  #separated(a: PeerId, b: PeerId): CutMode | null {
    let mode: CutMode | null = null;
    if (this.#groups !== null && (this.#groups.get(a) ?? -1) !== (this.#groups.get(b) ?? -1)) mode = this.#groupMode;
    for (const c of this.#cuts) {
      if ((c.from === a && c.to === b) || (c.from === b && c.to === a)) {
        if (c.mode === "disconnect") return "disconnect";
      }
    }
    return mode;
  }

  #blocked(from: PeerId, to: PeerId): boolean {
    if (this.#groups !== null && (this.#groups.get(from) ?? -1) !== (this.#groups.get(to) ?? -1)) return true;
    for (const c of this.#cuts) if (c.from === from && c.to === to) return true;
    return false;
  }

  /** Membership as the fabric sees it right now (published to seams through a 0 ms timer). */
  #view(self: PeerId): Set<PeerId> {
    const out = new Set<PeerId>();
    for (const [id, ep] of this.#endpoints) {
      if (id === self) continue;
      if (ep.state === "closed" || ep.state === "crashed-disconnect") continue;
      if (this.#separated(self, id) === "disconnect") continue;
      out.add(id);
    }
    return out;
  }

  #scheduleRefresh(): void {
    if (this.#refreshPending) return;
    this.#refreshPending = true;
    this.#timers.set(() => {
      this.#refreshPending = false;
      for (const [id, ep] of this.#endpoints) {
        if (ep.state === "live") ep.seam.publishPeers(this.#view(id));
      }
    }, 0);
  }

  /** @internal Used by `MemorySeam`. */
  transmit(from: MemorySeam, to: PeerId, frame: Uint8Array): SendResult {
    const src = this.#endpoints.get(from.self);
    if (src === undefined || src.seam !== from || src.state !== "live") return "closed";
    if (frame.length > this.#maxFrameBytes || frame.length > from.maxFrameBytes) return "oversize";
    if (!from.peers.get().has(to)) return "not-connected";
    this.#stats.sent++;
    this.#stats.bytesSent += frame.length;
    if (this.#blocked(from.self, to)) {
      this.#stats.blocked++;
      return "queued";
    }
    const f = this.#faultsFor(from.self, to);
    if (this.#random() < f.dropRate) {
      this.#stats.dropped++;
      return "queued";
    }
    const dup = this.#random() < f.duplicateRate;
    const copy = frame.slice();
    const [min, max] = f.delayMs;
    const drawDelay = () => min + Math.floor(this.#random() * (max - min + 1));
    this.#timers.set(() => this.#deliver(from.self, to, copy), drawDelay());
    if (dup) {
      this.#stats.duplicated++;
      this.#timers.set(() => this.#deliver(from.self, to, copy), drawDelay());
    }
    return "queued";
  }

  #deliver(from: PeerId, to: PeerId, frame: Uint8Array): void {
    if (this.#blocked(from, to)) {
      this.#stats.blocked++;
      return;
    }
    const src = this.#endpoints.get(from);
    const dst = this.#endpoints.get(to);
    if (src === undefined || src.state !== "live" || dst === undefined || dst.state !== "live") {
      this.#stats.blocked++;
      return;
    }
    if (dst.seam.receive(from, frame)) this.#stats.delivered++;
  }

  /** @internal Used by `MemorySeam.close`. */
  leave(seam: MemorySeam): void {
    const ep = this.#endpoints.get(seam.self);
    if (ep === undefined || ep.seam !== seam) return;
    ep.state = "closed";
    this.#scheduleRefresh();
  }
}

class MemorySeam implements Seam {
  readonly self: PeerId;
  readonly maxFrameBytes: number;
  readonly #peers = new WatchCell<ReadonlySet<PeerId>>(new Set(), sameMembers);
  readonly #net: MemoryNetwork;
  #handler: ((from: PeerId, frame: Uint8Array) => void) | null = null;
  #dead = false;
  /** Inbound frames above this seam's own limit, dropped before delivery. */
  oversizeDropped = 0;

  constructor(self: PeerId, maxFrameBytes: number, net: MemoryNetwork) {
    this.self = self;
    this.maxFrameBytes = maxFrameBytes;
    this.#net = net;
  }

  get peers(): Watch<ReadonlySet<PeerId>> {
    return this.#peers;
  }

  send(to: PeerId, frame: Uint8Array): SendResult {
    if (this.#dead) return "closed";
    return this.#net.transmit(this, to, frame);
  }

  broadcast(frame: Uint8Array): void {
    if (this.#dead) return;
    for (const p of sortedIds(this.#peers.get())) this.#net.transmit(this, p, frame);
  }

  onFrame(fn: (from: PeerId, frame: Uint8Array) => void): () => void {
    if (this.#handler !== null) throw new SeamSubscriberError(`seam ${this.self}`);
    this.#handler = fn;
    return () => {
      if (this.#handler === fn) this.#handler = null;
    };
  }

  onBackpressure(_fn: (peer: PeerId) => void): () => void {
    // The in-memory fabric has no queues, so it never signals backpressure.
    return () => {};
  }

  async close(): Promise<void> {
    if (this.#dead) return;
    this.kill();
    this.#net.leave(this);
  }

  kill(): void {
    this.#dead = true;
    this.#handler = null;
    this.#peers.set(new Set());
  }

  publishPeers(view: Set<PeerId>): void {
    if (!this.#dead) this.#peers.set(view);
  }

  receive(from: PeerId, frame: Uint8Array): boolean {
    if (this.#dead) return false;
    if (frame.length > this.maxFrameBytes) {
      this.oversizeDropped++;
      return false;
    }
    this.#handler?.(from, frame);
    return true;
  }
}
