/**
 * The receiving half of the replication core driven by hand (issue 19, mutation survivors of core.ts's
 * `#merge` … `#onState`): each test is a short schedule of `membership` / `step` / `tick` calls on one
 * `ReplicationCore`, the test being the network and the clock, and asserts exact outputs — sends, merged
 * deltas, cursors, peer records, counters, wakes. What it pins: the int64 guard over every read a joined
 * value can break (ledger.md I-15), a peer's restart (node.md §5.3 step 2, §5.4), piggybacked and plain acks
 * (§5.2 `ack`), split deltas (§4.2, §5.3), resends served or answered by the state (§5.2 `resend`), digests,
 * granted state requests and full states received (§5.2, §5.4).
 */
import { AttachmentId, EntitlementLedger, LedgerReplica } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import type { ReplicationConfig } from "../src/replication/config.ts";
import { ReplicationCore, type ReplicationCoreOptions } from "../src/replication/core.ts";
import type { AckInfo, DeltaMessage, LedgerMessage, StateMessage } from "../src/replication/messages.ts";
import { genesis, handConfig, handCore } from "./support/replication-core.ts";

const INT64_MAX = ((1n << 63n) - 1n).toString();


/** A ledger value from the components of its canonical JSON form. */
const value = (components: object) => EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", ...components }));
/** `issued[edge][replica] = n`. */
const issued = (edge: string, replica: string, n: number | string) => value({ issued: [[edge, [[replica, String(n)]]]] });

const config = (over: Partial<ReplicationConfig> = {}): ReplicationConfig =>
  handConfig({ antiEntropyIntervalMs: 1_000, fullStateRetryLimit: 3, ackDelayMs: 10, reorderGraceMs: 5, ...over });


const core = (over: Partial<ReplicationCoreOptions> = {}) => handCore(config(), over);

/** A core whose state is beyond genesis (it announces itself to the peers it meets). */
function ahead(over: Partial<ReplicationCoreOptions> = {}) {
  const g = genesis();
  return core({ genesis: g, replica: new LedgerReplica(g.join(issued("e1", "A", 7))), ...over });
}

const delta = (inc: number, seq: number, v: EntitlementLedger, o: { part?: number; parts?: number; ack?: AckInfo | null } = {}): DeltaMessage => ({
  kind: "delta",
  inc,
  seq,
  part: o.part ?? 0,
  parts: o.parts ?? 1,
  value: v,
  ack: o.ack ?? null,
});

const state = (inc: number, upThrough: number, transfer: number, part: number, parts: number, v: EntitlementLedger): StateMessage => ({
  kind: "state",
  inc,
  upThrough,
  transfer,
  part,
  parts,
  value: v,
});

const kinds = (sends: readonly { to: string; message: LedgerMessage }[]) => sends.map((s) => `${s.to}:${s.message.kind}`);

/** Publishes one local patch at `now` and flushes it (deltaBatchMs 0); returns what the flush sent. */
function publish(c: ReplicationCore, patch: EntitlementLedger, now: number) {
  c.publish(patch, now);
  c.tick(now);
  return c.ready().sends;
}

describe("#merge: a value is refused whole when any read it can break would leave int64 (ledger.md I-15)", () => {
  // Each value breaks exactly one read family; the others stay in range (the scratch measurement is in each comment).
  it("the holdings of the edge's parent group: a returned slot far above the issued one", () => {
    // holdings(root, B) = 1000 − (6 − (2^63 − 1)) leaves int64; the edge summary and holdings(g1, B) do not
    const { core: c, replica } = core();
    const digest = replica.digest();
    const v = value({ issued: [["e1", [["B", "6"]]]], returned: [["e1", [["B", INT64_MAX]]]] });
    expect(c.step("B", delta(1, 1, v), 0)).toBe("bad-value");
    expect(c.metrics().valueOverflows).toBe(1);
    expect(replica.digest()).toBe(digest);
    expect(c.ready().merged).toEqual([]);
    expect(c.cursor("B")).toBeUndefined();
  });

  it("the holdings of the edge's child group: a transfer into a replica at the edge's path", () => {
    // holdings(g1, B) = pos(e1, B) = 6 + (2^63 − 1) leaves int64; the edge summary and holdings(root, B) do not
    const { core: c, replica } = core();
    const digest = replica.digest();
    const v = value({ issued: [["e1", [["B", "6"]]]], transfers: [["e1", [["C", [["B", INT64_MAX]]]]]] });
    expect(c.step("B", delta(1, 1, v), 0)).toBe("bad-value");
    expect(c.metrics().valueOverflows).toBe(1);
    expect(replica.digest()).toBe(digest);
    expect(c.ready().merged).toEqual([]);
  });

  it("the minted total: a mint naming no edge at all", () => {
    const { core: c, replica } = core();
    const digest = replica.digest();
    const v = value({ mints: [["m9", ["root", "C", INT64_MAX]]] });
    expect(c.step("C", delta(1, 1, v), 0)).toBe("bad-value");
    expect(c.metrics().valueOverflows).toBe(1);
    expect(replica.digest()).toBe(digest);
    // the same mint alone on a fresh genesis-less replica fits: the check is the sum, not the slot
    const lone = core({ genesis: EntitlementLedger.EMPTY, replica: new LedgerReplica() }).core;
    expect(lone.step("C", delta(1, 1, v), 0)).toBeUndefined();
    expect(lone.ready().merged.length).toBe(1);
  });

  it("a full state that would leave int64 is refused the same way: nothing joined, not counted, no cursor", () => {
    const { core: c, replica } = core();
    const digest = replica.digest();
    const v = value({ mints: [["m9", ["root", "C", INT64_MAX]]] });
    expect(c.step("C", state(1, 4, 1, 0, 1, v), 0)).toBe("bad-value");
    expect(replica.digest()).toBe(digest);
    expect(c.metrics()).toMatchObject({ valueOverflows: 1, fullStatesReceived: 0 });
    expect(c.cursor("C")).toBeUndefined();
    expect(c.ready().sends).toEqual([]);
    c.tick(100);
    expect(c.ready().sends).toEqual([]);
  });

  it("a value that changes nothing is joined silently: nothing merged, yet its seq is counted and acknowledged", () => {
    const { core: c, g } = core();
    expect(c.step("B", delta(1, 1, g), 0)).toBeUndefined();
    expect(c.ready().merged).toEqual([]);
    expect(c.cursor("B")).toMatchObject({ inc: 1, contig: 1 });
    expect(c.step("B", delta(1, 2, issued("e1", "B", 3)), 1)).toBeUndefined();
    const merged = c.ready().merged;
    expect(merged.map((m) => m.encode())).toEqual([issued("e1", "B", 3).encode()]);
  });
});

describe("#adopt: a sender's new incarnation (node.md §5.3 step 2, §5.4)", () => {
  /** A core ahead of genesis that met B at 0 and had B confirm the base (ack with `based`). */
  function metAndBased() {
    const t = ahead();
    t.core.membership(new Set(["B"]), 0);
    expect(kinds(t.core.ready().sends)).toEqual(["B:digest"]);
    t.core.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 1);
    expect(t.core.peer("B")).toMatchObject({ based: true, handshake: null });
    expect(t.core.step("B", delta(5, 1, issued("e1", "B", 1)), 2)).toBeUndefined(); // B's first incarnation seen: nothing to say
    expect(t.core.ready().sends).toEqual([]);
    expect(t.core.metrics().handshakes).toBe(1);
    return t;
  }

  it("a known member restarting is told our state again: a granted handshake digest, its base unconfirmed", () => {
    const { core: c, replica } = metAndBased();
    expect(c.step("B", delta(6, 1, issued("e1", "B", 2)), 50)).toBeUndefined();
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "digest", inc: 1, digest: replica.digest(), upThrough: 0 } }]);
    expect(c.peer("B")).toMatchObject({ based: false, grant: true, handshake: { nextAt: 350, retries: 0 } });
    expect(c.metrics()).toMatchObject({ handshakes: 2, digestsSent: 2 });
    expect(c.cursor("B")).toMatchObject({ inc: 6, contig: 1 });
    // the same incarnation again is no restart
    c.step("B", delta(6, 2, issued("e1", "B", 3)), 60);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics().handshakes).toBe(2);
  });

  it("a restart seen through a digest is a restart too", () => {
    const { core: c } = metAndBased();
    c.step("B", { kind: "digest", inc: 6, digest: "0000000000000000", upThrough: 0 }, 50);
    expect(kinds(c.ready().sends)).toEqual(["B:digest", "B:state-request"]);
    expect(c.peer("B")).toMatchObject({ based: false });
  });

  it("at genesis a restart is noted (base unconfirmed) but there is nothing to tell", () => {
    const { core: c, g } = core();
    c.membership(new Set(["B"]), 0);
    c.step("B", delta(5, 1, g), 1);
    expect(c.peer("B")!.based).toBe(true);
    c.step("B", delta(6, 1, g), 2);
    expect(c.ready().sends).toEqual([]);
    expect(c.peer("B")).toMatchObject({ based: false, handshake: null });
    expect(c.metrics().handshakes).toBe(0);
  });

  it("a known peer that left and restarted is noted but not handshaken until it returns; a stranger gets no record", () => {
    const { core: c } = metAndBased();
    c.membership(new Set(), 10);
    c.step("B", delta(6, 1, issued("e1", "B", 2)), 20);
    expect(c.ready().sends).toEqual([]);
    expect(c.peer("B")).toMatchObject({ based: false, absentSince: 10 });
    expect(c.metrics().handshakes).toBe(1);
    c.step("Z", delta(1, 1, issued("e1", "Z", 2)), 21);
    c.step("Z", delta(2, 1, issued("e1", "Z", 3)), 22);
    expect(c.peer("Z")).toBeUndefined();
    expect(c.ready().sends).toEqual([]);
  });
});

describe("#onDelta: bookkeeping after the join (node.md §5.3, §4.2)", () => {
  it("an ack riding on a delta is honoured like a plain ack", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    publish(c, issued("e1", "A", 1), 0);
    publish(c, issued("e1", "A", 2), 1);
    expect(c.seq).toBe(2);
    c.step("B", delta(3, 1, issued("e1", "B", 1), { ack: { inc: 1, seq: 2, based: false } }), 5);
    expect(c.peer("B")).toMatchObject({ acked: 2, tailAt: 5 });
    expect(c.metrics().pendingDeltas).toBe(2);
    c.tick(1_000); // the anti-entropy tick frees what every known peer acknowledged
    expect(c.metrics().pendingDeltas).toBe(0);
  });

  it("a split delta is counted and acknowledged only once every part arrived; each part is joined on arrival", () => {
    const { core: c, replica } = core();
    c.step("B", delta(1, 1, issued("x1", "B", 1), { part: 1, parts: 2 }), 0);
    expect(c.ready().merged.length).toBe(1);
    expect(replica.snapshot().edge(AttachmentId("x1"))!.issued).toBe(1n);
    expect(c.cursor("B")).toEqual({ inc: 1, contig: 0, above: [], based: false, partsHeld: 1 });
    expect(c.nextWake()).toBe(1_000); // no ack owed yet
    c.tick(50);
    expect(c.ready().sends).toEqual([]);
    c.step("B", delta(1, 1, issued("x2", "B", 1), { part: 0, parts: 2 }), 60);
    expect(c.cursor("B")).toEqual({ inc: 1, contig: 1, above: [], based: false, partsHeld: 0 });
    expect(c.nextWake()).toBe(70);
    c.tick(70);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "ack", inc: 1, seq: 1, based: false } }]);
    expect(c.metrics().acksSent).toBe(1);
  });

  it("a delta beyond a gap asks for the missing seqs after the reorder grace", () => {
    const { core: c } = core();
    c.step("B", delta(1, 3, issued("e1", "B", 3)), 100);
    expect(c.cursor("B")).toMatchObject({ contig: 0, above: [3] });
    expect(c.nextWake()).toBe(105); // the grace, before the ack's 110
    c.tick(105);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "resend", inc: 1, from: 1, to: 2 } }]);
    expect(c.metrics().resendsRequested).toBe(1);
    expect(c.nextWake()).toBe(110);
  });

  it("a duplicate is acknowledged again (it re-covers a lost ack) and changes no gap tracking", () => {
    // maxTrackedSeqs 2: seqs 3 and 4 held above the gap plus one part of split seq 6 are three things tracked
    const { core: c } = core({ config: config({ maxTrackedSeqs: 2 }) });
    c.step("B", delta(1, 3, issued("e1", "B", 3)), 0);
    c.step("B", delta(1, 4, issued("e1", "B", 4)), 0);
    c.step("B", delta(1, 6, issued("x6", "B", 1), { part: 0, parts: 2 }), 0);
    c.tick(10);
    c.ready();
    expect(c.cursor("B")).toEqual({ inc: 1, contig: 0, above: [3, 4], based: false, partsHeld: 1 });
    c.step("B", delta(1, 3, issued("e1", "B", 3)), 100);
    expect(c.cursor("B")).toEqual({ inc: 1, contig: 0, above: [3, 4], based: false, partsHeld: 1 });
    expect(c.nextWake()).toBe(110);
    c.tick(110);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "ack", inc: 1, seq: 0, based: false } }]);
  });
});

describe("#onAck: how far a peer acknowledged our stream (node.md §5.2 `ack`, §5.5)", () => {
  it("an ack of another incarnation of ours, or from a peer we do not know, changes nothing", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    publish(c, issued("e1", "A", 1), 0);
    c.step("B", { kind: "ack", inc: 2, seq: 1, based: false }, 1);
    c.step("B", { kind: "ack", inc: 0, seq: 1, based: false }, 1);
    expect(c.peer("B")!.acked).toBe(0);
    expect(() => c.step("Z", { kind: "ack", inc: 1, seq: 1, based: true }, 2)).not.toThrow();
    expect(c.peer("Z")).toBeUndefined();
    expect(c.knownPeers()).toEqual(["B"]);
  });

  it("an ack is capped at our last seq and never moves back", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    publish(c, issued("e1", "A", 1), 0);
    publish(c, issued("e1", "A", 2), 0);
    c.step("B", { kind: "ack", inc: 1, seq: 99, based: false }, 1);
    expect(c.peer("B")!.acked).toBe(2);
    c.step("B", { kind: "ack", inc: 1, seq: 1, based: false }, 2);
    expect(c.peer("B")).toMatchObject({ acked: 2, tailAt: 1 });
  });

  it("an ack that moves restarts the peer's tail clock; one that does not move leaves it", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    publish(c, issued("e1", "A", 1), 0);
    publish(c, issued("e1", "A", 2), 0);
    c.step("B", { kind: "ack", inc: 1, seq: 1, based: false }, 150);
    c.step("B", { kind: "ack", inc: 1, seq: 1, based: false }, 300);
    expect(c.peer("B")).toMatchObject({ acked: 1, tailAt: 150 });
    c.tick(200); // the tail scan: B's clock restarted at 150, not due
    expect(c.ready().sends).toEqual([]);
    expect(c.nextWake()).toBe(350);
    c.tick(350);
    const sends = c.ready().sends;
    expect(sends.map((s) => [s.to, s.message.kind, (s.message as DeltaMessage).seq])).toEqual([["B", "delta", 2]]);
    expect(c.metrics().tailsReoffered).toBe(1);
  });

  it("an ack confirming our base ends the handshake (no more digests); one that does not, does not", () => {
    const { core: c } = ahead();
    c.membership(new Set(["B", "C"]), 0);
    expect(kinds(c.ready().sends)).toEqual(["B:digest", "C:digest"]);
    c.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 10);
    c.step("C", { kind: "ack", inc: 1, seq: 0, based: false }, 10);
    expect(c.peer("B")).toMatchObject({ based: true, handshake: null });
    expect(c.peer("C")).toMatchObject({ based: false, handshake: { nextAt: 300, retries: 0 } });
    c.tick(300);
    expect(kinds(c.ready().sends)).toEqual(["C:digest"]);
    // a later `based` ack of a peer already based changes nothing else
    c.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 301);
    expect(c.peer("B")).toMatchObject({ based: true, handshake: null });
  });
});

describe("#onResend: served from the buffer, else the full state (node.md §5.2 `resend`)", () => {
  /** A core with 3 published deltas, B a member that acknowledged none. */
  function withStream(over: Partial<ReplicationConfig> = {}) {
    const t = core({ config: config(over) });
    t.core.membership(new Set(["B"]), 0);
    for (let i = 1; i <= 3; i++) publish(t.core, issued("e1", "A", i), 0);
    return t;
  }

  it("a buffered span of our incarnation is resent delta by delta, without acks, and counted", () => {
    const { core: c } = withStream();
    c.step("B", { kind: "resend", inc: 1, from: 2, to: 3 }, 10);
    expect(c.ready().sends).toEqual([
      { to: "B", message: { kind: "delta", inc: 1, seq: 2, part: 0, parts: 1, value: issued("e1", "A", 2), ack: null } },
      { to: "B", message: { kind: "delta", inc: 1, seq: 3, part: 0, parts: 1, value: issued("e1", "A", 3), ack: null } },
    ]);
    expect(c.metrics()).toMatchObject({ resendsServed: 1, fullStatesSent: 0 });
  });

  it("a span of exactly maxResendSpan is served; one longer gets the full state", () => {
    const { core: c } = withStream({ maxResendSpan: 2 });
    c.step("B", { kind: "resend", inc: 1, from: 2, to: 3 }, 10);
    expect(kinds(c.ready().sends)).toEqual(["B:delta", "B:delta"]);
    c.step("B", { kind: "resend", inc: 1, from: 1, to: 3 }, 11);
    expect(kinds(c.ready().sends)).toEqual(["B:state"]);
    expect(c.metrics()).toMatchObject({ resendsServed: 1, fullStatesSent: 1 });
  });

  it("a span beyond our seq, or of another incarnation, gets the full state", () => {
    const { core: c } = withStream();
    c.step("B", { kind: "resend", inc: 1, from: 3, to: 4 }, 10);
    expect(kinds(c.ready().sends)).toEqual(["B:state"]);
    c.step("C", { kind: "resend", inc: 2, from: 1, to: 1 }, 10);
    expect(kinds(c.ready().sends)).toEqual(["C:state"]);
    expect(c.metrics()).toMatchObject({ resendsServed: 0, fullStatesSent: 2 });
  });
});

describe("#onDigest: a peer's digest (node.md §5.2 `digest`)", () => {
  it("a matching digest resyncs the cursor to upThrough, confirms the base and acknowledges at once", () => {
    const { core: c, replica } = core();
    c.step("B", delta(4, 2, replica.snapshot()), 0); // seq 2 of B's incarnation 4: seq 1 missing
    expect(c.cursor("B")).toMatchObject({ contig: 0, above: [2] });
    c.step("B", { kind: "digest", inc: 4, digest: replica.digest(), upThrough: 5 }, 3);
    expect(c.cursor("B")).toEqual({ inc: 4, contig: 5, above: [], based: true, partsHeld: 0 });
    expect(c.metrics()).toMatchObject({ digestMatches: 1, digestMismatches: 0 });
    expect(c.ready().sends).toEqual([]);
    expect(c.nextWake()).toBe(3);
    c.tick(3);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "ack", inc: 4, seq: 5, based: true } }]);
    expect(c.nextWake()).toBe(1_000); // nothing missing any more: no grace, no retry
  });

  it("a matching digest behind the cursor keeps it and still acknowledges", () => {
    const { core: c, replica } = core();
    c.step("B", delta(4, 1, replica.snapshot()), 0);
    c.step("B", delta(4, 2, replica.snapshot()), 0);
    c.step("B", { kind: "digest", inc: 4, digest: replica.digest(), upThrough: 1 }, 3);
    expect(c.cursor("B")).toMatchObject({ contig: 2, based: true });
    c.tick(3);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "ack", inc: 4, seq: 2, based: true } }]);
  });
});

/**
 * A cursor of sender B tracking three things against maxTrackedSeqs 2 (node.md §5.3 step 6, §4.2: parts count
 * against it): seqs 3 and 4 above the gap and one part of split seq 6 (a part's arrival alone checks no bound).
 */
function overTracked() {
  const t = core({ config: config({ maxTrackedSeqs: 2 }) });
  t.core.step("B", delta(1, 3, issued("e1", "B", 3)), 0);
  t.core.step("B", delta(1, 4, issued("e1", "B", 4)), 0);
  t.core.step("B", delta(1, 6, issued("x6", "B", 1), { part: 0, parts: 2 }), 0);
  t.core.tick(10);
  t.core.ready();
  expect(t.core.cursor("B")).toEqual({ inc: 1, contig: 0, above: [3, 4], based: false, partsHeld: 1 });
  return t;
}

describe("a resync keeps the per-sender tracking bound (node.md §5.3 step 6: past maxTrackedSeqs, keep contig, clear the rest)", () => {
  it("after a matching digest", () => {
    const { core: c, replica } = overTracked();
    c.step("B", { kind: "digest", inc: 1, digest: replica.digest(), upThrough: 1 }, 20);
    expect(c.cursor("B")).toEqual({ inc: 1, contig: 1, above: [], based: true, partsHeld: 0 });
  });

  it("after a complete full state", () => {
    const { core: c } = overTracked();
    c.step("B", state(1, 1, 1, 0, 1, issued("e1", "B", 1)), 20);
    expect(c.cursor("B")).toEqual({ inc: 1, contig: 1, above: [], based: true, partsHeld: 0 });
    expect(c.metrics().fullStatesReceived).toBe(1);
  });
});

describe("#onStateRequest: only a granted request is served (node.md §5.2 `state-request`, §5.4)", () => {
  it("a stranger's request, or a member's without a granted digest, is unsolicited", () => {
    const { core: c } = ahead();
    c.step("Z", { kind: "state-request" }, 0);
    expect(c.metrics()).toMatchObject({ unsolicitedRequests: 1, fullStatesSent: 0 });
    c.membership(new Set(["B"]), 0);
    c.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 0);
    c.ready();
    // B's grant: only the handshake digest
    c.step("B", { kind: "state-request" }, 1);
    expect(kinds(c.ready().sends)).toEqual(["B:state"]);
    expect(c.peer("B")!.grant).toBe(false);
    c.step("B", { kind: "state-request" }, 2_000);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics()).toMatchObject({ unsolicitedRequests: 2, fullStatesSent: 1, rateLimitedRequests: 0 });
  });

  it("a granted request within the interval is refused as rate-limited and keeps its grant", () => {
    const { core: c } = ahead({ config: config({ antiEntropy: true }) });
    c.membership(new Set(["B"]), 0);
    c.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 0);
    c.step("B", { kind: "state-request" }, 10);
    expect(kinds(c.ready().sends)).toEqual(["B:digest", "B:state"]);
    c.tick(1_000); // the anti-entropy digest grants B again
    expect(kinds(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.peer("B")!.grant).toBe(true);
    c.step("B", { kind: "state-request" }, 1_009);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics()).toMatchObject({ rateLimitedRequests: 1, unsolicitedRequests: 0, fullStatesSent: 1 });
    expect(c.peer("B")!.grant).toBe(true);
    c.step("B", { kind: "state-request" }, 1_010);
    expect(kinds(c.ready().sends)).toEqual(["B:state"]);
    expect(c.peer("B")!.grant).toBe(false);
    expect(c.metrics().fullStatesSent).toBe(2);
  });
});

describe("#onState: a full state received (node.md §5.2 `state`, §4.2)", () => {
  it("each part is joined on arrival; the cursor resync and the ack wait for the last part", () => {
    const { core: c, replica } = core();
    c.step("B", state(2, 7, 1, 1, 2, issued("x1", "B", 1)), 0);
    expect(c.ready().merged.length).toBe(1);
    expect(replica.snapshot().edge(AttachmentId("x1"))!.issued).toBe(1n);
    expect(c.metrics().fullStatesReceived).toBe(0);
    expect(c.cursor("B")).toEqual({ inc: 2, contig: 0, above: [], based: false, partsHeld: 1 });
    expect(c.nextWake()).toBe(1_000);
    c.step("B", state(2, 7, 1, 0, 2, issued("x2", "B", 1)), 5);
    expect(c.metrics().fullStatesReceived).toBe(1);
    expect(c.cursor("B")).toEqual({ inc: 2, contig: 7, above: [], based: true, partsHeld: 0 });
    expect(c.nextWake()).toBe(5);
    c.tick(5);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "ack", inc: 2, seq: 7, based: true } }]);
  });

  it("an old incarnation's state is joined and nothing else", () => {
    const { core: c, replica } = core();
    c.step("B", delta(3, 1, issued("e1", "B", 1)), 0);
    c.step("B", state(2, 9, 1, 0, 1, issued("x1", "B", 4)), 1);
    expect(replica.snapshot().edge(AttachmentId("x1"))!.issued).toBe(4n);
    expect(c.metrics().fullStatesReceived).toBe(0);
    expect(c.cursor("B")).toMatchObject({ inc: 3, contig: 1, based: false });
  });
});
