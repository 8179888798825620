// A replica named both as a mint's holder and by a counter slot stays a replica when the mint's record is
// replaced by a greater one naming another holder. Found by the I-20 property of independent-oracle.test.ts
// (fast-check seed 885905508 at 20,000 runs): the replica's incremental index, and join's reuse of an index,
// counted the slot owner as known because a mint named it, never registered the slot, and lost the replica
// when the mint moved to "r1".
import { describe, expect, it } from "vitest";
import { EntitlementLedger, LedgerReplica } from "../src/index.ts";

const mintTo = (holder: string) => EntitlementLedger.decode(`{"format":"heddle-ledger/1","mints":[["m1",["g","${holder}","0"]]]}`);
const slot = () => EntitlementLedger.decode('{"format":"heddle-ledger/1","rollupSpent":[["e1",[["R2","1"]]]]}');
const fresh = (x: { encode(): string }) => EntitlementLedger.decode(x.encode());

describe("a slot owner that a replaced mint also named", () => {
  it("LedgerReplica: still listed after the mint moves to another holder", () => {
    const rep = new LedgerReplica(mintTo("R2"));
    rep.apply(slot());
    rep.apply(mintTo("r1")); // "r1" > "R2" in code units: the greater record wins the mint
    expect(rep.replicas()).toEqual(fresh(rep).replicas());
    expect(rep.replicas()).toEqual(["R2", "r1"]);
  });

  it("join reusing the larger side's index: still listed after the mint moves", () => {
    const big = mintTo("R2");
    big.replicas(); // build the index join may reuse
    const joined = big.join(slot());
    const rep = new LedgerReplica(joined);
    rep.apply(mintTo("r1"));
    expect(rep.replicas()).toEqual(["R2", "r1"]);
    expect(joined.join(mintTo("r1")).replicas()).toEqual(["R2", "r1"]);
  });
});
