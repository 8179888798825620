/**
 * The state digest's parts (digest.ts): each entry hash is FNV-1a-64 over `tag · (utf-8 part · 0xff)*`, then
 * mixed; the digest is the sum of entry hashes mod 2^64, in two 32-bit halves. Issue 19 found that nothing
 * pinned the bytes that are hashed (the tag, a part, the separator, a record's own fields could each be
 * dropped) nor the carry and borrow between the halves at their exact edges. Here the entry hash is
 * recomputed from its definition over bytes, and the sum against bigint arithmetic.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { counterHash, DigestSum, gaugeHash, lifecycleHash, mintHash, recordsHash, transferHash } from "../src/digest.ts";
import type { U64 } from "../src/digest.ts";
import { AttachmentId, fnv1a64Reference, GroupId, MintId, PathKey, Rational, ReplicaId, Weight } from "../src/index.ts";
import { params } from "./arbitraries.ts";

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The definition: FNV-1a-64 of `tag · (utf-8(part) · 0xff)*`, the halves mixed by murmur3's finalizer. */
function entry(tag: number, parts: (string | bigint)[]): U64 {
  const bytes: number[] = [tag];
  for (const p of parts) bytes.push(...new TextEncoder().encode(p.toString()), 0xff);
  const h = BigInt(`0x${fnv1a64Reference(Uint8Array.from(bytes))}`);
  const hi0 = Number(h >> 32n);
  const lo0 = Number(h & 0xffffffffn);
  const lo = fmix32(lo0 ^ Math.imul(hi0, 0x9e3779b1));
  return { hi: fmix32(hi0 ^ lo), lo };
}

const e = AttachmentId("e\u00e9\u4e2d");
const r = ReplicaId("r\u{1f600}");

describe("entry hashes are the definition over bytes", () => {
  it("each kind of entry hashes its tag, every part and the separators", () => {
    const recs = [
      { id: e, parent: GroupId("g1"), child: GroupId("g2"), weight: Weight.of(2n, 3n) },
      { id: e, parent: GroupId("g1"), child: GroupId("g3"), weight: Weight.of(1n, 3n) },
    ];
    expect(recordsHash(e, recs)).toEqual(entry(1, [e, "g1", "g2", 2n, 3n, "g1", "g3", 1n, 3n]));
    expect(mintHash(MintId("m"), { root: GroupId("root"), holder: r, amount: 1000n })).toEqual(entry(2, ["m", "root", r, 1000n]));
    const fams = ["issued", "returned", "leafSpent", "rollupSpent"] as const;
    fams.forEach((fam, i) => expect(counterHash(fam, e, r, 42n)).toEqual(entry(3 + i, [e, r, 42n])));
    expect(transferHash(PathKey.ROOT, r, ReplicaId("x"), 5n)).toEqual(entry(7, ["", r, "x", 5n]));
    expect(lifecycleHash(e, "CLOSING")).toEqual(entry(8, [e, "CLOSING"]));
    expect(gaugeHash(e, { floor: Rational.of(-7n, 2n), folded: 9n })).toEqual(entry(9, [e, -7n, 2n, 9n]));
  });

  it("entries that differ only in their family, their split into parts or a record's fields hash apart", () => {
    expect(counterHash("issued", e, r, 1n)).not.toEqual(counterHash("returned", e, r, 1n));
    expect(counterHash("issued", AttachmentId("ab"), ReplicaId("c"), 1n)).not.toEqual(counterHash("issued", AttachmentId("a"), ReplicaId("bc"), 1n));
    expect(counterHash("issued", AttachmentId("a"), ReplicaId("b"), 1n)).not.toEqual(counterHash("issued", AttachmentId("b"), ReplicaId("a"), 1n));
    const rec = (w: bigint) => [{ id: e, parent: GroupId("p"), child: GroupId("c"), weight: Weight.of(w, 1n) }];
    expect(recordsHash(e, rec(1n))).not.toEqual(recordsHash(e, rec(2n)));
  });
});

describe("DigestSum: a sum mod 2^64 in two 32-bit halves", () => {
  const big = (x: { hi: number; lo: number }) => (BigInt(x.hi) << 32n) | BigInt(x.lo);
  const M = 1n << 64n;

  it("carries only when the low halves overflow, borrows only when they go below zero", () => {
    const s = new DigestSum();
    s.lo = 0xfffffffe;
    s.add({ hi: 0, lo: 1 }); // low half exactly 0xffffffff: no carry
    expect([s.hi, s.lo]).toEqual([0, 0xffffffff]);
    s.add({ hi: 0, lo: 1 }); // 2^32: carry
    expect([s.hi, s.lo]).toEqual([1, 0]);
    s.hi = 5;
    s.lo = 7;
    s.sub({ hi: 1, lo: 7 }); // low half exactly 0: no borrow
    expect([s.hi, s.lo]).toEqual([4, 0]);
    s.sub({ hi: 0, lo: 1 }); // −1: borrow
    expect([s.hi, s.lo]).toEqual([3, 0xffffffff]);
    s.hi = 0;
    s.lo = 0;
    s.sub({ hi: 0, lo: 1 }); // wraps mod 2^64
    expect(s.hex()).toBe("ffffffffffffffff");
  });

  it("prints 16 hex digits, zero-padded in each half", () => {
    const s = new DigestSum();
    expect(s.hex()).toBe("0000000000000000");
    s.hi = 1;
    s.lo = 0xa;
    expect(s.hex()).toBe("000000010000000a");
    s.hi = 0xabcdef;
    s.lo = 0x12345678;
    expect(s.hex()).toBe("00abcdef12345678");
  });

  it("add and sub agree with bigint arithmetic mod 2^64 (property)", () => {
    const half = fc.oneof(fc.constantFrom(0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff), fc.integer({ min: 0, max: 0xffffffff }));
    const u64 = fc.record({ hi: half, lo: half });
    fc.assert(
      fc.property(u64, fc.array(fc.tuple(fc.boolean(), u64), { maxLength: 8 }), (start, ops) => {
        const s = new DigestSum();
        s.hi = start.hi;
        s.lo = start.lo;
        let want = big(start);
        for (const [plus, h] of ops) {
          if (plus) s.add(h);
          else s.sub(h);
          want = (((plus ? want + big(h) : want - big(h)) % M) + M) % M;
          expect(big(s)).toBe(want);
          expect(s.hex()).toBe(want.toString(16).padStart(16, "0"));
        }
      }),
      params(),
    );
  });
});
