// Two peers replicate a ledger over the deterministic in-memory fabric, with 20 % loss.
// Run from the repository root: npx -y pnpm@10 exec node packages/node/examples/two-peers.ts
import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { HeddlePeer, MemoryNetwork, VirtualTimers, seededRandom } from "@heddle/node";

const timers = new VirtualTimers();
const net = new MemoryNetwork({ timers, random: seededRandom(1), faults: { dropRate: 0.2, duplicateRate: 0.1, delayMs: [0, 50] } });

// Every peer computes the same genesis from the same inputs: supply at the root, one edge root → team.
let genesis = EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId("alice"), 100n], [ReplicaId("bob"), 100n]]), "heddle-static-genesis");
for (const step of [(l: EntitlementLedger) => l.prepare({ id: AttachmentId("e1"), parent: GroupId("root"), child: GroupId("team"), weight: Weight.ONE }), (l: EntitlementLedger) => l.activate(AttachmentId("e1"))]) {
  const r = step(genesis);
  if (!r.ok) throw new Error(r.refusal.kind);
  genesis = genesis.join(r.patch);
}

const config = { timers, random: seededRandom(2), antiEntropyIntervalMs: 100 };
const alice = new HeddlePeer({ seam: net.join("alice"), genesis, epoch: 0, config });
const bob = new HeddlePeer({ seam: net.join("bob"), genesis, epoch: 0, config: { ...config, random: seededRandom(3) } });
timers.advanceBy(10); // membership changes are announced through a 0 ms timer

// Alice delegates 40 of her units to the team and spends 15 there; the patches replicate to Bob.
for (const step of [(l: EntitlementLedger) => l.delegate(ReplicaId("alice"), AttachmentId("e1"), 40n), (l: EntitlementLedger) => l.spend(ReplicaId("alice"), GroupId("team"), 15n)]) {
  const r = step(alice.ledger.get());
  if (!r.ok) throw new Error(r.refusal.kind);
  alice.publish(r.patch);
}
bob.advertise("e1", { targetOutstanding: 50n, maximumUsefulGrant: 10n });
timers.advanceBy(2_000);

const seenByBob = bob.ledger.get();
console.log("equal:", seenByBob.equals(alice.ledger.get()));                          // equal: true
console.log("alice at team, seen by bob:", seenByBob.holdings(GroupId("team"), ReplicaId("alice"))); // 25n
console.log("demand for e1, seen by alice:", alice.demand("e1"));                    // { targetOutstanding: 50n, maximumUsefulGrant: 10n }
await alice.shutdown();
await bob.shutdown();
