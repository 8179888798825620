// The node's events the daemon logs. An internal-error (a subscriber or handler that threw, caught by the node)
// was logged by nobody: the /metrics subscriber-error counters could rise with no line saying where or what.
import { AttachmentId, GroupId } from "@heddle/ledger";
import type { NodeEvent, ReservationId } from "@heddle/node";
import { describe, expect, it } from "vitest";
import type { Logger } from "../src/log.ts";
import { logNodeEvent } from "../src/node-event-log.ts";

interface Line {
  readonly level: string;
  readonly msg: string;
  readonly fields: Record<string, unknown>;
}

function recording(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  return { logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}

describe("logNodeEvent", () => {
  it("logs an internal error as an error naming where the node caught it, with the stack", () => {
    const { logger, lines } = recording();
    const thrown = new TypeError("subscriber blew up");
    logNodeEvent(logger, { kind: "internal-error", where: "partition-subscriber", error: thrown }, "/s/ledger.sqlite");
    logNodeEvent(logger, { kind: "internal-error", where: "replication", error: "not an Error" }, "/s/ledger.sqlite");
    expect(lines.map((l) => [l.level, l.fields["where"]])).toEqual([["error", "partition-subscriber"], ["error", "replication"]]);
    expect(lines[0]!.msg).toMatch(/report it/);
    expect(lines[0]!.fields["error"]).toBe(thrown.stack);
    expect(lines[1]!.fields["error"]).toBe("not an Error");
  });

  it("still logs a failed commit, peers joining and leaving and conflicts, and nothing for routine events", () => {
    const { logger, lines } = recording();
    const events: NodeEvent[] = [
      { kind: "persist-failed", error: new Error("disk full") },
      { kind: "peer-joined", peer: "p2" },
      { kind: "peer-left", peer: "p2" },
      { kind: "conflicts", conflicts: [] },
      { kind: "reserved", id: "p1/1/0" as ReservationId, leaf: GroupId("batch"), amount: 1n },
      { kind: "schedule", parent: GroupId("root"), grants: [], seated: [AttachmentId("e")], clamped: [] },
    ];
    for (const e of events) logNodeEvent(logger, e, "/s/ledger.sqlite");
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ["error", "store commit failed: the node has failed closed; restart it"],
      ["info", "peer-joined"],
      ["info", "peer-left"],
    ]);
    expect(lines[0]!.fields).toEqual({ store: "/s/ledger.sqlite", error: "Error: disk full" });
  });
});
