/**
 * `value-too-large` is reported once per group (node.md §4.2), remembered in a set bounded at 4,096 keys
 * (issue 19, core.ts survivors): past the bound the set starts over, so a group seen before the reset is
 * reported again. A separate file because it builds a value of 4,097 oversize edge groups (about a
 * CPU-second): the cheap tests of replication-core-refusals-and-bounds.test.ts run first.
 */
import { EntitlementLedger, GroupId, LedgerReplica, ReplicaId } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import { REPLICATION_DEFAULTS } from "../src/replication/config.ts";
import { ReplicationCore } from "../src/replication/core.ts";

/** Edges `x0000…` each with three 90-character replica ids: every group encodes to more than 256 bytes. */
function oversizeGroups(n: number): EntitlementLedger {
  const slots = [0, 1, 2].map((i) => [`r${i}`.padEnd(90, "x"), "1"]);
  const issued = Array.from({ length: n }, (_, k) => [`x${String(k).padStart(4, "0")}`, slots]);
  return EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued }));
}

describe("value-too-large: the seen-set is bounded at 4,096 groups", () => {
  it("after 4,097 distinct oversize groups the first one is reported again; before the bound it is not", () => {
    const g = EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId("A"), 100n]]), "heddle-static-genesis");
    const config = { ...REPLICATION_DEFAULTS, antiEntropy: false };
    const c = new ReplicationCore({ self: "A", incarnation: 1, replica: new LedgerReplica(g), genesis: g, config, random: () => 0, now: 0, restarted: false, valueBudget: 256 });
    const first = oversizeGroups(1);
    // 4,096 distinct groups fill the set: x0000 is still remembered
    c.publish(oversizeGroups(4_096), 0);
    c.tick(0);
    expect(c.ready().tooLarge.length).toBe(4_096);
    c.publish(first, 1);
    c.tick(1);
    expect(c.ready().tooLarge).toEqual([]);
    // the 4,097th distinct group resets the set
    c.publish(oversizeGroups(4_097), 2);
    c.tick(2);
    expect(c.ready().tooLarge.map((t) => t.what)).toEqual(["delta: edge group x4096"]);
    c.publish(first, 3);
    c.tick(3);
    expect(c.ready().tooLarge.map((t) => t.what)).toEqual(["delta: edge group x0000"]);
    expect(c.metrics().valueTooLarge).toBe(4_096 + 1 + 4_097 + 1);
  });
});
