/**
 * The binary codec's exact output and each refusal's reason (binary.ts). The round-trip properties cannot
 * see a string table that holds an extra or repeated string, forgets the `known` strings, or keys written
 * in insertion order: every such encoding still decodes to the same value. Issue 19 found those mutants
 * surviving, and the decoder's messages unpinned; here the bytes are written out by hand from the layout
 * (`u8 format · uvarint #strings · (uvarint len · utf-8)* · uvarint mask · components`).
 */
import { describe, expect, it } from "vitest";
import { ByteReader, ByteWriter, EntitlementLedger, LedgerDecodeError } from "../src/index.ts";
import { ascii, frame, thrown } from "./arbitraries.ts";

const utf8 = new TextEncoder();

// issued (component 2): edge "b" {r2: 5, r1: 7} inserted before edge "a" {r1: 1}, slots out of order too
const ISSUED = '{"format":"heddle-ledger/1","issued":[["b",[["r2","5"],["r1","7"]]],["a",[["r1","1"]]]]}';

describe("the string table, byte for byte", () => {
  it("strings in first-use order over sorted keys, each once, keys in code-unit order whatever the insertion order", () => {
    const l = EntitlementLedger.decode(ISSUED);
    // table a, r1, b, r2 → 0..3; mask 4; 2 edges: a (1 slot: r1=1), b (2 slots: r1=7, r2=5)
    const want = [1, 4, 1, ...ascii("a"), 2, ...ascii("r1"), 1, ...ascii("b"), 2, ...ascii("r2"), 4, 2, 0, 1, 1, 1, 2, 2, 1, 7, 3, 5];
    expect([...l.encodeBinary()]).toEqual(want);
    expect(EntitlementLedger.decodeBinary(Uint8Array.from(want)).encode()).toBe(l.encode());
  });

  it("known strings take the first indices (the first of a repeated one) and are not written", () => {
    const known = ["r1", "r1", "zz"];
    const l = EntitlementLedger.decode(ISSUED);
    // r1 = 0 (not 1), zz = 2 unused; new strings a = 3, b = 4, r2 = 5
    const want = [1, 3, 1, ...ascii("a"), 1, ...ascii("b"), 2, ...ascii("r2"), 4, 2, 3, 1, 0, 1, 4, 2, 0, 7, 5, 5];
    expect([...l.encodeBinary(known)]).toEqual(want);
    expect(EntitlementLedger.decodeBinary(Uint8Array.from(want), known).encode()).toBe(l.encode());
  });

  it("every insertion order of the same keys gives the same bytes, in UTF-16 code-unit order (not code points, not locale)", () => {
    // code units: "B" 0x42 < "a" 0x61 < "é" 0xe9 < "😀" 0xd83d… < "\uffff"; by code point "\uffff" would come before "😀"
    const keys = ["\uffff", "a", "\u{1f600}", "B", "\u00e9"];
    const sorted = ["B", "a", "\u00e9", "\u{1f600}", "\uffff"];
    const lifecycle = ["ACTIVE", "CLOSING", "PREPARED", "RETIRED", "ACTIVE"];
    const rank: Record<string, number> = { PREPARED: 0, ACTIVE: 1, CLOSING: 2, RETIRED: 3 };
    const of = new Map(keys.map((k, i) => [k, lifecycle[i]!]));
    const want: number[] = [1, 5];
    for (const k of sorted) want.push(utf8.encode(k).length, ...utf8.encode(k));
    want.push(0x80, 0x01, 5); // mask 1 << 7 as a varint, 5 edges
    sorted.forEach((k, i) => want.push(i, rank[of.get(k)!]!));
    const perms = (a: string[]): string[][] => (a.length <= 1 ? [a] : a.flatMap((x, i) => perms([...a.slice(0, i), ...a.slice(i + 1)]).map((p) => [x, ...p])));
    for (const order of perms(keys)) {
      const text = JSON.stringify({ format: "heddle-ledger/1", lifecycle: order.map((k) => [k, of.get(k)]) });
      expect({ order, bytes: [...EntitlementLedger.decode(text).encodeBinary()] }).toEqual({ order, bytes: want });
    }
  });
});

describe("the reader's bounds", () => {
  it("bytes(n) takes exactly the rest, and refuses one more", () => {
    expect([...new ByteReader(Uint8Array.of(9, 8, 7), 1).bytes(2)]).toEqual([8, 7]);
    expect(thrown(() => new ByteReader(Uint8Array.of(9, 8, 7), 1).bytes(3))).toBe("LedgerDecodeError: truncated");
  });

  it("count(minBytes) refuses a count the rest cannot hold, at the exact edge", () => {
    expect(new ByteReader(Uint8Array.of(3, 0, 0, 0, 0, 0, 0)).count(2)).toBe(3);
    expect(thrown(() => new ByteReader(Uint8Array.of(3, 0, 0, 0, 0, 0)).count(2))).toBe("LedgerDecodeError: count exceeds the input");
    expect(thrown(() => new ByteReader(Uint8Array.of(2, 0)).count())).toBe("LedgerDecodeError: count exceeds the input");
  });

  it("a writer of capacity 1 keeps every u8 it is given", () => {
    expect([...new ByteWriter(1).u8(1).u8(2).u8(0x1ff).finish()]).toEqual([1, 2, 0xff]);
  });
});

describe("each refusal of the decoder names its reason", () => {
  const MAX = 2n ** 63n - 1n;
  const cases: [string, () => Uint8Array, string, string[]?][] = [
    ["an empty id", () => frame(["", "g"], 1, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(1).ubig(1n).ubig(1n)), "record edge: expected a non-empty, well-formed string"],
    ["parent = child", () => frame(["e", "g"], 1, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(1).ubig(1n).ubig(1n)), "record e: parent = child"],
    ["a zero weight", () => frame(["e", "g", "h"], 1, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(2).ubig(0n).ubig(1n)), "record e: weight 0/1 names no positive ratio"],
    ["a weight above int64", () => frame(["e", "g", "h"], 1, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(2).ubig(1n).ubig(MAX + 1n)), "record e: weight 1/9223372036854775808 names no positive ratio"],
    ["a mint above int64", () => frame(["m", "g", "r"], 2, (w) => w.uint(1).uint(0).uint(1).uint(2).ubig(MAX + 1n)), "mint amount: 9223372036854775808 is outside the signed 64-bit range"],
    ["a transfer key that is not well-formed", () => frame(["r"], 64, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(1).uint(1).ubig(1n)), "transfer key: expected an edge id or the root key", ["\ud800"]],
    ["a lifecycle rank past RETIRED", () => frame(["e"], 128, (w) => w.uint(1).uint(0).u8(4)), "unknown lifecycle"],
    ["a gauge denominator above int64", () => frame(["e"], 256, (w) => w.uint(1).uint(0).zbig(1n).ubig(MAX + 1n).ubig(0n)), "gauge floor 1/9223372036854775808 is out of range"],
    ["a gauge floor of −2^63 (|n| not representable)", () => frame(["e"], 256, (w) => w.uint(1).uint(0).zbig(-(2n ** 63n)).ubig(1n).ubig(0n)), "gauge floor -9223372036854775808/1 is out of range"],
    ["a zero gauge denominator", () => frame(["e"], 256, (w) => w.uint(1).uint(0).zbig(1n).ubig(0n).ubig(0n)), "gauge floor denominator 0 must be positive"],
    ["a string index past the table", () => frame(["e"], 128, (w) => w.uint(1).uint(1).u8(0)), "lifecycle edge: string index 1 out of range"],
  ];
  for (const [name, bytes, reason, known] of cases) {
    it(`${name}: "${reason}"`, () => {
      expect(thrown(() => EntitlementLedger.decodeBinary(bytes(), known))).toBe(`LedgerDecodeError: ${reason}`);
    });
  }

  it("the same frames with the fault repaired decode (each case is refused for its reason only)", () => {
    const good = [
      frame(["e", "g", "h"], 1, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(2).ubig(1n).ubig(MAX)),
      frame(["m", "g", "r"], 2, (w) => w.uint(1).uint(0).uint(1).uint(2).ubig(MAX)),
      frame(["r"], 64, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(1).uint(1).ubig(1n)),
      frame(["e"], 128, (w) => w.uint(1).uint(0).u8(3)),
      frame(["e"], 256, (w) => w.uint(1).uint(0).zbig(-MAX).ubig(MAX).ubig(0n)),
    ];
    for (const b of good) expect(thrown(() => EntitlementLedger.decodeBinary(b, ["\u00e9"]))).toBe("accepted");
  });
});

it("LedgerDecodeError is what each refusal throws", () => {
  expect(() => EntitlementLedger.decodeBinary(frame(["e"], 128, (w) => w.uint(1).uint(0).u8(4)))).toThrow(LedgerDecodeError);
});

describe("a receiver's id-length limit (decodeBinary's maxIdLength)", () => {
  it("refuses a string longer than the limit, in code units, with LedgerIdTooLongError; accepts one at the limit", async () => {
    const { LedgerIdTooLongError } = await import("../src/index.ts");
    const at = (n: number, unit = "e") => EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued: [[unit.repeat(n), [["r1", "1"]]]] }));
    expect(EntitlementLedger.decodeBinary(at(256).encodeBinary(), [], 256).encode()).toBe(at(256).encode());
    let e: unknown = null;
    try {
      EntitlementLedger.decodeBinary(at(257).encodeBinary(), [], 256);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(LedgerIdTooLongError);
    expect(e).toBeInstanceOf(LedgerDecodeError);
    expect(thrown(() => EntitlementLedger.decodeBinary(at(257).encodeBinary(), [], 256))).toBe("LedgerIdTooLongError: string table entry 0 is 257 code units long, above 256");
    // code units, not bytes: 128 × "é" is 256 bytes of UTF-8 but 128 code units; 129 × "😀" is 258 code units
    expect(() => EntitlementLedger.decodeBinary(at(128, "\u00e9").encodeBinary(), [], 128)).not.toThrow();
    expect(thrown(() => EntitlementLedger.decodeBinary(at(129, "\u{1f600}").encodeBinary(), [], 257))).toMatch(/^LedgerIdTooLongError: string table entry 0 is 258 code units/);
    // no limit by default
    expect(EntitlementLedger.decodeBinary(at(5_000).encodeBinary()).encode()).toBe(at(5_000).encode());
  });
});
