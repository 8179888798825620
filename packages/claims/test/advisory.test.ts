// Advisory mode (claims.md §4): earliest claimant wins in one merge, expiry returns
// items, duplicates are visible, and `next` spreads a fleet without talking.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  advisoryHolder,
  advisoryHolders,
  claimAdvisory,
  ClaimsDecodeError,
  decodeAdvisorySlot,
  dropAdvisory,
  duplicates,
  encodeAdvisorySlot,
  fnv1a32,
  joinAdvisorySlots,
  next,
  nextUnclaimed,
  putAdvisorySlot,
  stableHash,
} from "../src/index.ts";
import type { AdvisoryClaim, AdvisorySlot, AdvisorySlots } from "../src/index.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 300);
const PEERS = ["agent-1", "agent-2", "agent-3", "agent-4"];
const ITEMS = ["problem/7", "problem/8", "problem/9"];

function slots(...list: AdvisorySlot[]): AdvisorySlots {
  let m: AdvisorySlots = new Map();
  for (const s of list) m = putAdvisorySlot(m, s).slots;
  return m;
}

describe("advisory claims", () => {
  it("a contested item goes to the earliest claimant; the others see they lost", () => {
    const a = claimAdvisory(undefined, "agent-1", 0, "problem/7", 200, 10_000);
    const b = claimAdvisory(undefined, "agent-2", 0, "problem/7", 100, 10_000);
    const c = claimAdvisory(undefined, "agent-3", 0, "problem/7", 100, 10_000);
    const merged = slots(a, b, c);
    expect(advisoryHolder(merged, "problem/7", 300)?.peer).toBe("agent-2"); // (100, agent-2) < (100, agent-3) < (200, agent-1)
    expect(duplicates(merged, 300).map((d) => [d.item, d.winner.peer, d.loser.peer])).toEqual([
      ["problem/7", "agent-2", "agent-3"],
      ["problem/7", "agent-2", "agent-1"],
    ]);
  });

  it("claims expire, so a dead peer's items return to the pool", () => {
    const dead = claimAdvisory(undefined, "agent-1", 0, "problem/7", 0, 1000);
    const board = slots(dead);
    expect(advisoryHolder(board, "problem/7", 999)?.peer).toBe("agent-1");
    expect(nextUnclaimed(["problem/7"], "agent-2", board, 999)).toBeUndefined();
    expect(advisoryHolder(board, "problem/7", 1000)).toBeUndefined();
    expect(nextUnclaimed(["problem/7"], "agent-2", board, 1000)).toBe("problem/7");
    expect(advisoryHolders(board, 1000).size).toBe(0);
  });

  it("re-claiming keeps one's place in line and extends the expiry; dropping gives it back", () => {
    const s1 = claimAdvisory(undefined, "agent-1", 2, "problem/7", 100, 1000);
    const s2 = claimAdvisory(s1, "agent-1", 2, "problem/7", 900, 1000);
    expect(s2.claims).toEqual([{ item: "problem/7", peer: "agent-1", claimedAt: 100, expiresAt: 1900 }]);
    expect(s2.version).toBeGreaterThan(s1.version);
    const s3 = claimAdvisory(s2, "agent-1", 2, "problem/8", 3000, 1000); // problem/7 expired by now: dropped
    expect(s3.claims.map((c) => c.item)).toEqual(["problem/8"]);
    const s4 = dropAdvisory(s3, 2, "problem/8");
    expect(s4.claims).toEqual([]);
    expect(() => claimAdvisory(s4, "agent-2", 2, "x", 0, 10)).toThrow(RangeError);
    expect(() => claimAdvisory(undefined, "agent-2", 2, "x", 0, 0)).toThrow(RangeError);
  });
});

// ── replicated value ────────────────────────────────────────────────────
const claimArb = (peer: string, item: string): fc.Arbitrary<AdvisoryClaim> =>
  fc.record({ at: fc.integer({ min: 0, max: 50 }), ttl: fc.integer({ min: 1, max: 100 }) }).map(({ at, ttl }) => ({
    item,
    peer,
    claimedAt: at,
    expiresAt: at + ttl,
  }));
const slotArb = (peer: string): fc.Arbitrary<AdvisorySlot> =>
  fc
    .record({ version: fc.bigInt({ min: 0n, max: 5n }), items: fc.subarray(ITEMS) })
    .chain(({ version, items }) => fc.tuple(...items.map((i) => claimArb(peer, i))).map((claims) => ({ peer, version, claims })));
const anySlot = fc.constantFrom(...PEERS).chain(slotArb);
const slotMap = fc.array(anySlot, { maxLength: 8 }).map((l) => slots(...l));
const text = (m: AdvisorySlots) => [...m.values()].map(encodeAdvisorySlot).join("\n");

describe("advisory slots: join laws and convergence", () => {
  it("join is idempotent, commutative and associative", () => {
    fc.assert(
      fc.property(slotMap, slotMap, slotMap, (a, b, c) => {
        expect(text(joinAdvisorySlots(a, a))).toBe(text(a));
        expect(text(joinAdvisorySlots(a, b))).toBe(text(joinAdvisorySlots(b, a)));
        expect(text(joinAdvisorySlots(joinAdvisorySlots(a, b), c))).toBe(text(joinAdvisorySlots(a, joinAdvisorySlots(b, c))));
      }),
      { numRuns: RUNS },
    );
  });

  it("any merge order, with duplicates and stale copies, converges to the same winner per item", () => {
    const scenario = fc.record({
      copies: fc.array(anySlot, { minLength: 1, maxLength: 12 }),
      plans: fc.array(fc.record({ ranks: fc.array(fc.nat(), { minLength: 12, maxLength: 12 }), dups: fc.array(fc.nat(), { maxLength: 10 }) }), {
        minLength: 2,
        maxLength: 4,
      }),
      now: fc.integer({ min: 0, max: 160 }),
    });
    fc.assert(
      fc.property(scenario, ({ copies, plans, now }) => {
        const merged = plans.map((plan) => {
          const order = [...copies.keys()].sort((x, y) => (plan.ranks[x] ?? 0) - (plan.ranks[y] ?? 0) || x - y);
          const deliveries = order.map((k) => copies[k]);
          for (const d of plan.dups) deliveries.splice(d % (deliveries.length + 1), 0, copies[d % copies.length]);
          // half the observers merge copy by copy, half join whole maps
          let m: AdvisorySlots = new Map();
          for (const s of deliveries) if (s !== undefined) m = joinAdvisorySlots(m, new Map([[s.peer, s]]));
          return m;
        });
        const winners = merged.map((m) => JSON.stringify([...advisoryHolders(m, now)]));
        const dups = merged.map((m) => JSON.stringify(duplicates(m, now)));
        for (const w of winners) expect(w).toBe(winners[0]);
        for (const d of dups) expect(d).toBe(dups[0]);
        // and the winner is the earliest (claimedAt, peer) among the newest copies' unexpired claims
        const first = merged[0] ?? new Map();
        for (const item of ITEMS) {
          const live = [...first.values()].flatMap((s) => s.claims).filter((c) => c.item === item && c.expiresAt > now);
          live.sort((a, b) => a.claimedAt - b.claimedAt || (a.peer < b.peer ? -1 : 1));
          expect(advisoryHolder(first, item, now)).toEqual(live[0]);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("encoding round-trips and rejects bad input", () => {
    fc.assert(
      fc.property(anySlot, (s) => {
        const t = encodeAdvisorySlot(s);
        expect(encodeAdvisorySlot(decodeAdvisorySlot(t))).toBe(t);
      }),
      { numRuns: RUNS },
    );
    const good = { format: "heddle-advisory/1", peer: "p", version: "1", claims: [["a", 1, 2]] };
    expect(decodeAdvisorySlot(JSON.stringify(good)).claims).toEqual([{ item: "a", peer: "p", claimedAt: 1, expiresAt: 2 }]);
    for (const bad of [
      JSON.stringify({ ...good, format: "heddle-keeper/1" }),
      JSON.stringify({ ...good, claims: [["a", 2, 2]] }),
      JSON.stringify({ ...good, claims: [["a", 1, 2, 3]] }),
      JSON.stringify({ ...good, claims: [["b", 1, 2], ["a", 1, 2]] }),
      JSON.stringify({ ...good, claims: [["", 1, 2]] }),
      JSON.stringify({ ...good, claims: [["a", 1.5, 2]] }),
      JSON.stringify({ ...good, version: "1.0" }),
      JSON.stringify({ peer: "p", version: "1", claims: [] }),
    ]) {
      expect(() => decodeAdvisorySlot(bad), bad).toThrow(ClaimsDecodeError);
    }
  });
});

describe("next: spreading a fleet by a stable hash", () => {
  function distinctFirstPicks(peers: readonly string[], items: readonly string[]): number {
    return new Set(peers.map((p) => next(items, p)[0])).size;
  }

  it("orders the same candidates differently per peer, the same way on every call and input order", () => {
    const items = Array.from({ length: 10 }, (_, i) => `item-${i}`);
    const a = next(items, "agent-1");
    expect([...a].sort()).toEqual([...items].sort());
    expect(next([...items].reverse(), "agent-1")).toEqual(a);
    expect(next([...items, ...items], "agent-1")).toEqual(a);
    expect(next(items, "agent-2")).not.toEqual(a);
  });

  it("N peers facing N tied items make many distinct first picks (measured)", () => {
    for (const n of [9, 20, 50]) {
      const peers = Array.from({ length: n }, (_, i) => `agent-${i + 1}`);
      const items = Array.from({ length: n }, (_, i) => `problem/${100 + i}`);
      const distinct = distinctFirstPicks(peers, items);
      // independent uniform picks give n·(1 − (1 − 1/n)^n) ≈ 0.63·n distinct on average;
      // one shared order (no spreading) gives 1.
      console.log(`next(): ${n} peers, ${n} items → ${distinct} distinct first picks`);
      expect(distinct).toBeGreaterThanOrEqual(Math.ceil(n * 0.45));
    }
  });

  it("spreads about as well as independent random picks, over random names", () => {
    let total = 0;
    let runs = 0;
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 20, maxLength: 20 }), fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 20, maxLength: 20 }), (peers, items) => {
        total += distinctFirstPicks(peers, items);
        runs++;
      }),
      { numRuns: 200 },
    );
    const mean = total / runs;
    expect(mean).toBeGreaterThan(20 * 0.55);
    expect(mean).toBeLessThan(20 * 0.72);
  });

  it("nextUnclaimed skips items other peers hold, but not one's own", () => {
    const items = ["a", "b", "c", "d"];
    const order = next(items, "agent-2");
    const held = claimAdvisory(undefined, "agent-1", 0, order[0] ?? "", 0, 100);
    const mine = claimAdvisory(undefined, "agent-2", 0, order[1] ?? "", 0, 100);
    expect(nextUnclaimed(items, "agent-2", slots(held), 10)).toBe(order[1]);
    expect(nextUnclaimed(items, "agent-2", slots(held, mine), 10)).toBe(order[1]);
    expect(nextUnclaimed(items, "agent-1", slots(held), 10)).toBe(next(items, "agent-1")[0]);
  });
});

describe("stable hash", () => {
  function reference(bytes: Uint8Array): number {
    let h = 0x811c9dc5;
    for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
    return h >>> 0;
  }

  it("is FNV-1a over UTF-8 (published vectors)", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });

  it("agrees with FNV-1a over the UTF-8 bytes of any string, lone surrogates as U+FFFD", () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        expect(fnv1a32(s)).toBe(reference(enc.encode(s)));
      }),
      { numRuns: RUNS },
    );
    expect(fnv1a32("\ud800")).toBe(fnv1a32("\ufffd"));
  });

  it("changes about half the bits when the last character changes", () => {
    let flips = 0;
    const n = 1000;
    for (let i = 0; i < n; i++) {
      const x = stableHash(`peer|item-${i}a`) ^ stableHash(`peer|item-${i}b`);
      flips += x.toString(2).split("").filter((c) => c === "1").length;
    }
    const mean = flips / n;
    expect(mean).toBeGreaterThan(14);
    expect(mean).toBeLessThan(18);
  });
});
