/**
 * The replication driver reports a value too large as an event (node.md §4.2, §14; issue 19, driver.ts
 * survivor): the core's report reaches the owner through `events`, once per group.
 */
import { EntitlementLedger, GroupId, LedgerReplica, ReplicaId, fnv1a64 } from "@heddle/ledger";
import { ChannelTag, MemoryNetwork, muxSeam, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { describe, expect, it } from "vitest";
import { RejectionCounter } from "../src/rejection.ts";
import { REPLICATION_DEFAULTS } from "../src/replication/config.ts";
import { ReplicationCore } from "../src/replication/core.ts";
import { ReplicationDriver, type ReplicationEvent } from "../src/replication/driver.ts";
import { WIRE_ENVELOPE_BYTES } from "../src/replication/wire.ts";

describe("ReplicationDriver: value-too-large events", () => {
  it("an edge group larger than a frame is reported once as a value-too-large event, with its size", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(1) });
    const g = EntitlementLedger.bootstrap(GroupId("root"), new Map([[ReplicaId("A"), 100n]]), "heddle-static-genesis");
    const config = { ...REPLICATION_DEFAULTS, maxFrameBytes: 4_096, antiEntropy: false };
    const valueBudget = config.maxFrameBytes - WIRE_ENVELOPE_BYTES;
    const replica = new LedgerReplica(g);
    const core = new ReplicationCore({ self: "A", incarnation: 1, replica, genesis: g, config, random: () => 0, now: 0, restarted: false, valueBudget });
    const driver = new ReplicationDriver({
      channel: muxSeam(net.join("A")).channel(ChannelTag.ledger), core, genesisDigest: fnv1a64(g.encode()), timers,
      rejections: new RejectionCounter(timers, 60_000, () => {}), maxFrameBytes: config.maxFrameBytes,
    });
    const events: ReplicationEvent[] = [];
    driver.events.subscribe((e) => events.push(e));
    // one edge with 60 slots of 90-character replica ids: over 4 KiB on its own
    const slots = Array.from({ length: 60 }, (_, i) => [`r${i}`.padEnd(90, "x"), "1"]);
    const big = EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued: [["x9", slots]] }));
    const bytes = big.fragments(valueBudget, ["A"]).oversize[0]!.bytes;
    expect(bytes).toBeGreaterThan(valueBudget);
    driver.publish(big);
    timers.advanceBy(1);
    expect(events).toEqual([{ kind: "value-too-large", what: "delta: edge group x9", bytes }]);
    driver.publish(big);
    timers.advanceBy(1);
    expect(events.length).toBe(1);
    expect(driver.metrics().valueTooLarge).toBe(2);
    driver.close();
  });
});
