import { describe, expect, it } from "vitest";
import { Cluster, HUNGRY, e, forSeeds, g, r, seedList } from "./node-sim.ts";

// node.md §9.3 persists inbound values "with the next commit or at the anti-entropy tick"; an orderly
// shutdown() reaches neither, so it commits them itself (review s28, finding 4).
describe("shutdown() commits the inbound values merged since the last commit", () => {
  forSeeds(seedList(5, 9), (seed) => {
    it(`seed ${seed}: a node restarted after an orderly stop reads what it had merged, with its peer gone`, async () => {
      const c = new Cluster({ seed, supply: { a: 100n, b: 100n }, config: { antiEntropyIntervalMs: 5_000 } });
      c.timers.advanceBy(6_000); // past a's first tick: nothing is waiting to be committed
      c.n("b").advertise(e("e1"), HUNGRY);
      expect(c.n("b").schedule(g("root")).grants.reduce((s, x) => s + x.amount, 0n)).toBe(100n);
      c.timers.advanceBy(50); // a joins b's delta, before its next tick
      expect(c.n("a").ledger.get().holdings(g("root"), r("b"))).toBe(0n);
      await c.n("a").shutdown();
      // b goes away, so the restarted a can only know b's grant from its own store
      c.crash("b");
      c.peers.get("a")!.alive = false;
      c.net.crash("a", "silent");
      c.restart("a");
      expect(c.n("a").ledger.get().holdings(g("root"), r("b")), `seed ${seed}`).toBe(0n);
      await c.shutdown();
    });
  });

  it("a crashed node (the simulation's kill) still loses them: the harness models a dead process, not a stop", async () => {
    const c = new Cluster({ seed: 3, supply: { a: 100n, b: 100n }, config: { antiEntropyIntervalMs: 5_000 } });
    c.timers.advanceBy(6_000);
    c.n("b").advertise(e("e1"), HUNGRY);
    c.n("b").schedule(g("root"));
    c.timers.advanceBy(50);
    expect(c.n("a").ledger.get().holdings(g("root"), r("b"))).toBe(0n);
    c.crash("a");
    c.crash("b");
    c.restart("a");
    expect(c.n("a").ledger.get().holdings(g("root"), r("b"))).toBe(100n);
    await c.shutdown();
  });
});
