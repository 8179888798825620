/**
 * Mutators (ledger.md §7): every refusal kind of §7.11, the check order of each table where two
 * checks could both fail, exact patch contents, the threading rule, and invariants I-5, I-8, I-9,
 * I-12, I-15, I-17, I-19.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LedgerOverflowError, MAX, PathKey } from "../src/index.ts";
import type { AttachmentId, GroupId, MintId, RefusalKind, ReplicaId } from "../src/index.ts";
import {
  apply,
  E,
  EntitlementLedger,
  G,
  link,
  M,
  ok,
  params,
  R,
  Rational,
  refused,
  state,
  Weight,
} from "./arbitraries.ts";
import type { MutationResult } from "./arbitraries.ts";

const alice = R("alice");
const bob = R("bob");
const root = G("root");
const A = G("A");
const B = G("B");
const A1 = G("A1");
const eA = E("eA");
const eB = E("eB");
const eA1 = E("eA1");
const genesisAlice = M(JSON.stringify(["root", "genesis", "alice"]));
const genesisBob = M(JSON.stringify(["root", "genesis", "bob"]));

/** §13.1's tree: alice 100, bob 50 at root; eA root→A (w 3), eB root→B, eA1 A→A1, all ACTIVE. */
function tree(): EntitlementLedger {
  let s = EntitlementLedger.bootstrap(root, new Map([[alice, 100n], [bob, 50n]]), "genesis");
  s = link(s, eA, root, A, Weight.of(3n));
  s = link(s, eB, root, B);
  return link(s, eA1, A, A1);
}

/** The tree after alice delegates 60 on eA and 25 on eA1: alice holds root 40, A 35, A1 25. */
function funded(): EntitlementLedger {
  let s = tree();
  s = apply(s, s.delegate(alice, eA, 60n));
  return apply(s, s.delegate(alice, eA1, 25n));
}

/** §13.1 after all six steps. */
function final131(): EntitlementLedger {
  let s = funded();
  s = apply(s, s.delegate(bob, eB, 20n));
  s = apply(s, s.transfer(A1, alice, bob, 10n));
  s = apply(s, s.spend(bob, A1, 4n));
  return apply(s, s.release(alice, eA, 5n));
}

/** `funded()` plus an ACTIVE second inbound eX: B→A1, so A1 is quarantined (dual inbound). */
function dualA1(): EntitlementLedger {
  return funded().join(state({ records: { eX: [["B", "A1", 1n]] }, lifecycle: { eX: "ACTIVE" } }));
}

/** A state where eD has two records (divergent), at the given lifecycle. */
function divergent(lc: "ACTIVE" | "RETIRED" | "CLOSING" = "ACTIVE"): EntitlementLedger {
  return funded().join(
    state({
      records: { eD: [["A", "D", 1n], ["B", "D", 1n]] },
      lifecycle: { eD: lc },
      gauges: { eD: [1n, 1n, 0n] },
    }),
  );
}

/**
 * Runs `call` on `s` and checks I-5: the receiver's encoding is identical before and after,
 * whatever the outcome.
 */
function attempt(s: EntitlementLedger, call: (s: EntitlementLedger) => MutationResult): MutationResult {
  const before = s.encode();
  const r = call(s);
  expect(s.encode()).toBe(before);
  return r;
}

const kindOf = (s: EntitlementLedger, call: (s: EntitlementLedger) => MutationResult): RefusalKind =>
  refused(attempt(s, call)).kind;

const any = <T>(x: unknown): T => x as T;

/** One fixture per refusal kind of §7.11. */
const FIXTURES: readonly [RefusalKind, string, () => EntitlementLedger, (s: EntitlementLedger) => MutationResult][] = [
  ["InvalidArgument", "delegate amount 0", funded, (s) => s.delegate(alice, eA, 0n)],
  ["UnknownEdge", "activate an edge never prepared", funded, (s) => s.activate(E("nope"))],
  ["DivergentRecord", "activate a divergent id", divergent, (s) => s.activate(E("eD"))],
  ["AlreadyKnown", "prepare a known id", funded, (s) => s.prepare({ id: eA, parent: B, child: G("Q"), weight: Weight.ONE })],
  ["ChildIsRoot", "prepare an edge into the root", funded, (s) => s.prepare({ id: E("x"), parent: A, child: root, weight: Weight.ONE })],
  ["MintIdInUse", "mint under a used id with another record", funded, (s) => s.mint(genesisAlice, root, alice, 999n)],
  ["ForeignRoot", "mint at a second root", funded, (s) => s.mint(M("m2"), G("other"), alice, 5n)],
  [
    "NotARoot",
    "mint at a group with an inbound record",
    () => link(EntitlementLedger.EMPTY, eA, root, A),
    (s) => s.mint(M("m"), A, alice, 5n),
  ],
  ["WrongLifecycle", "delegate across a CLOSING edge", () => apply(funded(), funded().close(eB)), (s) => s.delegate(alice, eB, 1n)],
  [
    "InboundAlreadyLive",
    "activate a second inbound",
    () => {
      const s = funded();
      return apply(s, s.prepare({ id: E("eX"), parent: B, child: A1, weight: Weight.ONE }));
    },
    (s) => s.activate(E("eX")),
  ],
  [
    "WouldCreateCycle",
    "activate q→p under p→q",
    () => {
      const s = link(EntitlementLedger.EMPTY, E("pq"), G("p"), G("q"));
      return apply(s, s.prepare({ id: E("qp"), parent: G("q"), child: G("p"), weight: Weight.ONE }));
    },
    (s) => s.activate(E("qp")),
  ],
  ["NotDrained", "retire a CLOSING edge that still carries entitlement", () => apply(funded(), funded().close(eA)), (s) => s.retire(eA)],
  ["AlreadySeated", "seat an edge whose checkpoint exists", funded, (s) => s.seat(eA, Rational.of(1n))],
  ["ChildQuarantined", "delegate into a dual-inbound child", dualA1, (s) => s.delegate(alice, eA1, 1n)],
  ["Quarantined", "spend at a quarantined leaf", dualA1, (s) => s.spend(alice, A1, 1n)],
  [
    "NotLiveInbound",
    "release across a PREPARED alternative inbound",
    () => apply(funded(), funded().prepare({ id: E("eZ"), parent: root, child: A1, weight: Weight.ONE })),
    (s) => s.release(alice, E("eZ"), 1n),
  ],
  ["InsufficientHoldings", "delegate more than held", funded, (s) => s.delegate(alice, eB, 41n)],
  ["NotALeaf", "spend at an internal group", funded, (s) => s.spend(alice, A, 1n)],
  [
    "RootHasNoEdge",
    "spend at a root without children",
    () => EntitlementLedger.bootstrap(root, new Map([[alice, 10n]]), "n"),
    (s) => s.spend(alice, root, 1n),
  ],
  ["EmptyPath", "charge an empty path", funded, (s) => s.chargeCaptured(alice, [], 1n)],
  ["MalformedPath", "charge a path given leaf-first", funded, (s) => s.chargeCaptured(alice, [eA1, eA], 1n)],
];

describe("I-5 every refusal kind, and a refusal leaves the receiver untouched", () => {
  for (const [kind, what, make, call] of FIXTURES) {
    it(`I-5 a refusal leaves the receiver untouched: ${kind} (${what})`, () => {
      expect(kindOf(make(), call)).toBe(kind);
    });
  }

  it("I-5 the catalogue of §7.11 is covered exactly", () => {
    expect(new Set(FIXTURES.map(([k]) => k))).toEqual(
      new Set([
        "InvalidArgument", "UnknownEdge", "DivergentRecord", "AlreadyKnown", "ChildIsRoot", "MintIdInUse",
        "ForeignRoot", "NotARoot", "WrongLifecycle", "InboundAlreadyLive", "WouldCreateCycle", "NotDrained",
        "AlreadySeated", "ChildQuarantined", "Quarantined", "NotLiveInbound", "InsufficientHoldings", "NotALeaf",
        "RootHasNoEdge", "EmptyPath", "MalformedPath",
      ]),
    );
  });

  it("I-5 successful calls leave the receiver untouched too", () => {
    const s = funded();
    for (const call of [
      (x: EntitlementLedger) => x.delegate(alice, eB, 5n),
      (x: EntitlementLedger) => x.release(alice, eA1, 5n),
      (x: EntitlementLedger) => x.transfer(A, alice, bob, 5n),
      (x: EntitlementLedger) => x.spend(alice, A1, 5n),
      (x: EntitlementLedger) => x.chargeCaptured(alice, [eA, eA1], 5n),
      (x: EntitlementLedger) => x.close(eA1),
      (x: EntitlementLedger) => x.seat(eB, Rational.of(3n)),
      (x: EntitlementLedger) => x.mint(M("m9"), root, bob, 5n),
      (x: EntitlementLedger) => x.prepare({ id: E("n"), parent: A1, child: G("N"), weight: Weight.ONE }),
    ]) {
      expect(attempt(s, call).ok).toBe(true);
    }
  });
});

describe("InvalidArgument (§7.0, §2.1)", () => {
  const cases: [string, (s: EntitlementLedger) => MutationResult][] = [
    ["JS number amount", (x) => x.delegate(alice, eA, any(5))],
    ["delegate amount above MAX", (x) => x.delegate(alice, eA, MAX + 1n)],
    ["release amount 0", (x) => x.release(alice, eA1, 0n)],
    ["transfer amount 0", (x) => x.transfer(A1, alice, bob, 0n)],
    ["transfer from = to", (x) => x.transfer(A1, alice, alice, 1n)],
    ["spend negative", (x) => x.spend(alice, A1, -1n)],
    ["spend JS number", (x) => x.spend(alice, A1, any(1))],
    ["spend empty replica", (x) => x.spend(any<ReplicaId>(""), A1, 1n)],
    ["spend lone-surrogate group", (x) => x.spend(alice, any<GroupId>("\ud800"), 1n)],
    ["spend replica not a string", (x) => x.spend(any<ReplicaId>(7), A1, 1n)],
    ["chargeCaptured negative", (x) => x.chargeCaptured(alice, [eA, eA1], -1n)],
    ["chargeCaptured path not an array", (x) => x.chargeCaptured(alice, any("eA"), 1n)],
    ["chargeCaptured empty id in path", (x) => x.chargeCaptured(alice, [eA, any<AttachmentId>("")], 1n)],
    ["mint negative", (x) => x.mint(M("m9"), root, alice, -1n)],
    ["mint above MAX", (x) => x.mint(M("m9"), root, alice, MAX + 1n)],
    ["mint empty id", (x) => x.mint(any<MintId>(""), root, alice, 1n)],
    ["prepare parent = child", (x) => x.prepare({ id: E("n"), parent: A1, child: A1, weight: Weight.ONE })],
    ["prepare empty id", (x) => x.prepare({ id: any<AttachmentId>(""), parent: A1, child: G("N"), weight: Weight.ONE })],
    ["prepare zero weight", (x) => x.prepare({ id: E("n"), parent: A1, child: G("N"), weight: any({ num: 0n, den: 1n }) })],
    ["seat with a number front", (x) => x.seat(eB, any(5))],
    ["seat with a plain object front", (x) => x.seat(eB, any({ num: 5n, den: 1n }))],
    ["delegate empty edge", (x) => x.delegate(alice, any<AttachmentId>(""), 1n)],
  ];
  for (const [name, call] of cases) {
    it(`InvalidArgument: ${name}`, () => {
      expect(kindOf(funded(), call)).toBe("InvalidArgument");
    });
  }

  it("InvalidArgument comes before every other check", () => {
    const s = funded();
    expect(kindOf(s, (x) => x.delegate(alice, E("nope"), 0n))).toBe("InvalidArgument"); // vs UnknownEdge
    expect(kindOf(s, (x) => x.seat(E("nope"), any(5)))).toBe("InvalidArgument"); // vs UnknownEdge
    expect(kindOf(s, (x) => x.mint(genesisAlice, G("other"), alice, -1n))).toBe("InvalidArgument"); // vs MintIdInUse
    expect(kindOf(s, (x) => x.prepare({ id: eA, parent: root, child: root, weight: Weight.ONE }))).toBe("InvalidArgument"); // vs AlreadyKnown
    expect(kindOf(s, (x) => x.spend(alice, A, -1n))).toBe("InvalidArgument"); // vs NotALeaf
    expect(kindOf(dualA1(), (x) => x.transfer(A1, alice, alice, 1n))).toBe("InvalidArgument"); // vs Quarantined
    expect(kindOf(s, (x) => x.chargeCaptured(alice, [], -1n))).toBe("InvalidArgument"); // vs EmptyPath
  });

  it("reads throw TypeError for wrong argument types; unknown ids are not errors", () => {
    const s = funded();
    expect(() => s.holdings(any(5), alice)).toThrow(TypeError);
    expect(() => s.edge(any(5))).toThrow(TypeError);
    expect(() => s.edgePosition(eA, any(null))).toThrow(TypeError);
    expect(s.holdings(G("nowhere"), alice)).toBe(0n);
    expect(s.holdings(A1, R("nobody"))).toBe(0n);
    expect(s.edge(E("nope"))).toBeNull();
    expect(s.edgePosition(E("nope"), alice)).toBe(0n);
    expect(s.record(E("nope"))).toBeNull();
    expect(s.lifecycle(E("nope"))).toBeNull();
    expect(s.gauge(E("nope"))).toBeNull();
    // strings that are not valid ids are still strings: reads treat them as unknown, never throw
    expect(s.holdings(any<GroupId>("\ud800"), alice)).toBe(0n);
    expect(s.holdings(any<GroupId>(""), alice)).toBe(0n);
    expect(s.edge(any<AttachmentId>(""))).toBeNull();
    expect(s.lineageOf(any<GroupId>(""))).toBeNull(); // ⟨1.1⟩ an unknown group is a detached top group
    expect(s.edgePosition(any<AttachmentId>(""), any<ReplicaId>(""))).toBe(0n);
  });

  it("bootstrap throws TypeError / RangeError on invalid input", () => {
    expect(() => EntitlementLedger.bootstrap(root, new Map([[alice, any(5)]]), "n")).toThrow(TypeError);
    expect(() => EntitlementLedger.bootstrap(root, new Map([[alice, -1n]]), "n")).toThrow(RangeError);
    expect(() => EntitlementLedger.bootstrap(root, new Map([[alice, MAX + 1n]]), "n")).toThrow(RangeError);
  });
});

describe("mint (§7.3)", () => {
  it("check order: MintIdInUse before ForeignRoot, ForeignRoot before NotARoot", () => {
    expect(kindOf(funded(), (s) => s.mint(genesisAlice, G("other"), alice, 1n))).toBe("MintIdInUse");
    expect(kindOf(funded(), (s) => s.mint(M("m2"), A, alice, 1n))).toBe("ForeignRoot");
  });

  it("re-minting an identical record is ok; its patch is the single mint entry", () => {
    const s = funded();
    const p = ok(attempt(s, (x) => x.mint(genesisAlice, root, alice, 100n)));
    expect(p.encode()).toBe(
      state({ mints: { [genesisAlice]: ["root", "alice", 100n] } }).encode(),
    );
    expect(s.join(p).equals(s)).toBe(true);
  });

  it("a new mint raises mintedTotal and the holder's root holdings by its amount; amount 0 is allowed", () => {
    const s = funded();
    const t = apply(s, s.mint(M("m2"), root, bob, 7n));
    expect(t.mintedTotal()).toBe(s.mintedTotal() + 7n);
    expect(t.holdings(root, bob)).toBe(s.holdings(root, bob) + 7n);
    expect(ok(s.mint(M("m0"), root, bob, 0n)).mintedTotal()).toBe(0n);
  });

  it("mint on an empty ledger defines the root; NotARoot checks inbound records of any lifecycle", () => {
    const e = EntitlementLedger.EMPTY;
    const s = apply(e, e.mint(M("m"), root, alice, 5n));
    expect(s.roots()).toEqual([root]);
    const prepared = apply(e, e.prepare({ id: eA, parent: root, child: A, weight: Weight.ONE }));
    expect(kindOf(prepared, (x) => x.mint(M("m"), A, alice, 5n))).toBe("NotARoot");
  });
});

describe("prepare / activate / close / retire (§7.4)", () => {
  it("prepare patch: the record and lifecycle PREPARED, nothing else", () => {
    const p = ok(funded().prepare({ id: E("n"), parent: A1, child: G("N"), weight: Weight.of(2n, 4n) }));
    expect(p.encode()).toBe(state({ records: { n: [["A1", "N", 1n, 2n]] }, lifecycle: { n: "PREPARED" } }).encode());
  });

  it("prepare: AlreadyKnown counts every component except transfer keys; AlreadyKnown before ChildIsRoot", () => {
    const known = funded().join(state({ issued: { ghost: { alice: 1n } } }));
    expect(kindOf(known, (s) => s.prepare({ id: E("ghost"), parent: A1, child: G("N"), weight: Weight.ONE }))).toBe("AlreadyKnown");
    const gaugeOnly = funded().join(state({ gauges: { ghost: [1n, 1n, 0n] } }));
    expect(kindOf(gaugeOnly, (s) => s.prepare({ id: E("ghost"), parent: A1, child: G("N"), weight: Weight.ONE }))).toBe("AlreadyKnown");
    const transferKey = funded().join(state({ transfers: { ghost: { alice: { bob: 1n } } } }));
    expect(attempt(transferKey, (s) => s.prepare({ id: E("ghost"), parent: A1, child: G("N"), weight: Weight.ONE })).ok).toBe(true);
    expect(kindOf(funded(), (s) => s.prepare({ id: eA, parent: A, child: root, weight: Weight.ONE }))).toBe("AlreadyKnown");
  });

  it("activate patch is lifecycle ACTIVE alone, and activating an ACTIVE edge is idempotent", () => {
    const s = apply(funded(), funded().prepare({ id: E("n"), parent: A1, child: G("N"), weight: Weight.ONE }));
    expect(ok(s.activate(E("n"))).encode()).toBe(state({ lifecycle: { n: "ACTIVE" } }).encode());
    expect(ok(funded().activate(eA)).encode()).toBe(state({ lifecycle: { eA: "ACTIVE" } }).encode());
  });

  it("activate check order: UnknownEdge for a record-less known id; DivergentRecord before WrongLifecycle; WrongLifecycle before InboundAlreadyLive; InboundAlreadyLive before WouldCreateCycle", () => {
    const issuedOnly = funded().join(state({ issued: { ghost: { alice: 1n } }, lifecycle: { ghost: "PREPARED" } }));
    expect(kindOf(issuedOnly, (s) => s.activate(E("ghost")))).toBe("UnknownEdge");
    expect(kindOf(divergent("RETIRED"), (s) => s.activate(E("eD")))).toBe("DivergentRecord");
    // eZ: root→A1 RETIRED while eA1 is live into A1
    const retiredAlt = funded().join(state({ records: { eZ: [["root", "A1", 1n]] }, lifecycle: { eZ: "RETIRED" } }));
    expect(kindOf(retiredAlt, (s) => s.activate(E("eZ")))).toBe("WrongLifecycle");
    const closingAlt = funded().join(state({ records: { eZ: [["root", "A1", 1n]] }, lifecycle: { eZ: "CLOSING" } }));
    expect(kindOf(closingAlt, (s) => s.activate(E("eZ")))).toBe("WrongLifecycle");
    // eX: A1→A would both add a second live inbound to A and close a loop A→A1→A
    const both = apply(funded(), funded().prepare({ id: E("eX"), parent: A1, child: A, weight: Weight.ONE }));
    expect(kindOf(both, (s) => s.activate(E("eX")))).toBe("InboundAlreadyLive");
  });

  it("activate: WouldCreateCycle walks up several levels", () => {
    let s = link(EntitlementLedger.EMPTY, E("pq"), G("p"), G("q"));
    s = link(s, E("qr"), G("q"), G("r"));
    s = apply(s, s.prepare({ id: E("rp"), parent: G("r"), child: G("p"), weight: Weight.ONE }));
    expect(kindOf(s, (x) => x.activate(E("rp")))).toBe("WouldCreateCycle");
    // a non-cyclic activation from the same state still works
    s = apply(s, s.prepare({ id: E("rs"), parent: G("r"), child: G("s"), weight: Weight.ONE }));
    expect(attempt(s, (x) => x.activate(E("rs"))).ok).toBe(true);
  });

  it("I-12 close: allowed from ACTIVE and CLOSING; refused on PREPARED (⟨1.1⟩) and RETIRED; patch is lifecycle CLOSING alone", () => {
    const s = apply(funded(), funded().prepare({ id: E("n"), parent: A1, child: G("N"), weight: Weight.ONE }));
    expect(kindOf(s, (x) => x.close(E("n")))).toBe("WrongLifecycle");
    expect(ok(s.close(eB)).encode()).toBe(state({ lifecycle: { eB: "CLOSING" } }).encode());
    const closing = apply(s, s.close(eB));
    expect(ok(closing.close(eB)).encode()).toBe(state({ lifecycle: { eB: "CLOSING" } }).encode());
    const retired = apply(closing, closing.retire(eB));
    expect(kindOf(retired, (x) => x.close(eB))).toBe("WrongLifecycle");
    expect(kindOf(divergent("RETIRED"), (x) => x.close(E("eD")))).toBe("DivergentRecord");
    const lcOnly = funded().join(state({ lifecycle: { ghost: "ACTIVE" } }));
    expect(kindOf(lcOnly, (x) => x.close(E("ghost")))).toBe("UnknownEdge");
  });

  it("retire check order: WrongLifecycle before NotDrained; DivergentRecord before WrongLifecycle", () => {
    expect(kindOf(funded(), (s) => s.retire(eA))).toBe("WrongLifecycle");
    expect(kindOf(divergent("ACTIVE"), (s) => s.retire(E("eD")))).toBe("DivergentRecord");
    expect(kindOf(funded(), (s) => s.retire(E("nope")))).toBe("UnknownEdge");
  });

  it("I-12 NotDrained names every replica with a non-zero position, in decimal", () => {
    const s = final131();
    const c = apply(s, s.close(eA));
    const r = refused(attempt(c, (x) => x.retire(eA)));
    expect(r.kind).toBe("NotDrained");
    expect(r.detail).toEqual({ alice: "55", bob: "-4" });
  });

  it("I-12 retire refuses while positions are crossed even though outstanding is 0", () => {
    let s = final131();
    s = apply(s, s.release(alice, eA1, 15n));
    s = apply(s, s.release(bob, eA1, 6n));
    expect(s.holdings(A, alice)).toBe(45n);
    expect(s.holdings(A, bob)).toBe(6n);
    s = apply(s, s.release(alice, eA, 45n));
    s = apply(s, s.release(bob, eA, 6n));
    expect(s.edge(eA)!.outstanding).toBe(0n);
    expect(s.edgePosition(eA, alice)).toBe(10n);
    expect(s.edgePosition(eA, bob)).toBe(-10n);
    s = apply(s, s.close(eA));
    const r = refused(attempt(s, (x) => x.retire(eA)));
    expect(r.kind).toBe("NotDrained");
    expect(r.detail).toEqual({ alice: "10", bob: "-10" });
    // eA1 itself is drained per replica and retires
    s = apply(s, s.close(eA1));
    expect(attempt(s, (x) => x.retire(eA1)).ok).toBe(true);
  });

  it("I-12 after retire, delegate and release refuse and edge() is frozen", () => {
    let s = final131();
    s = apply(s, s.close(eB));
    expect(kindOf(s, (x) => x.delegate(bob, eB, 1n))).toBe("WrongLifecycle"); // CLOSING: no new entitlement
    s = apply(s, s.release(bob, eB, 20n)); // CLOSING still releases
    const frozen = s.edge(eB);
    expect(frozen).toEqual({ attachment: eB, issued: 20n, returned: 20n, spent: 0n, outstanding: 0n, committedService: 0n });
    s = apply(s, s.retire(eB));
    expect(s.lifecycle(eB)).toBe("RETIRED");
    expect(refused(attempt(s, (x) => x.delegate(bob, eB, 1n))).kind).toBe("WrongLifecycle");
    expect(attempt(s, (x) => x.release(bob, eB, 1n)).ok).toBe(false);
    expect(s.edge(eB)).toEqual(frozen);
    s = apply(s, s.spend(bob, A1, 1n));
    s = apply(s, s.prepare({ id: E("eB2"), parent: A, child: B, weight: Weight.ONE }));
    s = apply(s, s.activate(E("eB2")));
    s = apply(s, s.delegate(alice, E("eB2"), 3n));
    expect(s.edge(eB)).toEqual(frozen);
    expect(s.isLeaf(root)).toBe(false);
    expect(s.childrenOf(root).map((x) => x.attachment)).toEqual([eA]);
  });

  it("retire patch: RETIRED plus the drain witness (the edge's four counter maps, gauge and ⟨1.1⟩ its writers' mints)", () => {
    let s = final131();
    s = apply(s, s.close(eB));
    s = apply(s, s.release(bob, eB, 20n));
    const p = ok(s.retire(eB));
    expect(p.encode()).toBe(
      state({
        lifecycle: { eB: "RETIRED" },
        mints: { [genesisBob]: ["root", "bob", 50n] }, // ⟨1.1⟩ the writers' mints
        issued: { eB: { bob: 20n } },
        returned: { eB: { bob: 20n } },
        gauges: { eB: [20n, 1n, 20n] },
      }).encode(),
    );
    // a replica that receives RETIRED before the draining release reports nothing false
    const before = final131();
    expect(before.join(p).validate()).toEqual([]);
  });
});

describe("seat (§7.5)", () => {
  it("patch: gauge (max(front, obs/w), obs); no lifecycle requirement", () => {
    const s = state({
      records: { e: [["root", "E", 2n]] },
      lifecycle: { e: "RETIRED" },
      issued: { e: { a: 6n, b: 4n } },
    });
    expect(ok(s.seat(E("e"), Rational.of(3n))).encode()).toBe(state({ gauges: { e: [5n, 1n, 10n] } }).encode());
    expect(ok(s.seat(E("e"), Rational.of(7n, 2n))).encode()).toBe(state({ gauges: { e: [5n, 1n, 10n] } }).encode());
    expect(ok(s.seat(E("e"), Rational.of(11n, 2n))).encode()).toBe(state({ gauges: { e: [11n, 2n, 10n] } }).encode());
    const prepared = state({ records: { e: [["root", "E", 1n]] }, lifecycle: { e: "PREPARED" } });
    expect(ok(prepared.seat(E("e"), Rational.of(-3n))).encode()).toBe(state({ gauges: { e: [0n, 1n, 0n] } }).encode());
  });

  it("check order: UnknownEdge before AlreadySeated (gauge-only id); DivergentRecord before AlreadySeated", () => {
    const gaugeOnly = state({ gauges: { e: [1n, 1n, 0n] } });
    expect(kindOf(gaugeOnly, (s) => s.seat(E("e"), Rational.ONE))).toBe("UnknownEdge");
    expect(kindOf(divergent(), (s) => s.seat(E("eD"), Rational.ONE))).toBe("DivergentRecord");
  });
});

describe("delegate (§7.6)", () => {
  it("patch of §13.1 step 1: issued, checkpoint and the witness (alice's mint)", () => {
    const p = ok(tree().delegate(alice, eA, 60n));
    expect(p.encode()).toBe(
      state({
        mints: { [genesisAlice]: ["root", "alice", 100n] },
        issued: { eA: { alice: 60n } },
        gauges: { eA: [20n, 1n, 60n] },
      }).encode(),
    );
  });

  it("patch carries the replica's current returned/leafSpent/rollupSpent on the edge and the lineage witness", () => {
    let s = funded();
    s = apply(s, s.spend(alice, A1, 3n));
    s = apply(s, s.release(alice, eA1, 2n));
    // alice holds 35 at A (she gets 2 back); delegate 1 more on eA1
    const p = ok(s.delegate(alice, eA1, 1n));
    expect(p.encode()).toBe(
      state({
        mints: { [genesisAlice]: ["root", "alice", 100n] },
        issued: { eA: { alice: 60n }, eA1: { alice: 26n } },
        returned: { eA1: { alice: 2n } },
        leafSpent: { eA1: { alice: 3n } },
        rollupSpent: { eA: { alice: 3n } },
        gauges: { eA: [20n, 1n, 60n], eA1: [26n, 1n, 26n] },
      }).encode(),
    );
  });

  it("check order: WrongLifecycle before ChildQuarantined; ChildQuarantined before InsufficientHoldings; a quarantined parent reports ChildQuarantined", () => {
    const closingDual = dualA1().join(state({ lifecycle: { eA1: "CLOSING" } }));
    expect(kindOf(closingDual, (s) => s.delegate(alice, eA1, 1n))).toBe("WrongLifecycle");
    expect(kindOf(dualA1(), (s) => s.delegate(alice, eA1, 10_000n))).toBe("ChildQuarantined");
    // A quarantined by a second live inbound into A: both A and A1 are quarantined
    const dualA = funded().join(state({ records: { eY: [["B", "A", 1n]] }, lifecycle: { eY: "ACTIVE" } }));
    expect(dualA.lineageOf(A)).toBeNull();
    expect(kindOf(dualA, (s) => s.delegate(alice, eA1, 1n))).toBe("ChildQuarantined");
    const prepared = apply(funded(), funded().prepare({ id: E("n"), parent: A1, child: G("N"), weight: Weight.ONE }));
    expect(kindOf(prepared, (s) => s.delegate(alice, E("n"), 10_000n))).toBe("WrongLifecycle");
    expect(kindOf(funded(), (s) => s.delegate(alice, E("nope"), 1n))).toBe("UnknownEdge");
    expect(kindOf(divergent(), (s) => s.delegate(alice, E("eD"), 1n))).toBe("DivergentRecord");
  });

  it("§4.4 threading rule: two patches from one base do not add", () => {
    const b = tree();
    const j = b.join(ok(b.delegate(alice, eA, 10n))).join(ok(b.delegate(alice, eA, 5n)));
    expect(j.edge(eA)!.issued).toBe(10n);
    expect(j.holdings(root, alice)).toBe(90n);
  });
});

describe("witness (§7.1): donor backing stops at the level of the transfer", () => {
  const genesisBob = JSON.stringify(["root", "genesis", "bob"]);
  /** funded() plus alice → bob 10 at A (row key eA) and bob delegating 4 of it on eA1. */
  function handed(): EntitlementLedger {
    let s = funded();
    s = apply(s, s.transfer(A, alice, bob, 10n));
    return s;
  }

  it("a delegate from A carries the donor's slot, her mints and her issued on eA only (i = 1…j), plus eA's gauge", () => {
    const p = ok(handed().delegate(bob, eA1, 4n));
    expect(p.encode()).toBe(
      state({
        mints: { [genesisAlice]: ["root", "alice", 100n], [genesisBob]: ["root", "bob", 50n] },
        issued: { eA: { alice: 60n }, eA1: { bob: 4n } },
        transfers: { eA: { alice: { bob: 10n } } },
        gauges: { eA: [20n, 1n, 60n], eA1: [29n, 1n, 29n] },
      }).encode(),
    );
  });

  it("a spend two levels down re-publishes the level-1 donor backing, the actor's own slots, and both gauges", () => {
    let s = handed();
    s = apply(s, s.delegate(bob, eA1, 4n));
    const p = ok(s.spend(bob, A1, 2n));
    expect(p.encode()).toBe(
      state({
        mints: { [genesisAlice]: ["root", "alice", 100n], [genesisBob]: ["root", "bob", 50n] },
        issued: { eA: { alice: 60n }, eA1: { bob: 4n } },
        leafSpent: { eA1: { bob: 2n } },
        rollupSpent: { eA: { bob: 2n } },
        transfers: { eA: { alice: { bob: 10n } } },
        gauges: { eA: [20n, 1n, 60n], eA1: [29n, 1n, 29n] },
      }).encode(),
    );
    // the patch alone is clean, and so is the patch on topology + mints
    expect(EntitlementLedger.EMPTY.join(p).validate()).toEqual([]);
  });

  it("the actor's whole own row travels; a donor's returned on the path travels with her issued", () => {
    let s = funded();
    s = apply(s, s.release(alice, eA, 5n)); // returned[eA][alice] = 5
    s = apply(s, s.transfer(A, alice, bob, 10n));
    s = apply(s, s.transfer(A, bob, R("carol"), 3n));
    const p = ok(s.transfer(A, bob, alice, 2n));
    expect(p.encode()).toBe(
      state({
        mints: { [genesisAlice]: ["root", "alice", 100n], [genesisBob]: ["root", "bob", 50n] },
        issued: { eA: { alice: 60n } },
        returned: { eA: { alice: 5n } },
        transfers: { eA: { alice: { bob: 10n }, bob: { alice: 2n, carol: 3n } } },
        gauges: { eA: [20n, 1n, 60n] },
      }).encode(),
    );
  });
});

describe("release (§7.7)", () => {
  it("patch: returned plus the witness of the child's lineage", () => {
    const p = ok(funded().release(alice, eA1, 5n));
    expect(p.encode()).toBe(
      state({
        mints: { [genesisAlice]: ["root", "alice", 100n] },
        issued: { eA: { alice: 60n }, eA1: { alice: 25n } },
        returned: { eA1: { alice: 5n } },
        gauges: { eA: [20n, 1n, 60n], eA1: [25n, 1n, 25n] },
      }).encode(),
    );
  });

  it("check order: Quarantined (sole inbound PREPARED) before NotLiveInbound; NotLiveInbound before InsufficientHoldings", () => {
    const prepared = apply(funded(), funded().prepare({ id: E("n"), parent: A1, child: G("N"), weight: Weight.ONE }));
    expect(kindOf(prepared, (s) => s.release(alice, E("n"), 1n))).toBe("Quarantined");
    const alt = apply(funded(), funded().prepare({ id: E("eZ"), parent: root, child: A1, weight: Weight.ONE }));
    expect(kindOf(alt, (s) => s.release(alice, E("eZ"), 10_000n))).toBe("NotLiveInbound");
    expect(kindOf(dualA1(), (s) => s.release(alice, eA1, 10_000n))).toBe("Quarantined");
    expect(kindOf(funded(), (s) => s.release(alice, E("nope"), 1n))).toBe("UnknownEdge");
    expect(kindOf(divergent(), (s) => s.release(alice, E("eD"), 1n))).toBe("DivergentRecord");
  });

  it("release across the old generation after a reparent refuses NotLiveInbound", () => {
    let s = final131();
    s = apply(s, s.prepare({ id: E("eB2"), parent: A, child: B, weight: Weight.ONE }));
    s = apply(s, s.close(eB));
    s = apply(s, s.release(bob, eB, 20n));
    s = apply(s, s.retire(eB));
    s = apply(s, s.activate(E("eB2")));
    expect(s.lineageOf(B)).toEqual([eA, E("eB2")]);
    expect(kindOf(s, (x) => x.release(bob, eB, 1n))).toBe("NotLiveInbound");
  });
});

describe("transfer (§7.8)", () => {
  it("at a top group the row is keyed ROOT; patch = slot plus witness", () => {
    const s = funded();
    const p = ok(s.transfer(root, alice, bob, 7n));
    expect(p.encode()).toBe(
      state({
        mints: { [genesisAlice]: ["root", "alice", 100n] },
        transfers: { [PathKey.ROOT]: { alice: { bob: 7n } } },
      }).encode(),
    );
    const t = s.join(p);
    expect(t.holdings(root, alice)).toBe(33n);
    expect(t.holdings(root, bob)).toBe(57n);
    expect(t.replicas()).toEqual([alice, bob]);
  });

  it("the donor's row is absolute: a second transfer publishes the sum", () => {
    let s = funded();
    s = apply(s, s.transfer(A1, alice, bob, 3n));
    const p = ok(s.transfer(A1, alice, bob, 4n));
    expect(s.join(p).holdings(A1, bob)).toBe(7n);
    expect(s.join(p).edgePosition(eA1, bob)).toBe(7n);
    expect(s.join(p).edgePosition(eA1, alice)).toBe(18n);
  });

  it("check order: Quarantined before InsufficientHoldings; an unknown group is detached (⟨1.1⟩)", () => {
    expect(kindOf(dualA1(), (s) => s.transfer(A1, alice, bob, 10_000n))).toBe("Quarantined");
    expect(kindOf(funded(), (s) => s.transfer(G("nowhere"), alice, bob, 1n))).toBe("Quarantined"); // ⟨1.1⟩ detached
  });
});

describe("spend (§7.9) and chargeCaptured (§7.10)", () => {
  it("check order: NotALeaf before the zero cancel; zero is ok with an empty patch even when quarantined or at a root", () => {
    expect(kindOf(funded(), (s) => s.spend(alice, A, 0n))).toBe("NotALeaf");
    expect(ok(attempt(dualA1(), (s) => s.spend(alice, A1, 0n))).equals(EntitlementLedger.EMPTY)).toBe(true);
    const boot = EntitlementLedger.bootstrap(root, new Map([[alice, 10n]]), "n");
    expect(ok(attempt(boot, (s) => s.spend(alice, root, 0n))).encode()).toBe(EntitlementLedger.EMPTY.encode());
  });

  it("check order: Quarantined before InsufficientHoldings; RootHasNoEdge before InsufficientHoldings; an unknown group is detached (⟨1.1⟩)", () => {
    expect(kindOf(dualA1(), (s) => s.spend(alice, A1, 10_000n))).toBe("Quarantined");
    const boot = EntitlementLedger.bootstrap(root, new Map([[alice, 10n]]), "n");
    expect(kindOf(boot, (s) => s.spend(alice, root, 10_000n))).toBe("RootHasNoEdge");
    expect(kindOf(funded(), (s) => s.spend(alice, G("nowhere"), 1n))).toBe("Quarantined");
    expect(kindOf(funded(), (s) => s.spend(alice, A1, 26n))).toBe("InsufficientHoldings");
  });

  it("chargeCaptured: zero is ok before the path checks; EmptyPath; each MalformedPath cause", () => {
    const s = funded();
    expect(ok(attempt(s, (x) => x.chargeCaptured(alice, [], 0n))).equals(EntitlementLedger.EMPTY)).toBe(true);
    expect(ok(attempt(s, (x) => x.chargeCaptured(alice, [eA1, eA], 0n))).equals(EntitlementLedger.EMPTY)).toBe(true);
    expect(kindOf(s, (x) => x.chargeCaptured(alice, [], 1n))).toBe("EmptyPath");
    expect(kindOf(s, (x) => x.chargeCaptured(alice, [eA, eA], 1n))).toBe("MalformedPath");
    expect(kindOf(s, (x) => x.chargeCaptured(alice, [eA, E("nope")], 1n))).toBe("MalformedPath");
    expect(kindOf(s, (x) => x.chargeCaptured(alice, [E("nope")], 1n))).toBe("MalformedPath");
    expect(kindOf(s, (x) => x.chargeCaptured(alice, [eB, eA1], 1n))).toBe("MalformedPath");
    // an issued-only id has no record
    const ghost = s.join(state({ issued: { ghost: { alice: 1n } } }));
    expect(kindOf(ghost, (x) => x.chargeCaptured(alice, [E("ghost")], 1n))).toBe("MalformedPath");
  });

  it("chargeCaptured writes exactly what spend writes on the same path", () => {
    const s = funded();
    expect(ok(s.chargeCaptured(alice, [eA, eA1], 4n)).encode()).toBe(ok(s.spend(alice, A1, 4n)).encode());
  });

  it("chargeCaptured skips lifecycle, leaf, quarantine and holdings checks; a mid-tree path is MalformedPath (⟨1.1⟩)", () => {
    const s = dualA1();
    const p = ok(attempt(s, (x) => x.chargeCaptured(alice, [eA, eA1], 1_000n)));
    const t = s.join(p);
    expect(t.leafSpentTotal()).toBe(1_000n);
    expect(t.edge(eA1)!.spent).toBe(1_000n);
    expect(t.edge(eA)!.spent).toBe(1_000n);
    expect(kindOf(funded(), (x) => x.chargeCaptured(alice, [eA1], 2n))).toBe("MalformedPath");
  });

  it("captured charges land on the old generation after a reparent", () => {
    let s = final131();
    const captured = s.lineageOf(A1)!;
    // reparent A1 from eA1 to eA1b: both of its pockets drain back to A first
    s = apply(s, s.prepare({ id: E("eA1b"), parent: A, child: A1, weight: Weight.ONE }));
    s = apply(s, s.close(eA1));
    s = apply(s, s.transfer(A1, bob, alice, 6n)); // rebalance: bob hands his pocket back to the donor
    s = apply(s, s.release(alice, eA1, 21n));
    expect(s.edgePosition(eA1, alice)).toBe(0n);
    expect(s.edgePosition(eA1, bob)).toBe(0n);
    s = apply(s, s.retire(eA1));
    s = apply(s, s.activate(E("eA1b")));
    const before = s.edge(E("eA1b"));
    const t = apply(s, s.chargeCaptured(bob, captured, 1n));
    expect(t.edge(eA1)!.spent).toBe(5n);
    expect(t.edge(E("eA1b"))).toEqual(before);
  });
});

describe("I-18 reparent preserves holdings", () => {
  function table(s: EntitlementLedger): Record<string, bigint> {
    const t: Record<string, bigint> = {};
    for (const g of [...s.groups(), ...s.roots()]) for (const r of [alice, bob]) t[`${g}|${r}`] = s.holdings(g, r);
    return t;
  }

  it("I-18 reparenting the internal group A (its leaf A1 rebalanced and drained) under B keeps every holding", () => {
    let s = funded();
    s = apply(s, s.delegate(bob, eB, 20n));
    s = apply(s, s.transfer(A1, alice, bob, 10n));
    s = apply(s, s.spend(alice, A1, 5n));
    const eA2 = E("eA2");
    s = apply(s, s.prepare({ id: eA2, parent: B, child: A, weight: Weight.of(5n) }));
    s = apply(s, s.close(eA));
    // A1's pockets: bob hands the transfer back, alice drains A1 into A, then A into root
    s = apply(s, s.transfer(A1, bob, alice, 10n));
    expect(s.holdings(A1, alice)).toBe(20n);
    s = apply(s, s.release(alice, eA1, 20n));
    expect(s.holdings(A, alice)).toBe(55n);
    // before A drains, alice's position on eA is not zero: retire refuses
    expect(refused(s.retire(eA)).detail).toEqual({ alice: "55" });
    s = apply(s, s.release(alice, eA, 55n));
    expect(s.replicas().map((r) => s.edgePosition(eA, r))).toEqual([0n, 0n]);
    const before = table(s);
    expect(before).toEqual({
      "A1|alice": 0n, "A1|bob": 0n, "A|alice": 0n, "A|bob": 0n, "B|alice": 0n, "B|bob": 20n,
      "root|alice": 95n, "root|bob": 30n,
    });
    s = apply(s, s.retire(eA));
    s = apply(s, s.activate(eA2));
    expect(s.lineageOf(A1)).toEqual([eB, eA2, eA1]);
    expect(table(s)).toEqual(before);
    // the subtree is funded again through the new generation and spends on its new lineage
    s = apply(s, s.delegate(bob, eA2, 8n));
    s = apply(s, s.delegate(bob, eA1, 8n));
    s = apply(s, s.spend(bob, A1, 3n));
    expect([s.holdings(B, bob), s.holdings(A, bob), s.holdings(A1, bob)]).toEqual([12n, 0n, 5n]);
    expect(s.edge(eA2)!.spent).toBe(3n);
    expect(s.edge(eB)!.spent).toBe(3n);
    expect(s.edge(eA)!.spent).toBe(5n); // the old generation is frozen
    expect(s.validate()).toEqual([]);
  });

  it("I-18 reparenting a leaf keeps every holding, and the leaf spends on its new lineage", () => {
    let s = funded();
    s = apply(s, s.transfer(A1, alice, bob, 10n));
    const eA1b = E("eA1b");
    s = apply(s, s.prepare({ id: eA1b, parent: B, child: A1, weight: Weight.ONE }));
    s = apply(s, s.close(eA1));
    // each pocket drains itself; the donor's and recipient's positions are each zero afterwards
    s = apply(s, s.release(alice, eA1, 15n));
    s = apply(s, s.release(bob, eA1, 10n));
    expect(s.replicas().map((r) => s.edgePosition(eA1, r))).toEqual([0n, 0n]);
    const before = table(s);
    s = apply(s, s.retire(eA1));
    expect(s.lineageOf(A1)).toBeNull();
    s = apply(s, s.activate(eA1b));
    expect(table(s)).toEqual(before);
    expect(s.lineageOf(A1)).toEqual([eB, eA1b]);
    expect(s.validate()).toEqual([]);
  });
});

describe("I-8 overspend refusal", () => {
  it("I-8 holdings + 1 refuses InsufficientHoldings and exactly holdings succeeds, for each debit", () => {
    const s = final131();
    const cases: [string, bigint, (n: bigint) => MutationResult][] = [
      ["delegate", s.holdings(root, alice), (n) => s.delegate(alice, eB, n)],
      ["delegate internal", s.holdings(A, alice), (n) => s.delegate(alice, eA1, n)],
      ["transfer", s.holdings(A1, alice), (n) => s.transfer(A1, alice, bob, n)],
      ["transfer at root", s.holdings(root, bob), (n) => s.transfer(root, bob, alice, n)],
      ["spend", s.holdings(A1, bob), (n) => s.spend(bob, A1, n)],
      ["release", s.holdings(A, alice), (n) => s.release(alice, eA, n)],
      ["release leaf", s.holdings(A1, bob), (n) => s.release(bob, eA1, n)],
    ];
    for (const [name, h, call] of cases) {
      expect([name, h > 0n]).toEqual([name, true]);
      expect([name, refused(call(h + 1n)).kind]).toEqual([name, "InsufficientHoldings"]);
      expect([name, call(h).ok]).toEqual([name, true]);
    }
  });

  it("I-8 a replica with no holdings at a group cannot debit it at all", () => {
    const s = funded();
    expect(kindOf(s, (x) => x.spend(bob, A1, 1n))).toBe("InsufficientHoldings");
    expect(kindOf(s, (x) => x.release(bob, eA1, 1n))).toBe("InsufficientHoldings");
    expect(kindOf(s, (x) => x.transfer(A, bob, alice, 1n))).toBe("InsufficientHoldings");
    expect(kindOf(s, (x) => x.delegate(bob, eA1, 1n))).toBe("InsufficientHoldings");
  });
});

describe("I-9 idempotent re-delivery", () => {
  it("I-9 delivering a spend patch 5× equals delivering it once; history rises once", () => {
    const s = final131();
    const p = ok(s.spend(bob, A1, 3n));
    const once = s.join(p);
    let many = s;
    for (let i = 0; i < 5; i++) {
      many = many.join(p);
      expect(many.equals(once)).toBe(true);
      expect(many.leafSpentTotal()).toBe(s.leafSpentTotal() + 3n);
      expect(many.holdings(A1, bob)).toBe(s.holdings(A1, bob) - 3n);
    }
    // also into a view that has only some of the history
    const partial = EntitlementLedger.EMPTY.join(p).join(p).join(p);
    expect(partial.equals(EntitlementLedger.EMPTY.join(p))).toBe(true);
  });
});

describe("I-15 overflow", () => {
  it("I-15 issued[e] = {alice: MAX, bob: 1}: edge(e) and validate() throw LedgerOverflowError, every time", () => {
    const s = state({ records: { e: [["root", "E", 1n]] }, issued: { e: { alice: MAX, bob: 1n } } });
    for (let i = 0; i < 2; i++) {
      expect(() => s.edge(E("e"))).toThrow(LedgerOverflowError);
      expect(() => s.validate()).toThrow(LedgerOverflowError);
      expect(() => s.baseIssuance(E("e"))).toThrow(LedgerOverflowError);
    }
  });

  it("I-15 mintedTotal never wraps", () => {
    const s = state({ mints: { m1: ["root", "alice", MAX], m2: ["root", "bob", 1n] } });
    expect(() => s.mintedTotal()).toThrow(LedgerOverflowError);
    expect(s.holdings(root, alice)).toBe(MAX);
  });

  it("I-15 holdings is evaluated left to right: a transient intermediate overflow throws", () => {
    // MAX (mint) + 5 (transfer in) overflows before the child's −10 would bring it back
    const s = state({
      records: { c: [["root", "X", 1n]] },
      mints: { m: ["root", "alice", MAX] },
      transfers: { "": { bob: { alice: 5n } } },
      issued: { c: { alice: 10n } },
    });
    expect(() => s.holdings(root, alice)).toThrow(LedgerOverflowError);
    expect(() => s.holdings(root, alice)).toThrow(LedgerOverflowError);
  });

  it("I-15 a mutator whose slot would leave I64 throws instead of refusing", () => {
    const s = state({
      records: { e: [["root", "E", 1n]] },
      mints: { m: ["root", "alice", 100n] },
      issued: { e: { alice: MAX } },
      returned: { e: { alice: MAX - 5n } },
      gauges: { e: [0n, 1n, MAX] },
    });
    expect(s.holdings(root, alice)).toBe(95n);
    expect(() => s.delegate(alice, E("e"), 10n)).toThrow(LedgerOverflowError);
    const t = state({
      mints: { m: ["root", "alice", 100n] },
      transfers: { "": { carol: { alice: MAX }, alice: { bob: MAX } } },
    });
    expect(t.holdings(root, alice)).toBe(100n);
    expect(() => t.transfer(root, alice, bob, 1n)).toThrow(LedgerOverflowError);
  });

  it("I-15 checks run before the patch is computed: a debit beyond holdings refuses even where its slot would overflow", () => {
    const s = state({
      records: { e: [["root", "E", 1n]] },
      mints: { m: ["root", "alice", 100n] },
      issued: { e: { alice: MAX - 1n } },
      returned: { e: { alice: MAX - 11n } },
      transfers: { "": { alice: { bob: MAX - 50n }, carol: { alice: MAX - 50n } } },
    });
    expect(s.holdings(root, alice)).toBe(90n);
    // delegate of 95 > 90: InsufficientHoldings, although I + 95 would leave I64
    expect(kindOf(s, (x) => x.delegate(alice, E("e"), 95n))).toBe("InsufficientHoldings");
    // transfer of 91 > 90: refusal, although T(ROOT, alice, bob) + 91 would leave I64
    expect(kindOf(s, (x) => x.transfer(root, alice, bob, 91n))).toBe("InsufficientHoldings");
    // within holdings the same calls overflow and throw
    expect(() => s.delegate(alice, E("e"), 2n)).toThrow(LedgerOverflowError);
    expect(() => s.transfer(root, alice, bob, 51n)).toThrow(LedgerOverflowError);
  });

  it("I-15 sums of non-negative transfer inflows overflow even when the net would fit", () => {
    const s = state({
      mints: { m: ["root", "alice", 1n] },
      transfers: { "": { b1: { alice: MAX }, b2: { alice: MAX }, alice: { c: MAX } } },
    });
    expect(() => s.holdings(root, alice)).toThrow(LedgerOverflowError);
  });
});

describe("I-17 gauge", () => {
  const e = E("e");
  const grantors = [R("G1"), R("G2"), R("G3")] as const;
  function base(w: Weight, front: Rational): EntitlementLedger {
    let s = EntitlementLedger.bootstrap(root, new Map(grantors.map((g) => [g, 10_000n] as const)), "n");
    s = link(s, e, root, G("E"), w);
    return apply(s, s.seat(e, front));
  }

  function unseatedBase(w: Weight): EntitlementLedger {
    const s = EntitlementLedger.bootstrap(root, new Map(grantors.map((g) => [g, 10_000n] as const)), "n");
    return link(s, e, root, G("E"), w);
  }

  it("I-17 the checkpoint travels in the same patch as the issued bump", () => {
    const s = base(Weight.of(2n, 3n), Rational.of(5n));
    const p = ok(s.delegate(grantors[0], e, 4n));
    expect(p.baseIssuance(e)).toBe(4n);
    expect(p.gauge(e)).not.toBeNull();
    expect(p.gauge(e)!.folded).toBe(4n);
    expect(p.gauge(e)!.floor.equals(Rational.of(5n).add(Rational.of(6n)))).toBe(true);
  });

  it("I-17 no reachable view reads below seat + baseIssuance/w; with the seat first the read is exact", () => {
    const weights = [Weight.ONE, Weight.of(2n, 3n), Weight.of(5n, 2n)];
    fc.assert(
      fc.property(
        fc.constantFrom(...weights),
        fc.bigInt({ min: -20n, max: 200n }),
        fc.array(fc.tuple(fc.nat(2), fc.bigInt({ min: 1n, max: 9n }), fc.nat(7)), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
        (w, f, acts, picks) => {
          const front = Rational.of(f);
          const b = base(w, front);
          const views = grantors.map(() => b);
          const published: EntitlementLedger[] = [];
          for (const [who, amount, gossip] of acts) {
            // sometimes a grantor first absorbs some already-published patches
            if (gossip < published.length) views[who] = views[who]!.join(published[gossip]!);
            const p = ok(views[who]!.delegate(grantors[who]!, e, amount));
            published.push(p);
            views[who] = views[who]!.join(p);
          }
          const seated = b.gauge(e)!.floor; // max(front, 0): a seat never sits behind issuance already had
          expect(seated.equals(Rational.max(front, Rational.ZERO))).toBe(true);
          const lower = (v: EntitlementLedger): Rational => seated.add(Rational.perWeight(v.baseIssuance(e), w));
          for (const v of views) expect(v.grossVirtualService(e)!.equals(lower(v))).toBe(true);
          // random subsets of the published patches over the seated base, and over the unseated
          // base (a view that never saw the seat but holds a checkpoint that accounts for it)
          const unseated = views.length > 0 ? unseatedBase(w) : b;
          for (const mask of picks) {
            for (const start of [b, unseated]) {
              let v = start;
              let any = false;
              published.forEach((p, i) => {
                if ((mask >> (i % 30)) & 1) {
                  v = v.join(p);
                  any = true;
                }
              });
              if (start === unseated && !any) continue;
              const g = v.grossVirtualService(e)!;
              expect(g.compare(lower(v))).toBeGreaterThanOrEqual(0);
              expect(g.equals(lower(v))).toBe(true);
            }
          }
        },
      ),
      params(),
    );
  });
});

describe("I-19 mint union", () => {
  it("I-19 the same act bootstrapped on two replicas converges to one entry", () => {
    const x = EntitlementLedger.bootstrap(root, new Map([[alice, 100n], [bob, 5n]]), "act-1");
    const y = EntitlementLedger.bootstrap(root, new Map([[bob, 5n], [alice, 100n]]), "act-1");
    expect(x.equals(y)).toBe(true);
    expect(x.join(y).equals(x)).toBe(true);
    expect(x.join(y).mintedTotal()).toBe(105n);
  });

  it("I-19 distinct acts for one holder both count", () => {
    const x = EntitlementLedger.bootstrap(root, new Map([[alice, 100n]]), "act-1");
    const y = EntitlementLedger.bootstrap(root, new Map([[alice, 100n]]), "act-2");
    const j = x.join(y);
    expect(j.mintedTotal()).toBe(200n);
    expect(j.holdings(root, alice)).toBe(200n);
    expect(j.roots()).toEqual([root]);
    expect(j.validate()).toEqual([]);
  });

  it("I-19 two different records under one MintId: the larger by (root, holder, amount) wins", () => {
    const x = state({ mints: { m: ["root", "alice", 7n] } });
    const y = state({ mints: { m: ["root", "alice", 9n] } });
    const z = state({ mints: { m: ["root", "bob", 1n] } });
    expect(x.join(y).mintedTotal()).toBe(9n);
    expect(y.join(x).mintedTotal()).toBe(9n);
    expect(x.join(z).holdings(root, bob)).toBe(1n);
    expect(x.join(z).holdings(root, alice)).toBe(0n);
  });
});
