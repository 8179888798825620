import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  edgeId,
  group,
  lane,
  lowerTopology,
  MAX_TOPOLOGY_DEPTH,
  MAX_TOPOLOGY_GROUPS,
  prepareAndActivate,
  TopologyError,
  type TopologyNode,
  type TopologyErrorKind,
} from "../src/topology-builder.ts";

const genesis = () => EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId("p1"), 100n]]), "heddle-static-genesis");

function plain(records: ReturnType<typeof lowerTopology>) {
  return records.map((r) => ({ id: r.id, parent: r.parent, child: r.child, weight: r.weight.toString() }));
}

function errorKind(f: () => unknown): TopologyErrorKind | "none" | "other" {
  try {
    f();
    return "none";
  } catch (err) {
    return err instanceof TopologyError ? err.kind : "other";
  }
}

describe("lowerTopology", () => {
  it("lowers the A22 tree to records in pre-order with parent→child ids and reduced weights", () => {
    const tree = [group("tenant-a", 1, [lane("interactive", 3), lane("batch", [2, 2])]), lane("tenant-b", [6n, 4n])];
    expect(plain(lowerTopology("root", tree))).toEqual([
      { id: "root→tenant-a", parent: "root", child: "tenant-a", weight: "1/1" },
      { id: "tenant-a→interactive", parent: "tenant-a", child: "interactive", weight: "3/1" },
      { id: "tenant-a→batch", parent: "tenant-a", child: "batch", weight: "1/1" },
      { id: "root→tenant-b", parent: "root", child: "tenant-b", weight: "3/2" },
    ]);
  });

  it("suffixes later generations so a reshape gets new edge ids", () => {
    expect(edgeId("a", "b")).toBe("a→b");
    expect(edgeId("a", "b", 3)).toBe("a→b@3");
    const recs = lowerTopology("root", [group("t", 1, [lane("x", 1, { generation: 2 })])]);
    expect(recs.map((r) => r.id)).toEqual(["root→t", "t→x@2"]);
  });

  it("rejects repeated groups, cycles, bad names, weights and generations, and oversize trees, naming the kind", () => {
    expect(errorKind(() => lowerTopology("root", [lane("a", 1), group("b", 1, [lane("a", 1)])]))).toBe("duplicate-group");
    expect(errorKind(() => lowerTopology("root", [group("a", 1, [group("b", 1, [lane("a", 1)])])]))).toBe("cycle");
    expect(errorKind(() => lowerTopology("root", [group("a", 1, [lane("root", 1)])]))).toBe("cycle");
    // An object graph that loops back on itself is a cycle, not an endless recursion.
    const loop = { name: "a", weight: 1, generation: 1, children: [] as TopologyNode[] };
    loop.children.push(loop);
    expect(errorKind(() => lowerTopology("root", [loop]))).toBe("cycle");
    for (const w of [0, -1, 1.5, [1, 0], [0, 3], [1, 2, 3], Number.NaN, 2n ** 63n] as unknown[]) {
      expect(errorKind(() => lowerTopology("root", [lane("a", w as never)])), `weight ${String(w)}`).toBe("bad-weight");
    }
    for (const n of ["", "a→b", "v@2"]) expect(errorKind(() => lowerTopology("root", [lane(n, 1)]))).toBe("bad-name");
    expect(errorKind(() => lowerTopology("", []))).toBe("bad-name");
    for (const gen of [0, -1, 1.5]) expect(errorKind(() => lowerTopology("root", [lane("a", 1, { generation: gen })]))).toBe("bad-generation");
    let deep: TopologyNode = lane(`d${MAX_TOPOLOGY_DEPTH}`, 1);
    for (let i = MAX_TOPOLOGY_DEPTH - 1; i >= 1; i--) deep = group(`d${i}`, 1, [deep]);
    expect(lowerTopology("root", [deep]).length).toBe(MAX_TOPOLOGY_DEPTH);
    expect(errorKind(() => lowerTopology("root", [group("d0", 1, [deep])]))).toBe("too-large");
    const wide = Array.from({ length: MAX_TOPOLOGY_GROUPS }, (_, i) => lane(`w${i}`, 1));
    expect(lowerTopology("root", wide).length).toBe(MAX_TOPOLOGY_GROUPS);
    expect(errorKind(() => lowerTopology("root", [...wide, lane("one-more", 1)]))).toBe("too-large");
  });

  it("error messages say where the problem is", () => {
    expect(() => lowerTopology("root", [group("a", 1, [group("b", 1, [lane("a", 1)])])])).toThrow("cycle: root → a → b → a");
    expect(() => lowerTopology("root", [lane("a", 1), group("b", 1, [lane("a", 1)])])).toThrow(/"a" appears twice: at root → a and at root → b → a/);
  });
});

/** A random tree: group i hangs under group parent[i] < i, or under the root (−1). */
const treeArb = fc
  .array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 4 })), { minLength: 1, maxLength: 25 })
  .map((xs) => xs.map(([p, num, den], i) => ({ parent: i === 0 ? -1 : (p % (i + 1)) - 1, num, den })));

function toNodes(spec: { parent: number; num: number; den: number }[]): TopologyNode[] {
  const kids = (p: number): TopologyNode[] =>
    spec.flatMap((s, i) => (s.parent === p ? [group(`g${i}`, [s.num, s.den], kids(i))] : []));
  return kids(-1);
}

describe("lowerTopology properties", () => {
  it("is deterministic, one record per group, parents before children, and the built ledger has the expected lineages", () => {
    fc.assert(
      fc.property(treeArb, (spec) => {
        const nodes = toNodes(spec);
        const recs = lowerTopology("root", nodes);
        expect(plain(lowerTopology("root", toNodes(spec)))).toEqual(plain(recs));
        expect(recs.length).toBe(spec.length);
        expect(new Set(recs.map((r) => r.id)).size).toBe(spec.length);
        const seen = new Set(["root"]);
        for (const r of recs) {
          expect(seen.has(r.parent)).toBe(true);
          seen.add(r.child);
        }
        const built = prepareAndActivate(genesis(), recs);
        if (!built.ok) throw new Error(`refused ${built.refusal.kind} at ${built.edge}`);
        const l = built.ledger;
        expect(l.validate()).toEqual([]);
        spec.forEach((s, i) => {
          const path: string[] = [];
          for (let j = i; j !== -1; j = spec[j]!.parent) path.unshift(edgeId(spec[j]!.parent === -1 ? "root" : `g${spec[j]!.parent}`, `g${j}`));
          expect(l.lineageOf(GroupId(`g${i}`))).toEqual(path);
          expect(l.isLeaf(GroupId(`g${i}`))).toBe(!spec.some((t) => t.parent === i));
          expect(l.lifecycle(AttachmentId(path[path.length - 1]!))).toBe("ACTIVE");
          expect(l.record(AttachmentId(path[path.length - 1]!))!.weight.equals(Weight.of(BigInt(s.num), BigInt(s.den)))).toBe(true);
        });
        expect(genesis().join(built.patch).equals(l)).toBe(true);
        // heddleStatic applies records sorted by id (node.md §13.1): a child edge may come before its parent's.
        const sorted = prepareAndActivate(genesis(), [...recs].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0)));
        expect(sorted.ok && sorted.ledger.equals(l)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe("prepareAndActivate", () => {
  it("builds the A22 tree; two peers applying it from the same base get identical bytes", () => {
    const recs = lowerTopology("root", [group("tenant-a", 1, [lane("interactive", 3), lane("batch", 1)]), lane("tenant-b", 1)]);
    const a = prepareAndActivate(genesis(), recs);
    const b = prepareAndActivate(genesis(), recs);
    if (!a.ok || !b.ok) throw new Error("refused");
    expect(a.ledger.encode()).toBe(b.ledger.encode());
    expect(a.ledger.lineageOf(GroupId("batch"))).toEqual(["root→tenant-a", "tenant-a→batch"]);
    expect(a.ledger.childrenOf(GroupId("tenant-a")).map((c) => c.attachment)).toEqual(["tenant-a→batch", "tenant-a→interactive"]);
  });

  it("only creates generations: re-parenting a live child is refused at activate, repeating a tree at prepare", () => {
    const first = prepareAndActivate(genesis(), lowerTopology("root", [group("a", 1, [lane("x", 1)]), lane("b", 1)]));
    if (!first.ok) throw new Error("refused");
    const reshape = lowerTopology("root", [lane("a", 1), group("b", 1, [lane("x", 1, { generation: 2 })])]).filter((r) => r.child === "x");
    expect(reshape.map((r) => r.id)).toEqual(["b→x@2"]);
    const r = prepareAndActivate(first.ledger, reshape);
    expect(r).toMatchObject({ ok: false, edge: "b→x@2", step: "activate", refusal: { kind: "InboundAlreadyLive" } });
    const again = prepareAndActivate(first.ledger, lowerTopology("root", [lane("b", 1)]));
    expect(again).toMatchObject({ ok: false, edge: "root→b", step: "prepare" });
  });
});
