import { ByteReader, ByteWriter, EntitlementLedger, LedgerDecodeError, LedgerIdTooLongError, fnv1a64 } from "@heddle/ledger";
import { MAX_ID_LENGTH } from "../wire-schema.ts";
import type { RejectReason } from "../rejection.ts";
import type { AckInfo, DeltaMessage, LedgerMessage, StateMessage } from "./messages.ts";

/**
 * The ledger channel's frames: a compact, versioned binary encoding — a deliberate deviation from node.md §4.1,
 * which specifies canonical JSON frames with `v: 1` (see the package README: no ⟨1.1⟩ amendment covers it). The ledger's
 * canonical JSON stays the format for storage and hashing; on the wire every frame is
 *
 *     u8 version=2 · u8 kind · 8 bytes genesis digest · 4 bytes author tag · fields (LEB128 varints) · [ledger value]
 *
 * and ledger values use `@heddle/ledger`'s binary form with the sender's id as a known string (never
 * sent: it is the frame's authenticated `from`). A delta, digest or state is about the sender's own
 * stream, an ack or resend about the recipient's, so no id is spent on naming streams. The author tag
 * — the first 4 bytes of FNV-1a-64 of the author's id — keeps §4.3's `not-author` rule at 4 bytes instead
 * of a 52-character peer id: a frame replayed by another peer is refused, not read as that peer's writes.
 * Version 1 was the canonical-JSON form; a frame of any other version is `bad-version`.
 *
 * | kind | fields |
 * |---|---|
 * | 1 delta | inc, seq, parts, part, ack flag (0 none, 1 ack, 2 based ack) [, ack inc, ack seq], value |
 * | 2 ack | inc, seq, based (0/1) |
 * | 3 resend | inc, from, to |
 * | 4 digest | inc, 8-byte digest, upThrough |
 * | 5 state-request | — |
 * | 6 state | inc, upThrough, transfer, parts, part, value |
 */
export const WIRE_VERSION = 2;

const KIND_CODE: Record<LedgerMessage["kind"], number> = { delta: 1, ack: 2, resend: 3, digest: 4, "state-request": 5, state: 6 };
const KIND_OF = ["", "delta", "ack", "resend", "digest", "state-request", "state"] as const;

/** Header bytes at their widest (version, kind, genesis, author tag, six 8-byte varints, flags): what a value may not use. */
export const WIRE_ENVELOPE_BYTES = 2 + 8 + 4 + 6 * 8 + 1 + 8;

const authorTags = new Map<string, string>();

/** The 8 hex digits of an author's tag (cached: a node talks to a bounded set of peers). */
function authorTag(id: string): string {
  let t = authorTags.get(id);
  // Stryker disable next-line ConditionalExpression: recomputing a cached tag gives the same 8 digits; the cache saves only the hash
  if (t === undefined) {
    // Stryker disable next-line all: when the cache is dropped shows only in memory; a dropped tag is recomputed to the same value
    if (authorTags.size >= 65_536) authorTags.clear();
    t = fnv1a64(id).slice(0, 8);
    authorTags.set(id, t);
  }
  return t;
}

function hexToBytes(hex: string, w: ByteWriter): void {
  for (let i = 0; i < hex.length; i += 2) w.u8(parseInt(hex.slice(i, i + 2), 16));
}

function bytesToHex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** Encodes `m` from `self` for a peer sharing `genesis` (16 hex digits). */
export function encodeLedgerFrame(m: LedgerMessage, self: string, genesis: string): Uint8Array {
  // Stryker disable next-line all: only the writer's initial capacity; ByteWriter grows to whatever is written
  const w = new ByteWriter(m.kind === "delta" || m.kind === "state" ? 128 : 32);
  w.u8(WIRE_VERSION).u8(KIND_CODE[m.kind]);
  hexToBytes(genesis, w);
  hexToBytes(authorTag(self), w);
  switch (m.kind) {
    case "delta":
      w.uint(m.inc).uint(m.seq).uint(m.parts).uint(m.part);
      if (m.ack === null) w.u8(0);
      else w.u8(m.ack.based ? 2 : 1).uint(m.ack.inc).uint(m.ack.seq);
      w.bytes(m.value.encodeBinary([self]));
      break;
    case "ack":
      w.uint(m.inc).uint(m.seq).u8(m.based ? 1 : 0);
      break;
    case "resend":
      w.uint(m.inc).uint(m.from).uint(m.to);
      break;
    case "digest":
      w.uint(m.inc);
      hexToBytes(m.digest, w);
      w.uint(m.upThrough);
      break;
    case "state-request":
      break;
    case "state":
      w.uint(m.inc).uint(m.upThrough).uint(m.transfer).uint(m.parts).uint(m.part);
      w.bytes(m.value.encodeBinary([self]));
      break;
  }
  return w.finish();
}

/** Outcome of reading one frame: the message, or why it is dropped whole (node.md §4.3). */
export type FrameRead = { ok: true; message: LedgerMessage } | { ok: false; reason: RejectReason };

class SchemaViolation extends Error {}

function need(cond: boolean): void {
  if (!cond) throw new SchemaViolation();
}

/**
 * Reads a ledger-channel frame from `from` for a node whose genesis digest is `genesis`: version, kind,
 * genesis, author, fields, then the ledger value with the ledger's strict decoder. Never throws: every bad
 * frame comes back as a reason — `bad-version`, `decode` (truncated or malformed bytes), `schema` (a field
 * out of its range, an unknown kind, trailing bytes), `genesis-mismatch`, `not-author`, `bad-value`.
 */
export function readLedgerFrame(frame: Uint8Array, from: string, genesis: string): FrameRead {
  if (frame.length === 0) return { ok: false, reason: "decode" };
  if (frame[0] !== WIRE_VERSION) return { ok: false, reason: "bad-version" };
  const r = new ByteReader(frame, 1);
  let message: LedgerMessage;
  let value: { at: number } | null = null;
  try {
    const kind = KIND_OF[r.u8()];
    need(kind !== undefined && kind !== "");
    const g = bytesToHex(r.bytes(8));
    if (g !== genesis) return { ok: false, reason: "genesis-mismatch" };
    if (bytesToHex(r.bytes(4)) !== authorTag(from)) return { ok: false, reason: "not-author" };
    switch (kind) {
      case "delta": {
        const inc = r.uint();
        const seq = r.uint();
        const parts = r.uint();
        const part = r.uint();
        need(seq >= 1 && part < parts); // part ≥ 0, so this also says parts ≥ 1
        const flag = r.u8();
        need(flag <= 2);
        let ack: AckInfo | null = null;
        if (flag !== 0) ack = { inc: r.uint(), seq: r.uint(), based: flag === 2 };
        value = { at: r.offset };
        message = { kind, inc, seq, part, parts, ack, value: EntitlementLedger.EMPTY };
        break;
      }
      case "ack": {
        const inc = r.uint();
        const seq = r.uint();
        const based = r.u8();
        need(based <= 1);
        message = { kind, inc, seq, based: based === 1 };
        break;
      }
      case "resend": {
        const inc = r.uint();
        const f = r.uint();
        const t = r.uint();
        need(f >= 1 && f <= t);
        message = { kind, inc, from: f, to: t };
        break;
      }
      case "digest": {
        const inc = r.uint();
        const digest = bytesToHex(r.bytes(8));
        message = { kind, inc, digest, upThrough: r.uint() };
        break;
      }
      case "state-request":
        message = { kind };
        break;
      case "state": {
        const inc = r.uint();
        const upThrough = r.uint();
        const transfer = r.uint();
        const parts = r.uint();
        const part = r.uint();
        need(part < parts); // part ≥ 0, so this also says parts ≥ 1
        value = { at: r.offset };
        message = { kind, inc, upThrough, transfer, part, parts, value: EntitlementLedger.EMPTY };
        break;
      }
      default:
        throw new SchemaViolation();
    }
    if (value === null) need(r.remaining === 0);
  } catch (e) {
    if (e instanceof SchemaViolation) return { ok: false, reason: "schema" };
    // Stryker disable next-line ConditionalExpression: the reader throws only LedgerDecodeError and need() only SchemaViolation, so nothing else reaches here
    if (e instanceof LedgerDecodeError) return { ok: false, reason: "decode" };
    throw e;
  }
  if (value !== null) {
    let decoded: EntitlementLedger;
    try {
      decoded = EntitlementLedger.decodeBinary(frame.subarray(value.at), [from], MAX_ID_LENGTH);
    } catch (e) {
      // node.md §4.3: a string id longer than 256 code units is a schema violation
      if (e instanceof LedgerIdTooLongError) return { ok: false, reason: "schema" };
      // Stryker disable next-line ConditionalExpression: decodeBinary throws LedgerDecodeError (its range checks included), the RangeError arm is defence in depth
      if (e instanceof LedgerDecodeError || e instanceof RangeError) return { ok: false, reason: "bad-value" };
      throw e;
    }
    message = { ...(message as DeltaMessage | StateMessage), value: decoded };
  }
  return { ok: true, message };
}
