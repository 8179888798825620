/**
 * The sending half of the replication core driven by hand (issue 19, mutation survivors of core.ts's
 * `#send` … `#computeWake`): exact messages of a handshake digest, a full state and a published delta (split
 * per node.md §4.2, an owed ack riding on its first part only), who announces itself on first contact (§5.4
 * ⟨1.1⟩), the tail clock a publish restarts, and the next wake (the earliest of the anti-entropy tick, the
 * open batch, a cursor deadline, the tail re-offer and a handshake retry).
 */
import { EntitlementLedger, LedgerReplica } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import type { ReplicationConfig } from "../src/replication/config.ts";
import { type ReplicationCoreOptions } from "../src/replication/core.ts";
import type { DeltaMessage, LedgerMessage, StateMessage } from "../src/replication/messages.ts";
import { genesis, handConfig, handCore } from "./support/replication-core.ts";


const value = (components: object) => EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", ...components }));
const issued = (edge: string, replica: string, n: number) => value({ issued: [[edge, [[replica, String(n)]]]] });
/** `issued` on edges x0 … x(n−1), each by three replicas of its own with long ids: about 100 bytes per edge group. */
const wide = (n: number, amount = 1) =>
  value({ issued: Array.from({ length: n }, (_, i) => [`x${i}`, ["p", "q", "r"].map((r) => [`${r}${i}`.padEnd(30, "z"), String(amount)])]) });

const config = (over: Partial<ReplicationConfig> = {}): ReplicationConfig =>
  handConfig({ antiEntropyIntervalMs: 1_000, fullStateRetryLimit: 3, ackDelayMs: 10, reorderGraceMs: 5, ...over });


const core = (over: Partial<ReplicationCoreOptions> = {}) => handCore(config(), over);

/** A core whose state is beyond genesis (it announces itself to the peers it meets). */
function ahead(over: Partial<ReplicationCoreOptions> = {}) {
  const g = genesis();
  return core({ genesis: g, replica: new LedgerReplica(g.join(issued("e1", "A", 7))), ...over });
}

const kinds = (sends: readonly { to: string; message: LedgerMessage }[]) => sends.map((s) => `${s.to}:${s.message.kind}`);
const joinAll = (vs: readonly EntitlementLedger[]) => vs.reduce((a, b) => a.join(b), EntitlementLedger.EMPTY);

describe("first contact: who announces itself, and the handshake digest (node.md §5.4 ⟨1.1⟩)", () => {
  it("a replica beyond genesis sends each peer met a granted digest of its state and arms the retry", () => {
    const { core: c, replica } = ahead({ config: config({ antiEntropyIntervalMs: 10_000 }) });
    c.membership(new Set(["C", "B"]), 40);
    expect(c.ready().sends).toEqual([
      { to: "B", message: { kind: "digest", inc: 1, digest: replica.digest(), upThrough: 0 } },
      { to: "C", message: { kind: "digest", inc: 1, digest: replica.digest(), upThrough: 0 } },
    ]);
    expect(c.peer("B")).toMatchObject({ based: false, grant: true, handshake: { nextAt: 340, retries: 0 } });
    expect(c.metrics()).toMatchObject({ handshakes: 2, digestsSent: 2 });
    expect(c.nextWake()).toBe(340);
    c.tick(339);
    expect(c.ready().sends).toEqual([]);
    c.tick(340);
    expect(kinds(c.ready().sends)).toEqual(["B:digest", "C:digest"]);
    expect(c.nextWake()).toBe(640);
  });

  it("a restarted replica announces itself even at genesis; a first boot at genesis does not", () => {
    const { core: restarted, replica } = core({ restarted: true });
    restarted.membership(new Set(["B"]), 0);
    expect(restarted.ready().sends).toEqual([{ to: "B", message: { kind: "digest", inc: 1, digest: replica.digest(), upThrough: 0 } }]);
    expect(restarted.metrics().handshakes).toBe(1);
    const { core: first } = core();
    first.membership(new Set(["B"]), 0);
    expect(first.ready().sends).toEqual([]);
    expect(first.metrics()).toMatchObject({ handshakes: 0, digestsSent: 0 });
    expect(first.peer("B")).toMatchObject({ based: true, grant: false, handshake: null });
  });

  it("the digest carries our last published seq", () => {
    const { core: c, replica } = ahead();
    c.publish(issued("e1", "A", 8), 0);
    c.tick(0);
    c.membership(new Set(["B"]), 5);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "digest", inc: 1, digest: replica.digest(), upThrough: 1 } }]);
  });
});

describe("the full state served (node.md §5.2 `state`, §4.2)", () => {
  it("one part: our incarnation, upThrough our seq, transfer 1, the state beyond genesis", () => {
    const { core: c, replica, g } = ahead({ incarnation: 3 });
    c.publish(issued("e1", "A", 8), 0);
    c.tick(0);
    replica.apply(issued("e1", "A", 8));
    c.step("B", { kind: "resend", inc: 3, from: 5, to: 5 }, 1);
    expect(c.ready().sends).toEqual([
      { to: "B", message: { kind: "state", inc: 3, upThrough: 1, transfer: 1, part: 0, parts: 1, value: replica.snapshot().beyond(g) } },
    ]);
    expect(c.metrics().fullStatesSent).toBe(1);
  });

  it("a state over the value budget goes in parts that join to it; the same state to a second peer is the same transfer, a changed one a new", () => {
    const g = genesis();
    const replica = new LedgerReplica(g.join(wide(8)));
    const { core: c } = core({ genesis: g, replica, valueBudget: 256 });
    const expected = replica.snapshot().beyond(g).fragments(256, ["A"]).fragments;
    expect(expected.length).toBeGreaterThan(2);
    const resend = { kind: "resend", inc: 1, from: 1, to: 1 } as const;
    c.step("B", resend, 0);
    const toB = c.ready().sends.map((s) => s.message as StateMessage);
    expect(toB.map((m) => [m.transfer, m.part, m.parts])).toEqual(expected.map((_, i) => [1, i, expected.length]));
    expect(toB.map((m) => m.value.encode())).toEqual(expected.map((v) => v.encode()));
    expect(joinAll(toB.map((m) => m.value)).equals(replica.snapshot().beyond(g))).toBe(true);
    c.step("C", resend, 0);
    expect(c.ready().sends.map((s) => (s.message as StateMessage).transfer)).toEqual(expected.map(() => 1));
    replica.apply(issued("e1", "A", 9));
    c.step("D", resend, 0);
    const toD = c.ready().sends.map((s) => s.message as StateMessage);
    expect(toD.every((m) => m.transfer === 2)).toBe(true);
    expect(joinAll(toD.map((m) => m.value)).equals(replica.snapshot().beyond(g))).toBe(true);
    expect(c.metrics().fullStatesSent).toBe(3);
  });
});

describe("a published delta (node.md §5.1 step 4, §4.2)", () => {
  it("goes to every member in id order, in parts that join to the patch beyond genesis; an owed ack rides on the first part only", () => {
    const { core: c } = core({ valueBudget: 256 });
    c.membership(new Set(["C", "B", "D"]), 0);
    // C and D are owed acks for deltas of theirs; B is owed nothing
    c.step("C", { kind: "delta", inc: 4, seq: 1, part: 0, parts: 1, value: issued("e1", "C", 1), ack: null }, 0);
    c.step("D", { kind: "delta", inc: 5, seq: 1, part: 0, parts: 1, value: issued("e1", "D", 1), ack: null }, 0);
    c.ready();
    const patch = wide(8, 2);
    const parts = patch.fragments(256, ["A"]).fragments;
    expect(parts.length).toBeGreaterThan(2);
    c.publish(patch, 3);
    c.tick(3);
    const sends = c.ready().sends;
    expect(sends.map((s) => s.to)).toEqual([...parts.map(() => "B"), ...parts.map(() => "C"), ...parts.map(() => "D")]);
    const msgs = sends.map((s) => s.message as DeltaMessage);
    expect(msgs.every((m) => m.kind === "delta" && m.inc === 1 && m.seq === 1 && m.parts === parts.length)).toBe(true);
    expect(msgs.map((m) => m.part)).toEqual([0, 1, 2].flatMap(() => parts.map((_, i) => i)));
    expect(msgs.slice(0, parts.length).map((m) => m.value.encode())).toEqual(parts.map((v) => v.encode()));
    expect(msgs.map((m) => m.ack)).toEqual([
      ...parts.map(() => null),
      { inc: 4, seq: 1, based: false },
      ...parts.slice(1).map(() => null),
      { inc: 5, seq: 1, based: false },
      ...parts.slice(1).map(() => null),
    ]);
    expect(c.metrics()).toMatchObject({ deltasPublished: 1, acksPiggybacked: 2, acksSent: 0, pendingDeltas: 1 });
    // the acks that rode are not sent again when their delay ends
    c.tick(10);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics().acksSent).toBe(0);
    // a resend of it gives the same parts, without acks
    c.step("B", { kind: "resend", inc: 1, from: 1, to: 1 }, 20);
    expect(c.ready().sends.map((s) => s.message)).toEqual(msgs.slice(0, parts.length));
  });

  it("what genesis already holds is left out; with no member it is only buffered", () => {
    const { core: c, g } = core();
    c.publish(g.join(issued("e1", "A", 3)), 0);
    c.tick(0);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics()).toMatchObject({ deltasPublished: 1, pendingDeltas: 1 });
    c.membership(new Set(["B"]), 1);
    c.step("B", { kind: "resend", inc: 1, from: 1, to: 1 }, 2);
    expect(c.ready().sends).toEqual([{ to: "B", message: { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: issued("e1", "A", 3), ack: null } }]);
  });

  it("a tick with no batch open publishes nothing", () => {
    const { core: c } = core();
    c.membership(new Set(["B"]), 0);
    c.tick(5);
    expect(c.ready().sends).toEqual([]);
    expect(c.metrics().deltasPublished).toBe(0);
    expect(c.seq).toBe(0);
  });

  it("publishing restarts each member's tail clock: the re-offer comes resendRetryMs after the newest publish", () => {
    const { core: c } = ahead();
    c.publish(issued("e1", "A", 8), 0);
    c.tick(0); // seq 1, no members yet
    c.membership(new Set(["B"]), 0); // a handshake writes B's record: tail clock 0; a re-offer due at 200
    c.ready();
    c.publish(issued("e1", "A", 9), 150);
    c.tick(150);
    expect(kinds(c.ready().sends)).toEqual(["B:delta"]);
    expect(c.peer("B")!.tailAt).toBe(150);
    c.tick(200);
    expect(c.ready().sends).toEqual([]);
    expect(c.nextWake()).toBe(300); // the handshake retry comes first
    c.tick(300);
    expect(kinds(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.nextWake()).toBe(350);
    c.tick(350);
    const sends = c.ready().sends;
    expect(sends.map((s) => [s.to, s.message.kind, (s.message as DeltaMessage).seq])).toEqual([["B", "delta", 2]]);
  });
});

describe("the next wake (node.md §5: the driver arms one timer for it)", () => {
  it("a batch closing after the anti-entropy tick does not pull the wake later", () => {
    const { core: c } = core({ config: config({ deltaBatchMs: 5_000 }) });
    c.publish(issued("e1", "A", 1), 10);
    expect(c.nextWake()).toBe(1_000);
    c.publish(issued("e1", "A", 2), 20);
    expect(c.nextWake()).toBe(1_000);
  });

  it("a batch closing first is the wake, from publish on", () => {
    const { core: c } = core({ config: config({ deltaBatchMs: 30 }) });
    c.publish(issued("e1", "A", 1), 10);
    expect(c.nextWake()).toBe(40);
    c.tick(39);
    expect(c.nextWake()).toBe(40);
  });

  it("an owed ack, then a gap's grace and retry, are the wake in turn", () => {
    const { core: c } = core();
    c.step("B", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: issued("e1", "B", 1), ack: null }, 100);
    expect(c.nextWake()).toBe(110);
    c.tick(110);
    expect(kinds(c.ready().sends)).toEqual(["B:ack"]);
    expect(c.nextWake()).toBe(1_000);
    c.step("B", { kind: "delta", inc: 1, seq: 3, part: 0, parts: 1, value: issued("e1", "B", 3), ack: null }, 200);
    expect(c.nextWake()).toBe(205);
    c.tick(205);
    expect(kinds(c.ready().sends)).toEqual(["B:resend"]);
    expect(c.nextWake()).toBe(210);
    c.tick(210);
    expect(kinds(c.ready().sends)).toEqual(["B:ack"]);
    expect(c.nextWake()).toBe(400); // the retry
    c.tick(400);
    expect(kinds(c.ready().sends)).toEqual(["B:resend"]);
    expect(c.nextWake()).toBe(600);
  });

  it("a cursor deadline after the anti-entropy tick is not the wake", () => {
    const { core: c } = core();
    c.step("B", { kind: "delta", inc: 1, seq: 3, part: 0, parts: 1, value: issued("e1", "B", 3), ack: null }, 900);
    c.tick(905); // the grace: seqs 1 and 2 asked for
    c.tick(910); // the ack
    expect(kinds(c.ready().sends)).toEqual(["B:resend", "B:ack"]);
    expect(c.nextWake()).toBe(1_000); // the gap's retry at 1100 comes after the tick
    c.tick(1_000);
    expect(c.nextWake()).toBe(1_100);
  });

  it("a pending handshake retry of one peer is the wake while another's ended", () => {
    const { core: c } = ahead({ config: config({ antiEntropyIntervalMs: 10_000 }) });
    c.membership(new Set(["B"]), 0);
    c.membership(new Set(["B", "C"]), 100);
    expect(kinds(c.ready().sends)).toEqual(["B:digest", "C:digest"]);
    expect(c.nextWake()).toBe(300);
    c.step("B", { kind: "ack", inc: 1, seq: 0, based: true }, 150);
    c.tick(300); // B's retry would be due now, but B confirmed: dropped
    expect(c.ready().sends).toEqual([]);
    expect(c.nextWake()).toBe(400);
    c.tick(400);
    expect(kinds(c.ready().sends)).toEqual(["C:digest"]);
    expect(c.nextWake()).toBe(700);
  });

  it("a handshake whose peer was evicted meanwhile neither sets the wake nor breaks it", () => {
    const { core: c } = ahead({ config: config({ peerEvictionMs: 500, fullStateRetryLimit: 10 }) });
    c.membership(new Set(["B"]), 0);
    c.membership(new Set(), 10);
    c.ready();
    c.tick(1_000); // the retry is due (B absent: no digest) and B, gone 990 ms, is forgotten
    expect(c.ready().sends).toEqual([]);
    expect(c.peer("B")).toBeUndefined();
    expect(c.nextWake()).toBe(2_000);
    c.membership(new Set(["B"]), 1_100); // met afresh
    expect(kinds(c.ready().sends)).toEqual(["B:digest"]);
    expect(c.peer("B")).toMatchObject({ handshake: { nextAt: 1_400, retries: 0 } });
    expect(c.nextWake()).toBe(1_400);
  });
});
