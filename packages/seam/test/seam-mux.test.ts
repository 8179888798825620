import { describe, expect, it } from "vitest";
import { MemoryNetwork, muxSeam, seededRandom } from "../src/index.ts";
import { VirtualTimers } from "../src/testing.ts";

describe("muxSeam", () => {
  it("is cached per seam, prefixes one tag byte, routes by tag, counts unknown channels", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(3), maxFrameBytes: 100 });
    const a = net.join("a");
    const b = net.join("b");
    timers.advanceBy(0);
    expect(muxSeam(a)).toBe(muxSeam(a));
    const ma = muxSeam(a);
    const mb = muxSeam(b);
    const a1 = ma.channel(1);
    const a2 = ma.channel(2);
    const b1 = mb.channel(1);
    expect(() => mb.channel(1)).toThrow();
    expect(() => mb.channel(0)).toThrow();
    expect(() => mb.channel(255)).toThrow();
    expect(a1.maxFrameBytes).toBe(99);
    const got: string[] = [];
    const activity: string[] = [];
    b1.onFrame((from, f) => got.push(`${from}:${[...f].join(",")}`));
    expect(() => b1.onFrame(() => {})).toThrow();
    mb.onActivity((from) => activity.push(from));
    expect(a1.send("b", new Uint8Array([9, 8]))).toBe("queued");
    expect(a2.send("b", new Uint8Array([7]))).toBe("queued");
    expect(a1.send("b", new Uint8Array(100))).toBe("oversize");
    expect(a1.send("b", new Uint8Array(99))).toBe("queued");
    a.send("b", new Uint8Array());
    timers.advanceBy(1);
    expect(got[0]).toBe("a:9,8");
    expect(got.length).toBe(2);
    expect(activity).toEqual(["a", "a", "a", "a"]);
    expect(mb.counters().unknownChannel).toBe(2);
    expect(mb.counters().unheard).toBe(0);
  });

  it("a frame for a claimed channel that nobody listens to yet is counted as unheard, not dropped silently", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(4) });
    const a = net.join("a");
    const b = net.join("b");
    timers.advanceBy(0);
    const b4 = muxSeam(b).channel(4); // claimed, no onFrame yet (a protocol that subscribes later)
    const a4 = muxSeam(a).channel(4);
    a4.send("b", new Uint8Array([1]));
    a4.send("b", new Uint8Array([2]));
    timers.advanceBy(1);
    expect(muxSeam(b).counters()).toEqual({ unknownChannel: 0, unheard: 2 });
    const got: number[] = [];
    b4.onFrame((_from, f) => got.push(f[0]!));
    a4.send("b", new Uint8Array([3]));
    timers.advanceBy(1);
    expect(got).toEqual([3]);
    expect(muxSeam(b).counters()).toEqual({ unknownChannel: 0, unheard: 2 });
  });

  it("a closed channel releases its tag and refuses to send", async () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(3) });
    const a = net.join("a");
    net.join("b");
    timers.advanceBy(0);
    const c = muxSeam(a).channel(4);
    await c.close();
    expect(c.send("b", new Uint8Array([1]))).toBe("closed");
    expect(() => muxSeam(a).channel(4)).not.toThrow();
  });
});
