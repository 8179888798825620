import { describe, expect, it } from "vitest";
import { EntitlementLedger, Rational } from "@heddle/ledger";
import { DEMAND_NONE } from "@heddle/policy";
import { BootstrapError, heddleStatic, memoryStore, seededRandom, staticGenesis, fnv1a64 } from "../src/index.ts";
import { InjectedCommitFailure, WIRE_VERSION, failingStore } from "../src/testing.ts";
import { Cluster, D, FLAT, HUNGRY, conservation, e, g, r, rec } from "./node-sim.ts";

const issued = (c: Cluster, p: string, edge: string) => c.n(p).ledger.get().edge(e(edge))?.issued;

describe("node.md §16 acceptance (integrated node, MemoryNetwork + VirtualTimers + memoryStore)", () => {
  it("A1 genesis determinism: same inputs → same bytes and digest; a different supply's ledger frames are rejected genesis-mismatch", async () => {
    const c = new Cluster({ seed: 11, supply: { a: 100n, b: 100n, c: 100n } });
    const bytes = ["a", "b", "c"].map((p) => c.n(p).ledger.get().encode());
    expect(new Set(bytes).size).toBe(1);
    expect(new Set(["a", "b", "c"].map((p) => c.n(p).genesisDigest)).size).toBe(1);
    expect(c.n("a").genesisDigest).toBe(fnv1a64(staticGenesis(g("root"), new Map([[r("a"), 100n], [r("b"), 100n], [r("c"), 100n]]), FLAT).encode()));
    const before = c.n("a").ledger.get().encode();
    const d = heddleStatic({
      seam: c.net.join("d"), self: r("d"), root: g("root"),
      supply: new Map([[r("a"), 100n], [r("b"), 100n], [r("c"), 100n], [r("d"), 5n]]), topology: FLAT,
      config: { ...c.config, random: seededRandom(99), store: memoryStore() },
    });
    expect(d.genesisDigest).not.toBe(c.n("a").genesisDigest);
    d.advertise(e("e1"), HUNGRY);
    d.schedule(g("root"));
    c.timers.advanceBy(2_000);
    for (const p of ["a", "b", "c"]) {
      expect(c.n(p).metrics().framesRejected["genesis-mismatch"]).toBeGreaterThan(0);
      expect(c.n(p).ledger.get().encode()).toBe(before);
    }
    await d.shutdown();
    await c.shutdown();
  });

  it("A2 two peers, 100/100, both hungry on e1, e2, both schedule: issued(e1) = issued(e2) = 100", async () => {
    const c = new Cluster({ seed: 2, supply: { a: 100n, b: 100n } });
    for (const p of ["a", "b"]) for (const x of ["e1", "e2"]) c.n(p).advertise(e(x), HUNGRY);
    c.timers.advanceBy(5);
    c.n("a").schedule(g("root"));
    c.n("b").schedule(g("root"));
    c.settle();
    expect(c.n("a").ledger.get().equals(c.n("b").ledger.get())).toBe(true);
    expect(issued(c, "a", "e1")).toBe(100n);
    expect(issued(c, "a", "e2")).toBe(100n);
    await c.shutdown();
  });

  it("A4 every frame delivered twice: issued(e1) + issued(e2) = exactly 200", async () => {
    const c = new Cluster({ seed: 4, supply: { a: 100n, b: 100n }, faults: { dropRate: 0, duplicateRate: 1, delayMs: [0, 20] } });
    for (const p of ["a", "b"]) for (const x of ["e1", "e2"]) c.n(p).advertise(e(x), HUNGRY);
    c.timers.advanceBy(30);
    c.n("a").schedule(g("root"));
    c.n("b").schedule(g("root"));
    c.settle();
    expect(issued(c, "b", "e1")! + issued(c, "b", "e2")!).toBe(200n);
    await c.shutdown();
  });

  it("A5 complete is exactly once across repeats, a crash/restart and its delta delivered 5× to a second peer", async () => {
    const c = new Cluster({ seed: 5, supply: { a: 100n, b: 0n } });
    const spy = c.net.join("spy");
    const frames: Uint8Array[] = [];
    spy.onFrame((from, f) => {
      if (from === "a" && f[0] === 1 && f[1] === WIRE_VERSION && f[2] === 1) frames.push(f.slice()); // ledger channel, delta
    });
    c.timers.advanceBy(10);
    c.n("a").advertise(e("e1"), HUNGRY);
    c.n("a").schedule(g("root"));
    const res = c.n("a").reserve(g("g1"), 10n);
    if (!res.ok) throw new Error(res.refusal.kind);
    c.timers.advanceBy(10);
    frames.length = 0;
    expect(c.n("a").complete(res.id, 7n)).toEqual({ ok: true, charged: 7n, outcome: "charged" });
    expect(c.n("a").complete(res.id, 7n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    expect(c.n("a").complete(res.id, 7n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    c.timers.advanceBy(1);
    expect(frames.length).toBe(1); // the charge's delta
    for (let i = 0; i < 5; i++) c.peers.get("a")!.seam.send("b", frames[0]!);
    c.timers.advanceBy(10);
    expect(c.n("b").ledger.get().edge(e("e1"))!.spent).toBe(7n);
    c.crash("a");
    c.restart("a");
    expect(c.n("a").complete(res.id, 7n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    for (let i = 0; i < 5; i++) c.peers.get("a")!.seam.send("b", frames[0]!);
    c.settle();
    for (const p of ["a", "b"]) expect(c.n(p).ledger.get().edge(e("e1"))!.spent).toBe(7n);
    await c.shutdown();
  });

  it("A6 out-of-range cost leaves the reservation intact; a valid one charges it", async () => {
    const c = new Cluster({ seed: 6, supply: { a: 100n } });
    c.n("a").advertise(e("e1"), HUNGRY);
    c.n("a").schedule(g("root"));
    const res = c.n("a").reserve(g("g1"), 10n);
    if (!res.ok) throw new Error(res.refusal.kind);
    expect(c.n("a").complete(res.id, 11n)).toEqual({ ok: false, refusal: { kind: "cost-out-of-range", actualCost: 11n, maximumCost: 10n } });
    expect(c.n("a").earmarked(g("g1"))).toBe(10n);
    expect(c.n("a").openReservations().map((x) => x.id)).toEqual([res.id]);
    expect(c.n("a").complete(res.id, 8n)).toEqual({ ok: true, charged: 8n, outcome: "charged" });
    expect(c.n("a").earmarked(g("g1"))).toBe(0n);
    expect(c.n("a").ledger.get().edge(e("e1"))!.spent).toBe(8n);
    await c.shutdown();
  });

  it("A7 stale demand grants nothing, never touches holdings, and never gates reserve", async () => {
    const c = new Cluster({ seed: 7, supply: { a: 100n }, config: { demandTtlMs: 30_000 } });
    const a = c.n("a");
    a.advertise(e("e1"), D(60n, 10n));
    a.schedule(g("root"));
    expect(issued(c, "a", "e1")).toBe(60n);
    const held = a.ledger.get().holdings(g("g1"), r("a"));
    c.timers.advanceBy(31_000);
    expect(a.demand(e("e1"))).toEqual(DEMAND_NONE);
    expect(a.schedule(g("root")).grants).toEqual([]);
    expect(issued(c, "a", "e1")).toBe(60n);
    expect(a.ledger.get().holdings(g("g1"), r("a"))).toBe(held);
    expect(a.reserve(g("g1"), 10n).ok).toBe(true);
    a.advertise(e("e2"), HUNGRY);
    expect(a.reserve(g("g2"), 1n)).toEqual({ ok: false, refusal: { kind: "insufficient", leaf: g("g2"), available: 0n, requested: 1n } });
    await c.shutdown();
  });

  it("A9 earmarked units at a parent are never delegated; conservation holds after completion", async () => {
    const c = new Cluster({ seed: 9, supply: { a: 100n } });
    const a = c.n("a");
    a.advertise(e("e1"), HUNGRY);
    a.schedule(g("root"));
    expect(a.ledger.get().holdings(g("g1"), r("a"))).toBe(100n);
    const res = a.reserve(g("g1"), 50n);
    if (!res.ok) throw new Error(res.refusal.kind);
    expect(a.prepare(rec("e3", "g1", "g3")).ok).toBe(true);
    expect(a.activate(e("e3")).ok).toBe(true);
    a.advertise(e("e3"), HUNGRY);
    const s = a.schedule(g("g1"));
    expect(s.grants.reduce((x, y) => x + y.amount, 0n)).toBe(50n);
    expect(issued(c, "a", "e3")).toBe(50n);
    expect(a.complete(res.id, 50n).ok).toBe(true);
    const l = a.ledger.get();
    expect(l.holdings(g("g1"), r("a"))).toBe(0n);
    expect(l.validate()).toEqual([]);
    const k = conservation(l);
    expect(k.held + k.leafSpent).toBe(100n);
    await c.shutdown();
  });

  it("A10 the captured path is charged even after the leaf gained a PREPARED child", async () => {
    const c = new Cluster({ seed: 10, supply: { a: 100n } });
    const a = c.n("a");
    a.advertise(e("e1"), HUNGRY);
    a.schedule(g("root"));
    const res = a.reserve(g("g1"), 10n);
    if (!res.ok) throw new Error(res.refusal.kind);
    expect(a.prepare(rec("e3", "g1", "g3")).ok).toBe(true);
    expect(a.complete(res.id, 6n)).toEqual({ ok: true, charged: 6n, outcome: "charged" });
    expect(a.ledger.get().edge(e("e1"))!.spent).toBe(6n);
    expect(a.earmarked(g("g1"))).toBe(0n);
    expect(a.complete(res.id, 6n).ok && a.ledger.get().edge(e("e1"))!.spent).toBe(6n);
    await c.shutdown();
  });

  it("A10 the captured path is charged even after the leaf was quarantined by a second ACTIVE inbound edge", async () => {
    const c = new Cluster({ seed: 101, supply: { a: 100n, b: 100n } });
    const [a, b] = [c.n("a"), c.n("b")];
    c.net.partition([["a"], ["b"]], "silent");
    expect(a.prepare(rec("e5", "root", "g5")).ok && a.activate(e("e5")).ok).toBe(true);
    expect(b.prepare(rec("e6", "g2", "g5")).ok && b.activate(e("e6")).ok).toBe(true);
    a.advertise(e("e5"), HUNGRY);
    a.schedule(g("root"));
    const res = a.reserve(g("g5"), 10n);
    if (!res.ok) throw new Error(res.refusal.kind);
    c.net.heal();
    c.settle();
    expect(a.ledger.get().lineageOf(g("g5"))).toBeNull();
    expect(a.ledger.get().holdings(g("g5"), r("a"))).toBe(0n);
    expect(a.complete(res.id, 7n)).toEqual({ ok: true, charged: 7n, outcome: "charged" });
    expect(a.earmarked(g("g5"))).toBe(0n);
    c.settle();
    for (const p of [a, b]) expect(p.ledger.get().edge(e("e5"))!.spent).toBe(7n);
    expect(a.complete(res.id, 7n).ok && a.ledger.get().edge(e("e5"))!.spent).toBe(7n);
    await c.shutdown();
  });

  it("A12 partitioned peers diverge within their bound and converge after heal", async () => {
    const c = new Cluster({ seed: 12, supply: { a: 100n, b: 100n } });
    c.net.partition([["a"], ["b"]], "silent");
    for (const p of ["a", "b"]) for (const x of ["e1", "e2"]) c.n(p).advertise(e(x), HUNGRY);
    c.n("a").advertise(e("e1"), D(100n, 10n));
    c.n("a").advertise(e("e2"), D(0n, 0n));
    c.n("a").schedule(g("root"));
    c.n("b").schedule(g("root"));
    c.timers.advanceBy(1_000);
    expect(c.converged()).toBe(false);
    for (const p of ["a", "b"]) expect(c.n(p).boundMetrics(g("root")).isConsistent).toBe(true);
    c.net.heal();
    c.settle();
    expect(c.n("a").ledger.get().equals(c.n("b").ledger.get())).toBe(true);
    await c.shutdown();
  });

  it("A14 no re-spend after a crash whose deltas never left; a failing store fails the node closed", async () => {
    const c = new Cluster({ seed: 14, supply: { a: 0n, b: 100n } });
    const b = () => c.n("b");
    c.net.setFaults("b", "*", { dropRate: 1, duplicateRate: 0, delayMs: [0, 0] });
    b().advertise(e("e1"), HUNGRY);
    b().advertise(e("e2"), HUNGRY);
    expect(b().schedule(g("root")).grants.length).toBeGreaterThan(0);
    c.crash("b");
    c.restart("b");
    expect(b().ledger.get().holdings(g("root"), r("b"))).toBe(0n);
    b().advertise(e("e1"), HUNGRY);
    b().advertise(e("e2"), HUNGRY);
    expect(b().schedule(g("root")).grants).toEqual([]);
    c.net.setFaults("b", "*", { dropRate: 0, duplicateRate: 0, delayMs: [0, 0] });
    c.settle();
    expect(issued(c, "a", "e1")! + issued(c, "a", "e2")!).toBe(100n);
    await c.shutdown();

    // Variant: the store throws on commit.
    let fail = false;
    const f = new Cluster({ seed: 141, supply: { a: 0n, b: 100n }, wrapStore: (id, s) => (id === "b" ? failingStore(s, () => fail) : s) });
    const fb = f.peers.get("b")!;
    fb.node.advertise(e("e1"), HUNGRY);
    f.timers.advanceBy(10);
    const before = f.n("a").ledger.get().encode();
    const sentBefore = f.n("b").metrics().deltasPublished;
    fail = true;
    expect(fb.node.schedule(g("root"))).toEqual({ grants: [], seated: [], clamped: [] });
    expect(fb.events.filter((x) => x.kind === "persist-failed")).toHaveLength(1);
    const pf = fb.events.find((x) => x.kind === "persist-failed");
    expect(pf && pf.kind === "persist-failed" && pf.error instanceof InjectedCommitFailure).toBe(true);
    expect(fb.node.metrics().failed).toBe(true);
    expect(fb.node.metrics().deltasPublished).toBe(sentBefore);
    expect(fb.node.ledger.get().edge(e("e1"))!.issued).toBe(0n);
    expect(fb.node.reserve(g("g1"), 1n)).toEqual({ ok: false, refusal: { kind: "closed" } });
    expect(fb.node.complete("x", 1n)).toEqual({ ok: false, refusal: { kind: "closed" } });
    expect(fb.node.prepare(rec("e7", "root", "g7"))).toEqual({ ok: false, refusal: { kind: "closed" } });
    fail = false;
    expect(fb.node.schedule(g("root")).grants).toEqual([]);
    f.timers.advanceBy(2_000);
    expect(f.n("a").ledger.get().encode()).toBe(before);
    await f.shutdown();
  });

  it("A16 wake clamp: a waking child does not collect credit for time it did not compete", async () => {
    const c = new Cluster({ seed: 16, supply: { a: 500n } });
    const a = c.n("a");
    a.advertise(e("e1"), D(200n, 10n));
    a.schedule(g("root"));
    expect(issued(c, "a", "e1")).toBe(200n);
    expect(issued(c, "a", "e2")).toBe(0n);
    expect(a.parentVirtualTime(g("root"))!.equals(Rational.of(200n))).toBe(true);
    a.advertise(e("e1"), D(10_000n, 10n));
    a.advertise(e("e2"), D(10_000n, 10n));
    a.schedule(g("root"));
    expect(issued(c, "a", "e1")).toBe(350n);
    expect(issued(c, "a", "e2")).toBe(150n);
    await c.shutdown();
  });

  it("A17 a newborn and a waker settle in one round against one front", async () => {
    const c = new Cluster({ seed: 17, supply: { a: 500n } });
    const a = c.n("a");
    a.advertise(e("e1"), D(200n, 10n));
    a.schedule(g("root"));
    expect(a.prepare(rec("e3", "root", "g3")).ok && a.activate(e("e3")).ok).toBe(true);
    for (const x of ["e1", "e2", "e3"]) a.advertise(e(x), D(10_000n, 0n));
    const s = a.schedule(g("root"));
    expect(s.grants).toEqual([]);
    expect(s.seated).toEqual([e("e3")]);
    const gauge = a.ledger.get().gauge(e("e3"))!;
    expect(gauge.floor.equals(Rational.of(200n)) && gauge.folded === 0n).toBe(true);
    for (const x of ["e1", "e2", "e3"]) a.advertise(e(x), D(10_000n, 10n));
    a.schedule(g("root"));
    expect([issued(c, "a", "e1"), issued(c, "a", "e2"), issued(c, "a", "e3")]).toEqual([300n, 100n, 100n]);
    await c.shutdown();
  });

  it("A18 first sight is not a wake", async () => {
    const c = new Cluster({ seed: 18, supply: { a: 100n, b: 200n } });
    const [a, b] = [c.n("a"), c.n("b")];
    expect(b.prepare(rec("e3", "root", "g3")).ok && b.activate(e("e3")).ok).toBe(true);
    b.advertise(e("e1"), D(10_000n, 10n));
    b.schedule(g("root"));
    c.settle();
    expect(issued(c, "a", "e1")).toBe(200n);
    expect(a.ledger.get().gauge(e("e3"))!.floor.equals(Rational.ZERO)).toBe(true);
    a.advertise(e("e1"), D(10_000n, 10n));
    a.advertise(e("e3"), D(10_000n, 10n));
    a.schedule(g("root"));
    expect(issued(c, "a", "e3")).toBe(100n);
    expect(issued(c, "a", "e1")).toBe(200n);
    await c.shutdown();
  });

  it("A19 re-waking cannot refund a clamp (stored offsets are max-joined, not replaced)", async () => {
    const c = new Cluster({ seed: 19, supply: { a: 220n }, topology: [...FLAT, rec("e3", "root", "g3")] });
    const a = c.n("a");
    const set = (d1: ReturnType<typeof D>, d2: ReturnType<typeof D>) => {
      a.advertise(e("e1"), d1);
      a.advertise(e("e2"), d2);
      a.advertise(e("e3"), D(10_000n, 0n));
    };
    const probe = (d1: ReturnType<typeof D>, d2: ReturnType<typeof D>) => {
      a.advertise(e("e1"), DEMAND_NONE);
      a.advertise(e("e3"), DEMAND_NONE);
      a.advertise(e("e2"), D(10_000n, 10n));
      const v = a.parentVirtualTime(g("root"))!;
      set(d1, d2);
      return v;
    };
    set(D(200n, 10n), DEMAND_NONE);
    a.schedule(g("root"));
    set(D(10_000n, 0n), D(20n, 10n));
    a.schedule(g("root"));
    expect(issued(c, "a", "e2")).toBe(20n);
    expect(probe(D(10_000n, 0n), D(20n, 10n)).equals(Rational.of(120n))).toBe(true);
    set(D(10_000n, 0n), DEMAND_NONE);
    a.schedule(g("root"));
    set(DEMAND_NONE, D(10_000n, 10n));
    a.schedule(g("root"));
    expect(probe(DEMAND_NONE, D(10_000n, 10n)).equals(Rational.of(120n))).toBe(true);
    await c.shutdown();
  });

  it("A22 end to end: a two-level tree under partition, schedules on both sides, heal, settle", async () => {
    const c = new Cluster({ seed: 22, supply: { a: 120n, b: 120n }, topology: [rec("ta", "root", "tenant-a"), rec("tb", "root", "tenant-b")] });
    const a = c.n("a");
    expect(a.prepare(rec("ti", "tenant-a", "interactive", 3n)).ok && a.activate(e("ti")).ok).toBe(true);
    expect(a.prepare(rec("tbt", "tenant-a", "batch", 1n)).ok && a.activate(e("tbt")).ok).toBe(true);
    c.settle();
    c.net.partition([["a"], ["b"]], "silent");
    for (const p of ["a", "b"]) for (const x of ["ta", "tb", "ti", "tbt"]) c.n(p).advertise(e(x), HUNGRY);
    for (let i = 0; i < 3; i++) {
      for (const p of ["a", "b"]) {
        c.n(p).schedule(g("root"));
        c.n(p).schedule(g("tenant-a"));
      }
      c.timers.advanceBy(100);
    }
    c.net.heal();
    c.settle();
    const l = a.ledger.get();
    expect(l.equals(c.n("b").ledger.get())).toBe(true);
    expect(l.validate()).toEqual([]);
    expect(l.edge(e("ti"))!.issued > 0n && l.edge(e("tbt"))!.issued > 0n).toBe(true);
    for (const p of ["a", "b"]) for (const x of ["ta", "tb", "ti", "tbt"]) c.n(p).advertise(e(x), HUNGRY);
    expect(a.boundMetrics(g("tenant-a")).isConsistent).toBe(true);
    await c.shutdown();
  });
});

describe("HeddleConfig and heddleStatic validation (§12, §13.1)", () => {
  it("a bad config field throws RangeError naming it; bad static inputs throw BootstrapError", async () => {
    const c = new Cluster({ seed: 30, supply: { a: 1n } });
    const base = { ...c.config, random: seededRandom(1), store: memoryStore() };
    let k = 0;
    const mk = (o: Partial<Parameters<typeof heddleStatic>[0]>, cfg: object = {}) => () => {
      const id = `z${k++}`;
      return heddleStatic({ seam: c.net.join(id), self: r(id), root: g("root"), supply: new Map([[r(id), 1n]]), topology: FLAT, config: { ...base, ...cfg }, ...o });
    };
    for (const [field, v] of [["maxGrantsPerSchedule", 0], ["antiEntropyIntervalMs", -1], ["maxFrameBytes", 100], ["compactAfterPatches", 1.5], ["demandTtlMs", 0]] as const) {
      expect(mk({}, { [field]: v })).toThrow(new RegExp(`HeddleConfig.${field}`));
      expect(mk({}, { [field]: v })).toThrow(RangeError);
    }
    expect(mk({}, { maxHoldingsPerPeer: 0n })).toThrow(/maxHoldingsPerPeer/);
    expect(mk({}, { heartbeat: { intervalMs: 10, timeoutMs: 5, reconnectWindowMs: 100 } })).toThrow(/heartbeat/);
    expect(mk({ self: r("other") })).toThrow(BootstrapError);
    expect(mk({ self: r("other") })).toThrow(/differs from seam.self/);
    const seam = c.net.join("q1");
    const st = (o: object) => () => heddleStatic({ seam, self: r("q1"), root: g("root"), supply: new Map([[r("q1"), 1n]]), topology: FLAT, config: base, ...o });
    expect(st({ supply: new Map([[r("q"), 1n]]) })).toThrow(/supply: self "q1" is not in the roster/);
    expect(st({ supply: new Map([[r("q1"), -1n]]) })).toThrow(/supply: amount/);
    expect(st({ supply: new Map([[r("q1"), 1n << 62n], [r("q2"), 1n << 62n]]) })).toThrow(/exceeds 2\^63/);
    expect(st({ topology: [rec("e1", "root", "g1"), rec("e1", "root", "g2")] })).toThrow(/record id "e1" appears twice/);
    expect(st({ topology: [rec("e1", "root", "g1"), rec("e2", "root", "g1")] })).toThrow(BootstrapError);
    // ledger.md ⟨1.1⟩: a tree under a group that is not the mint root would start detached
    expect(st({ topology: [rec("e1", "root", "g1"), rec("e2", "elsewhere", "g2")] })).toThrow(/group "elsewhere" does not hang from the root "root"/);
    await c.shutdown();
  });
});

void EntitlementLedger;
