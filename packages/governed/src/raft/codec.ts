/**
 * The versioned binary encoding of Raft messages and log entries. Deterministic: equal values encode to equal
 * bytes. Decoding never throws: malformed input yields `null` (R-X4). Trailing bytes are ignored so later
 * versions can append fields (rolling upgrades). Encoding throws `RangeError` on a string or count its 16-bit field
 * cannot hold, rather than write it wrapped.
 */
import type { Message } from "./message.ts";
import type { ClusterConfig, EntryKind, LogEntry, ProposalKey } from "./types.ts";

/** Codec version byte at the head of every frame. */
export const CODEC_VERSION = 1;
/** Longest string field (node ids, client ids) in bytes. */
export const MAX_STRING_BYTES = 1024;
/** Most members listed in one configuration. */
export const MAX_CONFIG_MEMBERS = 1024;

const TYPE_CODE: Record<Message["type"], number> = {
  preVote: 1,
  preVoteReply: 2,
  vote: 3,
  voteReply: 4,
  append: 5,
  appendReply: 6,
  snapshot: 7,
  snapshotReply: 8,
  forward: 9,
  forwardReply: 10,
  timeoutNow: 11,
};
const KIND_CODE: Record<EntryKind, number> = { app: 1, noop: 2, config: 3 };
const KIND_OF: readonly (EntryKind | undefined)[] = [undefined, "app", "noop", "config"];
const OUTCOME: readonly ("committed" | "notLeader" | "failed")[] = ["committed", "notLeader", "failed"];
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Fixed bytes of an AppendEntries frame around its entries (version, type, five numbers, count). */
export const APPEND_OVERHEAD_BYTES = 2 + 8 * 5 + 4;
/** Fixed bytes of a Forward frame around its key and command. */
export const FORWARD_OVERHEAD_BYTES = 2 + 8 + 1 + 4;
/** Fixed bytes of an InstallSnapshot frame around its configuration and data (without config members). */
export const SNAPSHOT_OVERHEAD_BYTES = 2 + 8 * 5 + 1 + 4 + 4;

/**
 * The length of `s` in UTF-8 as `TextEncoder` writes it (a lone surrogate becomes U+FFFD, 3 bytes), counted without
 * encoding it: frame sizes are asked for every entry sent to every follower, so encoding just to measure was an
 * allocation per entry per follower.
 */
export function utf8Length(s: string): number {
  // an untyped caller's non-string is measured as TextEncoder converts it (its callers encode it the same way)
  if (typeof s !== "string") return utf8.encode(s).length;
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      n += 1;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 2; // a surrogate pair: 2 code units, 4 bytes
        i++;
        continue;
      }
    }
    n += 2; // the rest of the BMP, and a lone surrogate as U+FFFD: 3 bytes
  }
  return n;
}

/**
 * Why `key` cannot travel in a frame — the limits `decodeMessage` enforces on a proposal key — or `null` when it can.
 * `propose` refuses such a key up front: every receiver would drop the frame carrying it as undecodable.
 */
export function proposalKeyViolation(key: ProposalKey | null): string | null {
  if (key === null) return null;
  const n = utf8Length(key.client);
  if (n > MAX_STRING_BYTES) return `key.client is ${n} UTF-8 bytes, above MAX_STRING_BYTES (${MAX_STRING_BYTES})`;
  if (!Number.isSafeInteger(key.seq) || key.seq < 0) return `key.seq must be a safe integer ≥ 0, got ${String(key.seq)}`;
  return null;
}

/**
 * Why configuration `c` cannot travel in a frame — the limits `decodeMessage` enforces on member lists and ids — or
 * `null` when it can. `changeMembership` refuses such a target up front (`what` names it in the message).
 */
export function configViolation(c: ClusterConfig, what: string): string | null {
  for (const [list, ids] of [["voters", c.voters], ["learners", c.learners]] as const) {
    if (ids.length > MAX_CONFIG_MEMBERS) return `${what}.${list} lists ${ids.length} members, above MAX_CONFIG_MEMBERS (${MAX_CONFIG_MEMBERS})`;
    for (let i = 0; i < ids.length; i++) {
      const n = utf8Length(ids[i]!);
      if (n > MAX_STRING_BYTES) return `${what}.${list}[${i}] is ${n} UTF-8 bytes, above MAX_STRING_BYTES (${MAX_STRING_BYTES})`;
    }
  }
  return null;
}

function strBytes(s: string): number {
  return 2 + utf8Length(s);
}
function keyBytes(k: ProposalKey | null): number {
  return k === null ? 1 : 1 + strBytes(k.client) + 8;
}
function configBytes(c: ClusterConfig): number {
  let n = 4;
  for (const v of c.voters) n += strBytes(v);
  for (const l of c.learners) n += strBytes(l);
  return n;
}

/** Encoded size of one entry inside a frame (exact). */
export function entryBytes(e: LogEntry): number {
  return 8 * 3 + 1 + keyBytes(e.key) + 4 + e.command.length + 1 + (e.config === undefined ? 0 : configBytes(e.config));
}

/** Encoded size of a forward frame carrying this command and key (exact). */
export function forwardBytes(command: Uint8Array, key: ProposalKey | null): number {
  return 2 + 8 + keyBytes(key) + 4 + command.length;
}

class Writer {
  buf: Uint8Array;
  view: DataView;
  pos = 0;
  constructor(size: number) {
    this.buf = new Uint8Array(size);
    this.view = new DataView(this.buf.buffer);
  }
  ensure(n: number): void {
    // Stryker disable next-line EqualityOperator: growing a buffer that is exactly full only changes capacity; done() returns the same bytes
    if (this.pos + n <= this.buf.length) return;
    // Stryker disable next-line ArithmeticOperator: the new size is still at least pos + n, so only the growth step (capacity) differs, never the bytes
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf);
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number): void {
    // Stryker disable next-line CallExpression: no u8 is ever written to a full buffer: append writers are pre-sized to the exact frame size plus 18 spare, and every other frame's u8 fields lie within its first 43 bytes of a 128-byte buffer
    this.ensure(1);
    this.buf[this.pos++] = v;
  }
  u16(v: number): void {
    // DataView would write v modulo 2^16: a reader would then misread the fields after it, not refuse them
    if (v > 0xffff) throw new RangeError(`raft codec: ${v} does not fit a 16-bit length or count field`);
    this.ensure(2);
    this.view.setUint16(this.pos, v);
    this.pos += 2;
  }
  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
  }
  num(v: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, v);
    this.pos += 8;
  }
  bytes(b: Uint8Array): void {
    this.u32(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
  str(s: string): void {
    // encoded in place after its length, not into a buffer of its own
    const n = utf8Length(s);
    // a longer string's length would wrap in its u16 (misread by the receiver, not refused)
    if (n > 0xffff) throw new RangeError(`raft codec: a ${n}-byte string does not fit a frame's 16-bit string length (decoders accept at most MAX_STRING_BYTES, ${MAX_STRING_BYTES})`);
    this.ensure(2 + n);
    this.view.setUint16(this.pos, n);
    if (typeof s === "string") utf8.encodeInto(s, this.buf.subarray(this.pos + 2, this.pos + 2 + n));
    else this.buf.set(utf8.encode(s), this.pos + 2); // an untyped caller's non-string, as TextEncoder converts it
    this.pos += 2 + n;
  }
  key(k: ProposalKey | null): void {
    if (k === null) return this.u8(0);
    this.u8(1);
    this.str(k.client);
    this.num(k.seq);
  }
  config(c: ClusterConfig): void {
    this.u16(c.voters.length);
    for (const v of c.voters) this.str(v);
    this.u16(c.learners.length);
    for (const l of c.learners) this.str(l);
  }
  entry(e: LogEntry): void {
    this.num(e.index);
    this.num(e.term);
    this.num(e.stampedAt);
    this.u8(KIND_CODE[e.kind]);
    this.key(e.key);
    this.bytes(e.command);
    if (e.config === undefined) this.u8(0);
    else {
      this.u8(1);
      this.config(e.config);
    }
  }
  done(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

class Malformed extends Error {}

class Reader {
  readonly buf: Uint8Array;
  readonly view: DataView;
  pos = 0;
  constructor(buf: Uint8Array) {
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  need(n: number): void {
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (this.pos + n > this.buf.length) throw new Malformed("short");
  }
  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    // Stryker disable next-line CallExpression: u32 is read only by decodeMessage, where the frame-bounded DataView throws RangeError past the end, which maps to null just as Malformed does
    this.need(4);
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }
  /** A safe integer ≥ 0 (terms, indexes, offsets, timestamps). */
  nat(): number {
    // Stryker disable next-line CallExpression: nat is read only by decodeMessage, where the frame-bounded DataView throws RangeError past the end, which maps to null just as Malformed does
    this.need(8);
    const v = this.view.getFloat64(this.pos);
    this.pos += 8;
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (!Number.isSafeInteger(v) || v < 0) throw new Malformed("not a natural number");
    return v;
  }
  bool(): boolean {
    const b = this.u8();
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (b > 1) throw new Malformed("bad boolean");
    return b === 1;
  }
  bytes(): Uint8Array {
    const n = this.u32();
    this.need(n);
    const out = this.buf.slice(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  str(): string {
    const n = this.u16();
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (n > MAX_STRING_BYTES) throw new Malformed("string too long");
    this.need(n);
    const s = fromUtf8.decode(this.buf.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }
  key(): ProposalKey | null {
    if (!this.bool()) return null;
    const client = this.str();
    const seq = this.nat();
    return { client, seq };
  }
  config(): ClusterConfig {
    const nv = this.u16();
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (nv > MAX_CONFIG_MEMBERS) throw new Malformed("too many voters");
    const voters: string[] = [];
    for (let i = 0; i < nv; i++) voters.push(this.str());
    const nl = this.u16();
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (nl > MAX_CONFIG_MEMBERS) throw new Malformed("too many learners");
    const learners: string[] = [];
    for (let i = 0; i < nl; i++) learners.push(this.str());
    const all = new Set([...voters, ...learners]);
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (all.size !== voters.length + learners.length) throw new Malformed("duplicate member");
    return { voters, learners };
  }
  entry(): LogEntry {
    const index = this.nat();
    const term = this.nat();
    const stampedAt = this.nat();
    const kind = KIND_OF[this.u8()];
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (kind === undefined) throw new Malformed("bad entry kind");
    const key = this.key();
    const command = this.bytes();
    const hasConfig = this.bool();
    // Stryker disable next-line StringLiteral: Malformed never escapes either decoder (both map it to null), so its message is unobservable
    if (hasConfig !== (kind === "config")) throw new Malformed("config presence disagrees with kind");
    if (hasConfig) return { index, term, stampedAt, kind, key, command, config: this.config() };
    return { index, term, stampedAt, kind, key, command };
  }
}

/** Encodes one message as a frame. */
export function encodeMessage(m: Message): Uint8Array {
  const w = new Writer(m.type === "append" ? 64 + m.entries.reduce((n, e) => n + entryBytes(e), 0) : 128);
  w.u8(CODEC_VERSION);
  w.u8(TYPE_CODE[m.type]);
  switch (m.type) {
    case "preVote":
    case "vote":
      w.num(m.term);
      w.num(m.lastLogIndex);
      w.num(m.lastLogTerm);
      w.num(m.type === "preVote" ? m.round : 0);
      // appended in a later revision: older decoders ignore the trailing byte (rolling upgrades)
      if (m.type === "vote") w.u8(m.transfer === true ? 1 : 0);
      break;
    case "preVoteReply":
    case "voteReply":
      w.num(m.term);
      w.u8(m.granted ? 1 : 0);
      w.num(m.type === "preVoteReply" ? m.round : 0);
      break;
    case "append":
      w.num(m.term);
      w.num(m.prevLogIndex);
      w.num(m.prevLogTerm);
      w.num(m.leaderCommit);
      w.num(m.round);
      w.u32(m.entries.length);
      for (const e of m.entries) w.entry(e);
      break;
    case "appendReply":
      w.num(m.term);
      w.u8(m.success ? 1 : 0);
      w.num(m.matchIndex);
      w.num(m.rejectedPrev);
      w.u8(m.conflictTerm === null ? 0 : 1);
      w.num(m.conflictTerm ?? 0);
      w.num(m.conflictIndex);
      w.num(m.round);
      // appended in a later revision (older decoders ignore trailing bytes): a presence byte, then the replier's
      // limit on a too-many-entries refusal; the byte is always written, so a field appended later has one place
      if (m.maxEntries === undefined) w.u8(0);
      else {
        w.u8(1);
        w.num(m.maxEntries);
      }
      break;
    case "snapshot":
      w.num(m.term);
      w.num(m.lastIndex);
      w.num(m.lastTerm);
      w.num(m.total);
      w.num(m.offset);
      if (m.config === null) w.u8(0);
      else {
        w.u8(1);
        w.config(m.config);
      }
      w.bytes(m.data);
      break;
    case "snapshotReply":
      w.num(m.term);
      w.num(m.lastIndex);
      w.num(m.nextOffset);
      w.u8(m.done ? 1 : 0);
      // appended in a later revision, as appendReply's maxEntries: a presence byte, then the replier's
      // snapshotMaxBytes on a snapshot-too-large refusal
      if (m.maxBytes === undefined) w.u8(0);
      else {
        w.u8(1);
        w.num(m.maxBytes);
      }
      break;
    case "forward":
      w.num(m.corrId);
      w.key(m.key);
      w.bytes(m.command);
      break;
    case "forwardReply":
      w.num(m.corrId);
      w.u8(OUTCOME.indexOf(m.outcome));
      w.num(m.index);
      w.num(m.term);
      break;
    case "timeoutNow":
      w.num(m.term);
      break;
  }
  return w.done();
}

/** Decodes a frame; `null` when it is not a well-formed message of a known version and type. */
export function decodeMessage(frame: Uint8Array): Message | null {
  try {
    const r = new Reader(frame);
    if (r.u8() !== CODEC_VERSION) return null;
    const t = r.u8();
    switch (t) {
      case 1:
      case 3: {
        const term = r.nat();
        const lastLogIndex = r.nat();
        const lastLogTerm = r.nat();
        const round = r.nat();
        if (t === 1) return { type: "preVote", term, lastLogIndex, lastLogTerm, round };
        // a frame from a sender that predates the transfer flag ends here
        const transfer = r.pos < frame.length ? r.bool() : false;
        return transfer ? { type: "vote", term, lastLogIndex, lastLogTerm, transfer } : { type: "vote", term, lastLogIndex, lastLogTerm };
      }
      case 2:
      case 4: {
        const term = r.nat();
        const granted = r.bool();
        const round = r.nat();
        return t === 2 ? { type: "preVoteReply", term, granted, round } : { type: "voteReply", term, granted };
      }
      case 5: {
        const term = r.nat();
        const prevLogIndex = r.nat();
        const prevLogTerm = r.nat();
        const leaderCommit = r.nat();
        const round = r.nat();
        const n = r.u32();
        // Each entry takes at least 31 bytes: refuse counts the frame cannot hold before allocating.
        // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: every entry takes at least 31 bytes and nothing is allocated ahead, so a count the frame cannot hold fails in the loop below and yields null anyway
        if (n * 31 > frame.length) return null;
        const entries: LogEntry[] = [];
        for (let i = 0; i < n; i++) entries.push(r.entry());
        return { type: "append", term, prevLogIndex, prevLogTerm, leaderCommit, round, entries };
      }
      case 6: {
        const term = r.nat();
        const success = r.bool();
        const matchIndex = r.nat();
        const rejectedPrev = r.nat();
        const hasConflict = r.bool();
        const ct = r.nat();
        const conflictIndex = r.nat();
        const round = r.nat();
        const conflictTerm = hasConflict ? ct : null;
        // a frame from a sender that predates the field ends here
        const limited = r.pos < frame.length ? r.bool() : false;
        if (!limited) return { type: "appendReply", term, success, matchIndex, rejectedPrev, conflictTerm, conflictIndex, round };
        return { type: "appendReply", term, success, matchIndex, rejectedPrev, conflictTerm, conflictIndex, round, maxEntries: r.nat() };
      }
      case 7: {
        const term = r.nat();
        const lastIndex = r.nat();
        const lastTerm = r.nat();
        const total = r.nat();
        const offset = r.nat();
        const config = r.bool() ? r.config() : null;
        const data = r.bytes();
        return { type: "snapshot", term, lastIndex, lastTerm, config, total, offset, data };
      }
      case 8: {
        const term = r.nat();
        const lastIndex = r.nat();
        const nextOffset = r.nat();
        const done = r.bool();
        // a frame from a sender that predates the field ends here
        const limited = r.pos < frame.length ? r.bool() : false;
        if (!limited) return { type: "snapshotReply", term, lastIndex, nextOffset, done };
        return { type: "snapshotReply", term, lastIndex, nextOffset, done, maxBytes: r.nat() };
      }
      case 9: {
        const corrId = r.nat();
        const key = r.key();
        const command = r.bytes();
        return { type: "forward", corrId, key, command };
      }
      case 10: {
        const corrId = r.nat();
        const outcome = OUTCOME[r.u8()];
        if (outcome === undefined) return null;
        const index = r.nat();
        const term = r.nat();
        return { type: "forwardReply", corrId, outcome, index, term };
      }
      case 11:
        return { type: "timeoutNow", term: r.nat() };
      default:
        return null;
    }
  } catch (e) {
    // Stryker disable next-line ConditionalExpression: the reader throws only Malformed, TypeError (fatal UTF-8) and RangeError (frame-bounded DataView), so catching everything maps exactly the same inputs to null
    if (e instanceof Malformed || e instanceof TypeError || e instanceof RangeError) return null;
    throw e;
  }
}

/** Encodes a configuration on its own (storage uses it for the snapshot's config column). */
export function encodeConfig(c: ClusterConfig): Uint8Array {
  const w = new Writer(64);
  w.config(c);
  return w.done();
}

/** Decodes `encodeConfig` output; `null` when malformed. */
export function decodeConfig(b: Uint8Array): ClusterConfig | null {
  try {
    return new Reader(b).config();
  } catch (e) {
    // Stryker disable next-line ConditionalExpression: the config reader throws only Malformed and TypeError (fatal UTF-8; every u16 read is preceded by need), so catching everything maps exactly the same inputs to null
    if (e instanceof Malformed || e instanceof TypeError) return null;
    throw e;
  }
}
