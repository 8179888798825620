import type { EntitlementLedger } from "@heddle/ledger";
import { EventChannel, type EventStream, type PeerId, type Seam, type Timers } from "@heddle/seam";
import type { RejectionCounter } from "../rejection.ts";
import type { ReplicationCore, ReplicationMetrics, ValueTooLarge } from "./core.ts";
import { MESSAGE_KINDS, type LedgerMessage } from "./messages.ts";
import { encodeLedgerFrame, readLedgerFrame } from "./wire.ts";

/** What the driver reports to its owner: effective deltas merged, anti-entropy ticks, values too large. */
export type ReplicationEvent =
  | { kind: "merged"; delta: EntitlementLedger }
  | { kind: "anti-entropy" }
  | ValueTooLarge;

/** Transport counters of the ledger channel, plus the core's. */
export interface ReplicationDriverMetrics extends ReplicationMetrics {
  framesIn: Record<LedgerMessage["kind"], number>;
  framesOut: Record<LedgerMessage["kind"], number>;
  bytesOut: number;
  /** Errors thrown by `events` subscribers: caught, so every event is still delivered and the timer still re-armed. */
  subscriberErrors: number;
}

/** Everything a {@link ReplicationDriver} runs on. */
export interface ReplicationDriverOptions {
  /** The ledger channel (tag 1 of the mux). */
  readonly channel: Seam;
  readonly core: ReplicationCore;
  /** FNV-1a-64 of the canonical genesis bytes (node.md §13.1): carried by every frame, checked on each. */
  readonly genesisDigest: string;
  readonly timers: Timers;
  readonly rejections: RejectionCounter;
  /** Ledger frames above this are refused before decoding (`oversize`). */
  readonly maxFrameBytes: number;
  /** Gets what an `events` subscriber throws (after it is counted); it never reaches the frame handler or timer. */
  readonly onSubscriberError?: (error: unknown) => void;
}

const zeroKinds = () => Object.fromEntries(MESSAGE_KINDS.map((k) => [k, 0])) as Record<LedgerMessage["kind"], number>;

/**
 * The imperative shell of {@link ReplicationCore}: decodes frames (rejecting and counting bad ones, never
 * throwing), feeds the core, encodes and sends what it returns (each message object encoded once however
 * many peers get it), keeps one timer armed at the core's next wake, and reports merged deltas and
 * anti-entropy ticks as events. All handlers are synchronous.
 */
export class ReplicationDriver {
  readonly #o: ReplicationDriverOptions;
  readonly #core: ReplicationCore;
  // A subscriber's throw must not cut a drain short: the merged deltas after it would go unreported (never
  // persisted) and the timer unarmed until the next frame or publish.
  readonly #events = new EventChannel<ReplicationEvent>((error) => {
    this.#subscriberErrors++;
    this.#o.onSubscriberError?.(error);
  });
  readonly #off: (() => void)[] = [];
  readonly #framesIn = zeroKinds();
  readonly #framesOut = zeroKinds();
  #bytesOut = 0;
  #subscriberErrors = 0;
  #timer: unknown = null;
  #timerAt = Infinity;
  #closed = false;

  constructor(o: ReplicationDriverOptions) {
    this.#o = o;
    this.#core = o.core;
    this.#off.push(o.channel.onFrame((from, frame) => this.#receive(from, frame)));
    this.#off.push(o.channel.peers.subscribe((p) => this.#membership(p)));
    this.#membership(o.channel.peers.get()); // its drain arms the first timer
  }

  /** Merged deltas, anti-entropy ticks and values too large, in the order they happened. */
  get events(): EventStream<ReplicationEvent> {
    return this.#events;
  }

  /** The core this driver runs (read-only use: diagnostics and tests). */
  get core(): ReplicationCore {
    return this.#core;
  }

  /** A committed local patch: staged in the core and sent when its batch closes (node.md §5.1 step 4). */
  publish(patch: EntitlementLedger): void {
    if (this.#closed) return;
    this.#core.publish(patch, this.#o.timers.now());
    this.#drain();
  }

  metrics(): ReplicationDriverMetrics {
    return { ...this.#core.metrics(), framesIn: { ...this.#framesIn }, framesOut: { ...this.#framesOut }, bytesOut: this.#bytesOut, subscriberErrors: this.#subscriberErrors };
  }

  /** Stops the timer and detaches from the channel. */
  close(): void {
    // Stryker disable next-line ConditionalExpression: a second close clears a handle already cleared and calls unsubscribers already called, and both are no-ops
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== null) this.#o.timers.clear(this.#timer);
    for (const f of this.#off) f();
  }

  #membership(peers: ReadonlySet<PeerId>): void {
    if (this.#closed) return;
    this.#core.membership(peers, this.#o.timers.now());
    this.#drain();
  }

  #receive(from: PeerId, frame: Uint8Array): void {
    // Stryker disable next-line ConditionalExpression: frames come only through the onFrame subscription, which close() removes (a seam calls only its current subscriber)
    if (this.#closed) return;
    if (frame.length > this.#o.maxFrameBytes) return this.#o.rejections.reject(from, "ledger", "oversize");
    const r = readLedgerFrame(frame, from, this.#o.genesisDigest);
    if (!r.ok) return this.#o.rejections.reject(from, "ledger", r.reason);
    if (this.#core.step(from, r.message, this.#o.timers.now()) === "bad-value") this.#o.rejections.reject(from, "ledger", "bad-value");
    else this.#framesIn[r.message.kind]++;
    this.#drain();
  }

  #drain(): void {
    const rd = this.#core.ready();
    let last: LedgerMessage | null = null;
    let bytes: Uint8Array | null = null;
    const self = this.#o.channel.self;
    for (const { to, message } of rd.sends) {
      // Broadcasts come out as runs of the same message object: encode once per run.
      if (message !== last) {
        last = message;
        bytes = encodeLedgerFrame(message, self, this.#o.genesisDigest);
      }
      if (this.#o.channel.send(to, bytes!) === "queued") {
        this.#framesOut[message.kind]++;
        this.#bytesOut += bytes!.length;
      }
    }
    try {
      for (const delta of rd.merged) this.#events.emit({ kind: "merged", delta });
      for (const e of rd.tooLarge) this.#events.emit(e);
      if (rd.antiEntropyTick) this.#events.emit({ kind: "anti-entropy" });
    } finally {
      // Subscriber errors are caught in #events; this is for anything else: the core's next wake is always armed.
      this.#arm();
    }
  }

  /** One timer, armed at the core's next wake. */
  #arm(): void {
    if (this.#closed) return;
    const at = this.#core.nextWake();
    // #timerAt is Infinity whenever no timer is armed (the core's wake is always finite), so this also arms a first timer.
    if (at >= this.#timerAt) return;
    const t = this.#o.timers;
    if (this.#timer !== null) t.clear(this.#timer);
    this.#timerAt = at;
    this.#timer = t.set(() => {
      this.#timer = null;
      this.#timerAt = Infinity;
      // Stryker disable next-line ConditionalExpression: close() clears the one pending timer and #arm sets none once closed, so this never runs after close
      if (this.#closed) return;
      this.#core.tick(t.now());
      this.#drain();
    }, Math.max(0, at - t.now()));
  }
}
