/**
 * governed.md §3.11: an apply step is bounded (one command, one cycle walk) — its work must not follow the number of
 * mints applied before it, or a replay of a log of n mints is quadratic. Work is counted, not timed: every write to
 * any `Map` or `Set` made during one step (a copy of a map writes each of its entries through `Map.prototype.set`, an
 * index rebuild each of its keys), so the count is exact and the same on any machine. Timing figures are in
 * `bench/mint-apply.ts`.
 */
import { describe, expect, it } from "vitest";
import { collectionWrites } from "@heddle/seam/testing";
import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { ControlState, encodeEnvelope } from "../src/index.ts";
import type { AppliedStep, ControlCommand } from "../src/index.ts";

const root = GroupId("root");

class Driver {
  readonly st = new ControlState({ root });
  index = 0;
  entry(cmd: ControlCommand): AppliedStep {
    const key = { client: "c", seq: ++this.index };
    const command = encodeEnvelope({ v: 1, key, ackFloor: this.index, proposer: ReplicaId("n1"), cmd });
    return this.st.apply({ kind: "entry", entry: { index: this.index, term: 1, kind: "app", key, command, stampedAt: 1_000 } });
  }
  mint(i: number): AppliedStep {
    // three holders, so the projection's per-holder mint index grows too
    return this.entry({ op: "mint", holder: ReplicaId(`n${i % 3}`), amount: 1n });
  }
}

describe("a mint's apply step does work independent of the mints already applied (governed.md §3.11)", () => {
  it("the apply of the 2,001st mint writes no more map and set entries than the 201st", () => {
    const d = new Driver();
    for (let i = 1; i <= 200; i++) d.mint(i);
    const early = collectionWrites(() => d.mint(201));
    for (let i = 202; i <= 2_000; i++) d.mint(i);
    const late = collectionWrites(() => d.mint(2_001));
    expect(early.result.outcome).toMatchObject({ kind: "applied", noop: false });
    expect(late.result.outcome).toMatchObject({ kind: "applied", noop: false });
    // Before the fix the projection was an immutable ledger whose join rebuilt its index on every mint: 607 writes
    // at 200 mints held, 6 007 at 2 000. Held as a LedgerReplica it is 6 at both.
    expect(late.writes).toBeLessThanOrEqual(early.writes);
    expect(d.st.projection.mintedTotal()).toBe(2_001n);
  });

  it("a projection read earlier never changes as later acts apply (the ledger's immutability contract)", () => {
    const d = new Driver();
    for (let i = 1; i <= 3; i++) d.mint(i);
    const before = d.st.projection;
    const text = EntitlementLedger.decode(before.encode()).encode();
    expect(d.st.projection).toBe(before); // the same value until the projection changes
    for (let i = 4; i <= 6; i++) d.mint(i);
    const e = AttachmentId("e1");
    d.entry({ op: "prepare", record: { id: e, parent: root, child: GroupId("g"), weight: Weight.of(1n) } });
    d.entry({ op: "activate", edge: e });
    // reads compute from the value's maps (not a cached text): they show the state at the time it was read
    expect(before.mintedTotal()).toBe(3n);
    expect(before.knownEdges()).toEqual([]);
    expect(before.replicas()).toEqual(["n0", "n1", "n2"]);
    expect(before.beyond(EntitlementLedger.EMPTY).encode()).toBe(text); // rebuilt from its maps, not its cached text
    const after = d.st.projection;
    expect(after).not.toBe(before);
    expect(after.mintedTotal()).toBe(6n);
    expect(after.lifecycle(e)).toBe("ACTIVE");
  });

  it("the projection equals the join of every patch the steps published (minus retire witnesses: none here)", () => {
    const d = new Driver();
    let joined = EntitlementLedger.EMPTY;
    const take = (s: AppliedStep) => {
      for (const p of s.publish) joined = joined.join(p);
    };
    for (let i = 1; i <= 50; i++) take(d.mint(i));
    const e = AttachmentId("e1");
    take(d.entry({ op: "prepare", record: { id: e, parent: root, child: GroupId("g"), weight: Weight.of(2n) } }));
    take(d.entry({ op: "activate", edge: e }));
    take(d.entry({ op: "close", edge: e }));
    take(d.entry({ op: "retire", edge: e }));
    const p = AttachmentId("p1");
    take(d.entry({ op: "prepare", record: { id: p, parent: root, child: GroupId("h"), weight: Weight.of(1n) } }));
    take(d.entry({ op: "retire", edge: p })); // a PREPARED edge is abandoned directly (ledger 1.1)
    expect(d.st.projection.lifecycle(p)).toBe("RETIRED");
    expect(d.st.projection.equals(joined)).toBe(true);
    // and a snapshot restores the same projection, which keeps taking acts
    const copy = ControlState.decode(d.st.encode(), { root });
    expect(copy.projection.equals(d.st.projection)).toBe(true);
    expect(copy.stateText()).toBe(d.st.stateText());
  });
});
