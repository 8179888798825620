import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ByteWriter, EntitlementLedger, GroupId, ReplicaId, fnv1a64 } from "@heddle/ledger";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { heddleStatic, memoryStore, type NodeEvent, type RejectReason } from "../src/index.ts";
import { VirtualTimers, canonicalBytes, encodeLedgerFrame, type LedgerMessage } from "../src/testing.ts";
import { FLAT } from "./node-sim.ts";

const enc = new TextEncoder();
const withTag = (tag: number, body: Uint8Array) => {
  const out = new Uint8Array(body.length + 1);
  out[0] = tag;
  out.set(body, 1);
  return out;
};

/** A binary ledger value written by hand (format 1, no strings), to smuggle in what the encoder never writes. */
function rawLedger(write: (w: ByteWriter) => void): EntitlementLedger {
  const w = new ByteWriter();
  write(w);
  const bytes = w.finish();
  return { encodeBinary: () => bytes } as unknown as EntitlementLedger;
}

interface Case {
  frame: Uint8Array;
  /** `null`: some reason, exactly one count. */
  reason: RejectReason | null;
}

/** Bad-input generators with the reason each must be counted under (node.md §4.3, §16 A8/A20). */
function cases(genesis: string): fc.Arbitrary<Case> {
  const ledgerFrame = (m: LedgerMessage, g = genesis) => withTag(1, encodeLedgerFrame(m, "mallory", g));
  const good = EntitlementLedger.decode('{"format":"heddle-ledger/1","issued":[["e1",[["mallory","5"]]]]}');
  const delta = (o: Partial<Record<string, unknown>> = {}) => ({ kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: good, ack: null, ...o }) as LedgerMessage;
  const validDelta = ledgerFrame(delta());
  const header = 1 + 2 + 8 + 4 + 4 + 1; // tag, version, kind, genesis, author, four one-byte varints, ack flag
  const patch = (frame: Uint8Array, at: number, v: number) => {
    const c = frame.slice();
    c[at] = v;
    return c;
  };
  return fc.oneof(
    fc.uint8Array({ maxLength: 300 }).chain((b) => fc.constantFrom(1, 2, 3).map((t) => ({ frame: withTag(t, b), reason: null }))),
    fc.tuple(fc.integer({ min: 0, max: 255 }).filter((t) => t < 1 || (t > 3 && t !== 5)), fc.uint8Array({ maxLength: 50 })).map(([t, b]) => ({ frame: withTag(t, b), reason: "unknown-channel" as const })),
    fc.constant({ frame: new Uint8Array(0), reason: "unknown-channel" as const }),
    fc.integer({ min: 1, max: header - 1 }).map((n) => ({ frame: validDelta.subarray(0, n), reason: "decode" as const })),
    fc.integer({ min: header, max: validDelta.length - 1 }).map((n) => ({ frame: validDelta.subarray(0, n), reason: "bad-value" as const })),
    fc.integer({ min: 4097, max: 6000 }).map((n) => ({ frame: withTag(1, new Uint8Array(n).fill(2)), reason: "oversize" as const })),
    fc.constantFrom(0, 1, 3, 0x7b).map((v) => ({ frame: patch(validDelta, 1, v), reason: "bad-version" as const })),
    fc.constantFrom(0, 7, 255).map((k) => ({ frame: patch(validDelta, 2, k), reason: "schema" as const })),
    fc.constantFrom<Partial<Record<string, unknown>>>({ seq: 0 }, { parts: 0 }, { part: 3 }).map((o) => ({ frame: ledgerFrame(delta(o)), reason: "schema" as const })),
    fc.constant({ frame: patch(validDelta, header - 1, 3), reason: "schema" as const }), // ack flag 3
    fc.constant({ frame: ledgerFrame({ kind: "resend", inc: 1, from: 5, to: 2 }), reason: "schema" as const }),
    // an id longer than 256 code units anywhere in the value (node.md §4.3), in a delta or a state part
    fc.tuple(fc.integer({ min: 257, max: 3_000 }), fc.constantFrom("issued", "records"), fc.boolean()).map(([n, where, asState]) => {
      const long = "e".repeat(n);
      const value = EntitlementLedger.decode(
        where === "issued"
          ? JSON.stringify({ format: "heddle-ledger/1", issued: [[long, [["mallory", "5"]]]] })
          : JSON.stringify({ format: "heddle-ledger/1", records: [["e1", [["root", long, "1", "1"]]]] }),
      );
      const m = asState ? ({ kind: "state", inc: 1, upThrough: 0, transfer: 1, part: 0, parts: 1, value } as LedgerMessage) : delta({ value });
      return { frame: ledgerFrame(m), reason: "schema" as const };
    }),
    fc.constant({ frame: withTag(1, new Uint8Array([...encodeLedgerFrame({ kind: "ack", inc: 1, seq: 1, based: false }, "mallory", genesis), 0])), reason: "schema" as const }),
    fc.constant({ frame: patch(ledgerFrame({ kind: "ack", inc: 1, seq: 1, based: false }), -1 + ledgerFrame({ kind: "ack", inc: 1, seq: 1, based: false }).length, 2), reason: "schema" as const }),
    fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }).map((n) => n.toString(16).padStart(16, "0")).filter((h) => h !== genesis).map((h) => ({ frame: ledgerFrame(delta(), h), reason: "genesis-mismatch" as const })),
    fc.constantFrom("honest", "victim", "peer-x").map((s) => ({ frame: withTag(1, encodeLedgerFrame(delta(), s, genesis)), reason: "not-author" as const })),
    fc.constantFrom(
      // a gauge with a zero denominator: mask bit 8, one gauge, edge string index 0 ("mallory"), floor 1/0
      rawLedger((w) => w.u8(1).uint(0).uint(1 << 8).uint(1).uint(0).zbig(1n).ubig(0n).ubig(0n)),
      // a record with weight 0/1
      rawLedger((w) => w.u8(1).uint(2).uint(3).uint(4).bytes(enc.encode("e9ab")).uint(1).bytes(enc.encode("a")).uint(1).bytes(enc.encode("b")).uint(1).uint(1).uint(1).uint(2).uint(0).ubig(1n)),
      // an unknown binary format
      rawLedger((w) => w.u8(2).uint(0).uint(0)),
      // a counter value above 2^63 − 1
      rawLedger((w) => w.u8(1).uint(1).uint(2).bytes(enc.encode("e1")).uint(1 << 2).uint(1).uint(1).uint(1).uint(0).ubig(1n << 63n)),
      // a string index out of range
      rawLedger((w) => w.u8(1).uint(0).uint(1 << 7).uint(1).uint(5).u8(1)),
    ).map((value) => ({ frame: ledgerFrame(delta({ value })), reason: "bad-value" as const })),
    fc.integer({ min: 9, max: 40 }).map((n) => ({
      frame: withTag(2, canonicalBytes({ v: 1, kind: "board", replica: "mallory", clock: 5n, entries: Array.from({ length: n }, (_, i) => [`e${String(i).padStart(3, "0")}`, 1n, 1n]) })),
      reason: "too-many-entries" as const,
    })),
    fc.constant({ frame: withTag(2, canonicalBytes({ v: 1, kind: "board", replica: "honest", clock: 5n, entries: [["e1", 10n, 10n]] })), reason: "not-author" as const }),
    fc.constantFrom("-1", "01", "9223372036854775808", "x").map((amount) => ({
      frame: withTag(2, enc.encode(JSON.stringify({ v: 1, kind: "board", replica: "mallory", clock: "5", entries: [["e1", amount, "1"]] }))),
      reason: "schema" as const,
    })),
    fc.constant({ frame: withTag(2, canonicalBytes({ v: 1, kind: "board", replica: "mallory", clock: 5n, entries: [["e2", 1n, 1n], ["e1", 1n, 1n]] })), reason: "schema" as const }),
    fc.constant({ frame: withTag(3, canonicalBytes({ v: 1, kind: "ping", nonce: 1 })), reason: "schema" as const }),
    fc.constant({ frame: withTag(3, canonicalBytes({ v: 9, kind: "ping" })), reason: "bad-version" as const }),
  );
}

describe("bad network input into a live node (node.md §4.3, §16 A8, A20)", () => {
  it("nothing throws, nothing is joined, every frame is counted under its reason, notices are rate-limited", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(11) });
    const supply = new Map([[ReplicaId("victim"), 100n], [ReplicaId("honest"), 100n]]);
    const config = { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers, maxFrameBytes: 4096, maxDemandEntries: 8, antiEntropyIntervalMs: 100 };
    const start = (id: string, seed: number) =>
      heddleStatic({ seam: net.join(id), self: ReplicaId(id), root: GroupId("root"), supply, topology: FLAT, config: { ...config, random: seededRandom(seed), store: memoryStore() } });
    const victim = start("victim", 12);
    const honest = start("honest", 13);
    const mallory = net.join("mallory");
    const events: NodeEvent[] = [];
    victim.events.subscribe((e) => events.push(e));
    timers.advanceBy(50);
    honest.advertise("e1" as never, { targetOutstanding: 7n, maximumUsefulGrant: 3n });
    timers.advanceBy(50);
    const before = victim.ledger.get().encode();
    const demandBefore = victim.demand("e1" as never);
    expect(demandBefore).toEqual({ targetOutstanding: 7n, maximumUsefulGrant: 3n });
    const g = victim.genesisDigest;
    expect(g).toBe(fnv1a64(victim.ledger.get().encode()));
    let total = 0;
    const seen = new Set<RejectReason>();
    fc.assert(
      fc.property(cases(g), (c) => {
        const counts = victim.metrics().framesRejected;
        expect(mallory.send("victim", c.frame)).toBe("queued");
        expect(() => timers.advanceBy(1)).not.toThrow();
        const after = victim.metrics().framesRejected;
        const grew = (Object.keys(after) as RejectReason[]).filter((r) => after[r] !== counts[r]);
        expect(grew.length).toBe(1);
        expect(after[grew[0]!]).toBe(counts[grew[0]!] + 1);
        if (c.reason !== null) expect(grew[0]).toBe(c.reason);
        seen.add(grew[0]!);
        total++;
        expect(victim.ledger.get().encode()).toBe(before);
        expect(victim.demand("e1" as never)).toEqual(demandBefore);
        expect(victim.demand("e2" as never)).toEqual({ targetOutstanding: 0n, maximumUsefulGrant: 0n });
      }),
      { numRuns: Number(process.env.HEDDLE_BAD_INPUT_RUNS ?? 2000), seed: Number(process.env.HEDDLE_SEED ?? 4242) },
    );
    const sum = Object.values(victim.metrics().framesRejected).reduce((a, b) => a + b, 0);
    expect(sum).toBe(total);
    // one notice per (peer, reason) within the interval (the whole run is far shorter than 60 s)
    const notices = events.filter((e) => e.kind === "frame-rejected");
    expect(notices.length).toBe(seen.size);
    expect(new Set(notices.map((e) => (e as { reason: string }).reason)).size).toBe(seen.size);
    // the victim still works: an honest change replicates
    honest.advertise("e1" as never, { targetOutstanding: 1_000n, maximumUsefulGrant: 1_000n });
    expect(honest.schedule(GroupId("root")).grants.length).toBeGreaterThan(0);
    timers.advanceBy(300);
    expect(victim.ledger.get().equals(honest.ledger.get())).toBe(true);
    expect(victim.ledger.get().equals(EntitlementLedger.decode(before))).toBe(false);
  });
});
