import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryNetwork, seededRandom, type LinkFaults, type Seam } from "../src/index.ts";
import { VirtualTimers } from "../src/testing.ts";

const b = (s: string) => new TextEncoder().encode(s);
const t = (u: Uint8Array) => new TextDecoder().decode(u);

function mesh(n: number, seed: number, faults?: LinkFaults) {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(seed), ...(faults ? { faults } : {}) });
  const seams = Array.from({ length: n }, (_, i) => net.join(`p${i}`));
  const log: string[] = [];
  seams.forEach((s) => s.onFrame((from, f) => log.push(`${timers.now()} ${from}->${s.self} ${t(f)}`)));
  timers.advanceBy(0);
  return { timers, net, seams, log };
}

describe("MemoryNetwork", () => {
  it("one seed reproduces one run exactly; faults drop, duplicate and reorder", () => {
    const faults: LinkFaults = { dropRate: 0.2, duplicateRate: 0.3, delayMs: [0, 200] };
    const run = (seed: number) => {
      const m = mesh(3, seed, faults);
      for (let i = 0; i < 200; i++) m.seams[i % 3]!.broadcast(b(`m${i}`));
      m.timers.advanceBy(1000);
      return { log: m.log, stats: m.net.stats() };
    };
    const r1 = run(42);
    expect(run(42)).toEqual(r1);
    expect(run(43).log).not.toEqual(r1.log);
    expect(r1.stats.sent).toBe(400);
    expect(r1.stats.dropped).toBeGreaterThan(40);
    expect(r1.stats.duplicated).toBeGreaterThan(40);
    expect(r1.stats.delivered).toBe(r1.stats.sent - r1.stats.dropped + r1.stats.duplicated);
    // reordering: p1 received p0's frames out of send order at least once
    const fromP0 = r1.log.filter((l) => l.includes("p0->p1")).map((l) => Number(l.split(" m")[1]));
    expect(fromP0.some((v, i) => i > 0 && v < fromP0[i - 1]!)).toBe(true);
  });

  it("delivery count matches the drawn faults for any seed (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e6 }), fc.double({ min: 0, max: 1, noNaN: true }), (seed, rate) => {
        const m = mesh(2, seed, { dropRate: rate, duplicateRate: rate / 2, delayMs: [0, 50] });
        for (let i = 0; i < 50; i++) m.seams[0]!.send("p1", b(`x${i}`));
        m.timers.advanceBy(100);
        const s = m.net.stats();
        expect(m.log.length).toBe(s.sent - s.dropped + s.duplicated);
        // a frame is delivered at most twice
        const counts = new Map<string, number>();
        for (const l of m.log) counts.set(l.split(" ").pop()!, (counts.get(l.split(" ").pop()!) ?? 0) + 1);
        for (const c of counts.values()) expect(c).toBeLessThanOrEqual(2);
      }),
      { numRuns: 100 },
    );
  });

  it("silent partitions black-hole frames but keep membership; disconnect removes members; heal restores", () => {
    const m = mesh(3, 1);
    const [a, , c] = m.seams as [Seam, Seam, Seam];
    m.net.partition([["p0", "p1"]], "silent");
    m.timers.advanceBy(0);
    expect(a.peers.get().has("p2")).toBe(true);
    expect(a.send("p2", b("lost"))).toBe("queued");
    a.send("p1", b("kept"));
    m.timers.advanceBy(10);
    expect(m.log.map((l) => l.split(" ").slice(1).join(" "))).toEqual(["p0->p1 kept"]);
    m.net.partition([["p0", "p1"]], "disconnect");
    m.timers.advanceBy(0);
    expect([...a.peers.get()]).toEqual(["p1"]);
    expect([...c.peers.get()]).toEqual([]);
    expect(a.send("p2", b("x"))).toBe("not-connected");
    m.net.heal();
    m.timers.advanceBy(0);
    expect([...c.peers.get()].sort()).toEqual(["p0", "p1"]);
    c.send("p0", b("back"));
    m.timers.advanceBy(1);
    expect(m.log.at(-1)!.split(" ").slice(1).join(" ")).toBe("p2->p0 back");
  });

  it("frames in flight when a cut appears are lost; a cut is one-directional", () => {
    const m = mesh(2, 1, { dropRate: 0, duplicateRate: 0, delayMs: [50, 50] });
    m.seams[0]!.send("p1", b("in-flight"));
    m.timers.advanceBy(10);
    m.net.cut("p0", "p1", "silent");
    m.seams[1]!.send("p0", b("reverse"));
    m.timers.advanceBy(100);
    expect(m.log.map((l) => l.split(" ").slice(1).join(" "))).toEqual(["p1->p0 reverse"]);
    expect(m.net.stats().blocked).toBe(1);
  });

  it("crash silent vs disconnect, and restart gives a working fresh seam", () => {
    const m = mesh(3, 1);
    m.net.crash("p2", "silent");
    m.timers.advanceBy(0);
    expect(m.seams[0]!.peers.get().has("p2")).toBe(true);
    expect(m.seams[2]!.send("p0", b("dead"))).toBe("closed");
    m.seams[0]!.send("p2", b("void"));
    m.timers.advanceBy(5);
    expect(m.log).toEqual([]);
    const p2 = m.net.restart("p2");
    const got: string[] = [];
    p2.onFrame((from, f) => got.push(`${from}:${t(f)}`));
    m.timers.advanceBy(0);
    m.seams[0]!.send("p2", b("hi"));
    m.timers.advanceBy(1);
    expect(got).toEqual(["p0:hi"]);
    m.net.crash("p1", "disconnect");
    m.timers.advanceBy(0);
    expect(m.seams[0]!.peers.get().has("p1")).toBe(false);
    expect(p2.peers.get().has("p1")).toBe(false);
  });

  it("most specific link faults win", () => {
    const m = mesh(3, 7);
    m.net.setFaults("*", "*", { dropRate: 1, duplicateRate: 0, delayMs: [0, 0] });
    m.net.setFaults("p0", "p1", { dropRate: 0, duplicateRate: 0, delayMs: [0, 0] });
    m.seams[0]!.broadcast(b("x"));
    m.timers.advanceBy(1);
    expect(m.log.map((l) => l.slice(2))).toEqual(["p0->p1 x"]);
  });
});

describe("VirtualTimers", () => {
  it("runs callbacks in (due, creation) order, including ones scheduled inside the window", () => {
    const timers = new VirtualTimers();
    const order: string[] = [];
    timers.set(() => order.push("b@10"), 10);
    timers.set(() => {
      order.push("a@5");
      timers.set(() => order.push("c@8"), 3);
      timers.set(() => order.push("d@15"), 10);
    }, 5);
    timers.set(() => order.push("e@10"), 10);
    const h = timers.set(() => order.push("never"), 7);
    timers.clear(h);
    timers.advanceBy(12);
    expect(order).toEqual(["a@5", "c@8", "b@10", "e@10"]);
    expect(timers.now()).toBe(12);
    timers.advanceBy(3);
    expect(order.at(-1)).toBe("d@15");
  });
});
