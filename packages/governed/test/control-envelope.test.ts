/** The control log's wire envelope (governed.md §3.1): magic + version + canonical JSON, digests, total decoding. */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { CONTROL_MAGIC, decodeEntry, digestOf, encodeEnvelope } from "../src/index.ts";
import type { ControlCommand, ControlEnvelope } from "../src/index.ts";
import { canonicalJson } from "../src/control/canonical-json.ts";
import { commandJson } from "../src/control/envelope.ts";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 500);
const enc = new TextEncoder();

const commands: ControlCommand[] = [
  { op: "mint", holder: ReplicaId("n1"), amount: 9_223_372_036_854_775_807n },
  { op: "prepare", record: { id: AttachmentId("e1"), parent: GroupId("root"), child: GroupId("a"), weight: Weight.of(3n, 2n) } },
  { op: "activate", edge: AttachmentId("e1") },
  { op: "close", edge: AttachmentId("e1") },
  { op: "retire", edge: AttachmentId("e1") },
  { op: "retire", edge: AttachmentId("e1"), witness: '{"format":"heddle-ledger/1"}' },
  { op: "enroll", replica: ReplicaId("n2") },
  { op: "depart", replica: ReplicaId("n2") },
  { op: "claims.take", request: { holder: "w1", resources: [{ key: "k", mode: "exclusive" }, { key: "p", mode: "shared" }], scope: "run-1", ttlMs: 500, label: "why" } },
  { op: "claims.take", request: { holder: "w1", resources: [{ key: "k", mode: "shared" }] } },
  { op: "claims.release", holder: "w1", key: "k" },
  { op: "claims.release", holder: "w1", key: "k", token: 250 },
  { op: "claims.release", holder: "w1", key: "k", token: 0 },
  { op: "claims.renew", holder: "w1", key: "k" },
  { op: "claims.releaseAll", holder: "w1" },
  { op: "claims.releaseScope", scope: "run-1" },
];

function env(cmd: ControlCommand, seq = 7): ControlEnvelope {
  return { v: 1, key: { client: "auto:n1:x", seq }, ackFloor: 3, proposer: ReplicaId("n1"), cmd };
}

function body(text: string): Uint8Array {
  const b = enc.encode(text);
  const out = new Uint8Array(5 + b.length);
  out.set(CONTROL_MAGIC, 0);
  out[4] = 1;
  out.set(b, 5);
  return out;
}

describe("control envelope (governed.md §3.1)", () => {
  it("round-trips every command, and the barrier without a key", () => {
    for (const c of commands) {
      const bytes = encodeEnvelope(env(c));
      expect([...bytes.subarray(0, 5)]).toEqual([0x48, 0x44, 0x4c, 0x43, 1]);
      const d = decodeEntry(bytes);
      expect(d.kind).toBe("control");
      if (d.kind !== "control") continue;
      expect(encodeEnvelope(d.envelope)).toEqual(bytes);
      expect(digestOf(d.envelope.cmd)).toBe(digestOf(c));
    }
    const barrier: ControlEnvelope = { v: 1, key: null, ackFloor: 0, proposer: ReplicaId("n3"), cmd: { op: "barrier" } };
    expect(decodeEntry(encodeEnvelope(barrier))).toEqual({ kind: "control", envelope: barrier });
  });

  it("writes canonical JSON: sorted keys, amounts as decimal strings, no whitespace", () => {
    const text = new TextDecoder().decode(encodeEnvelope(env(commands[0]!)).subarray(5));
    expect(text).toBe('{"ackFloor":3,"cmd":{"amount":"9223372036854775807","holder":"n1","op":"mint"},"key":{"client":"auto:n1:x","seq":7},"proposer":"n1","v":1}');
  });

  it("a release without a token encodes and digests exactly as before the token existed; with one, it is another act", () => {
    const bare = encodeEnvelope(env({ op: "claims.release", holder: "w1", key: "k" }));
    // the bytes the log on disk already holds for a token-less release
    expect(new TextDecoder().decode(bare.subarray(5))).toBe('{"ackFloor":3,"cmd":{"holder":"w1","key":"k","op":"claims.release"},"key":{"client":"auto:n1:x","seq":7},"proposer":"n1","v":1}');
    const fenced = encodeEnvelope(env({ op: "claims.release", holder: "w1", key: "k", token: 250 }));
    expect(new TextDecoder().decode(fenced.subarray(5))).toContain('"cmd":{"holder":"w1","key":"k","op":"claims.release","token":250}');
    const d = decodeEntry(fenced);
    expect(d.kind === "control" && d.envelope.cmd).toEqual({ op: "claims.release", holder: "w1", key: "k", token: 250 });
    // a retry under the same key with another token (or none) is another act: keyReuse, not the recorded outcome
    const digests = new Set([digestOf({ op: "claims.release", holder: "w1", key: "k" }), digestOf({ op: "claims.release", holder: "w1", key: "k", token: 250 }), digestOf({ op: "claims.release", holder: "w1", key: "k", token: 100 })]);
    expect(digests.size).toBe(3);
  });

  it("a release's token must be a safe integer ≥ 0; anything else is malformed, naming the field", () => {
    const good = new TextDecoder().decode(encodeEnvelope(env({ op: "claims.release", holder: "w1", key: "k", token: 250 })).subarray(5));
    for (const bad of ["-1", "1.5", '"250"', "null", "9007199254740992", "true", "[250]"]) {
      const d = decodeEntry(body(good.replace('"token":250', `"token":${bad}`)));
      expect(d.kind, bad).toBe("malformed");
      if (d.kind === "malformed") expect(d.why, bad).toMatch(/token/);
    }
    // renew carries no token: the field stays unknown there
    const renew = new TextDecoder().decode(encodeEnvelope(env({ op: "claims.renew", holder: "w1", key: "k" })).subarray(5));
    const d = decodeEntry(body(renew.replace('"op":"claims.renew"', '"op":"claims.renew","token":3')));
    expect(d.kind === "malformed" && d.why).toMatch(/unknown field "token"/);
  });

  it("digests the command only (16 bytes of SHA-256), so the key and ackFloor of a retry do not change it", () => {
    const a = digestOf(commands[0]!);
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(digestOf({ op: "mint", holder: ReplicaId("n1"), amount: 9_223_372_036_854_775_806n })).not.toBe(a);
    const x = decodeEntry(encodeEnvelope(env(commands[0]!, 1)));
    const y = decodeEntry(encodeEnvelope({ ...env(commands[0]!, 99), ackFloor: 50 }));
    expect(x.kind === "control" && y.kind === "control" && digestOf(x.envelope.cmd) === digestOf(y.envelope.cmd)).toBe(true);
  });

  it("a retire's digest leaves its witness out (it is the proposer's view, not the act) but not its edge", () => {
    const bare = digestOf({ op: "retire", edge: AttachmentId("e1") });
    expect(digestOf({ op: "retire", edge: AttachmentId("e1"), witness: "{\"any\":\"view\"}" })).toBe(bare);
    expect(digestOf({ op: "retire", edge: AttachmentId("e2") })).not.toBe(bare);
    // the witness still travels in the entry: only the digest ignores it
    const withWitness = encodeEnvelope(env({ op: "retire", edge: AttachmentId("e1"), witness: "w" }));
    expect(new TextDecoder().decode(withWitness)).toContain('"witness":"w"');
    // other commands keep every field in their digest
    expect(digestOf({ op: "close", edge: AttachmentId("e1") })).not.toBe(bare);
  });

  it("classifies bytes without the magic as foreign (a positive determination)", () => {
    expect(decodeEntry(new Uint8Array(0))).toEqual({ kind: "foreign" });
    expect(decodeEntry(enc.encode("HDL"))).toEqual({ kind: "foreign" });
    expect(decodeEntry(enc.encode('{"op":"mint"}'))).toEqual({ kind: "foreign" });
    expect(decodeEntry(enc.encode("hdlc\u0001{}"))).toEqual({ kind: "foreign" });
  });

  it("classifies tagged bytes that are not exactly one canonical envelope as malformed, naming why", () => {
    const good = new TextDecoder().decode(encodeEnvelope(env(commands[2]!)).subarray(5));
    const cases: [Uint8Array, RegExp][] = [
      [enc.encode("HDLC"), /version/],
      [Uint8Array.of(0x48, 0x44, 0x4c, 0x43, 3, 0x7b, 0x7d), /unknown envelope version 3/],
      [body("not json"), /not JSON/],
      [body(` ${good}`), /canonical/],
      [body(good.replace('"activate"', '"promote"')), /unknown op/],
      [body(good.replace('"v":1', '"v":2')), /version byte/],
      [body(good.replace('"proposer"', '"extra":1,"proposer"')), /unknown field/],
      [body(good.replace('{"client":"auto:n1:x","seq":7}', "null").replace('"ackFloor":3', '"ackFloor":0')), /needs a key/],
      [body(good.replace('"seq":7', '"seq":0')), /seq/],
      [body(good.replace('"edge":"e1"', '"edge":""')), /edge/],
      [body(new TextDecoder().decode(encodeEnvelope(env(commands[0]!)).subarray(5)).replace('"9223372036854775807"', '"9223372036854775808"')), /amount/],
      [body(new TextDecoder().decode(encodeEnvelope(env(commands[0]!)).subarray(5)).replace('"9223372036854775807"', '"0"')), /amount/],
      [body(new TextDecoder().decode(encodeEnvelope(env(commands[1]!)).subarray(5)).replace('"num":"3"', '"num":"6"').replace('"den":"2"', '"den":"4"')), /canonical/],
      [Uint8Array.of(0x48, 0x44, 0x4c, 0x43, 1, 0xff, 0xfe), /UTF-8/],
    ];
    for (const [bytes, why] of cases) {
      const d = decodeEntry(bytes);
      expect(d.kind, new TextDecoder().decode(bytes)).toBe("malformed");
      if (d.kind === "malformed") expect(d.why).toMatch(why);
    }
  });

  it("never throws on arbitrary bytes, with or without the magic", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (bytes, tag) => {
        const b = tag ? Uint8Array.from([...CONTROL_MAGIC, 1, ...bytes]) : bytes;
        const d = decodeEntry(b);
        expect(["control", "foreign", "malformed"]).toContain(d.kind);
      }),
      { numRuns: RUNS },
    );
  });

  it("writes exactly canonicalJson of the whole envelope, and digests the decoded command as a fresh copy of it", () => {
    // the reference: the envelope as one object through canonicalJson, and the digest as governed.md §3.1 defines it
    const reference = (e: ControlEnvelope) => canonicalJson({ v: e.v, key: e.key === null ? null : { client: e.key.client, seq: e.key.seq }, ackFloor: e.ackFloor, proposer: e.proposer, cmd: commandJson(e.cmd) });
    const digest = (c: ControlCommand) => createHash("sha256").update(canonicalJson(c.op === "retire" ? { op: c.op, edge: c.edge } : commandJson(c))).digest("hex").slice(0, 32);
    const text = fc.string({ maxLength: 10 });
    const id = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.isWellFormed());
    const take = fc.record(
      {
        holder: text,
        resources: fc.array(fc.record({ key: text, mode: fc.constantFrom("exclusive" as const, "shared" as const) }), { maxLength: 3 }),
        scope: text,
        ttlMs: fc.maxSafeInteger(),
        label: text,
      },
      { requiredKeys: ["holder", "resources"] },
    );
    const cmd: fc.Arbitrary<ControlCommand> = fc.oneof(
      fc.record({ op: fc.constant("mint" as const), holder: id.map(ReplicaId), amount: fc.bigInt({ min: 1n, max: (1n << 63n) - 1n }) }),
      fc.record({ op: fc.constantFrom("activate" as const, "close" as const), edge: id.map(AttachmentId) }),
      fc.record({ op: fc.constant("retire" as const), edge: id.map(AttachmentId), witness: text }, { requiredKeys: ["op", "edge"] }),
      fc.record({ op: fc.constantFrom("enroll" as const, "depart" as const), replica: id.map(ReplicaId) }),
      fc.record({ op: fc.constant("claims.take" as const), request: take }),
      fc.record({ op: fc.constant("claims.release" as const), holder: text, key: text, token: fc.maxSafeNat() }, { requiredKeys: ["op", "holder", "key"] }),
      fc.record({ op: fc.constant("claims.renew" as const), holder: text, key: text }),
      fc.record({ op: fc.constant("claims.releaseAll" as const), holder: text }),
      fc.record({ op: fc.constant("claims.releaseScope" as const), scope: text }),
      fc
        .tuple(id, id, id, fc.bigInt({ min: 1n, max: 1000n }), fc.bigInt({ min: 1n, max: 1000n }))
        .map(([i, p, c, n, d]) => ({ op: "prepare" as const, record: { id: AttachmentId(i), parent: GroupId(p), child: GroupId(c), weight: Weight.of(n, d) } })),
    );
    const envelope: fc.Arbitrary<ControlEnvelope> = fc.oneof(
      fc.record({ v: fc.constant(1 as const), key: fc.record({ client: id, seq: fc.integer({ min: 1, max: 2 ** 40 }) }), ackFloor: fc.nat(), proposer: id.map(ReplicaId), cmd }),
      fc.record({ v: fc.constant(1 as const), key: fc.constant(null), ackFloor: fc.constant(0), proposer: id.map(ReplicaId), cmd: fc.constant({ op: "barrier" as const }) }),
    );
    fc.assert(
      fc.property(envelope, (e) => {
        const bytes = encodeEnvelope(e);
        expect(new TextDecoder().decode(bytes.subarray(5))).toBe(reference(e));
        const d = decodeEntry(bytes);
        if (d.kind !== "control") return; // a request the decoder refuses (e.g. an ill-formed string) is covered above
        expect(digestOf(d.envelope.cmd)).toBe(digest(e.cmd));
        expect(digestOf(d.envelope.cmd)).toBe(digestOf(structuredClone(d.envelope.cmd)));
      }),
      { numRuns: RUNS },
    );
  });

  it("writes an untyped caller's odd envelope as canonicalJson would (an unknown op's cmd left out), and freezes what it decodes", () => {
    const odd = { v: 1, key: { client: "c", seq: 1 }, ackFloor: 0, proposer: "p", cmd: { op: "bogus" } } as unknown as ControlEnvelope;
    expect(new TextDecoder().decode(encodeEnvelope(odd).subarray(5))).toBe('{"ackFloor":0,"key":{"client":"c","seq":1},"proposer":"p","v":1}');
    expect(decodeEntry(encodeEnvelope(odd)).kind).toBe("malformed");
    const d = decodeEntry(encodeEnvelope(env(commands[8]!)));
    if (d.kind !== "control" || d.envelope.cmd.op !== "claims.take") throw new Error("expected a decoded take");
    const before = digestOf(d.envelope.cmd);
    // the decoder keeps the command's text for its digest: the command cannot change under it
    expect(Object.isFrozen(d.envelope.cmd) && Object.isFrozen(d.envelope.cmd.request) && Object.isFrozen(d.envelope.cmd.request.resources[0])).toBe(true);
    expect(() => ((d.envelope.cmd as { request: { holder: string } }).request.holder = "other")).toThrow(TypeError);
    expect(digestOf(d.envelope.cmd)).toBe(before);
  });

  it("round-trips generated envelopes exactly, and any single-byte change of the body is refused or decodes to another envelope", () => {
    const id = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.isWellFormed());
    const cmd: fc.Arbitrary<ControlCommand> = fc.oneof(
      fc.record({ op: fc.constant("mint" as const), holder: id.map(ReplicaId), amount: fc.bigInt({ min: 1n, max: (1n << 63n) - 1n }) }),
      fc.record({ op: fc.constant("activate" as const), edge: id.map(AttachmentId) }),
      fc.record({ op: fc.constant("enroll" as const), replica: id.map(ReplicaId) }),
      fc.record({ op: fc.constant("claims.release" as const), holder: fc.string(), key: fc.string() }),
      fc.record({ op: fc.constant("claims.release" as const), holder: fc.string(), key: fc.string(), token: fc.maxSafeNat() }),
      fc
        .tuple(id, id, id, fc.bigInt({ min: 1n, max: 1000n }), fc.bigInt({ min: 1n, max: 1000n }))
        .map(([i, p, c, n, d]) => ({ op: "prepare" as const, record: { id: AttachmentId(i), parent: GroupId(p), child: GroupId(c), weight: Weight.of(n, d) } })),
    );
    fc.assert(
      fc.property(cmd, id, fc.integer({ min: 1, max: 2 ** 40 }), fc.nat(), fc.nat(), (c, client, seq, floor, flip) => {
        const e: ControlEnvelope = { v: 1, key: { client, seq }, ackFloor: floor, proposer: ReplicaId("p"), cmd: c };
        const bytes = encodeEnvelope(e);
        const d = decodeEntry(bytes);
        expect(d.kind).toBe("control");
        if (d.kind === "control") expect(encodeEnvelope(d.envelope)).toEqual(bytes);
        const mutated = bytes.slice();
        const at = 5 + (flip % (bytes.length - 5));
        mutated[at] = mutated[at]! ^ 0x01;
        const m = decodeEntry(mutated);
        if (m.kind === "control") expect(encodeEnvelope(m.envelope)).toEqual(mutated);
        else expect(m.kind).toBe("malformed");
      }),
      { numRuns: RUNS },
    );
  });
});
