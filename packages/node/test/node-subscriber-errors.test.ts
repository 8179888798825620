/**
 * A subscriber of one of the node's own streams that throws (node.md §4.3: nothing is thrown through the node;
 * §10: liveness runs for the node's whole life). Before: the liveness timer re-armed only after its sweep
 * returned, and the sweep let a `partitionEvents` / `unreachable` subscriber's error out — one throw ended
 * pings, timeouts, `recovered` and `lost` for good, and the error escaped from the timer.
 */
import { describe, expect, it } from "vitest";
import { Cluster, forSeeds, g, HUNGRY, e } from "./node-sim.ts";

describe("a throwing subscriber of a node's own streams", () => {
  it("one throwing partitionEvents subscriber does not stop liveness: pings go on and the healed peer is reported recovered", () => {
    forSeeds([3, 11], (seed) => {
      const c = new Cluster({ seed, supply: { a: 100n, b: 100n } });
      const a = c.n("a");
      const seen: string[] = [];
      let thrown = 0;
      const bug = new Error("a bug in a logging hook");
      a.partitionEvents.subscribe((ev) => {
        seen.push(`${ev.kind}:${ev.peer}`);
        if (thrown++ === 0) throw bug;
      });
      c.net.partition([["a"], ["b"]], "silent");
      // before: the hook's error came out of the timer here
      expect(() => c.timers.advanceBy(40_000)).not.toThrow();
      expect(seen).toEqual(["unresponsive:b"]);
      const pingsBefore = a.metrics().peer.liveness.pingsOut;
      c.net.heal();
      c.timers.advanceBy(30_000);
      expect({ pingsGrew: a.metrics().peer.liveness.pingsOut > pingsBefore, seen }).toEqual({ pingsGrew: true, seen: ["unresponsive:b", "recovered:b"] });
      // counted, and reported once as an internal-error event
      expect(a.metrics()).toMatchObject({ subscriberErrors: 1, peer: { liveness: { subscriberErrors: 1 } } });
      expect(c.peers.get("a")!.events.filter((ev) => ev.kind === "internal-error")).toEqual([{ kind: "internal-error", where: "partition-subscriber", error: bug }]);
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

  it("an events subscriber that throws reaches neither the API call nor the frame handler; the others still hear every event", () => {
    forSeeds([7], (seed) => {
      const c = new Cluster({ seed, supply: { a: 100n, b: 100n } });
      const a = c.n("a");
      const bug = new Error("a bug in an events hook");
      a.events.subscribe((ev) => {
        if (ev.kind === "schedule" || ev.kind === "frame-rejected") throw bug;
      });
      const later: string[] = [];
      a.events.subscribe((ev) => later.push(ev.kind));
      a.advertise(e("e1"), HUNGRY);
      c.timers.advanceBy(1_000);
      // before: schedule() threw the hook's error after it had committed and published the grants
      const r = a.schedule(g("root"));
      expect(r.grants.length).toBeGreaterThan(0);
      expect(later).toContain("schedule");
      c.settle();
      expect(c.n("b").ledger.get().encode()).toBe(a.ledger.get().encode());
      // a frame a rejects: its frame-rejected event comes from inside the seam's delivery
      const rejectedBefore = a.metrics().framesRejected["bad-version"];
      c.peers.get("b")!.seam.send("a", new Uint8Array([1, 0x7b])); // ledger channel, then a byte that is no wire version
      expect(() => c.timers.advanceBy(1_000)).not.toThrow();
      expect(a.metrics().framesRejected["bad-version"]).toBe(rejectedBefore + 1);
      expect(later).toContain("frame-rejected");
      // two throws, one report: the internal-error event names the stream
      expect(a.metrics().subscriberErrors).toBe(2);
      expect(later.filter((k) => k === "internal-error")).toEqual(["internal-error"]);
      expect(c.peers.get("a")!.events.find((ev) => ev.kind === "internal-error")).toEqual({ kind: "internal-error", where: "events-subscriber", error: bug });
      void c.shutdown();
    });
  });
});
