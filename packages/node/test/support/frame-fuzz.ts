/**
 * The hostile peer's frame generator for the libp2p frame fuzzer (issue 17, node.md §3.4, §4.3). It
 * writes what a buggy or hostile roster peer could put on a `/heddle/frames/1.0.0` stream — mutated
 * valid frames, random bytes, valid-but-hostile values, frames on every channel tag, bad length
 * prefixes — and predicts, for each byte it writes, what the victim must count:
 *
 * - which frames the victim's seam delivers (a reference split of the byte stream, written here
 *   independently of the seam's incremental decoder), and how a stream ends (`oversize`, `badPrefix`,
 *   `cutFrames`);
 * - for every delivered frame, its outcome: accepted, or rejected under one reason. The outcome comes
 *   from the node's own pure readers (`readLedgerFrame`, `readBoardMessage`, `readLivenessMessage`,
 *   routed by tag and size the way the node routes them); for every family whose outcome follows from
 *   how the frame was built (unknown tag, node-level oversize, other genesis, another peer's author,
 *   ids and entry counts at and one past their limits, amounts at and one past int64, bad version,
 *   unknown kind) the built expectation must agree with that oracle, so those reasons are checked
 *   independently; for blind mutations (bit flips, cuts, duplicated or swapped byte ranges) the oracle
 *   is the prediction, and the live node must match it frame for frame in total.
 */
import { EntitlementLedger } from "@heddle/ledger";
import { canonicalBytes as canonicalValueBytes, encodeLedgerFrame, readBoardMessage, readClaimsFrame, readLedgerFrame, readLivenessMessage, type LedgerMessage } from "../../src/testing.ts";
import { REJECT_REASONS, type RejectReason } from "../../src/index.ts";

/**
 * What the victim does with one delivered frame: accepted, rejected by the node under a node.md §4.3 reason, or — on
 * a channel read outside this package (`ForeignChannel`) — the verdict of that reader, as `name:verdict`.
 */
export type Outcome = RejectReason | "accepted" | `${string}:${string}`;

/**
 * A channel the victim reads with a reader this package does not own (the governed Raft member on tag 4): the
 * generator asks it for frames its own encoder builds, and for its verdict on any frame body the victim receives.
 */
export interface ForeignChannel {
  readonly tag: number;
  /** Prefix of this channel's outcomes (`raft` → `raft:undecodable`). */
  readonly name: string;
  /** The victim's verdict on one frame body from the hostile peer (the reader's own pure decoder decides). */
  classify(body: Uint8Array): string;
  /** A frame body built on purpose (valid, or hostile in a named way) with the verdict it was built to get. */
  build(random: () => number): { family: string; body: Uint8Array; expect: string | null; corpus: boolean };
}

/** How a stream the hostile peer wrote ends at the victim's seam. */
export type StreamEnd = "clean" | "cut" | "oversize" | "malformed";

/** The parameters of the victim the generator aims at. */
export interface FuzzTarget {
  /** The hostile peer's id (the authenticated `from` of everything it sends). */
  readonly mallory: string;
  /** Ids of honest peers, used as forged authors. */
  readonly others: readonly string[];
  /** The victim's genesis digest (16 hex digits). */
  readonly genesis: string;
  /** The node's `maxFrameBytes` (config): channel frames above it are `oversize`. */
  readonly nodeMaxFrameBytes: number;
  /** The seam's `maxFrameBytes`: a declared length above it aborts the stream. */
  readonly seamMaxFrameBytes: number;
  readonly maxDemandEntries: number;
  /** The node's claims limit (`claims.maxClaimsPerSlot`). */
  readonly maxClaimsPerSlot: number;
  /** A channel a reader outside the node claims on the victim (absent: tag 4 is unclaimed, `unknown-channel`). */
  readonly foreign?: ForeignChannel;
}

/** One write: bytes for the shared stream (well-formed prefixes) or for a fresh stream closed afterwards. */
export interface Shot {
  readonly family: string;
  /** The family of each frame the shot was built from (one for a fresh stream: its own family). */
  readonly families: readonly string[];
  /** `shared`: frames with correct prefixes on the long-lived stream; `own`: a fresh stream, then closed. */
  readonly stream: "shared" | "own";
  readonly bytes: Uint8Array;
  /** The frames the victim's seam will deliver, in order, each with its predicted outcome. */
  readonly frames: readonly { frame: Uint8Array; outcome: Outcome }[];
  readonly end: StreamEnd;
}

const INT64_MAX = (1n << 63n) - 1n;

/** Canonical JSON bytes of a loosely typed message object (the generator edits messages as plain records). */
const canonicalBytes = (o: Record<string, unknown>): Uint8Array => canonicalValueBytes(o as Parameters<typeof canonicalValueBytes>[0]);
const enc = new TextEncoder();

/** LEB128 unsigned varint of `n` (minimal). */
export function varint(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

/**
 * Reference split of a whole stream into frames (node.md §3.4): a varint prefix of at most 8 bytes, then
 * that many bytes; a prefix whose value passes `max` ends the stream as `oversize` (as soon as it does),
 * one unfinished after 8 bytes as `malformed`; bytes left at the end are a `cut` frame.
 */
export function splitStream(bytes: Uint8Array, max: number): { frames: Uint8Array[]; end: StreamEnd } {
  const frames: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    let len = 0;
    let i = 0;
    for (;;) {
      if (at + i >= bytes.length) return { frames, end: "cut" };
      const b = bytes[at + i]!;
      len += (b & 0x7f) * 2 ** (7 * i);
      i++;
      if (len > max) return { frames, end: "oversize" };
      if ((b & 0x80) === 0) break;
      if (i >= 8) return { frames, end: "malformed" };
    }
    if (at + i + len > bytes.length) return { frames, end: "cut" };
    frames.push(bytes.subarray(at + i, at + i + len));
    at += i + len;
  }
  return { frames, end: "clean" };
}

/** Prefixes each frame with its minimal varint length. */
export function prefixed(frames: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  const heads = frames.map((f) => varint(f.length));
  frames.forEach((f, k) => (n += heads[k]!.length + f.length));
  const out = new Uint8Array(n);
  let at = 0;
  frames.forEach((f, k) => {
    out.set(heads[k]!, at);
    at += heads[k]!.length;
    out.set(f, at);
    at += f.length;
  });
  return out;
}

const tagged = (tag: number, body: Uint8Array): Uint8Array => {
  const out = new Uint8Array(body.length + 1);
  out[0] = tag;
  out.set(body, 1);
  return out;
};

/** Counts of predicted outcomes, by reason, plus how streams end. */
export class Tally {
  readonly rejected = Object.fromEntries(REJECT_REASONS.map((r) => [r, 0])) as Record<RejectReason, number>;
  /** Outcomes on the foreign channel, by `name:verdict`. */
  readonly foreign = new Map<string, number>();
  accepted = 0;
  /** Accepted ledger frames carrying a value (delta or state): the only frames a join-time check can still refuse. */
  acceptedValues = 0;
  delivered = 0;
  readonly ends: Record<StreamEnd, number> = { clean: 0, cut: 0, oversize: 0, malformed: 0 };
  readonly families = new Map<string, number>();

  add(s: Shot): void {
    for (const f of s.families) this.families.set(f, (this.families.get(f) ?? 0) + 1);
    if (s.stream === "own") this.ends[s.end]++;
    for (const f of s.frames) {
      this.delivered++;
      if (f.outcome === "accepted") {
        this.accepted++;
        if (f.frame[0] === 1 && (f.frame[2] === 1 || f.frame[2] === 6)) this.acceptedValues++;
      } else if (f.outcome.includes(":")) this.foreign.set(f.outcome, (this.foreign.get(f.outcome) ?? 0) + 1);
      else this.rejected[f.outcome as RejectReason]++;
    }
  }

  /** Frames the node's channels rejected (the foreign channel's verdicts are counted apart). */
  rejectedTotal(): number {
    return Object.values(this.rejected).reduce((a, b) => a + b, 0);
  }
}

/**
 * Generates shots against one victim from a seeded `random`. Every frame's outcome is predicted when
 * the shot is made; a built expectation that disagrees with the node's readers throws (that is a bug in
 * the readers, reported with the family and the frame's bytes).
 */
export class FrameFuzzer {
  readonly #t: FuzzTarget;
  readonly #rnd: () => number;
  readonly #corpus: { family: string; frame: Uint8Array; expect: Outcome }[] = [];
  readonly #channelMax: number;

  constructor(target: FuzzTarget, random: () => number) {
    this.#t = target;
    this.#rnd = random;
    this.#channelMax = Math.min(target.nodeMaxFrameBytes, target.seamMaxFrameBytes - 1);
    for (let k = 0; k < 40; k++) this.#corpus.push(this.#validFrame());
  }

  /** The outcome the victim must reach for one delivered frame (node.md §3.2, §4.3; the node's routing). */
  classify(frame: Uint8Array): Outcome {
    if (frame.length === 0) return "unknown-channel";
    const tag = frame[0]!;
    const body = frame.subarray(1);
    const foreign = this.#t.foreign;
    // a foreign reader sees every frame of its tag up to the seam's limit: the node's maxFrameBytes is not its limit
    if (foreign !== undefined && tag === foreign.tag) return `${foreign.name}:${foreign.classify(body)}`;
    // 1 ledger, 2 demand, 3 liveness, 5 claims (the node's keeper and advisory slots); 4 (Raft) is unclaimed on a static
    // node (on a governed one the Raft member reads it: `foreign`)
    if (tag < 1 || tag > 5 || tag === 4) return "unknown-channel";
    if (body.length > this.#channelMax) return "oversize";
    const m = this.#t.mallory;
    const r =
      tag === 1 ? readLedgerFrame(body, m, this.#t.genesis)
      : tag === 2 ? readBoardMessage(body, m, this.#t.maxDemandEntries)
      : tag === 5 ? readClaimsFrame(body, m, this.#t.maxClaimsPerSlot)
      : readLivenessMessage(body);
    return r.ok ? "accepted" : r.reason;
  }

  /** The next shot. */
  next(): Shot {
    const x = this.#rnd();
    // stream-level attacks on a fresh stream (rare: each costs a stream)
    if (x < 0.004) return this.#ownStream();
    // a run of frames on the shared stream
    const n = 1 + this.#int(8);
    const frames: { family: string; frame: Uint8Array; expect: Outcome | null }[] = [];
    for (let k = 0; k < n; k++) frames.push(this.#frame());
    const family = frames.length === 1 ? frames[0]!.family : "batch";
    return this.#shot(family, "shared", prefixed(frames.map((f) => f.frame)), frames);
  }

  #shot(family: string, stream: Shot["stream"], bytes: Uint8Array, built: { family: string; frame: Uint8Array; expect: Outcome | null }[] | null): Shot {
    const split = splitStream(bytes, this.#t.seamMaxFrameBytes);
    if (stream === "shared" && split.end !== "clean") throw new Error(`fuzzer bug: the shared stream must stay well-formed (${family})`);
    const frames = split.frames.map((frame, k) => {
      const outcome = this.classify(frame);
      const b = built?.[k];
      if (b !== undefined && b.expect !== null && b.expect !== outcome) {
        throw new Error(`${b.family}: built to be ${b.expect}, the node's readers say ${outcome}; frame ${Buffer.from(frame.subarray(0, 200)).toString("hex")}`);
      }
      return { frame, outcome };
    });
    return { family, families: built === null ? [family] : built.map((b) => b.family), stream, bytes, frames, end: split.end };
  }

  #int(n: number): number {
    return Math.floor(this.#rnd() * n);
  }

  #pick<T>(xs: readonly T[]): T {
    return xs[this.#int(xs.length)]!;
  }

  #bytes(n: number): Uint8Array {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = this.#int(256);
    return b;
  }

  #counter(): number {
    const x = this.#rnd();
    return x < 0.1 ? 0 : x < 0.2 ? Number.MAX_SAFE_INTEGER : x < 0.6 ? 1 + this.#int(20) : this.#int(2 ** 31);
  }

  #amount(): bigint {
    const x = this.#rnd();
    return x < 0.15 ? INT64_MAX : x < 0.25 ? 0n : BigInt(1 + this.#int(1000));
  }

  /** A small ledger value holding only the hostile peer's own slots on the two real edges. */
  #value(): EntitlementLedger {
    const rows = ["e1", "e2"].filter(() => this.#rnd() < 0.7).map((e) => `["${e}",[["${this.#t.mallory}","${this.#amount()}"]]]`);
    return EntitlementLedger.decode(`{"format":"heddle-ledger/1","issued":[${rows.join(",")}]}`);
  }

  #ledgerMessage(): LedgerMessage {
    const kind = this.#pick(["delta", "ack", "resend", "digest", "state-request", "state"] as const);
    switch (kind) {
      case "delta": {
        const parts = this.#rnd() < 0.8 ? 1 : 1 + this.#int(5);
        const ack = this.#rnd() < 0.5 ? null : { inc: this.#counter(), seq: this.#counter(), based: this.#rnd() < 0.5 };
        return { kind, inc: 1 + this.#int(3), seq: 1 + this.#int(2000), parts, part: this.#int(parts), ack, value: this.#value() };
      }
      case "ack":
        return { kind, inc: this.#counter(), seq: this.#counter(), based: this.#rnd() < 0.5 };
      case "resend": {
        const from = 1 + this.#int(100);
        return { kind, inc: this.#counter(), from, to: from + this.#int(this.#rnd() < 0.1 ? 1_000_000 : 10) };
      }
      case "digest":
        return { kind, inc: 1 + this.#int(3), digest: Buffer.from(this.#bytes(8)).toString("hex"), upThrough: this.#counter() };
      case "state-request":
        return { kind };
      case "state": {
        const parts = 1 + this.#int(this.#rnd() < 0.1 ? 1_000_000 : 3);
        return { kind, inc: 1 + this.#int(3), upThrough: this.#counter(), transfer: this.#counter(), parts, part: this.#int(parts), value: this.#value() };
      }
    }
  }

  /** An edge id of exactly `len` characters from a small pool (so accepted values do not grow the ledger without bound). */
  #edgeId(len: number, k = this.#int(64)): string {
    return k.toString(36).padStart(len, "x");
  }

  /** A board message (object, not yet encoded) with `n` distinct entries of `idLen`-character edge ids, sorted. */
  #board(n: number, idLen = 2 + this.#int(20), replica = this.#t.mallory, amount = () => this.#amount()): Record<string, unknown> {
    const off = this.#int(64);
    const entries = Array.from({ length: n }, (_, k) => this.#edgeId(idLen, off + k)).sort().map((id) => [id, amount(), amount()]);
    return { v: 1, kind: "board", replica, clock: BigInt(this.#int(2 ** 31)) * (1n << 32n) + BigInt(this.#int(2 ** 31)), entries };
  }

  /** A frame the victim accepts — or, on the foreign channel, one its encoder built, with the verdict it gets. */
  #validFrame(): { family: string; frame: Uint8Array; expect: Outcome } {
    const foreign = this.#t.foreign;
    if (foreign !== undefined && this.#rnd() < 0.2) {
      for (;;) {
        const b = foreign.build(this.#rnd);
        if (b.corpus && b.expect !== null) return { family: `${foreign.name}-${b.family}`, frame: tagged(foreign.tag, b.body), expect: `${foreign.name}:${b.expect}` };
      }
    }
    const x = this.#rnd();
    if (x < 0.5) return { family: "ledger", frame: tagged(1, encodeLedgerFrame(this.#ledgerMessage(), this.#t.mallory, this.#t.genesis)), expect: "accepted" };
    if (x < 0.72) return { family: "demand", frame: tagged(2, canonicalBytes(this.#board(this.#int(this.#t.maxDemandEntries + 1)))), expect: "accepted" };
    if (x < 0.87) {
      const keeper = this.#rnd() < 0.5;
      return { family: keeper ? "claims-keeper" : "claims-advisory", frame: this.#claimsFrame(keeper, this.#t.mallory, 1 + this.#int(6), () => 1 + this.#int(12)), expect: "accepted" };
    }
    return { family: "liveness", frame: tagged(3, canonicalBytes({ v: 1, kind: this.#rnd() < 0.5 ? "ping" : "pong" })), expect: "accepted" };
  }

  /** A safe-integer time (ms) of a claim, often at the bounds. */
  #time(): number {
    const x = this.#rnd();
    return x < 0.1 ? 0 : x < 0.2 ? Number.MAX_SAFE_INTEGER - 1 : this.#int(2 ** 45);
  }

  /**
   * A claims frame (channel 5) carrying `peer`'s keeper or advisory slot of `n` claims on distinct ids of `idLen()`
   * characters, sorted, with well-ordered times: valid unless an argument makes it hostile.
   */
  #claimsFrame(keeper: boolean, peer: string, n: number, idLen: () => number, version = this.#slotVersion()): Uint8Array {
    const off = this.#int(1000);
    const ids = [...new Set(Array.from({ length: n }, (_, k) => (off + k).toString(36).padStart(idLen(), "y")))].sort();
    const rows = ids.map((id) => {
      const at = this.#time();
      const later = Math.min(Number.MAX_SAFE_INTEGER, at + 1 + this.#int(1_000_000));
      if (!keeper) return [id, at, later];
      const opt = (): number | null => (this.#rnd() < 0.5 ? null : this.#time());
      return [id, at, later, this.#time(), opt(), this.#rnd() < 0.5 ? null : later, opt()];
    });
    const slot = JSON.stringify({ format: keeper ? "heddle-keeper/1" : "heddle-advisory/1", peer, version, claims: rows });
    return tagged(5, enc.encode(JSON.stringify({ v: 1, kind: keeper ? "keeper" : "advisory", slot })));
  }

  /** A slot version (a canonical decimal string), often at 2^63 − 1. */
  #slotVersion(): string {
    const x = this.#rnd();
    return x < 0.15 ? INT64_MAX.toString() : x < 0.25 ? "0" : String(BigInt(this.#int(2 ** 31)) * (1n << 32n) + BigInt(this.#int(2 ** 31)));
  }

  /**
   * Valid-but-hostile claims frames (channel 5): claim counts at `maxClaimsPerSlot` and one past, ids at the
   * claims package's 1,024-character limit and one past, times at 2^53 − 1 and 2^53, versions at 2^63 − 1 and
   * 2^63, another peer's slot, a keeper slot sent as advisory, an expiry not after its claim.
   */
  #hostileClaims(): { family: string; frame: Uint8Array; expect: Outcome | null } {
    const t = this.#t;
    const keeper = this.#rnd() < 0.5;
    switch (this.#int(7)) {
      case 0: {
        const over = this.#rnd() < 0.5;
        const f = this.#claimsFrame(keeper, t.mallory, t.maxClaimsPerSlot + (over ? 1 : 0), () => 3);
        if (f.length - 1 <= this.#channelMax) return { family: over ? "claims-count+1" : "claims-count-max", frame: f, expect: over ? "too-many-entries" : "accepted" };
        // the limit does not fit one frame (the default 4,096 claims in 32 KiB): as many claims as a frame holds
        const n = Math.floor((t.maxClaimsPerSlot * this.#channelMax * 0.8) / f.length);
        return { family: "claims-count-frame-full", frame: this.#claimsFrame(keeper, t.mallory, n, () => 3), expect: "accepted" };
      }
      case 1: {
        const over = this.#rnd() < 0.5;
        const f = this.#claimsFrame(keeper, t.mallory, 1 + this.#int(3), () => (over ? 1025 : 1024));
        return { family: over ? "claims-id-1025" : "claims-id-1024", frame: f, expect: over ? "bad-value" : "accepted" };
      }
      case 2: {
        const over = this.#rnd() < 0.5;
        const v = over ? (1n << 63n).toString() : INT64_MAX.toString();
        return { family: over ? "claims-version-2^63" : "claims-version-max", frame: this.#claimsFrame(keeper, t.mallory, 1 + this.#int(3), () => 4, v), expect: over ? "bad-value" : "accepted" };
      }
      case 3: {
        // a time at 2^53 − 1 (safe) or 2^53 (not): written into the text, as JSON cannot tell them apart once parsed
        const over = this.#rnd() < 0.5;
        const at = Number.MAX_SAFE_INTEGER - 1;
        const rows = keeper ? [["k", at, at, at, null, null, "T"]] : [["k", at, "T"]];
        const slot = JSON.stringify({ format: keeper ? "heddle-keeper/1" : "heddle-advisory/1", peer: t.mallory, version: "7", claims: rows }).replace('"T"', over ? "9007199254740992" : "9007199254740991");
        return { family: over ? "claims-time-2^53" : "claims-time-max", frame: tagged(5, enc.encode(JSON.stringify({ v: 1, kind: keeper ? "keeper" : "advisory", slot }))), expect: over ? "bad-value" : "accepted" };
      }
      case 4:
        return { family: "claims-not-author", frame: this.#claimsFrame(keeper, this.#pick(t.others), 1 + this.#int(4), () => 6), expect: "not-author" };
      case 5: {
        // a keeper slot on the advisory kind (or the reverse): the other decoder refuses it
        const f = this.#claimsFrame(keeper, t.mallory, 1 + this.#int(3), () => 5);
        const text = new TextDecoder().decode(f.subarray(1)).replace(keeper ? '"kind":"keeper"' : '"kind":"advisory"', keeper ? '"kind":"advisory"' : '"kind":"keeper"');
        return { family: "claims-kind-swapped", frame: tagged(5, enc.encode(text)), expect: "bad-value" };
      }
      default: {
        const slot = JSON.stringify({ format: "heddle-advisory/1", peer: t.mallory, version: "9", claims: [["i", 50, 50]] });
        return { family: "claims-expiry-not-after", frame: tagged(5, enc.encode(JSON.stringify({ v: 1, kind: "advisory", slot }))), expect: "bad-value" };
      }
    }
  }

  #frame(): { family: string; frame: Uint8Array; expect: Outcome | null } {
    const x = this.#rnd();
    const t = this.#t;
    if (x < 0.12) {
      const v = this.#validFrame();
      // a valid frame is remembered, so later mutations start from a fresh mix of valid frames
      this.#corpus[this.#int(this.#corpus.length)] = v;
      return v;
    }
    if (x < 0.5) return this.#mutated();
    if (x < 0.55) {
      const tag = this.#pick([1, 2, 3, 4, 5, 0, 6 + this.#int(250)]);
      const unclaimed = tag >= 6 || tag === 0 || (tag === 4 && t.foreign === undefined);
      return { family: `random-bytes`, frame: tagged(tag, this.#bytes(this.#int(200))), expect: unclaimed ? "unknown-channel" : null };
    }
    if (x < 0.6) {
      const foreign = t.foreign;
      if (foreign !== undefined && this.#rnd() < 0.6) {
        // frames the foreign channel's own encoder built, valid or hostile in a named way
        const b = foreign.build(this.#rnd);
        return { family: `${foreign.name}-${b.family}`, frame: tagged(foreign.tag, b.body), expect: b.expect === null ? null : `${foreign.name}:${b.expect}` };
      }
      // Raft (4) is unclaimed on a static node; tags 0 and 6–255 are never claimed
      const tag = this.#pick([4, 4, 5, 5, 0, 6 + this.#int(250)]);
      if (tag === 4 && foreign !== undefined) return { family: "raft-random", frame: tagged(4, this.#bytes(this.#int(100))), expect: null };
      const body = tag === 4 ? new Uint8Array([1, this.#int(12), ...this.#bytes(this.#int(60))]) : this.#bytes(this.#int(100));
      return { family: tag === 4 ? "raft" : tag === 5 ? "claims" : "unknown-tag", frame: tagged(tag, body), expect: tag === 5 ? null : "unknown-channel" };
    }
    if (x < 0.61) return { family: "empty", frame: new Uint8Array(0), expect: "unknown-channel" };
    if (x < 0.62) {
      // above the node's limit, within the seam's: the node counts it before decoding
      const len = t.nodeMaxFrameBytes + 1 + this.#int(t.seamMaxFrameBytes - t.nodeMaxFrameBytes - 2);
      return { family: "node-oversize", frame: tagged(1 + this.#int(3), this.#bytes(len)), expect: "oversize" };
    }
    if (x < 0.66) {
      const other = Buffer.from(this.#bytes(8)).toString("hex");
      return { family: "genesis-mismatch", frame: tagged(1, encodeLedgerFrame(this.#ledgerMessage(), t.mallory, other)), expect: other === t.genesis ? "accepted" : "genesis-mismatch" };
    }
    if (x < 0.71) {
      const who = this.#pick(t.others);
      if (this.#rnd() < 0.5) return { family: "not-author-ledger", frame: tagged(1, encodeLedgerFrame(this.#ledgerMessage(), who, t.genesis)), expect: "not-author" };
      return { family: "not-author-demand", frame: tagged(2, canonicalBytes(this.#board(1 + this.#int(4), 8, who))), expect: "not-author" };
    }
    if (x < 0.74) {
      const max = t.maxDemandEntries;
      const over = this.#rnd() < 0.5;
      return { family: over ? "demand-entries+1" : "demand-entries-max", frame: tagged(2, canonicalBytes(this.#board(over ? max + 1 : max, 256))), expect: over ? "too-many-entries" : "accepted" };
    }
    if (x < 0.77) {
      const over = this.#rnd() < 0.5;
      const b = this.#board(1 + this.#int(3), over ? 257 : 256);
      if (over) (b.entries as unknown[][])[0]![0] = this.#edgeId(257, 999);
      (b.entries as unknown[][]).sort((p, q) => ((p[0] as string) < (q[0] as string) ? -1 : 1));
      return { family: over ? "id-257" : "id-256", frame: tagged(2, canonicalBytes(b)), expect: over ? "schema" : "accepted" };
    }
    if (x < 0.80) {
      const over = this.#rnd() < 0.5;
      const b = this.#board(1, 4, t.mallory, () => INT64_MAX);
      const text = new TextDecoder().decode(canonicalBytes(b)).replaceAll(`"${INT64_MAX}"`, over ? `"${INT64_MAX + 1n}"` : `"${INT64_MAX}"`);
      return { family: over ? "amount-int64+1" : "amount-int64", frame: tagged(2, enc.encode(text)), expect: over ? "schema" : "accepted" };
    }
    if (x < 0.83) {
      const ch = this.#int(3);
      if (ch === 0) {
        const f = encodeLedgerFrame(this.#ledgerMessage(), t.mallory, t.genesis);
        f[0] = this.#pick([0, 1, 3, 255]);
        return { family: "bad-version", frame: tagged(1, f), expect: "bad-version" };
      }
      const body = ch === 1 ? this.#board(1) : { v: 1, kind: "ping" };
      body.v = this.#pick([0, 2, 99, -1]);
      return { family: "bad-version", frame: tagged(ch + 1, canonicalBytes(body)), expect: "bad-version" };
    }
    if (x < 0.86) {
      const f = encodeLedgerFrame(this.#ledgerMessage(), t.mallory, t.genesis);
      f[1] = this.#pick([0, 7, 8, 128, 255]);
      return { family: "unknown-kind", frame: tagged(1, f), expect: "schema" };
    }
    if (x < 0.89) return this.#jsonShuffled();
    if (x < 0.95) return this.#hostileClaims();
    return { family: "ledger-large-value", frame: tagged(1, encodeLedgerFrame(this.#largeDelta(), t.mallory, t.genesis)), expect: null };
  }

  /** A delta whose value is as many rows of the hostile peer's own slots as the frame holds (edge ids at 256 characters). */
  #largeDelta(): LedgerMessage {
    const budget = this.#channelMax - 100;
    const rows: string[] = [];
    let size = 0;
    for (let k = 0; size + 300 < budget; k++) {
      rows.push(`["${this.#edgeId(256, k)}",[["${this.#t.mallory}","${this.#amount()}"]]]`);
      size += 300;
    }
    rows.sort();
    return { kind: "delta", inc: 1, seq: 1 + this.#int(2000), parts: 1, part: 0, ack: null, value: EntitlementLedger.decode(`{"format":"heddle-ledger/1","issued":[${rows.join(",")}]}`) };
  }

  /** JSON frames with keys reordered or duplicated (JSON.parse keeps the last of duplicates). */
  #jsonShuffled(): { family: string; frame: Uint8Array; expect: Outcome | null } {
    const board = this.#rnd() < 0.7;
    const obj: Record<string, unknown> = board ? this.#board(1 + this.#int(4)) : { v: 1, kind: this.#rnd() < 0.5 ? "ping" : "pong" };
    const text = new TextDecoder().decode(canonicalBytes(obj)).slice(1, -1);
    const fields = splitTopLevel(text);
    for (let i = fields.length - 1; i > 0; i--) {
      const j = this.#int(i + 1);
      [fields[i], fields[j]] = [fields[j]!, fields[i]!];
    }
    if (this.#rnd() < 0.5) fields.splice(this.#int(fields.length + 1), 0, this.#pick(fields));
    return { family: "json-fields-reordered-duplicated", frame: tagged(board ? 2 : 3, enc.encode(`{${fields.join(",")}}`)), expect: null };
  }

  #mutated(): { family: string; frame: Uint8Array; expect: null } {
    const base = this.#pick(this.#corpus).frame;
    const m = this.#int(6);
    let f: Uint8Array;
    let family: string;
    if (m === 0) {
      f = base.slice();
      const flips = 1 + this.#int(8);
      for (let k = 0; k < flips; k++) {
        // keep the tag most of the time, so most flips reach a channel's reader
        const at = f.length < 2 ? 0 : 1 + this.#int(f.length - 1);
        f[at] = f[at]! ^ (1 << this.#int(8));
      }
      family = "bit-flip";
    } else if (m === 1) {
      f = base.subarray(0, this.#int(base.length));
      family = "truncated";
    } else if (m === 2) {
      f = new Uint8Array([...base, ...this.#bytes(1 + this.#int(40))]);
      family = "trailing-bytes";
    } else if (m === 3) {
      // a byte range repeated in place ("a field twice")
      const a = this.#int(base.length);
      const b = a + this.#int(Math.min(24, base.length - a) + 1);
      f = new Uint8Array([...base.subarray(0, b), ...base.subarray(a, b), ...base.subarray(b)]);
      family = "duplicated-range";
    } else if (m === 4) {
      // two adjacent ranges swapped ("fields reordered")
      const a = 1 + this.#int(Math.max(1, base.length - 1));
      const b = a + this.#int(Math.max(1, base.length - a));
      const c = b + this.#int(Math.max(1, base.length - b));
      f = new Uint8Array([...base.subarray(0, a), ...base.subarray(b, c), ...base.subarray(a, b), ...base.subarray(c)]);
      family = "swapped-ranges";
    } else {
      f = base.slice();
      const at = f.length < 2 ? 0 : 1 + this.#int(f.length - 1);
      f[at] = this.#pick([0, 0x7f, 0x80, 0xff, 0x22, 0x5c]);
      family = "byte-set";
    }
    return { family, frame: f, expect: null };
  }

  /** A fresh stream with length-prefix trouble: oversize or endless prefixes, understated or overstated lengths. */
  #ownStream(): Shot {
    const t = this.#t;
    const lead = Array.from({ length: this.#int(4) }, () => this.#validFrame().frame);
    const head = prefixed(lead);
    const k = this.#int(4);
    let tail: number[];
    let family: string;
    if (k === 0) {
      tail = [...varint(t.seamMaxFrameBytes + 1 + this.#int(1 << 20)), ...this.#bytes(this.#int(100))];
      family = "prefix-oversize";
    } else if (k === 1) {
      tail = [0x80 | this.#int(2), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, ...this.#bytes(this.#int(20))];
      family = "prefix-endless";
    } else if (k === 2) {
      // the prefix understates the frame: the rest is read as further frames (whatever they turn out to be)
      const f = this.#validFrame().frame;
      tail = [...varint(this.#int(f.length)), ...f];
      family = "prefix-understated";
    } else {
      // the prefix overstates the frame (still within the limit): the stream ends inside it
      const f = this.#validFrame().frame;
      tail = [...varint(f.length + 1 + this.#int(1000)), ...f];
      family = "prefix-overstated";
    }
    const bytes = new Uint8Array(head.length + tail.length);
    bytes.set(head, 0);
    bytes.set(tail, head.length);
    return this.#shot(family, "own", bytes, null);
  }
}

/** Splits the inside of a flat JSON object into its top-level `"key":value` members. */
function splitTopLevel(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[" || c === "{") depth++;
    else if (c === "]" || c === "}") depth--;
    else if (c === "," && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out;
}
