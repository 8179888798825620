/**
 * The retire witness (governed.md §3.6) stays bounded by the edge, not by the holder's mint count.
 * Found in review s28 (2026-12-04): the witness joined EVERY mint of each replica in the edge's slice, so once a
 * holder had received a few thousand mints (top-ups) the entry passed MAX_CONTROL_ENTRY_BYTES and `retire` threw a
 * RangeError — the edge stayed CLOSING for good and no reshape through it could finish. The two end-to-end tests
 * fail on the code before the fix.
 */
import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { AttachmentId, EntitlementLedger, GroupId, MintId, ReplicaId } from "@heddle/ledger";
import type { MintRecord, MutationResult } from "@heddle/ledger";
import { MAX_CONTROL_ENTRY_BYTES, MAX_RETIRE_WITNESS_BYTES, retireWitness } from "../src/index.ts";
import { e, g, r, rec } from "./support/governed-cluster.ts";
import { Single } from "./support/single.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});

const ROOT = GroupId("root");
const must = (l: EntitlementLedger, m: MutationResult): EntitlementLedger => {
  if (!m.ok) throw new Error(m.refusal.message);
  return l.join(m.patch);
};

/** What a governed peer publishes for the retire: the projection's RETIRED patch (record, lifecycle, no counters). */
function retiredProjection(edges: readonly [string, string, string][], edge: string): EntitlementLedger {
  let p = EntitlementLedger.EMPTY;
  for (const [id, parent, child] of edges) {
    p = must(p, p.prepare(rec(id, parent, child)));
    p = must(p, p.activate(AttachmentId(id)));
  }
  p = must(p, p.close(AttachmentId(edge)));
  const out = p.retire(AttachmentId(edge));
  if (!out.ok) throw new Error(out.refusal.message);
  return out.patch;
}

/**
 * A data-plane view where each replica received its mints at the root, delegated `down` of them through `edges`
 * (root → a, or root → a → b), spent `spend` at the leaf and gave the rest back up the last edge: that edge drained.
 */
function drainedView(edges: readonly [string, string, string][], mints: ReadonlyMap<string, readonly bigint[]>, flows: ReadonlyMap<string, { down: bigint; spend: bigint }>) {
  let v = EntitlementLedger.EMPTY;
  const minted = new Map<MintId, MintRecord>();
  for (const [holder, amounts] of mints) {
    amounts.forEach((amount, i) => {
      const id = MintId(`mint:${holder}:${i}`);
      v = must(v, v.mint(id, ROOT, ReplicaId(holder), amount));
      minted.set(id, { root: ROOT, holder: ReplicaId(holder), amount });
    });
  }
  for (const [id, parent, child] of edges) {
    v = must(v, v.prepare(rec(id, parent, child)));
    v = must(v, v.activate(AttachmentId(id)));
  }
  const last = AttachmentId(edges[edges.length - 1]![0]);
  const leaf = GroupId(edges[edges.length - 1]![2]);
  for (const [holder, { down, spend }] of flows) {
    if (down === 0n) continue;
    for (const [id] of edges) v = must(v, v.delegate(ReplicaId(holder), AttachmentId(id), down));
    if (spend > 0n) v = must(v, v.spend(ReplicaId(holder), leaf, spend));
    if (down > spend) v = must(v, v.release(ReplicaId(holder), last, down - spend));
  }
  v = must(v, v.close(last));
  return { v, minted, last };
}

describe("the retire witness (§3.6)", () => {
  it("carries every mint of the slice's holders while they fit (§3.6 as written)", () => {
    const { v, minted, last } = drainedView([["e1", "root", "a"]], new Map([["n1", [50n, ...Array<bigint>(300).fill(1n)]]]), new Map([["n1", { down: 120n, spend: 120n }]]));
    const w = retireWitness(v, last, ROOT, minted);
    expect(w.kind).toBe("full");
    const witness = EntitlementLedger.decode(w.text!);
    expect(witness.mintedTotal()).toBe(350n);
    expect(retiredProjection([["e1", "root", "a"]], "e1").join(witness).validate()).toEqual([]);
  });

  it("past the budget, only the largest mints that balance it: 120 spent through the edge out of 300 one-unit mints and one of 50", () => {
    const { v, minted, last } = drainedView([["e1", "root", "a"]], new Map([["n1", [50n, ...Array<bigint>(300).fill(1n)]]]), new Map([["n1", { down: 120n, spend: 120n }]]));
    const everyBytes = new TextEncoder().encode(retireWitness(v, last, ROOT, minted).text!).length;
    const w = retireWitness(v, last, ROOT, minted, everyBytes - 1);
    expect(w.kind).toBe("full");
    const witness = EntitlementLedger.decode(w.text!);
    expect(witness.mintedTotal()).toBe(120n); // the 50 and seventy of the ones — not all 350
    expect(witness.leafSpentTotal()).toBe(120n);
    expect(retiredProjection([["e1", "root", "a"]], "e1").join(witness).validate()).toEqual([]);
    // every mint it carries is one the view holds: joining it adds none
    expect(v.join(witness).mintedTotal()).toBe(v.mintedTotal());
  });

  it("a holder funded by a transfer: the witness carries what §3.6 joins and says it does not balance alone (unbalanced, not full)", () => {
    let v = EntitlementLedger.EMPTY;
    const minted = new Map<MintId, MintRecord>([[MintId("m2"), { root: ROOT, holder: ReplicaId("n2"), amount: 100n }]]);
    v = must(v, v.mint(MintId("m2"), ROOT, ReplicaId("n2"), 100n));
    v = must(v, v.transfer(ROOT, ReplicaId("n2"), ReplicaId("n1"), 50n));
    v = must(v, v.prepare(rec("e1", "root", "a")));
    v = must(v, v.activate(AttachmentId("e1")));
    v = must(v, v.delegate(ReplicaId("n1"), AttachmentId("e1"), 50n));
    v = must(v, v.spend(ReplicaId("n1"), GroupId("a"), 50n));
    v = must(v, v.close(AttachmentId("e1")));
    expect(v.validate()).toEqual([]);
    const w = retireWitness(v, AttachmentId("e1"), ROOT, minted);
    expect(w.kind).toBe("unbalanced");
    const witness = EntitlementLedger.decode(w.text!);
    expect(retiredProjection([["e1", "root", "a"]], "e1").join(witness).validate()).not.toEqual([]);
    // on a peer that has the log's mints it balances, as every applying peer does
    expect(retiredProjection([["e1", "root", "a"]], "e1").join(witness).join(v).validate()).toEqual([]);
  });

  it("property: on drained edges under the root or below it, the witness alone balances and carries only real mints", () => {
    const amounts = fc.array(fc.bigInt({ min: 1n, max: 40n }), { minLength: 1, maxLength: 40 });
    const percent = fc.integer({ min: 0, max: 100 });
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.tuple(amounts, percent, percent),
        fc.tuple(amounts, percent, percent),
        (deep, [m1, d1, s1], [m2, d2, s2]) => {
          const edges: [string, string, string][] = deep ? [["e1", "root", "a"], ["e2", "a", "b"]] : [["e1", "root", "a"]];
          // each replica takes a share of its mints down and spends a share of that at the leaf
          const flow = (ms: bigint[], d: number, sp: number) => {
            const down = (ms.reduce((a, b) => a + b, 0n) * BigInt(d)) / 100n;
            return { down, spend: (down * BigInt(sp)) / 100n };
          };
          const flows = new Map([["n1", flow(m1, d1, s1)], ["n2", flow(m2, d2, s2)]]);
          const { v, minted, last } = drainedView(edges, new Map([["n1", m1], ["n2", m2]]), flows);
          const w = retireWitness(v, last, ROOT, minted);
          if (w.kind === "empty") return; // nothing ever crossed the edge
          expect(w.kind).toBe("full");
          const witness = EntitlementLedger.decode(w.text!);
          expect(retiredProjection(edges, last).join(witness).validate()).toEqual([]);
          expect(v.join(witness).mintedTotal()).toBe(v.mintedTotal());
          expect(witness.mintedTotal()).toBeLessThanOrEqual(v.mintedTotal());
        },
      ),
      { numRuns: 150 },
    );
  });

  it("over the budget it carries the slice alone, and past that nothing", () => {
    const { v, minted, last } = drainedView([["e1", "root", "a"]], new Map([["n1", Array<bigint>(200).fill(1n)]]), new Map([["n1", { down: 150n, spend: 150n }]]));
    const slice = v.projectEdge(last).encode();
    const bytes = new TextEncoder().encode(slice).length;
    expect(retireWitness(v, last, ROOT, minted, bytes + 200)).toEqual({ kind: "slice", text: slice });
    expect(retireWitness(v, last, ROOT, minted, bytes - 1)).toEqual({ kind: "none", text: null });
    expect(retireWitness(v, last, ROOT, minted).kind).toBe("full");
  });
});

const HUNGRY = { targetOutstanding: 1_000n, maximumUsefulGrant: 1_000n };

/** One governed peer whose holder n1 received `count` one-unit mints under a 200-character durable client. */
async function manyMints(count: number): Promise<Single> {
  const s = new Single();
  cleanups.push(() => s.shutdown());
  const gov = s.gov;
  for (const p of [() => gov.prepare(rec("e1", "root", "a")), () => gov.activate(e("e1")), () => gov.enroll(r("n1"))]) expect((await s.settle(p())).kind).toBe("applied");
  const client = "ops-topup-" + "x".repeat(190);
  const mints = [];
  for (let i = 1; i <= count; i++) mints.push(gov.mint(r("n1"), 1n, { key: { client, seq: i } }));
  await s.settle(Promise.all(mints), 60_000);
  expect(gov.controlView().mintedTotal()).toBe(BigInt(count));
  gov.advertise(e("e1"), HUNGRY);
  gov.schedule(g("root"));
  await s.until(() => (gov.ledger.get().edge(e("e1"))?.issued ?? 0n) > 0n, 20_000);
  return s;
}

/** The witness text of the retire entry at `index` of the stub log. */
function witnessAt(s: Single, index: number): string | undefined {
  const text = new TextDecoder().decode(s.raft.log[index - 1]!.command.subarray(5));
  return (JSON.parse(text) as { cmd: { witness?: string } }).cmd.witness;
}

describe("retire after thousands of mints (review s28)", () => {
  it("a drained edge still retires, with a small witness, after its holder received 2 500 top-up mints", async () => {
    const s = await manyMints(2_500);
    const gov = s.gov;
    const x = s.x;
    await s.until(() => x.ledger.get().edge(e("e1"))?.issued === gov.ledger.get().edge(e("e1"))?.issued, 20_000);
    const back = x.ledger.get().release(r("n1"), e("e1"), gov.ledger.get().holdings(g("a"), r("n1")));
    if (!back.ok) throw new Error(back.refusal.message);
    x.controlSink().publish(back.patch);
    await s.until(() => gov.ledger.get().edge(e("e1"))!.outstanding === 0n, 20_000);
    expect((await s.settle(gov.close(e("e1")))).kind).toBe("applied");
    const out = await s.settle(gov.retire(e("e1")));
    expect(out).toMatchObject({ kind: "applied", noop: false });
    expect(gov.controlView().lifecycle(e("e1"))).toBe("RETIRED");
    // everything it took down came back: one mint balances the slice
    const witness = EntitlementLedger.decode(witnessAt(s, (out as { index: number }).index)!);
    expect(witness.mintedTotal()).toBe(1n);
    expect(EntitlementLedger.EMPTY.join(gov.ledger.get().projectEdge(e("e1"))).join(witness).validate()).toEqual([]);
    expect(gov.retireWitnessCounts()).toEqual({ sliceOnly: 0, omitted: 0, unbalanced: 0 });
  }, 120_000);

  it("when the mints it needs are over MAX_RETIRE_WITNESS_BYTES, the retire carries the slice alone, counted, and applies", async () => {
    const s = await manyMints(2_500);
    const gov = s.gov;
    // n1 spends everything it was delegated at the leaf: the witness would need that many one-unit mints
    const issued = gov.ledger.get().edge(e("e1"))!.issued;
    expect(issued).toBe(1_000n);
    const res = gov.reserve(g("a"), issued);
    if (!res.ok) throw new Error(JSON.stringify(res.refusal));
    expect(gov.complete(res.id, issued)).toMatchObject({ ok: true, charged: issued });
    expect(gov.ledger.get().edge(e("e1"))!.outstanding).toBe(0n);
    expect((await s.settle(gov.close(e("e1")))).kind).toBe("applied");
    const out = await s.settle(gov.retire(e("e1")));
    expect(out).toMatchObject({ kind: "applied", noop: false });
    expect(gov.controlView().lifecycle(e("e1"))).toBe("RETIRED");
    const index = (out as { index: number }).index;
    expect(s.raft.log[index - 1]!.command.length).toBeLessThan(MAX_RETIRE_WITNESS_BYTES * 2);
    expect(s.raft.log[index - 1]!.command.length).toBeLessThan(MAX_CONTROL_ENTRY_BYTES);
    const witness = EntitlementLedger.decode(witnessAt(s, index)!);
    expect(witness.mintedTotal()).toBe(0n); // the slice alone
    expect(witness.leafSpentTotal()).toBe(1_000n);
    expect(gov.retireWitnessCounts()).toEqual({ sliceOnly: 1, omitted: 0, unbalanced: 0 });
    // on this peer, which joined every mint from the log, the retired edge validates clean
    expect(gov.ledger.get().validate()).toEqual([]);
  }, 120_000);
});
