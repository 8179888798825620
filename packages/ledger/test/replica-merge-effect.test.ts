// Mutation survivor of LedgerReplica (issue 19, eighteenth session): `merge` hands back its effect as a ledger
// that shares the effect builder's state, so the builder must be let go when `merge` returns (replica.ts, the
// `finally` of `merge`). Kept, it would record every later `apply` into the patch the caller already holds —
// a patch being gossiped or journaled would change under the caller. Round 3 counted this mutant killed by
// replica-merge-and-rollback's tests; Stryker's complete run of 2026-12-03 showed it surviving, and a plant
// confirmed it.
import { describe, expect, it } from "vitest";
import { EntitlementLedger, LedgerReplica } from "../src/index.ts";

const L = (body: string) => EntitlementLedger.decode(`{"format":"heddle-ledger/1",${body}}`);

describe("LedgerReplica.merge's effect", () => {
  it("does not change when the replica later applies or joins other updates", () => {
    const rep = new LedgerReplica();
    const first = L('"rollupSpent":[["e1",[["R1","1"]]]]');
    const eff = rep.merge(first);
    expect(eff).not.toBeNull();
    const text = eff!.encode();
    expect(text).toBe(first.encode());
    // a later apply raises the same slot and adds a new one; neither may reach the effect handed back above
    rep.apply(L('"rollupSpent":[["e1",[["R1","4"],["R2","2"]]]],"records":[["e1",[["root","a","1","1"]]]]'));
    expect(eff!.encode()).toBe(text);
    expect(eff!.digest()).toBe(first.digest());
    // and a transaction's writes, kept or rolled back, leave it alone too
    const tx = rep.begin();
    rep.apply(L('"rollupSpent":[["e2",[["R3","7"]]]]'));
    tx.rollback();
    expect(eff!.encode()).toBe(text);
  });
});
