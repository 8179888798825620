// Keeper and advisory claims over the in-memory seam (claims.md §3–4, node.md channel 5): seeded runs with drops,
// duplicates, delays, partitions, heals, crashes and restarts converge; the keeper and the advisory winners agree
// on every peer once they have heard each other. A failing run names its seed; HEDDLE_SEED=<n> replays it alone.
import { encodeAdvisorySlot, type AdvisoryClaim } from "@heddle/claims";
import { describe, expect, it } from "vitest";
import { MemoryNetwork, memoryStore, resolveClaimsGossipConfig, resolveHeddleConfig, seededRandom } from "../src/index.ts";
import { ClaimsGossip, RejectionCounter, VirtualTimers } from "../src/testing.ts";
import { Cluster, forSeeds, seedList } from "./node-sim.ts";

const TIMINGS = { renewEveryMs: 1_000, aliveMs: 5_000, settlingMs: 2_000, unclosedMs: 60_000, othersHeardMs: 2_000 };
const RULES = { reminders: "follows-you", invoices: "stays-put" } as const;
const PARTS = Object.keys(RULES);
const ITEMS = Array.from({ length: 8 }, (_, i) => `item-${i}`);
const PEERS = ["a", "b", "c", "d", "e"];

function cluster(seed: number): Cluster {
  return new Cluster({
    seed,
    supply: Object.fromEntries(PEERS.map((p) => [p, 100n])),
    faults: { dropRate: 0.2, duplicateRate: 0.1, delayMs: [0, 40] },
    config: { claims: { keeperRules: RULES, keeperTimings: TIMINGS, antiEntropyMs: 500, tickMs: 100, advisoryTtlMs: 20_000 } },
  });
}

/**
 * Every live peer's slot maps, encoded: equal strings mean equal replicated values. Keeper claims are shown without
 * `renewedAt` and versions: open claims renew themselves every second, so some renewal is always in flight.
 */
function slotText(c: Cluster, id: string): { keeper: string; advisory: string } {
  const s = c.n(id).gossipClaims.slots();
  return {
    keeper: JSON.stringify([...s.keeper.values()].map((slot) => [slot.peer, slot.claims.map(({ renewedAt: _r, ...rest }) => rest)])),
    advisory: [...s.advisory.values()].map(encodeAdvisorySlot).join("\n"),
  };
}

/** The earliest unexpired claim per item over the authors' own slots: the winner every peer must compute. */
function expectedHolders(c: Cluster, now: number): Map<string, AdvisoryClaim> {
  const all: AdvisoryClaim[] = [];
  for (const p of c.live()) all.push(...(p.node.gossipClaims.slots().advisory.get(p.id)?.claims ?? []));
  const out = new Map<string, AdvisoryClaim>();
  for (const claim of all.filter((x) => x.expiresAt > now).sort((x, y) => x.claimedAt - y.claimedAt || (x.peer < y.peer ? -1 : 1))) {
    if (!out.has(claim.item)) out.set(claim.item, claim);
  }
  return new Map([...out].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
}

function run(seed: number): { partitions: number; restarts: number; contested: number } {
  const c = cluster(seed);
  const rnd = seededRandom(seed * 7919 + 1);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  let partitions = 0;
  let restarts = 0;
  let contested = 0;
  let split: string[][] | null = null;
  for (let step = 0; step < 120; step++) {
    const live = c.live().map((p) => p.id);
    const r = rnd();
    if (r < 0.35) {
      const id = pick(live);
      const part = pick(PARTS);
      const roll = rnd();
      if (roll < 0.15) c.n(id).gossipClaims.closeKeeper(part, step);
      else c.n(id).gossipClaims.keeper(part, roll < 0.4 ? { take: true } : roll < 0.7 ? { active: c.timers.now() } : { wroteUpTo: step });
    } else if (r < 0.7) {
      const id = pick(live);
      const item = pick(ITEMS);
      if (rnd() < 0.2) c.n(id).gossipClaims.dropAdvisory(item);
      else c.n(id).gossipClaims.advisory(item, 2_000 + Math.floor(rnd() * 20_000));
    } else if (r < 0.76 && split === null) {
      // a partition into two sides, each with at least one peer
      const shuffled = [...PEERS].sort(() => rnd() - 0.5);
      const cutAt = 1 + Math.floor(rnd() * (PEERS.length - 1));
      split = [shuffled.slice(0, cutAt), shuffled.slice(cutAt)];
      c.net.partition(split, rnd() < 0.5 ? "silent" : "disconnect");
      partitions++;
    } else if (r < 0.82 && split !== null) {
      // Before healing: within each side, every live member gets every other live member's slots at least as new
      // as they were now (anti-entropy repairs losses on the side it can reach).
      const versionsAt = new Map<string, { keeper: bigint; advisory: bigint }>();
      for (const p of c.live()) {
        const s = p.node.gossipClaims.slots();
        versionsAt.set(p.id, { keeper: s.keeper.get(p.id)?.version ?? -1n, advisory: s.advisory.get(p.id)?.version ?? -1n });
      }
      c.timers.advanceBy(3_000);
      for (const side of split) {
        const members = side.filter((id) => c.peers.get(id)!.alive && versionsAt.has(id));
        for (const author of members) {
          const v = versionsAt.get(author)!;
          for (const m of members) {
            const s = c.n(m).gossipClaims.slots();
            expect(s.keeper.get(author)?.version ?? -1n, `seed ${seed}: ${m} lacks ${author}'s keeper slot inside its side`).toBeGreaterThanOrEqual(v.keeper);
            expect(s.advisory.get(author)?.version ?? -1n, `seed ${seed}: ${m} lacks ${author}'s advisory slot inside its side`).toBeGreaterThanOrEqual(v.advisory);
          }
        }
      }
      c.net.heal();
      split = null;
    } else if (r < 0.85 && live.length > 3) {
      const id = pick(live);
      c.crash(id, rnd() < 0.5 ? "silent" : "disconnect");
    } else if (r < 0.9) {
      const down = [...c.peers.values()].filter((p) => !p.alive);
      if (down.length > 0) {
        c.restart(pick(down).id);
        restarts++;
      }
    }
    c.timers.advanceBy(Math.floor(rnd() * 400));
  }
  // Heal everything, bring every peer back, and let each one write once (a restarted peer's previous incarnation
  // is outranked only by its next write: only an author sends its slot).
  c.net.heal();
  for (const p of c.peers.values()) if (!p.alive) c.restart(p.id);
  c.timers.advanceBy(500);
  for (const p of c.live()) {
    p.node.gossipClaims.keeper("reminders");
    p.node.gossipClaims.advisory(`final-${p.id}`, 60_000);
  }
  // Long enough for anti-entropy to repair every loss and for every keeper to settle.
  c.timers.advanceBy(TIMINGS.aliveMs + TIMINGS.settlingMs);
  const authored = new Map(c.live().map((p) => [p.id, p.node.gossipClaims.slots().keeper.get(p.id)?.version ?? -1n]));
  c.timers.advanceBy(3_000);
  for (const p of c.live()) {
    for (const [author, v] of authored) expect(p.node.gossipClaims.slots().keeper.get(author)?.version ?? -1n, `seed ${seed}: ${p.id} missed ${author}'s renewals`).toBeGreaterThanOrEqual(v);
  }

  const now = c.timers.now();
  const texts = c.live().map((p) => slotText(c, p.id));
  for (const t of texts) {
    expect(t.keeper, `seed ${seed}: keeper slots differ after heal`).toBe(texts[0]!.keeper);
    expect(t.advisory, `seed ${seed}: advisory slots differ after heal`).toBe(texts[0]!.advisory);
  }
  expect(c.live()[0]!.node.gossipClaims.slots().keeper.size).toBe(PEERS.length);
  for (const part of PARTS) {
    const views = c.live().map((p) => p.node.gossipClaims.look(part));
    const keeper = views[0]!.keeper;
    for (const v of views) expect(v.keeper, `seed ${seed}: peers disagree on the keeper of ${part}`).toBe(keeper);
    const acting = views.filter((v) => v.mayAct);
    expect(acting.length, `seed ${seed}: ${acting.length} peers may act on ${part}`).toBe(keeper === undefined ? 0 : 1);
    if (keeper !== undefined) {
      expect(acting[0]!.keeps).toBe(true);
      expect(acting[0]!.mode).toBe("keeper");
      expect(acting[0]!.sure, `seed ${seed}: the settled keeper of ${part} has heard everyone`).toBe(true);
    }
  }
  const expected = expectedHolders(c, now);
  for (const p of c.live()) {
    const holders = p.node.gossipClaims.holders();
    expect(holders.map((h) => `${h.item}:${h.peer}`)).toEqual([...expected.values()].map((h) => `${h.item}:${h.peer}`));
    for (const d of p.node.gossipClaims.duplicates()) expect(expected.get(d.item)?.peer).toBe(d.winner.peer);
  }
  contested = c.live()[0]!.node.gossipClaims.duplicates().length;
  const rejected = c.live().reduce((n, p) => n + Object.values(p.node.metrics().framesRejected).reduce((a, b) => a + b, 0), 0);
  expect(rejected, `seed ${seed}: honest frames rejected`).toBe(0);
  void c.shutdown();
  return { partitions, restarts, contested };
}

describe("keeper and advisory claims over MemoryNetwork (claims.md §3–4 on channel 5)", () => {
  it("converge through drops, duplicates, partitions, heals, crashes and restarts (seeded)", () => {
    const seeds = seedList(Number(process.env.HEDDLE_SEEDS ?? 12), 1);
    let partitions = 0;
    let restarts = 0;
    forSeeds(seeds, (seed) => {
      const r = run(seed);
      partitions += r.partitions;
      restarts += r.restarts;
    });
    // the scenarios actually happened
    if (seeds.length > 1) {
      expect(partitions).toBeGreaterThan(seeds.length);
      expect(restarts).toBeGreaterThan(0);
    }
  });

  it("a partitioned peer's claim is unknown to the other side until the heal, then settles everywhere", () => {
    const c = cluster(4242);
    c.net.setFaults("*", "*", { dropRate: 0, duplicateRate: 0, delayMs: [1, 5] });
    c.timers.advanceBy(100);
    c.net.partition([["a"], ["b", "c", "d", "e"]], "silent");
    c.timers.advanceBy(100);
    const first = c.n("a").gossipClaims.keeper("invoices", { take: true });
    expect(first.keeps).toBe(true);
    expect(first.settled).toBe(false);
    c.n("b").gossipClaims.keeper("invoices");
    c.n("b").gossipClaims.advisory("item-1", 60_000);
    c.timers.advanceBy(1);
    c.n("a").gossipClaims.advisory("item-1", 60_000);
    c.timers.advanceBy(3_000);
    // each side sees only itself: both believe they keep it (claims.md: only peers that heard each other agree)
    expect(c.n("a").gossipClaims.look("invoices").keeper).toBe("a");
    expect(c.n("c").gossipClaims.look("invoices").keeper).toBe("b");
    expect(c.n("a").gossipClaims.holder("item-1").holder).toBe("a");
    expect(c.n("c").gossipClaims.holder("item-1").holder).toBe("b");
    c.net.heal();
    c.timers.advanceBy(1_500);
    // one anti-entropy round later: a's take wins invoices (latest takenAt), b's earlier claim wins item-1
    for (const id of PEERS) {
      expect(c.n(id).gossipClaims.look("invoices").keeper).toBe("a");
      const h = c.n(id).gossipClaims.holder("item-1");
      expect(h.holder).toBe("b");
      expect(h.guarantee).toMatch(/best effort/);
    }
    expect(c.n("a").gossipClaims.holder("item-1").mine).toBe(false);
    expect(c.n("a").gossipClaims.duplicates().map((d) => [d.item, d.winner.peer, d.loser.peer])).toEqual([["item-1", "b", "a"]]);
    // b saw itself keep invoices until the heal; a kept it all along but must still wait out its settling
    c.timers.advanceBy(TIMINGS.settlingMs);
    expect(c.n("a").gossipClaims.look("invoices").mayAct).toBe(true);
    expect(c.n("b").gossipClaims.look("invoices").mayAct).toBe(false);
    void c.shutdown();
  });

  it("a closed claim reports wroteUpTo everywhere and a quitting node closes its claims", () => {
    const c = cluster(77);
    c.net.setFaults("*", "*", { dropRate: 0, duplicateRate: 0, delayMs: [1, 5] });
    c.timers.advanceBy(100);
    c.n("a").gossipClaims.keeper("reminders", { active: c.timers.now() });
    c.n("b").gossipClaims.keeper("reminders");
    c.timers.advanceBy(100);
    c.n("a").gossipClaims.closeKeeper("reminders", 41);
    c.timers.advanceBy(100);
    const seen = c.n("c").gossipClaims.look("reminders");
    expect(seen.keeper).toBe("b");
    expect(seen.closed).toEqual([{ peer: "a", closedAt: expect.any(Number), wroteUpTo: 41 }]);
    // b shuts down gracefully: its open claim is closed on every peer, not left to lapse
    void c.n("b").shutdown();
    c.peers.get("b")!.alive = false;
    c.timers.advanceBy(100);
    expect(c.n("c").gossipClaims.look("reminders").keeper).toBeUndefined();
    expect(c.n("c").gossipClaims.look("reminders").closed.map((x) => x.peer)).toEqual(["a", "b"]);
    void c.shutdown();
  });

  it("renews open claims by itself and lets a silent peer's claim lapse after ALIVE", () => {
    const c = cluster(5);
    c.net.setFaults("*", "*", { dropRate: 0, duplicateRate: 0, delayMs: [1, 5] });
    c.timers.advanceBy(100);
    c.n("a").gossipClaims.keeper("reminders", { active: 100 });
    c.n("b").gossipClaims.keeper("reminders", { active: 50 });
    c.timers.advanceBy(10 * TIMINGS.aliveMs);
    // a renewed its claim all along: still alive everywhere, and settled
    expect(c.n("e").gossipClaims.look("reminders").keeper).toBe("a");
    expect(c.n("a").gossipClaims.look("reminders").mayAct).toBe(true);
    c.crash("a", "silent");
    c.timers.advanceBy(TIMINGS.aliveMs + 200);
    // follows-you: a's lapsed claim holds nothing; b takes over and must settle before acting
    const b = c.n("b").gossipClaims.look("reminders");
    expect(b.keeper).toBe("b");
    expect(b.mayAct).toBe(false);
    c.timers.advanceBy(TIMINGS.settlingMs);
    expect(c.n("b").gossipClaims.look("reminders").mayAct).toBe(true);
    void c.shutdown();
  });

  it("a tick that runs into a bug (a persist callback that throws) does not end renewal: the next tick still comes", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(8) });
    const config = resolveClaimsGossipConfig({ keeperRules: RULES, keeperTimings: TIMINGS, antiEntropyMs: 500, tickMs: 100 });
    let broken = false;
    const persisted: string[] = [];
    const a = new ClaimsGossip({
      channel: net.join("a"), epoch: 1, timers, config, rejections: new RejectionCounter(timers, 60_000, () => {}), maxFrameBytes: 64 * 1024,
      persistKeeperSlot: (text) => {
        if (broken) throw new Error("a bug in the persist callback");
        persisted.push(text);
        return true;
      },
    });
    timers.advanceBy(1);
    a.keeper("reminders", { active: 1 });
    const taken = a.slots().keeper.get("a")!.claims[0]!.renewedAt;
    broken = true;
    // the renewal's tick throws (a bug surfaces) — before, it then never re-armed: no renewal, ever
    expect(() => timers.advanceBy(TIMINGS.renewEveryMs + 100)).toThrow("a bug in the persist callback");
    broken = false;
    timers.advanceBy(200);
    expect(a.slots().keeper.get("a")!.claims[0]!.renewedAt).toBeGreaterThan(taken);
    expect(persisted.length).toBe(2);
    void a.close();
  });

  it("a quit that runs into a bug (a persist callback that throws) still stops the timers and the handler", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(8) });
    const config = resolveClaimsGossipConfig({ keeperRules: RULES, keeperTimings: TIMINGS, antiEntropyMs: 500, tickMs: 100 });
    let broken = false;
    let persists = 0;
    const rejections = new RejectionCounter(timers, 60_000, () => {});
    const a = new ClaimsGossip({
      channel: net.join("a"), epoch: 1, timers, config, rejections, maxFrameBytes: 64 * 1024,
      persistKeeperSlot: () => {
        if (broken) throw new Error("a bug in the persist callback");
        persists++;
        return true;
      },
    });
    const b = new ClaimsGossip({ channel: net.join("b"), epoch: 1, timers, config, rejections, maxFrameBytes: 64 * 1024 });
    timers.advanceBy(1);
    a.keeper("reminders");
    timers.advanceBy(1_000);
    broken = true;
    expect(() => a.close()).toThrow("a bug in the persist callback");
    broken = false;
    const heard = a.slots().keeper.get("b");
    const before = { persists, renewedAt: a.slots().keeper.get("a")!.claims[0]!.renewedAt };
    // no tick renews or persists after the close, and b's later slots are not taken in
    b.keeper("reminders", { take: true });
    timers.advanceBy(5 * TIMINGS.renewEveryMs);
    expect({ persists, renewedAt: a.slots().keeper.get("a")!.claims[0]!.renewedAt }).toEqual(before);
    expect(a.slots().keeper.get("b")).toBe(heard);
    expect(() => a.keeper("reminders")).toThrow(/shut down/);
    b.close();
  });

  it("refuses unknown parts and writes past the slot limit without changing anything", () => {
    const c = new Cluster({ seed: 9, supply: { a: 1n, b: 1n }, config: { claims: { keeperRules: RULES, maxClaimsPerSlot: 3 } } });
    const a = c.n("a").gossipClaims;
    expect(() => a.keeper("payroll")).toThrow(/no keeper part "payroll".*configured: invoices, reminders/);
    for (const item of ["x", "y", "z"]) a.advisory(item, 1_000);
    const before = encodeAdvisorySlot(a.slots().advisory.get("a")!);
    expect(() => a.advisory("w", 1_000)).toThrow(/maxClaimsPerSlot/);
    expect(encodeAdvisorySlot(a.slots().advisory.get("a")!)).toBe(before);
    // re-claiming what it holds is not a new claim
    expect(a.advisory("x", 1_000).mine).toBe(true);
    // dropping a claim that expired drops nothing and writes no new slot version
    c.timers.advanceBy(1_001);
    const version = a.slots().advisory.get("a")!.version;
    expect(a.dropAdvisory("y")).toBe(false);
    expect(a.slots().advisory.get("a")!.version).toBe(version);
    void c.shutdown();
  });

  it("refuses an own write whose slot text every peer would refuse (MAX_SLOT_TEXT), though its frame fits maxFrameBytes", () => {
    const c = new Cluster({ seed: 11, supply: { a: 1n, b: 1n }, config: { claims: { keeperRules: RULES } } });
    const a = c.n("a").gossipClaims;
    const long = (i: number) => `${String(i).padStart(5, "0")}-${"x".repeat(1_000)}`;
    let refused: unknown = null;
    let accepted = 0;
    for (let i = 0; i < 600 && refused === null; i++) {
      try {
        a.advisory(long(i), 60_000);
        accepted++;
      } catch (e) {
        refused = e;
      }
    }
    expect(refused).toMatchObject({ name: "ClaimsLimitError", limit: "MAX_SLOT_TEXT" });
    expect((refused as Error).message).toMatch(/above MAX_SLOT_TEXT \(524288\), which every peer refuses/);
    expect(accepted).toBeGreaterThan(400);
    expect(encodeAdvisorySlot(a.slots().advisory.get("a")!).length).toBeLessThanOrEqual(512 * 1024);
    // everything accepted reaches the other peer, and nothing of a's is refused there
    c.timers.advanceBy(2_000);
    expect(encodeAdvisorySlot(c.n("b").gossipClaims.slots().advisory.get("a")!)).toBe(encodeAdvisorySlot(a.slots().advisory.get("a")!));
    expect(c.n("b").gossipClaims.holder(long(accepted - 1)).holder).toBe("a");
    expect(c.n("b").metrics().framesRejected.oversize).toBe(0);
    void c.shutdown();
  });

  it("checks the claims config and names the bad field", () => {
    const base = { policy: { quantum: 10n }, maxHoldingsPerPeer: 10n, timers: new VirtualTimers(), random: () => 0.5, store: memoryStore() };
    const bad = (claims: unknown) => () => resolveHeddleConfig({ ...base, claims: claims as never });
    expect(bad({ keeperRules: { invoices: "nearest" } })).toThrow(/HeddleConfig\.claims\.keeperRules\.invoices must be "follows-you" or "stays-put"/);
    expect(bad({ antiEntropyMs: 0 })).toThrow(/HeddleConfig\.claims\.antiEntropyMs must be an integer/);
    expect(bad({ antiEntropyMs: 200_000 })).toThrow(/claims\.antiEntropyMs \(200000\) must be < keeperTimings\.othersHeardMs/);
    expect(bad({ maxClaimsPerSlot: 5_000 })).toThrow(/claims\.maxClaimsPerSlot must be an integer in 1 … 4096/);
    expect(bad({ keeperTimings: { renewEveryMs: 10_000, aliveMs: 1_000 } })).toThrow(/renewEveryMs \(10000\) must be < aliveMs/);
    // settling must outlast the replication delay (claims.md §3): a lost claim arrives with the next anti-entropy round
    expect(bad({ keeperTimings: { settlingMs: 1 } })).toThrow(/HeddleConfig\.claims\.keeperTimings\.settlingMs \(1\) must be > antiEntropyMs \(30000\)/);
    expect(bad({ keeperTimings: { settlingMs: 30_000 } })).toThrow(/settlingMs \(30000\) must be > antiEntropyMs/);
    expect(() => resolveHeddleConfig({ ...base, claims: { keeperTimings: { settlingMs: 30_001 } } })).not.toThrow();
    // a renewal on the next tick must land before the own claim lapses
    expect(bad({ tickMs: 240_000 })).toThrow(/HeddleConfig\.claims\.tickMs \(240000\) must be < keeperTimings\.aliveMs − renewEveryMs \(300000 − 60000\)/);
    expect(bad({ keeperTimings: { renewEveryMs: 1_000, aliveMs: 1_500 } })).toThrow(/claims\.tickMs \(1000\) must be < keeperTimings\.aliveMs − renewEveryMs/);
    expect(() => resolveHeddleConfig({ ...base, claims: { tickMs: 239_999 } })).not.toThrow();
    const ok = resolveHeddleConfig(base).claims;
    expect(ok).toMatchObject({ keeperRules: {}, antiEntropyMs: 30_000, tickMs: 1_000, maxClaimsPerSlot: 4096, keeperTimings: { settlingMs: 120_000 } });
  });
});
