/**
 * The ledger frame codec's edges (node.md §4.1 ⟨1.1⟩, §4.3): the envelope a value must leave room for
 * (the widest header of every kind fits in `WIRE_ENVELOPE_BYTES`, so a value within
 * `maxFrameBytes − WIRE_ENVELOPE_BYTES` never makes an oversize frame), and an unknown kind refused as
 * `schema` before anything after the kind byte is read (issue 19, wire.ts survivors).
 */
import { EntitlementLedger } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import { encodeLedgerFrame, readLedgerFrame, WIRE_ENVELOPE_BYTES, WIRE_VERSION } from "../src/replication/wire.ts";
import type { LedgerMessage } from "../src/replication/messages.ts";

const G = "0123456789abcdef";
const PEER = "12D3KooWJWEKvSFbben74C7H4YtKjhPMTDxd7gP7zxWSUEeF27st";
const MAX = Number.MAX_SAFE_INTEGER;

describe("ledger frames: the envelope (node.md §4.1–4.2)", () => {
  it("every kind's widest header fits the envelope; the widest (a delta carrying an ack) is 63 bytes of 71", () => {
    const valueBytes = EntitlementLedger.EMPTY.encodeBinary([PEER]).length;
    const widest: LedgerMessage[] = [
      { kind: "delta", inc: MAX, seq: MAX, parts: MAX, part: MAX - 1, ack: { inc: MAX, seq: MAX, based: true }, value: EntitlementLedger.EMPTY },
      { kind: "ack", inc: MAX, seq: MAX, based: true },
      { kind: "resend", inc: MAX, from: MAX, to: MAX },
      { kind: "digest", inc: MAX, digest: "ffffffffffffffff", upThrough: MAX },
      { kind: "state-request" },
      { kind: "state", inc: MAX, upThrough: MAX, transfer: MAX, parts: MAX, part: MAX - 1, value: EntitlementLedger.EMPTY },
    ];
    const headers = widest.map((m) => {
      const frame = encodeLedgerFrame(m, PEER, G);
      const r = readLedgerFrame(frame, PEER, G);
      expect(r.ok).toBe(true);
      return frame.length - ("value" in m ? valueBytes : 0);
    });
    // version, kind, genesis, author tag = 14; a safe integer's varint is 8 bytes; the delta's ack flag is 1.
    expect(headers).toEqual([14 + 6 * 8 + 1, 14 + 2 * 8 + 1, 14 + 3 * 8, 14 + 8 + 2 * 8, 14, 14 + 5 * 8]);
    for (const h of headers) expect(h).toBeLessThanOrEqual(WIRE_ENVELOPE_BYTES);
    expect(WIRE_ENVELOPE_BYTES).toBe(71);
  });
});

describe("ledger frames: an unknown kind is `schema`, whatever follows it (node.md §4.3)", () => {
  it("kind 0, 7 and 255 are refused as schema before the genesis or author is looked at", () => {
    const other = [0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10];
    for (const kind of [0, 7, 255]) {
      const read = (b: Uint8Array) => {
        const r = readLedgerFrame(b, PEER, G);
        return r.ok ? "ok" : r.reason;
      };
      expect(read(Uint8Array.of(WIRE_VERSION, kind))).toBe("schema"); // nothing after the kind: not `decode`
      expect(read(Uint8Array.of(WIRE_VERSION, kind, ...other, 0, 0, 0, 0))).toBe("schema"); // another genesis: not `genesis-mismatch`
      const good = encodeLedgerFrame({ kind: "state-request" }, PEER, G);
      expect(read(good)).toBe("ok");
      expect(readLedgerFrame(good, "someone-else", G)).toEqual({ ok: false, reason: "not-author" });
      const relabelled = Uint8Array.of(WIRE_VERSION, kind, ...good.subarray(2));
      expect(readLedgerFrame(relabelled, "someone-else", G)).toEqual({ ok: false, reason: "schema" }); // not `not-author`
    }
  });
});
