/**
 * A subscriber of one of the node's own streams that throws (node.md §4.3: nothing is thrown through the node;
 * §10: liveness runs for the node's whole life). Before: the liveness timer re-armed only after its sweep
 * returned, and the sweep let a `partitionEvents` / `unreachable` subscriber's error out — one throw ended
 * pings, timeouts, `recovered` and `lost` for good, and the error escaped from the timer.
 */
import { describe, expect, it } from "vitest";
import { Cluster, forSeeds } from "./node-sim.ts";

describe("a throwing subscriber of a node's own streams", () => {
  it("one throwing partitionEvents subscriber does not stop liveness: pings go on and the healed peer is reported recovered", () => {
    forSeeds([3, 11], (seed) => {
      const c = new Cluster({ seed, supply: { a: 100n, b: 100n } });
      const a = c.n("a");
      const seen: string[] = [];
      let thrown = 0;
      a.partitionEvents.subscribe((ev) => {
        seen.push(`${ev.kind}:${ev.peer}`);
        if (thrown++ === 0) throw new Error("a bug in a logging hook");
      });
      c.net.partition([["a"], ["b"]], "silent");
      // before: the hook's error came out of the timer here
      expect(() => c.timers.advanceBy(40_000)).not.toThrow();
      expect(seen).toEqual(["unresponsive:b"]);
      const pingsBefore = a.metrics().peer.liveness.pingsOut;
      c.net.heal();
      c.timers.advanceBy(30_000);
      expect({ pingsGrew: a.metrics().peer.liveness.pingsOut > pingsBefore, seen }).toEqual({ pingsGrew: true, seen: ["unresponsive:b", "recovered:b"] });
      void c.shutdown();
    });
  });

  it("one throwing unreachable subscriber does not stop liveness either, and later subscribers still hear every change", () => {
    forSeeds([5], (seed) => {
      const c = new Cluster({ seed, supply: { a: 100n, b: 100n } });
      const a = c.n("a");
      a.unreachable.subscribe(() => {
        throw new Error("a bug in a dashboard hook");
      });
      const sets: string[][] = [];
      a.unreachable.subscribe((s) => sets.push([...s]));
      c.net.partition([["a"], ["b"]], "silent");
      expect(() => c.timers.advanceBy(40_000)).not.toThrow();
      c.net.heal();
      c.timers.advanceBy(30_000);
      expect(sets).toEqual([["b"], []]);
      expect(c.peers.get("a")!.partitions.map((e) => `${e.kind}:${e.peer}`)).toEqual(["unresponsive:b", "recovered:b"]);
      void c.shutdown();
    });
  });
});
