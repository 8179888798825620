/**
 * Mutation-testing gaps of `splitState` (fragments.ts, node.md §4.2): which entries form one group and
 * what each oversize group is called, the order groups are packed in, the packing boundaries (a group
 * or a pack exactly at the budget fits), the halving check, and a fragment that packs two root-path
 * donor rows. Every fixture is built inside its test.
 */
import { describe, expect, it } from "vitest";
import { encodeStateBinary } from "../src/binary.ts";
import { splitState } from "../src/fragments.ts";
import type { AttachmentId, MintId, PathKey, ReplicaId } from "../src/ids.ts";
import { emptyState } from "../src/state.ts";
import type { State } from "../src/state.ts";
import { E, EntitlementLedger, G, M, R } from "./arbitraries.ts";

const enc = (s: State): number => encodeStateBinary(s, []).length;
const ROOT = "" as PathKey;
const P = (e: string): PathKey => e as PathKey;

/** A state built by `fill` on an empty one. */
function build(fill: (s: State) => void): State {
  const s = emptyState();
  fill(s);
  return s;
}

/** `issued[e]` with `n` distinct replicas `<e>r000…`, each slot 1, for each edge (in the given order). */
function wide(edges: readonly (readonly [string, number])[]): State {
  return build((s) => {
    for (const [e, n] of edges) {
      const slots = new Map<ReplicaId, bigint>();
      for (let i = 0; i < n; i++) slots.set(R(`${e}r${String(i).padStart(3, "0")}`), 1n);
      s.issued.set(E(e), slots);
    }
  });
}

/** The edges whose `issued` entries each fragment holds, fragment by fragment. */
const issuedEdges = (fragments: readonly State[]): string[][] => fragments.map((f) => [...f.issued.keys()]);

const row = (x: string, v: bigint): Map<ReplicaId, bigint> => new Map([[R(x), v]]);
const mint = (root: string, holder: string, amount: bigint) => ({ root: G(root), holder: R(holder), amount });

/**
 * A state with every kind of group, its maps filled in an order that is NOT the group-key order: mints
 * m1, m2 (groups `m…`), edge e1's issued slot and its own transfer rows (one group `e…e1`), the root
 * path's donors d1, d2 (groups `r…`), and edge e0 known only by its lifecycle (group `e…e0`, created last).
 */
function everyKind(): State {
  return build((s) => {
    s.mints.set(M("m1"), mint("g", "h1", 5n));
    s.mints.set(M("m2"), mint("g", "h2", 7n));
    s.issued.set(E("e1"), row("a1", 3n));
    s.transfers.set(P("e1"), new Map([[R("d9"), row("x9", 2n)]]));
    s.transfers.set(ROOT, new Map([[R("d1"), row("x1", 1n)], [R("d2"), row("x2", 4n)]]));
    s.lifecycle.set(E("e0"), "RETIRED");
  });
}

/** The groups of {@link everyKind}, in key order, each as its own state. */
function everyKindGroups(): { group: string; s: State }[] {
  return [
    { group: "e0", s: build((s) => s.lifecycle.set(E("e0"), "RETIRED")) },
    {
      group: "e1",
      s: build((s) => {
        s.issued.set(E("e1"), row("a1", 3n));
        s.transfers.set(P("e1"), new Map([[R("d9"), row("x9", 2n)]]));
      }),
    },
    { group: "m1", s: build((s) => s.mints.set(M("m1"), mint("g", "h1", 5n))) },
    { group: "m2", s: build((s) => s.mints.set(M("m2"), mint("g", "h2", 7n))) },
    { group: "d1", s: build((s) => s.transfers.set(ROOT, new Map([[R("d1"), row("x1", 1n)]]))) },
    { group: "d2", s: build((s) => s.transfers.set(ROOT, new Map([[R("d2"), row("x2", 4n)]]))) },
  ];
}

describe("splitState: groups and their names", () => {
  it("a budget below every group reports each group, named and sized exactly, in key order, and returns one empty fragment", () => {
    const s = everyKind();
    const budget = enc(emptyState()); // 3 bytes: only the empty value fits
    const groups = everyKindGroups();
    for (const g of groups) expect(enc(g.s)).toBeGreaterThan(budget);
    const r = splitState(s, budget);
    // Edge e1's transfer rows travel with its issued slot (one group "e1"); each mint and each root-path
    // donor row is a group of its own; the names drop the kind prefix; the order is the key order
    // (edges, then mints, then root donors), not the order the state's maps were filled in.
    expect(r.oversize).toEqual(groups.map((g) => ({ group: g.group, bytes: enc(g.s) })));
    expect(r.fragments).toEqual([emptyState()]);
  });

  it("a budget of 0 (even the empty value is larger) reports every group and still ends, with one empty fragment", () => {
    const s = everyKind();
    const r = splitState(s, 0);
    expect(r.oversize.map((o) => o.group)).toEqual(["e0", "e1", "m1", "m2", "d1", "d2"]);
    expect(r.fragments).toEqual([emptyState()]);
  });

  it("two root-path donor rows packed into one fragment both arrive", () => {
    const s = build((s) => {
      s.transfers.set(ROOT, new Map([[R("d1"), row("x1", 1n)], [R("d2"), row("x2", 4n)]]));
      for (const [e, slots] of wide([["e9", 20]]).issued) s.issued.set(e, slots);
    });
    const edge = wide([["e9", 20]]);
    const donors = build((s) => s.transfers.set(ROOT, new Map([[R("d1"), row("x1", 1n)], [R("d2"), row("x2", 4n)]])));
    const budget = enc(edge);
    expect(enc(donors)).toBeLessThan(budget);
    const r = splitState(s, budget);
    expect(r.oversize).toEqual([]);
    expect(r.fragments).toEqual([edge, donors]);
  });
});

describe("splitState: packing boundaries", () => {
  it("a group exactly the budget fits (it is not oversize)", () => {
    const s = wide([["e1", 1], ["e2", 1]]);
    const budget = enc(wide([["e1", 1]]));
    expect(enc(wide([["e2", 1]]))).toBe(budget);
    expect(enc(s)).toBeGreaterThan(budget);
    const r = splitState(s, budget);
    expect(r.oversize).toEqual([]);
    expect(issuedEdges(r.fragments)).toEqual([["e1"], ["e2"]]);
  });

  it("groups are packed while their summed sizes stay within the budget (a sum exactly at it still packs)", () => {
    const s = wide([["e1", 1], ["e2", 1], ["e3", 1]]);
    const one = enc(wide([["e1", 1]]));
    const budget = 2 * one; // e1 + e2 sum to exactly the budget; adding e3 passes it
    expect(enc(s)).toBeGreaterThan(budget);
    expect(enc(wide([["e1", 1], ["e2", 1]]))).toBeLessThan(budget);
    const r = splitState(s, budget);
    expect(r.oversize).toEqual([]);
    expect(issuedEdges(r.fragments)).toEqual([["e1", "e2"], ["e3"]]);
    expect(r.fragments[0]).toEqual(wide([["e1", 1], ["e2", 1]]));
  });

  it("a pack whose encoding is exactly the budget is kept whole, not halved", () => {
    // 3 + 126 replicas: packed, the string indices of e2's last replicas pass 127 and take two bytes,
    // which exactly cancels what one shared header saves — the pack is exactly the sum of its groups.
    const pair = wide([["e1", 3], ["e2", 126]]);
    const budget = enc(wide([["e1", 3]])) + enc(wide([["e2", 126]]));
    expect(enc(pair)).toBe(budget);
    const s = wide([["e1", 3], ["e2", 126], ["e3", 1]]);
    const r = splitState(s, budget);
    expect(r.oversize).toEqual([]);
    expect(issuedEdges(r.fragments)).toEqual([["e1", "e2"], ["e3"]]);
    expect(enc(r.fragments[0]!)).toBe(budget);
  });
});
