/**
 * The receiver's cursor bookkeeping (node.md §5.3) on its own: what an ack may claim while a gap is open.
 * An ack that named the highest seq received instead of the contiguous prefix would let the sender drop
 * the missing delta from its buffer; the system still converges (the resend falls back to a full state),
 * so the convergence suites cannot see it — this pins the ack itself (issue 19).
 */
import { describe, expect, it } from "vitest";
import { InboundCursors } from "../src/replication/inbound.ts";

const cursors = () => new InboundCursors({ maxTrackedSeqs: 64, reorderGraceMs: 50, resendRetryMs: 500, ackDelayMs: 20 });

describe("inbound cursors: acks never pass a gap (node.md §5.3)", () => {
  it("a delta above a gap is not acknowledged, by the coalesced ack or the piggybacked one; filling the gap acknowledges all", () => {
    const c = cursors();
    expect(c.adopt("s", 1)).toBe("first");
    expect(c.receive("s", 1, 0, 1)).toBe("new");
    expect(c.receive("s", 3, 0, 1)).toBe("new");
    expect(c.receive("s", 4, 0, 1)).toBe("new");
    c.checkGap("s", 0);
    c.ackSoon("s", 0);
    const acks = c.due(20).filter((a) => a.kind === "ack");
    expect(acks).toEqual([{ kind: "ack", to: "s", inc: 1, seq: 1, based: false }]);

    c.ackSoon("s", 20);
    expect(c.takeAck("s")).toEqual({ inc: 1, seq: 1, based: false });
    expect(c.takeAck("s")).toBeNull(); // taken once

    expect(c.receive("s", 2, 0, 1)).toBe("new");
    c.checkGap("s", 30);
    c.ackSoon("s", 30, true);
    expect(c.due(30)).toEqual([{ kind: "ack", to: "s", inc: 1, seq: 4, based: false }]);
    expect(c.snapshot("s")!.above.size).toBe(0);
  });

  it("the gap is asked for once the reorder grace passes, and the ack still names the prefix", () => {
    const c = cursors();
    c.adopt("s", 7);
    c.receive("s", 1, 0, 1);
    c.receive("s", 5, 0, 1);
    c.checkGap("s", 100);
    c.ackSoon("s", 100);
    expect(c.due(149)).toEqual([{ kind: "ack", to: "s", inc: 7, seq: 1, based: false }]); // the ack is due at 120
    expect(c.due(150)).toEqual([{ kind: "resend", to: "s", inc: 7, from: 2, to_: 4 }]); // the grace ends at 150
  });
});
