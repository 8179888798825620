import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import { heddleStatic, memoryStore, MemoryNetwork, seededRandom } from "../src/index.ts";
import { VirtualTimers, encodeLedgerFrame } from "../src/testing.ts";
import { handConfig, handCore } from "./support/replication-core.ts";

// node.md §5.2 sets no limit on resend answers; the node's is named (README): at most `maxResendSpan` deltas
// resent to one peer per `resendRetryMs`. A resend frame is a few bytes and its answer up to maxResendSpan
// deltas, so without it one peer could make a node send without end. Seeded: MemoryNetwork and the node's random.

const SEED = Number(process.env.HEDDLE_SEED ?? 26);
const rec = (id: string, p: string, c: string) => ({ id: AttachmentId(id), parent: GroupId(p), child: GroupId(c), weight: Weight.of(1n, 1n) });
const FLAT = [rec("e1", "root", "g1"), rec("e2", "root", "g2")];

describe("resend answers are rate-limited per peer", () => {
  it(`100 resend frames for 51 buffered deltas get one answer per resendRetryMs; the rest are dropped and counted (seed ${SEED})`, () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(SEED) });
    const victim = heddleStatic({
      seam: net.join("victim"), self: ReplicaId("victim"), root: GroupId("root"), supply: new Map([[ReplicaId("victim"), 1_000n]]), topology: FLAT,
      config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 10_000n, timers, antiEntropyIntervalMs: 100, maxResendSpan: 64, resendRetryMs: 2_000, random: seededRandom(SEED), store: memoryStore() },
    });
    const mallory = net.join("mallory");
    timers.advanceBy(5);
    victim.advertise(AttachmentId("e1"), { targetOutstanding: 1_000n, maximumUsefulGrant: 1_000n });
    victim.schedule(GroupId("root"));
    timers.advanceBy(1);
    for (let i = 0; i < 50; i++) {
      const r = victim.reserve(GroupId("g1"), 1n);
      if (!r.ok) throw new Error(JSON.stringify(r));
      victim.complete(r.id, 1n);
      timers.advanceBy(1);
    }
    expect(victim.metrics().peer.ledger.deltasPublished).toBeGreaterThanOrEqual(51);
    const frame = new Uint8Array([1, ...encodeLedgerFrame({ kind: "resend", inc: victim.epoch, from: 1, to: 51 }, "mallory", victim.genesisDigest)]);
    const burst = () => {
      const before = victim.metrics().peer.ledger.framesOut.delta;
      for (let i = 0; i < 100; i++) expect(mallory.send("victim", frame)).toBe("queued");
      timers.advanceBy(1);
      return victim.metrics().peer.ledger.framesOut.delta - before;
    };
    expect(burst()).toBe(51);
    expect(victim.metrics().peer.ledger.resendsRateLimited).toBe(99);
    timers.advanceBy(1_000);
    expect(burst()).toBe(0); // the same window: nothing more
    expect(victim.metrics().peer.ledger.resendsRateLimited).toBe(199);
    timers.advanceBy(1_000);
    expect(burst()).toBe(51); // a new window: one honest re-ask's worth again
    expect(victim.metrics().peer.ledger.resendsServed).toBe(2);
  });

  it("the budget is per peer and per window: small spans add up to maxResendSpan, another peer has its own", () => {
    const { core } = handCore(handConfig({ maxResendSpan: 4, resendRetryMs: 200 }));
    for (let i = 0; i < 6; i++) {
      core.publish(EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued: [["e1", [["A", String(i + 1)]]]] })), i);
      core.tick(i);
    }
    core.ready();
    const resend = (from: string, a: number, b: number, now: number) => {
      core.step(from, { kind: "resend", inc: 1, from: a, to: b }, now);
      return core.ready().sends.filter((s) => s.message.kind === "delta").length;
    };
    expect(resend("B", 1, 3, 10)).toBe(3);
    expect(resend("B", 4, 4, 11)).toBe(1);
    expect(resend("B", 5, 5, 12)).toBe(0);
    expect(resend("C", 1, 4, 13)).toBe(4);
    expect(resend("B", 5, 6, 210)).toBe(2);
    expect(core.metrics()).toMatchObject({ resendsServed: 4, resendsRateLimited: 1 });
  });
});
