/**
 * The gauge join is total (ledger.md §3.8, §4.3; README "Deviations"): it compares floors exactly,
 * never with §3.4's checked `compare`, because a join that throws in one merge order and not another
 * breaks associativity and, since a node refuses a frame whose join throws, splits replicas for good.
 */
import { describe, expect, it } from "vitest";
import { EntitlementLedger, LedgerReplica } from "../src/index.ts";
import { MAX } from "../src/index.ts";

const F = '"format":"heddle-ledger/1"';
const decode = (t: string): EntitlementLedger => EntitlementLedger.decode(t);
const gauge = (num: bigint, den: bigint, extra = ""): EntitlementLedger =>
  decode(`{${F},${extra}"gauges":[["e",["${num}","${den}","0"]]]}`);

// a = 1/2^40 (with issued[e][alice] = 3), b = 2, c = 2^40: a checked compare of a with c multiplies
// 2^40 × 2^40 = 2^80 and leaves I64; b with either operand stays in range.
const a = gauge(1n, 2n ** 40n, `"issued":[["e",[["alice","3"]]]],`);
const b = gauge(2n, 1n);
const c = gauge(2n ** 40n, 1n);
const joined = `{${F},"issued":[["e",[["alice","3"]]]],"gauges":[["e",["${2n ** 40n}","1","0"]]]}`;

/** A node-like receiver: each frame is applied in its own transaction and refused whole if it throws. */
function receive(order: readonly EntitlementLedger[]): string {
  const r = new LedgerReplica();
  for (const p of order) {
    const tx = r.begin();
    try {
      r.apply(p);
      tx.commit();
    } catch {
      tx.rollback();
    }
  }
  return r.encode();
}

describe("§3.8 gauge join on floors whose checked cross products leave I64", () => {
  it("§4.3 (a⊔b)⊔c = a⊔(b⊔c) = c⊔(b⊔a): every grouping and order gives the larger floor, none throws", () => {
    expect(a.join(b).join(c).encode()).toBe(joined);
    expect(a.join(b.join(c)).encode()).toBe(joined);
    expect(c.join(b.join(a)).encode()).toBe(joined);
    expect(c.join(a).encode()).toBe(joined);
    expect(a.join(c).encode()).toBe(joined);
  });

  it("§4.3 two receivers of the same three frames in opposite orders converge, and both hold issued[e][alice] = 3", () => {
    expect(receive([a, b, c])).toBe(joined);
    expect(receive([c, b, a])).toBe(joined);
  });

  it("§4.3 the binary decode → merge path agrees", () => {
    const bin = (x: EntitlementLedger): EntitlementLedger => EntitlementLedger.decodeBinary(x.encodeBinary());
    expect(new LedgerReplica(bin(c)).apply(bin(b)).apply(bin(a)).encode()).toBe(joined);
  });

  it("§3.8 extreme floors: MAX/1 against 1/MAX and −MAX/1 against −1/MAX pick the larger exactly, both ways", () => {
    const cases: [bigint, bigint, bigint, bigint, string][] = [
      [MAX, 1n, 1n, MAX, `${MAX}","1`],
      [-MAX, 1n, -1n, MAX, `-1","${MAX}`],
      [MAX, MAX - 1n, MAX - 1n, MAX - 2n, `${MAX - 1n}","${MAX - 2n}`], // (MAX−1)/(MAX−2) > MAX/(MAX−1)
    ];
    for (const [n1, d1, n2, d2, want] of cases) {
      const x = gauge(n1, d1);
      const y = gauge(n2, d2);
      expect(x.join(y).encode()).toBe(`{${F},"gauges":[["e",["${want}","0"]]]}`);
      expect(y.join(x).encode()).toBe(x.join(y).encode());
      expect(new LedgerReplica(x).apply(y).encode()).toBe(x.join(y).encode());
    }
  });
});
