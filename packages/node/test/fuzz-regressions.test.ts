import { describe, expect, it } from "vitest";
import { EntitlementLedger, GroupId, ReplicaId } from "@heddle/ledger";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { heddleStatic, memoryStore } from "../src/index.ts";
import { VirtualTimers, canonicalBytes, encodeLedgerFrame } from "../src/testing.ts";
import { FLAT, HUNGRY, conservation, e } from "./node-sim.ts";

/** Bugs the libp2p frame fuzzer (fuzz-frames.test.ts) found, each pinned on the in-memory network. */
const withTag = (tag: number, body: Uint8Array) => new Uint8Array([tag, ...body]);
const INT64_MAX = (1n << 63n) - 1n;

function cluster() {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(3) });
  const supply = new Map([[ReplicaId("victim"), 100n], [ReplicaId("honest"), 100n]]);
  const config = { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers, maxFrameBytes: 4096, antiEntropyIntervalMs: 100 };
  const start = (id: string, seed: number) =>
    heddleStatic({ seam: net.join(id), self: ReplicaId(id), root: GroupId("root"), supply, topology: FLAT, config: { ...config, random: seededRandom(seed), store: memoryStore() } });
  const victim = start("victim", 1);
  const honest = start("honest", 2);
  const mallory = net.join("mallory");
  timers.advanceBy(50);
  return { timers, victim, honest, mallory };
}

describe("regressions found by the frame fuzzer", () => {
  it("a peer's own issued slot at 2^63 − 1 on an edge others issue on is refused as bad-value, not joined (it made the next validate() throw out of a timer)", () => {
    const { timers, victim, honest, mallory } = cluster();
    honest.advertise(e("e1"), HUNGRY);
    expect(honest.schedule(GroupId("root")).grants.length).toBeGreaterThan(0);
    timers.advanceBy(300);
    expect(victim.ledger.get().edge(e("e1"))!.issued).toBeGreaterThan(0n);
    const before = victim.ledger.get().encode();
    const value = EntitlementLedger.decode(`{"format":"heddle-ledger/1","issued":[["e1",[["mallory","${INT64_MAX}"]]]]}`);
    const frame = encodeLedgerFrame({ kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, ack: null, value }, "mallory", victim.genesisDigest);
    expect(mallory.send("victim", withTag(1, frame))).toBe("queued");
    expect(() => timers.advanceBy(1_000)).not.toThrow(); // anti-entropy ticks run validate()
    expect(victim.metrics().framesRejected["bad-value"]).toBe(1);
    expect(victim.metrics().peer.ledger.valueOverflows).toBe(1);
    expect(victim.ledger.get().encode()).toBe(before);
    expect(() => victim.ledger.get().validate()).not.toThrow();
    victim.advertise(e("e2"), HUNGRY);
    expect(victim.schedule(GroupId("root")).grants.length).toBeGreaterThan(0);
    const c = conservation(victim.ledger.get());
    expect(c.minted).toBe(c.held + c.leafSpent);
    // the same slot on an edge nobody else issues on sums to no more than int64: accepted
    const alone = EntitlementLedger.decode(`{"format":"heddle-ledger/1","issued":[["x9",[["mallory","${INT64_MAX}"]]]]}`);
    mallory.send("victim", withTag(1, encodeLedgerFrame({ kind: "delta", inc: 1, seq: 2, part: 0, parts: 1, ack: null, value: alone }, "mallory", victim.genesisDigest)));
    timers.advanceBy(10);
    expect(victim.metrics().framesRejected["bad-value"]).toBe(1);
    expect(victim.ledger.get().encode()).not.toBe(before);
  });

  it("a liveness frame above the node's maxFrameBytes is oversize, as on the other channels (it was parsed as JSON up to the seam's limit)", () => {
    const { timers, victim, mallory } = cluster();
    const big = new TextEncoder().encode(`{"kind":"ping","pad":"${"x".repeat(5000)}","v":1}`);
    mallory.send("victim", withTag(3, big));
    mallory.send("victim", withTag(3, canonicalBytes({ v: 1, kind: "ping", pad: "x" })));
    timers.advanceBy(10);
    expect(victim.metrics().framesRejected.oversize).toBe(1);
    expect(victim.metrics().framesRejected.schema).toBe(1);
  });
});

describe("part tracking is bounded by maxTrackedSeqs (node.md §4.2, §5.5)", () => {
  it("a sender announcing huge part counts cannot make the receiver remember more than maxTrackedSeqs part numbers", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(5) });
    const supply = new Map([[ReplicaId("victim"), 100n]]);
    const victim = heddleStatic({
      seam: net.join("victim"), self: ReplicaId("victim"), root: GroupId("root"), supply, topology: FLAT,
      config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers, random: seededRandom(6), store: memoryStore(), maxTrackedSeqs: 64 },
    }) as unknown as { replicationState(p: string): { cursor?: { partsHeld: number } }; genesisDigest: string; metrics(): { framesRejected: Record<string, number> } };
    const mallory = net.join("mallory");
    timers.advanceBy(10);
    const value = EntitlementLedger.decode(`{"format":"heddle-ledger/1","issued":[["e1",[["mallory","1"]]]]}`);
    const send = (m: Parameters<typeof encodeLedgerFrame>[0]) => mallory.send("victim", withTag(1, encodeLedgerFrame(m, "mallory", victim.genesisDigest)));
    let peak = 0;
    for (let k = 0; k < 3_000; k++) {
      send({ kind: "state", inc: 1, upThrough: 0, transfer: 7, parts: 2 ** 40, part: k, value });
      send({ kind: "state", inc: 1, upThrough: 0, transfer: 8 + (k % 3), parts: 60, part: k % 60, value });
      send({ kind: "delta", inc: 1, seq: 1 + (k % 50), parts: 2 ** 40, part: k, ack: null, value });
      send({ kind: "delta", inc: 1, seq: 100 + (k % 40), parts: 64, part: (k * 7) % 64, ack: null, value });
      if (k % 100 === 0) {
        timers.advanceBy(1);
        peak = Math.max(peak, victim.replicationState("mallory").cursor?.partsHeld ?? 0);
      }
    }
    timers.advanceBy(1);
    peak = Math.max(peak, victim.replicationState("mallory").cursor!.partsHeld);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(64);
    expect(Object.values(victim.metrics().framesRejected).reduce((a, b) => a + b, 0)).toBe(0);
  });
});
