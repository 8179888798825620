import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, encodeLedgerFrame, readLedgerFrame, WIRE_ENVELOPE_BYTES, type LedgerMessage } from "../src/testing.ts";

describe("canonical JSON (demand and liveness frames, node.md §4.1)", () => {
  it("sorts keys by code unit, drops whitespace, writes bigint as decimal strings", () => {
    expect(canonicalJson({ b: 1, a: [2n, "x"], Z: { y: null, x: true } })).toBe('{"Z":{"x":true,"y":null},"a":["2","x"],"b":1}');
    expect(() => canonicalJson({ a: 1.5 })).toThrow(RangeError);
  });
});

const G = "0123456789abcdef";
/** A libp2p-style peer id: 52 characters, as over a real network. */
const PEER = "12D3KooWJWEKvSFbben74C7H4YtKjhPMTDxd7gP7zxWSUEeF27st";

/** A ledger with `edges` leaf edges under the root, issuance and gauges on each. */
function wideLedger(edges: number, who = "alice"): EntitlementLedger {
  let l = EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId(who), 1_000_000n], [ReplicaId("bob"), 5n]]), "n");
  for (let i = 0; i < edges; i++) {
    const id = AttachmentId(`edge-${String(i).padStart(4, "0")}`);
    const p = l.prepare({ id, parent: GroupId("root"), child: GroupId(`g${i}`), weight: Weight.of(BigInt(1 + (i % 4))) });
    if (p.ok) l = l.join(p.patch);
    const a = l.activate(id);
    if (a.ok) l = l.join(a.patch);
    const d = l.delegate(ReplicaId(who), id, BigInt(10 + i));
    if (d.ok) l = l.join(d.patch);
  }
  return l;
}

const nat = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const pos = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
/** Values as frames carry them: the genesis (here the mints, whose ids embed the holder) left out. */
const value = fc.integer({ min: 0, max: 6 }).map((n) => wideLedger(n, PEER).beyond(wideLedger(0, PEER)));
const message: fc.Arbitrary<LedgerMessage> = fc.oneof(
  fc.record({ inc: nat, seq: pos, parts: fc.integer({ min: 1, max: 9 }), value, ack: fc.option(fc.record({ inc: nat, seq: nat, based: fc.boolean() })) }).chain((m) =>
    fc.integer({ min: 0, max: m.parts - 1 }).map((part): LedgerMessage => ({ kind: "delta", part, ...m })),
  ),
  fc.record({ inc: nat, seq: nat, based: fc.boolean() }).map((m): LedgerMessage => ({ kind: "ack", ...m })),
  fc.tuple(nat, pos, pos).map(([inc, a, b]): LedgerMessage => ({ kind: "resend", inc, from: Math.min(a, b), to: Math.max(a, b) })),
  fc.record({ inc: nat, digest: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }).map((x) => x.toString(16).padStart(16, "0")), upThrough: nat }).map((m): LedgerMessage => ({ kind: "digest", ...m })),
  fc.constant<LedgerMessage>({ kind: "state-request" }),
  fc.record({ inc: nat, upThrough: nat, transfer: nat, parts: fc.integer({ min: 1, max: 9 }), value }).chain((m) =>
    fc.integer({ min: 0, max: m.parts - 1 }).map((part): LedgerMessage => ({ kind: "state", part, ...m })),
  ),
);

function same(a: LedgerMessage, b: LedgerMessage): void {
  const strip = (m: LedgerMessage) => ("value" in m ? { ...m, value: m.value.encode() } : m);
  expect(strip(b)).toEqual(strip(a));
}

describe("ledger-channel binary frames (node.md §4.1 ⟨1.1⟩)", () => {
  it("every message round-trips, and the sender's id is never written", () => {
    fc.assert(
      fc.property(message, (m) => {
        const bytes = encodeLedgerFrame(m, PEER, G);
        const r = readLedgerFrame(bytes, PEER, G);
        expect(r.ok).toBe(true);
        if (r.ok) same(m, r.message);
        expect(Buffer.from(bytes).includes(Buffer.from(PEER))).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it("classifies bad frames: version, truncation, schema, genesis, value — and never throws", () => {
    const delta: LedgerMessage = { kind: "delta", inc: 3, seq: 7, part: 0, parts: 1, value: wideLedger(2, PEER), ack: null };
    const ok = encodeLedgerFrame(delta, PEER, G);
    const read = (b: Uint8Array) => {
      const r = readLedgerFrame(b, PEER, G);
      return r.ok ? "ok" : r.reason;
    };
    expect(read(ok)).toBe("ok");
    expect(read(new Uint8Array(0))).toBe("decode");
    expect(read(new TextEncoder().encode('{"v":1,"kind":"delta"}'))).toBe("bad-version");
    expect(read(Uint8Array.of(1, ...ok.subarray(1)))).toBe("bad-version");
    expect(read(ok.subarray(0, 6))).toBe("decode");
    expect(read(Uint8Array.of(2, 9, ...ok.subarray(2)))).toBe("schema"); // unknown kind
    expect(readLedgerFrame(ok, PEER, "fedcba9876543210")).toEqual({ ok: false, reason: "genesis-mismatch" });
    expect(readLedgerFrame(ok, "another-peer", G)).toEqual({ ok: false, reason: "not-author" }); // a replay by someone else
    expect(read(ok.subarray(0, ok.length - 3))).toBe("bad-value");
    expect(read(encodeLedgerFrame({ ...delta, seq: 0 } as LedgerMessage, PEER, G))).toBe("schema");
    expect(read(encodeLedgerFrame({ ...delta, part: 1 } as LedgerMessage, PEER, G))).toBe("schema");
    const ack = encodeLedgerFrame({ kind: "ack", inc: 1, seq: 2, based: true }, PEER, G);
    expect(read(Uint8Array.of(...ack, 0))).toBe("schema"); // trailing byte
    expect(read(Uint8Array.of(...ack.subarray(0, ack.length - 1), 2))).toBe("schema"); // based ∉ {0, 1}
    fc.assert(
      fc.property(message, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 3 }), (m, flips) => {
        const b = encodeLedgerFrame(m, PEER, G);
        for (const [at, v] of flips) b[at % b.length] = v;
        expect(() => readLedgerFrame(b, PEER, G)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it("a delegate's delta over libp2p-sized ids stays small (the lean wire's reason to exist)", () => {
    const base = wideLedger(3, PEER);
    const d = base.delegate(ReplicaId(PEER), AttachmentId("edge-0001"), 7n);
    if (!d.ok) throw new Error(d.refusal.kind);
    const patch = d.patch.beyond(wideLedger(0, PEER)); // the genesis mint the witness republishes is left out
    const bytes = encodeLedgerFrame({ kind: "delta", inc: 1, seq: 12, part: 0, parts: 1, value: patch, ack: null }, PEER, G);
    expect(bytes.length).toBeLessThan(84);
    expect(new TextEncoder().encode(d.patch.encode()).length).toBeGreaterThan(2 * bytes.length);
    expect(WIRE_ENVELOPE_BYTES).toBeLessThan(100);
  });
});
