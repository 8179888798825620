// node.md §9.4: a node whose store commit fails closes, installs nothing, and keeps serving reads and receiving
// replication. Its persist-failed event used to be emitted from inside the failed commit, with the schedule's
// ledger transaction still open: a listener that read the ledger (as one logging the failure would) threw "no
// snapshot while a transaction is open", that escaped schedule() before the rollback, and every later read and
// every inbound frame then failed on the open transaction (found in review).
import { describe, expect, it } from "vitest";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { heddleStatic, memoryStore } from "../src/index.ts";
import { VirtualTimers, failingStore } from "../src/testing.ts";

const rec = (id: string, p: string, c: string) => ({ id: AttachmentId(id), parent: GroupId(p), child: GroupId(c), weight: Weight.of(1n, 1n) });
const FLAT = [rec("e1", "root", "g1"), rec("e2", "root", "g2")];
const DEMAND = { targetOutstanding: 1000n, maximumUsefulGrant: 1000n };

function pair(seed: number) {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(seed) });
  const supply = new Map([[ReplicaId("victim"), 100n], [ReplicaId("honest"), 100n]]);
  const base = { root: GroupId("root"), supply, topology: FLAT };
  const config = (store: ReturnType<typeof memoryStore>, s: number) => ({ policy: { quantum: 10n }, maxHoldingsPerPeer: 1000n, timers, random: seededRandom(s), store });
  // every commit that carries a patch fails: the first schedule round's
  const victim = heddleStatic({ ...base, seam: net.join("victim"), self: ReplicaId("victim"), config: config(failingStore(memoryStore(), (tx) => (tx.patches?.length ?? 0) > 0), seed + 1) });
  const honest = heddleStatic({ ...base, seam: net.join("honest"), self: ReplicaId("honest"), config: config(memoryStore(), seed + 2) });
  return { timers, victim, honest };
}

describe("persist-failed is told once the failed round is rolled back (node.md §9.4)", () => {
  it("a listener that reads the ledger sees the state without the failed round, and the node keeps serving", () => {
    const { timers, victim, honest } = pair(3);
    const seen: bigint[] = [];
    victim.events.subscribe((ev) => {
      if (ev.kind === "persist-failed") seen.push(victim.ledger.get().edge(AttachmentId("e1"))!.issued);
    });
    victim.advertise(AttachmentId("e1"), DEMAND);
    expect(victim.schedule(GroupId("root")).grants).toEqual([]);
    expect(seen).toEqual([0n]); // heard once, and the grant it failed to persist is not there
    expect(victim.metrics().failed).toBe(true);
    expect(victim.available(GroupId("g1"))).toBe(0n);
    // replication still arrives and is joined (a failed node keeps receiving)
    honest.advertise(AttachmentId("e2"), DEMAND);
    honest.schedule(GroupId("root"));
    timers.advanceBy(2_000);
    expect(victim.ledger.get().edge(AttachmentId("e2"))!.issued).toBe(honest.ledger.get().edge(AttachmentId("e2"))!.issued);
    expect(victim.ledger.get().edge(AttachmentId("e2"))!.issued).toBeGreaterThan(0n);
  });

  it("a listener that throws leaves the node consistent: the failed round is rolled back all the same", () => {
    const { victim } = pair(5);
    const bug = new Error("listener bug");
    victim.events.subscribe((ev) => {
      if (ev.kind === "persist-failed") throw bug;
    });
    const internal: unknown[] = [];
    victim.events.subscribe((ev) => {
      if (ev.kind === "internal-error") internal.push(ev);
    });
    victim.advertise(AttachmentId("e1"), DEMAND);
    // the listener's error is caught, counted and reported (§4.3: nothing is thrown through the node)
    expect(victim.schedule(GroupId("root")).grants).toEqual([]);
    expect(victim.metrics()).toMatchObject({ failed: true, subscriberErrors: 1 });
    expect(internal).toEqual([{ kind: "internal-error", where: "events-subscriber", error: bug }]);
    // the round's transaction was rolled back before the listener ran: reads work and show nothing of it
    expect(victim.ledger.get().edge(AttachmentId("e1"))!.issued).toBe(0n);
    expect(victim.available(GroupId("g1"))).toBe(0n);
  });
});
