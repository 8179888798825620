import { fnv1a64 } from "./fnv1a64.ts";
import { escapedLength, splitLedgerText } from "./ledger-fragments.ts";
import type { LedgerLattice } from "./ledger-lattice.ts";
import {
  encodeLedgerMessage, readLedgerMessage, type AckMessage, type DeltaMessage, type DigestMessage, type LedgerMessage,
  type ResendMessage, type StateMessage, type StateRequestMessage,
} from "./ledger-messages.ts";
import type { RejectionCounter } from "./rejection.ts";
import { sortedIds, type PeerId, type Seam } from "@heddle/seam";
import type { Timers } from "@heddle/seam";
import { WatchCell, type Watch } from "@heddle/seam";

/** Replication limits and intervals (node.md §12 names and defaults). */
export interface ReplicationConfig {
  antiEntropyIntervalMs: number;
  resendRetryMs: number;
  fullStateRetryMs: number;
  fullStateRetryLimit: number;
  peerEvictionMs: number;
  maxFrameBytes: number;
  maxPendingDeltas: number;
  maxTrackedSeqs: number;
  maxResendSpan: number;
}

/** node.md §12 defaults for replication. */
export const REPLICATION_DEFAULTS: ReplicationConfig = {
  antiEntropyIntervalMs: 5_000,
  resendRetryMs: 2_000,
  fullStateRetryMs: 5_000,
  fullStateRetryLimit: 10,
  peerEvictionMs: 300_000,
  maxFrameBytes: 1_048_576,
  maxPendingDeltas: 10_000,
  maxTrackedSeqs: 4_096,
  maxResendSpan: 1_024,
};

/** Smallest accepted `maxFrameBytes` (node.md §12). */
export const MIN_FRAME_BYTES = 4_096;

/** Validates a replication config, throwing `RangeError` naming the offending field. */
export function checkReplicationConfig(c: ReplicationConfig): ReplicationConfig {
  const positive = ["antiEntropyIntervalMs", "resendRetryMs", "fullStateRetryMs", "peerEvictionMs", "maxPendingDeltas", "maxTrackedSeqs", "maxResendSpan"] as const;
  for (const k of positive) if (!Number.isInteger(c[k]) || c[k] <= 0) throw new RangeError(`${k} must be a positive integer, got ${c[k]}`);
  if (!Number.isInteger(c.fullStateRetryLimit) || c.fullStateRetryLimit < 0) throw new RangeError(`fullStateRetryLimit must be an integer >= 0, got ${c.fullStateRetryLimit}`);
  if (!Number.isInteger(c.maxFrameBytes) || c.maxFrameBytes < MIN_FRAME_BYTES) throw new RangeError(`maxFrameBytes must be an integer >= ${MIN_FRAME_BYTES}, got ${c.maxFrameBytes}`);
  return c;
}

/** Replication counters (part of node.md §14 `metrics()`). */
export interface ReplicationMetrics {
  framesIn: Record<LedgerMessage["kind"], number>;
  framesOut: Record<LedgerMessage["kind"], number>;
  bytesOut: number;
  deltasPublished: number;
  resendsRequested: number;
  resendsServed: number;
  fullStatesSent: number;
  fullStatesReceived: number;
  digestMatches: number;
  digestMismatches: number;
  unsolicitedRequests: number;
  pendingDeltas: number;
  valueTooLarge: number;
}

/** Emitted when one edge group of a ledger value cannot fit in a frame (node.md §4.2). */
export interface ValueTooLarge {
  kind: "value-too-large";
  what: string;
  bytes: number;
}

/** Everything a `LedgerReplication` is built from. */
export interface LedgerReplicationOptions<L> {
  /** The ledger channel (tag 1 of the mux). */
  channel: Seam;
  /** Incarnation: the store's boot counter; a restarted peer starts a new delta stream. */
  incarnation: number;
  /** FNV-1a-64 of the canonical genesis bytes (node.md §13.1). */
  genesis: string;
  initial: L;
  lattice: LedgerLattice<L>;
  timers: Timers;
  random: () => number;
  config: ReplicationConfig;
  rejections: RejectionCounter;
  onValueTooLarge?: (e: ValueTooLarge) => void;
  /** Called after an inbound value changed the state (the node marks it dirty for its next commit). */
  onMerged?: (state: L) => void;
  /** Called at each anti-entropy tick, after the digest went out. */
  onTick?: () => void;
}

interface Known {
  acked: number;
  grant: boolean;
  absentSince: number | null;
  retryTimer: unknown;
  retries: number;
  lastFullStateAt: number;
}

interface StateTransferProgress {
  inc: number;
  transfer: number;
  parts: number;
  got: Set<number>;
}

interface Remote {
  inc: number;
  contig: number;
  above: Set<number>;
  /** Parts received so far of split deltas not yet complete, per seq. */
  partial: Map<number, { parts: number; got: Set<number> }>;
  resendTimer: unknown;
  /** Highest seq already asked for since the last retry: a new out-of-order arrival only asks for what is new. */
  requestedTo: number;
  transfer: StateTransferProgress | null;
}

const KINDS: readonly LedgerMessage["kind"][] = ["delta", "ack", "resend", "digest", "state-request", "state"];
const zeroKinds = () => Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<LedgerMessage["kind"], number>;

/**
 * Ledger replication by delta gossip, anti-entropy and first-contact sync (node.md §5). Every inbound
 * value is joined on arrival — duplicates, reordering and replays change nothing beyond the first
 * delivery — and sequence numbers only serve to notice losses quickly and to free the send buffer.
 * All handlers are synchronous; all time and randomness come from the injected `timers`/`random`.
 */
export class LedgerReplication<L> {
  readonly self: PeerId;
  readonly incarnation: number;
  readonly #o: LedgerReplicationOptions<L>;
  readonly #state: WatchCell<L>;
  readonly #maxFrameBytes: number;
  readonly #valueBudget: number;
  #seq = 0;
  #transfer = 0;
  readonly #buffer = new Map<number, string[]>();
  readonly #known = new Map<PeerId, Known>();
  readonly #remotes = new Map<PeerId, Remote>();
  #members: ReadonlySet<PeerId> = new Set();
  readonly #tooLargeSeen = new Set<string>();
  readonly #metrics: ReplicationMetrics = {
    framesIn: zeroKinds(), framesOut: zeroKinds(), bytesOut: 0, deltasPublished: 0, resendsRequested: 0, resendsServed: 0,
    fullStatesSent: 0, fullStatesReceived: 0, digestMatches: 0, digestMismatches: 0, unsolicitedRequests: 0, pendingDeltas: 0, valueTooLarge: 0,
  };
  #tickTimer: unknown = null;
  #rootOf: { state: L; root: string } | null = null;
  #stateFrames: { state: L; seq: number; frames: Uint8Array[] } | null = null;
  readonly #unsubscribe: (() => void)[] = [];
  #closed = false;

  constructor(o: LedgerReplicationOptions<L>) {
    checkReplicationConfig(o.config);
    this.#o = o;
    this.self = o.channel.self;
    this.incarnation = o.incarnation;
    this.#state = new WatchCell(o.initial, (a, b) => a === b);
    this.#maxFrameBytes = Math.min(o.config.maxFrameBytes, o.channel.maxFrameBytes);
    // Envelope with every number at its widest: what a value part can use is the rest.
    const widest = Number.MAX_SAFE_INTEGER;
    const envelope = encodeLedgerMessage({ kind: "state", genesis: o.genesis, sender: this.self, inc: widest, upThrough: widest, transfer: widest, part: widest, parts: widest, value: "" }).length;
    this.#valueBudget = this.#maxFrameBytes - envelope;
    if (this.#valueBudget < 256) throw new RangeError(`maxFrameBytes ${this.#maxFrameBytes} leaves no room for ledger values`);
    this.#unsubscribe.push(o.channel.onFrame((from, frame) => this.#receive(from, frame)));
    this.#unsubscribe.push(o.channel.peers.subscribe((p) => this.#membership(p)));
    this.#membership(o.channel.peers.get());
    this.#armTick();
  }

  /** The converged view on this peer. */
  get ledger(): Watch<L> {
    return this.#state;
  }

  /** Last published delta sequence number of this incarnation. */
  get seq(): number {
    return this.#seq;
  }

  /**
   * Publishes a local patch (node.md §5.1 step 3–4): joins it into the state, buffers it under the next
   * `seq` and broadcasts it as a delta, split per §4.2 if needed. The caller has already made it durable.
   */
  publish(patch: L): void {
    if (this.#closed) return;
    const lat = this.#o.lattice;
    this.#install(lat.join(this.#state.get(), patch));
    this.#seq++;
    this.#metrics.deltasPublished++;
    const fragments = this.#split(lat.encode(patch), `delta ${this.#seq}`);
    this.#buffer.set(this.#seq, fragments);
    this.#gc();
    fragments.forEach((value, part) => {
      this.#broadcast({ kind: "delta", genesis: this.#o.genesis, sender: this.self, inc: this.incarnation, seq: this.#seq, part, parts: fragments.length, value });
    });
  }

  metrics(): ReplicationMetrics {
    return { ...this.#metrics, framesIn: { ...this.#metrics.framesIn }, framesOut: { ...this.#metrics.framesOut }, pendingDeltas: this.#buffer.size };
  }

  /** Peers this replica currently tracks for acks and grants (diagnostic). */
  knownPeers(): PeerId[] {
    return sortedIds(this.#known.keys());
  }

  /** Stops timers and detaches from the channel. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const t = this.#o.timers;
    if (this.#tickTimer !== null) t.clear(this.#tickTimer);
    for (const k of this.#known.values()) if (k.retryTimer !== null) t.clear(k.retryTimer);
    for (const r of this.#remotes.values()) if (r.resendTimer !== null) t.clear(r.resendTimer);
    for (const u of this.#unsubscribe) u();
  }

  // ---- sending ---------------------------------------------------------------------------------

  #send(to: PeerId, m: LedgerMessage): void {
    const bytes = encodeLedgerMessage(m);
    if (this.#o.channel.send(to, bytes) === "queued") {
      this.#metrics.framesOut[m.kind]++;
      this.#metrics.bytesOut += bytes.length;
    }
  }

  #broadcast(m: LedgerMessage): void {
    for (const p of sortedIds(this.#members)) this.#send(p, m);
  }

  #split(text: string, what: string): string[] {
    const { fragments, oversizeGroups } = splitLedgerText(text, this.#valueBudget);
    for (const g of oversizeGroups) {
      this.#metrics.valueTooLarge++;
      const key = `${what.split(" ")[0]}:${g.group}`;
      if (!this.#tooLargeSeen.has(key)) {
        this.#tooLargeSeen.add(key);
        this.#o.onValueTooLarge?.({ kind: "value-too-large", what: `${what}: edge group ${g.group}`, bytes: g.bytes });
      }
    }
    return fragments;
  }

  #sendFullState(to: PeerId): void {
    // The same state at the same seq is sent as the same transfer: first contact with many peers
    // encodes it once. A changed state (or seq) starts a new transfer.
    const state = this.#state.get();
    let c = this.#stateFrames;
    if (c === null || c.state !== state || c.seq !== this.#seq) {
      const fragments = this.#split(this.#o.lattice.encode(state), "state");
      const transfer = ++this.#transfer;
      const frames = fragments.map((value, part) =>
        encodeLedgerMessage({ kind: "state", genesis: this.#o.genesis, sender: this.self, inc: this.incarnation, upThrough: this.#seq, transfer, part, parts: fragments.length, value }),
      );
      this.#stateFrames = c = { state, seq: this.#seq, frames };
    }
    this.#metrics.fullStatesSent++;
    const k = this.#known.get(to);
    if (k !== undefined) k.lastFullStateAt = this.#o.timers.now();
    for (const bytes of c.frames) {
      if (this.#o.channel.send(to, bytes) === "queued") {
        this.#metrics.framesOut.state++;
        this.#metrics.bytesOut += bytes.length;
      }
    }
  }

  /** FNV-1a-64 of the canonical state, cached per state value. */
  #root(): string {
    const state = this.#state.get();
    if (this.#rootOf === null || this.#rootOf.state !== state) this.#rootOf = { state, root: fnv1a64(this.#o.lattice.encode(state)) };
    return this.#rootOf.root;
  }

  #sendDigest(to: PeerId): void {
    const root = this.#root();
    this.#send(to, { kind: "digest", genesis: this.#o.genesis, sender: this.self, inc: this.incarnation, root, upThrough: this.#seq });
  }

  #ack(sender: PeerId, r: Remote): void {
    this.#send(sender, { kind: "ack", genesis: this.#o.genesis, acker: this.self, sender, inc: r.inc, seq: r.contig });
  }

  // ---- membership, first contact, anti-entropy ---------------------------------------------------

  #membership(now: ReadonlySet<PeerId>): void {
    if (this.#closed) return;
    const before = this.#members;
    this.#members = new Set(now);
    const t = this.#o.timers.now();
    for (const p of sortedIds(now)) if (!before.has(p)) this.#firstContact(p);
    for (const p of before) {
      if (!now.has(p)) {
        const k = this.#known.get(p);
        if (k !== undefined && k.absentSince === null) k.absentSince = t;
      }
    }
  }

  /** A peer (re-)entered membership: send it the full state and an ungranted digest, with retries. */
  #firstContact(p: PeerId): void {
    let k = this.#known.get(p);
    if (k === undefined) {
      k = { acked: 0, grant: false, absentSince: null, retryTimer: null, retries: 0, lastFullStateAt: -Infinity };
      this.#known.set(p, k);
    }
    k.absentSince = null;
    this.#sendFullState(p);
    this.#sendDigest(p);
    k.retries = 0;
    this.#armRetry(p, k);
  }

  #armRetry(p: PeerId, k: Known): void {
    const t = this.#o.timers;
    if (k.retryTimer !== null) t.clear(k.retryTimer);
    k.retryTimer = null;
    if (k.retries >= this.#o.config.fullStateRetryLimit) return;
    k.retryTimer = t.set(() => {
      k.retryTimer = null;
      if (this.#closed || this.#known.get(p) !== k) return;
      k.retries++;
      if (this.#members.has(p)) this.#sendFullState(p);
      this.#armRetry(p, k);
    }, this.#o.config.fullStateRetryMs);
  }

  #armTick(): void {
    this.#tickTimer = this.#o.timers.set(() => {
      if (this.#closed) return;
      this.#tick();
      this.#armTick();
    }, this.#o.config.antiEntropyIntervalMs);
  }

  #tick(): void {
    const now = this.#o.timers.now();
    for (const [p, k] of [...this.#known]) {
      if (k.absentSince !== null && now - k.absentSince >= this.#o.config.peerEvictionMs) {
        if (k.retryTimer !== null) this.#o.timers.clear(k.retryTimer);
        this.#known.delete(p);
      }
    }
    this.#gc();
    const candidates = sortedIds(this.#known.keys());
    if (candidates.length > 0) {
      const p = candidates[Math.min(candidates.length - 1, Math.floor(this.#o.random() * candidates.length))]!;
      this.#known.get(p)!.grant = true;
      this.#sendDigest(p);
    }
    this.#o.onTick?.();
  }

  #gc(): void {
    let min = this.#seq;
    for (const k of this.#known.values()) min = Math.min(min, k.acked);
    for (const s of [...this.#buffer.keys()]) {
      if (s <= min) this.#buffer.delete(s);
      else break;
    }
    while (this.#buffer.size > this.#o.config.maxPendingDeltas) {
      const oldest = this.#buffer.keys().next().value as number;
      this.#buffer.delete(oldest);
    }
  }

  // ---- receiving ---------------------------------------------------------------------------------

  #receive(from: PeerId, frame: Uint8Array): void {
    if (this.#closed) return;
    const rej = this.#o.rejections;
    if (frame.length > this.#maxFrameBytes) return rej.reject(from, "ledger", "oversize");
    const r = readLedgerMessage(frame, from, this.#o.genesis);
    if (!r.ok) return rej.reject(from, "ledger", r.reason);
    const m = r.message;
    // `null`: no value, or a value whose text is exactly our own canonical state (nothing to join).
    let value: L | null = null;
    if ((m.kind === "delta" || m.kind === "state") && m.value !== this.#o.lattice.encode(this.#state.get())) {
      try {
        value = this.#o.lattice.decode(m.value);
      } catch {
        return rej.reject(from, "ledger", "bad-value");
      }
    }
    this.#metrics.framesIn[m.kind]++;
    const k = this.#known.get(from);
    if (k !== undefined && k.retryTimer !== null) {
      this.#o.timers.clear(k.retryTimer);
      k.retryTimer = null;
    }
    switch (m.kind) {
      case "delta":
        return this.#onDelta(m, value);
      case "state":
        return this.#onState(m, value);
      case "ack":
        return this.#onAck(from, m);
      case "resend":
        return this.#onResend(from, m);
      case "digest":
        return this.#onDigest(from, m);
      case "state-request":
        return this.#onStateRequest(from, m);
    }
  }

  #install(next: L): void {
    this.#state.set(next);
  }

  #merge(value: L | null): void {
    if (value === null) return;
    const lat = this.#o.lattice;
    const cur = this.#state.get();
    const next = lat.join(cur, value);
    if (lat.equals(next, cur)) return;
    this.#install(next);
    this.#o.onMerged?.(next);
  }

  #remote(s: PeerId): Remote {
    let r = this.#remotes.get(s);
    if (r === undefined) {
      r = { inc: -1, contig: 0, above: new Set(), partial: new Map(), resendTimer: null, requestedTo: 0, transfer: null };
      this.#remotes.set(s, r);
    }
    return r;
  }

  /** Returns false when the message belongs to an older incarnation (join only, no bookkeeping). */
  #adopt(r: Remote, inc: number): boolean {
    if (inc < r.inc) return false;
    if (inc > r.inc) {
      r.inc = inc;
      r.contig = 0;
      r.above.clear();
      r.partial.clear();
      r.requestedTo = 0;
      r.transfer = null;
      if (r.resendTimer !== null) this.#o.timers.clear(r.resendTimer);
      r.resendTimer = null;
    }
    return true;
  }

  #onDelta(m: DeltaMessage, value: L | null): void {
    const r = this.#remote(m.sender);
    if (!this.#adopt(r, m.inc)) {
      this.#merge(value);
      return;
    }
    this.#merge(value);
    if (m.seq <= r.contig || r.above.has(m.seq)) {
      this.#ack(m.sender, r);
      return;
    }
    if (m.parts > 1) {
      let p = r.partial.get(m.seq);
      if (p === undefined) {
        if (r.partial.size + r.above.size >= this.#o.config.maxTrackedSeqs) r.partial.clear();
        r.partial.set(m.seq, (p = { parts: m.parts, got: new Set() }));
      }
      if (p.parts !== m.parts) return;
      p.got.add(m.part);
      if (p.got.size < p.parts) return;
      r.partial.delete(m.seq);
    }
    r.above.add(m.seq);
    this.#advance(r);
    this.#ack(m.sender, r);
    this.#checkGap(m.sender, r);
  }

  #advance(r: Remote): void {
    while (r.above.has(r.contig + 1)) {
      r.above.delete(r.contig + 1);
      r.contig++;
    }
  }

  #checkGap(sender: PeerId, r: Remote): void {
    if (r.above.size > this.#o.config.maxTrackedSeqs) r.above.clear();
    const t = this.#o.timers;
    if (r.above.size === 0) {
      if (r.resendTimer !== null) t.clear(r.resendTimer);
      r.resendTimer = null;
      return;
    }
    // A gap opened or widened: ask at once for the part not asked for yet; the retry timer asks for
    // the whole remaining gap every resendRetryMs while it stays open.
    this.#requestResend(sender, r, Math.max(r.contig + 1, r.requestedTo + 1));
    if (r.resendTimer !== null) return;
    const retry = () => {
      r.resendTimer = null;
      if (this.#closed || this.#remotes.get(sender) !== r || r.above.size === 0) return;
      this.#requestResend(sender, r, r.contig + 1);
      r.resendTimer = t.set(retry, this.#o.config.resendRetryMs);
    };
    r.resendTimer = t.set(retry, this.#o.config.resendRetryMs);
  }

  #requestResend(sender: PeerId, r: Remote, from: number): void {
    let to = 0;
    for (const s of r.above) if (s > to) to = s;
    to -= 1;
    if (to < from) return;
    r.requestedTo = Math.max(r.requestedTo, to);
    this.#metrics.resendsRequested++;
    this.#send(sender, { kind: "resend", genesis: this.#o.genesis, requester: this.self, sender, inc: r.inc, from, to });
  }

  #resync(sender: PeerId, inc: number, upThrough: number): void {
    const r = this.#remote(sender);
    if (!this.#adopt(r, inc)) return;
    if (upThrough > r.contig) {
      r.contig = upThrough;
      for (const s of [...r.above]) if (s <= upThrough) r.above.delete(s);
      for (const s of [...r.partial.keys()]) if (s <= upThrough) r.partial.delete(s);
      this.#advance(r);
    }
    this.#ack(sender, r);
    this.#checkGap(sender, r);
  }

  #onState(m: StateMessage, value: L | null): void {
    this.#merge(value);
    const r = this.#remote(m.sender);
    if (m.inc < r.inc) return;
    const cur = r.transfer;
    if (cur === null || m.inc > cur.inc || (m.inc === cur.inc && m.transfer > cur.transfer)) {
      r.transfer = { inc: m.inc, transfer: m.transfer, parts: m.parts, got: new Set() };
    }
    const t = r.transfer!;
    if (t.inc !== m.inc || t.transfer !== m.transfer || t.parts !== m.parts) return;
    t.got.add(m.part);
    if (t.got.size < t.parts) return;
    r.transfer = null;
    this.#metrics.fullStatesReceived++;
    this.#resync(m.sender, m.inc, m.upThrough);
  }

  #onAck(from: PeerId, m: AckMessage): void {
    if (m.sender !== this.self || m.inc !== this.incarnation) return;
    const k = this.#known.get(from);
    if (k === undefined) return;
    if (m.seq > k.acked) {
      k.acked = Math.min(m.seq, this.#seq);
      this.#gc();
    }
  }

  #onResend(from: PeerId, m: ResendMessage): void {
    if (m.sender !== this.self) return;
    const span = m.to - m.from + 1;
    let buffered = m.inc === this.incarnation && span <= this.#o.config.maxResendSpan && m.to <= this.#seq;
    if (buffered) for (let s = m.from; s <= m.to && buffered; s++) buffered = this.#buffer.has(s);
    if (buffered) {
      this.#metrics.resendsServed++;
      for (let s = m.from; s <= m.to; s++) {
        const fragments = this.#buffer.get(s)!;
        fragments.forEach((value, part) => {
          this.#send(from, { kind: "delta", genesis: this.#o.genesis, sender: this.self, inc: this.incarnation, seq: s, part, parts: fragments.length, value });
        });
      }
      return;
    }
    const k = this.#known.get(from);
    const last = k?.lastFullStateAt ?? -Infinity;
    if (this.#o.timers.now() - last >= this.#o.config.antiEntropyIntervalMs) this.#sendFullState(from);
  }

  #onDigest(from: PeerId, m: DigestMessage): void {
    const mine = this.#root();
    if (mine === m.root) {
      this.#metrics.digestMatches++;
      this.#resync(m.sender, m.inc, m.upThrough);
      return;
    }
    this.#metrics.digestMismatches++;
    this.#send(from, { kind: "state-request", genesis: this.#o.genesis, requester: this.self, sender: m.sender });
  }

  #onStateRequest(from: PeerId, m: StateRequestMessage): void {
    const k = this.#known.get(from);
    if (m.sender !== this.self || k === undefined || !k.grant) {
      this.#metrics.unsolicitedRequests++;
      return;
    }
    k.grant = false;
    this.#sendFullState(from);
  }
}

/** Byte cost of carrying `text` as a message value (exported for tests and benchmarks). */
export const ledgerValueCost = escapedLength;
