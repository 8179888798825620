// Cost of joining a typical inbound delta at ~10,000 edges (node.md §5): `step()` of one delta frame through a
// ReplicationCore whose replica holds 100 × 100 leaves under a root, 10 replicas with entitlement on every edge.
// Run: node packages/node/bench/join-check-bench.ts
import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, ReplicaId, Weight } from "@heddle/ledger";
import { REPLICATION_DEFAULTS } from "../src/replication/config.ts";
import { ReplicationCore } from "../src/replication/core.ts";

const R = Array.from({ length: 10 }, (_, i) => ReplicaId(`r${i}`));
const MID = 100, LEAF = 100;
const g = EntitlementLedger.bootstrap(GroupId("root"), new Map(R.map((r) => [r, 1n << 40n])), "bench");
const rep = new LedgerReplica(g);
const ok = (x: { ok: boolean }) => { if (!x.ok) throw new Error(JSON.stringify(x)); };
for (let m = 0; m < MID; m++) {
  ok(rep.prepare({ id: AttachmentId(`m${m}`), parent: GroupId("root"), child: GroupId(`M${m}`), weight: Weight.of(1n) }));
  ok(rep.activate(AttachmentId(`m${m}`)));
  for (const r of R) ok(rep.delegate(r, AttachmentId(`m${m}`), 1n << 30n));
  for (let l = 0; l < LEAF; l++) {
    const e = AttachmentId(`m${m}l${l}`);
    ok(rep.prepare({ id: e, parent: GroupId(`M${m}`), child: GroupId(`L${m}.${l}`), weight: Weight.of(1n) }));
    ok(rep.activate(e));
    for (const r of R) ok(rep.delegate(r, e, 1n << 20n));
    for (const r of R) ok(rep.spend(r, GroupId(`L${m}.${l}`), 1n));
  }
}
const state = rep.snapshot();
const t0 = performance.now();
const core = new ReplicationCore({ self: "r0", incarnation: 1, replica: new LedgerReplica(state), genesis: g, config: { ...REPLICATION_DEFAULTS, antiEntropy: false }, random: () => 0, now: 0, restarted: false, valueBudget: 1 << 20 });
const boot = performance.now() - t0;
// A typical delta (every leaf-spent slot is already 1: the ledger-wide Σ leafSpent has 100,000 terms): another replica's spend at one leaf (leafSpent on the leaf edge, rollupSpent above it).
const N = 3000;
const deltas: EntitlementLedger[] = [];
for (let i = 0; i < N; i++) {
  const m = i % MID, l = (i * 7) % LEAF, who = R[1 + (i % 9)]!;
  deltas.push(EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", leafSpent: [[`m${m}l${l}`, [[who, String(2 + Math.floor(i / 100))]]]], rollupSpent: [[`m${m}`, [[who, String(1 + Math.floor(i / 100))]]]] })));
}
let t = performance.now();
for (let i = 0; i < N; i++) {
  const r = core.step("r1", { kind: "delta", inc: 1, seq: i + 1, part: 0, parts: 1, value: deltas[i]!, ack: null }, i);
  if (r === "bad-value") throw new Error("refused");
  core.ready();
}
const per = (performance.now() - t) / N;
t = performance.now();
for (let i = 0; i < 20; i++) state.leafSpentTotal();
const lst = (performance.now() - t) / 20;
t = performance.now();
state.validate();
const val = performance.now() - t;
console.log(`edges ${state.knownEdges().length}, replicas ${R.length}: join of a typical delta ${(per * 1000).toFixed(1)} µs; full leafSpentTotal() ${(lst * 1000).toFixed(0)} µs; full validate() ${val.toFixed(1)} ms; core construction ${boot.toFixed(1)} ms; metrics ${JSON.stringify(core.metrics().valueOverflows)}`);
