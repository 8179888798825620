/**
 * The on-disk records of the Raft log store, and the scan that reads them back and tells a torn tail from
 * corruption.
 *
 * A record is `u32 bodyLength | u32 crc32c(body) | body`, zero-padded to a multiple of 8 bytes, little-endian.
 * The body opens with `u8 type | u8 flags | f64 batch`. Every storage call writes one *batch* of records with one
 * write and one sync; all its records carry the same batch number (one more than the previous batch's) and the
 * last one carries the END flag. Recovery applies whole batches only, so each storage call is all-or-nothing.
 *
 * Torn tail versus corruption, in the newest segment: at the first record that does not check out (length out
 * of bounds, checksum mismatch, or non-zero bytes after the zero end marker), the scan looks for intact records
 * further on. A crash can only tear the batch being written, so if every intact record after the bad one belongs
 * to that batch (or there is none), the batch is a torn tail and is dropped. An intact record of any other
 * batch after it means an acknowledged record went bad: corruption, and the member refuses to start. In an older
 * segment every bad record is corruption. (A byte flipped inside the final batch itself cannot be told from a
 * torn write; that batch is dropped — the one case where corruption is not detected, as in etcd's WAL.)
 */
import { crc32c } from "./crc32c.ts";
import { decodeConfig, encodeConfig, utf8Length } from "./codec.ts";
import { RaftRestoreError } from "./errors.ts";
import type { EntryKind, LogEntry } from "./types.ts";

/** Largest record body; a longer length field is damage, not data. */
export const WAL_MAX_RECORD_BYTES = 64 * 1024 * 1024;
/** Version written in each segment's header record. */
export const WAL_FORMAT_VERSION = 1;

const HEADER = 8;
const BODY_PREFIX = 10; // type, flags, batch

const enum_ = { segment: 1, hardState: 2, entry: 3, truncate: 4 } as const;
const FLAG_END = 1;
const KIND_CODE: Record<EntryKind, number> = { app: 1, noop: 2, config: 3 };
const KIND_OF: Record<number, EntryKind> = { 1: "app", 2: "noop", 3: "config" };

/** One decoded record. */
export type WalRecord =
  | { readonly type: "segment"; readonly version: number; readonly seq: number }
  | { readonly type: "hardState"; readonly term: number; readonly votedFor: string | null }
  | { readonly type: "entry"; readonly entry: LogEntry }
  | { readonly type: "truncate"; readonly index: number };

/** A record as found in a segment: where it sits, its batch, and whether it ends the batch. */
export interface ScannedRecord {
  readonly record: WalRecord;
  readonly offset: number;
  readonly batch: number;
  readonly end: boolean;
}


const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });
const pad8 = (n: number): number => (n + 7) & ~7;

/** Appends records to one growing buffer: the bytes of one batch. */
export class BatchWriter {
  #buf = new Uint8Array(4096);
  #view = new DataView(this.#buf.buffer);
  #len = 0;
  #lastRecord = -1;

  /** Bytes the batch takes so far. */
  get size(): number {
    return this.#len;
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const b = new Uint8Array(size);
    b.set(this.#buf.subarray(0, this.#len));
    this.#buf = b;
    this.#view = new DataView(b.buffer);
  }

  /** Starts a record of `type` whose payload is `payloadBytes` long; returns the payload's offset to fill. */
  #begin(type: number, payloadBytes: number): number {
    const bodyLen = BODY_PREFIX + payloadBytes;
    if (bodyLen > WAL_MAX_RECORD_BYTES) throw new RangeError(`raft log: a ${bodyLen}-byte record exceeds WAL_MAX_RECORD_BYTES`);
    const total = HEADER + pad8(bodyLen);
    this.#reserve(total);
    const at = this.#len;
    this.#buf.fill(0, at, at + total);
    this.#view.setUint32(at, bodyLen, true);
    this.#buf[at + HEADER] = type;
    this.#lastRecord = at;
    this.#len += total;
    return at + HEADER + BODY_PREFIX;
  }

  segment(seq: number): void {
    const p = this.#begin(enum_.segment, 9);
    this.#buf[p] = WAL_FORMAT_VERSION;
    this.#view.setFloat64(p + 1, seq, true);
  }

  hardState(term: number, votedFor: string | null): void {
    const vote = votedFor === null ? null : enc.encode(votedFor);
    const p = this.#begin(enum_.hardState, 8 + 4 + (vote?.length ?? 0));
    this.#view.setFloat64(p, term, true);
    this.#view.setInt32(p + 8, vote === null ? -1 : vote.length, true);
    if (vote !== null) this.#buf.set(vote, p + 12);
  }

  entry(e: LogEntry): void {
    const client = e.key === null ? null : e.key.client;
    const clientBytes = client === null ? 0 : utf8Length(client);
    const body = e.kind === "config" && e.config !== undefined ? encodeConfig(e.config) : e.command;
    const payload = 8 + 8 + 8 + 1 + 1 + (client === null ? 0 : 4 + clientBytes + 8) + body.length;
    const p = this.#begin(enum_.entry, payload);
    const v = this.#view;
    v.setFloat64(p, e.index, true);
    v.setFloat64(p + 8, e.term, true);
    v.setFloat64(p + 16, e.stampedAt, true);
    this.#buf[p + 24] = KIND_CODE[e.kind];
    let q = p + 26;
    if (client !== null) {
      this.#buf[p + 25] = 1;
      v.setUint32(q, clientBytes, true);
      if (typeof client === "string") enc.encodeInto(client, this.#buf.subarray(q + 4, q + 4 + clientBytes));
      else this.#buf.set(enc.encode(client), q + 4); // an untyped caller's non-string, as TextEncoder converts it
      q += 4 + clientBytes;
      v.setFloat64(q, e.key!.seq, true);
      q += 8;
    }
    this.#buf.set(body, q);
  }

  truncate(index: number): void {
    const p = this.#begin(enum_.truncate, 8);
    this.#view.setFloat64(p, index, true);
  }

  /** The batch's bytes: every record stamped with `batch`, the last one flagged END, every checksum filled in. */
  finish(batch: number): Uint8Array {
    if (this.#lastRecord < 0) throw new Error("raft log: an empty batch");
    this.#buf[this.#lastRecord + HEADER + 1] = FLAG_END;
    let at = 0;
    while (at < this.#len) {
      const bodyLen = this.#view.getUint32(at, true);
      this.#view.setFloat64(at + HEADER + 2, batch, true);
      this.#view.setUint32(at + 4, crc32c(this.#buf, at + HEADER, at + HEADER + bodyLen), true);
      at += HEADER + pad8(bodyLen);
    }
    return this.#buf.subarray(0, this.#len);
  }
}

class Undecodable extends Error {}

function decodeBody(b: Uint8Array, v: DataView, start: number, end: number): WalRecord {
  const type = b[start]!;
  const p = start + BODY_PREFIX;
  const need = (n: number): void => {
    if (p + n > end) throw new Undecodable("short record");
  };
  switch (type) {
    case enum_.segment:
      need(9);
      return { type: "segment", version: b[p]!, seq: v.getFloat64(p + 1, true) };
    case enum_.hardState: {
      need(12);
      const n = v.getInt32(p + 8, true);
      if (n < -1 || p + 12 + Math.max(0, n) > end) throw new Undecodable("bad vote length");
      return { type: "hardState", term: v.getFloat64(p, true), votedFor: n < 0 ? null : dec.decode(b.subarray(p + 12, p + 12 + n)) };
    }
    case enum_.entry: {
      need(26);
      const index = v.getFloat64(p, true);
      const term = v.getFloat64(p + 8, true);
      const stampedAt = v.getFloat64(p + 16, true);
      const kind = KIND_OF[b[p + 24]!];
      if (kind === undefined) throw new Undecodable(`unknown entry kind ${b[p + 24]}`);
      let q = p + 26;
      let key: LogEntry["key"] = null;
      if (b[p + 25] === 1) {
        if (q + 4 > end) throw new Undecodable("short key");
        const n = v.getUint32(q, true);
        if (q + 4 + n + 8 > end) throw new Undecodable("short key");
        key = { client: dec.decode(b.subarray(q + 4, q + 4 + n)), seq: v.getFloat64(q + 4 + n, true) };
        q += 4 + n + 8;
      }
      const body = b.slice(q, end);
      if (kind === "config") {
        const config = decodeConfig(body);
        if (config === null) throw new Undecodable(`entry ${index}: undecodable configuration`);
        return { type: "entry", entry: { index, term, kind, key, command: new Uint8Array(0), config, stampedAt } };
      }
      return { type: "entry", entry: { index, term, kind, key, command: body, stampedAt } };
    }
    case enum_.truncate:
      need(8);
      return { type: "truncate", index: v.getFloat64(p, true) };
    default:
      throw new Undecodable(`unknown record type ${type}`);
  }
}

/** The intact record at `at`, or null when there is none there (bounds or checksum fail). */
function recordAt(b: Uint8Array, v: DataView, at: number): { bodyLen: number; batch: number; flags: number } | null {
  if (at + HEADER > b.length) return null;
  const bodyLen = v.getUint32(at, true);
  if (bodyLen < BODY_PREFIX || bodyLen > WAL_MAX_RECORD_BYTES || at + HEADER + bodyLen > b.length) return null;
  if (crc32c(b, at + HEADER, at + HEADER + bodyLen) !== v.getUint32(at + 4, true)) return null;
  return { bodyLen, batch: v.getFloat64(at + HEADER + 2, true), flags: b[at + HEADER + 1]! };
}

/** What a segment scan found. */
export interface SegmentScan {
  /** Records of complete batches, in order. */
  readonly records: readonly ScannedRecord[];
  /** Where the next batch goes: after the last complete batch. */
  readonly tail: number;
  /** One past the last non-zero byte: [tail, dataEnd) must be zeroed before writing there again. */
  readonly dataEnd: number;
  /** The highest batch number seen (including a dropped torn batch). */
  readonly lastBatch: number;
  /** Why a torn tail was dropped, if one was. */
  readonly torn: string | null;
}

/**
 * Reads one segment. `newest` says whether it is the last segment (the only one a crash can have torn). Throws
 * `RaftRestoreError` naming `where` and the offset when the bytes are damaged.
 */
export function scanSegment(b: Uint8Array, newest: boolean, where: string): SegmentScan {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let dataEnd = b.length;
  while (dataEnd > 0 && b[dataEnd - 1] === 0) dataEnd--;
  const out: ScannedRecord[] = [];
  let batchStart = 0; // index into `out` of the first record of the batch in progress
  let tail = 0;
  let lastBatch = -1;
  let at = 0;
  const corrupt = (offset: number, why: string): never => {
    throw new RaftRestoreError(`raft log ${where} is corrupt at byte ${offset}: ${why}; the member refuses to start (repair from a backup, or replace the member under a new NodeId, governed.md R-P5)`);
  };
  let bad: string | null = null;
  while (at < dataEnd) {
    if (at + HEADER <= b.length && v.getUint32(at, true) === 0 && v.getUint32(at + 4, true) === 0) {
      bad = "data after the end marker";
      break;
    }
    const r = recordAt(b, v, at);
    if (r === null) {
      bad = at + HEADER > b.length || v.getUint32(at, true) < BODY_PREFIX || v.getUint32(at, true) > WAL_MAX_RECORD_BYTES || at + HEADER + v.getUint32(at, true) > b.length ? "record length out of bounds" : "checksum mismatch";
      break;
    }
    // A record's padding is written as zeros with it and is not under its checksum: a byte that is not zero there
    // is damage like any other (caught here, not left to pass unnoticed), read as a torn tail only in the newest
    // segment's last batch, as a checksum mismatch is.
    let padded = true;
    for (let q = at + HEADER + r.bodyLen, padEnd = Math.min(at + HEADER + pad8(r.bodyLen), b.length); q < padEnd; q++) if (b[q] !== 0) padded = false;
    if (!padded) {
      bad = "non-zero bytes in a record's padding";
      break;
    }
    let record: WalRecord;
    try {
      record = decodeBody(b, v, at + HEADER, at + HEADER + r.bodyLen);
    } catch (e) {
      if (e instanceof Undecodable || e instanceof TypeError) corrupt(at, `an intact record does not decode (${(e as Error).message})`);
      throw e;
    }
    if (lastBatch >= 0 && r.batch !== lastBatch && out.length > batchStart) corrupt(at, `batch ${lastBatch} has no end record`);
    if (lastBatch >= 0 && r.batch < lastBatch) corrupt(at, `batch number ${r.batch} after ${lastBatch}`);
    lastBatch = r.batch;
    out.push({ record, offset: at, batch: r.batch, end: (r.flags & FLAG_END) !== 0 });
    at += HEADER + pad8(r.bodyLen);
    if ((r.flags & FLAG_END) !== 0) {
      batchStart = out.length;
      tail = at;
    }
  }
  let torn: string | null = null;
  if (bad !== null) {
    if (!newest) corrupt(at, bad);
    // the batch in progress at `at`: the unfinished one, or the next after the last complete one
    const inProgress = out.length > batchStart ? out[out.length - 1]!.batch : lastBatch + 1;
    for (let q = at + 8; q + HEADER <= dataEnd; q += 8) {
      const r = recordAt(b, v, q);
      if (r === null) continue;
      if (r.batch !== inProgress) corrupt(at, `${bad}, followed by an intact record of batch ${r.batch} at byte ${q} (only the last batch can be torn by a crash)`);
      q += HEADER + pad8(r.bodyLen) - 8;
    }
    lastBatch = Math.max(lastBatch, inProgress);
    torn = `${bad} at byte ${at}`;
  } else if (out.length > batchStart) {
    if (!newest) corrupt(out[batchStart]!.offset, `batch ${lastBatch} has no end record`);
    torn = `batch ${lastBatch} has no end record`;
  }
  return { records: out.slice(0, batchStart), tail, dataEnd, lastBatch, torn };
}
