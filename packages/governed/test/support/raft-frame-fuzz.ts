/**
 * The Raft channel (tag 4) of issue 17's frame fuzzer, as a `ForeignChannel` of the node package's generator: frames
 * built with the Raft codec's own encoder — every message type, with hostile values (terms and indexes at 0, at the
 * term ceiling and past it, at 2^53 − 1; entries and snapshot chunks that fill the channel's frame budget to the
 * byte; configurations and proposal keys naming the cluster's members) — and frames built to be undecodable in a
 * named way (other versions and types, negative, fractional and unsafe numbers, lying counts and lengths, strings
 * and member lists one past their limits, ill-formed UTF-8, bad booleans, an entry whose kind disagrees with its
 * configuration flag).
 *
 * The hostile peer is not a Raft member, so the victim's member refuses every frame it can decode as `not-member`
 * (`RaftCoreOptions.admit`) and every other as `undecodable`: `classify` is the codec's own `decodeMessage`, and
 * each built family's expected verdict, stated when it is built, must agree with it.
 */
import type { ForeignChannel } from "../../../node/test/support/frame-fuzz.ts";
import { decodeMessage, encodeMessage } from "../../src/index.ts";
import type { ClusterConfig, LogEntry, Message } from "../../src/index.ts";
import { APPEND_OVERHEAD_BYTES, MAX_CONFIG_MEMBERS, MAX_STRING_BYTES, entryBytes } from "../../src/raft/codec.ts";
import { DEFAULT_RAFT_CONFIG } from "../../src/index.ts";

/** What the generator knows of the victim's cluster. */
export interface RaftFuzzTarget {
  /** The Raft members' ids (the victim's voters): named in configurations and proposal keys. */
  readonly members: readonly string[];
  /** The Raft channel's frame budget (the seam's limit minus the tag byte). */
  readonly maxBodyBytes: number;
}

const enc = new TextEncoder();

/** A Raft channel for `FrameFuzzer` aimed at a member that does not admit the hostile peer. */
export function raftFuzzChannel(target: RaftFuzzTarget): ForeignChannel {
  return {
    tag: 4,
    name: "raft",
    classify: (body) => (decodeMessage(body) === null ? "undecodable" : "not-member"),
    build: (random) => new RaftFrames(target, random).next(),
  };
}

class RaftFrames {
  readonly #t: RaftFuzzTarget;
  readonly #rnd: () => number;

  constructor(t: RaftFuzzTarget, random: () => number) {
    this.#t = t;
    this.#rnd = random;
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

  /** A term or index the decoder accepts: small, or at the bounds the core's hygiene cares about. */
  #num(): number {
    const ceiling = DEFAULT_RAFT_CONFIG.termCeiling;
    return this.#pick([0, 1, 2, 3, 1 + this.#int(50), this.#int(2 ** 31), DEFAULT_RAFT_CONFIG.maxTermJump + 1 + this.#int(100), ceiling, ceiling + 1, Number.MAX_SAFE_INTEGER]);
  }

  #config(): ClusterConfig {
    const ids = [...this.#t.members].sort(() => this.#rnd() - 0.5);
    const cut = this.#int(ids.length + 1);
    return { voters: ids.slice(0, cut), learners: ids.slice(cut) };
  }

  /** A proposal key naming a member's own client id (`auto:<member>:…`), as its forwards carry. */
  #key(): LogEntry["key"] {
    return this.#rnd() < 0.3 ? null : { client: `auto:${this.#pick(this.#t.members)}:${this.#int(1e6)}`, seq: this.#num() };
  }

  #entry(index: number, term: number, command = this.#bytes(this.#int(40))): LogEntry {
    const k = this.#int(3);
    if (k === 0) return { index, term, stampedAt: this.#num(), kind: "config", key: null, command: new Uint8Array(0), config: this.#config() };
    return { index, term, stampedAt: this.#num(), kind: k === 1 ? "app" : "noop", key: this.#key(), command };
  }

  #message(): Message {
    const term = this.#num();
    switch (this.#int(11)) {
      case 0:
        return { type: "preVote", term, lastLogIndex: this.#num(), lastLogTerm: this.#num(), round: this.#num() };
      case 1:
        return { type: "vote", term, lastLogIndex: this.#num(), lastLogTerm: this.#num(), ...(this.#rnd() < 0.5 ? { transfer: true } : {}) };
      case 2:
        return { type: "preVoteReply", term, granted: this.#rnd() < 0.5, round: this.#num() };
      case 3:
        return { type: "voteReply", term, granted: this.#rnd() < 0.5 };
      case 4: {
        const prev = this.#num();
        const n = this.#int(5);
        // contiguous entries mostly (what hygiene reads further), sometimes not
        // (an index past 2^53 − 1 would not decode: the contiguous run stops at the largest safe integer)
        const entries = Array.from({ length: n }, (_, k) => this.#entry(this.#rnd() < 0.8 ? Math.min(prev + 1 + k, Number.MAX_SAFE_INTEGER) : this.#num(), this.#rnd() < 0.7 ? term : this.#num()));
        return { type: "append", term, prevLogIndex: prev, prevLogTerm: this.#num(), leaderCommit: this.#num(), round: this.#num(), entries };
      }
      case 5:
        return { type: "appendReply", term, success: this.#rnd() < 0.5, matchIndex: this.#num(), rejectedPrev: this.#num(), conflictTerm: this.#rnd() < 0.5 ? null : this.#num(), conflictIndex: this.#num(), round: this.#num(), ...(this.#rnd() < 0.2 ? { maxEntries: this.#num() } : {}) };
      case 6: {
        const data = this.#bytes(this.#int(300));
        return { type: "snapshot", term, lastIndex: this.#num(), lastTerm: this.#num(), config: this.#rnd() < 0.5 ? null : this.#config(), total: this.#rnd() < 0.3 ? this.#num() : data.length + this.#int(1000), offset: this.#rnd() < 0.5 ? 0 : this.#num(), data };
      }
      case 7:
        return { type: "snapshotReply", term, lastIndex: this.#num(), nextOffset: this.#num(), done: this.#rnd() < 0.5 };
      case 8:
        return { type: "forward", corrId: this.#num(), key: this.#key(), command: this.#bytes(this.#int(200)) };
      case 9:
        return { type: "forwardReply", corrId: this.#num(), outcome: this.#pick(["committed", "notLeader", "failed"] as const), index: this.#num(), term };
      default:
        return { type: "timeoutNow", term };
    }
  }

  /** An AppendEntries of one app entry whose command makes the frame exactly `maxBodyBytes` long. */
  #appendAtLimit(): Uint8Array {
    const term = 1 + this.#int(5);
    const empty: LogEntry = { index: 1, term, stampedAt: 0, kind: "app", key: this.#key(), command: new Uint8Array(0) };
    // the codec's own size accounting (R-R7 fills frames with it)
    const room = this.#t.maxBodyBytes - APPEND_OVERHEAD_BYTES - entryBytes(empty);
    const body = encodeMessage({ type: "append", term, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 1, round: 0, entries: [{ ...empty, command: this.#bytes(room) }] });
    if (body.length !== this.#t.maxBodyBytes) throw new Error(`raft fuzz: an at-limit append is ${body.length} bytes, not ${this.#t.maxBodyBytes}`);
    return body;
  }

  /** An InstallSnapshot chunk whose data makes the frame exactly `maxBodyBytes` long. */
  #snapshotAtLimit(): Uint8Array {
    const m = { type: "snapshot" as const, term: 1 + this.#int(5), lastIndex: 1 + this.#int(1000), lastTerm: 1, config: null, offset: 0 };
    const room = this.#t.maxBodyBytes - encodeMessage({ ...m, total: 0, data: new Uint8Array(0) }).length;
    const body = encodeMessage({ ...m, total: room, data: this.#bytes(room) });
    if (body.length !== this.#t.maxBodyBytes) throw new Error(`raft fuzz: an at-limit snapshot chunk is ${body.length} bytes, not ${this.#t.maxBodyBytes}`);
    return body;
  }

  /** `body` with the float64 at `at` replaced by `v`. */
  #withNumber(body: Uint8Array, at: number, v: number): Uint8Array {
    const out = body.slice();
    new DataView(out.buffer).setFloat64(at, v);
    return out;
  }

  next(): { family: string; body: Uint8Array; expect: string; corpus: boolean } {
    const x = this.#rnd();
    if (x < 0.55) {
      const m = this.#message();
      return { family: m.type, body: encodeMessage(m), expect: "not-member", corpus: true };
    }
    if (x < 0.6) return { family: "append-at-limit", body: this.#appendAtLimit(), expect: "not-member", corpus: false };
    if (x < 0.63) return { family: "snapshot-at-limit", body: this.#snapshotAtLimit(), expect: "not-member", corpus: false };
    const termed = (): Uint8Array => {
      // every message type but forward and forwardReply carries its term right after version and type
      for (;;) {
        const m = this.#message();
        if (m.type !== "forward" && m.type !== "forwardReply") return encodeMessage(m);
      }
    };
    switch (this.#int(12)) {
      case 0: {
        const b = encodeMessage(this.#message());
        b[0] = this.#pick([0, 2, 127, 255]);
        return { family: "bad-version", body: b, expect: "undecodable", corpus: false };
      }
      case 1: {
        const b = encodeMessage(this.#message());
        b[1] = this.#pick([0, 12, 13, 128, 255]);
        return { family: "unknown-type", body: b, expect: "undecodable", corpus: false };
      }
      case 2:
        return { family: "term-not-natural", body: this.#withNumber(termed(), 2, this.#pick([-1, 0.5, NaN, Infinity, 2 ** 53, -1e-300])), expect: "undecodable", corpus: false };
      case 3: {
        // an entry count the frame cannot hold
        const b = encodeMessage({ type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [] });
        new DataView(b.buffer).setUint32(APPEND_OVERHEAD_BYTES - 4, this.#pick([1, 2, 1000, 0xffffffff]));
        return { family: "entry-count-lie", body: b, expect: "undecodable", corpus: false };
      }
      case 4: {
        // a command length past the frame's end
        const b = encodeMessage({ type: "forward", corrId: 1, key: null, command: this.#bytes(10) });
        new DataView(b.buffer).setUint32(2 + 8 + 1, 11 + this.#int(2 ** 31));
        return { family: "length-lie", body: b, expect: "undecodable", corpus: false };
      }
      case 5: {
        const over = this.#rnd() < 0.5;
        const client = "m".repeat(over ? MAX_STRING_BYTES + 1 : MAX_STRING_BYTES);
        return { family: over ? "string-1025" : "string-1024", body: encodeMessage({ type: "forward", corrId: 2, key: { client, seq: 1 }, command: new Uint8Array(1) }), expect: over ? "undecodable" : "not-member", corpus: false };
      }
      case 6: {
        const over = this.#rnd() < 0.5;
        const voters = Array.from({ length: over ? MAX_CONFIG_MEMBERS + 1 : MAX_CONFIG_MEMBERS }, (_, k) => `v${k}`);
        const m: Message = { type: "snapshot", term: 1, lastIndex: 1, lastTerm: 1, config: { voters, learners: [] }, total: 0, offset: 0, data: new Uint8Array(0) };
        return { family: over ? "config-members+1" : "config-members-max", body: encodeMessage(m), expect: over ? "undecodable" : "not-member", corpus: false };
      }
      case 7: {
        const member = this.#pick(this.#t.members);
        const m: Message = { type: "snapshot", term: 1, lastIndex: 1, lastTerm: 1, config: { voters: [member], learners: [member] }, total: 0, offset: 0, data: new Uint8Array(0) };
        return { family: "config-duplicate-member", body: encodeMessage(m), expect: "undecodable", corpus: false };
      }
      case 8: {
        // the client id's bytes replaced by ill-formed UTF-8
        const b = encodeMessage({ type: "forward", corrId: 3, key: { client: "abcd", seq: 1 }, command: new Uint8Array(0) });
        b.set([0xff, 0xfe, 0xc0, 0x80], 2 + 8 + 1 + 2);
        return { family: "bad-utf8", body: b, expect: "undecodable", corpus: false };
      }
      case 9: {
        // the vote's transfer flag (its last byte) neither 0 nor 1
        const b = encodeMessage({ type: "vote", term: 1, lastLogIndex: 0, lastLogTerm: 0 });
        b[b.length - 1] = 2 + this.#int(254);
        return { family: "bad-boolean", body: b, expect: "undecodable", corpus: false };
      }
      case 10: {
        // a config entry whose kind byte says app: the configuration flag then disagrees with the kind
        const e: LogEntry = { index: 1, term: 1, stampedAt: 0, kind: "config", key: null, command: new Uint8Array(0), config: this.#config() };
        const b = encodeMessage({ type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [e] });
        b[APPEND_OVERHEAD_BYTES + 24] = this.#pick([1, 2]);
        return { family: "entry-kind-config-mismatch", body: b, expect: "undecodable", corpus: false };
      }
      default: {
        // trailing bytes are ignored (later versions may append fields): still decodable
        const b = encodeMessage(this.#message());
        const out = new Uint8Array(b.length + 1 + this.#int(30));
        out.set(b);
        out.set(enc.encode("trailing".slice(0, out.length - b.length)), b.length);
        return { family: "trailing-fields", body: out, expect: "not-member", corpus: false };
      }
    }
  }
}
