import { describe, expect, it } from "vitest";
import type { PeerId, Seam } from "../src/index.ts";

/**
 * A set of seams under test. `seams[0]` and `seams[1]` carry at least 64 KiB frames; `seams[2]`
 * has a strictly smaller `maxFrameBytes` than `seams[0]`, so the suite can check that an inbound
 * frame above the receiver's limit is never delivered. `pass()` lets a little time go by (virtual or
 * real); `stop()` releases everything.
 */
export interface SeamHarness {
  seams: Seam[];
  pass(): Promise<void>;
  stop(): Promise<void>;
}

/** Waits, letting time pass, until `cond()` holds; fails after `rounds` passes. */
export async function eventually(h: SeamHarness, cond: () => boolean, what: string, rounds = 400): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (cond()) return;
    await h.pass();
  }
  if (!cond()) throw new Error(`timed out waiting for: ${what}`);
}

/** Lets time pass for `n` rounds. */
export async function settle(h: SeamHarness, n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await h.pass();
}

function record(seam: Seam): { from: PeerId; text: string }[] {
  const got: { from: PeerId; text: string }[] = [];
  seam.onFrame((from, frame) => got.push({ from, text: new TextDecoder().decode(frame) }));
  return got;
}

const bytes = (s: string) => new TextEncoder().encode(s);

/** The seam conformance suite of node.md §3.5, run against any transport that yields a `SeamHarness`. */
export function describeSeamConformance(name: string, make: () => Promise<SeamHarness>): void {
  describe(`Seam conformance: ${name}`, () => {
    const withHarness = (fn: (h: SeamHarness) => Promise<void>) => async () => {
      const h = await make();
      try {
        await fn(h);
      } finally {
        await h.stop();
      }
    };
    const allConnected = (h: SeamHarness) => () =>
      h.seams.every((s) => h.seams.every((o) => o === s || s.peers.get().has(o.self)));

    it(
      "self is stable and peers report joins without ever containing self",
      withHarness(async (h) => {
        const ids = h.seams.map((s) => s.self);
        expect(new Set(ids).size).toBe(ids.length);
        await eventually(h, allConnected(h), "full mesh");
        for (const s of h.seams) {
          expect(s.peers.get().has(s.self)).toBe(false);
          expect([...s.peers.get()].sort()).toEqual(ids.filter((i) => i !== s.self).sort());
        }
        expect(h.seams.map((s) => s.self)).toEqual(ids);
      }),
    );

    it(
      "unicast arrives exactly once with the authenticated sender as from",
      withHarness(async (h) => {
        const [a, b, c] = h.seams as [Seam, Seam, Seam];
        const atB = record(b);
        const atC = record(c);
        await eventually(h, allConnected(h), "full mesh");
        expect(a.send(b.self, bytes("hello-b"))).toBe("queued");
        await eventually(h, () => atB.length >= 1, "unicast delivery");
        await settle(h, 10);
        expect(atB).toEqual([{ from: a.self, text: "hello-b" }]);
        expect(atC).toEqual([]);
      }),
    );

    it(
      "broadcast reaches every member exactly once",
      withHarness(async (h) => {
        const [a, b, c] = h.seams as [Seam, Seam, Seam];
        const atA = record(a);
        const atB = record(b);
        const atC = record(c);
        await eventually(h, allConnected(h), "full mesh");
        a.broadcast(bytes("to-all"));
        await eventually(h, () => atB.length >= 1 && atC.length >= 1, "broadcast delivery");
        await settle(h, 10);
        expect(atB).toEqual([{ from: a.self, text: "to-all" }]);
        expect(atC).toEqual([{ from: a.self, text: "to-all" }]);
        expect(atA).toEqual([]);
      }),
    );

    it(
      "oversize sends return 'oversize'; an inbound frame above the receiver's limit is never delivered",
      withHarness(async (h) => {
        const [a, b, c] = h.seams as [Seam, Seam, Seam];
        expect(c.maxFrameBytes).toBeLessThan(a.maxFrameBytes);
        const atC = record(c);
        await eventually(h, allConnected(h), "full mesh");
        expect(a.send(b.self, new Uint8Array(a.maxFrameBytes + 1))).toBe("oversize");
        expect(c.send(a.self, new Uint8Array(c.maxFrameBytes + 1))).toBe("oversize");
        const big = new Uint8Array(c.maxFrameBytes + 1).fill(7);
        a.send(c.self, big);
        await settle(h, 15);
        expect(atC).toEqual([]);
        // The seam keeps working for frames within the limit.
        await eventually(h, allConnected(h), "mesh after oversize");
        await eventually(
          h,
          () => {
            if (atC.length === 0) a.send(c.self, bytes("small"));
            return atC.some((f) => f.text === "small");
          },
          "small frame after an oversize one",
        );
        expect(atC.every((f) => f.from === a.self && f.text === "small")).toBe(true);
      }),
    );

    it(
      "a second onFrame subscriber throws; send to a non-member returns not-connected without throwing",
      withHarness(async (h) => {
        const [a] = h.seams as [Seam];
        const off = a.onFrame(() => {});
        expect(() => a.onFrame(() => {})).toThrow();
        off();
        expect(() => a.onFrame(() => {})).not.toThrow();
        expect(a.send("no-such-peer-" + a.self, bytes("x"))).toBe("not-connected");
      }),
    );

    it(
      "close() makes the remote side see the peer leave",
      withHarness(async (h) => {
        const [a, b, c] = h.seams as [Seam, Seam, Seam];
        await eventually(h, allConnected(h), "full mesh");
        await c.close();
        expect(c.send(a.self, bytes("after close"))).toBe("closed");
        await eventually(h, () => !a.peers.get().has(c.self) && !b.peers.get().has(c.self), "c leaves");
        expect(a.peers.get().has(b.self)).toBe(true);
      }),
    );
  });
}
