import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import { BootstrapError, heddleStatic, memoryStore, MemoryNetwork, seededRandom, type HeddleNode, type HeddleStore, type NodeEvent } from "../src/index.ts";
import { VirtualTimers, encodeLedgerFrame, patchBytes } from "../src/testing.ts";

// node.md §1 ("nothing received from the network is ever thrown through the node"), §4.3 (a value whose join
// would put a read outside int64 is refused whole as `bad-value` and counted), ledger.md I-15. Each value below
// has every slot in range; only a ledger-wide total leaves int64. Seeded: MemoryNetwork and every node's random.

const SEED = Number(process.env.HEDDLE_SEED ?? 26);
const HALF = 1n << 62n;
const rec = (id: string, p: string, c: string) => ({ id: AttachmentId(id), parent: GroupId(p), child: GroupId(c), weight: Weight.of(1n, 1n) });
const FLAT = [rec("e1", "root", "g1"), rec("e2", "root", "g2")];
const value = (components: object) => EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", ...components }));
const TAG_LEDGER = 1;

function cluster(ids: readonly string[], stores = new Map<string, HeddleStore>()) {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(SEED) });
  const supply = new Map([[ReplicaId("victim"), 100n], [ReplicaId("honest"), 100n]]);
  const start = (id: string, seam = net.join(id)): HeddleNode => {
    if (!stores.has(id)) stores.set(id, memoryStore());
    return heddleStatic({
      seam, self: ReplicaId(id), root: GroupId("root"), supply, topology: FLAT,
      config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers, antiEntropyIntervalMs: 100, random: seededRandom(SEED * 10 + id.length), store: stores.get(id)! },
    });
  };
  const nodes = new Map(ids.map((id) => [id, start(id)]));
  const mallory = net.join("mallory");
  timers.advanceBy(50);
  const send = (to: HeddleNode, seq: number, v: EntitlementLedger) => {
    const frame = encodeLedgerFrame({ kind: "delta", inc: 1, seq, part: 0, parts: 1, ack: null, value: v }, "mallory", to.genesisDigest);
    expect(mallory.send(to.self, new Uint8Array([TAG_LEDGER, ...frame]))).toBe("queued");
  };
  return { timers, net, nodes, send, start, stores };
}

const POISON = {
  "leafSpent on two edges (Σ leafSpent over the ledger = 2^63)": value({ leafSpent: [["x1", [["mallory", String(HALF)]]], ["x2", [["mallory", String(HALF)]]]] }),
  "leafSpent + returned on one edge (its debits = 2^63)": value({ leafSpent: [["x1", [["mallory", String(HALF)]]]], returned: [["x1", [["mallory", String(HALF)]]]] }),
  "two donors' root-path transfers to one recipient (its inflow = 2^63)": value({ transfers: [["", [["m1", [["victim", String(HALF)]]], ["m2", [["victim", String(HALF)]]]]]] }),
};

describe("inbound values whose ledger-wide totals leave int64 (node.md §4.3, ledger.md I-15)", () => {
  for (const [what, poison] of Object.entries(POISON)) {
    it(`${what}: refused whole as bad-value and counted; no timer, read or call throws (seed ${SEED})`, () => {
      const { timers, nodes, send } = cluster(["victim"]);
      const victim = nodes.get("victim")!;
      const events: NodeEvent[] = [];
      victim.events.subscribe((e) => events.push(e));
      const before = victim.ledger.get();
      send(victim, 1, poison);
      timers.advanceBy(5);
      expect(victim.metrics().framesRejected["bad-value"]).toBe(1);
      expect(victim.metrics().peer.ledger.valueOverflows).toBe(1);
      expect(victim.ledger.get().equals(before)).toBe(true);
      expect(() => timers.advanceBy(1_000)).not.toThrow();
      expect(() => victim.schedule(GroupId("root"))).not.toThrow();
      expect(() => victim.boundMetrics(GroupId("root"))).not.toThrow();
      expect(() => victim.available(GroupId("g1"))).not.toThrow();
      expect(victim.ledger.get().validate()).toEqual([]);
      expect(events.filter((e) => e.kind === "internal-error")).toEqual([]);
      expect(victim.metrics().validateOverflows).toBe(0);
    });
  }

  it(`is neither persisted nor relayed: an honest peer never holds it and the victim restarts from its store (seed ${SEED})`, () => {
    const { timers, net, nodes, send, start } = cluster(["victim", "honest"]);
    let victim = nodes.get("victim")!;
    const honest = nodes.get("honest")!;
    const poison = POISON["two donors' root-path transfers to one recipient (its inflow = 2^63)"];
    send(victim, 1, poison);
    for (let i = 0; i < 30; i++) expect(() => timers.advanceBy(100)).not.toThrow();
    expect(() => honest.schedule(GroupId("root"))).not.toThrow();
    expect(honest.ledger.get().replicas()).not.toContain("m1");
    net.crash("victim", "disconnect");
    victim = start("victim", net.restart("victim"));
    expect(victim.ledger.get().replicas()).not.toContain("m1");
    expect(victim.ledger.get().validate()).toEqual([]);
  });

  // review s28, finding 1: the remedy it named (an older backup, or an empty store) re-spent what the replica had
  // published; the message now names a new identity, the safe one, and warns against both.
  it("a store whose restored ledger leaves int64 (written by an earlier version) refuses to boot, naming a safe remedy", async () => {
    const store = memoryStore();
    const first = cluster(["victim"], new Map([["victim", store]])).nodes.get("victim")!;
    store.commit({ patches: [{ origin: "merged", body: patchBytes(POISON["leafSpent on two edges (Σ leafSpent over the ledger = 2^63)"]) }] });
    await first.shutdown();
    let error: unknown = null;
    try {
      cluster(["victim"], new Map([["victim", store]]));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BootstrapError);
    const message = String(error);
    expect(message).toMatch(/Keep this store as it is, and do not start replica "victim" from an older backup or an empty store/);
    expect(message).toMatch(/would spend those units a second time \(node\.md §9\)/);
    expect(message).toMatch(/run this peer under a new replica id with a new, empty store/);
    expect(message).not.toMatch(/restore the store from a backup|start from an empty store/i);
  });
});

describe("nothing escapes into a timer or the network path (node.md §1)", () => {
  it(`the anti-entropy tick's validate() leaving int64 is caught, counted and reported once (seed ${SEED})`, () => {
    const { timers, nodes } = cluster(["victim"]);
    const victim = nodes.get("victim")!;
    const events: NodeEvent[] = [];
    victim.events.subscribe((e) => events.push(e));
    // Through the governed control sink, which joins what it is given unchecked: the only way left to reach such a state.
    victim.controlSink().publish(POISON["leafSpent on two edges (Σ leafSpent over the ledger = 2^63)"]);
    expect(() => timers.advanceBy(1_000)).not.toThrow();
    victim.controlSink().publish(value({ issued: [["x3", [["victim", "1"]]]] }));
    expect(() => timers.advanceBy(1_000)).not.toThrow();
    expect(victim.metrics().validateOverflows).toBe(2);
    const reported = events.filter((e) => e.kind === "internal-error");
    expect(reported.map((e) => e.kind === "internal-error" && e.where)).toEqual(["validate"]);
  });

  it(`a ledger subscriber that throws does not make the frame handler throw; the frame is still joined (seed ${SEED})`, () => {
    const { timers, nodes, send } = cluster(["victim"]);
    const victim = nodes.get("victim")!;
    const events: NodeEvent[] = [];
    victim.events.subscribe((e) => events.push(e));
    victim.ledger.subscribe(() => {
      throw new Error("subscriber bug");
    });
    send(victim, 1, value({ issued: [["x1", [["mallory", "3"]]]] }));
    send(victim, 2, value({ issued: [["x1", [["mallory", "4"]]]] }));
    expect(() => timers.advanceBy(5)).not.toThrow();
    expect(victim.ledger.get().edge(AttachmentId("x1"))?.issued).toBe(4n);
    expect(victim.metrics().subscriberErrors).toBe(2);
    const reported = events.filter((e) => e.kind === "internal-error");
    expect(reported.map((e) => e.kind === "internal-error" && e.where)).toEqual(["ledger-subscriber"]);
    expect(() => timers.advanceBy(1_000)).not.toThrow();
  });
});
