/**
 * Mutation-testing gaps of `TopologyIndex` (topology.ts, ledger.md §5.1): a holder's mint count after
 * its mints move one by one to another holder, and the sorted group list staying cached while records
 * only add edges between groups it already lists. Every fixture is built inside its test.
 */
import { describe, expect, it } from "vitest";
import { emptyState } from "../src/state.ts";
import { TopologyIndex } from "../src/topology.ts";
import { E, G, M, R, Weight } from "./arbitraries.ts";

const mint = (holder: string) => ({ root: G("g"), holder: R(holder), amount: 5n });
const record = (id: string, parent: string, child: string) => ({ id: E(id), parent: G(parent), child: G(child), weight: Weight.ONE });

describe("TopologyIndex: mint holders", () => {
  it("a holder of two mints leaves the replica list only after both mints have moved to another holder", () => {
    const s = emptyState();
    s.mints.set(M("m1"), mint("h1"));
    s.mints.set(M("m2"), mint("h1"));
    const ix = new TopologyIndex(s);
    expect(ix.replicas()).toEqual(["h1"]);
    ix.mintAdded(M("m1"), mint("h1"), mint("h2"));
    expect(ix.replicas()).toEqual(["h1", "h2"]); // h1 still holds m2
    expect(ix.mintsHeldBy(R("h1"))).toEqual(["m2"]);
    ix.mintAdded(M("m2"), mint("h1"), mint("h2"));
    expect(ix.replicas()).toEqual(["h2"]);
    expect(ix.mintsHeldBy(R("h1"))).toEqual([]);
    expect(ix.mintsHeldBy(R("h2"))).toEqual(["m1", "m2"]);
  });
});

describe("TopologyIndex: the sorted group list", () => {
  it("stays the same cached list when a new edge joins two groups it already lists", () => {
    const s = emptyState();
    s.records.set(E("e1"), [record("e1", "a", "b")]);
    s.records.set(E("e2"), [record("e2", "b", "c")]);
    const ix = new TopologyIndex(s);
    const before = ix.groups();
    expect(before).toEqual(["a", "b", "c"]);
    ix.recordsChanged(E("e3"), undefined, [record("e3", "a", "c")]);
    expect(ix.groups()).toBe(before); // not rebuilt (no re-sorting): no group was added
    expect(ix.childEdges(G("a"))).toEqual(["e1", "e3"]);
    expect(ix.inbound(G("c"))).toEqual(["e2", "e3"]);
  });

  it("is rebuilt when a record names a new parent or a new child", () => {
    const s = emptyState();
    s.records.set(E("e1"), [record("e1", "b", "c")]);
    const ix = new TopologyIndex(s);
    expect(ix.groups()).toEqual(["b", "c"]);
    ix.recordsChanged(E("e2"), undefined, [record("e2", "a", "b")]);
    expect(ix.groups()).toEqual(["a", "b", "c"]);
    ix.recordsChanged(E("e3"), undefined, [record("e3", "c", "d")]);
    expect(ix.groups()).toEqual(["a", "b", "c", "d"]);
  });
});
