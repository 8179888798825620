/**
 * ledger.md amendment 1.1 (every change marked ⟨1.1⟩), one describe per change, each with the
 * fixed repro the spec names: detached lineages (§5.2, §5.3, §6.2) with the spend below a missing
 * parent record; `chargeCaptured` paths start at the root (§7.10) with the mid-tree charge; only
 * `activate` makes an edge live (§7.4, §8: I-12's new cases); the retire witness carries the
 * writers' mints (§7.4, I-16); a non-positive floor denominator is rejected (§10). Every call runs
 * on the immutable value and on a `LedgerReplica` built from it, and the two must agree.
 * Random coverage of the same rules: `partial-views.test.ts` (I-21).
 */
import { describe, expect, it } from "vitest";
import { LedgerDecodeError, LedgerReplica } from "../src/index.ts";
import type { AttachmentId, GroupId } from "../src/index.ts";
import { E, EntitlementLedger, G, ok, R, refused, state, Weight } from "./arbitraries.ts";
import type { MutationResult } from "./arbitraries.ts";
import { conservationApplies, conservationSides } from "./simulation.ts";

const F = '"format":"heddle-ledger/1"';
const root = G("root");
const p = R("p");
const q = R("q");

type Call = (x: EntitlementLedger | LedgerReplica) => MutationResult;

/**
 * Runs `call` on `view` and on a `LedgerReplica` holding the same state: same outcome, same patch
 * or refusal; the receiver is untouched unless the replica applied its own ok patch.
 */
function both(view: EntitlementLedger, call: Call): MutationResult {
  const before = view.encode();
  const a = call(view);
  expect(view.encode()).toBe(before);
  const twin = new LedgerReplica(view);
  const b = call(twin);
  expect(b.ok ? "ok" : b.refusal.kind).toBe(a.ok ? "ok" : a.refusal.kind);
  if (a.ok && b.ok) {
    expect(b.patch.encode()).toBe(a.patch.encode());
    expect(twin.encode()).toBe(view.join(a.patch).encode());
  } else {
    expect(twin.encode()).toBe(before);
  }
  return a;
}

const kind = (view: EntitlementLedger, call: Call): string => {
  const r = both(view, call);
  return r.ok ? "ok" : r.refusal.kind;
};

function apply(view: EntitlementLedger, call: Call): EntitlementLedger {
  return view.join(ok(both(view, call)));
}

function link(s: EntitlementLedger, id: string, parent: string, child: string): EntitlementLedger {
  s = apply(s, (x) => x.prepare({ id: E(id), parent: G(parent), child: G(child), weight: Weight.ONE }));
  return apply(s, (x) => x.activate(E(id)));
}

/** §6.4's identity on a state that satisfies its preconditions: `[mintedTotal, Σ holdings + leafSpentTotal]`. */
function identity(v: EntitlementLedger): [bigint, bigint] {
  expect(conservationApplies(v)).toBe(true);
  return conservationSides(v);
}

describe("⟨1.1⟩ detached lineages (§5.2, §5.3, §6.2)", () => {
  const [g, h] = [G("g"), G("h")];
  const [e1, e2] = [E("e1"), E("e2")];

  /**
   * The authority's run, one published patch per step: p holds 10 at root, delegates 10 down
   * e1: root→g and 6 down e2: g→h, then hands 4 of its holdings at h to q.
   */
  function published(): Map<string, EntitlementLedger> {
    const out = new Map<string, EntitlementLedger>();
    let s = EntitlementLedger.EMPTY;
    const step = (name: string, patch: EntitlementLedger): void => {
      out.set(name, patch);
      s = s.join(patch);
    };
    step("bootstrap", EntitlementLedger.bootstrap(root, new Map([[p, 10n]]), "genesis"));
    step("prepare e1", ok(s.prepare({ id: e1, parent: root, child: g, weight: Weight.ONE })));
    step("activate e1", ok(s.activate(e1)));
    step("prepare e2", ok(s.prepare({ id: e2, parent: g, child: h, weight: Weight.ONE })));
    step("activate e2", ok(s.activate(e2)));
    step("delegate e1", ok(s.delegate(p, e1, 10n)));
    step("delegate e2", ok(s.delegate(p, e2, 6n)));
    step("transfer h", ok(s.transfer(h, p, q, 4n)));
    return out;
  }
  const joinOf = (patches: Map<string, EntitlementLedger>, names: string[]): EntitlementLedger =>
    names.reduce((v, n) => v.join(patches.get(n)!), EntitlementLedger.EMPTY);

  it("⟨1.1⟩ fixed repro — the spend below a missing parent record: q knows g→h and the transfer but not root→g; h and g are detached, read 0, every mutator needing the lineage refuses, and validate() stays silent", () => {
    const patches = published();
    // q has the mints, e2's record and lifecycle, and the transfer (with p's witness) — not root→g
    const view = joinOf(patches, ["bootstrap", "prepare e2", "activate e2", "transfer h"]);
    expect(view.roots()).toEqual([root]);
    expect(view.lineageOf(g)).toBeNull(); // g is a top group that is not a mint root
    expect(view.lineageOf(h)).toBeNull(); // transitive downwards
    expect(view.lineageOf(root)).toEqual([]);
    for (const x of [p, q]) {
      expect(view.holdings(g, x)).toBe(0n);
      expect(view.holdings(h, x)).toBe(0n);
      expect(new LedgerReplica(view).holdings(h, x)).toBe(0n);
    }
    expect(kind(view, (x) => x.spend(q, h, 4n))).toBe("Quarantined");
    expect(kind(view, (x) => x.spend(q, h, 1n))).toBe("Quarantined");
    expect(kind(view, (x) => x.transfer(h, q, p, 1n))).toBe("Quarantined");
    expect(kind(view, (x) => x.release(q, e2, 1n))).toBe("Quarantined");
    expect(kind(view, (x) => x.delegate(p, e2, 1n))).toBe("ChildQuarantined");
    expect(kind(view, (x) => x.transfer(g, p, q, 1n))).toBe("Quarantined");
    // the normal window of partial delivery is not a conflict
    expect(view.validate()).toEqual([]);
    expect(new LedgerReplica(view).validate()).toEqual([]);
  });

  it("⟨1.1⟩ the hazard the rule closes: a spend at h charged without the roll-up through root→g leaves holdings at g created from nothing in the full join, and §6.4's identity off by the amount", () => {
    const full = joinOf(published(), [...published().keys()]);
    expect(identity(full)).toEqual([10n, 10n]);
    // what a 1.0 replica that read g as a top group published: leafSpent on e2 alone, no rollupSpent on e1
    const unrolled = full.join(state({ leafSpent: { e2: { q: 4n } } }));
    expect(unrolled.holdings(g, q)).toBe(4n); // from nothing
    expect(unrolled.holdings(h, q)).toBe(0n);
    const [minted, rhs] = identity(unrolled);
    expect(rhs - minted).toBe(4n);
    expect(unrolled.validate()).toEqual([]); // and validate() cannot see it
  });

  it("⟨1.1⟩ once root→g arrives the lineage reaches the root: q spends its 4 at h, and the full join keeps §6.4's identity with nothing at g", () => {
    const patches = published();
    let view = joinOf(patches, ["bootstrap", "prepare e2", "activate e2", "transfer h", "prepare e1"]);
    expect(view.lineageOf(h)).toBeNull(); // e1 is PREPARED: g has no live inbound (a silent window)
    view = view.join(patches.get("activate e1")!);
    expect(view.lineageOf(h)).toEqual([e1, e2]);
    expect(view.holdings(h, q)).toBe(4n);
    const spend = ok(both(view, (x) => x.spend(q, h, 4n)));
    view = view.join(spend);
    const full = joinOf(patches, [...patches.keys()]).join(spend);
    expect(full.holdings(g, q)).toBe(0n);
    expect(full.holdings(h, q)).toBe(0n);
    expect(full.edge(e1)!.spent).toBe(4n); // rolled up through root→g
    expect(identity(full)).toEqual([10n, 10n]);
    expect(full.validate()).toEqual([]);
  });

  it("⟨1.1⟩ a root whose mints have not arrived, and a group named nowhere, are detached: no lineage, holdings 0, spends and transfers refuse", () => {
    const topologyOnly = link(link(EntitlementLedger.EMPTY, "e1", "root", "g"), "e2", "g", "h")
      .join(state({ issued: { e1: { p: 5n } } }));
    expect(topologyOnly.roots()).toEqual([]);
    for (const x of [root, g, h]) expect(topologyOnly.lineageOf(x)).toBeNull();
    expect(topologyOnly.holdings(g, p)).toBe(0n);
    expect(kind(topologyOnly, (x) => x.spend(p, h, 1n))).toBe("Quarantined");
    expect(kind(topologyOnly, (x) => x.transfer(root, p, q, 1n))).toBe("Quarantined");
    expect(kind(topologyOnly, (x) => x.delegate(p, e2, 1n))).toBe("ChildQuarantined");
    expect(topologyOnly.validate()).toEqual([]);
    const booted = EntitlementLedger.bootstrap(root, new Map([[p, 10n]]), "genesis");
    const nowhere = G("nowhere");
    expect(booted.lineageOf(nowhere)).toBeNull();
    expect(booted.holdings(nowhere, p)).toBe(0n);
    expect(kind(booted, (x) => x.spend(p, nowhere, 1n))).toBe("Quarantined");
    expect(kind(booted, (x) => x.transfer(nowhere, p, q, 1n))).toBe("Quarantined");
    // the root itself still works: holdings from its mints, RootHasNoEdge for a spend
    expect(booted.holdings(root, p)).toBe(10n);
    expect(kind(booted, (x) => x.spend(p, root, 1n))).toBe("RootHasNoEdge");
  });
});

describe("⟨1.1⟩ chargeCaptured paths start at the root (§7.10)", () => {
  /** root →eA→ A →eA1→ A1, alice holds root 40, A 35, A1 25 (§13.1 after two delegations). */
  function funded(): EntitlementLedger {
    let s = EntitlementLedger.bootstrap(root, new Map([[R("alice"), 100n], [R("bob"), 50n]]), "genesis");
    s = link(s, "eA", "root", "A");
    s = link(s, "eA1", "A", "A1");
    s = apply(s, (x) => x.delegate(R("alice"), E("eA"), 60n));
    return apply(s, (x) => x.delegate(R("alice"), E("eA1"), 25n));
  }
  const alice = R("alice");
  const [A, A1] = [G("A"), G("A1")];

  it("⟨1.1⟩ fixed repro — the mid-tree charge: chargeCaptured(alice, [eA1], 5) is MalformedPath; the root-anchored [eA, eA1] charges and keeps §6.4's identity", () => {
    const s = funded();
    const r = both(s, (x) => x.chargeCaptured(alice, [E("eA1")], 5n));
    expect(refused(r).kind).toBe("MalformedPath");
    const t = apply(s, (x) => x.chargeCaptured(alice, [E("eA"), E("eA1")], 5n));
    expect([t.holdings(root, alice), t.holdings(A, alice), t.holdings(A1, alice)]).toEqual([40n, 35n, 20n]);
    expect(identity(t)).toEqual([150n, 150n]);
    // what the mid-tree patch would have done: A's holdings rise by the amount charged, unseen by validate()
    const midTree = s.join(state({ leafSpent: { eA1: { alice: 5n } } }));
    expect(midTree.holdings(A, alice)).toBe(40n);
    const [minted, rhs] = identity(midTree);
    expect(rhs - minted).toBe(5n);
    expect(midTree.validate()).toEqual([]);
  });

  it("⟨1.1⟩ the path's first edge must leave a mint root: a path from a detached top group, or one the root has not minted at, is MalformedPath; zero is still an ok cancel", () => {
    const bare = link(EntitlementLedger.EMPTY, "pq", "p", "q"); // no mints: p is no root
    expect(kind(bare, (x) => x.chargeCaptured(R("r"), [E("pq")], 1n))).toBe("MalformedPath");
    expect(kind(bare, (x) => x.chargeCaptured(R("r"), [E("pq")], 0n))).toBe("ok");
    // a divergent first edge passes when some record of it leaves the root
    const divergent = funded().join(state({ records: { eA: [["B", "A", 3n]] } }));
    expect(kind(divergent, (x) => x.chargeCaptured(alice, [E("eA"), E("eA1")], 1n))).toBe("ok");
    const wrongFirst = funded().join(state({ records: { eZ: [["B", "A", 1n]] } }));
    expect(kind(wrongFirst, (x) => x.chargeCaptured(alice, [E("eZ"), E("eA1")], 1n))).toBe("MalformedPath");
  });
});

describe("⟨1.1⟩ only activate makes an edge live (§7.4, §8) — I-12's new cases", () => {
  const [A, B, A1] = [G("A"), G("B"), G("A1")];
  function tree(): EntitlementLedger {
    let s = EntitlementLedger.bootstrap(root, new Map([[p, 100n]]), "genesis");
    s = link(s, "eA", "root", "A");
    s = link(s, "eB", "root", "B");
    s = link(s, "eA1", "A", "A1");
    return apply(s, (x) => x.delegate(p, E("eA"), 30n));
  }
  const prepared = (s: EntitlementLedger, id: string, parent: GroupId, child: GroupId): EntitlementLedger =>
    apply(s, (x) => x.prepare({ id: E(id), parent, child, weight: Weight.ONE }));

  it("I-12 ⟨1.1⟩ prepare(e); close(e) is refused WrongLifecycle — the fork it would make (DualActiveInbound) never forms", () => {
    const s = prepared(tree(), "eX", B, A1); // A1 already has live inbound eA1
    expect(kind(s, (x) => x.close(E("eX")))).toBe("WrongLifecycle");
    expect(kind(s, (x) => x.activate(E("eX")))).toBe("InboundAlreadyLive");
    // CLOSING counts as live: what 1.0's close produced
    const forked = s.join(state({ lifecycle: { eX: "CLOSING" } }));
    expect(forked.validate()).toEqual([{ kind: "DualActiveInbound", group: A1 }]);
  });

  it("I-12 ⟨1.1⟩ prepare(e); close(e) is refused — the loop it would close (LineageCycle) never forms", () => {
    // in a reshape window (A's inbound retired) an edge A1→A would close the loop A→A1→A
    let s = tree();
    s = apply(s, (x) => x.release(p, E("eA"), 30n));
    s = apply(s, (x) => x.close(E("eA")));
    s = apply(s, (x) => x.retire(E("eA")));
    s = prepared(s, "eL", A1, A);
    expect(kind(s, (x) => x.close(E("eL")))).toBe("WrongLifecycle");
    expect(kind(s, (x) => x.activate(E("eL")))).toBe("WouldCreateCycle");
    const looped = s.join(state({ lifecycle: { eL: "CLOSING" } }));
    expect(looped.validate()).toEqual([{ kind: "LineageCycle", group: A }, { kind: "LineageCycle", group: A1 }]);
  });

  it("I-12 ⟨1.1⟩ prepare(e); retire(e) is applied: the edge is abandoned with an empty drain witness, reads frozen at zero, and can no longer be activated or closed", () => {
    const s = prepared(tree(), "eN", A1, G("N"));
    const patch = ok(both(s, (x) => x.retire(E("eN"))));
    expect(patch.encode()).toBe(state({ lifecycle: { eN: "RETIRED" } }).encode());
    const t = s.join(patch);
    expect(t.lifecycle(E("eN"))).toBe("RETIRED");
    expect(t.edge(E("eN"))).toEqual({ attachment: "eN", issued: 0n, returned: 0n, spent: 0n, outstanding: 0n, committedService: 0n });
    expect(kind(t, (x) => x.activate(E("eN")))).toBe("WrongLifecycle");
    expect(kind(t, (x) => x.close(E("eN")))).toBe("WrongLifecycle");
    expect(kind(t, (x) => x.retire(E("eN")))).toBe("WrongLifecycle");
    expect(t.validate()).toEqual([]);
    // N's only inbound is RETIRED, so N stays quarantined and §6.4's precondition 2 no longer
    // holds; the identity still balances numerically (nothing ever crossed eN)
    expect(conservationApplies(t)).toBe(false);
    expect(conservationSides(t)).toEqual([100n, 100n]);
  });

  it("I-12 ⟨1.1⟩ retire still refuses ACTIVE; a PREPARED edge with a non-zero position refuses NotDrained; close accepts ACTIVE and CLOSING", () => {
    const s = tree();
    expect(kind(s, (x) => x.retire(E("eA")))).toBe("WrongLifecycle");
    const carrying = prepared(s, "eP", A1, G("N")).join(state({ issued: { eP: { p: 2n } } }));
    expect(refused(both(carrying, (x) => x.retire(E("eP"))))).toMatchObject({ kind: "NotDrained", detail: { p: "2" } });
    const closing = apply(s, (x) => x.close(E("eB")));
    expect(kind(closing, (x) => x.close(E("eB")))).toBe("ok");
  });

  it("§8 ⟨1.1⟩ abandon races a concurrent activate: the join is RETIRED (closure dominance), and a delegation made meanwhile is reported as ClosureViolation", () => {
    const s = prepared(tree(), "eN", A1, G("N"));
    const abandon = ok(both(s, (x) => x.retire(E("eN"))));
    let other = apply(s, (x) => x.activate(E("eN")));
    expect(other.join(abandon).lifecycle(E("eN"))).toBe("RETIRED");
    expect(other.join(abandon).validate()).toEqual([]);
    other = apply(other, (x) => x.delegate(p, E("eA1"), 5n));
    other = apply(other, (x) => x.delegate(p, E("eN"), 5n));
    expect(other.join(abandon).validate()).toEqual([{ kind: "ClosureViolation", edge: E("eN") }]);
  });
});

describe("⟨1.1⟩ the retire witness carries the writers' mints (§7.4, I-16)", () => {
  it("⟨1.1⟩ §13.3's retire(e1) patch alone on EMPTY validates empty (1.0 reported ConservationViolation(3, 0)) and carries p3's mint", () => {
    const [g, h] = [G("g"), G("h")];
    const p3 = R("p3");
    let s = EntitlementLedger.bootstrap(root, new Map([[p3, 10n]]), "genesis");
    s = link(s, "e1", "root", "g");
    s = link(s, "e2", "g", "h");
    s = apply(s, (x) => x.delegate(p3, E("e1"), 10n));
    s = apply(s, (x) => x.delegate(p3, E("e2"), 6n));
    s = apply(s, (x) => x.spend(p3, h, 3n));
    s = apply(s, (x) => x.prepare({ id: E("e3"), parent: root, child: g, weight: Weight.ONE }));
    s = apply(s, (x) => x.close(E("e1")));
    s = apply(s, (x) => x.release(p3, E("e2"), 3n));
    s = apply(s, (x) => x.release(p3, E("e1"), 7n));
    const patch = ok(both(s, (x) => x.retire(E("e1"))));
    expect(patch.leafSpentTotal()).toBe(0n); // e1 carries a roll-up, not a leaf spend
    expect(patch.mintedTotal()).toBe(10n);
    expect(EntitlementLedger.EMPTY.join(patch).validate()).toEqual([]);
    // the leaf edge's retire carries leafSpent 3 — and p3's mint 10 beside it
    let t = s.join(patch);
    t = apply(t, (x) => x.activate(E("e3")));
    t = apply(t, (x) => x.close(E("e2")));
    const leafRetire = ok(both(t, (x) => x.retire(E("e2"))));
    expect(leafRetire.leafSpentTotal()).toBe(3n);
    expect(leafRetire.mintedTotal()).toBe(10n);
    expect(EntitlementLedger.EMPTY.join(leafRetire).validate()).toEqual([]);
    // without the mints the same patch alone reads as a conservation violation
    const withoutMints = EntitlementLedger.decode(JSON.stringify({ ...JSON.parse(leafRetire.encode()), mints: [] }));
    expect(withoutMints.validate()).toEqual([{ kind: "ConservationViolation", leafSpentTotal: 3n, mintedTotal: 0n }]);
  });

  it("⟨1.1⟩ only the writers' mints: a replica with no slot on the edge is not re-published", () => {
    let s = EntitlementLedger.bootstrap(root, new Map([[p, 10n], [q, 20n]]), "genesis");
    s = link(s, "e", "root", "leaf");
    s = apply(s, (x) => x.delegate(p, E("e"), 4n));
    s = apply(s, (x) => x.spend(p, G("leaf"), 4n));
    s = apply(s, (x) => x.close(E("e")));
    const patch = ok(both(s, (x) => x.retire(E("e"))));
    const mintIds = (JSON.parse(patch.encode()) as { mints: [string, unknown][] }).mints.map(([id]) => id);
    expect(mintIds).toEqual([JSON.stringify(["root", "genesis", "p"])]);
  });
});

describe("⟨1.1⟩ floor decoding (§10)", () => {
  it("⟨1.1⟩ a floor denominator that is not positive is rejected, not repaired: the spec's vector [\"-70\",\"-2\",\"0\"], and 0", () => {
    expect(() => EntitlementLedger.decode(`{${F},"gauges":[["e",["-70","-2","0"]]]}`)).toThrow(LedgerDecodeError);
    expect(() => EntitlementLedger.decode(`{${F},"gauges":[["e",["70","0","0"]]]}`)).toThrow(LedgerDecodeError);
    // the sign lives in the numerator; a weight (weights only) with a negative denominator is repaired
    expect(EntitlementLedger.decode(`{${F},"gauges":[["e",["-70","2","0"]]]}`).gauge(E("e") as AttachmentId)!.floor.toString()).toBe("-35/1");
    expect(EntitlementLedger.decode(`{${F},"records":[["e",[["p","q","-1","-2"]]]]}`).record(E("e"))!.weight.den).toBe(2n);
  });
});
