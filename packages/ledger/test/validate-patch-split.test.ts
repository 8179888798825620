/**
 * Mutation-score gaps (issue 19, helper B): `validate()`'s OrphanedTransferPath check (ledger.md §9),
 * the patch builder's lifecycle join and sealed empty components (§4.4), and `splitState`'s packing
 * (node.md §4.2): the whole-value shortcut, the default `known` list and the halving of an overfull
 * packed fragment.
 */
import { describe, expect, it } from "vitest";
import { encodeStateBinary } from "../src/binary.ts";
import { splitState } from "../src/fragments.ts";
import type { AttachmentId, ReplicaId } from "../src/ids.ts";
import { PatchBuilder } from "../src/patch.ts";
import { emptyState } from "../src/state.ts";
import type { State } from "../src/state.ts";
import { MAX } from "../src/index.ts";
import { E, EntitlementLedger, state } from "./arbitraries.ts";

describe("validate(): OrphanedTransferPath", () => {
  it("a donor that received nothing is still a party (its own stranded position fires)", () => {
    // old generation of C retired, nw live; a was issued 10 on old and sent 5 to b; b released 5.
    // pos(old, b) = −5 + 5 = 0, so only the donor a (pos 10 − 5 = 5, tnet −5) makes the row orphaned.
    const s = state({
      records: { old: [["root", "C", 1n]], nw: [["root", "C", 1n]] },
      lifecycle: { old: "RETIRED", nw: "ACTIVE" },
      mints: { m: ["root", "a", 100n] },
      issued: { old: { a: 10n } },
      returned: { old: { b: 5n } },
      transfers: { old: { a: { b: 5n } } },
    });
    expect(s.validate()).toEqual([
      { kind: "ClosureViolation", edge: E("old") },
      { kind: "OrphanedTransferPath", path: "old" },
    ]);
  });

  it("orphaned keys are reported in key order whatever order the state's map holds them in", () => {
    // join clones the larger side and appends the smaller side's keys: the map holds zz before aa
    const zz = state({ transfers: { zz: { a: { b: 5n }, c: { d: 1n } } } });
    const aa = state({ transfers: { aa: { a: { b: 5n } } } });
    const joined = zz.join(aa);
    expect([...(joined as unknown as { s: State }).s.transfers.keys()]).toEqual(["zz", "aa"]);
    expect(joined.validate()).toEqual([
      { kind: "OrphanedTransferPath", path: "aa" },
      { kind: "OrphanedTransferPath", path: "zz" },
    ]);
  });
});

describe("validate(): OrphanedTransferPath parties are read in ascending order", () => {
  it("the first party in id order decides, so the report does not depend on the map's insertion order", () => {
    // z sends MAX to each of a and b: tnet(ghost, z) = −2·MAX overflows, tnet(ghost, a) = MAX ≠ 0.
    // Parties in ascending order (a, b, z) fire at a before z is read; insertion order (z, a, b)
    // would read z first and throw. Joined with another ledger in either order, the same report.
    const x = state({ transfers: { ghost: { z: { a: MAX, b: MAX } } } });
    const y = state({ transfers: { ghost2: { c: { d: 1n, e: 1n } } } });
    const want = [{ kind: "OrphanedTransferPath", path: "ghost" }];
    expect(x.validate()).toEqual(want);
    const both = [...want, { kind: "OrphanedTransferPath", path: "ghost2" }];
    expect(x.join(y).validate()).toEqual(both);
    expect(y.join(x).validate()).toEqual(both);
  });
});

describe("PatchBuilder", () => {
  it("lifecycle only ever rises within one patch", () => {
    const p = new PatchBuilder();
    const e = E("e");
    p.lifecycle(e, "ACTIVE");
    p.lifecycle(e, "PREPARED");
    expect(p.s.lifecycle.get(e)).toBe("ACTIVE");
    p.lifecycle(e, "RETIRED");
    expect(p.s.lifecycle.get(e)).toBe("RETIRED");
    p.lifecycle(e, "CLOSING");
    expect(p.s.lifecycle.get(e)).toBe("RETIRED");
  });

  it("an untouched component is the sealed shared empty map: writing it is an internal error", () => {
    const p = new PatchBuilder();
    expect(() => p.s.records.set(E("e"), [])).toThrow(new Error("internal: write to a shared empty component"));
  });
});

/** `issued[e]` with `n` distinct replicas `<e>r000…`, each slot 1. */
function wide(edges: readonly string[], n: number): State {
  const s = emptyState();
  for (const e of edges) {
    const slots = new Map<ReplicaId, bigint>();
    for (let i = 0; i < n; i++) slots.set(`${e}r${String(i).padStart(3, "0")}` as ReplicaId, 1n);
    s.issued.set(e as AttachmentId, slots);
  }
  return s;
}

describe("splitState", () => {
  it("a value that fits comes back whole with no oversize groups", () => {
    const s = wide(["e1"], 3);
    const r = splitState(s, encodeStateBinary(s, []).length);
    expect(r.fragments).toHaveLength(1);
    expect(r.fragments[0]).toBe(s);
    expect(r.oversize).toEqual([]);
  });

  it("no known strings by default: 128 strings fit exactly (the 129th index would need a second byte)", () => {
    const s = wide(["e1"], 127); // "e1" + 127 replicas = string indices 0 … 127, one byte each
    const budget = encodeStateBinary(s, []).length;
    expect(encodeStateBinary(s, ["x"]).length).toBe(budget + 1); // one assumed-known string shifts an index to 128
    const r = splitState(s, budget);
    expect(r.fragments[0]).toBe(s);
    expect(r.oversize).toEqual([]);
  });

  it("a packed fragment that outgrows the budget (indices widening past 127) is halved", () => {
    // Alone, each edge's group has 101 strings (one-byte indices); packed together the second
    // edge's 100 replica indices pass 127 and take two bytes, so the pack exceeds the sum.
    const s = wide(["e1", "e2"], 100);
    const single = (e: string): number => encodeStateBinary(wide([e], 100), []).length;
    const budget = single("e1") + single("e2");
    expect(encodeStateBinary(s, []).length).toBeGreaterThan(budget);
    const r = splitState(s, budget);
    expect(r.oversize).toEqual([]);
    expect(r.fragments.map((f) => [...f.issued.keys()])).toEqual([["e1"], ["e2"]]);
    for (const f of r.fragments) expect(encodeStateBinary(f, []).length).toBeLessThanOrEqual(budget);
    const joined = r.fragments.map((f) => EntitlementLedger.fromState(f)).reduce((a, b) => a.join(b));
    expect(joined.equals(EntitlementLedger.fromState(s))).toBe(true);
  });
});
