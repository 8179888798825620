// Two peers share one tree over the deterministic in-memory fabric, with 20 % loss: Alice delegates her
// units to a team, runs work there, and Bob's replica converges to the same books.
// Run from the repository root: npx -y pnpm@10 exec node packages/node/examples/two-peers.ts
import { GroupId, ReplicaId } from "@heddle/ledger";
import { MemoryNetwork, edgeId, heddleStatic, lane, lowerTopology, memoryStore, seededRandom } from "@heddle/node";
import { VirtualTimers } from "@heddle/node/testing";

const timers = new VirtualTimers();
const net = new MemoryNetwork({ timers, random: seededRandom(1), faults: { dropRate: 0.2, duplicateRate: 0.1, delayMs: [0, 50] } });
const supply = new Map([[ReplicaId("alice"), 100n], [ReplicaId("bob"), 100n]]);
const topology = lowerTopology("root", [lane("team", 1)]); // root → team, weight 1
const team = edgeId("root", "team");
const start = (id: string, seed: number) =>
  heddleStatic({
    seam: net.join(id), self: ReplicaId(id), root: GroupId("root"), supply, topology,
    config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, antiEntropyIntervalMs: 100, timers, random: seededRandom(seed), store: memoryStore() },
  });
const alice = start("alice", 2);
const bob = start("bob", 3);
timers.advanceBy(10); // membership is announced through a 0 ms timer

alice.advertise(team, { targetOutstanding: 40n, maximumUsefulGrant: 40n });
alice.schedule(GroupId("root")); // delegates 40 of Alice's units down root → team: one committed delta
const work = alice.reserve(GroupId("team"), 20n); // earmarks 20 at the team, committed before it returns
if (work.ok) alice.complete(work.id, 15n); // charges 15 exactly once, then publishes the charge
bob.advertise(team, { targetOutstanding: 50n, maximumUsefulGrant: 10n });
timers.advanceBy(2_000);

const seenByBob = bob.ledger.get();
console.log("equal:", seenByBob.equals(alice.ledger.get())); // equal: true
console.log("alice at team, seen by bob:", seenByBob.holdings(GroupId("team"), ReplicaId("alice"))); // 25n
console.log("demand for the team, seen by alice:", alice.demand(team)); // { targetOutstanding: 50n, maximumUsefulGrant: 40n }
await alice.shutdown();
await bob.shutdown();
