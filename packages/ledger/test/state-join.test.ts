// Mutation survivors of the slot-by-slot join (`joinInto`, state.ts) that round 3 did not reach (issue 19): a
// replica named only by a transfer row — a new donor, or a new recipient in a donor row already held — must
// join the replica list that `retire`'s drain check walks, and merging a mint, a transfer slot or a gauge that
// adds nothing must report no change. Each case is checked on the mutable replica (which keeps its index
// in step through the join observer) and on the immutable ledger, against a ledger decoded from the
// joined text (which builds its index from scratch). Fixtures are built inside each test.
import { describe, expect, it } from "vitest";
import { EntitlementLedger, LedgerReplica } from "../src/index.ts";

const L = (body: string) => EntitlementLedger.decode(`{"format":"heddle-ledger/1",${body}}`);
/** `a` already names d (a counter slot) and x1 (a transfer row d → x1 on edge e1). */
const base = () => L('"issued":[["e1",[["d","9"]]]],"transfers":[["e1",[["d",[["x1","2"]]]]]]');
/** A new donor row: n gives to y on e1; neither is named anywhere else. */
const newDonorRow = () => L('"transfers":[["e1",[["n",[["y","1"]]]]]]');
/** The donor row d already held, with a new recipient x2 beside x1. */
const newRecipient = () => L('"transfers":[["e1",[["d",[["x1","2"],["x2","3"]]]]]]');

/** The replica list a ledger built from scratch out of `l`'s text holds. */
const rebuilt = (l: EntitlementLedger) => EntitlementLedger.decode(l.encode()).replicas();

describe("a replica named only by a transfer row is a replica", () => {
  it("a new donor row's donor and recipient join replicas() (replica and immutable join)", () => {
    const rep = new LedgerReplica();
    rep.merge(base());
    expect(rep.replicas()).toEqual(["d", "x1"]);
    expect(rep.merge(newDonorRow())).not.toBeNull();
    expect(rep.replicas()).toEqual(["d", "n", "x1", "y"]);
    expect(rep.snapshot().replicas()).toEqual(["d", "n", "x1", "y"]);

    const joined = base().join(newDonorRow());
    expect(joined.replicas()).toEqual(["d", "n", "x1", "y"]);
    expect(joined.replicas()).toEqual(rebuilt(joined));
  });

  it("a new recipient in a donor row already held joins replicas() (replica and immutable join)", () => {
    const rep = new LedgerReplica();
    rep.merge(base());
    const eff = rep.merge(newRecipient());
    expect(eff).not.toBeNull();
    expect(eff!.encode()).toBe(L('"transfers":[["e1",[["d",[["x2","3"]]]]]]').encode());
    expect(rep.replicas()).toEqual(["d", "x1", "x2"]);

    const joined = base().join(newRecipient());
    expect(joined.replicas()).toEqual(["d", "x1", "x2"]);
    expect(joined.replicas()).toEqual(rebuilt(joined));
  });

  it("retire sees the recipient's position: an edge is not drained while a transfer-only recipient holds on it", () => {
    // The drain check walks replicas(); a recipient missing from it would let an undrained edge retire.
    const rep = new LedgerReplica();
    rep.merge(L('"records":[["e1",[["root","a","1","1"]]]],"lifecycle":[["e1","CLOSING"]],"transfers":[["e1",[["d",[["x1","2"]]]]]]'));
    rep.merge(L('"transfers":[["e1",[["d",[["x1","2"],["x2","3"]]]]]]'));
    const r = rep.retire("e1" as never);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.refusal.kind).toBe("NotDrained");
      expect(Object.keys(r.refusal.detail ?? {})).toContain("x2");
    }
  });
});

describe("a join that adds nothing reports no change", () => {
  it("an equal transfer slot merged again: null, no change counted", () => {
    const rep = new LedgerReplica();
    expect(rep.merge(base())).not.toBeNull();
    const changes = rep.changes;
    expect(rep.merge(base())).toBeNull();
    expect(rep.merge(L('"transfers":[["e1",[["d",[["x1","1"]]]]]]'))).toBeNull(); // a lower value adds nothing either
    expect(rep.changes).toBe(changes);
  });

  it("an equal mint merged again: null, no change counted", () => {
    const mintText = '"mints":[["[\\"root\\",\\"genesis\\",\\"alice\\"]",["root","alice","100"]]]';
    const rep = new LedgerReplica();
    expect(rep.merge(L(mintText))).not.toBeNull();
    const changes = rep.changes;
    expect(rep.merge(L(mintText))).toBeNull();
    expect(rep.changes).toBe(changes);
    expect(rep.encode()).toBe(L(mintText).encode());
  });

  it("an equal gauge merged again (a fresh, equal value): null, no change counted, same snapshot", () => {
    const gauge = '"gauges":[["e1",["3","2","5"]]]';
    const rep = new LedgerReplica();
    expect(rep.merge(L(gauge))).not.toBeNull();
    const changes = rep.changes;
    const snap = rep.snapshot();
    expect(rep.merge(L(gauge))).toBeNull();
    expect(rep.changes).toBe(changes);
    expect(rep.snapshot()).toBe(snap);
  });
});
