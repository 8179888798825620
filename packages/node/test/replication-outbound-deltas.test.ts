/**
 * The outbound delta buffer on its own (node.md §5.1 step 4, §5.5): the batch window's due time, which
 * ranges `holds` answers for (a resend is served from the buffer only when every seq of it is there), and
 * what `gc` drops. The convergence suites cannot see most of this — a resend the buffer wrongly refuses
 * falls back to a full state, a buffer never collected only grows — so it is pinned here (issue 19).
 */
import { EntitlementLedger, GroupId, ReplicaId } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
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
