import { LedgerDecodeError, LedgerIdTooLongError } from "./errors.ts";
import { isValidId } from "./ids.ts";
import type { AttachmentId, GroupId, MintId, PathKey, ReplicaId } from "./ids.ts";
import { byKey } from "./encoding.ts";
import { MAX } from "./int64.ts";
import { Rational } from "./rational.ts";
import type { Counter, State } from "./state.ts";
import { COUNTER_FAMILIES, compareRecords, emptyState, unionRecords } from "./state.ts";
import type { AttachmentRecord, Gauge, Lifecycle } from "./types.ts";
import { LIFECYCLE_RANK } from "./types.ts";
import { Weight } from "./weight.ts";

/**
 * The compact binary form of a ledger value (`heddle-ledger-bin/1`), for frames on the wire. The
 * canonical JSON of ledger.md §10 stays the format for storage and hashing; this one is for bytes that
 * cross a network many times. It is deterministic (keys in code-unit order, a string table in first-use
 * order), versioned (a leading format byte) and strictly decoded: every rule of the JSON decoder holds
 * (well-formed non-empty ids, int64 amounts ≥ 0, positive weights, positive gauge denominators, known
 * lifecycles, parent ≠ child, no duplicate keys), zero slots and unreduced ratios are repaired.
 *
 * Layout: `u8 format=1 · uvarint #strings · (uvarint len · utf-8)* · uvarint componentMask ·` then each
 * present component in ledger.md §10 order. Every id is a string-table index; indices below
 * `known.length` name strings both ends already know (e.g. the authenticated sender's id), so they
 * are never sent.
 */
export const LEDGER_BINARY_FORMAT = 1;

const COMPONENTS = ["records", "mints", "issued", "returned", "leafSpent", "rollupSpent", "transfers", "lifecycle", "gauges"] as const;
const LIFECYCLES: readonly Lifecycle[] = ["PREPARED", "ACTIVE", "CLOSING", "RETIRED"];
const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder("utf-8", { fatal: true });

/** An append-only byte buffer with LEB128 varints (numbers and bigints). */
export class ByteWriter {
  #buf: Uint8Array;
  #len = 0;

  constructor(capacity = 64) {
    this.#buf = new Uint8Array(capacity);
  }

  get length(): number {
    return this.#len;
  }

  #room(n: number): void {
    const need = this.#len + n;
    if (need <= this.#buf.length) return;
    // Stryker disable next-line ArithmeticOperator: `/ 2` still grows to at least `need`; only the amortised cost changes
    const next = new Uint8Array(Math.max(this.#buf.length * 2, need));
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }

  u8(b: number): this {
    this.#room(1);
    this.#buf[this.#len++] = b & 0xff;
    return this;
  }

  /** An unsigned LEB128 varint of a safe integer ≥ 0. */
  uint(n: number): this {
    this.#room(8);
    while (n >= 0x80) {
      this.#buf[this.#len++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.#buf[this.#len++] = n;
    return this;
  }

  /** An unsigned LEB128 varint of a bigint in 0 … 2^64 − 1. */
  ubig(v: bigint): this {
    if (v <= 0x1fffffffffffffn) return this.uint(Number(v));
    this.#room(10);
    while (v >= 0x80n) {
      this.#buf[this.#len++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.#buf[this.#len++] = Number(v);
    return this;
  }

  /** A signed int64 as a zigzag varint. */
  zbig(v: bigint): this {
    return this.ubig(v >= 0n ? v << 1n : ((-v) << 1n) - 1n);
  }

  bytes(b: Uint8Array): this {
    this.#room(b.length);
    this.#buf.set(b, this.#len);
    this.#len += b.length;
    return this;
  }

  /** A copy of what was written. */
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

/** Reads what a {@link ByteWriter} wrote; any malformed or truncated input throws `LedgerDecodeError`. */
export class ByteReader {
  readonly #b: Uint8Array;
  #at: number;

  constructor(b: Uint8Array, at = 0) {
    this.#b = b;
    this.#at = at;
  }

  get offset(): number {
    return this.#at;
  }

  get remaining(): number {
    return this.#b.length - this.#at;
  }

  u8(): number {
    if (this.#at >= this.#b.length) throw new LedgerDecodeError("truncated");
    return this.#b[this.#at++]!;
  }

  /** A varint that must be a safe integer. */
  uint(): number {
    let n = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      n += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(n) || (i > 0 && b === 0)) throw new LedgerDecodeError("varint out of range or not minimal");
        return n;
      }
      scale *= 0x80;
    }
    throw new LedgerDecodeError("varint too long");
  }

  /** A varint bigint in 0 … 2^64 − 1. */
  ubig(): bigint {
    let v = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      const b = this.u8();
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) {
        if (i > 0 && b === 0) throw new LedgerDecodeError("varint not minimal");
        if (v > 0xffffffffffffffffn) throw new LedgerDecodeError("varint above 2^64");
        return v;
      }
      shift += 7n;
    }
    throw new LedgerDecodeError("varint too long");
  }

  zbig(): bigint {
    const z = this.ubig();
    return (z & 1n) === 0n ? z >> 1n : -((z + 1n) >> 1n);
  }

  bytes(n: number): Uint8Array {
    if (n > this.remaining) throw new LedgerDecodeError("truncated");
    const out = this.#b.subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }

  /** A count of items each at least `minBytes` long: refuses counts the rest of the input cannot hold. */
  count(minBytes = 1): number {
    const n = this.uint();
    if (n * minBytes > this.remaining) throw new LedgerDecodeError("count exceeds the input");
    return n;
  }
}

/** Interns strings in first-use order; `known` strings take the first indices and are not written. */
class StringTable {
  readonly #index = new Map<string, number>();
  readonly list: string[] = [];
  readonly #known: number;

  constructor(known: readonly string[]) {
    known.forEach((s, i) => {
      if (!this.#index.has(s)) this.#index.set(s, i);
    });
    this.#known = known.length;
  }

  ref(s: string): number {
    let i = this.#index.get(s);
    if (i === undefined) {
      i = this.#known + this.list.length;
      this.#index.set(s, i);
      this.list.push(s);
    }
    return i;
  }
}

function writeCounter(w: ByteWriter, t: StringTable, c: Counter): void {
  w.uint(c.size);
  for (const [e, slots] of byKey(c)) {
    w.uint(t.ref(e)).uint(slots.size);
    for (const [r, v] of byKey(slots)) w.uint(t.ref(r)).ubig(v);
  }
}

/** The binary form of a state (see {@link LEDGER_BINARY_FORMAT}). */
export function encodeStateBinary(s: State, known: readonly string[]): Uint8Array {
  const t = new StringTable(known);
  const body = new ByteWriter(256);
  let mask = 0;
  COMPONENTS.forEach((c, i) => {
    if (s[c].size > 0) mask |= 1 << i;
  });
  body.uint(mask);
  if (s.records.size > 0) {
    body.uint(s.records.size);
    for (const [e, recs] of byKey(s.records)) {
      body.uint(t.ref(e)).uint(recs.length);
      for (const r of recs) body.uint(t.ref(r.parent)).uint(t.ref(r.child)).ubig(r.weight.num).ubig(r.weight.den);
    }
  }
  if (s.mints.size > 0) {
    body.uint(s.mints.size);
    for (const [id, m] of byKey(s.mints)) body.uint(t.ref(id)).uint(t.ref(m.root)).uint(t.ref(m.holder)).ubig(m.amount);
  }
  for (const fam of COUNTER_FAMILIES) if (s[fam].size > 0) writeCounter(body, t, s[fam]);
  if (s.transfers.size > 0) {
    body.uint(s.transfers.size);
    for (const [k, rows] of byKey(s.transfers)) {
      body.uint(t.ref(k)).uint(rows.size);
      for (const [d, row] of byKey(rows)) {
        body.uint(t.ref(d)).uint(row.size);
        for (const [x, v] of byKey(row)) body.uint(t.ref(x)).ubig(v);
      }
    }
  }
  if (s.lifecycle.size > 0) {
    body.uint(s.lifecycle.size);
    for (const [e, l] of byKey(s.lifecycle)) body.uint(t.ref(e)).u8(LIFECYCLE_RANK[l]);
  }
  if (s.gauges.size > 0) {
    body.uint(s.gauges.size);
    for (const [e, g] of byKey(s.gauges)) body.uint(t.ref(e)).zbig(g.floor.num).ubig(g.floor.den).ubig(g.folded);
  }
  // Stryker disable next-line ArithmeticOperator: a capacity guess only; the writer grows to whatever is written
  const perString = t.list.length * 16;
  const out = new ByteWriter(body.length + 16 + perString);
  out.u8(LEDGER_BINARY_FORMAT).uint(t.list.length);
  for (const str of t.list) {
    const b = utf8.encode(str);
    out.uint(b.length).bytes(b);
  }
  out.bytes(body.finish());
  return out.finish();
}

function fail(msg: string): never {
  throw new LedgerDecodeError(msg);
}

function units(v: bigint, what: string): bigint {
  if (v > MAX) fail(`${what}: ${v} is outside the signed 64-bit range`);
  return v;
}

/**
 * Decodes the binary form (see {@link LEDGER_BINARY_FORMAT}) from `r`. `known` must be the strings the
 * encoder was given. Throws `LedgerDecodeError` on anything the JSON decoder would refuse.
 */
export function decodeStateBinary(r: ByteReader, known: readonly string[], maxIdLength = Infinity): State {
  if (r.u8() !== LEDGER_BINARY_FORMAT) fail("unknown binary ledger format");
  const strings: string[] = [...known];
  const n = r.count(1);
  for (let i = 0; i < n; i++) {
    const len = r.uint();
    let str: string;
    try {
      str = utf8Strict.decode(r.bytes(len));
    } catch (e) {
      if (e instanceof LedgerDecodeError) throw e;
      fail("string table entry is not UTF-8");
    }
    // every string of the table is an id (a path key is an edge id or the empty root key)
    if (str.length > maxIdLength) throw new LedgerIdTooLongError(`string table entry ${i} is ${str.length} code units long, above ${maxIdLength}`);
    strings.push(str);
  }
  const str = (what: string): string => {
    const i = r.uint();
    if (i >= strings.length) fail(`${what}: string index ${i} out of range`);
    return strings[i]!;
  };
  const id = <T extends string>(what: string): T => {
    const s = str(what);
    if (!isValidId(s)) fail(`${what}: expected a non-empty, well-formed string`);
    return s as T;
  };
  const s = emptyState();
  const mask = r.uint();
  if (mask >= 1 << COMPONENTS.length) fail("unknown component");
  const has = (c: (typeof COMPONENTS)[number]) => (mask & (1 << COMPONENTS.indexOf(c))) !== 0;
  const noDup = (m: Map<string, unknown>, k: string, what: string) => {
    if (m.has(k)) fail(`${what}: duplicate key ${JSON.stringify(k)}`);
  };
  // A zero slot or an empty inner list is dropped rather than stored, so its key is remembered in a
  // `dropped` set (made only when something is dropped: an encoder never writes one) and a key repeated
  // next to a dropped entry is refused as the JSON decoder refuses it (§10: duplicate keys at any map
  // level, whatever the repair keeps).
  const noDupOrDropped = (m: Map<string, unknown>, dropped: Set<string> | undefined, k: string, what: string) => {
    if (m.has(k) || dropped?.has(k) === true) fail(`${what}: duplicate key ${JSON.stringify(k)}`);
  };
  const drop = (dropped: Set<string> | undefined, k: string): Set<string> => (dropped ?? new Set<string>()).add(k);
  if (has("records")) {
    const ne = r.count(2);
    let dropped: Set<string> | undefined;
    for (let i = 0; i < ne; i++) {
      const e = id<AttachmentId>("record edge");
      noDupOrDropped(s.records, dropped, e, "records");
      const nr = r.count(4);
      if (nr === 0) {
        dropped = drop(dropped, e);
        continue;
      }
      const recs: AttachmentRecord[] = [];
      for (let j = 0; j < nr; j++) {
        const parent = id<GroupId>("record parent");
        const child = id<GroupId>("record child");
        if (parent === child) fail(`record ${e}: parent = child`);
        const num = r.ubig();
        const den = r.ubig();
        if (num < 1n || den < 1n || num > MAX || den > MAX) fail(`record ${e}: weight ${num}/${den} names no positive ratio`);
        recs.push(Object.freeze({ id: e, parent, child, weight: Weight.of(num, den) }));
      }
      // Stryker disable next-line MethodExpression,CallExpression: unionRecords inserts each record at its sorted place (dropping equals), so any order gives the same set
      recs.sort(compareRecords);
      let set: readonly AttachmentRecord[] = Object.freeze([recs[0]!]);
      // Stryker disable next-line MethodExpression: a union with recs[0] again drops it as equal, so recs gives the same set
      for (const x of recs.slice(1)) set = unionRecords(set, [x]);
      s.records.set(e, set);
    }
  }
  if (has("mints")) {
    const nm = r.count(4);
    for (let i = 0; i < nm; i++) {
      const mid = id<MintId>("mint id");
      noDup(s.mints, mid, "mints");
      const root = id<GroupId>("mint root");
      const holder = id<ReplicaId>("mint holder");
      s.mints.set(mid, Object.freeze({ root, holder, amount: units(r.ubig(), "mint amount") }));
    }
  }
  for (const fam of COUNTER_FAMILIES) {
    if (!has(fam)) continue;
    const ne = r.count(2);
    let droppedEdges: Set<string> | undefined;
    for (let i = 0; i < ne; i++) {
      const e = id<AttachmentId>(`${fam} edge`);
      noDupOrDropped(s[fam], droppedEdges, e, fam);
      const slots = new Map<ReplicaId, bigint>();
      let droppedSlots: Set<string> | undefined;
      const ns = r.count(2);
      for (let j = 0; j < ns; j++) {
        const rep = id<ReplicaId>(`${fam} replica`);
        noDupOrDropped(slots, droppedSlots, rep, fam);
        const v = units(r.ubig(), `${fam} value`);
        if (v !== 0n) slots.set(rep, v);
        else droppedSlots = drop(droppedSlots, rep);
      }
      if (slots.size > 0) s[fam].set(e, slots);
      else droppedEdges = drop(droppedEdges, e);
    }
  }
  if (has("transfers")) {
    const nk = r.count(2);
    let droppedKeys: Set<string> | undefined;
    for (let i = 0; i < nk; i++) {
      const k = str("transfer key") as PathKey;
      if (k !== "" && !isValidId(k)) fail("transfer key: expected an edge id or the root key");
      noDupOrDropped(s.transfers, droppedKeys, k, "transfers");
      const rows = new Map<ReplicaId, Map<ReplicaId, bigint>>();
      let droppedRows: Set<string> | undefined;
      const nd = r.count(2);
      for (let j = 0; j < nd; j++) {
        const d = id<ReplicaId>("donor");
        noDupOrDropped(rows, droppedRows, d, "transfer rows");
        const row = new Map<ReplicaId, bigint>();
        let droppedSlots: Set<string> | undefined;
        const nx = r.count(2);
        for (let q = 0; q < nx; q++) {
          const x = id<ReplicaId>("recipient");
          noDupOrDropped(row, droppedSlots, x, "transfer row");
          const v = units(r.ubig(), "transfer value");
          if (v !== 0n) row.set(x, v);
          else droppedSlots = drop(droppedSlots, x);
        }
        if (row.size > 0) rows.set(d, row);
        else droppedRows = drop(droppedRows, d);
      }
      if (rows.size > 0) s.transfers.set(k, rows);
      else droppedKeys = drop(droppedKeys, k);
    }
  }
  if (has("lifecycle")) {
    const ne = r.count(2);
    for (let i = 0; i < ne; i++) {
      const e = id<AttachmentId>("lifecycle edge");
      noDup(s.lifecycle, e, "lifecycle");
      const l = LIFECYCLES[r.u8()];
      if (l === undefined) fail("unknown lifecycle");
      s.lifecycle.set(e, l);
    }
  }
  if (has("gauges")) {
    const ne = r.count(4);
    for (let i = 0; i < ne; i++) {
      const e = id<AttachmentId>("gauge edge");
      noDup(s.gauges, e, "gauges");
      const num = r.zbig();
      const den = r.ubig();
      if (den <= 0n) fail(`gauge floor denominator ${den} must be positive`);
      let floor: Rational;
      // Rational.of checks both parts against int64 (and refuses −2^63): its refusal is the range check
      try {
        floor = Rational.of(num, den);
      } catch {
        fail(`gauge floor ${num}/${den} is out of range`);
      }
      const g: Gauge = Object.freeze({ floor, folded: units(r.ubig(), "gauge folded") });
      s.gauges.set(e, g);
    }
  }
  return s;
}
