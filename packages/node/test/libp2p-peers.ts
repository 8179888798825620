import { AttachmentId, EntitlementLedger, GroupId, ReplicaId } from "@heddle/ledger";
import type { SeamReplica } from "./replication-sim.ts";

/**
 * One random local mutation on `peer` (delegate, release or spend within its own holdings),
 * published through replication. Returns the units spent (0 if none).
 */
export function randomMutation(peer: Pick<SeamReplica, "self" | "ledger" | "publish">, rnd: () => number): bigint {
  const l = peer.ledger.get();
  const self = ReplicaId(peer.self);
  const edges = ["e1", "e2", "e3", "e4"];
  const e = AttachmentId(edges[Math.floor(rnd() * edges.length)]!);
  const rec = l.record(e)!;
  const op = rnd();
  if (op < 0.5) {
    const h = l.holdings(rec.parent, self);
    if (h <= 0n) return 0n;
    const r = l.delegate(self, e, 1n + BigInt(Math.floor(rnd() * Number(h < 20n ? h : 20n))));
    if (r.ok) peer.publish(r.patch);
    return 0n;
  }
  if (op < 0.6) {
    const h = l.holdings(rec.child, self);
    if (h <= 0n) return 0n;
    const r = l.release(self, e, 1n);
    if (r.ok) peer.publish(r.patch);
    return 0n;
  }
  const leaf = GroupId(["g2", "g3", "g4"][Math.floor(rnd() * 3)]!);
  const h = l.holdings(leaf, self);
  if (h <= 0n) return 0n;
  const amount = 1n + BigInt(Math.floor(rnd() * Number(h < 5n ? h : 5n)));
  const r = l.spend(self, leaf, amount);
  if (!r.ok) return 0n;
  peer.publish(r.patch);
  return amount;
}

/** Σ holdings + leaf spend = minted (ledger.md §6.4). */
export function conserved(l: EntitlementLedger): boolean {
  let sum = 0n;
  for (const g of [...new Set([...l.groups(), ...l.roots()])].sort()) for (const r of l.replicas()) sum += l.holdings(g, r);
  return l.mintedTotal() === sum + l.leafSpentTotal();
}
