/**
 * `EntitlementLedger` is an immutable value (ledger.md §7.0, §11): nothing a caller does to the
 * arguments it passed in, or to the values a read handed out, can change a ledger afterwards.
 */
import { describe, expect, it } from "vitest";
import type { AttachmentRecord } from "../src/index.ts";
import { apply, E, EntitlementLedger, G, ok, R, Weight } from "./arbitraries.ts";

const root = G("root");
const alice = R("alice");

function tree(): EntitlementLedger {
  let s = EntitlementLedger.bootstrap(root, new Map([[alice, 100n]]), "n");
  for (const [id, p, c] of [["eA", "root", "A"], ["eA1", "A", "A1"]] as const) {
    s = apply(s, s.prepare({ id: E(id), parent: G(p), child: G(c), weight: Weight.ONE }));
    s = apply(s, s.activate(E(id)));
  }
  s = apply(s, s.delegate(alice, E("eA"), 50n));
  return apply(s, s.delegate(alice, E("eA1"), 20n));
}

/** Tries a mutation that a frozen value may reject; either way the ledger must not change. */
function attempt(f: () => void): void {
  try {
    f();
  } catch {
    // frozen values refuse mutation in strict mode; that is fine
  }
}

describe("immutability", () => {
  it("bootstrap copies its mint map", () => {
    const m = new Map([[alice, 100n]]);
    const s = EntitlementLedger.bootstrap(root, m, "n");
    const text = s.encode();
    m.set(alice, 5n);
    m.set(R("bob"), 7n);
    expect(s.encode()).toBe(text);
  });

  it("prepare copies the record it was given", () => {
    const s = tree();
    const rec = { id: E("n"), parent: G("A1"), child: G("N"), weight: Weight.ONE } as { -readonly [K in keyof AttachmentRecord]: AttachmentRecord[K] };
    const p = ok(s.prepare(rec));
    const text = p.encode();
    rec.child = G("other");
    rec.parent = G("elsewhere");
    expect(p.encode()).toBe(text);
    expect(s.join(p).record(E("n"))!.child).toBe("N");
  });

  it("chargeCaptured copies the captured path", () => {
    const s = tree();
    const path = [E("eA"), E("eA1")];
    const p = ok(s.chargeCaptured(alice, path, 3n));
    const text = p.encode();
    path.reverse();
    path.push(E("x"));
    expect(p.encode()).toBe(text);
  });

  it("mutating what reads return changes nothing", () => {
    const s = tree();
    const text = s.encode();
    const fresh = EntitlementLedger.decode(text);
    attempt(() => (s.knownEdges() as string[]).push("zzz"));
    attempt(() => (s.groups() as string[]).splice(0));
    attempt(() => (s.roots() as string[]).push("other"));
    attempt(() => (s.replicas() as string[]).push("mallory"));
    attempt(() => s.lineageOf(G("A1"))!.reverse());
    attempt(() => s.lineageOf(G("A1"))!.push(E("x")));
    attempt(() => {
      const e = s.edge(E("eA"))!;
      e.issued = 999n;
      e.outstanding = -1n;
    });
    attempt(() => {
      const c = s.childrenOf(root);
      c[0]!.issued = 1n;
      c.pop();
    });
    attempt(() => {
      const r = s.record(E("eA")) as { child: string };
      r.child = "zzz";
    });
    attempt(() => {
      const g = s.gauge(E("eA")) as { folded: bigint };
      g.folded = 0n;
    });
    expect(s.encode()).toBe(text);
    expect(s.knownEdges()).toEqual(fresh.knownEdges());
    expect(s.groups()).toEqual(fresh.groups());
    expect(s.roots()).toEqual(fresh.roots());
    expect(s.replicas()).toEqual(fresh.replicas());
    expect(s.lineageOf(G("A1"))).toEqual(fresh.lineageOf(G("A1")));
    expect(s.edge(E("eA"))).toEqual(fresh.edge(E("eA")));
    expect(s.childrenOf(root)).toEqual(fresh.childrenOf(root));
    expect(s.record(E("eA"))).toEqual(fresh.record(E("eA")));
    expect(s.gauge(E("eA"))!.folded).toBe(fresh.gauge(E("eA"))!.folded);
    expect(s.holdings(G("A1"), alice)).toBe(20n);
    expect(s.validate()).toEqual([]);
  });

  it("mutating a validate() report changes the next report not at all", () => {
    const s = EntitlementLedger.decode('{"format":"heddle-ledger/1","mints":[["m1",["r1","a","1"]],["m2",["r2","a","1"]]]}');
    const v = s.validate();
    attempt(() => {
      const c = v[0] as { roots: string[] };
      c.roots.push("zzz");
      v.pop();
    });
    expect(s.validate()).toEqual([{ kind: "MultipleRoots", roots: ["r1", "r2"] }]);
  });

  it("EMPTY stays empty whatever is joined onto it", () => {
    const s = tree();
    EntitlementLedger.EMPTY.join(s);
    s.join(EntitlementLedger.EMPTY);
    expect(EntitlementLedger.EMPTY.encode()).toBe('{"format":"heddle-ledger/1"}');
  });
});
