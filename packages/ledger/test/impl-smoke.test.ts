import { describe, expect, it } from "vitest";
import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, ReplicaId, Weight, Rational } from "../src/index.ts";
import type { MutationResult } from "../src/index.ts";

const g = GroupId;
const e = AttachmentId;
const r = ReplicaId;

function must(l: EntitlementLedger, res: MutationResult): EntitlementLedger {
  if (!res.ok) throw new Error(`refused: ${res.refusal.kind} ${res.refusal.message}`);
  return l.join(res.patch);
}

function tree(): EntitlementLedger {
  let l = EntitlementLedger.bootstrap(g("root"), new Map([[r("alice"), 100n], [r("bob"), 50n]]), "genesis");
  for (const [id, p, c, w] of [["eA", "root", "A", 3n], ["eB", "root", "B", 1n], ["eA1", "A", "A1", 1n]] as const) {
    l = must(l, l.prepare({ id: e(id), parent: g(p), child: g(c), weight: Weight.of(w) }));
    l = must(l, l.activate(e(id)));
  }
  return l;
}

describe("impl smoke: §13.1 on both the value and the replica", () => {
  it("walks the worked example with identical results", () => {
    let l = tree();
    const rep = new LedgerReplica(l);
    const steps: [string, (x: EntitlementLedger | LedgerReplica) => MutationResult][] = [
      ["d", (x) => x.delegate(r("alice"), e("eA"), 60n)],
      ["d", (x) => x.delegate(r("alice"), e("eA1"), 25n)],
      ["d", (x) => x.delegate(r("bob"), e("eB"), 20n)],
      ["t", (x) => x.transfer(g("A1"), r("alice"), r("bob"), 10n)],
      ["s", (x) => x.spend(r("bob"), g("A1"), 4n)],
      ["r", (x) => x.release(r("alice"), e("eA"), 5n)],
    ];
    for (const [, f] of steps) {
      l = must(l, f(l));
      expect(f(rep).ok).toBe(true);
      expect(rep.encode()).toBe(l.encode());
    }
    const h = (grp: string) => [l.holdings(g(grp), r("alice")), l.holdings(g(grp), r("bob"))];
    expect(h("root")).toEqual([45n, 30n]);
    expect(h("A")).toEqual([30n, 0n]);
    expect(h("B")).toEqual([0n, 20n]);
    expect(h("A1")).toEqual([15n, 6n]);
    expect(l.edge(e("eA"))).toEqual({ attachment: "eA", issued: 60n, returned: 5n, spent: 4n, outstanding: 51n, committedService: 55n });
    expect(l.validate()).toEqual([]);
    expect(l.virtualService(e("eA"))!.equals(Rational.of(55n, 3n))).toBe(true);
    expect(l.gauge(e("eA"))).toEqual({ floor: Rational.of(20n), folded: 60n });
    expect(EntitlementLedger.decode(l.encode()).equals(l)).toBe(true);
  });
});
