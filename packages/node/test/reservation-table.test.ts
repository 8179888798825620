import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, Rational, ReplicaId, Weight, type MutationResult } from "@heddle/ledger";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { memoryStore } from "../src/memory-store.ts";
import { LedgerInvariantError, ReservationTable, type CompleteResult, type ReservationEvent, type ReserveResult } from "../src/reservation-table.ts";
import { sqliteStore } from "../src/sqlite-store.ts";
import { failingStore, InjectedCommitFailure, patchBytes, restoreLedger, type HeddleStore, type ReservationRow, type StoreTx } from "../src/store.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDb(): string {
  const d = mkdtempSync(join(tmpdir(), "heddle-rt-"));
  dirs.push(d);
  return join(d, "node.db");
}

const SELF = ReplicaId("p1");
const ROOT = GroupId("root");
const g = (s: string) => GroupId(s);
const e = (s: string) => AttachmentId(s);

function must(r: MutationResult): EntitlementLedger {
  if (!r.ok) throw new Error(`unexpected refusal ${r.refusal.kind}: ${r.refusal.message}`);
  return r.patch;
}

/** Threads mutators (ledger.md §4.4): each step reads the view that absorbed the previous one. */
function build(start: EntitlementLedger, steps: ((l: EntitlementLedger) => MutationResult)[]): EntitlementLedger {
  let l = start;
  for (const s of steps) l = l.join(must(s(l)));
  return l;
}

function edgeSteps(id: string, parent: string, child: string): ((l: EntitlementLedger) => MutationResult)[] {
  return [(l) => l.prepare({ id: e(id), parent: g(parent), child: g(child), weight: Weight.ONE }), (l) => l.activate(e(id))];
}

/**
 * Supply 100 for p1 at `root`; `root → g1 (e1)`, `root → g2 (e2)`, `root → t (et) → g3 (et3)`, and a
 * PREPARED-only `root → gp (ep)`; delegated 40 down e1, 20 down e2, 30 down et and et3 (node.md §16:
 * "hungry e1, schedule" reduced to the ledger calls it makes).
 */
function genesis(): EntitlementLedger {
  return build(EntitlementLedger.bootstrap(ROOT, new Map([[SELF, 100n]]), "heddle-static-genesis"), [
    ...edgeSteps("e1", "root", "g1"),
    ...edgeSteps("e2", "root", "g2"),
    ...edgeSteps("et", "root", "t"),
    ...edgeSteps("et3", "t", "g3"),
    (l) => l.prepare({ id: e("ep"), parent: ROOT, child: g("gp"), weight: Weight.ONE }),
    (l) => l.seat(e("e1"), Rational.ZERO),
    (l) => l.seat(e("e2"), Rational.ZERO),
    (l) => l.seat(e("et"), Rational.ZERO),
    (l) => l.seat(e("et3"), Rational.ZERO),
    (l) => l.delegate(SELF, e("e1"), 40n),
    (l) => l.delegate(SELF, e("e2"), 20n),
    (l) => l.delegate(SELF, e("et"), 30n),
    (l) => l.delegate(SELF, e("et3"), 30n),
  ]);
}
const GENESIS = genesis();
const LEAF_EDGE: Record<string, string> = { g1: "e1", g2: "e2", g3: "et3" };
const INITIAL: Record<string, bigint> = { g1: 40n, g2: 20n, g3: 30n };

/**
 * A node's reservation path reduced to its parts: the table plans an effect, the harness commits it to the
 * store, then installs it in the table, joins and "publishes" the charge — the order `Node.#apply` uses.
 * A failing commit fails the harness closed and rethrows, so tests can see exactly which call hit it.
 */
class Harness {
  readonly open: () => HeddleStore;
  readonly store: HeddleStore;
  state: EntitlementLedger;
  readonly epoch: number;
  readonly published: EntitlementLedger[] = [];
  readonly events: ReservationEvent[] = [];
  failedClosed = false;
  clock = 1_000;
  readonly rows: ReservationTable;
  /** The table as a node exposes it: plan, commit, install, publish, emit. */
  readonly table: {
    reserve(leaf: GroupId, max: bigint): ReserveResult;
    complete(id: string, cost: bigint): CompleteResult;
    cancel(id: string): CompleteResult;
    earmarked(leaf: GroupId): bigint;
    available(leaf: GroupId): bigint;
    get(id: string): ReservationRow | null;
    open(): ReservationRow[];
    readonly size: number;
  };

  /** Boots a store from `open` (a memory store hands back the same object; sqlite opens the file again). */
  constructor(open: () => HeddleStore, base: EntitlementLedger = GENESIS) {
    this.open = open;
    const store = open();
    this.store = store;
    const { epoch, persisted } = store.boot(SELF, "genesis-digest");
    this.epoch = epoch;
    this.state = restoreLedger(base, persisted);
    this.rows = new ReservationTable({ self: SELF, epoch, restored: persisted.reservations });
    const h = this;
    const rows = this.rows;
    const finish = (id: string, cost: bigint, kind: "completed" | "cancelled"): CompleteResult => {
      if (typeof id !== "string") throw new TypeError("complete: id must be a ReservationId");
      if (typeof cost !== "bigint") throw new TypeError("complete: actualCost must be a bigint");
      if (h.failedClosed) return { ok: false, refusal: { kind: "closed" } };
      const plan = rows.complete(new LedgerReplica(h.state), id, cost, kind);
      if (!plan.ok) return plan;
      if (plan.outcome === "no-such-reservation") return { ok: true, charged: 0n, outcome: "no-such-reservation" };
      const patch = plan.effect.patch;
      h.commit({ ...plan.effect.transaction, ...(patch === null ? {} : { patches: [{ origin: "own", body: patchBytes(patch) }] }) });
      rows.install(plan.effect);
      if (patch !== null) {
        h.state = h.state.join(patch);
        h.published.push(patch);
      }
      h.events.push(plan.effect.event);
      return { ok: true, charged: plan.charged, outcome: "charged" };
    };
    this.table = {
      reserve(leaf, max) {
        if (typeof leaf !== "string") throw new TypeError("reserve: leaf must be a GroupId");
        if (typeof max !== "bigint") throw new TypeError("reserve: maximumCost must be a bigint");
        if (h.failedClosed) return { ok: false, refusal: { kind: "closed" } };
        const plan = rows.reserve(h.state, leaf, max, h.clock);
        if (!plan.ok) return plan;
        h.commit(plan.effect.transaction);
        rows.install(plan.effect);
        h.events.push(plan.effect.event);
        return { ok: true, id: plan.id };
      },
      complete: (id, cost) => finish(id, cost, "completed"),
      cancel: (id) => finish(id, 0n, "cancelled"),
      earmarked: (leaf) => rows.earmarked(leaf),
      available: (leaf) => rows.available(h.state, leaf),
      get: (id) => rows.get(id),
      open: () => rows.open(),
      get size() {
        return rows.size;
      },
    };
  }

  commit(tx: StoreTx): void {
    try {
      this.store.commit(tx);
    } catch (err) {
      this.failedClosed = true; // node.md §9.4
      throw err;
    }
  }

  /** Drops this incarnation ("crash": its handle is closed, nothing else runs) and boots a new one. */
  restart(base: EntitlementLedger = GENESIS): Harness {
    this.store.close();
    return new Harness(this.open, base);
  }

  spent(edge: string): bigint {
    return this.state.edge(e(edge))!.spent;
  }
}

function reserveOk(h: Harness, leaf: string, max: bigint): string {
  const r = h.table.reserve(g(leaf), max);
  if (!r.ok) throw new Error(`reserve refused: ${r.refusal.kind}`);
  return r.id;
}

/** A store "on disk": `open()` is what a restarted process does. */
type StoreSource = () => { open: () => HeddleStore };
const memorySource: StoreSource = () => {
  const s = memoryStore();
  return { open: () => s };
};
const sqliteSource: StoreSource = () => {
  const path = tempDb();
  return { open: () => sqliteStore(path) };
};

describe.each([
  ["memoryStore", memorySource],
  ["sqliteStore", sqliteSource],
] as [string, StoreSource][])("reservation table on %s", (_name, source) => {
  it("A5: complete ×3, crash, restart, complete again, delta delivered 5× elsewhere — spent(e1) rises by exactly 7", () => {
    const h = new Harness(source().open);
    const before = h.spent("e1");
    const id = reserveOk(h, "g1", 10n);
    expect(id).toBe(`p1/${h.epoch}/0`);
    expect(h.table.earmarked(g("g1"))).toBe(10n);
    expect(h.table.available(g("g1"))).toBe(30n);
    expect(h.published).toEqual([]); // reserve publishes nothing
    expect(h.table.complete(id, 7n)).toEqual({ ok: true, charged: 7n, outcome: "charged" });
    expect(h.table.complete(id, 7n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    expect(h.table.complete(id, 7n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    expect(h.spent("e1") - before).toBe(7n);
    expect(h.table.earmarked(g("g1"))).toBe(0n);
    expect(h.published.length).toBe(1);

    const h2 = h.restart();
    expect(h2.epoch).toBe(h.epoch + 1);
    expect(h2.spent("e1") - before).toBe(7n); // the charge was committed with the row deletion
    expect(h2.table.complete(id, 7n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    expect(h2.spent("e1") - before).toBe(7n);
    expect(h2.table.size).toBe(0);

    let other = GENESIS;
    for (let i = 0; i < 5; i++) other = other.join(h.published[0]!);
    expect(other.edge(e("e1"))!.spent - before).toBe(7n);
    expect(other.holdings(g("g1"), SELF)).toBe(33n);
    expect(other.validate()).toEqual([]);
    expect(other.equals(h2.state)).toBe(true);
  });

  it("A6: complete above the maximum is refused and changes nothing; a later in-range complete charges it", () => {
    const h = new Harness(source().open);
    const id = reserveOk(h, "g1", 10n);
    expect(h.table.complete(id, 11n)).toEqual({ ok: false, refusal: { kind: "cost-out-of-range", actualCost: 11n, maximumCost: 10n } });
    expect(h.table.complete(id, -1n)).toEqual({ ok: false, refusal: { kind: "cost-out-of-range", actualCost: -1n, maximumCost: 10n } });
    expect(h.table.earmarked(g("g1"))).toBe(10n);
    expect(h.table.get(id)?.maximumCost).toBe(10n);
    const h2 = h.restart();
    expect(h2.table.earmarked(g("g1"))).toBe(10n); // still persisted
    expect(h2.table.complete(id, 8n)).toEqual({ ok: true, charged: 8n, outcome: "charged" });
    expect(h2.table.earmarked(g("g1"))).toBe(0n);
    expect(h2.spent("e1")).toBe(8n);
    expect(h2.state.holdings(g("g1"), SELF)).toBe(32n);
  });

  it("ids are self/epoch/n and never repeat across restarts; open reservations and earmarks survive", () => {
    const h = new Harness(source().open);
    h.clock = 77;
    const a = reserveOk(h, "g1", 5n);
    const b = reserveOk(h, "g1", 6n);
    const c = reserveOk(h, "g3", 9n);
    expect([a, b, c]).toEqual([`p1/${h.epoch}/0`, `p1/${h.epoch}/1`, `p1/${h.epoch}/2`]);
    const h2 = h.restart();
    expect(h2.table.open().map((r) => r.id)).toEqual([a, b, c]);
    expect(h2.table.get(c)).toEqual({ id: c, leaf: "g3", maximumCost: 9n, capturedPath: ["et", "et3"], createdAt: 77 });
    expect(h2.table.earmarked(g("g1"))).toBe(11n);
    expect(h2.table.earmarked(g("g3"))).toBe(9n);
    const d = reserveOk(h2, "g1", 1n);
    expect(d).toBe(`p1/${h2.epoch}/0`);
    expect(new Set([a, b, c, d]).size).toBe(4);
    // A two-level captured path: leaf spend on the last edge, roll-up on the earlier one.
    expect(h2.table.complete(c, 4n)).toMatchObject({ ok: true, charged: 4n });
    expect(h2.spent("et3")).toBe(4n);
    expect(h2.state.edge(e("et"))!.spent).toBe(4n);
    expect(h2.state.holdings(g("g3"), SELF)).toBe(26n);
    expect(h2.state.validate()).toEqual([]);
  });

  it("A14 variant: a commit that throws leaves table, earmarks and ledger unchanged, publishes nothing, and fails closed", () => {
    const src = source();
    let fail = false;
    const failing = () => failingStore(src.open(), () => fail);
    const h = new Harness(failing);
    const id = reserveOk(h, "g1", 10n);
    const stateBefore = h.state;
    fail = true;
    expect(() => h.table.complete(id, 7n)).toThrow(InjectedCommitFailure);
    expect(h.state).toBe(stateBefore);
    expect(h.table.earmarked(g("g1"))).toBe(10n);
    expect(h.table.get(id)).not.toBeNull();
    expect(h.published).toEqual([]);
    expect(h.failedClosed).toBe(true);
    expect(h.table.complete(id, 7n)).toEqual({ ok: false, refusal: { kind: "closed" } });
    expect(h.table.cancel(id)).toEqual({ ok: false, refusal: { kind: "closed" } });
    expect(h.table.reserve(g("g1"), 1n)).toEqual({ ok: false, refusal: { kind: "closed" } });

    // A failing reserve leaves no earmark either.
    fail = false;
    h.store.close();
    const h2 = new Harness(failing);
    fail = true;
    expect(() => h2.table.reserve(g("g1"), 3n)).toThrow(InjectedCommitFailure);
    expect(h2.table.earmarked(g("g1"))).toBe(10n);
    expect(h2.table.size).toBe(1);
    expect(h2.events).toEqual([]);

    // Recovery is a restart: the reservation is still open and charges once.
    fail = false;
    const h3 = h2.restart();
    expect(h3.table.size).toBe(1);
    expect(h3.table.complete(id, 7n)).toMatchObject({ ok: true, charged: 7n });
    expect(h3.spent("e1")).toBe(7n);
    expect(h3.restart().spent("e1")).toBe(7n);
  });
});

describe("reservation table refusals and captured paths", () => {
  it("refuses each ReserveRefusal kind on the current view, and bad argument types throw", () => {
    const h = new Harness(memorySource().open);
    expect(h.table.reserve(g("g1"), 0n)).toEqual({ ok: false, refusal: { kind: "invalid-cost", maximumCost: 0n } });
    expect(h.table.reserve(g("g1"), -5n)).toEqual({ ok: false, refusal: { kind: "invalid-cost", maximumCost: -5n } });
    expect(h.table.reserve(g("g1"), 1n << 63n)).toEqual({ ok: false, refusal: { kind: "invalid-cost", maximumCost: 1n << 63n } });
    expect(h.table.reserve(ROOT, 1n)).toEqual({ ok: false, refusal: { kind: "not-a-leaf", leaf: ROOT } });
    expect(h.table.reserve(g("t"), 1n)).toEqual({ ok: false, refusal: { kind: "not-a-leaf", leaf: "t" } });
    expect(h.table.reserve(g("gp"), 1n)).toEqual({ ok: false, refusal: { kind: "no-lineage", leaf: "gp" } });
    // ledger.md ⟨1.1⟩: a group named nowhere is a detached top group, not a root — it has no lineage
    expect(h.table.reserve(g("nowhere"), 1n)).toEqual({ ok: false, refusal: { kind: "no-lineage", leaf: "nowhere" } });
    const bare = new Harness(memorySource().open, EntitlementLedger.bootstrap(ROOT, new Map([[SELF, 5n]]), "bare"));
    expect(bare.table.reserve(ROOT, 1n)).toEqual({ ok: false, refusal: { kind: "root-leaf", leaf: ROOT } });
    expect(h.table.reserve(g("g1"), 41n)).toEqual({ ok: false, refusal: { kind: "insufficient", leaf: "g1", available: 40n, requested: 41n } });
    reserveOk(h, "g1", 25n);
    expect(h.table.reserve(g("g1"), 16n)).toEqual({ ok: false, refusal: { kind: "insufficient", leaf: "g1", available: 15n, requested: 16n } });
    reserveOk(h, "g1", 15n);
    expect(h.table.available(g("g1"))).toBe(0n);
    expect(() => h.table.reserve(g("g1"), 1 as unknown as bigint)).toThrow(TypeError);
    expect(() => h.table.complete("x", 1 as unknown as bigint)).toThrow(TypeError);
    expect(h.table.complete("p1/99/0", 1n)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    expect(h.events.map((ev) => ev.kind)).toEqual(["reserved", "reserved"]);
  });

  it("cancel releases the earmark, charges nothing and publishes nothing", () => {
    const h = new Harness(memorySource().open);
    const id = reserveOk(h, "g2", 20n);
    const before = h.state;
    expect(h.table.cancel(id)).toEqual({ ok: true, charged: 0n, outcome: "charged" });
    expect(h.table.cancel(id)).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
    expect(h.state).toBe(before);
    expect(h.published).toEqual([]);
    expect(h.table.available(g("g2"))).toBe(20n);
    expect(h.events).toEqual([
      { kind: "reserved", id, leaf: "g2", amount: 20n },
      { kind: "cancelled", id, leaf: "g2", amount: 20n },
    ]);
  });

  it("A10: a reservation admitted before g1 is quarantined (second ACTIVE inbound edge) charges e1, releases once", () => {
    const h = new Harness(memorySource().open);
    const id = reserveOk(h, "g1", 10n);
    // Another replica, without e1, attaches g1 under g2: joined, g1 has two ACTIVE inbound edges.
    const elsewhere = build(EntitlementLedger.bootstrap(ROOT, new Map([[ReplicaId("p2"), 0n]]), "other"), edgeSteps("ex", "g2", "g1"));
    h.state = h.state.join(elsewhere);
    expect(h.state.lineageOf(g("g1"))).toBeNull();
    expect(h.state.holdings(g("g1"), SELF)).toBe(0n);
    expect(h.table.reserve(g("g1"), 1n)).toEqual({ ok: false, refusal: { kind: "no-lineage", leaf: "g1" } });
    expect(h.table.complete(id, 7n)).toEqual({ ok: true, charged: 7n, outcome: "charged" });
    expect(h.spent("e1")).toBe(7n);
    expect(h.state.edge(e("ex"))!.spent).toBe(0n);
    expect(h.table.earmarked(g("g1"))).toBe(0n);
    expect(h.table.complete(id, 7n)).toMatchObject({ outcome: "no-such-reservation" });
    expect(h.spent("e1")).toBe(7n);
    expect(h.state.holdings(g("g1"), SELF)).toBe(0n); // still quarantined
  });

  it("A10: a PREPARED child under g1 after admission — g1 is no leaf, the work still charges e1", () => {
    const h = new Harness(memorySource().open);
    const id = reserveOk(h, "g1", 10n);
    h.state = h.state.join(must(h.state.prepare({ id: e("e15"), parent: g("g1"), child: g("g5"), weight: Weight.ONE })));
    expect(h.table.reserve(g("g1"), 1n)).toEqual({ ok: false, refusal: { kind: "not-a-leaf", leaf: "g1" } });
    expect(h.table.complete(id, 6n)).toMatchObject({ ok: true, charged: 6n });
    expect(h.spent("e1")).toBe(6n);
    expect(h.table.earmarked(g("g1"))).toBe(0n);
    expect(h.state.holdings(g("g1"), SELF)).toBe(34n);
  });

  it("a captured path the ledger refuses to charge throws LedgerInvariantError and changes nothing", () => {
    const store = memoryStore();
    store.boot(SELF, "genesis-digest");
    const bad: ReservationRow = { id: "p1/0/0", leaf: g("g1"), maximumCost: 5n, capturedPath: [e("no-such-edge")], createdAt: 0 };
    store.commit({ putReservations: [bad] });
    store.close();
    const h = new Harness(() => store);
    const before = h.state;
    expect(() => h.table.complete(bad.id, 3n)).toThrow(LedgerInvariantError);
    expect(h.state).toBe(before);
    expect(h.table.earmarked(g("g1"))).toBe(5n);
    expect(h.published).toEqual([]);
    expect(h.restart().table.size).toBe(1); // nothing was committed
  });

  it("charges a LedgerReplica inside a transaction: a refused commit rolls it back, a later one keeps it", () => {
    const store = failingStore(memoryStore(), () => failing);
    let failing = false;
    const { epoch } = store.boot(SELF, "d");
    const rep = new LedgerReplica(GENESIS);
    const t = new ReservationTable({ self: SELF, epoch });
    const r = t.reserve(rep, g("g1"), 10n, 0);
    if (!r.ok) throw new Error("refused");
    store.commit(r.effect.transaction);
    t.install(r.effect);
    const attempt = () => {
      const tx = rep.begin();
      const plan = t.complete(rep, r.id, 4n);
      if (!plan.ok || plan.outcome !== "charged") throw new Error("not charged");
      expect(rep.edge(e("e1"))!.spent).toBe(4n); // applied tentatively, visible to later steps of the call
      try {
        store.commit({ ...plan.effect.transaction, patches: [{ origin: "own", body: patchBytes(plan.effect.patch!) }] });
      } catch (err) {
        tx.rollback();
        throw err;
      }
      tx.commit();
      t.install(plan.effect);
    };
    failing = true;
    expect(attempt).toThrow(InjectedCommitFailure);
    expect(rep.edge(e("e1"))!.spent).toBe(0n);
    expect(t.earmarked(g("g1"))).toBe(10n);
    failing = false;
    attempt();
    expect(rep.edge(e("e1"))!.spent).toBe(4n);
    expect(t.earmarked(g("g1"))).toBe(0n);
  });
});

// ---- A25: model-based test of reserve/complete/cancel/crash/restart against a reference model ----

type Op =
  | { kind: "reserve"; leaf: string; max: bigint }
  | { kind: "complete"; pick: number; cost: bigint }
  | { kind: "cancel"; pick: number }
  | { kind: "restart" }
  | { kind: "failNextCommit" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("reserve" as const),
      leaf: fc.constantFrom("g1", "g2", "g3", "t", "root", "gp", "nowhere"),
      max: fc.oneof(fc.bigInt({ min: 1n, max: 45n }), fc.constantFrom(0n, -1n, 1n << 63n)),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("complete" as const), pick: fc.nat(40), cost: fc.bigInt({ min: -2n, max: 48n }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "restart" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "failNextCommit" as const }) },
);

/** The reference: per-leaf holdings, charges and earmarks, and the open reservations, in plain maps. */
interface RefModel {
  epoch: number;
  n: number;
  closed: boolean;
  failNext: boolean;
  spent: Map<string, bigint>;
  earmark: Map<string, bigint>;
  open: Map<string, { leaf: string; max: bigint }>;
  issued: string[];
  publishedCharges: bigint;
}

const REFUSAL_OF: Record<string, string> = { t: "not-a-leaf", root: "not-a-leaf", gp: "no-lineage", nowhere: "no-lineage" };

function runModel(source: StoreSource, ops: Op[]): void {
  const src = source();
  const m: RefModel = {
    epoch: 0,
    n: 0,
    closed: false,
    failNext: false,
    spent: new Map(),
    earmark: new Map(),
    open: new Map(),
    issued: [],
    publishedCharges: 0n,
  };
  const open = () =>
    failingStore(src.open(), () => {
      const f = m.failNext;
      m.failNext = false;
      return f;
    });
  let h = new Harness(open);
  m.epoch = h.epoch;
  let published: EntitlementLedger[] = [];
  const collect = () => (published = published.concat(h.published.splice(0)));

  const check = () => {
    for (const leaf of ["g1", "g2", "g3"]) {
      const sp = m.spent.get(leaf) ?? 0n;
      const em = m.earmark.get(leaf) ?? 0n;
      expect(h.table.earmarked(g(leaf))).toBe(em);
      expect(h.spent(LEAF_EDGE[leaf]!)).toBe(sp);
      expect(h.state.holdings(g(leaf), SELF)).toBe(INITIAL[leaf]! - sp);
      expect(h.table.available(g(leaf))).toBe(INITIAL[leaf]! - sp - em);
    }
    expect(h.state.edge(e("et"))!.spent).toBe(m.spent.get("g3") ?? 0n);
    expect(h.table.open().map((r) => r.id)).toEqual([...m.open.keys()].sort());
  };

  for (const op of ops) {
    if (op.kind === "failNextCommit") {
      m.failNext = true;
      continue;
    }
    if (op.kind === "restart") {
      collect();
      h = h.restart();
      m.epoch += 1;
      m.n = 0;
      m.closed = false;
      expect(h.epoch).toBe(m.epoch);
      check();
      continue;
    }
    if (op.kind === "reserve") {
      const r = (() => {
        if (m.failNext && !m.closed && op.max > 0n && op.max < 1n << 63n && !(op.leaf in REFUSAL_OF)) {
          const avail = INITIAL[op.leaf]! - (m.spent.get(op.leaf) ?? 0n) - (m.earmark.get(op.leaf) ?? 0n);
          if (avail >= op.max) {
            expect(() => h.table.reserve(g(op.leaf), op.max)).toThrow(InjectedCommitFailure);
            m.n += 1;
            m.closed = true;
            return null;
          }
        }
        return h.table.reserve(g(op.leaf), op.max);
      })();
      if (r === null) continue;
      if (m.closed) expect(r).toEqual({ ok: false, refusal: { kind: "closed" } });
      else if (op.max <= 0n || op.max >= 1n << 63n) expect(r).toEqual({ ok: false, refusal: { kind: "invalid-cost", maximumCost: op.max } });
      else if (op.leaf in REFUSAL_OF) expect(r).toEqual({ ok: false, refusal: { kind: REFUSAL_OF[op.leaf], leaf: op.leaf } });
      else {
        const avail = INITIAL[op.leaf]! - (m.spent.get(op.leaf) ?? 0n) - (m.earmark.get(op.leaf) ?? 0n);
        if (avail < op.max) {
          expect(r).toEqual({ ok: false, refusal: { kind: "insufficient", leaf: op.leaf, available: avail, requested: op.max } });
        } else {
          const id = `p1/${m.epoch}/${m.n++}`;
          expect(r).toEqual({ ok: true, id });
          m.open.set(id, { leaf: op.leaf, max: op.max });
          m.issued.push(id);
          m.earmark.set(op.leaf, (m.earmark.get(op.leaf) ?? 0n) + op.max);
        }
      }
    } else {
      const id = m.issued.length === 0 ? "p1/0/404" : m.issued[op.pick % m.issued.length]!;
      const cost = op.kind === "cancel" ? 0n : op.cost;
      const res = m.open.get(id);
      const wouldCommit = !m.closed && res !== undefined && cost >= 0n && cost <= res.max;
      if (wouldCommit && m.failNext) {
        expect(() => (op.kind === "cancel" ? h.table.cancel(id) : h.table.complete(id, cost))).toThrow(InjectedCommitFailure);
        m.closed = true;
        check();
        continue;
      }
      const r = op.kind === "cancel" ? h.table.cancel(id) : h.table.complete(id, cost);
      if (m.closed) expect(r).toEqual({ ok: false, refusal: { kind: "closed" } });
      else if (res === undefined) expect(r).toEqual({ ok: true, charged: 0n, outcome: "no-such-reservation" });
      else if (cost < 0n || cost > res.max) {
        expect(r).toEqual({ ok: false, refusal: { kind: "cost-out-of-range", actualCost: cost, maximumCost: res.max } });
      } else {
        expect(r).toEqual({ ok: true, charged: cost, outcome: "charged" });
        m.open.delete(id);
        m.earmark.set(res.leaf, m.earmark.get(res.leaf)! - res.max);
        m.spent.set(res.leaf, (m.spent.get(res.leaf) ?? 0n) + cost);
        m.publishedCharges += cost;
      }
    }
    check();
  }
  collect();
  // A peer that receives every published delta (each twice) sees exactly the model's charges.
  let other = GENESIS;
  for (const p of [...published, ...published]) other = other.join(p);
  expect(other.leafSpentTotal() - GENESIS.leafSpentTotal()).toBe(m.publishedCharges);
  for (const leaf of ["g1", "g2", "g3"]) expect(other.edge(e(LEAF_EDGE[leaf]!))!.spent).toBe(m.spent.get(leaf) ?? 0n);
  // And a final restart rebuilds the same view from the store.
  const last = h.restart();
  expect(last.state.equals(h.state)).toBe(true);
  expect(last.table.open()).toEqual(h.table.open());
  last.store.close();
}

describe("A25: reservation table against a reference model (fast-check)", () => {
  const runs = Number(process.env.HEDDLE_RUNS ?? 150);
  it("memoryStore: earmarks, charges, refusals and ids match the model", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => runModel(memorySource, ops)),
      { numRuns: runs },
    );
  });
  it("sqliteStore: the same, through a real file", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 25 }), (ops) => runModel(sqliteSource, ops)),
      { numRuns: Math.max(10, Math.floor(runs / 8)) },
    );
  }, Math.max(120_000, runs * 200));
});
