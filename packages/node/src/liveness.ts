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

type LivenessMessage = { kind: "ping" } | { kind: "pong" };

function readLivenessMessage(frame: Uint8Array): WireRead<LivenessMessage> {
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
 * a node watching 999 peers keeps one timer, not 999.
 */
export class LivenessMonitor {
  readonly #channel: Seam;
  readonly #timers: Timers;
  readonly #config: HeartbeatConfig;
  readonly #rejections: RejectionCounter;
  readonly #detectors = new Map<PeerId, Detector>();
  readonly #unreachable = new WatchCell<ReadonlySet<PeerId>>(new Set(), sameMembers);
  readonly #events = new EventChannel<PartitionEvent>();
  readonly #off: (() => void)[] = [];
  #members: ReadonlySet<PeerId> = new Set();
  #timer: unknown = null;
  #pings = 0;
  #pongs = 0;
  #closed = false;

  constructor(o: { channel: Seam; mux: SeamMux; timers: Timers; config: HeartbeatConfig; rejections: RejectionCounter }) {
    const c = o.config;
    if (!(Number.isInteger(c.intervalMs) && c.intervalMs > 0 && c.timeoutMs > c.intervalMs && Number.isInteger(c.timeoutMs))) {
      throw new RangeError("heartbeat: require 0 < intervalMs < timeoutMs (integers)");
    }
    if (!Number.isInteger(c.reconnectWindowMs) || c.reconnectWindowMs <= 0) throw new RangeError("heartbeat.reconnectWindowMs must be a positive integer");
    this.#channel = o.channel;
    this.#timers = o.timers;
    this.#config = c;
    this.#rejections = o.rejections;
    this.#off.push(o.channel.onFrame((from, frame) => this.#receive(from, frame)));
    this.#off.push(o.mux.onActivity((from) => this.#activity(from)));
    this.#off.push(o.channel.onBackpressure((peer) => {
      const d = this.#detectors.get(peer);
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
    this.#setUnreachable(peer, false);
    if (this.#members.has(peer)) this.#attach(peer);
  }

  /** Current phase per monitored peer (diagnostic). */
  phases(): Record<PeerId, Detector["phase"]> {
    const out: Record<PeerId, Detector["phase"]> = {};
    for (const p of sortedIds(this.#detectors.keys())) out[p] = this.#detectors.get(p)!.phase;
    return out;
  }

  counters(): { pingsOut: number; pongsOut: number } {
    return { pingsOut: this.#pings, pongsOut: this.#pongs };
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
      for (const [peer, d] of [...this.#detectors]) if (d.phase !== "lost" && this.#detectors.get(peer) === d) this.#tick(peer, d);
      this.#arm();
    }, this.#config.intervalMs);
  }

  #membership(now: ReadonlySet<PeerId>): void {
    if (this.#closed) return;
    this.#members = new Set(now);
    for (const p of sortedIds(now)) if (!this.#detectors.has(p)) this.#attach(p);
    for (const [p, d] of this.#detectors) {
      if (d.phase === "healthy" && !now.has(p)) this.#declare(p, d, "transport-closed");
    }
  }

  #attach(peer: PeerId): void {
    this.#detectors.set(peer, { phase: "healthy", lastSeen: this.#timers.now(), inboundCount: 0, backpressurePending: false, seen0: 0, elapsed: 0 });
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
      this.#events.emit({ kind: "recovered", peer, at: now });
      return;
    }
    if (d.elapsed >= this.#config.reconnectWindowMs) {
      d.phase = "lost";
      this.#events.emit({ kind: "lost", peer, at: now });
      return;
    }
    this.#ping(peer);
  }

  #declare(peer: PeerId, d: Detector, reason: UnresponsiveReason): void {
    d.phase = "unresponsive";
    d.seen0 = d.inboundCount;
    d.elapsed = 0;
    this.#setUnreachable(peer, true);
    this.#events.emit({ kind: "unresponsive", peer, at: this.#timers.now(), reason });
  }

  #ping(peer: PeerId): void {
    if (this.#channel.send(peer, PING) === "queued") this.#pings++;
  }

  #setUnreachable(peer: PeerId, on: boolean): void {
    const next = new Set(this.#unreachable.get());
    if (on) next.add(peer);
    else next.delete(peer);
    this.#unreachable.set(next);
  }

  #activity(from: PeerId): void {
    const d = this.#detectors.get(from);
    if (d === undefined) return;
    d.lastSeen = this.#timers.now();
    d.inboundCount++;
  }

  #receive(from: PeerId, frame: Uint8Array): void {
    if (frame.length > this.#channel.maxFrameBytes) return this.#rejections.reject(from, "liveness", "oversize");
    const r = readLivenessMessage(frame);
    if (!r.ok) return this.#rejections.reject(from, "liveness", r.reason);
    if (r.message.kind === "ping" && this.#channel.send(from, PONG) === "queued") this.#pongs++;
  }
}
