// A schedule round that throws part-way (here: weights whose sums leave int64) leaves the node as it was:
// its ledger transaction is rolled back, so reads, other parents' rounds, reservations and later rounds
// work (found in review: the open transaction failed every later ledger read — the whole daemon 500'd).
import { describe, expect, it } from "vitest";
import { Cluster, e, g, HUNGRY, r, rec } from "./node-sim.ts";

describe("schedule() that throws", () => {
  it("rolls its transaction back: the ledger, other parents and reservations keep working", async () => {
    const huge = 1n << 62n;
    const c = new Cluster({
      seed: 31,
      supply: { a: 1_000n },
      topology: [rec("ea", "root", "ga", huge), rec("eb", "root", "gb", huge), rec("ec", "root", "gc"), rec("eh", "root", "home"), rec("eleaf", "home", "leaf")],
    });
    const a = c.n("a");
    // a second tree level that plans in range: home → leaf
    for (const x of ["ea", "eb", "ec", "eh", "eleaf"]) a.advertise(e(x), HUNGRY);
    const before = a.ledger.get().encode();
    let thrown: unknown = null;
    try {
      a.schedule(g("root"));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(Error);
    // nothing of the failed round stayed, and the ledger is readable
    expect(a.ledger.get().encode()).toBe(before);
    expect(a.ledger.get().validate()).toEqual([]);
    expect(a.boundMetrics(g("home")).parent).toBe("home");
    // the same round fails the same way again (no half-applied state in between)
    expect(() => a.schedule(g("root"))).toThrow((thrown as Error).constructor as new () => Error);
    expect(a.ledger.get().encode()).toBe(before);
    // other parents still schedule (nothing to grant at home: it holds nothing yet) and reads still work
    expect(a.schedule(g("home")).grants).toEqual([]);
    expect(a.available(g("leaf"))).toBe(0n);
    expect(a.reserve(g("leaf"), 1n)).toMatchObject({ ok: false });
    expect(r("a")).toBe("a");
    await c.shutdown();
  });
});
