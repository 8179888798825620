import { canonicalBytes } from "./canonical-json.ts";
import type { RejectionCounter } from "./rejection.ts";
import { sortedIds, type PeerId, type Seam } from "@heddle/seam";
import type { SeamMux } from "@heddle/seam";
import type { Timers } from "@heddle/seam";
import { EventChannel, WatchCell, sameMembers, type EventStream, type Watch } from "@heddle/seam";
import { exactKeys, literalField, readEnvelope, readSchema, type WireRead } from "./wire-schema.ts";

/** Heartbeat timings (node.md §12): `0 < intervalMs < timeoutMs`. */
export interface HeartbeatConfig {
  intervalMs: number;
  timeoutMs: number;
  reconnectWindowMs: number;
}

/** node.md §12 defaults: ping every 5 s, unresponsive after 15 s of silence, lost after 60 s more. */
export const HEARTBEAT_DEFAULTS: HeartbeatConfig = { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 };

/** Why a peer was declared unresponsive. */
export type UnresponsiveReason = "timeout" | "transport-closed" | "backpressure";

/** A liveness transition (node.md §10). None of them ever changes the ledger. */
export interface PartitionEvent {
  kind: "unresponsive" | "recovered" | "lost";
  peer: PeerId;
  at: number;
  reason?: UnresponsiveReason;
}

/** Counters of a {@link LivenessMonitor}. */
export interface LivenessCounters {
  readonly pingsOut: number;
  readonly pongsOut: number;
  /** Errors thrown by `partitionEvents` / `unreachable` subscribers: caught, so detection goes on. */
  readonly subscriberErrors: number;
}

/** The liveness channel's two messages. */
export type LivenessMessage = { kind: "ping" } | { kind: "pong" };

/** Reads a liveness-channel frame (node.md §4.3): envelope, then exactly `{v: 1, kind: "ping" | "pong"}`. */
export function readLivenessMessage(frame: Uint8Array): WireRead<LivenessMessage> {
  const env = readEnvelope(frame);
  if (!env.ok) return env;
  const o = env.message;
  return readSchema(() => {
    const kind = literalField(o.kind, ["ping", "pong"] as const);
    exactKeys(o, ["v", "kind"]);
    return { kind };
  });
}

const PING = canonicalBytes({ v: 1, kind: "ping" });
const PONG = canonicalBytes({ v: 1, kind: "pong" });

interface Detector {
  phase: "healthy" | "unresponsive" | "lost";
  lastSeen: number;
  inboundCount: number;
  backpressurePending: boolean;
  seen0: number;
  elapsed: number;
}

/**
 * The heartbeat partition detector (node.md §10): one detector per remote peer, attached when the
 * peer first appears in `peers`. Every inbound frame on any channel counts as evidence of life;
 * recovery needs a frame received after the peer was declared unresponsive. `lost` is terminal until
 * `remonitor`. Detection only reports: nothing is ever reclaimed from an unreachable or lost peer.
 * One timer drives every detector (a detector's first tick comes within one interval of its attach), so
 * a node watching 999 peers keeps one timer, not 999. Attaching costs no allocation: a detector is a name
 * and an attach time in two arrays until something happens to it (a frame, a declaration, backpressure),
 * and only then gets its state object — meeting 999 peers at once is two array pushes each.
 */
export class LivenessMonitor {
  readonly #channel: Seam;
  readonly #timers: Timers;
  readonly #config: HeartbeatConfig;
  readonly #rejections: RejectionCounter;
  /** Detectors with state of their own; an attached peer without one is healthy and silent since it attached. */
  readonly #detectors = new Map<PeerId, Detector>();
  /** Every attached peer in attach order (the order ticks visit them), and when each attached. */
  #order: PeerId[] = [];
  #attachedAt: number[] = [];
  /** Peers `remonitor` renewed during the tick in progress: that tick skips them (their old detector is gone, a new one waits for the next). */
  #renewed: Set<PeerId> | null = null;
  /**
   * During a sweep over every detector (a tick, a membership change): the unreachable set being built and
   * the events to emit. Published once at the end — declaring 500 peers is one set, not 500 growing copies.
   */
  #draft: Set<PeerId> | null = null;
  #queued: PartitionEvent[] = [];
  // A subscriber that throws is counted and handed on, never let out: it would escape into the timer or the
  // seam callback that is sweeping, and a sweep cut short would leave the detector without its next tick.
  readonly #unreachable = new WatchCell<ReadonlySet<PeerId>>(new Set(), sameMembers, (error) => this.#subscriberError(error));
  readonly #events = new EventChannel<PartitionEvent>((error) => this.#subscriberError(error));
  readonly #onSubscriberError: ((error: unknown) => void) | undefined;
  #subscriberErrors = 0;
  readonly #off: (() => void)[] = [];
  #members: ReadonlySet<PeerId> = new Set();
  #timer: unknown = null;
  #pings = 0;
  #pongs = 0;
  #closed = false;
  readonly #maxFrameBytes: number;

  /**
   * `maxFrameBytes`: the node's frame limit (frames above it, or above the channel's, are `oversize`).
   * `onSubscriberError`: gets what an `events` or `unreachable` subscriber throws (after it is counted in
   * `counters().subscriberErrors`); it never reaches the timer or the seam callback that emitted.
   */
  constructor(o: {
    channel: Seam;
    mux: SeamMux;
    timers: Timers;
    config: HeartbeatConfig;
    rejections: RejectionCounter;
    maxFrameBytes?: number;
    onSubscriberError?: (error: unknown) => void;
  }) {
    const c = o.config;
    if (!(Number.isInteger(c.intervalMs) && c.intervalMs > 0 && c.timeoutMs > c.intervalMs && Number.isInteger(c.timeoutMs))) {
      throw new RangeError("heartbeat: require 0 < intervalMs < timeoutMs (integers)");
    }
    if (!Number.isInteger(c.reconnectWindowMs) || c.reconnectWindowMs <= 0) throw new RangeError("heartbeat.reconnectWindowMs must be a positive integer");
    this.#channel = o.channel;
    this.#timers = o.timers;
    this.#config = c;
    this.#rejections = o.rejections;
    this.#onSubscriberError = o.onSubscriberError;
    this.#maxFrameBytes = Math.min(o.maxFrameBytes ?? Infinity, o.channel.maxFrameBytes);
    this.#off.push(o.channel.onFrame((from, frame) => this.#receive(from, frame)));
    this.#off.push(o.mux.onActivity((from) => this.#activity(from)));
    this.#off.push(o.channel.onBackpressure((peer) => {
      const d = this.#detector(peer);
      if (d !== undefined) d.backpressurePending = true;
    }));
    this.#off.push(o.channel.peers.subscribe((p) => this.#membership(p)));
    this.#membership(o.channel.peers.get());
    this.#arm();
  }

  get unreachable(): Watch<ReadonlySet<PeerId>> {
    return this.#unreachable;
  }

  get events(): EventStream<PartitionEvent> {
    return this.#events;
  }

  /** Replaces a Lost detector with a fresh one (now if the peer is a member, else when it appears). */
  remonitor(peer: PeerId): void {
    const d = this.#detectors.get(peer);
    if (d === undefined || d.phase !== "lost") return;
    this.#detectors.delete(peer);
    const i = this.#order.indexOf(peer);
    // Copy on write: a tick in progress keeps iterating the arrays it started with.
    this.#order = this.#order.filter((_, j) => j !== i);
    this.#attachedAt = this.#attachedAt.filter((_, j) => j !== i);
    this.#renewed?.add(peer);
    this.#setUnreachable(peer, false);
    if (this.#members.has(peer)) this.#attach(peer);
  }

  /** Current phase per monitored peer (diagnostic). */
  phases(): Record<PeerId, Detector["phase"]> {
    const out: Record<PeerId, Detector["phase"]> = {};
    for (const p of sortedIds(this.#order)) out[p] = this.#detectors.get(p)?.phase ?? "healthy";
    return out;
  }

  /** Pings and pongs queued, and errors thrown by `events` / `unreachable` subscribers (caught). */
  counters(): LivenessCounters {
    return { pingsOut: this.#pings, pongsOut: this.#pongs, subscriberErrors: this.#subscriberErrors };
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== null) this.#timers.clear(this.#timer);
    for (const f of this.#off) f();
  }

  #arm(): void {
    this.#timer = this.#timers.set(() => {
      this.#timer = null;
      if (this.#closed) return;
      // Peers attached during this tick are not visited (the loop bound), nor are those remonitor renews.
      const order = this.#order;
      const at = this.#attachedAt;
      const renewed = (this.#renewed = new Set());
      try {
        this.#sweep(() => {
          for (let i = 0, n = order.length; i < n; i++) {
            const peer = order[i]!;
            if (renewed.has(peer)) continue;
            const d = this.#detectors.get(peer);
            if (d === undefined) this.#tickSilent(peer, at[i]!);
            else if (d.phase !== "lost") this.#tick(peer, d);
          }
        });
      } finally {
        // Whatever a tick ran into, the next one comes: one missed re-arm would end detection for good (§10).
        this.#renewed = null;
        this.#arm();
      }
    }, this.#config.intervalMs);
  }

  #subscriberError(error: unknown): void {
    this.#subscriberErrors++;
    this.#onSubscriberError?.(error);
  }

  /** `now` is the seam's view (an immutable value), kept by reference. */
  #membership(now: ReadonlySet<PeerId>): void {
    if (this.#closed) return;
    const before = this.#members;
    if (now === before) return;
    this.#members = now;
    const fresh: PeerId[] = [];
    for (const p of now) if (!before.has(p) && !this.#detectors.has(p)) fresh.push(p);
    for (const p of fresh.sort()) this.#attach(p);
    const order = this.#order;
    const at = this.#attachedAt;
    this.#sweep(() => {
      for (let i = 0, n = order.length; i < n; i++) {
        const p = order[i]!;
        if (now.has(p)) continue;
        const d = this.#detectors.get(p) ?? this.#materialize(p, at[i]!);
        if (d.phase === "healthy") this.#declare(p, d, "transport-closed");
      }
    });
  }

  /**
   * Runs `visit` with unreachable changes gathered into one draft set and events queued; then publishes the
   * set once and emits the events in order (subscribers see the set already holding every peer declared).
   */
  #sweep(visit: () => void): void {
    this.#draft = new Set(this.#unreachable.get());
    try {
      visit();
    } finally {
      const draft = this.#draft;
      const queued = this.#queued;
      this.#draft = null;
      this.#queued = [];
      this.#unreachable.set(draft);
      for (const e of queued) this.#events.emit(e);
    }
  }

  #emit(e: PartitionEvent): void {
    if (this.#draft !== null) this.#queued.push(e);
    else this.#events.emit(e);
  }

  /**
   * Attaches a detector to a peer that has none: a member that just appeared (no state yet), or one that
   * `remonitor` renewed. A peer that left already has its state object (its departure declared it).
   */
  #attach(peer: PeerId): void {
    this.#order.push(peer);
    this.#attachedAt.push(this.#timers.now());
  }

  /** The state object of an attached peer that has none yet: healthy, silent since `attachedAt`. */
  #materialize(peer: PeerId, attachedAt: number): Detector {
    const d: Detector = { phase: "healthy", lastSeen: attachedAt, inboundCount: 0, backpressurePending: false, seen0: 0, elapsed: 0 };
    this.#detectors.set(peer, d);
    return d;
  }

  /** The detector of `peer` (its state object created if it is attached and has none), or undefined. */
  #detector(peer: PeerId): Detector | undefined {
    const d = this.#detectors.get(peer);
    if (d !== undefined || !this.#members.has(peer)) return d;
    // Every member is attached, and an attached peer without state is a member; a rare path (a frame's
    // arrival has its own), so the attach time is looked up.
    const i = this.#order.lastIndexOf(peer);
    return i < 0 ? undefined : this.#materialize(peer, this.#attachedAt[i]!);
  }

  /** A tick of an attached member without state: healthy and silent since it attached. */
  #tickSilent(peer: PeerId, attachedAt: number): void {
    const now = this.#timers.now();
    this.#ping(peer);
    if (now - attachedAt >= this.#config.timeoutMs) this.#declare(peer, this.#materialize(peer, attachedAt), "timeout");
  }

  #tick(peer: PeerId, d: Detector): void {
    const now = this.#timers.now();
    if (d.phase === "healthy") {
      if (!this.#members.has(peer)) return this.#declare(peer, d, "transport-closed");
      if (d.backpressurePending) {
        d.backpressurePending = false;
        return this.#declare(peer, d, "backpressure");
      }
      this.#ping(peer);
      if (now - d.lastSeen >= this.#config.timeoutMs) this.#declare(peer, d, "timeout");
      return;
    }
    // unresponsive
    d.elapsed += this.#config.intervalMs;
    if (d.inboundCount > d.seen0 && now - d.lastSeen < this.#config.timeoutMs) {
      d.phase = "healthy";
      d.backpressurePending = false;
      this.#setUnreachable(peer, false);
      this.#emit({ kind: "recovered", peer, at: now });
      return;
    }
    if (d.elapsed >= this.#config.reconnectWindowMs) {
      d.phase = "lost";
      this.#emit({ kind: "lost", peer, at: now });
      return;
    }
    this.#ping(peer);
  }

  #declare(peer: PeerId, d: Detector, reason: UnresponsiveReason): void {
    d.phase = "unresponsive";
    d.seen0 = d.inboundCount;
    d.elapsed = 0;
    this.#setUnreachable(peer, true);
    this.#emit({ kind: "unresponsive", peer, at: this.#timers.now(), reason });
  }

  #ping(peer: PeerId): void {
    if (this.#channel.send(peer, PING) === "queued") this.#pings++;
  }

  #setUnreachable(peer: PeerId, on: boolean): void {
    if (this.#draft !== null) {
      if (on) this.#draft.add(peer);
      else this.#draft.delete(peer);
      return;
    }
    const next = new Set(this.#unreachable.get());
    if (on) next.add(peer);
    else next.delete(peer);
    this.#unreachable.set(next);
  }

  #activity(from: PeerId): void {
    let d = this.#detectors.get(from);
    if (d === undefined) {
      if (!this.#members.has(from)) return;
      d = this.#materialize(from, 0); // lastSeen is set just below
    }
    d.lastSeen = this.#timers.now();
    d.inboundCount++;
  }

  #receive(from: PeerId, frame: Uint8Array): void {
    if (frame.length > this.#maxFrameBytes) return this.#rejections.reject(from, "liveness", "oversize");
    const r = readLivenessMessage(frame);
    if (!r.ok) return this.#rejections.reject(from, "liveness", r.reason);
    if (r.message.kind === "ping" && this.#channel.send(from, PONG) === "queued") this.#pongs++;
  }
}
