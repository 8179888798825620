/**
 * The ledger channel's frame layout and its refusals, byte by byte (node.md §4.1 ⟨1.1⟩, §4.3; issue 19,
 * wire.ts survivors): what the encoder writes for each kind (version, kind code, genesis, author tag,
 * the kind's fields in the documented order, the ack flag), and, on frames written by hand, each field's
 * range check (`schema`), truncation and malformed varints (`decode`), other versions (`bad-version`) and
 * ledger values the ledger's decoder refuses (`bad-value`) — checked in the documented order.
 */
import { ByteWriter, EntitlementLedger, fnv1a64 } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import type { LedgerMessage } from "../src/replication/messages.ts";
import { encodeLedgerFrame, readLedgerFrame, WIRE_VERSION } from "../src/replication/wire.ts";

const G = "0123456789abcdef";
const G_BYTES = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
const PEER = "12D3KooWJWEKvSFbben74C7H4YtKjhPMTDxd7gP7zxWSUEeF27st";
const hex = (s: string) => Array.from({ length: s.length / 2 }, (_, i) => parseInt(s.slice(2 * i, 2 * i + 2), 16));
/** The first 4 bytes of FNV-1a-64 of the author's id. */
const TAG = hex(fnv1a64(PEER).slice(0, 8));
const head = (kind: number) => [WIRE_VERSION, kind, ...G_BYTES, ...TAG];
const EMPTY = [...EntitlementLedger.EMPTY.encodeBinary([PEER])];

/** A frame from PEER: the header for `kind`, then `fields` as LEB128 varints, then `tail` bytes as they are. */
function frame(kind: number, fields: number[], tail: number[] = []): Uint8Array {
  const w = new ByteWriter(64);
  for (const b of head(kind)) w.u8(b);
  for (const f of fields) w.uint(f);
  for (const b of tail) w.u8(b);
  return w.finish();
}

const read = (b: Uint8Array): string | LedgerMessage => {
  const r = readLedgerFrame(b, PEER, G);
  return r.ok ? r.message : r.reason;
};
const plain = (m: string | LedgerMessage) => (typeof m === "object" && "value" in m ? { ...m, value: m.value.encode() } : m);

describe("ledger frames: what the encoder writes (node.md §4.1 ⟨1.1⟩)", () => {
  it("every kind: version 2, its code, genesis, author tag, then its fields in the documented order", () => {
    const enc = (m: LedgerMessage) => [...encodeLedgerFrame(m, PEER, G)];
    expect(head(1).length).toBe(14);
    expect(enc({ kind: "delta", inc: 1, seq: 2, parts: 4, part: 3, ack: null, value: EntitlementLedger.EMPTY })).toEqual([...head(1), 1, 2, 4, 3, 0, ...EMPTY]);
    expect(enc({ kind: "delta", inc: 1, seq: 2, parts: 4, part: 3, ack: { inc: 5, seq: 6, based: false }, value: EntitlementLedger.EMPTY })).toEqual([
      ...head(1), 1, 2, 4, 3, 1, 5, 6, ...EMPTY,
    ]);
    expect(enc({ kind: "delta", inc: 1, seq: 2, parts: 4, part: 3, ack: { inc: 5, seq: 6, based: true }, value: EntitlementLedger.EMPTY })).toEqual([
      ...head(1), 1, 2, 4, 3, 2, 5, 6, ...EMPTY,
    ]);
    expect(enc({ kind: "ack", inc: 7, seq: 8, based: true })).toEqual([...head(2), 7, 8, 1]);
    expect(enc({ kind: "ack", inc: 7, seq: 8, based: false })).toEqual([...head(2), 7, 8, 0]);
    expect(enc({ kind: "resend", inc: 9, from: 10, to: 11 })).toEqual([...head(3), 9, 10, 11]);
    expect(enc({ kind: "digest", inc: 12, digest: "00112233445566ff", upThrough: 13 })).toEqual([...head(4), 12, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0xff, 13]);
    expect(enc({ kind: "state-request" })).toEqual(head(5));
    expect(enc({ kind: "state", inc: 14, upThrough: 15, transfer: 16, parts: 18, part: 17, value: EntitlementLedger.EMPTY })).toEqual([
      ...head(6), 14, 15, 16, 18, 17, ...EMPTY,
    ]);
  });

  it("the author tag is the author's: two authors' frames differ only there, and each reads back only as its own", () => {
    const m: LedgerMessage = { kind: "ack", inc: 1, seq: 1, based: false };
    const a = encodeLedgerFrame(m, PEER, G);
    const b = encodeLedgerFrame(m, "B", G);
    expect([...b.subarray(10, 14)]).toEqual(hex(fnv1a64("B").slice(0, 8)));
    expect([...a.subarray(0, 10)]).toEqual([...b.subarray(0, 10)]);
    expect([...a.subarray(14)]).toEqual([...b.subarray(14)]);
    expect(readLedgerFrame(b, "B", G)).toEqual({ ok: true, message: m });
    expect(readLedgerFrame(b, PEER, G)).toEqual({ ok: false, reason: "not-author" });
  });
});

describe("ledger frames: each field's range (node.md §4.3 `schema`)", () => {
  it("delta: seq from 1; part below parts; ack flag 0, 1 or 2 and nothing else", () => {
    const v = { value: EntitlementLedger.EMPTY.encode() };
    expect(plain(read(frame(1, [0, 1, 1, 0, 0], EMPTY)))).toEqual({ kind: "delta", inc: 0, seq: 1, parts: 1, part: 0, ack: null, ...v });
    expect(read(frame(1, [0, 0, 1, 0, 0], EMPTY))).toBe("schema");
    expect(read(frame(1, [0, 1, 0, 0, 0], EMPTY))).toBe("schema"); // no parts
    expect(read(frame(1, [0, 1, 3, 3, 0], EMPTY))).toBe("schema"); // part = parts
    expect(plain(read(frame(1, [0, 1, 3, 2, 0], EMPTY)))).toMatchObject({ parts: 3, part: 2 });
    expect(plain(read(frame(1, [0, 1, 1, 0, 1, 4, 5], EMPTY)))).toMatchObject({ ack: { inc: 4, seq: 5, based: false } });
    expect(plain(read(frame(1, [0, 1, 1, 0, 2, 4, 5], EMPTY)))).toMatchObject({ ack: { inc: 4, seq: 5, based: true } });
    expect(read(frame(1, [0, 1, 1, 0, 3, 4, 5], EMPTY))).toBe("schema");
    expect(read(frame(1, [0, 1, 1, 0, 255, 4, 5], EMPTY))).toBe("schema");
  });

  it("ack: based is 0 or 1; nothing may follow", () => {
    expect(read(frame(2, [3, 4, 0]))).toEqual({ kind: "ack", inc: 3, seq: 4, based: false });
    expect(read(frame(2, [3, 4, 1]))).toEqual({ kind: "ack", inc: 3, seq: 4, based: true });
    expect(read(frame(2, [3, 4, 2]))).toBe("schema");
    expect(read(frame(2, [3, 4], [0x80]))).toBe("schema"); // one byte, not a varint: 0x80 is out of range, not a continuation
    expect(read(frame(2, [3, 4, 1], [0]))).toBe("schema");
    expect(read(frame(2, [3, 0, 1]))).toEqual({ kind: "ack", inc: 3, seq: 0, based: true }); // nothing acknowledged yet
  });

  it("resend: a span from 1 with from ≤ to (a single seq is a span)", () => {
    expect(read(frame(3, [1, 1, 1]))).toEqual({ kind: "resend", inc: 1, from: 1, to: 1 });
    expect(read(frame(3, [1, 1, 5]))).toEqual({ kind: "resend", inc: 1, from: 1, to: 5 });
    expect(read(frame(3, [1, 0, 5]))).toBe("schema");
    expect(read(frame(3, [1, 0, 0]))).toBe("schema");
    expect(read(frame(3, [1, 6, 5]))).toBe("schema");
    expect(read(frame(3, [1, 2, 3], [0]))).toBe("schema");
  });

  it("digest: eight digest bytes read back as 16 hex digits, leading zeros kept; nothing may follow", () => {
    expect(read(frame(4, [2], [0, 1, 2, 3, 4, 5, 6, 0x0a, 0]))).toEqual({ kind: "digest", inc: 2, digest: "000102030405060a", upThrough: 0 });
    expect(read(frame(4, [2], [0, 1, 2, 3, 4, 5, 6, 0x0a, 0, 0]))).toBe("schema");
    expect(read(frame(4, [2], [0, 1, 2, 3, 4, 5, 6]))).toBe("decode");
  });

  it("state-request: nothing may follow the header", () => {
    expect(read(frame(5, []))).toEqual({ kind: "state-request" });
    expect(read(frame(5, [0]))).toBe("schema");
  });

  it("state: part below parts; inc, upThrough and transfer may be 0", () => {
    expect(plain(read(frame(6, [0, 0, 0, 1, 0], EMPTY)))).toEqual({ kind: "state", inc: 0, upThrough: 0, transfer: 0, parts: 1, part: 0, value: EntitlementLedger.EMPTY.encode() });
    expect(read(frame(6, [0, 0, 0, 0, 0], EMPTY))).toBe("schema");
    expect(read(frame(6, [0, 0, 0, 2, 2], EMPTY))).toBe("schema");
    expect(plain(read(frame(6, [1, 2, 3, 2, 1], EMPTY)))).toMatchObject({ inc: 1, upThrough: 2, transfer: 3, parts: 2, part: 1 });
  });
});

describe("ledger frames: version, truncation, varints and values (node.md §4.3)", () => {
  it("any version byte but 2 is bad-version, whatever follows", () => {
    const good = frame(2, [1, 1, 0]);
    for (const v of [0, 1, 3, 0x7b, 255]) expect(read(Uint8Array.of(v, ...good.subarray(1)))).toBe("bad-version");
    expect(read(Uint8Array.of(1))).toBe("bad-version");
    expect(read(new Uint8Array(0))).toBe("decode");
  });

  it("every proper prefix of a good header-only frame is decode (a missing byte is never read as a zero)", () => {
    for (const good of [frame(2, [300, 70_000, 1]), frame(3, [1, 2, 3]), frame(4, [5], [1, 2, 3, 4, 5, 6, 7, 8, 9])]) {
      expect(typeof read(good)).toBe("object");
      for (let n = 1; n < good.length; n++) expect(read(good.subarray(0, n))).toBe("decode");
    }
  });

  it("a varint field that is not minimal or not a safe integer is decode", () => {
    expect(read(Uint8Array.of(...head(2), 0x81, 0x00, 1, 0))).toBe("decode");
    expect(read(Uint8Array.of(...head(2), 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0))).toBe("decode");
  });

  it("a value the ledger's decoder refuses is bad-value, also when the value is missing or followed by bytes", () => {
    expect(read(frame(1, [0, 1, 1, 0, 0]))).toBe("bad-value");
    expect(read(frame(6, [0, 0, 0, 1, 0]))).toBe("bad-value");
    expect(read(frame(1, [0, 1, 1, 0, 0], [...EMPTY, 0]))).toBe("bad-value");
    expect(read(frame(1, [0, 1, 1, 0, 0], [0xee]))).toBe("bad-value");
    // the header's checks come first: a bad value under a bad field is schema
    expect(read(frame(1, [0, 0, 1, 0, 0], [0xee]))).toBe("schema");
  });

  it("genesis is checked before the author, and the author before the fields", () => {
    const other = [0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10];
    expect(read(Uint8Array.of(WIRE_VERSION, 2, ...other, 0, 0, 0, 0))).toBe("genesis-mismatch");
    expect(read(Uint8Array.of(WIRE_VERSION, 2, ...G_BYTES, ...TAG.map((b) => b ^ 1)))).toBe("not-author");
    expect(read(Uint8Array.of(WIRE_VERSION, 2, ...G_BYTES, ...TAG))).toBe("decode");
  });
});
