import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, encodeLedgerMessage, fnv1a64, readLedgerMessage, splitLedgerText } from "../src/index.ts";
import { fnv1a64Reference } from "../src/fnv1a64.ts";
import { escapedLength } from "../src/ledger-fragments.ts";

describe("FNV-1a-64 (node.md §4.1)", () => {
  it("matches the spec vectors", () => {
    expect(fnv1a64("")).toBe("cbf29ce484222325");
    expect(fnv1a64("a")).toBe("af63dc4c8601ec8c");
    expect(fnv1a64("foobar")).toBe("85944171f73967e8");
  });
  it("the fast form equals the bigint definition on any bytes (property)", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (b) => fnv1a64(b) === fnv1a64Reference(b)), { numRuns: 500 });
  });
});

describe("canonical JSON", () => {
  it("sorts keys by code unit, drops whitespace, writes bigint as decimal strings", () => {
    expect(canonicalJson({ b: 1, a: [2n, "x"], Z: { y: null, x: true } })).toBe('{"Z":{"x":true,"y":null},"a":["2","x"],"b":1}');
    expect(() => canonicalJson({ a: 1.5 })).toThrow(RangeError);
  });
});

/** A ledger with `edges` leaf edges under the root, issuance and gauges on each. */
function wideLedger(edges: number): EntitlementLedger {
  let l = EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId("alice"), 1_000_000n], [ReplicaId("bob"), 5n]]), "n");
  for (let i = 0; i < edges; i++) {
    const id = AttachmentId(`edge-${String(i).padStart(4, "0")}`);
    for (const r of [l.prepare({ id, parent: GroupId("root"), child: GroupId(`g${i}`), weight: Weight.of(BigInt(1 + (i % 4))) })]) if (r.ok) l = l.join(r.patch);
    const a = l.activate(id);
    if (a.ok) l = l.join(a.patch);
    const d = l.delegate(ReplicaId("alice"), id, BigInt(10 + i));
    if (d.ok) l = l.join(d.patch);
  }
  return l;
}

describe("splitting ledger values (node.md §4.2)", () => {
  it("a value that fits stays whole", () => {
    const l = wideLedger(3);
    expect(splitLedgerText(l.encode(), 1 << 20).fragments).toEqual([l.encode()]);
  });

  it("fragments join to the original, fit the budget, and never separate an edge's entries", () => {
    const l = wideLedger(200);
    const budget = 3_000;
    const { fragments, oversizeGroups } = splitLedgerText(l.encode(), budget);
    expect(oversizeGroups).toEqual([]);
    expect(fragments.length).toBeGreaterThan(5);
    let joined = EntitlementLedger.EMPTY;
    const home = new Map<string, number>();
    fragments.forEach((f, i) => {
      expect(escapedLength(f)).toBeLessThanOrEqual(budget);
      const part = EntitlementLedger.decode(f);
      expect(part.encode()).toBe(f); // each fragment is itself canonical
      for (const e of part.knownEdges()) {
        expect(home.get(e) ?? i).toBe(i);
        home.set(e, i);
        if (part.edge(e)!.issued > 0n) expect(part.gauge(e)).not.toBeNull(); // issued travels with its gauge
      }
      joined = joined.join(part);
    });
    expect(joined.equals(l)).toBe(true);
  });

  it("any budget: join of fragments equals the original (property)", () => {
    const l = wideLedger(40);
    const text = l.encode();
    fc.assert(
      fc.property(fc.integer({ min: 600, max: 20_000 }), (budget) => {
        const { fragments, oversizeGroups } = splitLedgerText(text, budget);
        expect(oversizeGroups).toEqual([]);
        const joined = fragments.map((f) => EntitlementLedger.decode(f)).reduce((a, b) => a.join(b), EntitlementLedger.EMPTY);
        expect(joined.encode()).toBe(text);
      }),
      { numRuns: 60 },
    );
  });

  it("a single edge group that cannot fit is reported, not sent", () => {
    const l = wideLedger(2);
    const { fragments, oversizeGroups } = splitLedgerText(l.encode(), 150);
    expect(oversizeGroups.map((g) => g.group)).toContain("edge-0000");
    for (const f of fragments) expect(EntitlementLedger.decode(f).knownEdges()).toEqual([]);
  });
});

describe("ledger message schema (node.md §4.3)", () => {
  const g = "0123456789abcdef";
  const delta = { kind: "delta" as const, genesis: g, sender: "p1", inc: 0, seq: 1, part: 0, parts: 1, value: '{"format":"heddle-ledger/1"}' };
  const read = (o: unknown, from = "p1") => readLedgerMessage(new TextEncoder().encode(typeof o === "string" ? o : JSON.stringify(o)), from, g);

  it("reads a canonical message and classifies every violation", () => {
    expect(readLedgerMessage(encodeLedgerMessage(delta), "p1", g)).toEqual({ ok: true, message: delta });
    expect(read("not json")).toEqual({ ok: false, reason: "decode" });
    expect(read("[1]")).toEqual({ ok: false, reason: "decode" });
    expect(read({ ...delta, v: 2 })).toEqual({ ok: false, reason: "bad-version" });
    expect(read({ ...delta })).toEqual({ ok: false, reason: "schema" }); // no v
    expect(read({ v: 1, ...delta, extra: 1 })).toEqual({ ok: false, reason: "schema" });
    expect(read({ v: 1, ...delta, seq: -1 })).toEqual({ ok: false, reason: "schema" });
    expect(read({ v: 1, ...delta, seq: 2 ** 53 })).toEqual({ ok: false, reason: "schema" });
    expect(read({ v: 1, ...delta, part: 1, parts: 1 })).toEqual({ ok: false, reason: "schema" });
    expect(read({ v: 1, ...delta, sender: "x".repeat(257) }, "x".repeat(257))).toEqual({ ok: false, reason: "schema" });
    expect(read({ v: 1, ...delta, kind: "gossip" })).toEqual({ ok: false, reason: "schema" });
    expect(read({ v: 1, ...delta, genesis: "fedcba9876543210" })).toEqual({ ok: false, reason: "genesis-mismatch" });
    expect(read({ v: 1, ...delta }, "p2")).toEqual({ ok: false, reason: "not-author" });
    expect(read({ v: 1, kind: "ack", genesis: g, acker: "p2", sender: "p1", inc: 0, seq: 3 }, "p1")).toEqual({ ok: false, reason: "not-author" });
  });
});
