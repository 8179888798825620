/**
 * PatchBuilder's slot joins and the witness's gauge republication (patch.ts), issue 19 round 2
 * (helper D). The mutator tests only ever write each slot once per patch and never check a patch for
 * a gauge it should not carry, so raising an existing slot, refusing a zero transfer and the `di > 0`
 * guard on gauges were never observed.
 */
import { describe, expect, it } from "vitest";
import type { AttachmentId, ReplicaId } from "../src/ids.ts";
import { PathKey } from "../src/ids.ts";
import { addWitness, PatchBuilder } from "../src/patch.ts";
import { Rational } from "../src/rational.ts";
import { emptyState } from "../src/state.ts";
import { TopologyIndex } from "../src/topology.ts";

const e = "e" as AttachmentId;
const r = "r" as ReplicaId;
const x = "x" as ReplicaId;

describe("PatchBuilder slots are joined (max) as they are added", () => {
  it("a counter slot rises to a larger value and keeps it against a smaller one", () => {
    const p = new PatchBuilder();
    p.counter("issued", e, r, 3n);
    p.counter("issued", e, r, 5n);
    expect(p.s.issued.get(e)?.get(r)).toBe(5n);
    p.counter("issued", e, r, 4n);
    expect(p.s.issued.get(e)?.get(r)).toBe(5n);
  });

  it("a transfer slot rises to a larger value and keeps it against a smaller one", () => {
    const k = PathKey.of(e);
    const p = new PatchBuilder();
    p.transfer(k, r, x, 3n);
    p.transfer(k, r, x, 5n);
    expect(p.s.transfers.get(k)?.get(r)?.get(x)).toBe(5n);
    p.transfer(k, r, x, 4n);
    expect(p.s.transfers.get(k)?.get(r)?.get(x)).toBe(5n);
  });

  it("a zero transfer writes nothing: no key, no row, no slot", () => {
    const k = PathKey.of(e);
    const p = new PatchBuilder();
    p.transfer(k, r, x, 0n);
    expect(p.s.transfers.size).toBe(0);
  });
});

describe("the witness republishes a gauge only for an edge whose issued slot it republishes", () => {
  it("a donor with no issued credit on the path does not bring the path's gauges along", () => {
    // actor a received 5 from donor d on the path [e1, e2] (key e2); neither holds issued credit on
    // e1 or e2, and e1 carries a gauge: nothing issued is republished, so neither is the gauge
    const e1 = "e1" as AttachmentId;
    const e2 = "e2" as AttachmentId;
    const a = "a" as ReplicaId;
    const d = "d" as ReplicaId;
    const s = emptyState();
    s.transfers.set(PathKey.of(e2), new Map([[d, new Map([[a, 5n]])]]));
    s.gauges.set(e1, Object.freeze({ floor: Rational.of(1n, 2n), folded: 0n }));
    const p = new PatchBuilder();
    addWitness(p, { s, ix: new TopologyIndex(s) }, a, [e1, e2]);
    expect(p.s.transfers.get(PathKey.of(e2))?.get(d)?.get(a)).toBe(5n);
    expect([...p.s.gauges.keys()]).toEqual([]);
    // with issued credit of d on e1 the gauge of e1 does come along
    s.issued.set(e1, new Map([[d, 2n]]));
    const q = new PatchBuilder();
    addWitness(q, { s, ix: new TopologyIndex(s) }, a, [e1, e2]);
    expect([...q.s.gauges.keys()]).toEqual([e1]);
  });
});
