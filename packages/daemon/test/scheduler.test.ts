// The daemon's scheduler spends this peer's holdings only toward the demand this peer stands itself.
import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { DemandLimitError } from "@heddle/node";
import { VirtualTimers } from "@heddle/node/testing";
import type { Demand } from "@heddle/policy";
import { describe, expect, it } from "vitest";
import { Scheduler, type StandingDemand } from "../src/scheduler.ts";
import { SCHEDULER_INTERVAL_TTL_DIVISOR } from "../src/config.ts";

function tree(): EntitlementLedger {
  let l = EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId("p1"), 100n]]), "scheduler-test");
  const edges: [string, string, string][] = [["root→a", "root", "a"], ["root→b", "root", "b"], ["a→batch", "a", "batch"], ["b→web", "b", "web"]];
  for (const [id, parent, child] of edges) {
    for (const step of [(x: EntitlementLedger) => x.prepare({ id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.ONE }), (x: EntitlementLedger) => x.activate(AttachmentId(id))]) {
      const r = step(l);
      if (!r.ok) throw new Error(r.refusal.kind);
      l = l.join(r.patch);
    }
  }
  return l;
}

function harness(maxSlot: number | (() => number) = Infinity, failing: ReadonlySet<string> = new Set(), memory?: { put(s: StandingDemand): void; drop(edge: AttachmentId): void }, intervalMs = 100) {
  let ledger = tree();
  const slot = new Map<string, Demand>();
  const advertiseMany = (changes: Iterable<readonly [AttachmentId, Demand]>) => {
    const next = new Map(slot);
    const list = [...changes];
    for (const [e, d] of list) d.targetOutstanding === 0n && d.maximumUsefulGrant === 0n ? next.delete(e) : next.set(e, d);
    const limit = typeof maxSlot === "number" ? maxSlot : maxSlot();
    if (next.size > limit) throw new DemandLimitError("maxDemandEntries", limit, "slot full");
    slot.clear();
    for (const [e, d] of next) slot.set(e, d);
    advertised.push(...list);
  };
  const scheduled: string[] = [];
  const advertised: (readonly [string, Demand])[] = [];
  const timers = new VirtualTimers();
  const errors: string[] = [];
  const s = new Scheduler({
    node: {
      ledger: { get: () => ledger } as never,
      advertiseMany,
      schedule: (p: GroupId) => {
        scheduled.push(p);
        if (failing.has(p)) throw new RangeError(`cannot plan ${p}`);
        return { grants: [], seated: [], clamped: [] } as never;
      },
    },
    root: GroupId("root"),
    timers,
    intervalMs,
    demandTtlMs: 3_000,
    maxStanding: 8,
    onError: (e) => errors.push((e as Error).message),
    ...(memory !== undefined ? { memory } : {}),
  });
  /** Applies ledger steps (each must be accepted) to the view the scheduler reads. */
  const apply = (...steps: ((x: EntitlementLedger) => ReturnType<EntitlementLedger["activate"]>)[]) => {
    for (const step of steps) {
      const r = step(ledger);
      if (!r.ok) throw new Error(r.refusal.kind);
      ledger = ledger.join(r.patch);
    }
  };
  return { s, scheduled, advertised, slot, timers, errors, apply };
}

describe("daemon scheduler", () => {
  it("schedules nothing while this peer stands no demand (other peers' demand is theirs to fill)", () => {
    const h = harness();
    h.s.tick();
    h.s.tick();
    expect(h.scheduled).toEqual([]);
  });

  it("at the largest scheduler.intervalMs the config allows, refreshes standing demand at least every demandTtlMs / 2 (node.md §6)", () => {
    const interval = 3_000 / SCHEDULER_INTERVAL_TTL_DIVISOR;
    const h = harness(Infinity, new Set(), undefined, interval);
    h.s.start();
    expect(h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 60_000).ok).toBe(true);
    const at: number[] = [];
    let seen = 0;
    for (let t = 0; t < 30_000; t += 10) {
      h.timers.advanceBy(10);
      for (; seen < h.advertised.length; seen++) if (h.advertised[seen]![0] === "a→batch") at.push(h.timers.now());
    }
    expect(at.length).toBeGreaterThan(10);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(3_000 / 2);
    h.s.stop();
  });

  it("schedules the parents along its own demand, top-down, and no other subtree", () => {
    const h = harness();
    const r = h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 10_000);
    expect(r.ok).toBe(true);
    h.s.tick();
    expect(h.scheduled).toEqual(["root", "a"]);
    expect(h.advertised.map(([e]) => e).sort()).toEqual(["a→batch", "root→a"]);
    // withdrawn: no more rounds
    h.scheduled.length = 0;
    h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 0n, maximumUsefulGrant: 0n }, 10_000);
    h.s.tick();
    expect(h.scheduled).toEqual([]);
  });

  it("a demand on an inner edge schedules only above it", () => {
    const h = harness();
    h.s.setDemand(AttachmentId("root→b"), { targetOutstanding: 5n, maximumUsefulGrant: 5n }, 10_000);
    h.s.tick();
    expect(h.scheduled).toEqual(["root"]);
  });

  it("a demand whose roll-up would not fit the slot is refused, stores nothing, and the rest keeps being scheduled", () => {
    const h = harness(3);
    expect(h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 10_000).ok).toBe(true); // a→batch, root→a
    const r = h.s.setDemand(AttachmentId("b→web"), { targetOutstanding: 5n, maximumUsefulGrant: 5n }, 10_000); // + b→web, root→b = 4
    expect(r).toEqual({ ok: false, refusal: { kind: "board-full", limit: "maxDemandEntries", value: 3 } });
    expect(h.s.standing().map((d) => d.edge)).toEqual(["a→batch"]);
    expect([...h.s.advertised().keys()].sort()).toEqual(["a→batch", "root→a"]);
    expect([...h.slot.keys()].sort()).toEqual(["a→batch", "root→a"]);
    h.scheduled.length = 0;
    h.s.tick();
    expect(h.scheduled).toEqual(["root", "a"]);
    // an inner edge already in the slot fits
    expect(h.s.setDemand(AttachmentId("root→a"), { targetOutstanding: 60n, maximumUsefulGrant: 10n }, 10_000).ok).toBe(true);
    expect([...h.slot.keys()].sort()).toEqual(["a→batch", "root→a"]);
    expect(h.slot.get("root→a")!.targetOutstanding).toBe(60n);
  });

  it("says when the refresh keeps failing: since when, why, and which advertised entries have lapsed on the peers", () => {
    let limit = 3;
    const h = harness(() => limit); // demandTtlMs 3 000: a refresh is due 1 000 ms after the last advertisement
    expect(h.s.refresh()).toEqual({ ok: true, lastSuccessAt: null, failing: null });
    expect(h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 1_000_000).ok).toBe(true);
    expect(h.s.refresh()).toEqual({ ok: true, lastSuccessAt: 0, failing: null });
    limit = 1; // the slot no longer holds the rolled-up demand (as after a reshape that lengthened the lineages)
    const tickTo = (t: number) => {
      while (h.timers.now() < t) {
        h.timers.advanceBy(100);
        h.s.tick();
      }
    };
    tickTo(900); // nothing due yet: a refresh with nothing to send succeeds
    expect(h.s.refresh()).toEqual({ ok: true, lastSuccessAt: 900, failing: null });
    tickTo(1_100);
    expect(h.s.refresh()).toEqual({
      ok: false,
      lastSuccessAt: 900,
      // the refresh fell due at 1 000 (a third of the TTL) and has failed since, every tick
      // (unadvertised 0: the slot holds what is wanted, only its refresh fails)
      failing: { code: "board-full", limit: "maxDemandEntries", value: 1, message: "DemandLimitError: slot full", since: 1_000, lastAt: 1_100, count: 2, unadvertised: 0 },
    });
    tickTo(2_900);
    expect(h.s.advertisements().map((a) => [a.edge, a.advertisedAt, a.lapsesAt, a.live])).toEqual([["a→batch", 0, 3_000, true], ["root→a", 0, 3_000, true]]);
    expect([...h.s.advertised().keys()].sort()).toEqual(["a→batch", "root→a"]);
    tickTo(3_000); // their lease on the peers has lapsed: listed, but not as advertised
    expect(h.s.advertisements().map((a) => [a.edge, a.live])).toEqual([["a→batch", false], ["root→a", false]]);
    expect(h.s.advertised().size).toBe(0);
    expect(h.s.refresh().failing).toMatchObject({ since: 1_000, lastAt: 3_000, count: 21 });
    limit = 3;
    tickTo(3_100);
    expect(h.s.refresh()).toEqual({ ok: true, lastSuccessAt: 3_100, failing: null });
    expect(h.s.advertisements().map((a) => [a.edge, a.advertisedAt, a.live])).toEqual([["a→batch", 3_100, true], ["root→a", 3_100, true]]);
  });

  it("a parent whose round throws does not starve the others; the same failure is reported once a minute", () => {
    const h = harness(Infinity, new Set(["root"]));
    h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 1_000_000);
    h.s.tick();
    expect(h.scheduled).toEqual(["root", "a"]); // "a" still scheduled after root threw
    expect(h.errors).toEqual(["schedule(root): cannot plan root"]);
    for (let i = 0; i < 100; i++) {
      h.timers.advanceBy(100);
      h.s.tick();
    }
    expect(h.scheduled.filter((p) => p === "a")).toHaveLength(101);
    expect(h.errors).toHaveLength(1); // 10 s of failures every tick: held back
    h.timers.advanceBy(60_000);
    h.s.tick();
    expect(h.errors).toHaveLength(2);
    expect(h.errors[1]).toMatch(/^schedule\(root\): cannot plan root \(and \d+ more times in the last \d+ s\)$/);
    // listed for the status while it keeps failing, gone two minutes after it stopped
    expect(h.s.failures()).toEqual([{ where: "schedule(root)", message: "RangeError: cannot plan root", firstAt: 0, lastAt: 70_000, count: 102 }]);
    h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 0n, maximumUsefulGrant: 0n }, 1);
    h.timers.advanceBy(120_001);
    h.s.tick();
    expect(h.s.failures()).toEqual([]);
  });

  it("keeps standing demand durable: written before it is advertised, undone when refused, dropped when it lapses or is withdrawn", () => {
    const disk = new Map<string, StandingDemand>();
    let failWrites = false;
    const memory = {
      put: (d: StandingDemand) => {
        if (failWrites) throw new Error("disk full");
        disk.set(d.edge, d);
      },
      drop: (e: AttachmentId) => void disk.delete(e),
    };
    const h = harness(3, new Set(), memory);
    // a failed write: the call fails, nothing stands, nothing is advertised
    failWrites = true;
    expect(() => h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 5n, maximumUsefulGrant: 5n }, 10_000)).toThrow("disk full");
    expect(h.s.standing()).toEqual([]);
    expect(h.advertised).toEqual([]);
    failWrites = false;
    expect(h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 5n, maximumUsefulGrant: 5n }, 10_000).ok).toBe(true);
    expect([...disk.keys()]).toEqual(["a→batch"]);
    // refused for the slot: the durable copy is undone too
    expect(h.s.setDemand(AttachmentId("b→web"), { targetOutstanding: 5n, maximumUsefulGrant: 5n }, 10_000).ok).toBe(false);
    expect([...disk.keys()]).toEqual(["a→batch"]);
    // a lease that ends is forgotten on disk at the next tick; a withdrawal at once
    expect(h.s.setDemand(AttachmentId("root→b"), { targetOutstanding: 1n, maximumUsefulGrant: 1n }, 500).ok).toBe(true);
    expect([...disk.keys()].sort()).toEqual(["a→batch", "root→b"]);
    h.timers.advanceBy(500);
    h.s.tick();
    expect([...disk.keys()]).toEqual(["a→batch"]);
    expect(h.s.setDemand(AttachmentId("a→batch"), { targetOutstanding: 0n, maximumUsefulGrant: 0n }, 10_000).ok).toBe(true);
    expect(disk.size).toBe(0);
  });

  it("standing demand follows its child across a reshape: it moves to the new generation once that is ACTIVE, durably, keeping demand and lease", () => {
    const disk = new Map<string, StandingDemand>();
    const h = harness(Infinity, new Set(), { put: (s) => disk.set(s.edge, s), drop: (e) => disk.delete(e) });
    const old = AttachmentId("a→batch");
    const next = AttachmentId("b→batch");
    expect(h.s.setDemand(old, { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 60_000).ok).toBe(true);
    const lease = h.s.standing()[0]!.expiresAt;
    // governed.md §3.7: prepare the new generation under b, close the old; while it drains nothing moves
    h.apply((x) => x.prepare({ id: next, parent: GroupId("b"), child: GroupId("batch"), weight: Weight.ONE }), (x) => x.close(old));
    h.s.tick();
    expect(h.s.standing().map((s) => s.edge)).toEqual([old]);
    // retired, the new generation not yet active: still nowhere to go
    h.apply((x) => x.retire(old));
    h.s.tick();
    expect(h.s.standing().map((s) => s.edge)).toEqual([old]);
    h.apply((x) => x.activate(next));
    h.scheduled.length = 0;
    h.s.tick();
    expect(h.s.standing()).toEqual([{ edge: next, demand: { targetOutstanding: 50n, maximumUsefulGrant: 10n }, expiresAt: lease }]);
    expect([...disk.keys()]).toEqual([next]);
    // rolled up and scheduled along the new lineage: root → b → batch, nothing under a
    expect(h.slot.get(next)).toEqual({ targetOutstanding: 50n, maximumUsefulGrant: 10n });
    expect(h.slot.has(old)).toBe(false);
    expect(h.slot.has(AttachmentId("root→a"))).toBe(false);
    expect(h.scheduled).toEqual(["root", "b"]);
  });

  it("during a reshape's drain the demand can be refreshed on the CLOSING edge, and after the move it is still addressed by its old edge (review)", () => {
    const h = harness();
    const old = AttachmentId("a→batch");
    const next = AttachmentId("b→batch");
    expect(h.s.setDemand(old, { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 60_000).ok).toBe(true);
    h.apply((x) => x.prepare({ id: next, parent: GroupId("b"), child: GroupId("batch"), weight: Weight.ONE }), (x) => x.close(old));
    // refreshing (a new lease) while the old generation drains: it was refused not-active for the whole drain
    const refreshed = h.s.setDemand(old, { targetOutstanding: 60n, maximumUsefulGrant: 10n }, 90_000);
    expect(refreshed).toMatchObject({ ok: true, standing: { edge: old, demand: { targetOutstanding: 60n } } });
    // a PREPARED edge still takes none: nothing would serve it
    expect(h.s.setDemand(next, { targetOutstanding: 1n, maximumUsefulGrant: 1n }, 60_000)).toMatchObject({ ok: false, refusal: { kind: "not-active", lifecycle: "PREPARED" } });
    h.apply((x) => x.retire(old), (x) => x.activate(next));
    h.s.tick();
    expect(h.s.standing().map((s) => [s.edge, s.demand.targetOutstanding])).toEqual([[next, 60n]]);
    // a refresh by the old edge id lands on the new generation (the old one is RETIRED)
    expect(h.s.setDemand(old, { targetOutstanding: 70n, maximumUsefulGrant: 10n }, 90_000)).toMatchObject({ ok: true, standing: { edge: next, demand: { targetOutstanding: 70n } } });
    // and a withdrawal by the old edge id withdraws it: it answered ok and left the demand standing
    expect(h.s.setDemand(old, { targetOutstanding: 0n, maximumUsefulGrant: 0n }, 0)).toEqual({ ok: true, standing: null });
    expect(h.s.standing()).toEqual([]);
    // with nothing standing any more, the old edge is RETIRED again for new demand
    expect(h.s.setDemand(old, { targetOutstanding: 1n, maximumUsefulGrant: 1n }, 60_000)).toMatchObject({ ok: false, refusal: { kind: "not-active", lifecycle: "RETIRED" } });
  });

  it("a reshape's moved demand gives way to demand already standing on the new generation (set since, by leaf)", () => {
    const h = harness();
    const old = AttachmentId("a→batch");
    const next = AttachmentId("b→batch");
    expect(h.s.setDemand(old, { targetOutstanding: 50n, maximumUsefulGrant: 10n }, 60_000).ok).toBe(true);
    h.apply((x) => x.prepare({ id: next, parent: GroupId("b"), child: GroupId("batch"), weight: Weight.ONE }), (x) => x.close(old), (x) => x.retire(old), (x) => x.activate(next));
    expect(h.s.setDemand(next, { targetOutstanding: 7n, maximumUsefulGrant: 7n }, 5_000).ok).toBe(true);
    h.s.tick();
    expect(h.s.standing().map((s) => [s.edge, s.demand.targetOutstanding])).toEqual([[next, 7n]]);
  });

  it("restore stands what has not lapsed, up to maxStanding, and forgets the rest on disk", () => {
    const dropped: string[] = [];
    const h = harness(Infinity, new Set(), { put: () => {}, drop: (e) => void dropped.push(e) });
    h.timers.advanceBy(1_000);
    const d = (edge: string, expiresAt: number): StandingDemand => ({ edge: AttachmentId(edge), demand: { targetOutstanding: 1n, maximumUsefulGrant: 1n }, expiresAt });
    h.s.restore([d("a→batch", 5_000), d("b→web", 1_000), ...Array.from({ length: 9 }, (_, i) => d(`x${i}`, 5_000))]);
    // maxStanding is 8: a→batch and seven of the x's stand; b→web has lapsed (expiresAt ≤ now); x7, x8 do not fit
    expect(h.s.standing().map((x) => x.edge)).toEqual(["a→batch", "x0", "x1", "x2", "x3", "x4", "x5", "x6"]);
    expect(dropped).toEqual(["b→web", "x7", "x8"]);
  });
});
