import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrameDecoder, MAX_PREFIX_BYTES, startLibp2pSeams, startRawFramePeer, sleep } from "../src/testing.ts";

const runs = Number(process.env.HEDDLE_RUNS ?? 500);

function varint(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

const encode = (frames: Uint8Array[]) => new Uint8Array(frames.flatMap((f) => [...varint(f.length), ...f]));

/** Feeds `bytes` cut at `cuts` and returns the frames and the outcome. */
function feed(max: number, bytes: Uint8Array, cuts: number[]) {
  const d = new FrameDecoder(max);
  const got: number[][] = [];
  let failure: string | null = null;
  let at = 0;
  for (const c of [...cuts.filter((x) => x > 0 && x < bytes.length).sort((a, b) => a - b), bytes.length]) {
    if (failure === null && c >= at) failure = d.push(bytes.subarray(at, c), (f) => got.push([...f]));
    at = Math.max(at, c);
  }
  return { got, failure, inFrame: d.inFrame };
}

describe("FrameDecoder (node.md §3.4 length prefixes)", () => {
  it("yields the same frames however the stream is cut, including empty frames", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }), fc.array(fc.nat(7000)), (frames, cuts) => {
        const r = feed(300, encode(frames), cuts);
        expect(r.failure).toBe(null);
        expect(r.inFrame).toBe(false);
        expect(r.got).toEqual(frames.map((f) => [...f]));
      }),
      { numRuns: runs },
    );
  });

  it("gathers large frames cut anywhere (the growing buffer: first piece small, doubled, then completed)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 9_000 }), { minLength: 1, maxLength: 4 }), fc.array(fc.nat(40_000), { maxLength: 40 }), (sizes, cuts) => {
        const frames = sizes.map((n, k) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + k) & 0xff));
        const r = feed(10_000, encode(frames), cuts);
        expect(r.failure).toBe(null);
        expect(r.inFrame).toBe(false);
        expect(r.got).toEqual(frames.map((f) => [...f]));
      }),
      { numRuns: Math.ceil(runs / 5) },
    );
  });

  it("keeps one buffer, not one object per piece, for a frame sent a byte at a time (found in review: ~230× the frame in heap)", () => {
    const max = 1_048_576;
    const d = new FrameDecoder(max);
    const before = process.memoryUsage().heapUsed;
    expect(d.push(new Uint8Array(varint(max)), () => {})).toBe(null);
    const one = new Uint8Array(1);
    for (let i = 0; i < max - 1; i++) {
      one[0] = i & 0xff;
      d.push(one, () => {});
    }
    const held = process.memoryUsage().heapUsed - before;
    // one 1 MiB buffer (plus the young garbage of the loop); a list of 1-byte slices held ~240 MB
    expect(held).toBeLessThan(64 * 1_048_576);
    let frame: Uint8Array | null = null;
    one[0] = 0xaa;
    d.push(one, (f) => (frame = f));
    expect(frame!.length).toBe(max);
    expect(frame![0]).toBe(0);
    expect(frame![1000]).toBe(1000 & 0xff);
    expect(frame![max - 1]).toBe(0xaa);
  });

  it("reads a non-minimal prefix as the value it encodes (regression: libp2p's decoder consumed the minimal length and misaligned the frame)", () => {
    const r = feed(100, new Uint8Array([0x83, 0x80, 0x00, 1, 2, 3, 0x01, 9]), [2, 5]);
    expect(r).toEqual({ got: [[1, 2, 3], [9]], failure: null, inFrame: false });
  });

  it("fails oversize as soon as the prefix shows it, and malformed after 8 unfinished prefix bytes", () => {
    expect(feed(100, new Uint8Array([0xe5, 0x00]), []).failure).toBe("oversize"); // 101
    expect(feed(100, new Uint8Array([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]), []).failure).toBe("malformed");
    expect(feed(100, new Uint8Array([0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 1, 2, 3, 4, 5]), [3]).got).toEqual([[1, 2, 3, 4, 5]]);
    expect(MAX_PREFIX_BYTES).toBe(8);
    const cut = feed(100, new Uint8Array([0x05, 1, 2]), []);
    expect(cut).toEqual({ got: [], failure: null, inFrame: true });
  });

  it("over libp2p: an empty frame reaches the handler (regression: it was skipped uncounted), a cut frame is counted", async () => {
    const { seams } = await startLibp2pSeams(1);
    const victim = seams[0]!;
    const mallory = await startRawFramePeer();
    victim.addRosterEntry({ id: mallory.self, addrs: [] });
    const got: number[] = [];
    victim.onFrame((_from, f) => got.push(f.length));
    try {
      const s = await mallory.open(victim.addrs()[0]!);
      await s.write(new Uint8Array([0x00, 0x02, 7, 7, 0x00]));
      const t0 = Date.now();
      while (got.length < 3 && Date.now() - t0 < 10_000) await sleep(20);
      expect(got).toEqual([0, 2, 0]);
      await s.write(new Uint8Array([0x09, 1, 2]));
      await s.close();
      while (victim.counters().cutFrames < 1 && Date.now() - t0 < 10_000) await sleep(20);
      expect(victim.counters()).toMatchObject({ cutFrames: 1, oversize: 0, badPrefix: 0, handlerErrors: 0, framesIn: 3 });
    } finally {
      await mallory.stop();
      await victim.close();
    }
  });

  it("over libp2p: a peer may open and finish more streams than the inbound stream limit (regression: finished inbound streams were never closed)", async () => {
    const { seams } = await startLibp2pSeams(1);
    const victim = seams[0]!;
    const mallory = await startRawFramePeer();
    victim.addRosterEntry({ id: mallory.self, addrs: [] });
    const got: number[] = [];
    victim.onFrame((_from, f) => got.push(f[0]!));
    try {
      for (let k = 0; k < 20; k++) {
        const s = await mallory.open(victim.addrs()[0]!);
        await s.write(new Uint8Array([0x01, k]));
        await s.close();
        const t0 = Date.now();
        while (got.length <= k && Date.now() - t0 < 10_000) await sleep(10);
      }
      expect(got).toEqual(Array.from({ length: 20 }, (_, k) => k));
    } finally {
      await mallory.stop();
      await victim.close();
    }
  });
});
