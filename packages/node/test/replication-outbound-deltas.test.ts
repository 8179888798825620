/**
 * The outbound delta buffer on its own (node.md §5.1 step 4, §5.5): the batch window's due time, which
 * ranges `holds` answers for (a resend is served from the buffer only when every seq of it is there), and
 * what `gc` drops. The convergence suites cannot see most of this — a resend the buffer wrongly refuses
 * falls back to a full state, a buffer never collected only grows — so it is pinned here (issue 19).
 */
import { EntitlementLedger, GroupId, MintId, ReplicaId } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import { collectionWrites } from "@heddle/seam/testing";
import { OutboundDeltas } from "../src/replication/outbound.ts";

/** A buffer holding seqs 1 … n, each with one distinct fragment list. */
function filled(n: number, maxPending = 100): { out: OutboundDeltas; frags: (readonly EntitlementLedger[])[] } {
  const out = new OutboundDeltas(maxPending);
  const frags: (readonly EntitlementLedger[])[] = [];
  for (let i = 1; i <= n; i++) {
    const f = [EntitlementLedger.EMPTY];
    frags.push(f);
    expect(out.append(f)).toBe(i);
  }
  return { out, frags };
}

const ledger = (who: string) => EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId(who), 10n]]), "n");

describe("outbound deltas: the batch window (node.md §5.1)", () => {
  it("the first staged patch fixes the due time at now + batchMs; later ones join the batch without moving it", () => {
    const out = new OutboundDeltas(10);
    expect(out.flushAt).toBe(null);
    const a = ledger("alice");
    const b = ledger("bob");
    expect(out.stage(a, 100, 7)).toBe(107);
    expect(out.flushAt).toBe(107);
    expect(out.stage(b, 105, 7)).toBe(107);
    expect(out.flushAt).toBe(107);
    expect(out.takeStaged()?.encode()).toBe(a.join(b).encode());
    expect(out.flushAt).toBe(null);
    expect(out.takeStaged()).toBe(null);
    expect(out.stage(b, 200, 0)).toBe(200);
  });
});

describe("outbound deltas: staging costs the patch, not the batch (node.md §5.1; governed.md §3.11)", () => {
  const mint = (i: number) => {
    const r = EntitlementLedger.EMPTY.mint(MintId(`mint:c:${i}`), GroupId("root"), ReplicaId(`r${i % 3}`), 1n);
    if (!r.ok) throw new Error(r.refusal.message);
    return r.patch;
  };

  it("staging the 2,001st mint of one batch writes no more map and set entries than the 201st", () => {
    // A governed replay publishes every mint of the log inside one batch window. Joining immutable values copied
    // the batch's mint map on every stage: 201 writes at 200 mints staged, 2 001 at 2 000 (work counted, not timed).
    const out = new OutboundDeltas(10);
    const patches = Array.from({ length: 2_002 }, (_, i) => mint(i));
    for (let i = 1; i <= 200; i++) out.stage(patches[i]!, 0, 5);
    const early = collectionWrites(() => out.stage(patches[201]!, 0, 5)).writes;
    for (let i = 202; i <= 2_000; i++) out.stage(patches[i]!, 0, 5);
    const late = collectionWrites(() => out.stage(patches[2_001]!, 0, 5)).writes;
    expect(late).toBeLessThanOrEqual(early);
    const batch = out.takeStaged()!;
    expect(batch.mintedTotal()).toBe(2_001n);
    expect(batch.equals(patches.slice(1).reduce((a, p) => a.join(p), EntitlementLedger.EMPTY))).toBe(true);
  });

  it("a taken batch never changes as later patches are staged, and the first staged patch is never written", () => {
    const out = new OutboundDeltas(10);
    const first = mint(1);
    const firstText = first.encode();
    out.stage(first, 0, 0);
    out.stage(mint(2), 0, 0);
    const taken = out.takeStaged()!;
    const takenText = taken.encode();
    out.stage(mint(3), 1, 0);
    out.stage(mint(4), 1, 0);
    // read back from the values' maps, not their cached text
    expect(first.beyond(EntitlementLedger.EMPTY).encode()).toBe(firstText);
    expect(taken.beyond(EntitlementLedger.EMPTY).encode()).toBe(takenText);
    expect(taken.mintedTotal()).toBe(2n);
    expect(out.takeStaged()!.mintedTotal()).toBe(2n);
  });
});

describe("outbound deltas: holds (a resend is served only whole, §5.5)", () => {
  it("holds a range exactly when every seq of it is buffered, up to the last published one", () => {
    const { out } = filled(3);
    expect(out.seq).toBe(3);
    expect(out.holds(1, 3)).toBe(true);
    expect(out.holds(3, 3)).toBe(true);
    expect(out.holds(2, 3)).toBe(true);
    expect(out.holds(1, 1)).toBe(true);
    expect(out.holds(1, 4)).toBe(false);
    expect(out.holds(4, 4)).toBe(false);
    expect(out.holds(0, 3)).toBe(false);
    expect(out.holds(0, 0)).toBe(false);
  });

  it("an empty range (from > to) is not held, even inside the buffer", () => {
    const { out } = filled(3);
    expect(out.holds(2, 1)).toBe(false);
    expect(out.holds(3, 2)).toBe(false);
    expect(out.holds(3, 1)).toBe(false);
    expect(new OutboundDeltas(10).holds(1, 0)).toBe(false);
  });

  it("the limit pushes the oldest out: a range reaching below it is no longer held", () => {
    const { out, frags } = filled(5, 3);
    expect(out.pending).toBe(3);
    expect(out.get(2)).toBe(undefined);
    expect(out.get(3)).toBe(frags[2]);
    expect(out.holds(3, 5)).toBe(true);
    expect(out.holds(2, 5)).toBe(false);
  });
});

describe("outbound deltas: gc drops exactly the seqs every peer acked (§5.5)", () => {
  it("gc(k) drops 1 … k and keeps k + 1 … seq", () => {
    const { out, frags } = filled(5);
    out.gc(2);
    expect(out.pending).toBe(3);
    expect(out.get(1)).toBe(undefined);
    expect(out.get(2)).toBe(undefined);
    expect(out.get(3)).toBe(frags[2]);
    expect(out.get(5)).toBe(frags[4]);
    expect(out.holds(3, 5)).toBe(true);
    expect(out.holds(2, 5)).toBe(false);
    out.gc(2);
    expect(out.pending).toBe(3);
    out.gc(0);
    expect(out.pending).toBe(3);
    out.gc(4);
    expect(out.pending).toBe(1);
    expect(out.get(5)).toBe(frags[4]);
    out.gc(9);
    expect(out.pending).toBe(0);
    expect(out.seq).toBe(5);
    expect(out.append([EntitlementLedger.EMPTY])).toBe(6);
    expect(out.holds(6, 6)).toBe(true);
  });
});
