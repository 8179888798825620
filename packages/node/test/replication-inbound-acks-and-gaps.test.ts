/**
 * InboundCursors' deadlines driven directly (node.md §5.3 step 6 ⟨1.1⟩): the coalesced ack, the reorder grace that
 * asks only for newly missing seqs, the retry that re-asks for the whole remaining gap, and the earliest deadline
 * over several senders. Exact actions at exact times (the cursors' own clock, no wall clock) (issue 19).
 * Every fixture is built inside its test (docs/mutation.md, "Build fixtures inside the test").
 */
import { describe, expect, it } from "vitest";
import { InboundCursors } from "../src/replication/inbound.ts";

const cursors = () => new InboundCursors({ maxTrackedSeqs: 64, reorderGraceMs: 50, resendRetryMs: 500, ackDelayMs: 20 });
/** Delivers sender "s"'s delta `seq` (incarnation 1, one part) as new at `now`, then updates its gap deadlines. */
const arriving = (c: InboundCursors) => (seq: number, now: number): void => {
  expect(c.receive("s", seq, 0, 1)).toBe("new");
  c.checkGap("s", now);
};

describe("inbound cursors: the coalesced ack", () => {
  it("a later delayed ack does not push the owed one back; a later immediate one pulls it forward; it is sent once", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 1)).toBe("new");
    c.ackSoon("s", 0);
    expect(c.nextDeadline()).toBe(20);
    c.ackSoon("s", 10);
    expect(c.nextDeadline()).toBe(20);
    c.ackSoon("s", 5, true);
    expect(c.nextDeadline()).toBe(5);
    expect(c.due(4)).toEqual([]);
    expect(c.due(5)).toEqual([{ kind: "ack", to: "s", inc: 1, seq: 1, based: false }]);
    expect(c.nextDeadline()).toBeNull();
    expect(c.due(1_000)).toEqual([]);
  });

  it("no ack is owed to a sender never heard from or not asked for one; a taken ack is not sent again", () => {
    const c = cursors();
    expect(c.takeAck("x")).toBeNull();
    c.adopt("s", 3);
    expect(c.takeAck("s")).toBeNull();
    c.resync("s", 4);
    c.ackSoon("s", 0);
    expect(c.takeAck("s")).toEqual({ inc: 3, seq: 4, based: true });
    expect(c.due(1_000)).toEqual([]);
    expect(c.nextDeadline()).toBeNull();
  });
});

describe("inbound cursors: gap requests (§5.3 step 6 ⟨1.1⟩)", () => {
  // Regression: after a gap was asked for, each later arrival in order asked again for the seq just before it
  // (held, not missing): `requestedTo` kept the highest seq asked, not the highest held when asking.
  it("in-order arrivals after an asked gap ask for nothing more; a jump asks only for the seqs it skipped", () => {
    const c = cursors();
    c.adopt("s", 1);
    const arrive = arriving(c);
    arrive(1, 0);
    arrive(3, 0);
    expect(c.due(50)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 2, to_: 2 }]);
    arrive(4, 100);
    arrive(5, 200);
    expect(c.nextDeadline()).toBe(500); // only the retry
    expect(c.due(499)).toEqual([]);
    arrive(8, 300);
    expect(c.due(350)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 6, to_: 7 }]);
    expect(c.due(500)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 2, to_: 7 }]);
  });

  it("a retry due before a pending grace asks the whole gap and takes the grace's place; in order after it, nothing more is asked", () => {
    const c = cursors();
    c.adopt("s", 1);
    const arrive = arriving(c);
    arrive(1, 0);
    arrive(3, 0); // grace 50, retry 500
    expect(c.due(50)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 2, to_: 2 }]);
    arrive(4, 100);
    arrive(6, 480); // 5 newly missing: grace until 530, but the retry comes first
    expect(c.nextDeadline()).toBe(500);
    expect(c.due(500)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 2, to_: 5 }]);
    expect(c.nextDeadline()).toBe(1_000);
    arrive(7, 510); // follows the highest seq held: nothing newly missing
    expect(c.nextDeadline()).toBe(1_000);
    expect(c.due(999)).toEqual([]);
  });

  it("plain reordering asks for nothing; a gap is asked for after the grace, then only what became missing; the retry re-asks the whole gap", () => {
    const c = cursors();
    c.adopt("s", 1);
    const arrive = arriving(c);
    arrive(1, 0);
    expect(c.nextDeadline()).toBeNull();
    arrive(3, 0); // 2 is missing: grace until 50, retry at 500
    expect(c.nextDeadline()).toBe(50);
    arrive(2, 10); // only reordered: the gap closed before the grace ended
    expect(c.nextDeadline()).toBeNull();
    expect(c.due(50)).toEqual([]);

    arrive(6, 100); // 4..5 missing
    expect(c.nextDeadline()).toBe(150);
    expect(c.due(149)).toEqual([]);
    expect(c.due(150)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 4, to_: 5 }]);
    expect(c.nextDeadline()).toBe(600);
    arrive(9, 160); // 7..8 newly missing: asked alone after the grace
    expect(c.nextDeadline()).toBe(210);
    expect(c.due(210)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 7, to_: 8 }]);
    arrive(8, 220); // fills part of an asked span: nothing new to ask
    expect(c.nextDeadline()).toBe(600);
    expect(c.due(599)).toEqual([]);
    expect(c.due(600)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 4, to_: 8 }]); // the retry: the whole gap, contig + 1 … max(above) − 1
    expect(c.nextDeadline()).toBe(1_100);

    arrive(4, 700);
    arrive(5, 700);
    expect(c.snapshot("s")).toMatchObject({ contig: 6 });
    expect(c.due(1_099)).toEqual([]);
    expect(c.due(1_100)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 7, to_: 8 }]);
    arrive(7, 1_150);
    expect(c.snapshot("s")).toMatchObject({ contig: 9, graceAt: null, retryAt: null });
    expect(c.nextDeadline()).toBeNull();
    expect(c.due(10_000)).toEqual([]);
  });

  it("the retry re-asks a gap already asked for, every resendRetryMs while it stays open", () => {
    const c = cursors();
    c.adopt("s", 2);
    expect(c.receive("s", 2, 0, 1)).toBe("new"); // 1 missing; above = {2}: the gap is 1..1
    c.checkGap("s", 0);
    expect(c.nextDeadline()).toBe(50);
    expect(c.due(50)).toEqual([{ kind: "resend", to: "s", inc: 2, from: 1, to_: 1 }]);
    expect(c.due(500)).toEqual([{ kind: "resend", to: "s", inc: 2, from: 1, to_: 1 }]);
    expect(c.nextDeadline()).toBe(1_000);
  });

  it("the earliest deadline is found whichever sender holds it and whichever kind it is", () => {
    const c = cursors();
    c.adopt("b", 1);
    c.adopt("a", 1);
    expect(c.receive("b", 1, 0, 1)).toBe("new");
    c.ackSoon("b", 40); // b's ack at 60, b armed first
    expect(c.receive("a", 3, 0, 1)).toBe("new");
    c.checkGap("a", 0); // a's grace at 50, retry at 500
    expect(c.nextDeadline()).toBe(50);
    expect(c.due(50)).toEqual([{ kind: "resend", to: "a", inc: 1, from: 1, to_: 2 }]);
    expect(c.nextDeadline()).toBe(60);
    expect(c.due(60)).toEqual([{ kind: "ack", to: "b", inc: 1, seq: 1, based: false }]);
    expect(c.nextDeadline()).toBe(500);
  });

  it("the ack and the gap requests of one sender come due together, the ack first; the earliest deadline is over every sender", () => {
    const c = cursors();
    c.adopt("a", 1);
    c.adopt("b", 1);
    expect(c.receive("a", 3, 0, 1)).toBe("new");
    c.checkGap("a", 0); // grace 50, retry 500
    expect(c.receive("b", 1, 0, 1)).toBe("new");
    c.ackSoon("b", 40); // ack at 60
    expect(c.nextDeadline()).toBe(50);
    c.ackSoon("a", 45); // ack at 65
    expect(c.due(50)).toEqual([{ kind: "resend", to: "a", inc: 1, from: 1, to_: 2 }]);
    expect(c.nextDeadline()).toBe(60);
    expect(c.due(70)).toEqual([
      { kind: "ack", to: "a", inc: 1, seq: 0, based: false },
      { kind: "ack", to: "b", inc: 1, seq: 1, based: false },
    ]);
    expect(c.nextDeadline()).toBe(500);
  });
});
