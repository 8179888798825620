/**
 * The replication core driven by hand (issue 19, mutation survivors of core.ts): each test is a short
 * schedule of `publish` / `membership` / `step` / `tick` calls on one `ReplicationCore`, the test being
 * the network and the clock, and asserts exact outputs — sends, merged deltas, values too large, wakes,
 * counters. What it pins: constructor validation, `ready()` when nothing happened, an old incarnation's
 * frames (node.md §5.3 step 1), the refusal of a value whose join leaves int64 (ledger.md I-15), the
 * full-state rate limit's memory bound, `value-too-large` once per group (§4.2), the tail re-offer clock of
 * a peer met at first boot (§5.4 ⟨1.1⟩), and the next wake while a delta batch is open.
 */
import { AttachmentId, EntitlementLedger, LedgerReplica } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import type { ReplicationConfig } from "../src/replication/config.ts";
import { ReplicationCore, type ReplicationCoreOptions } from "../src/replication/core.ts";
import type { LedgerMessage } from "../src/replication/messages.ts";
import { genesis, handConfig, handCore } from "./support/replication-core.ts";

const INT64_MAX = (1n << 63n) - 1n;


/** A value with `issued` slots only: `[edge, [[replica, amount], …]]`. */
const issued = (rows: [string, [string, bigint][]][]) =>
  EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued: rows.map(([e, slots]) => [e, slots.map(([r, n]) => [r, String(n)])]) }));

/** One edge group whose binary form is over 256 bytes (three replica ids of 90 characters each). */
const oversized = (edge: string) => issued([[edge, [0, 1, 2].map((i): [string, bigint] => [`r${i}`.padEnd(90, "x"), 1n])]]);

const config = (over: Partial<ReplicationConfig> = {}): ReplicationConfig => handConfig({ antiEntropyIntervalMs: 100, ...over });


const core = (over: Partial<ReplicationCoreOptions> = {}) => handCore(config(), over);

const kinds = (sends: readonly { to: string; message: LedgerMessage }[]) => sends.map((s) => `${s.to}:${s.message.kind}`);

describe("ReplicationCore constructor: options are checked (node.md §12)", () => {
  it("refuses an invalid config with the config's own RangeError", () => {
    expect(() => core({ config: config({ resendRetryMs: 0 }) })).toThrow(new RangeError("resendRetryMs must be a positive integer, got 0"));
  });

  it("refuses an incarnation that is negative or not a safe integer; 0 is accepted", () => {
    expect(() => core({ incarnation: -1 })).toThrow(new RangeError("incarnation must be a safe integer >= 0, got -1"));
    expect(() => core({ incarnation: 1.5 })).toThrow(new RangeError("incarnation must be a safe integer >= 0, got 1.5"));
    expect(() => core({ incarnation: 2 ** 53 })).toThrow(RangeError);
    expect(core({ incarnation: 0 }).core.incarnation).toBe(0);
  });

  it("refuses a value budget below 256 bytes or not a safe integer; 256 is accepted", () => {
    expect(() => core({ valueBudget: 255 })).toThrow(new RangeError("a ledger value budget of 255 bytes leaves no room for ledger values"));
    expect(() => core({ valueBudget: 256.5 })).toThrow(new RangeError("a ledger value budget of 256.5 bytes leaves no room for ledger values"));
    expect(core({ valueBudget: 256 }).core.seq).toBe(0);
  });
});

describe("ReplicationCore.ready(): nothing happened, nothing to do", () => {
  it("a fresh core reports no anti-entropy tick; the tick at antiEntropyIntervalMs reports one, once", () => {
    const { core: c } = core();
    expect(c.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: false });
    c.tick(99);
    expect(c.ready().antiEntropyTick).toBe(false);
    expect(c.nextWake()).toBe(100);
    c.tick(100);
    expect(c.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: true });
    expect(c.ready()).toEqual({ sends: [], merged: [], tooLarge: [], antiEntropyTick: false });
  });
});

describe("an old incarnation's frame is joined and nothing else (node.md §5.3 step 1)", () => {
  it("a delta of an older incarnation moves no cursor and acknowledges nothing; its digest is not answered", () => {
    const { core: c, replica } = core();
    c.membership(new Set(["B"]), 0);
    c.ready();
    const v1 = issued([["e1", [["B", 1n]]]]);
    const v2 = issued([["e1", [["B", 2n]]]]);
    expect(c.step("B", { kind: "delta", inc: 2, seq: 1, part: 0, parts: 1, value: v1, ack: null }, 0)).toBeUndefined();
    expect(c.cursor("B")).toEqual({ inc: 2, contig: 1, above: [], based: false, partsHeld: 0 });
    expect(c.ready().merged.length).toBe(1);
    // the old incarnation's delta seq 2: joined (a patch is a patch), the cursor of incarnation 2 untouched
    expect(c.step("B", { kind: "delta", inc: 1, seq: 2, part: 0, parts: 1, value: v2, ack: null }, 1)).toBeUndefined();
    expect(c.cursor("B")).toEqual({ inc: 2, contig: 1, above: [], based: false, partsHeld: 0 });
    expect(c.ready().merged.length).toBe(1);
    expect(replica.snapshot().edge(AttachmentId("e1"))!.issued).toBe(2n);
    // an old incarnation's digest (mismatching ours) asks for nothing
    expect(c.step("B", { kind: "digest", inc: 1, digest: "0000000000000000", upThrough: 7 }, 2)).toBeUndefined();
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics()).toMatchObject({ digestMatches: 0, digestMismatches: 0 });
    // the current incarnation's mismatching digest does ask for the state
    c.step("B", { kind: "digest", inc: 2, digest: "0000000000000000", upThrough: 1 }, 3);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "state-request" } }]);
    expect(c.metrics()).toMatchObject({ digestMatches: 0, digestMismatches: 1 });
  });
});

describe("a value whose join would leave int64 is refused whole (ledger.md I-15)", () => {
  it("bad-value, counted once as valueOverflows, the replica rolled back, nothing merged, no cursor", () => {
    const g = genesis();
    const replica = new LedgerReplica(g.join(issued([["e1", [["B", 5n]]]])));
    const { core: c } = core({ genesis: g, replica });
    const before = replica.snapshot().encode();
    const digest = replica.digest();
    const value = issued([["e1", [["M", INT64_MAX]]]]);
    expect(c.step("M", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value, ack: null }, 0)).toBe("bad-value");
    expect(c.metrics().valueOverflows).toBe(1);
    expect(replica.digest()).toBe(digest);
    expect(replica.snapshot().encode()).toBe(before);
    expect(c.ready().merged).toEqual([]);
    expect(c.cursor("M")).toBeUndefined();
    // the same slot on an edge nobody else issues on fits: joined
    expect(c.step("M", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: issued([["x9", [["M", INT64_MAX]]]]), ack: null }, 1)).toBeUndefined();
    expect(c.metrics().valueOverflows).toBe(1);
    expect(c.ready().merged.length).toBe(1);
    expect(c.cursor("M")).toMatchObject({ inc: 1, contig: 1 });
  });

  it("any other error of the join is not swallowed as a bad value", () => {
    const { core: c, replica } = core();
    const digest = replica.digest();
    replica.merge = () => {
      throw new Error("not an overflow");
    };
    expect(() => c.step("B", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: issued([["e1", [["B", 1n]]]]), ack: null }, 0)).toThrow("not an overflow");
    expect(c.metrics().valueOverflows).toBe(0);
    expect(replica.digest()).toBe(digest);
  });
});

describe("full states served: rate-limited per peer, the record bounded", () => {
  it("pruning the served-at record (past 4 × members + 64 peers) keeps every peer still inside its interval", () => {
    const { core: c } = core();
    const resend = { kind: "resend", inc: 1, from: 1, to: 1 } as const; // nothing buffered: the full state answers
    for (let i = 0; i < 65; i++) c.step(`q${i}`, resend, 1_000);
    expect(c.metrics()).toMatchObject({ fullStatesSent: 65, rateLimitedRequests: 0 });
    c.ready();
    // every one of them was served at 1000: still rate-limited at 1001 and at 1099
    c.step("q0", resend, 1_001);
    c.step("q64", resend, 1_099);
    expect(c.metrics()).toMatchObject({ fullStatesSent: 65, rateLimitedRequests: 2 });
    expect(c.ready().sends).toEqual([]);
    // one interval later they are served again
    c.step("q0", resend, 1_100);
    expect(c.metrics()).toMatchObject({ fullStatesSent: 66, rateLimitedRequests: 2 });
    expect(kinds(c.ready().sends)).toEqual(["q0:state"]);
  });
});

describe("value-too-large: once per group and kind of value (node.md §4.2)", () => {
  it("an oversize edge group of a delta is reported once with its size, counted every time; the state's is reported apart", () => {
    const { core: c, replica, g } = core({ valueBudget: 256 });
    const x9 = oversized("x9");
    const bytes = x9.beyond(g).fragments(256, ["A"]).oversize[0]!.bytes;
    expect(bytes).toBeGreaterThan(256);
    replica.merge(x9);
    c.publish(x9, 0);
    c.tick(0);
    expect(c.ready().tooLarge).toEqual([{ kind: "value-too-large", what: "delta: edge group x9", bytes }]);
    expect(c.metrics().valueTooLarge).toBe(1);
    c.publish(x9, 1);
    c.tick(1);
    expect(c.ready().tooLarge).toEqual([]);
    expect(c.metrics().valueTooLarge).toBe(2);
    // another group: reported
    const y9 = oversized("y9");
    c.publish(y9, 2);
    c.tick(2);
    expect(c.ready().tooLarge.map((t) => t.what)).toEqual(["delta: edge group y9"]);
    // x9 again after y9: still reported only once
    c.publish(x9, 3);
    c.tick(3);
    expect(c.ready().tooLarge).toEqual([]);
    expect(c.metrics().valueTooLarge).toBe(4);
    // the full state carries x9 too (a resend of another incarnation's deltas is answered with it): a
    // state's oversize group is its own report
    c.step("B", { kind: "resend", inc: 9, from: 1, to: 1 }, 4);
    const rd = c.ready();
    expect(rd.tooLarge).toEqual([{ kind: "value-too-large", what: "state: edge group x9", bytes }]);
    expect(kinds(rd.sends)).toEqual(["B:state"]);
    expect(c.metrics().valueTooLarge).toBe(5);
  });
});

describe("first boot at genesis with a published stream meets a peer (node.md §5.4 ⟨1.1⟩)", () => {
  it("no handshake, but the peer's tail re-offer clock starts at the meeting", () => {
    // A replica still at genesis with a published stream (here the patch is published without being applied
    // to the replica): not restarted and nothing beyond genesis, so it announces nothing to the peers it meets.
    const { core: c } = core();
    c.publish(issued([["e1", [["A", 1n]]]]), 0);
    c.tick(0);
    expect(c.seq).toBe(1);
    expect(c.ready().sends).toEqual([]); // no members yet
    c.membership(new Set(["B"]), 10);
    expect(c.ready().sends).toEqual([]); // nothing to announce
    expect(c.peer("B")).toMatchObject({ acked: 0, tailAt: 10, handshake: null });
    c.tick(100); // anti-entropy tick (antiEntropy off: no digest)
    c.tick(200);
    expect(c.ready().sends).toEqual([]);
    expect(c.nextWake()).toBe(210);
    c.tick(210);
    const rd = c.ready();
    expect(rd.sends.map((s) => [s.to, s.message.kind, s.message.kind === "delta" ? s.message.seq : -1])).toEqual([["B", "delta", 1]]);
    expect(c.metrics().tailsReoffered).toBe(1);
  });
});

describe("the next wake while a delta batch is open", () => {
  it("a batch closing before the next anti-entropy tick is the wake", () => {
    const { core: c } = core({ config: config({ deltaBatchMs: 50 }) });
    c.publish(issued([["e1", [["A", 1n]]]]), 90);
    expect(c.nextWake()).toBe(100);
    c.tick(100);
    expect(c.nextWake()).toBe(140);
  });

  it("a batch closing after the next anti-entropy tick is not", () => {
    const { core: c } = core({ config: config({ deltaBatchMs: 500 }) });
    c.publish(issued([["e1", [["A", 1n]]]]), 90);
    c.tick(100);
    expect(c.nextWake()).toBe(200);
    c.tick(200);
    expect(c.nextWake()).toBe(300);
  });
});
