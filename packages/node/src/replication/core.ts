import { LedgerOverflowError, type EntitlementLedger, type LedgerReplica } from "@heddle/ledger";
import type { PeerId } from "@heddle/seam";
import { PeerDirectory, type KnownPeer } from "./anti-entropy.ts";
import { checkReplicationConfig, type ReplicationConfig } from "./config.ts";
import { InboundCursors } from "./inbound.ts";
import type { AckInfo, DeltaMessage, DigestMessage, LedgerMessage, ResendMessage, StateMessage } from "./messages.ts";
import { OutboundDeltas } from "./outbound.ts";
import { checkReadsAfterJoin, LeafSpentTotal } from "./read-check.ts";
import { StateTransfers } from "./state-transfer.ts";

/** Everything a {@link ReplicationCore} starts from. */
export interface ReplicationCoreOptions {
  readonly self: PeerId;
  /** The store's boot counter: a restarted peer starts a new delta stream. */
  readonly incarnation: number;
  /** The state. The core joins inbound values into it; the owner applies committed local patches to it. */
  readonly replica: LedgerReplica;
  /** Every peer holds it (the `genesis` digest on every frame proves it): frames leave out what it dominates. */
  readonly genesis: EntitlementLedger;
  readonly config: ReplicationConfig;
  readonly random: () => number;
  readonly now: number;
  /**
   * Not this replica's first boot. A restarted incarnation announces itself to every peer it meets (it may
   * have acknowledged deltas it never made durable); a first boot at genesis has nothing to say.
   */
  readonly restarted: boolean;
  /** Largest binary ledger value one frame carries (the wire envelope subtracted). */
  readonly valueBudget: number;
}

/** A message for one peer. The same message object may go to many peers (encode it once). */
export interface Outgoing {
  readonly to: PeerId;
  readonly message: LedgerMessage;
}

/** One edge group of a ledger value that cannot fit any frame (node.md §4.2). */
export interface ValueTooLarge {
  kind: "value-too-large";
  what: string;
  bytes: number;
}

/** What the driver does after a step or tick (node.md §5): send, persist and announce what was merged. */
export interface Ready {
  readonly sends: readonly Outgoing[];
  /** Effective deltas joined into the replica (what changed), to persist as `merged` rows and announce. */
  readonly merged: readonly EntitlementLedger[];
  readonly tooLarge: readonly ValueTooLarge[];
  /** An anti-entropy period elapsed: persist what is dirty, re-check conflicts (node.md §9.3, §14). */
  readonly antiEntropyTick: boolean;
}

/** Replication counters (part of node.md §14 `metrics()`). */
export interface ReplicationMetrics {
  deltasPublished: number;
  resendsRequested: number;
  resendsServed: number;
  /** Resend requests dropped because answering would resend more than `maxResendSpan` deltas to one peer within `resendRetryMs`. */
  resendsRateLimited: number;
  tailsReoffered: number;
  fullStatesSent: number;
  fullStatesReceived: number;
  digestsSent: number;
  digestMatches: number;
  digestMismatches: number;
  handshakes: number;
  unsolicitedRequests: number;
  rateLimitedRequests: number;
  acksSent: number;
  acksPiggybacked: number;
  pendingDeltas: number;
  valueTooLarge: number;
  /** Inbound values refused (`bad-value`) because joining them would put an aggregate read outside int64. */
  valueOverflows: number;
}

/** What `ready()` returns when nothing happened (shared: most frames and ticks of a large mesh produce nothing). */
const NOTHING: Ready = Object.freeze({ sends: Object.freeze([]), merged: Object.freeze([]), tooLarge: Object.freeze([]), antiEntropyTick: false });

/**
 * Ledger replication as a pure state machine (node.md §5), shaped like the Raft core: the driver feeds
 * `step(from, message)` for every decoded frame, `membership(peers)` for every change of the seam's view,
 * `publish(patch)` for every committed local patch, and `tick(now)` at `nextWake()`; after each it takes
 * `ready()` — messages to send, effective deltas merged, values too large — and does the I/O. No timers,
 * no sockets, no clock: time comes in as arguments, randomness through the injected generator.
 *
 * The parts: {@link OutboundDeltas} (own stream, batch, buffer, GC), {@link InboundCursors} (per-sender
 * cursors, reorder grace, resends, coalesced acks), {@link StateTransfers} (full states prepared once per
 * state), {@link PeerDirectory} (known peers, grants, handshakes, eviction — anti-entropy's state).
 *
 * Every inbound value is joined on arrival: duplicates, reordering and replays change nothing beyond the
 * first delivery; sequence numbers only notice losses and free the buffer. Joining and deciding
 * "changed" cost the size of the value (the replica is mutable and keeps its digest incrementally).
 */
export class ReplicationCore {
  readonly self: PeerId;
  readonly incarnation: number;
  readonly #replica: LedgerReplica;
  readonly #genesis: EntitlementLedger;
  readonly #genesisDigest: string;
  readonly #c: ReplicationConfig;
  readonly #random: () => number;
  readonly #restarted: boolean;
  readonly #valueBudget: number;
  readonly #known: readonly string[];
  readonly #out: OutboundDeltas;
  readonly #in: InboundCursors;
  readonly #peers = new PeerDirectory();
  readonly #transfers = new StateTransfers();
  /** Last full state served per peer (known or not): at most one per `antiEntropyIntervalMs`. */
  readonly #stateServedAt = new Map<PeerId, number>();
  /**
   * Deltas resent per peer in its current window (node.md §5.2 sets no limit; this one is named in the README):
   * at most `maxResendSpan` deltas per `resendRetryMs` — what one honest re-ask of a whole gap can need.
   */
  readonly #resent = new Map<PeerId, { since: number; deltas: number }>();
  readonly #tooLargeSeen = new Set<string>();
  /** The ledger-wide leaf-spent total the join check compares with int64 (kept per edge, see {@link LeafSpentTotal}). */
  readonly #leafSpent: LeafSpentTotal;
  /** Peers with a handshake being repeated (so a tick never scans every known peer for them). */
  readonly #handshaking = new Set<PeerId>();
  /** When some peer's unacked tail is next due for a re-offer (known peers are scanned only then). */
  #tailAt = Infinity;
  #aeAt: number;
  #wake: number;
  #sends: Outgoing[] = [];
  #merged: EntitlementLedger[] = [];
  #tooLarge: ValueTooLarge[] = [];
  #aeTick = false;
  readonly #m: ReplicationMetrics = {
    deltasPublished: 0, resendsRequested: 0, resendsServed: 0, resendsRateLimited: 0, tailsReoffered: 0, fullStatesSent: 0, fullStatesReceived: 0, digestsSent: 0,
    digestMatches: 0, digestMismatches: 0, handshakes: 0, unsolicitedRequests: 0, rateLimitedRequests: 0, acksSent: 0, acksPiggybacked: 0,
    pendingDeltas: 0, valueTooLarge: 0, valueOverflows: 0,
  };

  constructor(o: ReplicationCoreOptions) {
    checkReplicationConfig(o.config);
    if (!Number.isSafeInteger(o.incarnation) || o.incarnation < 0) throw new RangeError(`incarnation must be a safe integer >= 0, got ${o.incarnation}`);
    if (!Number.isSafeInteger(o.valueBudget) || o.valueBudget < 256) throw new RangeError(`a ledger value budget of ${o.valueBudget} bytes leaves no room for ledger values`);
    this.self = o.self;
    this.incarnation = o.incarnation;
    this.#replica = o.replica;
    this.#genesis = o.genesis;
    this.#genesisDigest = o.genesis.digest();
    this.#c = o.config;
    this.#random = o.random;
    this.#restarted = o.restarted;
    this.#valueBudget = o.valueBudget;
    this.#leafSpent = new LeafSpentTotal(o.replica);
    this.#known = [o.self];
    this.#out = new OutboundDeltas(o.config.maxPendingDeltas);
    this.#in = new InboundCursors(o.config);
    this.#aeAt = o.now + o.config.antiEntropyIntervalMs;
    this.#wake = this.#aeAt;
  }

  // ---- inputs ---------------------------------------------------------------------------------------

  /** A committed local patch (node.md §5.1 step 4): staged, and published as a delta when the batch closes. */
  publish(patch: EntitlementLedger, now: number): void {
    this.#leafSpent.observe(this.#replica, patch);
    this.#soon(this.#out.stage(patch, now, this.#c.deltaBatchMs));
  }

  /**
   * The seam's membership view changed (first contact, re-entry, departure; §5.4). `peers` is kept by
   * reference (a seam's views are immutable values): do not modify it afterwards.
   */
  membership(peers: ReadonlySet<PeerId>, now: number): void {
    const { met, reentered } = this.#peers.setMembers(peers, now);
    if (met.length + reentered.length > 0 && this.#out.seq > 0) {
      // A member behind our stream: its tail re-offer is due in resendRetryMs.
      this.#tailAt = Math.min(this.#tailAt, now + this.#c.resendRetryMs);
      this.#soon(this.#tailAt);
    }
    // First contact: a granted digest first, the state only if it asks (⟨1.1⟩); a first boot at genesis
    // has nothing to say (the peer already holds our stream's whole base).
    // A first boot at genesis keeps no record of the peers it meets (the directory's untouched default
    // is "based, nothing acknowledged"); a record appears when something is written about the peer.
    // Stryker disable next-line ConditionalExpression,EqualityOperator: with no peer met both branches below loop over an empty list, so `true` or `>= 0` only asks #announces() for nothing; this also hides the killed `false` variant
    const announce = met.length > 0 && this.#announces();
    if (announce) for (const peer of met) this.#startHandshake(peer, this.#peers.get(peer, now)!, now);
    else if (this.#out.seq > 0) for (const peer of met) this.#peers.get(peer, now); // its tail re-offer clock starts now
    // Re-entry of a known peer: the deltas it missed from the buffer, else a digest; never a full state.
    const seq = this.#out.seq;
    for (const peer of reentered) {
      const k = this.#peers.get(peer, now)!;
      k.tailAt = now;
      if (k.acked >= seq) continue;
      if (seq - k.acked <= this.#c.maxResendSpan && this.#out.holds(k.acked + 1, seq)) this.#sendDeltas(peer, k.acked + 1, seq);
      else this.#startHandshake(peer, k, now);
    }
  }

  /** One decoded message from `from` (the authenticated sender). Never throws on any valid message. */
  step(from: PeerId, m: LedgerMessage, now: number): "bad-value" | void {
    switch (m.kind) {
      case "delta":
        return this.#onDelta(from, m, now);
      case "ack":
        return this.#onAck(from, m, now);
      case "resend":
        return this.#onResend(from, m, now);
      case "digest":
        return this.#onDigest(from, m, now);
      case "state-request":
        return this.#onStateRequest(from, now);
      case "state":
        return this.#onState(from, m, now);
    }
  }

  /** Runs everything due at `now`: the delta batch, acks, resend requests, handshake retries, tail re-offers, the anti-entropy tick. */
  tick(now: number): void {
    if (this.#out.flushAt !== null && this.#out.flushAt <= now) this.#flush(now);
    for (const a of this.#in.due(now)) {
      if (a.kind === "ack") {
        this.#m.acksSent++;
        this.#send(a.to, { kind: "ack", inc: a.inc, seq: a.seq, based: a.based });
      } else {
        this.#m.resendsRequested++;
        this.#send(a.to, { kind: "resend", inc: a.inc, from: a.from, to: a.to_ });
      }
    }
    const seq = this.#out.seq;
    for (const p of [...this.#handshaking]) {
      const k = this.#peers.get(p, now);
      if (k === undefined || k.handshake === null || k.based) {
        if (k !== undefined) k.handshake = null;
        this.#handshaking.delete(p);
        continue;
      }
      if (k.handshake.nextAt > now) continue;
      if (k.handshake.retries >= this.#c.fullStateRetryLimit) {
        k.handshake = null;
        // Stryker disable next-line CallExpression: a peer left in the set has no handshake, so the next tick drops it at the check above; nothing is sent or woken for it meanwhile
        this.#handshaking.delete(p);
        continue;
      }
      k.handshake.retries++;
      k.handshake.nextAt = now + this.#c.fullStateRetryMs;
      if (this.#peers.members.has(p)) this.#sendDigest(p, k);
    }
    if (now >= this.#tailAt) this.#scanTails(now);
    if (now >= this.#aeAt) {
      this.#aeAt = now + this.#c.antiEntropyIntervalMs;
      this.#aeTick = true;
      this.#peers.evict(now, this.#c.peerEvictionMs);
      this.#out.gc(this.#peers.ackedByAll(seq));
      if (this.#c.antiEntropy) {
        const candidates = this.#peers.sortedKnown();
        if (candidates.length > 0) {
          const p = candidates[Math.min(candidates.length - 1, Math.floor(this.#random() * candidates.length))]!;
          this.#sendDigest(p, this.#peers.get(p, now)!);
        }
      }
    }
    this.#wake = this.#computeWake();
  }

  /**
   * The unacked tail: a loss of the last deltas leaves no gap for the receiver to notice, so the sender
   * re-offers its newest delta to each member that has not acknowledged it for `resendRetryMs`; a receiver
   * missing more asks for the rest. Also frees the buffer below what every known peer acknowledged.
   */
  #scanTails(now: number): void {
    const seq = this.#out.seq;
    let next = Infinity;
    for (const p of this.#peers.members) {
      if (this.#peers.peek(p)!.acked >= seq) continue;
      const k = this.#peers.get(p, now)!;
      if (now - k.tailAt >= this.#c.resendRetryMs) {
        k.tailAt = now;
        if (this.#out.get(seq) !== undefined) {
          this.#m.tailsReoffered++;
          this.#sendDeltas(p, seq, seq);
        }
      }
      next = Math.min(next, k.tailAt + this.#c.resendRetryMs);
    }
    this.#tailAt = next;
    this.#out.gc(this.#peers.ackedByAll(seq));
  }

  /** The earliest time `tick` has work (the driver keeps one timer armed for it). */
  nextWake(): number {
    return this.#wake;
  }

  /** Takes everything produced since the last call. */
  ready(): Ready {
    // Stryker disable next-line ConditionalExpression: `false` builds an empty Ready afresh, equal to NOTHING and sharing no list with the core (only an allocation per call); this also hides the killed ConditionalExpression variants on this line
    if (this.#sends.length === 0 && this.#merged.length === 0 && this.#tooLarge.length === 0 && !this.#aeTick) return NOTHING;
    const r: Ready = { sends: this.#sends, merged: this.#merged, tooLarge: this.#tooLarge, antiEntropyTick: this.#aeTick };
    // Every list handed out is replaced, empty ones too: the caller keeps it, and it must not grow afterwards.
    this.#sends = [];
    this.#merged = [];
    this.#tooLarge = [];
    this.#aeTick = false;
    return r;
  }

  /** Last published seq of this incarnation. */
  get seq(): number {
    return this.#out.seq;
  }

  /** Peers this replica tracks for acks and grants, sorted (diagnostic). */
  knownPeers(): PeerId[] {
    return [...this.#peers.sortedKnown()];
  }

  /** What this replica keeps about `p` (diagnostic and tests). */
  peer(p: PeerId): Readonly<KnownPeer> | undefined {
    return this.#peers.peek(p);
  }

  /** Cursor of sender `s` (diagnostic and tests). */
  cursor(s: PeerId): { inc: number; contig: number; above: number[]; based: boolean; partsHeld: number } | undefined {
    const c = this.#in.snapshot(s);
    return c === undefined ? undefined : { inc: c.inc, contig: c.contig, above: [...c.above].sort((a, b) => a - b), based: c.based, partsHeld: c.partsHeld };
  }

  metrics(): ReplicationMetrics {
    return { ...this.#m, pendingDeltas: this.#out.pending };
  }

  // ---- receiving ------------------------------------------------------------------------------------

  /**
   * Joins an inbound value, unless the join would make a read of the ledger leave int64 (ledger.md I-15: each
   * slot of a value may be in range while a sum is not — a peer's own `issued` at 2^63 − 1 on an edge others
   * issue on too, two edges' `leafSpent` whose ledger-wide total passes 2^63 − 1, two donors' transfers to one
   * recipient at the root). Such a value is refused whole: the replica is rolled back and the frame counted as
   * `bad-value`, so no later read on this node (its `validate()` on the anti-entropy tick, a schedule, its
   * holdings) throws for it, and it is neither persisted nor passed on. The check ({@link checkReadsAfterJoin})
   * reads again, with the ledger's own functions, every sum `validate()` and the holdings form that the raised
   * entries enter; a value that changes the topology gets the whole-state check.
   */
  #merge(value: EntitlementLedger): boolean {
    const tx = this.#replica.begin();
    let effective: EntitlementLedger | null;
    let keep: (() => void) | undefined;
    try {
      effective = this.#replica.merge(value);
      if (effective !== null) keep = checkReadsAfterJoin(this.#replica, effective, this.#leafSpent);
    } catch (e) {
      tx.rollback();
      if (!(e instanceof LedgerOverflowError)) throw e;
      this.#m.valueOverflows++;
      return false;
    }
    tx.commit();
    keep?.();
    if (effective !== null) this.#merged.push(effective);
    return true;
  }

  /** A new incarnation of `s` may have lost what it acknowledged: tell it ours again (if we have any). */
  #adopt(s: PeerId, inc: number, now: number): boolean {
    const a = this.#in.adopt(s, inc);
    if (a === "old") return false;
    if (a === "restart") {
      const k = this.#peers.get(s, now);
      if (k !== undefined) {
        k.based = false;
        if (this.#replica.digest() !== this.#genesisDigest && this.#peers.members.has(s)) this.#startHandshake(s, k, now);
      }
    }
    return true;
  }

  #onDelta(from: PeerId, m: DeltaMessage, now: number): "bad-value" | void {
    if (!this.#merge(m.value)) return "bad-value";
    if (m.ack !== null) this.#onAck(from, m.ack, now);
    if (!this.#adopt(from, m.inc, now)) return; // an old incarnation's patch is still a patch: joined, nothing else
    const r = this.#in.receive(from, m.seq, m.part, m.parts);
    if (r === "partial") return;
    this.#in.ackSoon(from, now);
    if (r === "new") this.#in.checkGap(from, now);
    this.#soonCursor(from);
  }

  #onAck(from: PeerId, a: AckInfo, now: number): void {
    if (a.inc !== this.incarnation) return;
    const k = this.#peers.get(from, now);
    if (k === undefined) return;
    const seq = Math.min(a.seq, this.#out.seq);
    if (seq > k.acked) {
      k.acked = seq;
      k.tailAt = now;
    }
    if (a.based && !k.based) {
      k.based = true;
      k.handshake = null;
    }
  }

  #onResend(from: PeerId, m: ResendMessage, now: number): void {
    if (m.inc === this.incarnation && m.to - m.from + 1 <= this.#c.maxResendSpan && this.#out.holds(m.from, m.to)) {
      if (!this.#resendAllowed(from, m.to - m.from + 1, now)) {
        this.#m.resendsRateLimited++;
        return;
      }
      this.#m.resendsServed++;
      this.#sendDeltas(from, m.from, m.to);
      return;
    }
    // Not buffered any more (or another incarnation's): the full state covers it, rate-limited.
    this.#serveState(from, now);
  }

  #onDigest(from: PeerId, m: DigestMessage, now: number): void {
    if (!this.#adopt(from, m.inc, now)) return;
    if (m.digest === this.#replica.digest()) {
      this.#m.digestMatches++;
      this.#in.resync(from, m.upThrough);
      this.#in.ackSoon(from, now, true);
      this.#in.checkGap(from, now);
      this.#soonCursor(from);
      return;
    }
    this.#m.digestMismatches++;
    this.#send(from, { kind: "state-request" });
  }

  #onStateRequest(from: PeerId, now: number): void {
    const k = this.#peers.peek(from);
    if (k === undefined || !k.grant) {
      this.#m.unsolicitedRequests++;
      return;
    }
    if (this.#serveState(from, now)) this.#peers.get(from, now)!.grant = false;
  }

  #onState(from: PeerId, m: StateMessage, now: number): "bad-value" | void {
    if (!this.#merge(m.value)) return "bad-value";
    if (!this.#adopt(from, m.inc, now)) return;
    if (!this.#in.transferPart(from, m)) return;
    this.#m.fullStatesReceived++;
    this.#in.resync(from, m.upThrough);
    this.#in.ackSoon(from, now, true);
    this.#in.checkGap(from, now);
    this.#soonCursor(from);
  }

  // ---- sending --------------------------------------------------------------------------------------

  #send(to: PeerId, message: LedgerMessage): void {
    this.#sends.push({ to, message });
  }

  #announces(): boolean {
    return this.#restarted || this.#replica.digest() !== this.#genesisDigest;
  }

  #startHandshake(p: PeerId, k: KnownPeer, now: number): void {
    this.#m.handshakes++;
    k.based = false;
    k.handshake = { nextAt: now + this.#c.fullStateRetryMs, retries: 0 };
    this.#handshaking.add(p);
    this.#soon(k.handshake.nextAt);
    this.#sendDigest(p, k);
  }

  #sendDigest(p: PeerId, k: KnownPeer): void {
    k.grant = true;
    this.#m.digestsSent++;
    this.#send(p, { kind: "digest", inc: this.incarnation, digest: this.#replica.digest(), upThrough: this.#out.seq });
  }

  /**
   * Whether `span` more deltas may be resent to `p` now (and if so, counts them): each resend frame is a few bytes
   * and its answer up to `maxResendSpan` deltas, so without a budget one peer could make this node send without end.
   * An honest receiver re-asks for its whole gap once per `resendRetryMs`, which the budget always covers; a request
   * over it is dropped (the receiver's next re-ask, or anti-entropy, repairs the gap).
   */
  #resendAllowed(p: PeerId, span: number, now: number): boolean {
    let w = this.#resent.get(p);
    if (w === undefined || now - w.since >= this.#c.resendRetryMs) {
      // Bounded like #stateServedAt: only windows still open are kept once the map outgrows the membership.
      if (w === undefined && this.#resent.size > 4 * this.#peers.members.size + 64) {
        for (const [q, x] of this.#resent) if (now - x.since >= this.#c.resendRetryMs) this.#resent.delete(q);
      }
      w = { since: now, deltas: 0 };
      this.#resent.set(p, w);
    }
    if (w.deltas + span > this.#c.maxResendSpan) return false;
    w.deltas += span;
    return true;
  }

  /** Sends the full state to `p` unless one went there within `antiEntropyIntervalMs`; true if sent. */
  #serveState(p: PeerId, now: number): boolean {
    const last = this.#stateServedAt.get(p);
    if (last !== undefined && now - last < this.#c.antiEntropyIntervalMs) {
      this.#m.rateLimitedRequests++;
      return false;
    }
    this.#stateServedAt.set(p, now);
    // Stryker disable next-line BlockStatement,ConditionalExpression,EqualityOperator,ArithmeticOperator: when (if ever) the record is pruned changes only its memory: the prune drops only entries at least an interval old, which never rate-limit again
    if (this.#stateServedAt.size > 4 * this.#peers.members.size + 64) {
      // Stryker disable next-line ConditionalExpression,EqualityOperator: which old entries go changes only memory: an entry exactly an interval old no longer rate-limits (the check above is `<`), nor any older one, so keeping them (`>`, or `false`: never pruned) refuses nothing more; this also hides the killed `true` variant
      for (const [q, t] of this.#stateServedAt) if (now - t >= this.#c.antiEntropyIntervalMs) this.#stateServedAt.delete(q);
    }
    const prepared = this.#transfers.prepare(this.#replica.changes, this.#out.seq, () => this.#split(this.#replica.snapshot().beyond(this.#genesis), "state"));
    this.#m.fullStatesSent++;
    const parts = prepared.fragments.length;
    prepared.fragments.forEach((value, part) => {
      this.#send(p, { kind: "state", inc: this.incarnation, upThrough: prepared.upThrough, transfer: prepared.transfer, part, parts, value });
    });
    return true;
  }

  #sendDeltas(to: PeerId, from: number, upTo: number): void {
    for (let seq = from; seq <= upTo; seq++) {
      const fragments = this.#out.get(seq)!;
      fragments.forEach((value, part) => {
        this.#send(to, { kind: "delta", inc: this.incarnation, seq, part, parts: fragments.length, value, ack: null });
      });
    }
  }

  /** Publishes the staged batch as one delta to every member; an ack owed to a member rides on it. */
  #flush(now: number): void {
    const staged = this.#out.takeStaged();
    if (staged === null) return;
    const fragments = this.#split(staged.beyond(this.#genesis), "delta");
    const seq = this.#out.append(fragments);
    this.#m.deltasPublished++;
    const parts = fragments.length;
    const shared = fragments.map((value, part): DeltaMessage => ({ kind: "delta", inc: this.incarnation, seq, part, parts, value, ack: null }));
    for (const p of this.#peers.sortedMembers()) {
      const k = this.#peers.get(p, now);
      if (k !== undefined) k.tailAt = now;
      const ack = this.#in.takeAck(p);
      shared.forEach((m, part) => {
        if (part === 0 && ack !== null) {
          this.#m.acksPiggybacked++;
          this.#send(p, { ...m, ack });
        } else this.#send(p, m);
      });
    }
    // No #soon: only tick() flushes, and it recomputes the wake (the tail included) when it ends.
    this.#tailAt = Math.min(this.#tailAt, now + this.#c.resendRetryMs);
  }

  #split(value: EntitlementLedger, what: "delta" | "state"): EntitlementLedger[] {
    const { fragments, oversize } = value.fragments(this.#valueBudget, this.#known);
    for (const g of oversize) {
      this.#m.valueTooLarge++;
      const key = `${what}:${g.group}`;
      if (this.#tooLargeSeen.has(key)) continue;
      if (this.#tooLargeSeen.size >= 4096) this.#tooLargeSeen.clear();
      this.#tooLargeSeen.add(key);
      this.#tooLarge.push({ kind: "value-too-large", what: `${what}: edge group ${g.group}`, bytes: g.bytes });
    }
    return fragments;
  }

  // ---- deadlines ------------------------------------------------------------------------------------

  #soon(t: number): void {
    this.#wake = Math.min(this.#wake, t);
  }

  #soonCursor(s: PeerId): void {
    const c = this.#in.snapshot(s);
    if (c === undefined) return;
    if (c.ackAt !== null) this.#soon(c.ackAt);
    if (c.graceAt !== null) this.#soon(c.graceAt);
    if (c.retryAt !== null) this.#soon(c.retryAt);
  }

  #computeWake(): number {
    let t = Math.min(this.#aeAt, this.#tailAt);
    const f = this.#out.flushAt;
    if (f !== null) t = Math.min(t, f);
    const d = this.#in.nextDeadline();
    if (d !== null) t = Math.min(t, d);
    for (const p of this.#handshaking) {
      const h = this.#peers.peek(p)?.handshake;
      if (h != null) t = Math.min(t, h.nextAt);
    }
    return t;
  }
}
