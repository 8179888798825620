// The example that opens README.md, kept identical by test/impl-readme.test.ts.
import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";

const alice = ReplicaId("alice");
const bob = ReplicaId("bob");
const [root, team] = [GroupId("root"), GroupId("team")];
const edge = AttachmentId("root→team");

// Mint 100 units to alice at the root, then create and activate an edge root→team.
let view = EntitlementLedger.bootstrap(root, new Map([[alice, 100n]]), "genesis");
for (const step of [
  (v: EntitlementLedger) => v.prepare({ id: edge, parent: root, child: team, weight: Weight.of(3n) }),
  (v: EntitlementLedger) => v.activate(edge),
  (v: EntitlementLedger) => v.delegate(alice, edge, 60n), // parent → child
  (v: EntitlementLedger) => v.transfer(team, alice, bob, 10n), // alice → bob, same group
  (v: EntitlementLedger) => v.spend(bob, team, 4n), // consume at the leaf
]) {
  const res = step(view);
  if (!res.ok) throw new Error(res.refusal.kind);
  view = view.join(res.patch); // thread every patch into the next view
}

console.log(view.holdings(root, alice), view.holdings(team, alice), view.holdings(team, bob)); // 40n 50n 6n
console.log(view.spend(bob, team, 7n).ok); // false: bob holds 6 — refused, view unchanged

// Another replica that sees the same patches in another order, with repeats, converges.
const copy = EntitlementLedger.decode(view.encode());
console.log(copy.join(view).equals(view), view.validate()); // true []
