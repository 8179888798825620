import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EntitlementLedger, GroupId, ReplicaId } from "@heddle/ledger";
import { HeddlePeer, MemoryNetwork, VirtualTimers, canonicalBytes, encodeLedgerMessage, fnv1a64, seededRandom, type PeerEvent, type RejectReason } from "../src/index.ts";
import { simGenesis } from "./replication-sim.ts";

const enc = new TextEncoder();
const withTag = (tag: number, body: Uint8Array) => {
  const out = new Uint8Array(body.length + 1);
  out[0] = tag;
  out.set(body, 1);
  return out;
};

interface Case {
  frame: Uint8Array;
  /** `null`: some reason, exactly one count. */
  reason: RejectReason | null;
}

/** Bad-input generators with the reason each must be counted under (node.md §4.3, §16 A8/A20). */
function cases(genesis: string): fc.Arbitrary<Case> {
  const delta = (o: Record<string, unknown> = {}) => ({
    v: 1, kind: "delta", genesis, sender: "mallory", inc: 0, seq: 1, part: 0, parts: 1,
    value: '{"format":"heddle-ledger/1","issued":[["e1",[["mallory","5"]]]]}', ...o,
  });
  const json = (o: unknown) => withTag(1, enc.encode(JSON.stringify(o)));
  const validDeltaBytes = encodeLedgerMessage({ kind: "delta", genesis, sender: "mallory", inc: 0, seq: 1, part: 0, parts: 1, value: '{"format":"heddle-ledger/1"}' });
  return fc.oneof(
    fc.uint8Array({ maxLength: 300 }).chain((b) => fc.constantFrom(1, 2, 3).map((t) => ({ frame: withTag(t, b), reason: null }))),
    fc.tuple(fc.integer({ min: 0, max: 255 }).filter((t) => t < 1 || t > 3), fc.uint8Array({ maxLength: 50 })).map(([t, b]) => ({ frame: withTag(t, b), reason: "unknown-channel" as const })),
    fc.constant({ frame: new Uint8Array(0), reason: "unknown-channel" as const }),
    fc.integer({ min: 1, max: validDeltaBytes.length - 1 }).map((n) => ({ frame: withTag(1, validDeltaBytes.subarray(0, n)), reason: "decode" as const })),
    fc.integer({ min: 4097, max: 6000 }).map((n) => ({ frame: withTag(1, new Uint8Array(n).fill(0x20)), reason: "oversize" as const })),
    fc.constantFrom(0, 2, "1", null, 1.5).map((v) => ({ frame: json(delta({ v })), reason: "bad-version" as const })),
    fc.constantFrom<Record<string, unknown>>(
      { extra: 1 }, { seq: -1 }, { seq: "1" }, { seq: 0 }, { parts: 0 }, { part: 3 }, { sender: "" }, { inc: 2 ** 53 }, { value: 7 }, { kind: "snapshot" }, { genesis: "XYZ" },
    ).map((o) => ({ frame: json(delta(o)), reason: "schema" as const })),
    fc.constant({ frame: json(Object.fromEntries(Object.entries(delta()).filter(([k]) => k !== "seq"))), reason: "schema" as const }),
    fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }).map((n) => n.toString(16).padStart(16, "0")).filter((h) => h !== genesis).map((h) => ({ frame: json(delta({ genesis: h })), reason: "genesis-mismatch" as const })),
    fc.constantFrom("honest", "victim", "peer-x").map((s) => ({ frame: json(delta({ sender: s })), reason: "not-author" as const })),
    fc.constantFrom(
      '{"format":"heddle-ledger/1","gauges":[["e1",["1","0","0"]]]}',
      '{"format":"heddle-ledger/1","records":[["e9",[["a","b","0","1"]]]]}',
      '{"format":"heddle-ledger/2"}',
      "not a ledger",
      '{"format":"heddle-ledger/1","issued":[["e1",[["mallory","-5"]]]]}',
    ).map((value) => ({ frame: json(delta({ value })), reason: "bad-value" as const })),
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

describe("bad network input into a live peer (node.md §4.3, §16 A8, A20)", () => {
  it("nothing throws, nothing is joined, every frame is counted under its reason, notices are rate-limited", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(11) });
    const genesis = simGenesis(["victim", "honest"]);
    const config = { timers, random: seededRandom(12), maxFrameBytes: 4096, maxDemandEntries: 8, antiEntropyIntervalMs: 100 };
    const victim = new HeddlePeer({ seam: net.join("victim"), genesis, epoch: 0, config });
    const honest = new HeddlePeer({ seam: net.join("honest"), genesis, epoch: 0, config: { ...config, random: seededRandom(13) } });
    const mallory = net.join("mallory");
    const events: PeerEvent[] = [];
    victim.events.subscribe((e) => events.push(e));
    timers.advanceBy(50);
    honest.advertise("e1", { targetOutstanding: 7n, maximumUsefulGrant: 3n });
    timers.advanceBy(50);
    const before = victim.ledger.get().encode();
    const demandBefore = victim.demand("e1");
    expect(demandBefore).toEqual({ targetOutstanding: 7n, maximumUsefulGrant: 3n });
    const g = fnv1a64(genesis.encode());
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
        expect(victim.demand("e1")).toEqual(demandBefore);
        expect(victim.demand("e2")).toEqual({ targetOutstanding: 0n, maximumUsefulGrant: 0n });
      }),
      { numRuns: Number(process.env.HEDDLE_BAD_INPUT_RUNS ?? 2000), seed: Number(process.env.HEDDLE_SEED ?? 4242) },
    );
    const sum = Object.values(victim.metrics().framesRejected).reduce((a, b) => a + b, 0);
    expect(sum).toBe(total);
    // one notice per (peer, reason) within the interval (the whole run is far shorter than 60 s)
    const notices = events.filter((e) => e.kind === "frame-rejected");
    expect(notices.length).toBe(seen.size);
    expect(new Set(notices.map((e) => (e as { reason: string }).reason)).size).toBe(seen.size);
    // the victim still works: an honest patch replicates
    const l = honest.ledger.get();
    const d = l.delegate(ReplicaId("honest"), l.childrenOf(GroupId("root"))[0]!.attachment, 5n);
    if (!d.ok) throw new Error(d.refusal.kind);
    honest.publish(d.patch);
    timers.advanceBy(300);
    expect(victim.ledger.get().equals(honest.ledger.get())).toBe(true);
    expect(victim.ledger.get().equals(EntitlementLedger.decode(before))).toBe(false);
  });
});
