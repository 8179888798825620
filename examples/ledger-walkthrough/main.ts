// Two replicas of one entitlement ledger, cut apart and merged again.
//
// root → tenant-a (weight 3) → { interactive (3), batch (1) }
//      → tenant-b (weight 1)
//
// Replica "east" and replica "west" each hold half of the minted supply. They delegate,
// transfer and spend; then the network between them is cut and both keep spending, each
// checking only its own copy; then they exchange states and converge. After every step the
// walkthrough prints holdings and checks the conservation identity (ledger.md §6.4):
//   minted = Σ holdings + Σ leaf spent.
import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import type { MutationResult } from "@heddle/ledger";

const G = {
  root: GroupId("root"),
  a: GroupId("tenant-a"),
  b: GroupId("tenant-b"),
  ai: GroupId("interactive"),
  ab: GroupId("batch"),
};
const E = {
  a: AttachmentId("root→tenant-a"),
  b: AttachmentId("root→tenant-b"),
  ai: AttachmentId("tenant-a→interactive"),
  ab: AttachmentId("tenant-a→batch"),
};
const east = ReplicaId("east");
const west = ReplicaId("west");
const groups = [G.root, G.a, G.ai, G.ab, G.b];

let failures = 0;

function apply(view: EntitlementLedger, what: string, res: MutationResult): EntitlementLedger {
  if (!res.ok) {
    console.log(`  ✗ ${what}: refused (${res.refusal.kind}: ${res.refusal.message})`);
    return view;
  }
  console.log(`  ✓ ${what}`);
  return view.join(res.patch);
}

function conservation(view: EntitlementLedger): { minted: bigint; held: bigint; spent: bigint; ok: boolean } {
  let held = 0n;
  for (const g of view.groups()) for (const r of view.replicas()) held += view.holdings(g, r);
  const minted = view.mintedTotal();
  const spent = view.leafSpentTotal();
  return { minted, held, spent, ok: minted === held + spent };
}

function show(title: string, view: EntitlementLedger): void {
  console.log(`\n${title}`);
  const pad = (s: string, n: number) => s.padEnd(n);
  console.log(`  ${pad("group", 13)}${pad("east", 8)}${pad("west", 8)}`);
  for (const g of groups) {
    console.log(`  ${pad(g, 13)}${pad(String(view.holdings(g, east)), 8)}${pad(String(view.holdings(g, west)), 8)}`);
  }
  const c = conservation(view);
  console.log(`  conservation: minted ${c.minted} = held ${c.held} + spent ${c.spent}  ${c.ok ? "✓" : "✗ VIOLATED"}`);
  if (!c.ok) failures++;
  for (const g of groups) {
    for (const r of [east, west]) {
      if (view.holdings(g, r) < 0n) {
        console.log(`  ✗ ${r} holds ${view.holdings(g, r)} at ${g}`);
        failures++;
      }
    }
  }
}

// 1. Genesis: both replicas start from the same mint and the same topology.
let base = EntitlementLedger.bootstrap(G.root, new Map([[east, 1000n], [west, 1000n]]), "genesis");
for (const [id, parent, child, w] of [
  [E.a, G.root, G.a, 3n],
  [E.b, G.root, G.b, 1n],
  [E.ai, G.a, G.ai, 3n],
  [E.ab, G.a, G.ab, 1n],
] as const) {
  base = apply(base, `prepare ${id} (weight ${w})`, base.prepare({ id, parent, child, weight: Weight.of(w) }));
  base = apply(base, `activate ${id}`, base.activate(id));
}
show("1. genesis: 2000 minted, 1000 held by each replica at the root", base);

// 2. Connected: each replica delegates down its own share and spends at the leaves.
let e = base;
let w = base;
e = apply(e, "east delegates 600 to tenant-a", e.delegate(east, E.a, 600n));
e = apply(e, "east delegates 450 of it to interactive", e.delegate(east, E.ai, 450n));
e = apply(e, "east delegates 150 of it to batch", e.delegate(east, E.ab, 150n));
w = apply(w, "west delegates 200 to tenant-b", w.delegate(west, E.b, 200n));
w = apply(w, "west delegates 300 to tenant-a", w.delegate(west, E.a, 300n));
w = apply(w, "west delegates 300 of it to interactive", w.delegate(west, E.ai, 300n));
// Exchange full states: both now see everything.
e = e.join(w);
w = w.join(e);
e = apply(e, "east hands 100 of its interactive holdings to west", e.transfer(G.ai, east, west, 100n));
w = w.join(e);
w = apply(w, "west spends 250 at interactive", w.spend(west, G.ai, 250n));
e = e.join(w);
show("2. connected: both replicas agree", e);
console.log(`  replicas equal: ${e.equals(w) ? "✓" : "✗"}`);

// 3. Partition: no messages cross. Each keeps spending, checked only against its own copy.
console.log("\n3. partition: east and west cannot reach each other");
e = apply(e, "east spends 300 at interactive", e.spend(east, G.ai, 300n));
e = apply(e, "east spends 150 at batch", e.spend(east, G.ab, 150n));
e = apply(e, "east tries to spend 1 more at batch (it holds none there)", e.spend(east, G.ab, 1n));
w = apply(w, "west spends 150 at interactive", w.spend(west, G.ai, 150n));
w = apply(w, "west spends 200 at tenant-b", w.spend(west, G.b, 200n));
w = apply(w, "west tries to spend east's holdings (west holds 0 at batch)", w.spend(west, G.ab, 10n));
show("   east's view", e);
show("   west's view", w);

// 4. Heal: exchange states in both directions. Join is commutative, so both converge.
const merged = e.join(w);
const mergedOther = w.join(e);
show("4. healed: both replicas joined", merged);
console.log(`  replicas equal after merge: ${merged.equals(mergedOther) ? "✓" : "✗"}`);
console.log(`  identical encodings: ${merged.encode() === mergedOther.encode() ? "✓" : "✗"}`);
if (!merged.equals(mergedOther)) failures++;

// 5. The integrity report: validate() lists every conflict; an honest run has none.
const conflicts = merged.validate();
console.log("\n5. integrity report");
console.log(`  conflicts: ${conflicts.length === 0 ? "none ✓" : JSON.stringify(conflicts, (_, v) => (typeof v === "bigint" ? v.toString() : v))}`);
for (const id of [E.a, E.b, E.ai, E.ab]) {
  const s = merged.edge(id)!;
  console.log(`  ${id.padEnd(22)} issued ${s.issued}  returned ${s.returned}  spent ${s.spent}  outstanding ${s.outstanding}`);
}
if (conflicts.length !== 0) failures++;
console.log(`\n${failures === 0 ? "walkthrough complete: the books balance" : `walkthrough FAILED: ${failures} check(s)`}`);
process.exitCode = failures === 0 ? 0 : 1;
