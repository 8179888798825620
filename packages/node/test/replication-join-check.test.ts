import fc from "fast-check";
import { AttachmentId, EntitlementLedger, GroupId, LedgerOverflowError, LedgerReplica, MAX, ReplicaId, Weight } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import { handConfig, handCore } from "./support/replication-core.ts";

// ledger.md I-15 / node.md §4.3: the join check refuses a value (whole, `bad-value`, counted) exactly when joining
// it would make some read of the ledger leave int64. The oracle here is the ledger's own reads over the whole
// joined state — validate(), every holdings(g, r), every edge summary and position, the ledger-wide totals — so the core's
// incremental check (which re-reads only what the raised entries enter) must agree with it on every value.

const REPLICAS = ["A", "B", "C"];
const value = (components: object) => EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", ...components }));

function genesis(): EntitlementLedger {
  let g = EntitlementLedger.bootstrap(GroupId("root"), new Map(REPLICAS.map((r) => [ReplicaId(r), 1_000n])), "join-check");
  for (const [id, parent, child] of [["e1", "root", "g1"], ["e2", "g1", "g2"]] as const) {
    const p = g.prepare({ id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(1n) });
    if (!p.ok) throw new Error(p.refusal.kind);
    g = g.join(p.patch);
    const a = g.activate(AttachmentId(id));
    if (!a.ok) throw new Error(a.refusal.kind);
    g = g.join(a.patch);
  }
  return g;
}

/** Every read the node (or validate) can make of `v`; true iff one leaves int64. */
function overflows(v: EntitlementLedger): boolean {
  try {
    v.validate();
    v.leafSpentTotal();
    v.mintedTotal();
    for (const e of v.knownEdges()) v.edge(e);
    for (const g of new Set([...v.groups(), ...v.roots()])) for (const r of v.replicas()) v.holdings(g, r);
    for (const g of v.roots()) v.childrenOf(g);
    const keys = new Set<string>(v.knownEdges());
    for (const [k] of (JSON.parse(v.encode()) as { transfers?: [string][] }).transfers ?? []) if (k !== "") keys.add(k);
    for (const e of keys) for (const r of v.replicas()) v.edgePosition(AttachmentId(e), r);
    return false;
  } catch (e) {
    if (e instanceof LedgerOverflowError) return true;
    throw e;
  }
}

const HALF = 1n << 62n;
const amount = fc.oneof(fc.constantFrom(1n, 5n, 1n << 61n, HALF, HALF + 1n, MAX - 1n, MAX), fc.bigInt({ min: 0n, max: MAX }));
const replica = fc.constantFrom(...REPLICAS, "M");
const edge = fc.constantFrom("e1", "e2", "e3", "x1");
const entry = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constantFrom("issued", "returned", "leafSpent", "rollupSpent"), edge, who: replica, n: amount }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("transfers"), edge: fc.constantFrom("", "e1", "e2"), who: replica, to: replica, n: amount }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("records"), edge: fc.constantFrom("e3", "e4"), parent: fc.constantFrom("g2", "root", "g9"), child: fc.constantFrom("g3", "g9") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("mints"), nonce: fc.constantFrom("n1", "n2"), who: replica, n: amount }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("lifecycle"), edge: fc.constantFrom("e1", "e2", "e3"), to: fc.constantFrom("CLOSING", "RETIRED") }) },
);

type Entry = { kind: string; edge?: string; who?: string; to?: string; n?: bigint; parent?: string; child?: string; nonce?: string };
function toValue(entries: readonly Entry[]): EntitlementLedger {
  let v = EntitlementLedger.EMPTY;
  for (const x of entries) {
    if (x.kind === "transfers") {
      if (x.who === x.to) continue;
      v = v.join(value({ transfers: [[x.edge, [[x.who, [[x.to, String(x.n)]]]]]] }));
    } else if (x.kind === "records") {
      if (x.parent === x.child) continue;
      v = v.join(value({ records: [[x.edge, [[x.parent, x.child, "1", "1"]]]] }));
    } else if (x.kind === "mints") v = v.join(value({ mints: [[JSON.stringify(["root", x.nonce, x.who]), ["root", x.who, String(x.n)]]] }));
    else if (x.kind === "lifecycle") v = v.join(value({ lifecycle: [[x.edge, x.to]] }));
    else v = v.join(value({ [x.kind]: [[x.edge, [[x.who, String(x.n)]]]] }));
  }
  return v;
}

describe("the join check refuses a value iff joining it makes a read of the ledger leave int64", () => {
  it("agrees with the ledger's own whole-state reads on every value of a random sequence (fast-check)", () => {
    fc.assert(
      fc.property(fc.array(fc.array(entry, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }), (frames) => {
        const g = genesis();
        const { core } = handCore(handConfig(), { genesis: g, replica: new LedgerReplica(g) });
        let state = g;
        let refused = 0;
        frames.forEach((entries, i) => {
          const v = toValue(entries);
          const joined = state.join(v);
          const expected = overflows(joined);
          const r = core.step("B", { kind: "delta", inc: 1, seq: i + 1, part: 0, parts: 1, value: v, ack: null }, i);
          core.ready();
          expect(r === "bad-value", `frame ${i}: ${v.encode()} on ${state.encode()}`).toBe(expected);
          if (expected) refused++;
          else state = joined;
        });
        expect(core.metrics().valueOverflows).toBe(refused);
        expect(overflows(state)).toBe(false);
      }),
      { numRuns: Number(process.env.RUNS ?? 400), seed: Number(process.env.HEDDLE_SEED ?? 26) },
    );
  });

  it("counts a local patch's leaf spends in the ledger-wide total a later inbound value is checked against", () => {
    const g = genesis();
    const replica = new LedgerReplica(g);
    const { core } = handCore(handConfig(), { genesis: g, replica });
    const own = value({ leafSpent: [["e2", [["A", String(HALF)]]]] });
    replica.apply(own);
    core.publish(own, 0);
    const r = core.step("B", { kind: "delta", inc: 1, seq: 1, part: 0, parts: 1, value: value({ leafSpent: [["e1", [["B", String(HALF)]]]] }), ack: null }, 1);
    expect(r).toBe("bad-value");
    expect(replica.leafSpentTotal()).toBe(HALF);
  });
});
