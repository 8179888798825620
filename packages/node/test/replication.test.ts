import { AttachmentId, GroupId, ReplicaId, Weight, fnv1a64, type EntitlementLedger } from "@heddle/ledger";
import { ChannelTag, MemoryNetwork, muxSeam, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { describe, expect, it } from "vitest";
import type { FrameRejected } from "../src/index.ts";
import { RejectionCounter } from "../src/testing.ts";
import { ReplicationSim, SIM_CONFIG, SimReplica, simGenesis } from "./replication-sim.ts";

function delegateOnce(l: EntitlementLedger, who: string, edge: string, amount: bigint): EntitlementLedger {
  const r = l.delegate(ReplicaId(who), AttachmentId(edge), amount);
  if (!r.ok) throw new Error(r.refusal.kind);
  return r.patch;
}

describe("ledger replication (node.md §5)", () => {
  it("genesis determinism: equal inputs give equal digests; a peer bootstrapped differently is rejected whole (A1)", () => {
    const ids = ["a", "b", "c"];
    expect(fnv1a64(simGenesis(ids).encode())).toBe(fnv1a64(simGenesis([...ids]).encode()));
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(1) });
    const rejected = new Map<string, FrameRejected[]>();
    const start = (id: string, genesis: EntitlementLedger, k: number) => {
      const list: FrameRejected[] = [];
      rejected.set(id, list);
      const rejections = new RejectionCounter(timers, 60_000, (e) => list.push(e));
      const rep = new SimReplica({
        channel: muxSeam(net.join(id)).channel(ChannelTag.ledger), incarnation: 1, genesis, genesisDigest: fnv1a64(genesis.encode()), initial: genesis,
        timers, random: seededRandom(10 + k), config: SIM_CONFIG, rejections, maxFrameBytes: SIM_CONFIG.maxFrameBytes, restarted: false,
      });
      return { rep, rejections };
    };
    const genesis = simGenesis(ids);
    const peers = ids.map((id, k) => start(id, genesis, k));
    const other = simGenesis(["a", "b", "c", "d"], 7n);
    const d = start("d", other, 9);
    timers.advanceBy(50);
    const before = peers.map((p) => p.rep.ledger.get().encode());
    d.rep.publish(delegateOnce(d.rep.ledger.get(), "d", "e1", 3n));
    timers.advanceBy(2_000);
    peers.forEach((p, i) => {
      expect(p.rep.ledger.get().encode()).toBe(before[i]);
      const counts = p.rejections.counts();
      expect(counts["genesis-mismatch"]).toBeGreaterThan(3);
      const others = Object.entries(counts).filter(([r, n]) => r !== "genesis-mismatch" && n > 0);
      expect(others).toEqual([]);
    });
    expect(d.rep.ledger.get().equals(peers[0]!.rep.ledger.get())).toBe(false);
  });

  it("every frame delivered twice changes nothing beyond the first delivery (A4-style)", () => {
    const sim = new ReplicationSim(["a", "b"], 5);
    sim.net.setFaults("*", "*", { dropRate: 0, duplicateRate: 1, delayMs: [0, 30] });
    sim.timers.advanceBy(100);
    for (let i = 0; i < 10; i++) {
      const a = sim.peer("a");
      a.rep.publish(delegateOnce(a.rep.ledger.get(), "a", "e2", 10n));
      sim.timers.advanceBy(10);
    }
    expect(sim.settle()).toBe(true);
    const l = sim.peer("b").rep.ledger.get();
    expect(l.edge(AttachmentId("e2"))!.issued).toBe(100n);
    expect(l.holdings(GroupId("root"), ReplicaId("a"))).toBe(900n);
  });

  it("bounded buffers: a peer cut off while 3 × maxPendingDeltas commits happen catches up by full state (A21)", () => {
    const max = 25;
    const sim = new ReplicationSim(["a", "b", "c"], 9, { config: { maxPendingDeltas: max } });
    sim.timers.advanceBy(100);
    sim.net.partition([["a", "c"], ["b"]], "silent");
    let peak = 0;
    for (let i = 0; i < 3 * max; i++) {
      const a = sim.peer("a");
      a.rep.publish(delegateOnce(a.rep.ledger.get(), "a", "e2", 1n));
      peak = Math.max(peak, a.rep.metrics().pendingDeltas);
      sim.timers.advanceBy(5);
    }
    for (let i = 0; i < 200; i++) {
      sim.timers.advanceBy(10);
      peak = Math.max(peak, sim.peer("a").rep.metrics().pendingDeltas);
    }
    expect(peak).toBe(max);
    sim.net.heal();
    expect(sim.settle()).toBe(true);
    expect(sim.peer("b").rep.ledger.get().edge(AttachmentId("e2"))!.issued).toBe(BigInt(3 * max));
    expect(sim.peer("b").rep.metrics().fullStatesReceived + sim.peer("a").rep.metrics().fullStatesSent).toBeGreaterThan(0);
  });

  it("a state larger than maxFrameBytes travels in parts and converges (A23)", () => {
    const sim = new ReplicationSim(["a", "b"], 13, { maxFrameBytes: 4096, config: { maxFrameBytes: 4096, maxPendingDeltas: 10 } });
    sim.timers.advanceBy(100);
    sim.net.partition([["a"], ["b"]], "disconnect");
    sim.timers.advanceBy(10);
    const a = sim.peer("a");
    for (let i = 0; i < 200; i++) {
      const id = AttachmentId(`wide-${String(i).padStart(3, "0")}`);
      let l = a.rep.ledger.get();
      const p = l.prepare({ id, parent: GroupId("g2"), child: GroupId(`leaf-${i}`), weight: Weight.of(BigInt(1 + (i % 5))) });
      if (!p.ok) throw new Error(p.refusal.kind);
      a.rep.publish(p.patch);
      l = a.rep.ledger.get();
      const act = l.activate(id);
      if (!act.ok) throw new Error(act.refusal.kind);
      a.rep.publish(act.patch);
    }
    for (let i = 0; i < 100; i++) a.rep.publish(delegateOnce(a.rep.ledger.get(), "a", "e2", 1n));
    for (let i = 0; i < 100; i++) {
      const l = a.rep.ledger.get();
      a.rep.publish(delegateOnce(l, "a", `wide-${String(i).padStart(3, "0")}`, 1n));
      sim.timers.advanceBy(1); // separate deltas, more than the buffer keeps: b's catch-up needs the full state
    }
    expect(a.rep.ledger.get().encode().length).toBeGreaterThan(4 * 4096);
    expect(a.rep.ledger.get().encodeBinary([ "a" ]).length).toBeGreaterThan(4096); // even the lean wire form needs several frames
    sim.net.heal();
    expect(sim.settle()).toBe(true);
    const b = sim.peer("b").rep.metrics();
    expect(b.fullStatesReceived).toBeGreaterThan(0);
    expect(b.framesIn.state).toBeGreaterThanOrEqual(b.fullStatesReceived * 2); // each full state came in several parts
    expect(sim.peer("b").rep.ledger.get().validate()).toEqual([]);
  });

  it("a lost delta is recovered by resend from the buffer", () => {
    const sim = new ReplicationSim(["a", "b"], 21, { config: { antiEntropyIntervalMs: 60_000 } });
    sim.timers.advanceBy(100);
    const a = sim.peer("a");
    sim.net.setFaults("a", "b", { dropRate: 1, duplicateRate: 0, delayMs: [0, 0] });
    a.rep.publish(delegateOnce(a.rep.ledger.get(), "a", "e2", 4n));
    sim.timers.advanceBy(1); // the delta leaves when its batch closes (end of the turn): into the black hole
    sim.net.setFaults("a", "b", { dropRate: 0, duplicateRate: 0, delayMs: [0, 0] });
    a.rep.publish(delegateOnce(a.rep.ledger.get(), "a", "e2", 4n));
    sim.timers.advanceBy(50);
    expect(sim.converged()).toBe(true);
    expect(a.rep.metrics().resendsServed).toBe(1);
    expect(sim.peer("b").rep.metrics().resendsRequested).toBe(1);
  });
});
