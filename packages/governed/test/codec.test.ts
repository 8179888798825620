/** The Raft wire codec: round trips, exact size accounting, and total rejection of malformed input. */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { APPEND_OVERHEAD_BYTES, entryBytes, utf8Length } from "../src/raft/codec.ts";
import { decodeMessage, encodeMessage, raftConfig, RaftCore } from "../src/index.ts";
import type { LogEntry, Message } from "../src/index.ts";

const nat = fc.integer({ min: 0, max: 2 ** 40 });
// ids in ASCII and in all of Unicode (multi-byte UTF-8, surrogate pairs): sizes are counted without encoding
const id = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.string({ minLength: 1, maxLength: 12, unit: "grapheme" }));
const key = fc.option(fc.record({ client: id, seq: fc.integer({ min: 1, max: 2 ** 40 }) }), { nil: null });
const config = fc.uniqueArray(id, { minLength: 1, maxLength: 6 }).map((ids) => ({ voters: ids.slice(0, Math.ceil(ids.length / 2)), learners: ids.slice(Math.ceil(ids.length / 2)) }));
const entry: fc.Arbitrary<LogEntry> = fc.oneof(
  fc.record({ index: nat, term: nat, kind: fc.constantFrom("app" as const, "noop" as const), key, command: fc.uint8Array({ maxLength: 64 }), stampedAt: nat }),
  fc.record({ index: nat, term: nat, kind: fc.constant("config" as const), key, command: fc.uint8Array({ maxLength: 8 }), stampedAt: nat, config }),
);
const message: fc.Arbitrary<Message> = fc.oneof(
  fc.record({ type: fc.constant("preVote" as const), term: nat, lastLogIndex: nat, lastLogTerm: nat, round: nat }),
  fc.record({ type: fc.constant("preVoteReply" as const), term: nat, granted: fc.boolean(), round: nat }),
  fc.record({ type: fc.constant("vote" as const), term: nat, lastLogIndex: nat, lastLogTerm: nat }),
  fc.record({ type: fc.constant("vote" as const), term: nat, lastLogIndex: nat, lastLogTerm: nat, transfer: fc.constant(true) }),
  fc.record({ type: fc.constant("timeoutNow" as const), term: nat }),
  fc.record({ type: fc.constant("voteReply" as const), term: nat, granted: fc.boolean() }),
  fc.record({ type: fc.constant("append" as const), term: nat, prevLogIndex: nat, prevLogTerm: nat, leaderCommit: nat, round: nat, entries: fc.array(entry, { maxLength: 4 }) }),
  fc.record({ type: fc.constant("appendReply" as const), term: nat, success: fc.boolean(), matchIndex: nat, rejectedPrev: nat, conflictTerm: fc.option(nat, { nil: null }), conflictIndex: nat, round: nat }),
  fc.record({ type: fc.constant("appendReply" as const), term: nat, success: fc.constant(false), matchIndex: nat, rejectedPrev: nat, conflictTerm: fc.constant(null), conflictIndex: nat, round: nat, maxEntries: nat }),
  fc.record({ type: fc.constant("snapshot" as const), term: nat, lastIndex: nat, lastTerm: nat, config: fc.option(config, { nil: null }), total: nat, offset: nat, data: fc.uint8Array({ maxLength: 64 }) }),
  fc.record({ type: fc.constant("snapshotReply" as const), term: nat, lastIndex: nat, nextOffset: nat, done: fc.boolean() }),
  fc.record({ type: fc.constant("snapshotReply" as const), term: nat, lastIndex: nat, nextOffset: fc.constant(0), done: fc.constant(false), maxBytes: nat }),
  fc.record({ type: fc.constant("forward" as const), corrId: nat, key, command: fc.uint8Array({ maxLength: 64 }) }),
  fc.record({ type: fc.constant("forwardReply" as const), corrId: nat, outcome: fc.constantFrom("committed" as const, "notLeader" as const, "failed" as const), index: nat, term: nat }),
);

describe("raft codec", () => {
  it("round-trips every message, and equal messages encode to equal bytes", () => {
    fc.assert(
      fc.property(message, (m) => {
        const bytes = encodeMessage(m);
        const back = decodeMessage(bytes);
        expect(back).toEqual(m);
        expect(encodeMessage(back!)).toEqual(bytes);
      }),
      { numRuns: 2000 },
    );
  });

  it("accounts an append frame's size exactly (the frame budget relies on it)", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 5 }), (entries) => {
        const m: Message = { type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries };
        expect(encodeMessage(m).length).toBe(APPEND_OVERHEAD_BYTES + entries.reduce((n, e) => n + entryBytes(e), 0));
      }),
    );
  });

  it("counts a string's UTF-8 bytes as TextEncoder writes them, lone surrogates included", () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), fc.string()), (s) => {
        expect(utf8Length(s)).toBe(enc.encode(s).length);
      }),
      { numRuns: 2000 },
    );
    for (const s of ["", "a", "é", "€", "😀", "\ud800", "\udc00", "a\ud800b", "\ud800\ud800", "\udc00\ud800", "😀\ud83d"]) expect(utf8Length(s)).toBe(enc.encode(s).length);
  });

  it("encodes an untyped caller's non-string client id as TextEncoder converts it, with its size counted alike", () => {
    const e = { index: 1, term: 1, kind: "app", key: { client: 5 as unknown as string, seq: 1 }, command: new Uint8Array(3), stampedAt: 0 } as LogEntry;
    const bytes = encodeMessage({ type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [e] });
    expect(bytes.length).toBe(APPEND_OVERHEAD_BYTES + entryBytes(e));
    const back = decodeMessage(bytes);
    expect(back?.type === "append" ? back.entries[0]!.key : null).toEqual({ client: "5", seq: 1 });
  });

  it("never throws on arbitrary or truncated bytes, and a core fed them stays sound", () => {
    const core = new RaftCore({ id: "f", bootstrap: { voters: ["a", "f"], learners: [] }, persisted: { term: 0, votedFor: null, snapshot: null, entries: [] }, config: raftConfig(), random: () => 0.5, now: 0 });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 200 }), message.map((m) => encodeMessage(m)).chain((b) => fc.integer({ min: 0, max: b.length }).map((n) => b.subarray(0, n)))), (bytes) => {
        const m = decodeMessage(bytes);
        if (m !== null) expect(() => core.step("a", m)).not.toThrow();
      }),
      { numRuns: 3000 },
    );
    // a mutated-prefix frame with unknown version or type is refused
    expect(decodeMessage(new Uint8Array([2, 5]))).toBeNull();
    expect(decodeMessage(new Uint8Array([1, 99]))).toBeNull();
  });

  it("reads a RequestVote from a sender that predates the transfer flag as a vote without it", () => {
    const flagged = encodeMessage({ type: "vote", term: 4, lastLogIndex: 9, lastLogTerm: 3, transfer: true });
    expect(decodeMessage(flagged)).toEqual({ type: "vote", term: 4, lastLogIndex: 9, lastLogTerm: 3, transfer: true });
    expect(decodeMessage(flagged.subarray(0, flagged.length - 1))).toEqual({ type: "vote", term: 4, lastLogIndex: 9, lastLogTerm: 3 });
    expect(encodeMessage({ type: "vote", term: 4, lastLogIndex: 9, lastLogTerm: 3, transfer: false })).toEqual(encodeMessage({ type: "vote", term: 4, lastLogIndex: 9, lastLogTerm: 3 }));
  });

  it("reads an InstallSnapshot answer from a sender that predates maxBytes as one without it", () => {
    const plain = { type: "snapshotReply" as const, term: 2, lastIndex: 7, nextOffset: 0, done: false };
    const limited = encodeMessage({ ...plain, maxBytes: 1000 });
    expect(decodeMessage(limited)).toEqual({ ...plain, maxBytes: 1000 });
    // the previous revision's frame: the four fields, no presence byte
    const old = encodeMessage(plain);
    expect(decodeMessage(old.subarray(0, old.length - 1))).toEqual(plain);
  });

  it("ignores trailing bytes (fields a later version appends)", () => {
    const m: Message = { type: "voteReply", term: 3, granted: true };
    const b = encodeMessage(m);
    const longer = new Uint8Array(b.length + 5);
    longer.set(b);
    expect(decodeMessage(longer)).toEqual(m);
  });
});
