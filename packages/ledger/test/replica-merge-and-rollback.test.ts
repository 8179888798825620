// Mutation survivors of LedgerReplica (issue 19, round 3, helper J): `merge` must join and report only
// real changes, a records-only join counts as a change, rollback restores slots written in place in maps
// the replica already owned (overwritten and new keys), and a snapshot keeps its value when the replica
// later adds a key to a component it had copied before. Fixtures are built inside each test.
import { describe, expect, it } from "vitest";
import { EntitlementLedger, LedgerReplica } from "../src/index.ts";

const L = (body: string) => EntitlementLedger.decode(`{"format":"heddle-ledger/1",${body}}`);
const slotA = () => L('"rollupSpent":[["e1",[["R1","1"]]]]');
// raises e1/R1 (an existing slot), adds e1/R2 (a new key of an inner map) and e2 (a new key of the outer map)
const slotB = () => L('"rollupSpent":[["e1",[["R1","2"],["R2","5"]]],["e2",[["R1","3"]]]]');
const slotAB = () => L('"rollupSpent":[["e1",[["R1","2"],["R2","5"]]],["e2",[["R1","3"]]]]');
const recordOnly = () => L('"records":[["e1",[["root","a","1","1"]]]]');

describe("LedgerReplica.merge", () => {
  it("joins the patch, returns what it raised, and returns null (no change counted) for a repeat", () => {
    const rep = new LedgerReplica();
    const p = slotA();
    const eff = rep.merge(p);
    expect(eff).not.toBeNull();
    expect(eff!.encode()).toBe(p.encode());
    expect(rep.encode()).toBe(p.encode());
    expect(rep.changes).toBe(1);
    const snap = rep.snapshot();
    expect(rep.merge(slotA())).toBeNull(); // nothing raised: not a change
    expect(rep.changes).toBe(1);
    expect(rep.snapshot()).toBe(snap); // the unchanged replica hands back the same snapshot
  });
});

describe("a join that changes only records", () => {
  it("counts as a change, invalidates the snapshot and is merge's effect", () => {
    const rep = new LedgerReplica();
    const s0 = rep.snapshot();
    const p = recordOnly();
    const eff = rep.merge(p);
    expect(eff).not.toBeNull();
    expect(eff!.encode()).toBe(p.encode());
    expect(rep.changes).toBe(1);
    const s1 = rep.snapshot();
    expect(s1).not.toBe(s0);
    expect(s1.encode()).toBe(p.encode());
    // the same records again (a fresh, equal array) add nothing: no change, no effect, same snapshot
    expect(rep.merge(recordOnly())).toBeNull();
    expect(rep.changes).toBe(1);
    expect(rep.snapshot()).toBe(s1);
  });
});

describe("LedgerTransaction.rollback on maps the replica already owns", () => {
  it("restores overwritten slots and deletes added keys (inner and outer maps), digest and change count", () => {
    const rep = new LedgerReplica();
    rep.apply(slotA()); // the replica now owns rollupSpent and its e1 map: the transaction writes them in place
    const tx = rep.begin();
    rep.apply(slotB());
    expect(rep.changes).toBe(2);
    tx.rollback();
    const want = slotA();
    expect(rep.digest()).toBe(want.digest());
    expect(rep.changes).toBe(1);
    expect(rep.encode()).toBe(want.encode());
    expect(rep.snapshot().equals(want)).toBe(true);
  });
});

describe("LedgerReplica.snapshot", () => {
  it("keeps its value when the replica then adds a key to a component it had already copied", () => {
    const rep = new LedgerReplica();
    rep.apply(slotA()); // rollupSpent is copied (owned) here
    const s1 = rep.snapshot();
    rep.apply(slotB()); // adds e2 to rollupSpent's outer map and R2 to e1's map
    expect(s1.encode()).toBe(slotA().encode());
    expect(s1.equals(slotA())).toBe(true);
    expect(rep.encode()).toBe(slotAB().encode());
  });
});

describe("LedgerTransaction", () => {
  it("patch() is null before any apply; a second commit is refused with its message", () => {
    const rep = new LedgerReplica();
    const tx = rep.begin();
    expect(tx.patch()).toBeNull();
    tx.commit();
    expect(() => tx.commit()).toThrow(new Error("LedgerReplica: transaction already finished"));
    expect(() => tx.rollback()).toThrow(new Error("LedgerReplica: transaction already finished"));
  });
});
