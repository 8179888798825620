import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryNetwork, muxSeam, seededRandom, type Seam } from "../src/index.ts";
import { DemandBoard, RejectionCounter, VirtualTimers, canonicalBytes } from "../src/testing.ts";
import { DemandLimitError } from "../src/index.ts";

const NONE = { targetOutstanding: 0n, maximumUsefulGrant: 0n };
const D = (t: bigint, g: bigint) => ({ targetOutstanding: t, maximumUsefulGrant: g });

function setup(ttl = 30_000, maxFrameBytes = 1 << 20) {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(1) });
  const mk = (id: string, epoch = 0, seam: Seam = net.join(id)) => {
    const rejections = new RejectionCounter(timers, 60_000, () => {});
    const board = new DemandBoard({ channel: muxSeam(seam).channel(2), epoch, timers, config: { demandTtlMs: ttl, maxDemandEntries: 16, maxFrameBytes }, rejections });
    return { board, rejections, seam };
  };
  return { timers, net, mk };
}

describe("demand board (node.md §6)", () => {
  it("folds live slots per field, expires by the receiver's clock (strict), DEMAND_NONE removes", () => {
    const { timers, mk } = setup();
    const a = mk("a");
    const b = mk("b");
    const c = mk("c");
    timers.advanceBy(0);
    a.board.advertise("e1", D(100n, 5n));
    b.board.advertise("e1", D(50n, 20n));
    timers.advanceBy(1);
    expect(c.board.fold("e1")).toEqual(D(100n, 20n));
    expect(a.board.fold("e1")).toEqual(D(100n, 20n));
    expect(c.board.fold("e2")).toEqual(NONE);
    a.board.advertise("e1", NONE);
    timers.advanceBy(1);
    expect(c.board.fold("e1")).toEqual(D(50n, 20n));
    timers.advanceBy(30_000 - 3);
    expect(timers.now()).toBe(29_999);
    expect(c.board.fold("e1")).toEqual(D(50n, 20n)); // b's slot arrived at t=0 (zero delay): live while now − 0 < 30 000
    timers.advanceBy(1);
    expect(c.board.fold("e1")).toEqual(NONE);
    expect(b.board.fold("e1")).toEqual(NONE); // the node's own slot obeys the same rule
  });

  it("a higher clock replaces; an echo or a lower clock does not re-stamp a live slot", () => {
    const { timers, net, mk } = setup(1_000);
    const c = mk("c");
    const raw = net.join("r");
    timers.advanceBy(0);
    const send = (clock: bigint, entries: [string, bigint, bigint][]) => {
      const body = canonicalBytes({ v: 1, kind: "board", replica: "r", clock, entries });
      const f = new Uint8Array(body.length + 1);
      f[0] = 2;
      f.set(body, 1);
      raw.send("c", f);
      timers.advanceBy(1);
    };
    send(10n, [["e1", 5n, 5n]]);
    expect(c.board.fold("e1")).toEqual(D(5n, 5n));
    timers.advanceBy(900);
    send(10n, [["e1", 5n, 5n]]); // echo: not evidence of life
    send(9n, [["e1", 9n, 9n]]); // lower clock while live: ignored
    expect(c.board.fold("e1")).toEqual(D(5n, 5n));
    timers.advanceBy(100);
    expect(c.board.fold("e1")).toEqual(NONE); // expired at 1 001 despite the echo
    send(9n, [["e1", 9n, 9n]]); // lower clock, slot expired, different entries: a restart that lost its store
    expect(c.board.fold("e1")).toEqual(D(9n, 9n));
    send(11n, [["e2", 1n, 1n]]);
    expect(c.board.fold("e1")).toEqual(NONE);
    expect(c.board.fold("e2")).toEqual(D(1n, 1n));
  });

  it("a restarted peer's slot outranks its previous incarnation (epoch × 2^32 + counter)", () => {
    const { timers, net, mk } = setup();
    const c = mk("c");
    const a = mk("a", 3);
    timers.advanceBy(0);
    for (let i = 0; i < 5; i++) a.board.advertise("e1", D(BigInt(100 + i), 1n));
    timers.advanceBy(1);
    net.crash("a", "disconnect");
    const a2 = mk("a", 4, net.restart("a"));
    timers.advanceBy(1);
    a2.board.advertise("e1", D(1n, 1n));
    timers.advanceBy(1);
    expect(c.board.fold("e1")).toEqual(D(1n, 1n));
  });

  it("rejects invalid local calls as caller bugs", () => {
    const { mk } = setup();
    const a = mk("a");
    expect(() => a.board.advertise("e1", D(-1n, 0n))).toThrow(RangeError);
    expect(() => a.board.advertise("e1", { targetOutstanding: 1 as unknown as bigint, maximumUsefulGrant: 0n })).toThrow(TypeError);
    expect(() => a.board.advertise("x".repeat(257), D(1n, 1n))).toThrow(RangeError);
    for (let i = 0; i < 16; i++) a.board.advertise(`e${i}`, D(1n, 1n));
    expect(() => a.board.advertise("e99", D(1n, 1n))).toThrow(RangeError);
  });

  it("a slot past maxDemandEntries or maxFrameBytes throws DemandLimitError and changes nothing, here or on peers", () => {
    const { timers, mk } = setup(30_000, 400);
    const a = mk("a");
    const c = mk("c");
    timers.advanceBy(0);
    a.board.advertiseMany([["e1", D(7n, 7n)], ["e2", D(8n, 8n)]]);
    timers.advanceBy(1);
    const framesOut = a.board.counters().framesOut;
    expect(framesOut).toBe(1); // one frame for the batch
    expect(c.board.fold("e2")).toEqual(D(8n, 8n));
    // past maxDemandEntries (16): 2 held + 15 new = 17 entries, so the whole batch is refused
    const many = Array.from({ length: 15 }, (_, i) => [`f${i}`, D(1n, 1n)] as const);
    let err: unknown = null;
    try {
      a.board.advertiseMany(many);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DemandLimitError);
    expect((err as DemandLimitError).limit).toBe("maxDemandEntries");
    expect((err as DemandLimitError).value).toBe(16);
    expect(a.board.ownEntries).toBe(2);
    expect(a.board.fold("f0")).toEqual(NONE);
    expect(a.board.counters().framesOut).toBe(framesOut);
    // past maxFrameBytes (400): refused, nothing stored, nothing sent
    const long = Array.from({ length: 6 }, (_, i) => [`edge-with-a-long-name-${"x".repeat(40)}-${i}`, D(1n, 1n)] as const);
    let bytesErr: unknown = null;
    try {
      a.board.advertiseMany(long);
    } catch (e) {
      bytesErr = e;
    }
    expect(bytesErr).toBeInstanceOf(DemandLimitError);
    expect((bytesErr as DemandLimitError).limit).toBe("maxFrameBytes");
    expect(a.board.ownEntries).toBe(2);
    expect(a.board.counters().framesOut).toBe(framesOut);
    expect(() => a.board.advertise(long[0]![0], D(1n, 1n))).not.toThrow(); // one of them alone fits
    timers.advanceBy(1);
    expect(c.board.fold(long[0]![0])).toEqual(D(1n, 1n));
    expect(c.board.fold("e1")).toEqual(D(7n, 7n));
    // a bad entry anywhere in a batch refuses the whole batch
    expect(() => a.board.advertiseMany([["e3", D(1n, 1n)], ["e4", D(-1n, 0n)]])).toThrow(RangeError);
    expect(a.board.fold("e3")).toEqual(NONE);
  });

  it("fold equals a reference model over random advertise/time sequences (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("a", "b"), fc.constantFrom("e1", "e2"), fc.bigInt({ min: 0n, max: 50n }), fc.bigInt({ min: 0n, max: 50n }), fc.integer({ min: 0, max: 400 })), { maxLength: 30 }),
        (ops) => {
          const { timers, mk } = setup(1_000);
          const peers = { a: mk("a"), b: mk("b") };
          const c = mk("c");
          timers.advanceBy(0);
          const model = new Map<string, { at: number; entries: Map<string, [bigint, bigint]> }>();
          for (const [who, edge, t, g, wait] of ops) {
            peers[who].board.advertise(edge, D(t, g));
            const slot = model.get(who) ?? { at: 0, entries: new Map() };
            if (t === 0n && g === 0n) slot.entries.delete(edge);
            else slot.entries.set(edge, [t, g]);
            slot.at = timers.now();
            model.set(who, slot);
            timers.advanceBy(wait);
            for (const e of ["e1", "e2"]) {
              let mt = 0n, mg = 0n, named = false;
              for (const s of model.values()) {
                if (timers.now() - s.at >= 1_000) continue;
                const d = s.entries.get(e);
                if (!d) continue;
                named = true;
                if (d[0] > mt) mt = d[0];
                if (d[1] > mg) mg = d[1];
              }
              expect(c.board.fold(e)).toEqual(named ? D(mt, mg) : NONE);
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
