/**
 * The binary codec's byte level (binary.ts): varints at the 2^53 and 2^64 edges written and read back,
 * each malformed varint refused with its reason, a writer growing from one byte, and a string-table entry
 * that is not UTF-8 refused (a lenient decoder would turn it into U+FFFD and accept a different id).
 * Stryker found these uncovered or surviving (issue 19).
 */
import { describe, expect, it } from "vitest";
import { ByteReader, ByteWriter, EntitlementLedger, LedgerDecodeError } from "../src/index.ts";
import { thrown } from "./arbitraries.ts";

describe("varints", () => {
  it("bigints round-trip on both sides of 2^53 and up to 2^64 − 1, in the fewest bytes", () => {
    const values = [0n, 1n, 127n, 128n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 56n - 1n, 2n ** 56n, 2n ** 63n, 2n ** 64n - 1n];
    const w = new ByteWriter(1);
    for (const v of values) w.ubig(v);
    for (const v of [-(2n ** 63n), -1n, 0n, 1n, 2n ** 63n - 1n]) w.zbig(v);
    const bytes = w.finish();
    expect(bytes.length).toBe(w.length);
    const r = new ByteReader(bytes);
    for (const v of values) expect(r.ubig()).toBe(v);
    for (const v of [-(2n ** 63n), -1n, 0n, 1n, 2n ** 63n - 1n]) expect(r.zbig()).toBe(v);
    expect(r.remaining).toBe(0);
    const len = (v: bigint) => new ByteWriter().ubig(v).finish().length;
    expect([len(127n), len(128n), len(2n ** 56n - 1n), len(2n ** 56n), len(2n ** 63n - 1n), len(2n ** 63n), len(2n ** 64n - 1n)]).toEqual([1, 2, 8, 9, 9, 10, 10]);
    expect([...new ByteWriter().ubig(2n ** 64n - 1n).finish()]).toEqual([255, 255, 255, 255, 255, 255, 255, 255, 255, 1]);
  });

  it("a writer grows past its capacity and keeps what it wrote", () => {
    const w = new ByteWriter(1);
    const chunk = Uint8Array.from({ length: 100 }, (_, i) => i);
    w.u8(7).bytes(chunk).uint(2 ** 53 - 1).bytes(chunk);
    const out = w.finish();
    expect(out.length).toBe(1 + 100 + 8 + 100);
    expect(out[0]).toBe(7);
    expect([...out.subarray(1, 101)]).toEqual([...chunk]);
    expect([...out.subarray(109)]).toEqual([...chunk]);
    expect(new ByteReader(out, 101).uint()).toBe(2 ** 53 - 1);
  });

  it("each malformed varint is refused with its reason", () => {
    const read = (bytes: number[], big: boolean) => () => (big ? new ByteReader(Uint8Array.from(bytes)).ubig() : new ByteReader(Uint8Array.from(bytes)).uint());
    expect(thrown(read([0x80, 0], false))).toBe("LedgerDecodeError: varint out of range or not minimal");
    expect(thrown(read([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x10], false))).toBe("LedgerDecodeError: varint out of range or not minimal"); // 2^53
    expect(read([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], false)()).toBe(2 ** 53 - 1);
    expect(thrown(read([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1], false))).toBe("LedgerDecodeError: varint too long");
    expect(thrown(read([0x80, 0], true))).toBe("LedgerDecodeError: varint not minimal");
    expect(thrown(read([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2], true))).toBe("LedgerDecodeError: varint above 2^64");
    expect(thrown(read([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1], true))).toBe("LedgerDecodeError: varint too long");
    expect(thrown(read([0x80], true))).toBe("LedgerDecodeError: truncated");
  });
});

describe("string table", () => {
  it("an entry that is not UTF-8 is refused, not replaced", () => {
    const l = EntitlementLedger.decode('{"format":"heddle-ledger/1","gauges":[["e1",["3","2","7"]]],"records":[["e1",[["g","h","1","1"]]]]}');
    const b = l.encodeBinary();
    const at = b.indexOf("e".charCodeAt(0));
    expect(at).toBeGreaterThan(0);
    const bad = b.slice();
    bad[at] = 0xff;
    expect(thrown(() => EntitlementLedger.decodeBinary(bad))).toMatch(/^LedgerDecodeError: .*string table entry is not UTF-8$/);
    expect(EntitlementLedger.decodeBinary(b).encode()).toBe(l.encode());
  });
});
