// Bad claims frames (channel 5) into a live node: each is dropped whole, counted under its node.md §4.3 reason,
// reported as a `frame-rejected` notice on channel "claims", and never thrown; the replicated slots do not change.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { heddleStatic, memoryStore, MemoryNetwork, seededRandom, type NodeEvent, type RejectReason } from "../src/index.ts";
import { encodeClaimsFrame, readClaimsFrame, VirtualTimers } from "../src/testing.ts";
import { FLAT } from "./node-sim.ts";

const enc = new TextEncoder();
const tagged = (body: Uint8Array): Uint8Array => {
  const out = new Uint8Array(body.length + 1);
  out[0] = 5;
  out.set(body, 1);
  return out;
};
const json = (o: unknown): Uint8Array => tagged(enc.encode(JSON.stringify(o)));
const slotFrame = (kind: "keeper" | "advisory", slot: string): Uint8Array => json({ v: 1, kind, slot });
const advisoryText = (peer: string, rows: unknown[]): string => JSON.stringify({ format: "heddle-advisory/1", peer, version: "5", claims: rows });
const keeperText = (peer: string, rows: unknown[]): string => JSON.stringify({ format: "heddle-keeper/1", peer, version: "5", claims: rows });

function cases(): fc.Arbitrary<{ frame: Uint8Array; reason: RejectReason | null }> {
  const rows = (n: number) => Array.from({ length: n }, (_, i) => [`item-${String(i).padStart(3, "0")}`, 1, 2]);
  return fc.oneof(
    fc.uint8Array({ minLength: 5_000, maxLength: 6_000 }).map((b) => ({ frame: tagged(b), reason: "oversize" as const })),
    fc.uint8Array({ maxLength: 40 }).filter((b) => b[0] !== 0x7b).map((b) => ({ frame: tagged(b), reason: "decode" as const })),
    fc.constant({ frame: tagged(enc.encode("[1,2]")), reason: "decode" as const }),
    fc.constantFrom(0, 2, "1").map((v) => ({ frame: json({ v, kind: "keeper", slot: keeperText("mallory", []) }), reason: "bad-version" as const })),
    fc.constantFrom(
      { kind: "keeper" },
      { v: 1, slot: "x" },
      { v: 1, kind: "granted", slot: advisoryText("mallory", []) },
      { v: 1, kind: "advisory", slot: 7 },
      { v: 1, kind: "advisory", slot: "" },
      { v: 1, kind: "advisory", slot: advisoryText("mallory", []), extra: true },
    ).map((o) => ({ frame: json(o), reason: "schema" as const })),
    fc.constantFrom(
      "not json",
      advisoryText("mallory", [["b", 1, 2], ["a", 1, 2]]), // items out of order
      advisoryText("mallory", [["a", 5, 5]]), // expiry not after the claim
      advisoryText("mallory", [["a", -1, 5]]),
      keeperText("mallory", [["p", 10, 5, 1, null, null, null]]), // renewed before claimed
      keeperText("mallory", [["p", 1, 2, 3]]),
      JSON.stringify({ format: "heddle-advisory/9", peer: "mallory", version: "5", claims: [] }),
      JSON.stringify({ format: "heddle-advisory/1", peer: "mallory", version: "05", claims: [] }),
    ).map((text) => ({ frame: slotFrame(text.includes("keeper") ? "keeper" : "advisory", text), reason: "bad-value" as const })),
    // a keeper slot sent on the advisory kind is refused by the advisory decoder
    fc.constant({ frame: slotFrame("advisory", keeperText("mallory", [])), reason: "bad-value" as const }),
    fc.integer({ min: 9, max: 40 }).map((n) => ({ frame: slotFrame("advisory", advisoryText("mallory", rows(n))), reason: "too-many-entries" as const })),
    fc.constantFrom("honest", "victim").map((peer) => ({ frame: slotFrame("advisory", advisoryText(peer, [["a", 1, 9_999_999]])), reason: "not-author" as const })),
    fc.constant({ frame: slotFrame("keeper", keeperText("honest", [["invoices", 1, 1, 1, 1, null, null]])), reason: "not-author" as const }),
    // anything at all: still one rejection, of some reason, and no throw
    fc.uint8Array({ maxLength: 200 }).map((b) => ({ frame: tagged(b), reason: null })),
  );
}

describe("bad claims frames into a live node (node.md §4.3 on channel 5)", () => {
  it("are rejected whole, counted by reason, noticed on channel claims, and change nothing", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(31) });
    const supply = new Map([[ReplicaId("victim"), 100n], [ReplicaId("honest"), 100n]]);
    const config = {
      policy: { quantum: 10n },
      maxHoldingsPerPeer: 1_000n,
      timers,
      maxFrameBytes: 4096,
      claims: { keeperRules: { invoices: "stays-put" as const }, maxClaimsPerSlot: 8, antiEntropyMs: 100, tickMs: 50 },
    };
    const start = (id: string, seed: number) =>
      heddleStatic({ seam: net.join(id), self: ReplicaId(id), root: GroupId("root"), supply, topology: FLAT, config: { ...config, random: seededRandom(seed), store: memoryStore() } });
    const victim = start("victim", 32);
    const honest = start("honest", 33);
    const mallory = net.join("mallory");
    const events: NodeEvent[] = [];
    victim.events.subscribe((e) => events.push(e));
    timers.advanceBy(10);
    honest.gossipClaims.keeper("invoices", { take: true });
    honest.gossipClaims.advisory("a", 60_000);
    timers.advanceBy(20);
    expect(victim.gossipClaims.holder("a").holder).toBe("honest");
    const seen = new Set<RejectReason>();
    let total = 0;
    fc.assert(
      fc.property(cases(), (c) => {
        const counts = victim.metrics().framesRejected;
        expect(mallory.send("victim", c.frame)).toBe("queued");
        expect(() => timers.advanceBy(1)).not.toThrow();
        const after = victim.metrics().framesRejected;
        const grew = (Object.keys(after) as RejectReason[]).filter((r) => after[r] !== counts[r]);
        expect(grew).toHaveLength(1);
        expect(after[grew[0]!]).toBe(counts[grew[0]!] + 1);
        if (c.reason !== null) expect(grew[0]).toBe(c.reason);
        // honest renewals may land meanwhile; nothing of mallory's does
        expect(victim.gossipClaims.slots().advisory.has("mallory")).toBe(false);
        expect(victim.gossipClaims.slots().keeper.has("mallory")).toBe(false);
        seen.add(grew[0]!);
        total++;
      }),
      { numRuns: Number(process.env.HEDDLE_RUNS ?? 500), seed: Number(process.env.HEDDLE_SEED ?? 1605) },
    );
    expect([...seen].sort()).toEqual(["bad-value", "bad-version", "decode", "not-author", "oversize", "schema", "too-many-entries"]);
    const notices = events.filter((e) => e.kind === "frame-rejected");
    expect(notices.length).toBeGreaterThan(0);
    expect(notices.length).toBeLessThan(total); // rate-limited per (peer, reason)
    expect(notices.every((e) => e.kind === "frame-rejected" && e.channel === "claims" && e.peer === "mallory")).toBe(true);
    // the honest peer's claims still arrive and win
    expect(victim.gossipClaims.holder("a").holder).toBe("honest");
    expect(victim.gossipClaims.look("invoices").keeper).toBe("honest");
    // and a well-formed slot from mallory itself is accepted (it is only bad frames that are refused)
    const good = encodeClaimsFrame("advisory", { peer: "mallory", version: 1n, claims: [{ item: "z", peer: "mallory", claimedAt: 0, expiresAt: 9_999_999 }] });
    mallory.send("victim", tagged(good));
    timers.advanceBy(1);
    expect(victim.gossipClaims.holder("z").holder).toBe("mallory");
    void victim.shutdown();
    void honest.shutdown();
  });
});

describe("the claims frame codec", () => {
  const id = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() === s && s.length > 0 && s.isWellFormed());
  const t = fc.integer({ min: 0, max: 2 ** 40 });
  it("round-trips every well-formed keeper and advisory slot, and refuses it from anyone but its author", () => {
    fc.assert(
      fc.property(
        id,
        fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
        fc.uniqueArray(fc.tuple(id, t, fc.integer({ min: 1, max: 10_000 })), { selector: (x) => x[0], maxLength: 8 }),
        fc.uniqueArray(fc.tuple(id, t, fc.integer({ min: 0, max: 10_000 }), t, fc.option(t), fc.option(fc.integer({ min: 0, max: 10_000 })), fc.option(t)), { selector: (x) => x[0], maxLength: 8 }),
        (peer, version, items, parts) => {
          const byId = <T extends readonly unknown[]>(xs: T[]) => [...xs].sort((x, y) => ((x[0] as string) < (y[0] as string) ? -1 : 1));
          const advisory = { peer, version, claims: byId(items).map(([item, claimedAt, ttl]) => ({ item, peer, claimedAt, expiresAt: claimedAt + ttl })) };
          const keeper = {
            peer,
            version,
            claims: byId(parts).map(([part, claimedAt, renewGap, activeAt, takenAt, closeGap, wroteUpTo]) => ({
              part, peer, claimedAt, renewedAt: claimedAt + renewGap, activeAt,
              ...(takenAt !== null ? { takenAt } : {}),
              ...(closeGap !== null ? { closedAt: claimedAt + closeGap } : {}),
              ...(wroteUpTo !== null ? { wroteUpTo } : {}),
            })),
          };
          const a = readClaimsFrame(encodeClaimsFrame("advisory", advisory), peer, 4096);
          expect(a).toEqual({ ok: true, message: { kind: "advisory", slot: advisory } });
          const k = readClaimsFrame(encodeClaimsFrame("keeper", keeper), peer, 4096);
          expect(k).toEqual({ ok: true, message: { kind: "keeper", slot: keeper } });
          expect(readClaimsFrame(encodeClaimsFrame("keeper", keeper), `${peer}x`, 4096)).toEqual({ ok: false, reason: "not-author" });
          if (items.length > 1) expect(readClaimsFrame(encodeClaimsFrame("advisory", advisory), peer, items.length - 1)).toEqual({ ok: false, reason: "too-many-entries" });
        },
      ),
      { numRuns: Number(process.env.HEDDLE_RUNS ?? 500) },
    );
  });
});
