/**
 * The replication core's inputs, clock and accessors driven by hand (issue 19, survivors of core.ts lines
 * 1–323): each test is a short schedule of `publish` / `membership` / `step` / `tick` calls on one
 * `ReplicationCore`, the test being the network and the clock, and asserts exact sends, wakes, counters and
 * accessor views. What it pins: the counters `metrics()` reports (node.md §14), the wake a publish, a meeting
 * or a re-entry arms, re-entry of a known peer (§5.4 ⟨1.1⟩: the missed deltas if buffered, else a granted
 * digest, nothing when it is not behind), handshake retries (every `fullStateRetryMs`, at most
 * `fullStateRetryLimit` times, only to a present peer), the unacked tail re-offer (§5.4) and the buffer GC
 * it does (§5.5), the periodic digest's uniform pick over known peers sorted by id (§5.4), eviction (§5.5),
 * and `ready()` / `cursor()` / `knownPeers()` handing out values the core never changes afterwards.
 * Every fixture is built inside its test.
 */
import { EntitlementLedger, LedgerReplica } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import type { ReplicationConfig } from "../src/replication/config.ts";
import { ReplicationCore, type Outgoing, type ReplicationCoreOptions } from "../src/replication/core.ts";
import { genesis, handConfig, handCore } from "./support/replication-core.ts";

const INT64_MAX = (1n << 63n) - 1n;


/** A value with `issued` slots only: `[edge, [[replica, amount], …]]`. */
const issued = (rows: [string, [string, bigint][]][]) =>
  EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued: rows.map(([e, slots]) => [e, slots.map(([r, n]) => [r, String(n)])]) }));

/** The n-th local patch of A: its `issued` slot on e1 at n (each one a new absolute value). */
const patch = (n: number) => issued([["e1", [["A", BigInt(n)]]]]);

const config = (over: Partial<ReplicationConfig> = {}): ReplicationConfig =>
  handConfig({ antiEntropyIntervalMs: 10_000, fullStateRetryLimit: 2, peerEvictionMs: 50_000, ackDelayMs: 10, reorderGraceMs: 5, ...over });


const core = (over: Partial<ReplicationCoreOptions> = {}) => handCore(config(), over);

/** Each send as `to:kind`, a delta as `to:delta#seq.part/parts`. */
const brief = (sends: readonly Outgoing[]) =>
  sends.map(({ to, message: m }) => (m.kind === "delta" ? `${to}:delta#${m.seq}.${m.part}/${m.parts}` : `${to}:${m.kind}`));

/** Publishes patches `from … to` one delta each (batch window 0), at `now`. */
function publishEach(c: ReplicationCore, from: number, to: number, now: number): void {
  for (let n = from; n <= to; n++) {
    c.publish(patch(n), now);
    c.tick(now);
  }
}

const ZERO_METRICS = {
  deltasPublished: 0, resendsRequested: 0, resendsServed: 0, tailsReoffered: 0, fullStatesSent: 0, fullStatesReceived: 0, digestsSent: 0,
  digestMatches: 0, digestMismatches: 0, handshakes: 0, unsolicitedRequests: 0, rateLimitedRequests: 0, acksSent: 0, acksPiggybacked: 0,
  pendingDeltas: 0, valueTooLarge: 0, valueOverflows: 0, resendsRateLimited: 0,
};

describe("metrics() (node.md §14)", () => {
  it("a fresh core reports every counter, each at 0", () => {
    expect(core().core.metrics()).toEqual(ZERO_METRICS);
  });

  it("counts deltas published and the deltas buffered for a peer yet to acknowledge them; a returned snapshot does not change afterwards", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    const before = c.metrics();
    publishEach(c, 1, 3, 0);
    expect(before).toEqual(ZERO_METRICS);
    expect(c.metrics()).toEqual({ ...ZERO_METRICS, deltasPublished: 3, pendingDeltas: 3 });
    c.step("B", { kind: "ack", inc: 1, seq: 2, based: true }, 1);
    c.tick(10_000);
    expect(c.metrics()).toEqual({ ...ZERO_METRICS, deltasPublished: 3, pendingDeltas: 1, tailsReoffered: 1 });
  });

  it("counts the acks sent on their own and the resends requested when their deadlines come", () => {
    const { core: c } = core();
    const d = (seq: number) => ({ kind: "delta", inc: 4, seq, part: 0, parts: 1, value: issued([["e1", [["B", BigInt(seq)]]]]), ack: null }) as const;
    c.step("B", d(1), 0);
    c.step("B", d(3), 1); // 2 is missing: asked for after the reorder grace
    expect(c.nextWake()).toBe(6);
    c.tick(6);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "resend", inc: 4, from: 2, to: 2 } }]);
    expect(c.metrics()).toMatchObject({ acksSent: 0, resendsRequested: 1 });
    c.tick(10);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "ack", inc: 4, seq: 1, based: false } }]);
    expect(c.metrics()).toMatchObject({ acksSent: 1, resendsRequested: 1 });
  });
});

describe("publish arms the wake at the batch's close (node.md §5.1 step 4)", () => {
  it("the first patch of a batch wakes the core when the batch closes; later ones do not move it", () => {
    const { core: c } = core({ config: config({ deltaBatchMs: 20 }) });
    c.publish(patch(1), 10);
    expect(c.nextWake()).toBe(30);
    c.publish(patch(2), 25);
    expect(c.nextWake()).toBe(30);
    c.tick(29);
    expect(c.seq).toBe(0);
    c.tick(30);
    expect(c.seq).toBe(1);
  });

  it("with no batch window the patch is due at once, and leaves at that tick", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    c.publish(patch(1), 7);
    expect(c.nextWake()).toBe(7);
    c.tick(7);
    expect(brief(c.ready().sends)).toEqual(["B:delta#1.0/1"]);
  });
});

describe("membership: the tail re-offer clock of peers met or re-entering (node.md §5.4)", () => {
  /**
   * A core with a published seq 1 still buffered (known peer C, absent, acknowledged nothing: it pins the
   * buffer) and no pending tail deadline (the tail scan found no member).
   */
  function published(): ReplicationCore {
    const { core: c } = core();
    c.membership(new Set(["C"]), 0);
    publishEach(c, 1, 1, 0);
    c.membership(new Set(), 0);
    expect(c.nextWake()).toBe(200);
    c.tick(200);
    expect(c.nextWake()).toBe(10_000);
    expect(c.metrics().pendingDeltas).toBe(1);
    c.ready();
    return c;
  }

  it("a peer met behind our stream is due a tail re-offer resendRetryMs after the meeting", () => {
    const c = published();
    c.membership(new Set(["B"]), 300);
    expect(c.nextWake()).toBe(500);
    expect(c.ready().sends).toEqual([]);
    c.tick(499);
    expect(c.ready().sends).toEqual([]);
    c.tick(500);
    expect(brief(c.ready().sends)).toEqual(["B:delta#1.0/1"]);
    expect(c.metrics().tailsReoffered).toBe(1);
  });

  it("with no peer known the buffer is freed; a peer met later is re-offered nothing, its clock still runs", () => {
    const { core: c } = core();
    publishEach(c, 1, 1, 0);
    c.tick(200);
    expect(c.metrics().pendingDeltas).toBe(0);
    c.ready();
    c.membership(new Set(["B"]), 300);
    expect(c.nextWake()).toBe(500);
    c.tick(500);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics().tailsReoffered).toBe(0);
    expect(c.peer("B")).toMatchObject({ acked: 0, tailAt: 500 });
    expect(c.nextWake()).toBe(700);
  });

  it("meeting a peer before anything was published arms nothing", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 300);
    expect(c.nextWake()).toBe(10_000);
    c.tick(300);
    expect(c.nextWake()).toBe(10_000);
  });

  it("a peer leaving arms nothing", () => {
    const c = published();
    const b = new Set(["B"]);
    c.membership(b, 300);
    c.step("B", { kind: "ack", inc: 1, seq: 1, based: true }, 301);
    c.tick(500);
    expect(c.ready().sends).toEqual([]);
    expect(c.nextWake()).toBe(10_000);
    c.membership(new Set(), 600);
    expect(c.nextWake()).toBe(10_000);
  });

  it("a known peer re-entering behind our stream (no peer met) is due a tail re-offer too", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    publishEach(c, 1, 1, 0);
    c.step("B", { kind: "ack", inc: 1, seq: 1, based: true }, 1);
    c.tick(200);
    publishEach(c, 2, 2, 300);
    c.membership(new Set(), 301);
    c.tick(500); // B is absent: no re-offer, and no tail deadline left
    expect(c.nextWake()).toBe(10_000);
    c.ready();
    c.membership(new Set(["B"]), 1_000);
    expect(brief(c.ready().sends)).toEqual(["B:delta#2.0/1"]);
    expect(c.peer("B")).toMatchObject({ acked: 1, tailAt: 1_000 });
    expect(c.nextWake()).toBe(1_200);
    c.tick(1_200);
    expect(brief(c.ready().sends)).toEqual(["B:delta#2.0/1"]);
    expect(c.metrics().tailsReoffered).toBe(1);
  });
});

describe("re-entry of a known peer (node.md §5.4 ⟨1.1⟩): never first contact", () => {
  /** A core that published seqs 1 … n to member B, B acknowledging `acked` of them, then B left. */
  function left(n: number, acked: number, over: Partial<ReplicationConfig> = {}): ReplicationCore {
    const { core: c } = core({ config: config(over) });
    c.membership(new Set(["B"]), 0);
    publishEach(c, 1, n, 0);
    if (acked > 0) c.step("B", { kind: "ack", inc: 1, seq: acked, based: true }, 1);
    c.membership(new Set(), 2);
    c.ready();
    return c;
  }

  it("a peer that acknowledged everything is sent nothing", () => {
    const c = left(3, 3);
    c.membership(new Set(["B"]), 10);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics()).toMatchObject({ handshakes: 0, digestsSent: 0 });
    expect(c.peer("B")).toMatchObject({ acked: 3, based: true, handshake: null, tailAt: 10 });
  });

  it("a peer that re-enters before anything was published is sent nothing", () => {
    const { core: c } = core({ restarted: true });
    c.membership(new Set(["B"]), 0);
    c.step("B", { kind: "digest", inc: 1, digest: "0000000000000000", upThrough: 0 }, 1);
    c.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 1);
    c.membership(new Set(), 2);
    c.ready();
    const handshakes = c.metrics().handshakes;
    c.membership(new Set(["B"]), 10);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics().handshakes).toBe(handshakes);
  });

  it("a peer behind by exactly maxResendSpan buffered deltas gets those deltas, in order, and no digest", () => {
    const c = left(3, 1, { maxResendSpan: 2 });
    c.membership(new Set(["B"]), 10);
    expect(brief(c.ready().sends)).toEqual(["B:delta#2.0/1", "B:delta#3.0/1"]);
    expect(c.metrics()).toMatchObject({ handshakes: 0, digestsSent: 0 });
  });

  it("a peer behind by more than maxResendSpan gets a granted digest (a handshake), not the deltas", () => {
    const c = left(4, 1, { maxResendSpan: 2 });
    c.membership(new Set(["B"]), 10);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "digest", inc: 1, digest: expect.any(String), upThrough: 4 } }]);
    expect(c.metrics()).toMatchObject({ handshakes: 1, digestsSent: 1 });
    expect(c.peer("B")).toMatchObject({ acked: 1, based: false, grant: true, handshake: { nextAt: 310, retries: 0 }, tailAt: 10 });
  });

  it("a peer that acknowledged nothing, all of it buffered, gets every delta from seq 1", () => {
    const c = left(2, 0);
    c.membership(new Set(["B"]), 10);
    expect(brief(c.ready().sends)).toEqual(["B:delta#1.0/1", "B:delta#2.0/1"]);
  });

  it("a peer whose missed deltas left the buffer gets a granted digest", () => {
    const c = left(3, 0, { maxPendingDeltas: 2 });
    expect(c.metrics().pendingDeltas).toBe(2);
    c.membership(new Set(["B"]), 10);
    expect(brief(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.metrics().handshakes).toBe(1);
  });
});

describe("a first boot at genesis keeps no record of the peers it meets (node.md §5.4 ⟨1.1⟩)", () => {
  it("before anything is published, a peer met shows the untouched default: based, nothing acked, no grant, clock at 0", () => {
    const { core: c } = core();
    c.membership(new Set(["B", "C"]), 40);
    expect(c.ready().sends).toEqual([]);
    expect(c.peer("B")).toEqual({ acked: 0, based: true, grant: false, absentSince: null, handshake: null, tailAt: 0 });
    expect(c.peer("C")).toEqual({ acked: 0, based: true, grant: false, absentSince: null, handshake: null, tailAt: 0 });
    expect(c.peer("D")).toBeUndefined();
  });
});

describe("handshake retries (node.md §5.4: every fullStateRetryMs, at most fullStateRetryLimit times)", () => {
  /** A restarted core (it announces itself) that met B at 0: the handshake digest went out. */
  function met(over: Partial<ReplicationConfig> = {}): ReplicationCore {
    const { core: c } = core({ restarted: true, config: config(over) });
    c.membership(new Set(["B"]), 0);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "digest", inc: 1, digest: expect.any(String), upThrough: 0 } }]);
    expect(c.peer("B")).toMatchObject({ based: false, grant: true, handshake: { nextAt: 300, retries: 0 } });
    expect(c.metrics()).toMatchObject({ handshakes: 1, digestsSent: 1 });
    return c;
  }

  it("the digest is repeated exactly at each retry time, fullStateRetryLimit times, then the handshake ends", () => {
    const c = met();
    expect(c.nextWake()).toBe(300);
    c.tick(299);
    expect(c.ready().sends).toEqual([]);
    c.tick(300);
    expect(brief(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.peer("B")!.handshake).toEqual({ nextAt: 600, retries: 1 });
    expect(c.nextWake()).toBe(600);
    c.tick(599);
    expect(c.ready().sends).toEqual([]);
    c.tick(600);
    expect(brief(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.peer("B")!.handshake).toEqual({ nextAt: 900, retries: 2 });
    c.tick(900);
    expect(c.ready().sends).toEqual([]);
    expect(c.peer("B")!.handshake).toBeNull();
    expect(c.nextWake()).toBe(10_000);
    c.tick(1_200);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics()).toMatchObject({ handshakes: 1, digestsSent: 3 });
  });

  it("a limit of 0 repeats nothing", () => {
    const c = met({ fullStateRetryLimit: 0 });
    c.tick(300);
    expect(c.ready().sends).toEqual([]);
    expect(c.peer("B")!.handshake).toBeNull();
    expect(c.metrics().digestsSent).toBe(1);
  });

  it("an ack confirming our base ends the handshake", () => {
    const c = met();
    c.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 100);
    expect(c.peer("B")).toMatchObject({ based: true, handshake: null });
    c.tick(300);
    expect(c.nextWake()).toBe(10_000);
    c.tick(600);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics().digestsSent).toBe(1);
  });

  it("a retry falling due while the peer is absent is spent without a send; back in time, it gets the next one", () => {
    const c = met();
    c.membership(new Set(), 100);
    c.tick(300);
    expect(c.ready().sends).toEqual([]);
    expect(c.peer("B")!.handshake).toEqual({ nextAt: 600, retries: 1 });
    c.membership(new Set(["B"]), 400); // re-entry: nothing published, nothing to send
    expect(c.ready().sends).toEqual([]);
    c.tick(600);
    expect(brief(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.metrics().digestsSent).toBe(2);
  });

  it("a peer evicted during its handshake is dropped from the retries; met again, it gets a new handshake", () => {
    const c = met({ fullStateRetryLimit: 100, peerEvictionMs: 1_000, antiEntropyIntervalMs: 2_000 });
    c.membership(new Set(), 100);
    c.tick(2_000); // the retry due since 300 is spent (absent: no send, next at 2 300), then B is evicted
    expect(c.knownPeers()).toEqual([]);
    expect(c.peer("B")).toBeUndefined();
    expect(c.nextWake()).toBe(4_000);
    c.tick(2_300);
    expect(c.ready().sends).toEqual([]);
    expect(c.nextWake()).toBe(4_000);
    c.membership(new Set(["B"]), 2_500);
    expect(brief(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.peer("B")).toMatchObject({ handshake: { nextAt: 2_800, retries: 0 } });
    expect(c.metrics().handshakes).toBe(2);
  });
});

describe("the periodic digest (node.md §5.4): one known peer, picked uniformly over the known peers sorted by id", () => {
  function picks(random: number, members: string[]): string[] {
    const { core: c } = core({ random: () => random, config: config({ antiEntropy: true, antiEntropyIntervalMs: 100 }) });
    c.membership(new Set(members), 0);
    c.ready();
    c.tick(100);
    const r = c.ready();
    expect(r.antiEntropyTick).toBe(true);
    return brief(r.sends);
  }

  it("random() in [0, 1/n) picks the first by id, in [k/n, (k+1)/n) the k-th, whatever the membership order", () => {
    expect(picks(0, ["D", "B", "C"])).toEqual(["B:digest"]);
    expect(picks(0.33, ["D", "B", "C"])).toEqual(["B:digest"]);
    expect(picks(1 / 3, ["D", "B", "C"])).toEqual(["C:digest"]);
    expect(picks(0.5, ["D", "B", "C"])).toEqual(["C:digest"]);
    expect(picks(0.67, ["D", "B", "C"])).toEqual(["D:digest"]);
    expect(picks(0.999, ["D", "B", "C"])).toEqual(["D:digest"]);
  });

  it("a generator returning 1 still picks the last peer", () => {
    expect(picks(1, ["D", "B", "C"])).toEqual(["D:digest"]);
  });

  it("absent known peers are candidates too; with none known nothing is sent", () => {
    const { core: c } = core({ random: () => 0, config: config({ antiEntropy: true, antiEntropyIntervalMs: 100 }) });
    c.tick(100);
    expect(c.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: true });
    expect(c.metrics().digestsSent).toBe(0);
    c.membership(new Set(["B"]), 150);
    c.membership(new Set(), 160);
    c.tick(200);
    const r = c.ready();
    expect(r.sends).toEqual([{ to: "B", message: { kind: "digest", inc: 1, digest: expect.any(String), upThrough: 0 } }]);
    expect(c.peer("B")).toMatchObject({ grant: true });
    expect(c.metrics().digestsSent).toBe(1);
  });

  it("the digest goes every antiEntropyIntervalMs after the last tick, and only with antiEntropy on", () => {
    const on = core({ config: config({ antiEntropy: true, antiEntropyIntervalMs: 100 }) }).core;
    const off = core({ config: config({ antiEntropy: false, antiEntropyIntervalMs: 100 }) }).core;
    for (const c of [on, off]) {
      c.membership(new Set(["B"]), 0);
      c.ready();
    }
    on.tick(130); // a late tick: the next is due an interval after it
    expect(brief(on.ready().sends)).toEqual(["B:digest"]);
    expect(on.nextWake()).toBe(230);
    on.tick(229);
    expect(on.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: false });
    on.tick(230);
    expect(brief(on.ready().sends)).toEqual(["B:digest"]);
    off.tick(100);
    expect(off.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: true });
  });
});

describe("eviction and buffer GC at the anti-entropy tick (node.md §5.5)", () => {
  it("a peer absent for peerEvictionMs is forgotten at the tick and stops pinning the buffer", () => {
    const { core: c } = core({ config: config({ antiEntropyIntervalMs: 1_000, peerEvictionMs: 1_500 }) });
    c.membership(new Set(["B", "C"]), 0);
    publishEach(c, 1, 2, 0);
    c.step("C", { kind: "ack", inc: 1, seq: 2, based: true }, 1);
    c.membership(new Set(["C"]), 100);
    c.tick(1_000);
    expect(c.knownPeers()).toEqual(["B", "C"]);
    expect(c.metrics().pendingDeltas).toBe(2);
    c.tick(2_000);
    expect(c.knownPeers()).toEqual(["C"]);
    expect(c.peer("B")).toBeUndefined();
    expect(c.metrics().pendingDeltas).toBe(0);
  });

  it("the tick frees what every known peer acknowledged, even with no tail scan due", () => {
    const { core: c } = core({ config: config({ antiEntropyIntervalMs: 1_000 }) });
    c.membership(new Set(["B", "C"]), 0);
    publishEach(c, 1, 3, 0);
    c.step("B", { kind: "ack", inc: 1, seq: 3, based: true }, 1);
    c.step("C", { kind: "ack", inc: 1, seq: 2, based: true }, 1);
    c.membership(new Set(["B"]), 2); // C, absent, still pins the buffer down to its ack
    c.tick(201); // tail scan: C is not a member, B acknowledged all
    expect(c.metrics().pendingDeltas).toBe(1);
    c.step("C", { kind: "ack", inc: 1, seq: 3, based: true }, 300); // an ack from an absent known peer
    expect(c.nextWake()).toBe(1_000);
    c.tick(1_000);
    expect(c.metrics().pendingDeltas).toBe(0);
  });
});

describe("the unacked tail (node.md §5.4): the newest delta re-offered to each member behind it, every resendRetryMs", () => {
  /** Members B, C, D; seqs 1 … 2 published at 0; C acknowledged everything, D seq 1. */
  function tail(): ReplicationCore {
    const { core: c } = core();
    c.membership(new Set(["B", "C", "D"]), 0);
    publishEach(c, 1, 2, 0);
    c.step("C", { kind: "ack", inc: 1, seq: 2, based: true }, 50);
    c.step("D", { kind: "ack", inc: 1, seq: 1, based: true }, 50);
    c.ready();
    return c;
  }

  it("only members behind get the newest delta, each when its own clock is due; the buffer keeps what one of them lacks", () => {
    const c = tail();
    expect(c.nextWake()).toBe(200);
    c.tick(199);
    expect(c.ready().sends).toEqual([]);
    c.tick(200); // B's clock started at the flush (0), D's at its ack (50)
    expect(brief(c.ready().sends)).toEqual(["B:delta#2.0/1"]);
    expect(c.metrics()).toMatchObject({ tailsReoffered: 1, pendingDeltas: 2 });
    expect(c.peer("B")!.tailAt).toBe(200);
    expect(c.nextWake()).toBe(250);
    c.tick(250);
    expect(brief(c.ready().sends)).toEqual(["D:delta#2.0/1"]);
    expect(c.nextWake()).toBe(400);
    c.tick(399);
    expect(c.ready().sends).toEqual([]);
    c.tick(400);
    expect(brief(c.ready().sends)).toEqual(["B:delta#2.0/1"]);
    expect(c.metrics().tailsReoffered).toBe(3);
    expect(c.peer("C")).toMatchObject({ acked: 2, tailAt: 50 });
  });

  it("the scan frees what every peer acknowledged; once all did, no re-offer is due any more", () => {
    const c = tail();
    c.step("B", { kind: "ack", inc: 1, seq: 1, based: true }, 60);
    c.tick(200);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics().pendingDeltas).toBe(1);
    expect(c.nextWake()).toBe(250);
    c.step("B", { kind: "ack", inc: 1, seq: 2, based: true }, 240);
    c.step("D", { kind: "ack", inc: 1, seq: 2, based: true }, 240);
    c.tick(250);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics()).toMatchObject({ tailsReoffered: 0, pendingDeltas: 0 });
    expect(c.nextWake()).toBe(10_000);
  });
});

describe("ready() hands out what happened, once", () => {
  it("a merged value alone is handed out; nothing twice", () => {
    const { core: c } = core();
    const v = issued([["e1", [["B", 3n]]]]);
    c.step("B", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: v, ack: null }, 0);
    const r = c.ready();
    expect(r.sends).toEqual([]);
    expect(r.merged.map((m) => m.encode())).toEqual([v.encode()]);
    expect(r.antiEntropyTick).toBe(false);
    expect(c.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: false });
  });

  it("what ready() returned is never changed by what the core does afterwards", () => {
    const { core: c } = core({ restarted: true });
    const empty = c.ready();
    c.membership(new Set(["B"]), 0);
    c.step("C", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: issued([["e1", [["C", 1n]]]]), ack: null }, 0);
    expect(empty).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: false });
    const first = c.ready();
    expect(brief(first.sends)).toEqual(["B:digest"]);
    expect(first.merged.length).toBe(1);
    c.step("C", { kind: "delta", inc: 1, seq: 2, part: 0, parts: 1, value: issued([["e1", [["C", 2n]]]]), ack: null }, 1);
    c.tick(300);
    expect(brief(first.sends)).toEqual(["B:digest"]);
    expect(first.merged.length).toBe(1);
    const second = c.ready();
    expect(brief(second.sends)).toEqual(["C:ack", "B:digest"]);
    expect(second.merged.length).toBe(1);
  });

  it("a Ready with some of its lists empty shares none of them with the core: later sends, merges and reports stay out of it", () => {
    const { core: c } = core({ restarted: true, valueBudget: 256 });
    // merged only: its sends and tooLarge are empty
    c.step("C", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: issued([["e1", [["C", 1n]]]]), ack: null }, 0);
    const mergedOnly = c.ready();
    expect(mergedOnly.merged.length).toBe(1);
    // sends only: its merged and tooLarge are empty
    c.membership(new Set(["B"]), 1);
    const sendsOnly = c.ready();
    expect(brief(sendsOnly.sends)).toEqual(["B:digest"]);
    // now a send, a merge and a value too large
    const big = issued([["x9", [0, 1, 2].map((i): [string, bigint] => [`r${i}`.padEnd(90, "x"), 1n])]]);
    c.step("C", { kind: "delta", inc: 1, seq: 2, part: 0, parts: 1, value: issued([["e1", [["C", 2n]]]]), ack: null }, 2);
    c.publish(big, 2);
    c.tick(2);
    const all = c.ready();
    expect(all.sends.length).toBeGreaterThan(0);
    expect(all.merged.length).toBe(1);
    expect(all.tooLarge.length).toBe(1);
    expect(mergedOnly.sends).toEqual([]);
    expect(mergedOnly.tooLarge).toEqual([]);
    expect(mergedOnly.merged.length).toBe(1);
    expect(sendsOnly.merged).toEqual([]);
    expect(sendsOnly.tooLarge).toEqual([]);
    expect(brief(sendsOnly.sends)).toEqual(["B:digest"]);
  });

  it("a state whose join would leave int64 is refused as bad-value, like a delta (ledger.md I-15)", () => {
    const g = genesis();
    const replica = new LedgerReplica(g.join(issued([["e1", [["B", 5n]]]])));
    const { core: c } = core({ genesis: g, replica });
    const value = issued([["e1", [["M", INT64_MAX]]]]);
    expect(c.step("M", { kind: "state", inc: 1, upThrough: 0, transfer: 1, part: 0, parts: 1, value }, 0)).toBe("bad-value");
    expect(c.metrics()).toMatchObject({ valueOverflows: 1, fullStatesReceived: 0 });
    expect(c.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: false });
  });
});

describe("accessors: seq, knownPeers(), peer(), cursor()", () => {
  it("knownPeers() lists members and absent known peers sorted by id, as a copy", () => {
    const { core: c } = core();
    expect(c.knownPeers()).toEqual([]);
    c.membership(new Set(["D", "B"]), 0);
    c.membership(new Set(["C", "B"]), 1);
    const known = c.knownPeers();
    expect(known).toEqual(["B", "C", "D"]);
    known.push("Z");
    known.reverse();
    expect(c.knownPeers()).toEqual(["B", "C", "D"]);
  });

  it("seq is the last published seq", () => {
    const { core: c } = core();
    expect(c.seq).toBe(0);
    publishEach(c, 1, 2, 0);
    expect(c.seq).toBe(2);
  });

  it("cursor() is undefined for a sender never heard from; otherwise its view, seqs above the prefix ascending", () => {
    const { core: c } = core();
    expect(c.cursor("B")).toBeUndefined();
    const d = (seq: number) => ({ kind: "delta", inc: 3, seq, part: 0, parts: 1, value: issued([["e1", [["B", BigInt(seq)]]]]), ack: null }) as const;
    c.step("B", d(1), 0);
    c.step("B", d(9), 0);
    c.step("B", d(4), 0);
    c.step("B", d(12), 0);
    c.step("B", d(6), 0);
    c.step("B", { kind: "delta", inc: 3, seq: 20, part: 1, parts: 3, value: issued([["e2", [["B", 1n]]]]), ack: null }, 0);
    const view = c.cursor("B")!;
    expect(view).toEqual({ inc: 3, contig: 1, above: [4, 6, 9, 12], based: false, partsHeld: 1 });
    view.above.push(99);
    expect(c.cursor("B")!.above).toEqual([4, 6, 9, 12]);
  });
});

describe("the value budget counts this replica's own id as known to the receiver (node.md §4.2)", () => {
  it("a delta naming the sender by a long id fits the budget whole: the id costs nothing in the frame", () => {
    const self = "A".repeat(250); // within the 256-unit id limit of node.md §4.3
    const value = issued([["e1", [[self, 1n]]]]);
    expect(value.encodeBinary([self]).length).toBeLessThan(256);
    expect(value.fragments(256, []).oversize.length).toBe(1); // counted without it, the edge group could not fit
    const { core: c } = core({ self, valueBudget: 256 });
    c.membership(new Set(["B"]), 0);
    c.publish(value, 0);
    c.tick(0);
    const r = c.ready();
    expect(r.tooLarge).toEqual([]);
    expect(c.metrics().valueTooLarge).toBe(0);
    expect(r.sends.map((o) => (o.message.kind === "delta" ? o.message.value.encode() : o.message.kind))).toEqual([value.encode()]);
  });
});
