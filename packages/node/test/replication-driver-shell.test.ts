/**
 * The replication driver as the shell around the core (issue 19, driver.ts survivors): over a hand-driven
 * channel (a `Seam` whose sends are recorded and whose frames and membership the test delivers) and
 * virtual timers, what it sends to whom and how it counts it (node.md §14 frames out per kind, bytes out
 * only for frames the seam queued), how it refuses frames (§4.3: `oversize` before decoding, the codec's
 * reason, the core's `bad-value`), the membership views it hands the core (§5.4), the one timer it keeps
 * at the core's next wake, the events it reports, and what `close()` stops — also when the owner closes
 * it from inside one of its own notifications.
 */
import { EntitlementLedger, LedgerReplica, fnv1a64 } from "@heddle/ledger";
import { SeamSubscriberError, WatchCell, type PeerId, type Seam, type SendResult, type Timers } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { describe, expect, it } from "vitest";
import { RejectionCounter, type FrameRejected } from "../src/rejection.ts";
import { REPLICATION_DEFAULTS, type ReplicationConfig } from "../src/replication/config.ts";
import { ReplicationCore } from "../src/replication/core.ts";
import { ReplicationDriver, type ReplicationEvent } from "../src/replication/driver.ts";
import type { LedgerMessage } from "../src/replication/messages.ts";
import { encodeLedgerFrame, readLedgerFrame } from "../src/replication/wire.ts";
import { genesis } from "./support/replication-core.ts";

/** The replicas of every rig's genesis: A drives, B…D are peers. */
const REPLICAS = ["A", "B", "C", "D"];
const INT64_MAX = (1n << 63n) - 1n;

/** The ledger channel as the test drives it: sends recorded (answered by `result`), frames and views delivered by hand. */
class HandChannel implements Seam {
  readonly self: PeerId = "A";
  readonly maxFrameBytes = 1 << 20;
  readonly peers: WatchCell<ReadonlySet<PeerId>>;
  readonly sent: { to: PeerId; frame: Uint8Array }[] = [];
  result: (to: PeerId) => SendResult = () => "queued";
  #handler: ((from: PeerId, frame: Uint8Array) => void) | null = null;

  constructor(peers: PeerId[]) {
    this.peers = new WatchCell<ReadonlySet<PeerId>>(new Set(peers));
  }

  send(to: PeerId, frame: Uint8Array): SendResult {
    this.sent.push({ to, frame });
    return this.result(to);
  }

  broadcast(frame: Uint8Array): void {
    for (const p of [...this.peers.get()].sort()) this.send(p, frame);
  }

  onFrame(fn: (from: PeerId, frame: Uint8Array) => void): () => void {
    if (this.#handler !== null) throw new SeamSubscriberError("hand channel");
    this.#handler = fn;
    return () => {
      if (this.#handler === fn) this.#handler = null;
    };
  }

  onBackpressure(): () => void {
    return () => {};
  }

  async close(): Promise<void> {}

  /** A frame from `from`, if anyone listens. */
  deliver(from: PeerId, frame: Uint8Array): void {
    this.#handler?.(from, frame);
  }

  get attached(): boolean {
    return this.#handler !== null;
  }
}

/** A value with `issued` slots only: `[edge, [[replica, amount], …]]`. */
const issued = (rows: [string, [string, bigint][]][]) =>
  EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued: rows.map(([e, slots]) => [e, slots.map(([r, n]) => [r, String(n)])]) }));

const CONFIG: ReplicationConfig = { ...REPLICATION_DEFAULTS, antiEntropyIntervalMs: 1_000, resendRetryMs: 2_000, fullStateRetryMs: 3_000, ackDelayMs: 10, antiEntropy: false };

interface Rig {
  timers: VirtualTimers;
  channel: HandChannel;
  core: ReplicationCore;
  replica: LedgerReplica;
  driver: ReplicationDriver;
  gd: string;
  events: [number, ReplicationEvent][];
  rejected: FrameRejected[];
  rejections: RejectionCounter;
}

interface RigOptions {
  peers?: PeerId[];
  restarted?: boolean;
  config?: Partial<ReplicationConfig>;
  maxFrameBytes?: number;
  /** Virtual time at which the driver starts. */
  start?: number;
  replica?: LedgerReplica;
  /** Timers the driver uses (default: the rig's virtual timers). */
  wrap?: (t: VirtualTimers) => Timers;
  /** Runs before the driver subscribes to anything (an owner that subscribed first). */
  before?: (channel: HandChannel, driver: () => ReplicationDriver) => void;
  /** The driver's `onSubscriberError`. */
  onSubscriberError?: (error: unknown) => void;
}

function rig(o: RigOptions = {}): Rig {
  const timers = new VirtualTimers();
  if (o.start !== undefined) timers.advanceBy(o.start);
  const g = genesis(REPLICAS);
  const gd = fnv1a64(g.encode());
  const channel = new HandChannel(o.peers ?? []);
  const replica = o.replica ?? new LedgerReplica(g);
  const config = { ...CONFIG, ...o.config };
  const core = new ReplicationCore({ self: "A", incarnation: 1, replica, genesis: g, config, random: () => 0, now: timers.now(), restarted: o.restarted ?? false, valueBudget: 1 << 16 });
  const rejected: FrameRejected[] = [];
  const rejections = new RejectionCounter(timers, 60_000, (e) => rejected.push(e));
  let driver: ReplicationDriver | null = null;
  o.before?.(channel, () => driver!);
  driver = new ReplicationDriver({ channel, core, genesisDigest: gd, timers: o.wrap?.(timers) ?? timers, rejections, maxFrameBytes: o.maxFrameBytes ?? 4_096,
    ...(o.onSubscriberError !== undefined ? { onSubscriberError: o.onSubscriberError } : {}) });
  const events: [number, ReplicationEvent][] = [];
  driver.events.subscribe((e) => events.push([timers.now(), e]));
  return { timers, channel, core, replica, driver, gd, events, rejected, rejections };
}

/** What was sent, decoded as A's frames: `to:kind` per send. */
function sentKinds(r: Rig): string[] {
  return r.channel.sent.map(({ to, frame }) => {
    const m = readLedgerFrame(frame, "A", r.gd);
    if (!m.ok) throw new Error(`the driver sent a frame it cannot read: ${m.reason}`);
    return `${to}:${m.message.kind}`;
  });
}

function decoded(r: Rig, i: number): LedgerMessage {
  const m = readLedgerFrame(r.channel.sent[i]!.frame, "A", r.gd);
  if (!m.ok) throw new Error(m.reason);
  return m.message;
}

const zero = { delta: 0, ack: 0, resend: 0, digest: 0, "state-request": 0, state: 0 };
const frameFrom = (sender: PeerId, gd: string, m: LedgerMessage) => encodeLedgerFrame(m, sender, gd);
const delta = (seq: number, value: EntitlementLedger): LedgerMessage => ({ kind: "delta", inc: 1, seq, part: 0, parts: 1, value, ack: null });

describe("ReplicationDriver: what it sends, to whom, and how it counts it (node.md §5.1, §14)", () => {
  it("starts with every per-kind counter at zero and nothing sent", () => {
    const r = rig({ peers: ["B"] });
    expect(r.driver.metrics()).toMatchObject({ framesIn: zero, framesOut: zero, bytesOut: 0, deltasPublished: 0 });
    expect(Object.keys(r.driver.metrics().framesOut)).toEqual(["delta", "ack", "resend", "digest", "state-request", "state"]);
    expect(r.channel.sent).toEqual([]);
    expect(r.driver.core).toBe(r.core);
  });

  it("the members at construction go to the core at once: a restarted replica's handshake digest reaches each, in id order", () => {
    const r = rig({ peers: ["C", "B"], restarted: true });
    expect(sentKinds(r)).toEqual(["B:digest", "C:digest"]);
    expect(decoded(r, 0)).toEqual({ kind: "digest", inc: 1, digest: r.replica.digest(), upThrough: 0 });
    const bytes = r.channel.sent[0]!.frame.length + r.channel.sent[1]!.frame.length;
    expect(r.driver.metrics()).toMatchObject({ framesOut: { ...zero, digest: 2 }, bytesOut: bytes, framesIn: zero, handshakes: 2 });
  });

  it("a membership change reaches the core: a member met later gets its handshake; one that left gets nothing more", () => {
    const r = rig({ peers: ["B"], restarted: true });
    r.channel.sent.length = 0;
    r.channel.peers.set(new Set(["B", "D"]));
    expect(sentKinds(r)).toEqual(["D:digest"]);
    expect(r.core.knownPeers()).toEqual(["B", "D"]);
    r.channel.peers.set(new Set(["D"]));
    expect(r.core.peer("B")!.absentSince).toBe(0);
    expect(r.core.peer("D")!.absentSince).toBeNull();
  });

  it("a published delta leaves at its batch's close, to every member in id order, encoded once (one bytes object for all)", () => {
    const r = rig({ peers: ["D", "B", "C"] });
    const patch = issued([["e1", [["A", 7n]]]]);
    r.driver.publish(patch);
    expect(r.channel.sent).toEqual([]); // staged: the batch closes on the timer, in the same virtual instant
    r.timers.advanceBy(0);
    expect(sentKinds(r)).toEqual(["B:delta", "C:delta", "D:delta"]);
    const frame = r.channel.sent[0]!.frame;
    expect(r.channel.sent[1]!.frame).toBe(frame);
    expect(r.channel.sent[2]!.frame).toBe(frame);
    const m = decoded(r, 0);
    expect(m).toMatchObject({ kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, ack: null });
    expect(m.kind === "delta" && m.value.encode()).toBe(patch.encode());
    expect(r.driver.metrics()).toMatchObject({ framesOut: { ...zero, delta: 3 }, bytesOut: 3 * frame.length, deltasPublished: 1 });
  });

  it("a frame the seam does not queue is not counted as sent (frames out, bytes out)", () => {
    const r = rig({ peers: ["B", "C", "D"] });
    r.channel.result = (to) => (to === "C" ? "backpressure" : to === "D" ? "not-connected" : "queued");
    r.driver.publish(issued([["e1", [["A", 7n]]]]));
    r.timers.advanceBy(0);
    expect(sentKinds(r)).toEqual(["B:delta", "C:delta", "D:delta"]);
    expect(r.driver.metrics()).toMatchObject({ framesOut: { ...zero, delta: 1 }, bytesOut: r.channel.sent[0]!.frame.length });
  });
});

describe("ReplicationDriver: inbound frames (node.md §4.3, §5.3)", () => {
  it("a frame above maxFrameBytes is refused as oversize before decoding; one of exactly maxFrameBytes is decoded", () => {
    const r = rig({ peers: ["B"], maxFrameBytes: 4_096 });
    r.channel.deliver("B", new Uint8Array(4_097));
    r.channel.deliver("B", new Uint8Array(4_096)); // version byte 0: decoded, and refused for its version
    expect(r.rejected).toEqual([
      { kind: "frame-rejected", peer: "B", channel: "ledger", reason: "oversize" },
      { kind: "frame-rejected", peer: "B", channel: "ledger", reason: "bad-version" },
    ]);
    expect(r.driver.metrics().framesIn).toEqual(zero);
  });

  it("a frame the codec refuses is counted with the codec's reason and changes nothing", () => {
    const r = rig({ peers: ["B"] });
    const m = delta(1, issued([["e1", [["B", 3n]]]]));
    r.channel.deliver("B", frameFrom("C", r.gd, m)); // C's frame replayed by B
    r.channel.deliver("B", frameFrom("B", "fedcba9876543210", m));
    expect(r.rejected.map((e) => e.reason)).toEqual(["not-author", "genesis-mismatch"]);
    expect(r.rejections.counts()).toMatchObject({ "not-author": 1, "genesis-mismatch": 1 });
    expect(r.driver.metrics().framesIn).toEqual(zero);
    expect(r.core.cursor("B")).toBeUndefined();
    r.timers.advanceBy(100);
    expect(r.channel.sent).toEqual([]);
    expect(r.events).toEqual([]);
  });

  it("a good frame is counted by kind, stepped into the core, reported as merged, and acknowledged after ackDelayMs", () => {
    const r = rig({ peers: ["B"], start: 50 });
    const value = issued([["e1", [["B", 3n]]]]);
    r.channel.deliver("B", frameFrom("B", r.gd, delta(1, value)));
    expect(r.driver.metrics().framesIn).toEqual({ ...zero, delta: 1 });
    expect(r.rejected).toEqual([]);
    expect(r.events.map(([at, e]) => [at, e.kind])).toEqual([[50, "merged"]]);
    const [, merged] = r.events[0]!;
    expect(merged.kind === "merged" && merged.delta.encode()).toBe(value.encode());
    expect(r.core.cursor("B")).toMatchObject({ inc: 1, contig: 1 });
    // the same frame again: counted, joined to nothing, no second merged event
    r.channel.deliver("B", frameFrom("B", r.gd, delta(1, value)));
    expect(r.driver.metrics().framesIn).toEqual({ ...zero, delta: 2 });
    expect(r.events.length).toBe(1);
    r.timers.advanceBy(9);
    expect(r.channel.sent).toEqual([]);
    r.timers.advanceBy(1);
    expect(sentKinds(r)).toEqual(["B:ack"]);
    expect(decoded(r, 0)).toEqual({ kind: "ack", inc: 1, seq: 1, based: false });
    expect(r.driver.metrics().framesOut).toEqual({ ...zero, ack: 1 });
  });

  it("a value the core refuses (its join leaves int64) is rejected as bad-value and not counted as a frame in", () => {
    const g = genesis(REPLICAS);
    const replica = new LedgerReplica(g.join(issued([["e1", [["B", 5n]]]])));
    const r = rig({ peers: ["B"], replica });
    expect(sentKinds(r)).toEqual(["B:digest"]); // a state beyond genesis announces itself
    r.channel.sent.length = 0;
    r.channel.deliver("B", frameFrom("B", r.gd, delta(1, issued([["e1", [["M", INT64_MAX]]]]))));
    expect(r.rejected).toEqual([{ kind: "frame-rejected", peer: "B", channel: "ledger", reason: "bad-value" }]);
    expect(r.driver.metrics()).toMatchObject({ framesIn: zero, valueOverflows: 1 });
    expect(r.events).toEqual([]);
    r.timers.advanceBy(100);
    expect(r.channel.sent).toEqual([]);
  });
});

describe("ReplicationDriver: one timer, at the core's next wake (node.md §2)", () => {
  /** The rig's timers, with every `set` delay and `clear` recorded. */
  function counting(log: { sets: number[]; clears: number }): (t: VirtualTimers) => Timers {
    return (t) => ({
      now: () => t.now(),
      set: (fn, ms) => {
        log.sets.push(ms);
        return t.set(fn, ms);
      },
      clear: (h) => {
        log.clears++;
        t.clear(h);
      },
    });
  }

  it("arms at construction for the first anti-entropy period, measured from the driver's start, and re-arms after each", () => {
    const log = { sets: [] as number[], clears: 0 };
    const r = rig({ peers: ["B", "C"], start: 250, config: { antiEntropy: true }, wrap: counting(log) });
    expect(log.sets).toEqual([1_000]);
    expect(r.timers.pending()).toBe(1);
    r.timers.advanceBy(999);
    expect(r.events).toEqual([]);
    r.timers.advanceBy(1);
    expect(r.events).toEqual([[1_250, { kind: "anti-entropy" }]]);
    expect(sentKinds(r)).toEqual(["B:digest"]); // random() = 0: the first known peer by id
    r.timers.advanceBy(1_000);
    expect(r.events.map(([at, e]) => [at, e.kind])).toEqual([[1_250, "anti-entropy"], [2_250, "anti-entropy"]]);
    expect(r.timers.pending()).toBe(1);
  });

  it("a step that leaves the wake where it was arms nothing; one that moves it earlier replaces the timer", () => {
    const log = { sets: [] as number[], clears: 0 };
    const r = rig({ peers: ["B"], start: 100, wrap: counting(log) });
    expect(log.sets).toEqual([1_000]);
    // an ack of a seq we never published: nothing due sooner
    r.channel.deliver("B", frameFrom("B", r.gd, { kind: "ack", inc: 1, seq: 0, based: false }));
    expect(r.driver.metrics().framesIn.ack).toBe(1);
    expect(r.core.nextWake()).toBe(1_100);
    expect(log).toEqual({ sets: [1_000], clears: 0 });
    // a delta: its ack is due in ackDelayMs
    r.timers.advanceBy(40);
    r.channel.deliver("B", frameFrom("B", r.gd, delta(1, issued([["e1", [["B", 3n]]]]))));
    expect(r.core.nextWake()).toBe(150);
    expect(log).toEqual({ sets: [1_000, 10], clears: 1 });
    expect(r.timers.pending()).toBe(1);
    // a second delta before the ack is due: the wake stays, the timer too
    r.timers.advanceBy(5);
    r.channel.deliver("B", frameFrom("B", r.gd, delta(2, issued([["e1", [["B", 4n]]]]))));
    expect(log).toEqual({ sets: [1_000, 10], clears: 1 });
    r.timers.advanceBy(5);
    expect(sentKinds(r)).toEqual(["B:ack"]);
    expect(decoded(r, 0)).toMatchObject({ kind: "ack", seq: 2 });
    expect(r.timers.pending()).toBe(1);
  });

  it("a publish moves the wake to now: the batch leaves in the same instant, not at the next anti-entropy tick", () => {
    const log = { sets: [] as number[], clears: 0 };
    const r = rig({ peers: ["B"], start: 300, wrap: counting(log) });
    r.timers.advanceBy(200);
    r.driver.publish(issued([["e1", [["A", 1n]]]]));
    expect(log.sets).toEqual([1_000, 0]);
    expect(log.clears).toBe(1);
    r.timers.advanceBy(0);
    expect(sentKinds(r)).toEqual(["B:delta"]);
    expect(r.timers.pending()).toBe(1);
  });
});

describe("ReplicationDriver: close (node.md §1)", () => {
  it("stops the timer, detaches from the channel and the membership view, and ignores later publishes", () => {
    const r = rig({ peers: ["B"], restarted: true, config: { antiEntropy: true } });
    r.channel.sent.length = 0;
    r.driver.close();
    expect(r.timers.pending()).toBe(0);
    expect(r.channel.attached).toBe(false);
    const wake = r.core.nextWake();
    r.driver.publish(issued([["e1", [["A", 1n]]]]));
    expect(r.core.nextWake()).toBe(wake); // the patch never reached the core: no batch opened
    r.channel.peers.set(new Set(["B", "C"]));
    r.timers.advanceBy(10_000);
    expect(r.channel.sent).toEqual([]);
    expect(r.events).toEqual([]);
    expect(r.core.knownPeers()).toEqual(["B"]);
    expect(r.core.seq).toBe(0);
    expect(r.driver.metrics().deltasPublished).toBe(0);
    r.driver.close(); // twice: nothing more to stop
    expect(r.timers.pending()).toBe(0);
  });

  it("closed by an owner's membership listener that runs first, it hands that view to nobody", () => {
    const r = rig({
      peers: ["B"],
      restarted: true,
      before: (channel, driver) => {
        channel.peers.subscribe((p) => {
          if (p.has("D")) driver().close();
        });
      },
    });
    r.channel.sent.length = 0;
    r.channel.peers.set(new Set(["B", "D"]));
    expect(r.channel.sent).toEqual([]);
    expect(r.core.knownPeers()).toEqual(["B"]);
    expect(r.timers.pending()).toBe(0);
  });

  it("closed by its own event's listener in the middle of a tick, it clears only handles its timers gave it and leaves none armed", () => {
    const given = new Set<unknown>();
    const foreign: unknown[] = [];
    const strict = (t: VirtualTimers): Timers => ({
      now: () => t.now(),
      set: (fn, ms) => {
        const h = t.set(fn, ms);
        given.add(h);
        return h;
      },
      clear: (h) => {
        if (!given.has(h)) foreign.push(h);
        t.clear(h);
      },
    });
    const r = rig({ peers: ["B"], wrap: strict });
    r.driver.events.subscribe((e) => {
      if (e.kind === "anti-entropy") r.driver.close();
    });
    r.timers.advanceBy(1_000);
    expect(r.events.map(([at, e]) => [at, e.kind])).toEqual([[1_000, "anti-entropy"]]);
    expect(foreign).toEqual([]);
    expect(r.timers.pending()).toBe(0);
    r.timers.advanceBy(5_000);
    expect(r.events.length).toBe(1);
  });

  it("closed by its own event's listener in the middle of a frame, it leaves no timer armed and sends no ack", () => {
    const r = rig({ peers: ["B"] });
    r.driver.events.subscribe((e) => {
      if (e.kind === "merged") r.driver.close();
    });
    r.channel.deliver("B", frameFrom("B", r.gd, delta(1, issued([["e1", [["B", 3n]]]]))));
    expect(r.events.map(([, e]) => e.kind)).toEqual(["merged"]);
    expect(r.timers.pending()).toBe(0);
    r.timers.advanceBy(5_000);
    expect(r.channel.sent).toEqual([]);
  });
});

describe("ReplicationDriver: an events subscriber that throws (node.md §4.3: nothing is thrown through the node)", () => {
  it("is counted and handed to onSubscriberError; the anti-entropy timer still re-arms after every tick", () => {
    const handed: unknown[] = [];
    const r = rig({ peers: ["B"], config: { antiEntropy: true }, onSubscriberError: (e) => handed.push(e) });
    const bug = new Error("a bug in an events hook");
    r.driver.events.subscribe((e) => {
      if (e.kind === "anti-entropy") throw bug;
    });
    // before: the throw left the tick's #drain before #arm() — no timer, no anti-entropy ever again
    expect(() => r.timers.advanceBy(1_000)).not.toThrow();
    expect(r.timers.pending()).toBe(1);
    r.timers.advanceBy(2_000);
    expect(r.events.map(([at, e]) => [at, e.kind])).toEqual([[1_000, "anti-entropy"], [2_000, "anti-entropy"], [3_000, "anti-entropy"]]);
    expect(handed).toEqual([bug, bug, bug]);
    expect(r.driver.metrics().subscriberErrors).toBe(3);
  });

  it("thrown on a merged delta, it does not reach the frame handler, and the delta's ack still leaves after ackDelayMs", () => {
    const r = rig({ peers: ["B"] });
    const later: string[] = [];
    r.driver.events.subscribe(() => {
      throw new Error("a bug in a merged hook");
    });
    r.driver.events.subscribe((e) => later.push(e.kind)); // subscribed after the thrower: still told
    expect(() => r.channel.deliver("B", frameFrom("B", r.gd, delta(1, issued([["e1", [["B", 3n]]]]))))).not.toThrow();
    expect(later).toEqual(["merged"]);
    expect(r.driver.metrics().subscriberErrors).toBe(1);
    r.timers.advanceBy(10);
    expect(sentKinds(r)).toEqual(["B:ack"]);
  });
});
