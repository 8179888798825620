import { describe, expect, it } from "vitest";
import { MemoryNetwork, muxSeam, seededRandom, type PartitionEvent, type Seam } from "../src/index.ts";
import { LivenessMonitor, RejectionCounter, VirtualTimers } from "../src/testing.ts";

function pair() {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(2) });
  const mk = (seam: Seam) => {
    const mux = muxSeam(seam);
    const m = new LivenessMonitor({
      channel: mux.channel(3), mux, timers, config: { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 },
      rejections: new RejectionCounter(timers, 60_000, () => {}),
    });
    const events: PartitionEvent[] = [];
    m.events.subscribe((e) => events.push(e));
    return { m, events, seam };
  };
  const a = mk(net.join("a"));
  const b = mk(net.join("b"));
  timers.advanceBy(0);
  return { timers, net, a, b, mk };
}

describe("liveness (node.md §10, §16 A15)", () => {
  it("healthy peers ping each other and stay healthy", () => {
    const { timers, a, b } = pair();
    timers.advanceBy(120_000);
    expect(a.events).toEqual([]);
    expect(b.events).toEqual([]);
    expect(a.m.counters().pingsOut).toBeGreaterThan(20);
  });

  it("silent cut: unresponsive(timeout) within 20 s, lost within a further 65 s; healing alone does not revive; remonitor does", () => {
    const { timers, net, a } = pair();
    timers.advanceBy(10_000);
    net.partition([["a"], ["b"]], "silent");
    const cutAt = timers.now();
    timers.advanceBy(20_000);
    const u = a.events.find((e) => e.kind === "unresponsive");
    expect(u).toMatchObject({ kind: "unresponsive", peer: "b", reason: "timeout" });
    expect(u!.at - cutAt).toBeLessThanOrEqual(20_000);
    expect([...a.m.unreachable.get()]).toEqual(["b"]);
    timers.advanceBy(65_000);
    const lost = a.events.find((e) => e.kind === "lost");
    expect(lost).toBeDefined();
    expect(lost!.at - u!.at).toBeLessThanOrEqual(65_000);
    net.heal();
    timers.advanceBy(60_000);
    expect(a.events.filter((e) => e.kind === "recovered")).toEqual([]);
    expect(a.m.unreachable.get().has("b")).toBe(true);
    a.m.remonitor("b");
    expect(a.m.unreachable.get().has("b")).toBe(false);
    timers.advanceBy(30_000);
    expect(a.m.phases()).toEqual({ b: "healthy" });
    net.partition([["a"], ["b"]], "silent");
    timers.advanceBy(25_000);
    expect(a.events.filter((e) => e.kind === "unresponsive").length).toBe(2);
  });

  it("heal within the reconnect window recovers, on evidence received after the declaration", () => {
    const { timers, net, a } = pair();
    net.partition([["a"], ["b"]], "silent");
    timers.advanceBy(20_000);
    expect(a.events.map((e) => e.kind)).toEqual(["unresponsive"]);
    net.heal();
    timers.advanceBy(10_000);
    expect(a.events.map((e) => e.kind)).toEqual(["unresponsive", "recovered"]);
    expect(a.m.unreachable.get().size).toBe(0);
  });

  it("disconnect: unresponsive(transport-closed) at once; backpressure: unresponsive(backpressure)", () => {
    const { timers, net, a } = pair();
    net.partition([["a"], ["b"]], "disconnect");
    timers.advanceBy(1);
    expect(a.events[0]).toMatchObject({ kind: "unresponsive", peer: "b", reason: "transport-closed" });

    // Backpressure: a seam that signals it; MemoryNetwork never does, so wrap one.
    const t2 = new VirtualTimers();
    const n2 = new MemoryNetwork({ timers: t2, random: seededRandom(3) });
    const inner = n2.join("x");
    n2.join("y");
    const fns: ((p: string) => void)[] = [];
    const signalling: Seam = { ...inner, self: inner.self, maxFrameBytes: inner.maxFrameBytes, peers: inner.peers, send: (t, f) => inner.send(t, f), broadcast: (f) => inner.broadcast(f), onFrame: (fn) => inner.onFrame(fn), close: () => inner.close(), onBackpressure: (fn) => { fns.push(fn); return () => {}; } };
    const mux = muxSeam(signalling);
    const m = new LivenessMonitor({ channel: mux.channel(3), mux, timers: t2, config: { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 }, rejections: new RejectionCounter(t2, 1, () => {}) });
    const ev: PartitionEvent[] = [];
    m.events.subscribe((e) => ev.push(e));
    t2.advanceBy(1);
    for (const f of fns) f("y");
    t2.advanceBy(5_000);
    expect(ev[0]).toMatchObject({ kind: "unresponsive", peer: "y", reason: "backpressure" });
  });

  it("a member never heard from (no detector state yet) is healthy, then unresponsive(timeout) within one interval of timeoutMs after it attached", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(4) });
    const seam = net.join("x");
    net.join("y"); // joins the fabric but runs no monitor: it never answers
    const mux = muxSeam(seam);
    const m = new LivenessMonitor({ channel: mux.channel(3), mux, timers, config: { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 }, rejections: new RejectionCounter(timers, 1, () => {}) });
    const ev: PartitionEvent[] = [];
    m.events.subscribe((e) => ev.push(e));
    timers.advanceBy(1_000); // y attaches at t = 0 (the fabric's membership timer)
    expect(m.phases()).toEqual({ y: "healthy" });
    timers.advanceBy(13_000);
    expect(ev).toEqual([]);
    timers.advanceBy(7_000);
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({ kind: "unresponsive", peer: "y", reason: "timeout" });
    expect(ev[0]!.at).toBeGreaterThanOrEqual(15_000);
    expect(ev[0]!.at).toBeLessThan(20_000);
    expect(m.phases()).toEqual({ y: "unresponsive" });
    expect(m.counters().pingsOut).toBeGreaterThanOrEqual(3);
  });

  it("a disconnect of many peers at once publishes one unreachable set holding all of them, then one event each", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(5) });
    const seam = net.join("x");
    const others = Array.from({ length: 20 }, (_, i) => `p${String(i).padStart(2, "0")}`);
    for (const o of others) net.join(o);
    const mux = muxSeam(seam);
    const m = new LivenessMonitor({ channel: mux.channel(3), mux, timers, config: { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 }, rejections: new RejectionCounter(timers, 1, () => {}) });
    const published: number[] = [];
    m.unreachable.subscribe((u) => published.push(u.size));
    const seenAtEvent: boolean[] = [];
    const ev: PartitionEvent[] = [];
    m.events.subscribe((e) => {
      ev.push(e);
      seenAtEvent.push(m.unreachable.get().has(e.peer));
    });
    timers.advanceBy(1);
    net.partition([["x"]], "disconnect");
    timers.advanceBy(1);
    expect(published).toEqual([20]);
    expect(ev.map((e) => e.peer)).toEqual(others);
    expect(ev.every((e) => e.kind === "unresponsive" && e.reason === "transport-closed")).toBe(true);
    expect(seenAtEvent.every(Boolean)).toBe(true);
  });

  it("a closed transport or a backpressure signal is not undone by the next ticks: no recovered without a frame after the declaration", () => {
    // node.md §10: recovery needs evidence received after the declaration; a monitor that cleared the
    // declaration on its next tick would flap. Only the first event was checked before (issue 19).
    const { timers, net, a } = pair();
    net.partition([["a"], ["b"]], "disconnect");
    timers.advanceBy(1);
    timers.advanceBy(30_000); // six ping intervals, inside the 60 s reconnect window
    expect(a.events.map((e) => [e.kind, e.peer])).toEqual([["unresponsive", "b"]]);
    expect([...a.m.unreachable.get()]).toEqual(["b"]);

    const t2 = new VirtualTimers();
    const n2 = new MemoryNetwork({ timers: t2, random: seededRandom(3) });
    const inner = n2.join("x");
    n2.join("y"); // y runs no monitor: it sends nothing, so nothing may count as evidence
    const fns: ((p: string) => void)[] = [];
    const signalling: Seam = { ...inner, self: inner.self, maxFrameBytes: inner.maxFrameBytes, peers: inner.peers, send: (t, f) => inner.send(t, f), broadcast: (f) => inner.broadcast(f), onFrame: (fn) => inner.onFrame(fn), close: () => inner.close(), onBackpressure: (fn) => { fns.push(fn); return () => {}; } };
    const mux = muxSeam(signalling);
    const m = new LivenessMonitor({ channel: mux.channel(3), mux, timers: t2, config: { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 }, rejections: new RejectionCounter(t2, 1, () => {}) });
    const ev: PartitionEvent[] = [];
    m.events.subscribe((e) => ev.push(e));
    t2.advanceBy(1);
    for (const f of fns) f("y");
    t2.advanceBy(5_000);
    t2.advanceBy(30_000);
    expect(ev.map((e) => [e.kind, e.peer, e.kind === "unresponsive" ? e.reason : null])).toEqual([["unresponsive", "y", "backpressure"]]);
    expect(m.unreachable.get().has("y")).toBe(true);
  });

  it("subscribers that throw are counted and handed on, never let out: the seam's other listeners and the next ticks still run", () => {
    // node.md §10 (detection lasts the node's life) and §4.3 (nothing thrown through the node): before, one throw
    // left the tick without re-arming, and on a membership change it escaped into the seam's peers view.
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(6) });
    const seam = net.join("x");
    for (const o of ["y", "z"]) {
      // y and z answer pings, so a healed link has evidence of life
      const peerMux = muxSeam(net.join(o));
      new LivenessMonitor({ channel: peerMux.channel(3), mux: peerMux, timers, config: { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 }, rejections: new RejectionCounter(timers, 1, () => {}) });
    }
    const mux = muxSeam(seam);
    const handed: unknown[] = [];
    const m = new LivenessMonitor({
      channel: mux.channel(3), mux, timers, config: { intervalMs: 5_000, timeoutMs: 15_000, reconnectWindowMs: 60_000 },
      rejections: new RejectionCounter(timers, 1, () => {}), onSubscriberError: (e) => handed.push(e),
    });
    const bug = new Error("a bug in a hook");
    m.events.subscribe(() => {
      throw bug;
    });
    m.unreachable.subscribe(() => {
      throw bug;
    });
    const ev: string[] = [];
    m.events.subscribe((e) => ev.push(`${e.kind}:${e.peer}`));
    const views: number[] = [];
    seam.peers.subscribe((p) => views.push(p.size)); // the seam's listener after the monitor's
    timers.advanceBy(1);
    expect(() => net.partition([["x"], ["y", "z"]], "disconnect")).not.toThrow();
    expect(() => timers.advanceBy(1)).not.toThrow();
    expect(views).toEqual([2, 0]);
    expect(ev).toEqual(["unresponsive:y", "unresponsive:z"]);
    // one unreachable set, two events: three throws, each counted and handed on
    expect(m.counters().subscriberErrors).toBe(3);
    expect(handed).toEqual([bug, bug, bug]);
    // the ticks go on: after the heal both peers are heard again and recover
    net.heal();
    const pings = m.counters().pingsOut;
    expect(() => timers.advanceBy(10_000)).not.toThrow();
    expect(m.counters().pingsOut).toBeGreaterThan(pings);
    expect(ev.slice(2)).toEqual(["recovered:y", "recovered:z"]);
  });
});
