/**
 * InboundCursors driven directly (node.md §5.3): what replication-inbound-cursors and replication-inbound-acks-and-gaps
 * left unpinned — a cursor resync that lands exactly on a seq held above the prefix, the gap asked for again after the
 * `maxTrackedSeqs` overflow forgot everything above the prefix, the earliest deadline over senders armed in any order,
 * and the deadlines `due` acts on: only those `checkGap` set, and none once no gap remains (issue 19).
 * Every fixture is built inside its test (docs/mutation.md, "Build fixtures inside the test").
 */
import { describe, expect, it } from "vitest";
import { InboundCursors } from "../src/replication/inbound.ts";

const cursors = (maxTrackedSeqs = 64) => new InboundCursors({ maxTrackedSeqs, reorderGraceMs: 50, resendRetryMs: 500, ackDelayMs: 20 });

/** Delivers sender "s"'s delta `seq` (one part) as new at `now`, then updates its gap deadlines, as the core does. */
const arriving = (c: InboundCursors) => (seq: number, now: number): void => {
  expect(c.receive("s", seq, 0, 1)).toBe("new");
  c.checkGap("s", now);
};

const held = (c: InboundCursors, s = "s") => {
  const k = c.snapshot(s)!;
  return { contig: k.contig, above: [...k.above].sort((a, b) => a - b) };
};

const counting = (c: InboundCursors, s = "s") => {
  const k = c.snapshot(s)!;
  return { ...held(c, s), partial: [...k.partial.keys()].sort((a, b) => a - b), partsHeld: k.partsHeld };
};

describe("inbound cursors: a seq counted whole while a split copy of it is incomplete (§4.2, §5.5)", () => {
  // Regression: the incomplete split copy stayed in `partial`, holding its parts against maxTrackedSeqs for a seq
  // already counted (until the next clear), and counting toward the limit that forgets the seqs held above the gap.
  it("releases the copy's parts: nothing is held for a counted seq, below the prefix or above it", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 3)).toBe("partial");
    expect(c.receive("s", 1, 2, 3)).toBe("partial");
    expect(c.receive("s", 4, 0, 2)).toBe("partial");
    expect(c.receive("s", 6, 1, 2)).toBe("partial");
    expect(counting(c)).toEqual({ contig: 0, above: [], partial: [1, 4, 6], partsHeld: 4 });
    expect(c.receive("s", 1, 0, 1)).toBe("new"); // into the prefix
    expect(counting(c)).toEqual({ contig: 1, above: [], partial: [4, 6], partsHeld: 2 });
    expect(c.receive("s", 4, 0, 1)).toBe("new"); // above the gap
    expect(counting(c)).toEqual({ contig: 1, above: [4], partial: [6], partsHeld: 1 });
    expect(c.receive("s", 4, 1, 2)).toBe("duplicate");
    expect(c.receive("s", 6, 0, 2)).toBe("new"); // the other split delta is still counted when complete
    expect(counting(c)).toEqual({ contig: 1, above: [4, 6], partial: [], partsHeld: 0 });
  });

  it("a stale copy no longer counts toward the limit: the seqs held above the gap are kept", () => {
    const c = cursors(3);
    c.adopt("s", 1);
    expect(c.receive("s", 3, 0, 2)).toBe("partial");
    expect(c.receive("s", 3, 0, 1)).toBe("new");
    c.checkGap("s", 0);
    for (const seq of [5, 7]) {
      expect(c.receive("s", seq, 0, 1)).toBe("new");
      c.checkGap("s", 0);
    }
    expect(counting(c)).toEqual({ contig: 0, above: [3, 5, 7], partial: [], partsHeld: 0 });
  });
});

describe("inbound cursors: cursor resync onto a held seq (§5.3)", () => {
  it("resync to exactly a seq held above the prefix takes that seq into the prefix: it is no longer held above it", () => {
    const c = cursors();
    c.adopt("s", 1);
    const arrive = arriving(c);
    arrive(1, 0);
    arrive(3, 0);
    arrive(5, 0);
    expect(held(c)).toEqual({ contig: 1, above: [3, 5] });
    c.resync("s", 3);
    c.checkGap("s", 10);
    expect(held(c)).toEqual({ contig: 3, above: [5] });
    arrive(4, 20);
    expect(held(c)).toEqual({ contig: 5, above: [] });
    expect(c.nextDeadline()).toBeNull();
  });

  it("resync to the top seq held closes the gap: nothing is held, nothing asked", () => {
    const c = cursors();
    c.adopt("s", 1);
    const arrive = arriving(c);
    arrive(2, 0);
    arrive(4, 0);
    c.resync("s", 4);
    c.checkGap("s", 10);
    expect(held(c)).toEqual({ contig: 4, above: [] });
    expect(c.nextDeadline()).toBeNull();
    expect(c.due(10_000)).toEqual([]);
  });
});

describe("inbound cursors: after the maxTrackedSeqs overflow (§5.3 step 6)", () => {
  it("the next arrival above the prefix asks, after the grace, for everything missing below it, even seqs asked for before the overflow", () => {
    const c = cursors(3);
    c.adopt("s", 1);
    const arrive = arriving(c);
    arrive(1, 0);
    arrive(3, 0);
    expect(c.due(50)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 2, to_: 2 }]);
    arrive(4, 60);
    arrive(5, 70);
    arrive(6, 80); // 3, 4, 5, 6 held: past the limit, all forgotten, the prefix kept
    expect(held(c)).toEqual({ contig: 1, above: [] });
    expect(c.nextDeadline()).toBeNull();

    arrive(4, 100); // forgotten, so new again: 2 and 3 are missing below it
    expect(held(c)).toEqual({ contig: 1, above: [4] });
    expect(c.nextDeadline()).toBe(150);
    expect(c.due(149)).toEqual([]);
    expect(c.due(150)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 2, to_: 3 }]);
    expect(c.nextDeadline()).toBe(600);
  });
});

describe("inbound cursors: the earliest deadline (wake time)", () => {
  it("a later grace of a sender armed second does not hide an earlier ack of the sender armed first", () => {
    const c = cursors();
    c.adopt("a", 1);
    c.adopt("b", 1);
    expect(c.receive("a", 1, 0, 1)).toBe("new");
    c.checkGap("a", 0);
    c.ackSoon("a", 0); // a: ack at 20
    expect(c.receive("b", 3, 0, 1)).toBe("new");
    c.checkGap("b", 0); // b: grace at 50, retry at 500
    expect(c.nextDeadline()).toBe(20);
    expect(c.due(20)).toEqual([{ kind: "ack", to: "a", inc: 1, seq: 1, based: false }]);
    expect(c.nextDeadline()).toBe(50);
  });

  it("a later grace does not hide an earlier retry of another sender", () => {
    const c = cursors();
    c.adopt("a", 1);
    c.adopt("b", 1);
    expect(c.receive("a", 3, 0, 1)).toBe("new");
    c.checkGap("a", 0); // a: grace 50, retry 500
    expect(c.due(50)).toEqual([{ kind: "resend", to: "a", inc: 1, from: 1, to_: 2 }]); // a: only the retry, at 500
    expect(c.receive("b", 3, 0, 1)).toBe("new");
    c.checkGap("b", 460); // b: grace 510, retry 960
    expect(c.nextDeadline()).toBe(500);
  });
});

describe("inbound cursors: the deadlines due() acts on (§5.3 step 6 ⟨1.1⟩)", () => {
  it("a seq recorded above a gap is asked for only once checkGap armed the grace: the ack's deadline asks for nothing", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 1)).toBe("new");
    expect(c.receive("s", 3, 0, 1)).toBe("new"); // checkGap not run yet
    c.ackSoon("s", 0);
    expect(c.due(20)).toEqual([{ kind: "ack", to: "s", inc: 1, seq: 1, based: false }]);
    expect(c.nextDeadline()).toBeNull();
    expect(c.due(1_000)).toEqual([]);
    c.checkGap("s", 1_000);
    expect(c.nextDeadline()).toBe(1_050);
    expect(c.due(1_050)).toEqual([{ kind: "resend", to: "s", inc: 1, from: 2, to_: 2 }]);
  });

  it("once a resync closed the gap, the retry stops: no request and no further wake-up, even before checkGap runs", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 3, 0, 1)).toBe("new");
    c.checkGap("s", 0); // grace 50, retry 500
    c.resync("s", 3); // the gap 1..2 is covered by the resync
    expect(held(c)).toEqual({ contig: 3, above: [] });
    expect(c.due(50)).toEqual([]);
    expect(c.nextDeadline()).toBeNull();
    expect(c.due(500)).toEqual([]);
    expect(c.nextDeadline()).toBeNull();
  });
});
