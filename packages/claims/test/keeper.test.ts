// Keeper mode (claims.md §3): rules, timings, settling, heard-from, and the
// replicated one-slot-per-peer value with its join.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  chooseKeeper,
  ClaimsDecodeError,
  closeKeeper,
  decodeKeeperSlot,
  encodeKeeperSlot,
  firstVersion,
  joinKeeperSlots,
  KEEPER_DEFAULTS,
  keeperClaimHolds,
  keeperState,
  lookKeeper,
  nextVersion,
  putKeeperSlot,
  receiveKeeperSlot,
  renewKeeper,
  versionAfter,
} from "../src/index.ts";
import type { KeeperClaim, KeeperRule, KeeperSlot, KeeperSlots } from "../src/index.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 300);
const { aliveMs, settlingMs, unclosedMs, othersHeardMs } = KEEPER_DEFAULTS;
const RULES = { reminders: "follows-you", invoices: "stays-put" } as const;

function claim(peer: string, part: string, fields: Partial<KeeperClaim> = {}): KeeperClaim {
  return { part, peer, claimedAt: 0, renewedAt: 0, activeAt: 0, ...fields };
}

describe("keeper rules", () => {
  it("follows-you: the live claim used most recently; ties to the smaller peer id", () => {
    const cs = [claim("desk", "reminders", { activeAt: 100 }), claim("laptop", "reminders", { activeAt: 200 })];
    expect(chooseKeeper(cs, "reminders", "follows-you", 1000)?.peer).toBe("laptop");
    const tie = [claim("b", "reminders", { activeAt: 5 }), claim("a", "reminders", { activeAt: 5 })];
    expect(chooseKeeper(tie, "reminders", "follows-you", 10)?.peer).toBe("a");
    // a claim past ALIVE no longer follows you
    expect(chooseKeeper(cs, "reminders", "follows-you", aliveMs)).toBeUndefined();
  });

  it("stays-put: latest taken on purpose, otherwise the oldest live claim", () => {
    const cs = [claim("old", "invoices", { claimedAt: 10, renewedAt: 10 }), claim("new", "invoices", { claimedAt: 20, renewedAt: 20 })];
    expect(chooseKeeper(cs, "invoices", "stays-put", 100)?.peer).toBe("old");
    const taken = [...cs, claim("office", "invoices", { claimedAt: 30, renewedAt: 30, takenAt: 30 }), claim("home", "invoices", { claimedAt: 40, renewedAt: 40, takenAt: 35 })];
    expect(chooseKeeper(taken, "invoices", "stays-put", 100)?.peer).toBe("home");
  });

  it("a stays-put claim that lapsed without closing holds for UNCLOSED; a closed one holds nothing", () => {
    const c = claim("laptop", "invoices", { renewedAt: 1000 });
    expect(keeperClaimHolds(c, "stays-put", 1000 + aliveMs)).toBe(true);
    expect(keeperClaimHolds(c, "follows-you", 1000 + aliveMs)).toBe(false);
    expect(keeperClaimHolds(c, "stays-put", 1000 + unclosedMs - 1)).toBe(true);
    expect(keeperClaimHolds(c, "stays-put", 1000 + unclosedMs)).toBe(false);
    expect(keeperClaimHolds({ ...c, closedAt: 1000 }, "stays-put", 1001)).toBe(false);
    // an unclosed stays-put claim still outranks a newer one for a day: the old machine may still be numbering
    const newer = claim("desk", "invoices", { claimedAt: 5000, renewedAt: 5000 + aliveMs });
    expect(chooseKeeper([c, newer], "invoices", "stays-put", 2000 + aliveMs)?.peer).toBe("laptop");
    expect(chooseKeeper([c, newer], "invoices", "stays-put", 1000 + unclosedMs)?.peer).toBe("desk");
  });
});

describe("keeper state: settling, heard-from, close", () => {
  it("acts only after keeping the part continuously for SETTLING", () => {
    let a = keeperState({ self: "a", epoch: 1, rules: RULES });
    let b = keeperState({ self: "b", epoch: 1, rules: RULES });
    const ra = renewKeeper(a, "reminders", 0, { active: 0 });
    a = ra.state;
    expect(ra.view).toMatchObject({ keeper: "a", keeps: true, settled: false, mayAct: false });
    expect(lookKeeper(a, "reminders", settlingMs - 1).view.mayAct).toBe(false);
    a = lookKeeper(a, "reminders", settlingMs - 1).state;
    expect(lookKeeper(a, "reminders", settlingMs).view.mayAct).toBe(true);

    // the person moves to b: b's claim arrives at a, the keeper changes, settling starts again
    const rb = renewKeeper(b, "reminders", 130_000, { active: 130_000 });
    b = rb.state;
    a = receiveKeeperSlot(a, "b", rb.slot, 130_500).state;
    const seen = lookKeeper(a, "reminders", 131_000).view;
    expect(seen).toMatchObject({ keeper: "b", keeps: false, mayAct: false, keeperSince: 130_500 });

    // b quits: it closes, saying how far it wrote; a keeps again from when it heard
    const cb = closeKeeper(b, "reminders", 200_000, 42);
    expect(cb.view.keeper).toBeUndefined(); // b's own claim is closed and a's has not reached b
    a = renewKeeper(a, "reminders", 190_000).state;
    a = receiveKeeperSlot(a, "b", cb.slot, 200_100).state;
    const after = lookKeeper(a, "reminders", 200_200).view;
    expect(after).toMatchObject({ keeper: "a", keeperSince: 200_100, mayAct: false });
    expect(after.closed).toEqual([{ peer: "b", closedAt: 200_000, wroteUpTo: 42 }]);
    expect(lookKeeper(a, "reminders", 200_100 + settlingMs).view.mayAct).toBe(true);
  });

  it("for what must never happen twice, requires every other claimant heard from lately", () => {
    let a = keeperState({ self: "a", epoch: 1, rules: RULES });
    const b = keeperState({ self: "b", epoch: 1, rules: RULES });
    a = renewKeeper(a, "invoices", 0, { take: true }).state;
    const rb = renewKeeper(b, "invoices", 10);
    a = receiveKeeperSlot(a, "b", rb.slot, 10).state;
    // settled at SETTLING, but b has been heard only since 10: sure once b has been heard for SETTLING too
    const early = lookKeeper(a, "invoices", settlingMs);
    expect(early.view).toMatchObject({ keeper: "a", mayAct: true, unheard: [], sure: false });
    const heardLongEnough = lookKeeper(early.state, "invoices", 10 + settlingMs);
    expect(heardLongEnough.view).toMatchObject({ keeper: "a", mayAct: true, unheard: [], sure: true });
    const late = lookKeeper(heardLongEnough.state, "invoices", 10 + othersHeardMs + 1).view;
    expect(late).toMatchObject({ keeper: "a", mayAct: true, unheard: ["b"], sure: false });
    // a repeated copy of b's slot is still news that b is there, but after a gap hearing starts again
    const again = 10 + othersHeardMs + 2;
    a = receiveKeeperSlot(heardLongEnough.state, "b", rb.slot, again).state;
    expect(lookKeeper(a, "invoices", again + 1).view).toMatchObject({ unheard: [], sure: false });
    expect(lookKeeper(a, "invoices", again + settlingMs - 1).view.sure).toBe(false);
    expect(lookKeeper(a, "invoices", again + settlingMs).view.sure).toBe(true);
  });

  it("rejects a slot from anyone but its author, and its own slot echoed back", () => {
    const a = keeperState({ self: "a", epoch: 1, rules: RULES });
    const b = renewKeeper(keeperState({ self: "b", epoch: 1, rules: RULES }), "reminders", 0);
    expect(receiveKeeperSlot(a, "c", b.slot, 0)).toMatchObject({ accepted: false, why: "not-author" });
    const own = renewKeeper(a, "reminders", 0);
    expect(receiveKeeperSlot(own.state, "a", own.slot, 0)).toMatchObject({ accepted: false, why: "own-slot" });
  });

  it("a restarted peer's slot outranks its previous incarnation's", () => {
    const old = renewKeeper(keeperState({ self: "b", epoch: 1, rules: RULES }), "reminders", 0, { active: 500 });
    const restarted = renewKeeper(keeperState({ self: "b", epoch: 2, rules: RULES }), "reminders", 10, { active: 10 });
    expect(restarted.slot.version).toBeGreaterThan(old.slot.version);
    const s1 = putKeeperSlot(putKeeperSlot(new Map(), restarted.slot).slots, old.slot);
    expect(s1.replaced).toBe(false);
    expect(s1.slots.get("b")?.claims[0]?.activeAt).toBe(10);
  });

  it("keeps times in whole milliseconds and refuses nonsense as a bug", () => {
    const a = keeperState({ self: "a", epoch: 1, rules: RULES });
    const r = renewKeeper(a, "reminders", 1234.9, { active: 1000.5 });
    expect(r.slot.claims[0]).toMatchObject({ claimedAt: 1234, renewedAt: 1234, activeAt: 1000 });
    expect(decodeKeeperSlot(encodeKeeperSlot(r.slot))).toEqual(r.slot);
    expect(() => renewKeeper(a, "reminders", -1)).toThrow(RangeError);
    expect(() => renewKeeper(a, "reminders", Number.NaN)).toThrow(RangeError);
    expect(() => renewKeeper(a, "unknown-part", 0)).toThrow(RangeError);
  });

  it("versions: epoch × 2^32 + counter, never borrowing the next epoch", () => {
    expect(firstVersion(3)).toBe(3n * 2n ** 32n);
    expect(versionAfter(undefined, 3)).toBe(3n * 2n ** 32n);
    expect(versionAfter(3n * 2n ** 32n + 5n, 3)).toBe(3n * 2n ** 32n + 6n);
    expect(versionAfter(2n * 2n ** 32n + 5n, 3)).toBe(3n * 2n ** 32n);
    expect(() => nextVersion(4n * 2n ** 32n - 1n)).toThrow(RangeError);
  });
});

// ── replicated value ────────────────────────────────────────────────────
const PEERS = ["p0", "p1", "p2", "p3", "p4"];
const PARTS = ["invoices", "reminders"];
const time = fc.integer({ min: 0, max: 2 * unclosedMs });

const claimArb = (peer: string, part: string): fc.Arbitrary<KeeperClaim> =>
  fc
    .record({
      claimedAt: time,
      renewGap: fc.integer({ min: 0, max: aliveMs * 2 }),
      activeAt: time,
      takenAt: fc.option(time, { nil: undefined }),
      closed: fc.boolean(),
      wroteUpTo: fc.option(fc.nat(1000), { nil: undefined }),
    })
    .map((r) => ({
      part,
      peer,
      claimedAt: r.claimedAt,
      renewedAt: r.claimedAt + r.renewGap,
      activeAt: r.activeAt,
      ...(r.takenAt !== undefined ? { takenAt: r.takenAt } : {}),
      ...(r.closed ? { closedAt: r.claimedAt + r.renewGap } : {}),
      ...(r.wroteUpTo !== undefined ? { wroteUpTo: r.wroteUpTo } : {}),
    }));

const slotArb = (peer: string): fc.Arbitrary<KeeperSlot> =>
  fc
    .record({
      version: fc.bigInt({ min: 0n, max: 6n }), // few versions, so equal versions with different content occur
      parts: fc.subarray(PARTS),
    })
    .chain(({ version, parts }) =>
      fc.tuple(...parts.map((p) => claimArb(peer, p))).map((claims) => ({ peer, version, claims })),
    );

const anySlot = fc.constantFrom(...PEERS).chain(slotArb);
const slotMap: fc.Arbitrary<KeeperSlots> = fc.array(anySlot, { maxLength: 8 }).map((slots) => {
  let m: KeeperSlots = new Map();
  for (const s of slots) m = putKeeperSlot(m, s).slots;
  return m;
});

function text(m: KeeperSlots): string {
  return [...m.values()].map(encodeKeeperSlot).join("\n");
}

describe("keeper slots: join laws and convergence", () => {
  it("join is idempotent, commutative and associative", () => {
    fc.assert(
      fc.property(slotMap, slotMap, slotMap, (a, b, c) => {
        expect(text(joinKeeperSlots(a, a))).toBe(text(a));
        expect(text(joinKeeperSlots(a, b))).toBe(text(joinKeeperSlots(b, a)));
        expect(text(joinKeeperSlots(joinKeeperSlots(a, b), c))).toBe(text(joinKeeperSlots(a, joinKeeperSlots(b, c))));
      }),
      { numRuns: RUNS },
    );
  });

  it("any merge order, with duplicates and stale copies, gives every peer the same keeper", () => {
    const scenario = fc.record({
      copies: fc.array(anySlot, { minLength: 1, maxLength: 12 }),
      observers: fc.array(
        fc.record({
          ranks: fc.array(fc.nat(), { minLength: 12, maxLength: 12 }), // a random permutation of the copies
          dups: fc.array(fc.nat(), { maxLength: 10 }), // copies delivered again, anywhere in between
        }),
        { minLength: 2, maxLength: 4 },
      ),
      nows: fc.array(time, { minLength: 1, maxLength: 4 }),
    });
    fc.assert(
      fc.property(scenario, ({ copies, observers: plans, nows }) => {
        const observers = plans.map((plan, i) => {
          const order = [...copies.keys()].sort((x, y) => (plan.ranks[x] ?? 0) - (plan.ranks[y] ?? 0) || x - y);
          const deliveries = order.map((k) => copies[k]);
          for (const d of plan.dups) deliveries.splice(d % (deliveries.length + 1), 0, copies[d % copies.length]);
          let st = keeperState({ self: `observer${i}`, epoch: 0, rules: RULES });
          for (const s of deliveries) if (s !== undefined) st = receiveKeeperSlot(st, s.peer, s, 0).state;
          return st;
        });
        const reference = observers[0];
        if (reference === undefined) return;
        for (const o of observers) expect(text(o.slots)).toBe(text(reference.slots));
        for (const now of nows) {
          for (const part of PARTS) {
            const rule: KeeperRule = RULES[part as keyof typeof RULES];
            const keepers = observers.map((o) => lookKeeper(o, part, now).view.keeper);
            const direct = chooseKeeper(
              [...reference.slots.values()].flatMap((s) => s.claims),
              part,
              rule,
              now,
            )?.peer;
            for (const k of keepers) expect(k).toBe(direct);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe("keeper slot encoding", () => {
  it("round-trips exactly", () => {
    fc.assert(
      fc.property(anySlot, (s) => {
        const t = encodeKeeperSlot(s);
        expect(encodeKeeperSlot(decodeKeeperSlot(t))).toBe(t);
        expect(decodeKeeperSlot(t).claims).toEqual([...s.claims].sort((x, y) => (x.part < y.part ? -1 : 1)));
      }),
      { numRuns: RUNS },
    );
  });

  it("rejects bad input", () => {
    const good = { format: "heddle-keeper/1", peer: "p", version: "5", claims: [["a", 1, 2, 3, null, null, null]] };
    const bad = [
      "{",
      JSON.stringify({ ...good, format: "heddle-keeper/2" }),
      JSON.stringify({ ...good, extra: true }),
      JSON.stringify({ ...good, peer: "" }),
      JSON.stringify({ ...good, version: 5 }),
      JSON.stringify({ ...good, version: "05" }),
      JSON.stringify({ ...good, version: "-1" }),
      JSON.stringify({ ...good, version: "9223372036854775808" }),
      JSON.stringify({ ...good, claims: [["a", 1, 2, 3, null, null]] }),
      JSON.stringify({ ...good, claims: [["b", 1, 2, 3, null, null, null], ["a", 1, 2, 3, null, null, null]] }),
      JSON.stringify({ ...good, claims: [["a", 1, 2, 3, null, null, null], ["a", 1, 2, 3, null, null, null]] }),
      JSON.stringify({ ...good, claims: [["a", 5, 2, 3, null, null, null]] }),
      JSON.stringify({ ...good, claims: [["a", 1, 2, -3, null, null, null]] }),
      JSON.stringify({ ...good, claims: [["a", 1, 2, 3, "x", null, null]] }),
      JSON.stringify({ ...good, claims: [["a", 1, 2, 3, null, 0, null]] }),
    ];
    expect(decodeKeeperSlot(JSON.stringify(good)).version).toBe(5n);
    for (const t of bad) expect(() => decodeKeeperSlot(t), t).toThrow(ClaimsDecodeError);
  });
});
