import { Fnv1a64 } from "./fnv.ts";
import type { AttachmentId, MintId, PathKey, ReplicaId } from "./ids.ts";
import type { CounterFamily, State } from "./state.ts";
import { COUNTER_FAMILIES } from "./state.ts";
import type { AttachmentRecord, Gauge, Lifecycle, MintRecord } from "./types.ts";

/**
 * The state digest: a 64-bit sum (mod 2^64) of one mixed FNV-1a-64 hash per entry of the state in
 * normal form — a record set, a mint, a counter slot, a transfer slot, a lifecycle, a gauge. Equal
 * states have equal digests whatever order they were built in, and because the sum is over entries,
 * a replica keeps it current in O(1) per changed slot (subtract the entry's old hash, add the new):
 * no whole-state encode or hash per delta (node.md §5.3 ⟨1.1⟩). Unequal states collide with
 * probability about 2^-64; the digest only steers anti-entropy, it never decides a merge.
 *
 * An entry is hashed as a tag byte followed by its parts, each part's UTF-8 then a 0xff separator
 * (a byte UTF-8 never contains); integers are their decimal text.
 */

const TAG = {
  records: 1,
  mints: 2,
  issued: 3,
  returned: 4,
  leafSpent: 5,
  rollupSpent: 6,
  transfers: 7,
  lifecycle: 8,
  gauges: 9,
} as const;

/** A 64-bit value in two unsigned 32-bit halves. */
export interface U64 {
  hi: number;
  lo: number;
}

/** murmur3's 32-bit finalizer: spreads FNV's weak low bits before entries are summed. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

class EntryHasher {
  readonly #h = new Fnv1a64();

  start(tag: number): this {
    this.#h.hi = 0xcbf29ce4;
    this.#h.lo = 0x84222325;
    this.#h.byte(tag);
    return this;
  }

  part(s: string): this {
    this.#h.text(s);
    this.#h.byte(0xff);
    return this;
  }

  int(v: bigint): this {
    return this.part(v.toString());
  }

  done(): U64 {
    const lo = fmix32(this.#h.lo ^ Math.imul(this.#h.hi, 0x9e3779b1));
    const hi = fmix32(this.#h.hi ^ lo);
    return { hi, lo };
  }
}

const hasher = new EntryHasher();

/** Hash of the record set of edge `e`. */
export function recordsHash(e: AttachmentId, recs: readonly AttachmentRecord[]): U64 {
  hasher.start(TAG.records).part(e);
  for (const r of recs) hasher.part(r.parent).part(r.child).int(r.weight.num).int(r.weight.den);
  return hasher.done();
}

/** Hash of mint `id`. */
export function mintHash(id: MintId, m: MintRecord): U64 {
  return hasher.start(TAG.mints).part(id).part(m.root).part(m.holder).int(m.amount).done();
}

/** Hash of the counter slot `fam[e][r] = v`. */
export function counterHash(fam: CounterFamily, e: AttachmentId, r: ReplicaId, v: bigint): U64 {
  return hasher.start(TAG[fam]).part(e).part(r).int(v).done();
}

/** Hash of the transfer slot `transfers[k][d][x] = v`. */
export function transferHash(k: PathKey, d: ReplicaId, x: ReplicaId, v: bigint): U64 {
  return hasher.start(TAG.transfers).part(k).part(d).part(x).int(v).done();
}

/** Hash of the lifecycle of `e`. */
export function lifecycleHash(e: AttachmentId, l: Lifecycle): U64 {
  return hasher.start(TAG.lifecycle).part(e).part(l).done();
}

/** Hash of the gauge of `e`. */
export function gaugeHash(e: AttachmentId, g: Gauge): U64 {
  return hasher.start(TAG.gauges).part(e).int(g.floor.num).int(g.floor.den).int(g.folded).done();
}

/** A running sum of entry hashes, mod 2^64. */
export class DigestSum {
  hi = 0;
  lo = 0;

  add(h: U64): void {
    const lo = this.lo + h.lo;
    this.lo = lo >>> 0;
    this.hi = (this.hi + h.hi + (lo > 0xffffffff ? 1 : 0)) >>> 0;
  }

  sub(h: U64): void {
    const lo = this.lo - h.lo;
    this.lo = lo >>> 0;
    this.hi = (this.hi - h.hi - (lo < 0 ? 1 : 0)) >>> 0;
  }

  /** 16 lower-case hex digits. */
  hex(): string {
    return this.hi.toString(16).padStart(8, "0") + this.lo.toString(16).padStart(8, "0");
  }
}

/** The digest of a whole state, from scratch: O(size of the state). */
export function stateDigest(s: State): DigestSum {
  const sum = new DigestSum();
  for (const [e, recs] of s.records) sum.add(recordsHash(e, recs));
  for (const [id, m] of s.mints) sum.add(mintHash(id, m));
  for (const fam of COUNTER_FAMILIES) {
    for (const [e, slots] of s[fam]) for (const [r, v] of slots) sum.add(counterHash(fam, e, r, v));
  }
  for (const [k, rows] of s.transfers) {
    for (const [d, row] of rows) for (const [x, v] of row) sum.add(transferHash(k, d, x, v));
  }
  for (const [e, l] of s.lifecycle) sum.add(lifecycleHash(e, l));
  for (const [e, g] of s.gauges) sum.add(gaugeHash(e, g));
  return sum;
}
