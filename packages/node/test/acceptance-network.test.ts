import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ByteWriter, GroupId, type EntitlementLedger } from "@heddle/ledger";
import { heddleStatic, memoryStore, seededRandom, type NodeEvent, type RejectReason, type Seam } from "../src/index.ts";
import { canonicalBytes, encodeLedgerFrame } from "../src/testing.ts";
import { Cluster, D, FLAT, HUNGRY, conservation, e, g, r, rec } from "./node-sim.ts";

const withTag = (tag: number, body: Uint8Array) => {
  const out = new Uint8Array(body.length + 1);
  out[0] = tag;
  out.set(body, 1);
  return out;
};
const enc = new TextEncoder();
const totalRejected = (m: Record<RejectReason, number>) => Object.values(m).reduce((a, b) => a + b, 0);

describe("node.md §16 acceptance on the integrated node (network)", () => {
  it("A8 a demand frame naming another peer's slot → not-author; a zero-denominator gauge floor → bad-value; nothing joined", async () => {
    const c = new Cluster({ seed: 8, supply: { a: 100n, c: 100n } });
    const b = c.net.join("b");
    c.timers.advanceBy(10);
    const a = c.n("a");
    const before = a.ledger.get().encode();
    const m0 = a.metrics().framesRejected;
    b.send("a", withTag(2, canonicalBytes({ v: 1, kind: "board", replica: "c", clock: 5n, entries: [["e1", 10n, 10n]] })));
    c.timers.advanceBy(1);
    const m1 = a.metrics().framesRejected;
    expect(m1["not-author"]).toBe(m0["not-author"] + 1);
    expect(a.demand(e("e1"))).toEqual({ targetOutstanding: 0n, maximumUsefulGrant: 0n });
    // A gauge floor 1/0 (the encoder never writes one: the bytes are written by hand).
    const raw = new ByteWriter().u8(1).uint(1).uint(2).bytes(enc.encode("e1")).uint(1 << 8).uint(1).uint(1).zbig(1n).ubig(0n).ubig(0n).finish();
    const value = { encodeBinary: () => raw } as unknown as EntitlementLedger;
    b.send("a", withTag(1, encodeLedgerFrame({ kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value, ack: null }, "b", a.genesisDigest)));
    c.timers.advanceBy(1);
    const m2 = a.metrics().framesRejected;
    expect(m2["bad-value"]).toBe(m1["bad-value"] + 1);
    expect(totalRejected(m2)).toBe(totalRejected(m0) + 2);
    expect(a.ledger.get().encode()).toBe(before);
    await c.shutdown();
  });

  it("A11 fairness within the bound: N ∈ {2, 3}, weights 3:2:1, a silent partition in which every peer schedules everything", async () => {
    for (const N of [2, 3]) {
      const ids = ["a", "b", "c"].slice(0, N);
      const c = new Cluster({
        seed: 110 + N,
        supply: Object.fromEntries(ids.map((id) => [id, 100n])),
        topology: [rec("w3", "root", "x3", 3n), rec("w2", "root", "x2", 2n), rec("w1", "root", "x1", 1n)],
        config: { maxGrantsPerSchedule: 2 },
      });
      const hungry = () => {
        for (const id of ids) for (const x of ["w1", "w2", "w3"]) c.n(id).advertise(e(x), HUNGRY);
      };
      hungry();
      c.timers.advanceBy(5);
      for (const id of ids) c.n(id).schedule(g("root"));
      c.settle();
      const l0 = c.n("a").ledger.get();
      const H = ids.reduce((s, id) => s + l0.holdings(g("root"), r(id)), 0n);
      c.net.partition(ids.map((id) => [id]), "silent");
      for (let step = 0; step < 200; step++) {
        let any = false;
        for (const id of ids) {
          any = c.n(id).schedule(g("root")).grants.length > 0 || any;
          for (const o of ids) expect(c.n(o).boundMetrics(g("root")).isConsistent).toBe(true);
        }
        c.timers.advanceBy(10);
        if (!any) break;
      }
      for (const id of ids) expect(c.n(id).ledger.get().holdings(g("root"), r(id))).toBe(0n);
      c.net.heal();
      c.settle();
      hungry();
      const m = c.n("a").boundMetrics(g("root"));
      expect(m.observedDeviation <= H + BigInt(N) * 10n).toBe(true);
      expect(m.roster).toBe(N);
      expect(m.configuredWorstCase).toBe(BigInt(N) * 1_000n + 10n);
      await c.shutdown();
    }
  });

  it("A13 stranding: a crashed peer's holdings and earmarks stay put; nobody reclaims; the rebuilt peer completes normally", async () => {
    const c = new Cluster({ seed: 13, supply: { a: 100n, b: 100n } });
    const [a, b] = [() => c.n("a"), () => c.n("b")];
    b().advertise(e("e1"), D(50n, 50n));
    b().schedule(g("root"));
    const res = b().reserve(g("g1"), 10n);
    if (!res.ok) throw new Error(res.refusal.kind);
    c.settle();
    const bAtG1 = a().ledger.get().holdings(g("g1"), r("b"));
    const bAtRoot = a().ledger.get().holdings(g("root"), r("b"));
    expect(bAtG1).toBe(50n);
    c.crash("b", "silent");
    let aGranted = 0n;
    const aRoot0 = a().ledger.get().holdings(g("root"), r("a"));
    const check = () => {
      const l = a().ledger.get();
      expect(l.holdings(g("g1"), r("b"))).toBe(bAtG1);
      expect(l.holdings(g("root"), r("b"))).toBe(bAtRoot);
      expect(l.holdings(g("root"), r("a"))).toBe(aRoot0 - aGranted);
    };
    for (const ms of [2_000, 90_000]) {
      for (let t = 0; t < ms; t += 1_000) {
        a().advertise(e("e2"), D(30n, 10n));
        aGranted += a().schedule(g("root")).grants.reduce((s, x) => s + x.amount, 0n);
        c.timers.advanceBy(1_000);
        check();
      }
    }
    const kinds = c.peers.get("a")!.partitions.filter((p) => p.peer === "b").map((p) => p.kind);
    expect(kinds.slice(0, 2)).toEqual(["unresponsive", "lost"]);
    c.restart("b");
    expect(b().earmarked(g("g1"))).toBe(10n);
    expect(b().complete(res.id, 4n)).toEqual({ ok: true, charged: 4n, outcome: "charged" });
    c.settle();
    expect(a().ledger.get().edge(e("e1"))!.spent).toBe(4n);
    await c.shutdown();
  });

  it("A15 liveness timings on the node: silent cut, lost, heal-before-window, remonitor, disconnect", async () => {
    const c = new Cluster({ seed: 15, supply: { a: 1n, b: 1n, c: 1n } });
    const ev = () => c.peers.get("a")!.partitions.filter((p) => p.peer === "b");
    c.timers.advanceBy(6_000);
    c.net.partition([["a", "c"], ["b"]], "silent");
    const t0 = c.timers.now();
    while (ev().length === 0 && c.timers.now() - t0 < 25_000) c.timers.advanceBy(100);
    expect(ev()[0]).toMatchObject({ kind: "unresponsive", reason: "timeout" });
    expect(c.timers.now() - t0 <= 20_000).toBe(true);
    expect(c.n("a").unreachable.get().has(r("b"))).toBe(true);
    const t1 = c.timers.now();
    while (ev().length === 1 && c.timers.now() - t1 < 70_000) c.timers.advanceBy(100);
    expect(ev()[1]).toMatchObject({ kind: "lost" });
    expect(c.timers.now() - t1 <= 65_000).toBe(true);
    c.net.heal();
    c.timers.advanceBy(30_000);
    expect(c.n("a").unreachable.get().has(r("b"))).toBe(true);
    c.n("a").remonitor(r("b"));
    expect(c.n("a").unreachable.get().has(r("b"))).toBe(false);
    c.timers.advanceBy(6_000);
    c.net.partition([["a", "c"], ["b"]], "silent");
    c.timers.advanceBy(20_000);
    expect(ev()[2]).toMatchObject({ kind: "unresponsive", reason: "timeout" });
    // heal before the window → recovered
    c.net.heal();
    c.timers.advanceBy(12_000);
    expect(ev()[3]).toMatchObject({ kind: "recovered" });
    // disconnect → transport-closed at the next tick
    const evc = () => c.peers.get("a")!.partitions.filter((p) => p.peer === "c");
    c.net.partition([["a", "b"], ["c"]], "disconnect");
    c.timers.advanceBy(5_100);
    expect(evc()[0]).toMatchObject({ kind: "unresponsive", reason: "transport-closed" });
    await c.shutdown();
  });

  it("A15 a backpressure signal from the seam → unresponsive(backpressure) at the next tick", async () => {
    const c = new Cluster({ seed: 151, supply: { b: 1n, x: 1n } });
    const inner = c.net.join("a");
    const fire: ((peer: string) => void)[] = [];
    const seam: Seam = {
      self: inner.self, maxFrameBytes: inner.maxFrameBytes, peers: inner.peers,
      send: (to, f) => inner.send(to, f), broadcast: (f) => inner.broadcast(f), onFrame: (fn) => inner.onFrame(fn),
      onBackpressure: (fn) => {
        fire.push(fn);
        return () => {};
      },
      close: () => inner.close(),
    };
    const a = heddleStatic({ seam, self: r("a"), root: g("root"), supply: new Map([[r("a"), 1n], [r("b"), 1n], [r("x"), 1n]]), topology: FLAT, config: { ...c.config, random: seededRandom(5), store: memoryStore() } });
    const evs: { kind: string; peer: string; reason?: string }[] = [];
    a.partitionEvents.subscribe((x) => evs.push(x));
    c.timers.advanceBy(6_000);
    expect(evs).toEqual([]);
    for (const f of fire) f("b");
    c.timers.advanceBy(5_100);
    expect(evs[0]).toMatchObject({ kind: "unresponsive", peer: "b", reason: "backpressure" });
    await a.shutdown();
    await c.shutdown();
  });

  it("A20 malformed input: 10 000 random and mutated frames per channel, oversize, wrong genesis — no throw, nothing joined, every frame counted, notices rate-limited", async () => {
    const N = Number(process.env.HEDDLE_A20_FRAMES ?? 10_000);
    const c = new Cluster({ seed: 20, supply: { a: 100n, honest: 100n }, config: { maxFrameBytes: 4_096 } });
    const mallory: Seam = c.net.join("mallory");
    const captured: Uint8Array[][] = [[], [], [], []];
    mallory.onFrame((from, f) => {
      if (from === "honest" && f.length > 1 && f[0]! >= 1 && f[0]! <= 3 && captured[f[0]!]!.length < 50) captured[f[0]!]!.push(f.slice());
    });
    c.timers.advanceBy(10);
    c.n("honest").advertise(e("e1"), HUNGRY);
    c.n("honest").schedule(g("root"));
    c.timers.advanceBy(6_000);
    const a = c.n("a");
    const events: NodeEvent[] = [];
    a.events.subscribe((x) => events.push(x));
    const before = a.ledger.get().encode();
    const rnd = seededRandom(2020);
    const counts0 = totalRejected(a.metrics().framesRejected);
    let sent = 0;
    let livenessAccepted = 0;
    const send = (f: Uint8Array, tag: number) => {
      const m = totalRejected(a.metrics().framesRejected);
      mallory.send("a", f);
      expect(() => c.timers.advanceBy(1)).not.toThrow();
      const d = totalRejected(a.metrics().framesRejected) - m;
      if (d === 0 && tag === 3) livenessAccepted++;
      else expect(d).toBe(1);
      sent++;
    };
    for (const tag of [1, 2, 3]) {
      expect(captured[tag]!.length).toBeGreaterThan(0);
      for (let i = 0; i < N; i++) {
        if (i % 2 === 0) {
          const len = Math.floor(rnd() * 200);
          const b = new Uint8Array(len);
          for (let k = 0; k < len; k++) b[k] = Math.floor(rnd() * 256);
          send(withTag(tag, b), tag);
        } else {
          const f = captured[tag]![Math.floor(rnd() * captured[tag]!.length)]!.slice();
          for (let k = 0, flips = 1 + Math.floor(rnd() * 3); k < flips; k++) f[1 + Math.floor(rnd() * (f.length - 1))] = Math.floor(rnd() * 256);
          send(f, tag);
        }
      }
    }
    send(withTag(1, new Uint8Array(5_000).fill(0x20)), 1);
    send(withTag(1, encodeLedgerFrame({ kind: "digest", inc: 1, digest: "0000000000000000", upThrough: 0 }, "mallory", "0000000000000000")), 1);
    expect(a.ledger.get().encode()).toBe(before);
    const rejected = a.metrics().framesRejected;
    expect(totalRejected(rejected) - counts0).toBe(sent - livenessAccepted);
    expect(rejected.oversize).toBeGreaterThan(0);
    expect(rejected["genesis-mismatch"]).toBeGreaterThan(0);
    // at most one notice per (peer, reason) per interval: the whole run is shorter than 60 s
    expect(c.timers.now() < 60_000 + 6_000).toBe(true);
    const notices = events.filter((x) => x.kind === "frame-rejected") as { peer: string; reason: string }[];
    expect(new Set(notices.map((n) => `${n.peer}/${n.reason}`)).size).toBe(notices.length);
    await c.shutdown();
  }, 120_000);

  it("A21 bounded buffers: a cut-off peer never makes the buffer exceed maxPendingDeltas; it catches up by full state", async () => {
    const c = new Cluster({ seed: 21, supply: { a: 1_000n, b: 0n }, config: { maxPendingDeltas: 20 } });
    const a = c.n("a");
    a.advertise(e("e1"), HUNGRY);
    a.schedule(g("root"));
    c.settle();
    c.net.partition([["a"], ["b"]], "silent");
    for (let i = 0; i < 60; i++) {
      const res = a.reserve(g("g1"), 2n);
      if (!res.ok) throw new Error(res.refusal.kind);
      expect(a.complete(res.id, 1n).ok).toBe(true);
      expect(a.metrics().pendingDeltas <= 20).toBe(true);
      c.timers.advanceBy(10);
    }
    c.net.heal();
    c.settle();
    expect(c.n("b").ledger.get().edge(e("e1"))!.spent).toBe(60n);
    expect(a.metrics().peer.ledger.fullStatesSent).toBeGreaterThan(0);
    await c.shutdown();
  });

  it("A23 large state: 200 edges, 4 KiB frames — peers that missed more than the buffer holds get the full state in parts; an edge's issued never arrives without its gauge", async () => {
    const topology = Array.from({ length: 200 }, (_, i) => rec(`k${String(i).padStart(3, "0")}`, "root", `leaf${i}`));
    const c = new Cluster({ seed: 23, supply: { a: 10_000n, b: 0n, d: 0n }, topology: [], config: { maxFrameBytes: 4_096, maxPendingDeltas: 1 } });
    const a = c.n("a");
    let violations = 0;
    const watch = (id: string) =>
      c.n(id).ledger.subscribe((l) => {
        for (const s of l.childrenOf(GroupId("root"))) if (s.issued > 0n && l.gauge(s.attachment) === null) violations++;
      });
    watch("b");
    c.crash("d", "disconnect");
    c.net.partition([["a"], ["b"]], "disconnect");
    // Built after genesis, so records and lifecycles travel too (the genesis part of a state never does).
    for (const x of topology) expect(a.prepare(x).ok && a.activate(x.id).ok).toBe(true);
    for (const x of topology) a.advertise(x.id, D(10n, 10n));
    const s = a.schedule(g("root"));
    expect(s.grants.length).toBe(200);
    expect(a.ledger.get().encode().length).toBeGreaterThan(4 * 4_096);
    c.timers.advanceBy(1);
    // Two more deltas: the buffer (maxPendingDeltas 1) no longer holds the big one.
    expect(a.prepare(rec("k200", "root", "leaf200")).ok && a.activate(e("k200")).ok).toBe(true);
    c.timers.advanceBy(1);
    c.net.heal();
    c.restart("d");
    watch("d");
    c.settle();
    expect(violations).toBe(0);
    for (const id of ["b", "d"]) expect(c.n(id).ledger.get().edge(e("k199"))!.issued).toBe(10n);
    const m = a.metrics().peer.ledger;
    expect(m.fullStatesSent).toBeGreaterThan(0); // to the restarted peer, which asked for it
    expect(m.framesOut.state).toBeGreaterThan(m.fullStatesSent); // …in parts
    await c.shutdown();
  });

  it("A25 model-based: the node's reservations (reserve / complete / cancel / crash / restart) match a reference model", () => {
    type Op = { k: "reserve"; leaf: 0 | 1; max: number } | { k: "complete"; pick: number; frac: number } | { k: "cancel"; pick: number } | { k: "again"; pick: number } | { k: "crash" };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ k: fc.constant("reserve" as const), leaf: fc.constantFrom(0 as const, 1 as const), max: fc.integer({ min: -2, max: 40 }) }),
      fc.record({ k: fc.constant("complete" as const), pick: fc.nat(), frac: fc.integer({ min: -1, max: 11 }) }),
      fc.record({ k: fc.constant("cancel" as const), pick: fc.nat() }),
      fc.record({ k: fc.constant("again" as const), pick: fc.nat() }),
      fc.constant({ k: "crash" as const }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const c = new Cluster({ seed: 25, supply: { a: 100n } });
        const n = () => c.n("a");
        n().advertise(e("e1"), D(60n, 60n));
        n().advertise(e("e2"), D(40n, 40n));
        n().schedule(g("root"));
        const leaves = [g("g1"), g("g2")];
        const edges = [e("e1"), e("e2")];
        const model = { holdings: [60n, 40n], open: new Map<string, { leaf: number; max: bigint }>(), spent: [0n, 0n], done: [] as string[] };
        const ear = (i: number) => [...model.open.values()].filter((x) => x.leaf === i).reduce((s, x) => s + x.max, 0n);
        for (const o of ops) {
          if (o.k === "reserve") {
            const max = BigInt(o.max);
            const res = n().reserve(leaves[o.leaf]!, max);
            const avail = model.holdings[o.leaf]! - ear(o.leaf);
            if (max <= 0n) expect(res).toEqual({ ok: false, refusal: { kind: "invalid-cost", maximumCost: max } });
            else if (avail < max) expect(res).toEqual({ ok: false, refusal: { kind: "insufficient", leaf: leaves[o.leaf], available: avail, requested: max } });
            else {
              expect(res.ok).toBe(true);
              if (res.ok) model.open.set(res.id, { leaf: o.leaf, max });
            }
          } else if (o.k === "complete" || o.k === "cancel") {
            const ids = [...model.open.keys()];
            if (ids.length === 0) continue;
            const id = ids[o.pick % ids.length]!;
            const row = model.open.get(id)!;
            const cost = o.k === "cancel" ? 0n : (row.max * BigInt(o.frac)) / 10n + (o.frac === 11 ? 1n : 0n);
            const res = o.k === "cancel" ? n().cancel(id) : n().complete(id, cost);
            if (cost < 0n || cost > row.max) {
              expect(res).toEqual({ ok: false, refusal: { kind: "cost-out-of-range", actualCost: cost, maximumCost: row.max } });
            } else {
              expect(res).toEqual({ ok: true, charged: cost, outcome: "charged" });
              model.open.delete(id);
              model.holdings[row.leaf]! -= cost;
              model.spent[row.leaf]! += cost;
              model.done.push(id);
            }
          } else if (o.k === "again") {
            if (model.done.length === 0) continue;
            expect(n().complete(model.done[o.pick % model.done.length]!, 1n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
          } else {
            c.crash("a");
            c.restart("a");
          }
          for (const i of [0, 1]) {
            expect(n().earmarked(leaves[i]!)).toBe(ear(i));
            expect(n().available(leaves[i]!)).toBe(model.holdings[i]! - ear(i));
            expect(n().ledger.get().edge(edges[i]!)!.spent).toBe(model.spent[i]);
          }
          expect(n().openReservations().map((x) => x.id).sort()).toEqual([...model.open.keys()].sort());
        }
        expect(conservation(n().ledger.get()).negative).toEqual([]);
        void c.shutdown();
      }),
      { numRuns: Number(process.env.HEDDLE_RUNS ?? 100), seed: Number(process.env.HEDDLE_SEED ?? 2525) },
    );
  });
});
