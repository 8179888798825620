/** The Raft codec's edges: exact forward/snapshot size accounting, buffer growth at every alignment, and refusal of each malformed field. */
import { describe, expect, it } from "vitest";
import {
  decodeConfig,
  decodeMessage,
  encodeConfig,
  encodeMessage,
  forwardBytes,
  FORWARD_OVERHEAD_BYTES,
  MAX_CONFIG_MEMBERS,
  MAX_STRING_BYTES,
  SNAPSHOT_OVERHEAD_BYTES,
} from "../src/raft/codec.ts";
import type { ClusterConfig, LogEntry, Message } from "../src/index.ts";

const utf8 = new TextEncoder();
const memberBytes = (c: ClusterConfig): number => [...c.voters, ...c.learners].reduce((n, id) => n + 2 + utf8.encode(id).length, 0);

/** A TimeoutNow frame whose term field holds the raw float `term`. */
function timeoutNowFrame(term: number): Uint8Array {
  const b = new Uint8Array(10);
  b[0] = 1;
  b[1] = 11;
  new DataView(b.buffer).setFloat64(2, term);
  return b;
}

/** A config blob as `encodeConfig` lays it out, built by hand so counts and lengths can lie. */
function rawConfig(voters: Uint8Array[], learners: Uint8Array[], counts?: { nv?: number; nl?: number }): Uint8Array {
  const parts: number[] = [];
  const u16 = (v: number): void => void parts.push(v >> 8, v & 0xff);
  u16(counts?.nv ?? voters.length);
  for (const v of voters) (u16(v.length), parts.push(...v));
  u16(counts?.nl ?? learners.length);
  for (const l of learners) (u16(l.length), parts.push(...l));
  return new Uint8Array(parts);
}

const names = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe("raft codec size accounting", () => {
  it("sizes a forward frame exactly, its overhead counting the key's presence byte", () => {
    const keys = [null, { client: "c", seq: 7 }, { client: "clé-ünï", seq: 2 ** 40 }];
    for (const key of keys) {
      for (const len of [0, 1, 100]) {
        const command = new Uint8Array(len).fill(3);
        const size = encodeMessage({ type: "forward", corrId: 5, key, command }).length;
        expect(forwardBytes(command, key)).toBe(size);
        const keyExtra = key === null ? 0 : 2 + utf8.encode(key.client).length + 8;
        expect(size).toBe(FORWARD_OVERHEAD_BYTES + keyExtra + len);
      }
    }
  });

  it("sizes an InstallSnapshot frame as its overhead plus member strings plus data", () => {
    const configs: ClusterConfig[] = [
      { voters: [], learners: [] },
      { voters: ["a"], learners: [] },
      { voters: ["n1", "nœud-2"], learners: ["l1"] },
    ];
    for (const config of configs) {
      for (const len of [0, 9]) {
        const data = new Uint8Array(len);
        const m: Message = { type: "snapshot", term: 1, lastIndex: 2, lastTerm: 1, config, total: 9, offset: 0, data };
        expect(encodeMessage(m).length).toBe(SNAPSHOT_OVERHEAD_BYTES + memberBytes(config) + len);
      }
    }
    // without a configuration only the presence byte remains of it (no member counts)
    const bare: Message = { type: "snapshot", term: 1, lastIndex: 2, lastTerm: 1, config: null, total: 9, offset: 0, data: new Uint8Array(3) };
    expect(encodeMessage(bare).length).toBe(SNAPSHOT_OVERHEAD_BYTES - 4 + 3);
  });

  it("round-trips frames whose fields cross the encoder's buffer boundary at every alignment", () => {
    for (let len = 1; len <= 300; len++) {
      const client = "k".repeat(Math.min(len, MAX_STRING_BYTES));
      const fwd: Message = { type: "forward", corrId: len, key: { client, seq: len }, command: new Uint8Array(len).fill(len & 0xff) };
      expect(decodeMessage(encodeMessage(fwd))).toEqual(fwd);
      const config = { voters: ["v".repeat(len), "w".repeat((len * 7) % 50)], learners: ["l".repeat(len % 13)] };
      const snap: Message = { type: "snapshot", term: 3, lastIndex: len, lastTerm: 2, config, total: len, offset: 0, data: new Uint8Array(len % 17).fill(9) };
      expect(decodeMessage(encodeMessage(snap))).toEqual(snap);
      const cfg = { voters: names(len % 40, "v".repeat(len % 11)), learners: ["x".repeat(len)] };
      expect(decodeConfig(encodeConfig(cfg))).toEqual(cfg);
    }
  });
});

describe("raft codec refuses malformed fields", () => {
  it("refuses a number that is negative, fractional, non-finite or beyond the safe integers", () => {
    expect(decodeMessage(timeoutNowFrame(0))).toEqual({ type: "timeoutNow", term: 0 });
    expect(decodeMessage(timeoutNowFrame(2 ** 53 - 1))).toEqual({ type: "timeoutNow", term: 2 ** 53 - 1 });
    for (const bad of [-1, -0.5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, -(2 ** 60)]) expect(decodeMessage(timeoutNowFrame(bad))).toBeNull();
  });

  it("refuses a boolean byte other than 0 or 1", () => {
    const b = encodeMessage({ type: "voteReply", term: 3, granted: true });
    expect(b[10]).toBe(1);
    b[10] = 2;
    expect(decodeMessage(b)).toBeNull();
  });

  it("refuses a frame cut short inside any field, including a final one-byte field", () => {
    const frames: Message[] = [
      { type: "snapshotReply", term: 2, lastIndex: 5, nextOffset: 10, done: true },
      { type: "forward", corrId: 1, key: { client: "client-1", seq: 3 }, command: new Uint8Array([1, 2, 3, 4]) },
      { type: "snapshot", term: 1, lastIndex: 2, lastTerm: 1, config: { voters: ["a", "b"], learners: [] }, total: 4, offset: 0, data: new Uint8Array([7, 7, 7, 7]) },
    ];
    for (const m of frames) {
      const b = encodeMessage(m);
      // a snapshotReply ends in a trailing field added in a later revision (`maxBytes`, a presence byte first): cut
      // right before it, the frame is exactly what an older sender writes, and decodes as such — every other cut is refused
      const legacy = m.type === "snapshotReply" ? b.length - 1 : -1;
      for (let n = 0; n < b.length; n++) {
        if (n === legacy) expect(decodeMessage(b.subarray(0, n))).toEqual(m);
        else expect(decodeMessage(b.subarray(0, n)), `${m.type} cut at ${n} of ${b.length}`).toBeNull();
      }
    }
    // with the trailing field present, a cut inside it is refused
    const limited = encodeMessage({ type: "snapshotReply", term: 2, lastIndex: 5, nextOffset: 0, done: false, maxBytes: 1024 });
    for (let n = limited.length - 8; n < limited.length; n++) expect(decodeMessage(limited.subarray(0, n)), `cut at ${n} of ${limited.length}`).toBeNull();
  });

  it("refuses bytes that are not UTF-8 in a string field", () => {
    const b = encodeMessage({ type: "forward", corrId: 1, key: { client: "ab", seq: 3 }, command: new Uint8Array(0) });
    // corrId (8) after version and type, then the key flag and the string's 2-byte length
    expect(Array.from(b.subarray(13, 15))).toEqual([0x61, 0x62]);
    b[13] = 0xff;
    expect(decodeMessage(b)).toBeNull();
    expect(decodeConfig(rawConfig([new Uint8Array([0xc3, 0x28])], []))).toBeNull();
  });

  it("accepts a string of exactly MAX_STRING_BYTES and refuses one byte more", () => {
    const at = "s".repeat(MAX_STRING_BYTES);
    expect(decodeConfig(encodeConfig({ voters: [at], learners: [] }))).toEqual({ voters: [at], learners: [] });
    expect(decodeConfig(rawConfig([utf8.encode(at + "s")], []))).toBeNull();
    const fwd = encodeMessage({ type: "forward", corrId: 1, key: { client: at + "s", seq: 1 }, command: new Uint8Array(0) });
    expect(decodeMessage(fwd)).toBeNull();
  });

  it("accepts exactly MAX_CONFIG_MEMBERS voters or learners and refuses one more", () => {
    for (const side of ["voters", "learners"] as const) {
      const full = { voters: [] as string[], learners: [] as string[], [side]: names(MAX_CONFIG_MEMBERS, "m") };
      expect(decodeConfig(encodeConfig(full))).toEqual(full);
      const over = { voters: [] as string[], learners: [] as string[], [side]: names(MAX_CONFIG_MEMBERS + 1, "m") };
      expect(decodeConfig(encodeConfig(over))).toBeNull();
    }
  });

  it("refuses a configuration naming a member twice, within or across voters and learners", () => {
    expect(decodeConfig(encodeConfig({ voters: ["a", "a"], learners: [] }))).toBeNull();
    expect(decodeConfig(encodeConfig({ voters: ["a"], learners: ["a"] }))).toBeNull();
    const snap: Message = { type: "snapshot", term: 1, lastIndex: 2, lastTerm: 1, config: { voters: ["a", "b"], learners: ["b"] }, total: 1, offset: 0, data: new Uint8Array(1) };
    expect(decodeMessage(encodeMessage(snap))).toBeNull();
  });

  it("refuses an entry whose configuration presence disagrees with its kind", () => {
    const base = { index: 1, term: 1, stampedAt: 0, key: null, command: new Uint8Array(0) };
    const appWithConfig = { ...base, kind: "app", config: { voters: ["a"], learners: [] } } as LogEntry;
    const configWithout = { ...base, kind: "config" } as LogEntry;
    for (const e of [appWithConfig, configWithout]) {
      const m: Message = { type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [e] };
      expect(decodeMessage(encodeMessage(m))).toBeNull();
    }
  });

  it("decodeConfig returns null on truncated or malformed bytes, never throws", () => {
    const good = encodeConfig({ voters: ["a", "bb"], learners: ["c"] });
    for (let n = 0; n < good.length; n++) expect(decodeConfig(good.subarray(0, n))).toBeNull();
    expect(decodeConfig(rawConfig([], [], { nv: MAX_CONFIG_MEMBERS + 1 }))).toBeNull();
    expect(decodeConfig(new Uint8Array([0, 1, 0, 5, 0x61, 0x62]))).toBeNull();
  });
});

describe("raft codec encoder refuses what its 16-bit fields cannot hold", () => {
  // found in review: the length was written modulo 2^16, so the receiver misread the frame instead of refusing it
  it("a string over 65,535 UTF-8 bytes, or a member count over 65,535, throws RangeError instead of writing a wrapped length", () => {
    const huge = "z".repeat(65_536 + 5);
    expect(() => encodeMessage({ type: "forward", corrId: 1, key: { client: huge, seq: 1 }, command: new Uint8Array(0) })).toThrow(RangeError);
    expect(() => encodeConfig({ voters: [huge], learners: [] })).toThrow(RangeError);
    expect(() => encodeConfig({ voters: Array.from({ length: 65_536 }, (_, i) => `v${i}`), learners: [] })).toThrow(RangeError);
    // 65,535 bytes still encode (the decoder then refuses it as over MAX_STRING_BYTES)
    expect(() => encodeConfig({ voters: ["z".repeat(65_535)], learners: [] })).not.toThrow();
  });
});
