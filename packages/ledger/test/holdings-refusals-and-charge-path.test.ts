/**
 * Issue 19, helper E: the refusal texts of retire, seat, delegate, release, transfer, spend and
 * chargeCaptured (a test that checks only the kind passes with an emptied message), and
 * chargeCaptured's path check as ledger.md §7.10 words it over divergent records: "some record of
 * `a` has `child =` the `parent` of some record of `b`" — some, not every, on both sides — and a
 * repeated id is refused even where its records would chain.
 */
import { describe, expect, it } from "vitest";
import type { AttachmentId } from "../src/index.ts";
import type { MutationResult } from "./arbitraries.ts";
import { apply, E, EntitlementLedger, G, link, ok, R, Rational, refused, said, state, Weight } from "./arbitraries.ts";

const alice = R("alice");
const bob = R("bob");
const root = G("root");
const A = G("A");

/** root →eA→ A live; alice minted 10 at root. */
const base = (): EntitlementLedger => link(EntitlementLedger.bootstrap(root, new Map([[alice, 10n]]), "n"), E("eA"), root, A);
/** base with 4 of alice's units delegated to A. */
const delegated = (): EntitlementLedger => apply(base(), base().delegate(alice, E("eA"), 4n));
const closing = (s: EntitlementLedger): EntitlementLedger => apply(s, s.close(E("eA")));
/** A has two live inbound edges (eA and eB, both from root): A's lineage is null (quarantined). */
const forked = (): EntitlementLedger =>
  state({
    records: { eA: [["root", "A", 1n]], eB: [["root", "A", 1n]] },
    lifecycle: { eA: "ACTIVE", eB: "ACTIVE" },
    mints: { m: ["root", "alice", 10n] },
  });
/** base with a second, PREPARED edge eB root → A. */
const withEB = (): EntitlementLedger => apply(base(), base().prepare({ id: E("eB"), parent: root, child: A, weight: Weight.ONE }));

describe("each refusal of retire … chargeCaptured names its reason", () => {
  it("the fixtures are what the cases assume", () => {
    expect(forked().lineageOf(A)).toBeNull();
    expect(base().lineageOf(A)).toEqual(["eA"]);
    expect(delegated().holdings(A, alice)).toBe(4n);
  });

  const cases: [string, () => MutationResult, string][] = [
    ["seat with a front that is not a Rational", () => base().seat(E("eA"), 1n as unknown as Rational), "InvalidArgument: front must be a Rational"],
    ["seat twice", () => { const s = apply(base(), base().seat(E("eA"), Rational.ZERO)); return s.seat(E("eA"), Rational.ONE); }, "AlreadySeated: edge eA already has a gauge"],
    ["delegate 0", () => base().delegate(alice, E("eA"), 0n), "InvalidArgument: delegate needs a valid replica and an amount in 1 … 2^63−1"],
    ["delegate on a CLOSING edge", () => closing(base()).delegate(alice, E("eA"), 1n), "WrongLifecycle: edge eA is CLOSING, not ACTIVE"],
    ["delegate into a quarantined child", () => forked().delegate(alice, E("eA"), 1n), "ChildQuarantined: child A is quarantined"],
    ["delegate more than held", () => base().delegate(alice, E("eA"), 11n), "InsufficientHoldings: alice holds 10 at root, asked 11"],
    ["release 0", () => delegated().release(alice, E("eA"), 0n), "InvalidArgument: release needs a valid replica and an amount in 1 … 2^63−1"],
    ["release from a quarantined child", () => forked().release(alice, E("eA"), 1n), "Quarantined: child A is quarantined"],
    ["release over an edge that is not the child's live inbound", () => withEB().release(alice, E("eB"), 1n), "NotLiveInbound: eB is not A's live inbound edge"],
    ["release more than held", () => delegated().release(alice, E("eA"), 5n), "InsufficientHoldings: alice holds 4 at A, asked 5"],
    ["transfer to oneself", () => base().transfer(root, alice, alice, 1n), "InvalidArgument: transfer needs valid ids, from ≠ to and an amount in 1 … 2^63−1"],
    ["transfer at a quarantined group", () => forked().transfer(A, alice, bob, 1n), "Quarantined: A is quarantined"],
    ["transfer more than held", () => base().transfer(root, alice, bob, 11n), "InsufficientHoldings: alice holds 10 at root, asked 11"],
    ["spend a negative amount", () => delegated().spend(alice, A, -1n), "InvalidArgument: spend needs valid ids and an amount in 0 … 2^63−1"],
    ["spend at a group with children", () => base().spend(alice, root, 1n), "NotALeaf: root has child edges"],
    ["spend at a quarantined leaf", () => forked().spend(alice, A, 1n), "Quarantined: A is quarantined"],
    ["spend at a childless root", () => EntitlementLedger.bootstrap(root, new Map([[alice, 10n]]), "n").spend(alice, root, 1n), "RootHasNoEdge: root is a top group with no edge to charge"],
    ["spend more than held", () => delegated().spend(alice, A, 5n), "InsufficientHoldings: alice holds 4 at A, asked 5"],
    ["chargeCaptured with a path that is not a list", () => base().chargeCaptured(alice, "eA" as unknown as AttachmentId[], 1n), "InvalidArgument: chargeCaptured needs a valid replica, a list of edge ids and an amount in 0 … 2^63−1"],
    ["chargeCaptured on an empty path", () => base().chargeCaptured(alice, [], 1n), "EmptyPath: the captured path is empty"],
    ["chargeCaptured with a repeated edge", () => base().chargeCaptured(alice, [E("eA"), E("eA")], 1n), "MalformedPath: the captured path repeats an edge"],
    ["chargeCaptured over an edge without a record", () => base().chargeCaptured(alice, [E("eA"), E("ghost")], 1n), "MalformedPath: edge ghost of the captured path has no record"],
    ["chargeCaptured from mid-tree", () => { const s = link(base(), E("eAB"), A, G("B")); return s.chargeCaptured(alice, [E("eAB")], 1n); }, "MalformedPath: the captured path starts at eAB, whose parent is not the root"],
    ["chargeCaptured over a first step that does not chain", () => { const s = link(base(), E("eC"), root, G("C")); return s.chargeCaptured(alice, [E("eA"), E("eC")], 1n); }, "MalformedPath: eA does not lead into eC"],
    ["chargeCaptured over a later step that does not chain", () => { const s = link(link(base(), E("eAB"), A, G("B")), E("eC"), root, G("C")); return s.chargeCaptured(alice, [E("eA"), E("eAB"), E("eC")], 1n); }, "MalformedPath: eAB does not lead into eC"],
  ];
  it.each(cases)("%s", (_, call, message) => {
    expect(said(call())).toBe(message);
  });

  it("retire of an undrained edge: the text, and the detail of each non-zero position", () => {
    const r = closing(delegated()).retire(E("eA"));
    expect(said(r)).toBe("NotDrained: edge eA still has non-zero positions");
    expect(refused(r).detail).toEqual({ alice: "4" });
  });
});

describe("chargeCaptured's chain check over divergent records (ledger.md §7.10: some record, on both sides)", () => {
  const mints = { m: ["root", "alice", 10n] } as const;

  it("a divergent first edge chains when one of its records leads into the next edge", () => {
    // e1 has two records, root→A and root→Z; only root→A leads into e2 = A→B.
    const s = state({
      records: { e1: [["root", "A", 1n], ["root", "Z", 1n]], e2: [["A", "B", 1n]] },
      lifecycle: { e1: "ACTIVE", e2: "ACTIVE" },
      mints,
    });
    const p = ok(s.chargeCaptured(alice, [E("e1"), E("e2")], 3n));
    expect(p.leafSpentTotal()).toBe(3n);
  });

  it("a divergent second edge chains when one of its records starts where the previous edge ends", () => {
    // e2 has two records, A→B and X→B; only A→B starts at e1's child A.
    const s = state({
      records: { e1: [["root", "A", 1n]], e2: [["A", "B", 1n], ["X", "B", 1n]] },
      lifecycle: { e1: "ACTIVE", e2: "ACTIVE" },
      mints,
    });
    const p = ok(s.chargeCaptured(alice, [E("e1"), E("e2")], 3n));
    expect(p.leafSpentTotal()).toBe(3n);
  });

  it("a repeated id is refused even when its divergent records would chain into themselves", () => {
    // e has root→A and A→B: [e, e] passes the root-start and the chain check; only the repeat check refuses it.
    const s = state({ records: { e: [["root", "A", 1n], ["A", "B", 1n]] }, lifecycle: { e: "ACTIVE" }, mints });
    expect(said(s.chargeCaptured(alice, [E("e"), E("e")], 1n))).toBe("MalformedPath: the captured path repeats an edge");
  });
});
