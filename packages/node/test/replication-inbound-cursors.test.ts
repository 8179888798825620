/**
 * InboundCursors driven directly (node.md §5.3, §4.2): incarnation adoption, duplicate detection, split
 * deltas counted once all parts are in, full-state transfers, cursor resync's cleanup of incomplete split
 * deltas, and the `maxTrackedSeqs` bound on everything tracked per sender (seqs above the prefix, incomplete
 * split deltas, and held part numbers). The replication suites converge whether or not this bookkeeping is
 * exact (anti-entropy heals a forgotten delta), so they cannot see most of it; these tests pin it (issue 19).
 * Every fixture is built inside its test (docs/mutation.md, "Build fixtures inside the test").
 */
import { describe, expect, it } from "vitest";
import { InboundCursors } from "../src/replication/inbound.ts";

const cursors = (maxTrackedSeqs = 64) => new InboundCursors({ maxTrackedSeqs, reorderGraceMs: 50, resendRetryMs: 500, ackDelayMs: 20 });

/** The counting state of `s`'s cursor, in a comparable form: incomplete split deltas as [seq, parts, parts got]. */
const view = (c: InboundCursors, s: string) => {
  const k = c.snapshot(s)!;
  return {
    contig: k.contig,
    above: [...k.above].sort((a, b) => a - b),
    partial: [...k.partial].map(([seq, p]) => [seq, p.parts, [...p.got].sort((a, b) => a - b)]).sort((a, b) => (a[0] as number) - (b[0] as number)),
    partsHeld: k.partsHeld,
  };
};

describe("inbound cursors: incarnations (§5.3 steps 1–2)", () => {
  it("a cursor made on first use knows no incarnation, holds nothing and has no confirmed base", () => {
    const c = cursors();
    expect(c.of("s")).toEqual({
      inc: -1, contig: 0, above: new Set(), partial: new Map(), partsHeld: 0, based: false,
      requestedTo: 0, graceAt: null, retryAt: null, ackAt: null, transfer: null,
    });
  });

  it("incarnation 0 is a first one; a newer one is a restart, the same is same, an older one is old and changes nothing", () => {
    const c = cursors();
    expect(c.adopt("s", 0)).toBe("first");
    expect(c.adopt("s", 0)).toBe("same");
    expect(c.adopt("s", 1)).toBe("restart");
    expect(c.receive("s", 1, 0, 1)).toBe("new");
    expect(c.adopt("s", 0)).toBe("old");
    expect(c.snapshot("s")).toMatchObject({ inc: 1, contig: 1 });
    expect(c.adopt("s", 5)).toBe("restart");
  });

  it("a restart forgets the old stream: the prefix, the seqs above it, incomplete split deltas, parts held and the base", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 1)).toBe("new");
    expect(c.receive("s", 3, 0, 1)).toBe("new");
    expect(c.receive("s", 5, 0, 2)).toBe("partial");
    c.resync("s", 0);
    expect(view(c, "s")).toEqual({ contig: 1, above: [3], partial: [[5, 2, [0]]], partsHeld: 1 });
    expect(c.snapshot("s")!.based).toBe(true);

    expect(c.adopt("s", 2)).toBe("restart");
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [], partsHeld: 0 });
    expect(c.snapshot("s")!.based).toBe(false);
    // seq 3 of the new incarnation is a new delta, not the old one's seq 3
    expect(c.receive("s", 3, 0, 1)).toBe("new");
  });
});

describe("inbound cursors: duplicates (§5.3 step 4)", () => {
  it("a seq at or below the prefix, or already above it, is a duplicate", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 1)).toBe("new");
    expect(c.receive("s", 1, 0, 1)).toBe("duplicate"); // seq = contig
    expect(c.receive("s", 2, 0, 1)).toBe("new");
    expect(c.receive("s", 1, 0, 1)).toBe("duplicate"); // seq < contig
    expect(c.receive("s", 4, 0, 1)).toBe("new");
    expect(c.receive("s", 4, 0, 1)).toBe("duplicate"); // in above
    expect(c.receive("s", 4, 1, 2)).toBe("duplicate"); // any part of a counted seq
    expect(view(c, "s")).toEqual({ contig: 2, above: [4], partial: [], partsHeld: 0 });
  });
});

describe("inbound cursors: split deltas (§4.2, §5.3: steps 4–6 once all parts arrived)", () => {
  it("a three-part delta counts once, when its last part arrives in any order; a repeated part is not counted twice", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 1, 2, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[1, 3, [2]]], partsHeld: 1 });
    expect(c.receive("s", 1, 2, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[1, 3, [2]]], partsHeld: 1 });
    expect(c.receive("s", 1, 0, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[1, 3, [0, 2]]], partsHeld: 2 });
    expect(c.receive("s", 1, 1, 3)).toBe("new");
    expect(view(c, "s")).toEqual({ contig: 1, above: [], partial: [], partsHeld: 0 });
    expect(c.receive("s", 1, 0, 3)).toBe("duplicate");
  });

  it("a part announcing a different part count than the first part of its seq is not counted", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 2, 0, 2)).toBe("partial");
    expect(c.receive("s", 2, 1, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[2, 2, [0]]], partsHeld: 1 });
    expect(c.receive("s", 2, 1, 2)).toBe("new");
    expect(view(c, "s")).toEqual({ contig: 0, above: [2], partial: [], partsHeld: 0 });
  });

  it("split deltas in progress together are each counted when complete", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 2)).toBe("partial");
    expect(c.receive("s", 2, 0, 2)).toBe("partial");
    expect(view(c, "s").partsHeld).toBe(2);
    expect(c.receive("s", 1, 1, 2)).toBe("new");
    expect(c.receive("s", 2, 1, 2)).toBe("new");
    expect(view(c, "s")).toEqual({ contig: 2, above: [], partial: [], partsHeld: 0 });
  });

  it("a delta of exactly maxTrackedSeqs parts is counted; one of more parts is joined but never tracked", () => {
    const c = cursors(2);
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 2)).toBe("partial");
    expect(c.receive("s", 1, 1, 2)).toBe("new");
    expect(c.receive("s", 2, 0, 3)).toBe("partial");
    expect(c.receive("s", 2, 1, 3)).toBe("partial");
    expect(c.receive("s", 2, 2, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 1, above: [], partial: [], partsHeld: 0 });
  });

  it("a new split delta that would take seqs above the prefix plus incomplete ones to maxTrackedSeqs first forgets the incomplete ones", () => {
    const c = cursors(3);
    c.adopt("s", 1);
    expect(c.receive("s", 3, 0, 1)).toBe("new");
    expect(c.receive("s", 4, 0, 1)).toBe("new");
    expect(c.receive("s", 6, 0, 2)).toBe("partial"); // 0 incomplete + 2 above: room
    expect(view(c, "s")).toEqual({ contig: 0, above: [3, 4], partial: [[6, 2, [0]]], partsHeld: 1 });
    expect(c.receive("s", 7, 0, 2)).toBe("partial"); // 1 + 2 reaches 3: seq 6 is forgotten
    expect(view(c, "s")).toEqual({ contig: 0, above: [3, 4], partial: [[7, 2, [0]]], partsHeld: 1 });
    expect(c.receive("s", 6, 1, 2)).toBe("partial"); // seq 6 starts over (and seq 7 is forgotten in turn)
    expect(view(c, "s")).toEqual({ contig: 0, above: [3, 4], partial: [[6, 2, [1]]], partsHeld: 1 });
  });

  it("a whole (single-part) delta arriving at the limit costs no incomplete split delta its parts", () => {
    const c = cursors(3);
    c.adopt("s", 1);
    expect(c.receive("s", 10, 0, 2)).toBe("partial");
    for (const seq of [3, 5, 1]) {
      expect(c.receive("s", seq, 0, 1)).toBe("new");
      c.checkGap("s", 0); // as the core does after each new delta
    }
    // 2 above + 1 incomplete: at the limit, not past it
    expect(view(c, "s")).toEqual({ contig: 1, above: [3, 5], partial: [[10, 2, [0]]], partsHeld: 1 });
    expect(c.receive("s", 10, 1, 2)).toBe("new");
    expect(view(c, "s")).toEqual({ contig: 1, above: [3, 5, 10], partial: [], partsHeld: 0 });
  });

  it("a part that would take the parts held past maxTrackedSeqs first forgets every incomplete split delta, its own included", () => {
    const c = cursors(4);
    c.adopt("s", 1);
    expect(c.receive("s", 5, 0, 3)).toBe("partial");
    expect(c.receive("s", 5, 1, 3)).toBe("partial");
    expect(c.receive("s", 6, 0, 3)).toBe("partial");
    expect(c.receive("s", 6, 1, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[5, 3, [0, 1]], [6, 3, [0, 1]]], partsHeld: 4 });
    expect(c.receive("s", 5, 2, 3)).toBe("partial"); // 4 held: all forgotten, then seq 5 starts over with part 2
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[5, 3, [2]]], partsHeld: 1 });
    expect(c.receive("s", 6, 2, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[5, 3, [2]], [6, 3, [2]]], partsHeld: 2 });
  });
});

describe("inbound cursors: full-state transfers (§5.2 state, §4.2)", () => {
  const part = (transfer: number, parts: number, p: number) => ({ inc: 1, transfer, parts, part: p });

  it("a transfer completes once each of its parts arrived; repeats, other part counts and older transfers do not count", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.transferPart("s", part(1, 2, 0))).toBe(false);
    expect(c.transferPart("s", part(1, 2, 0))).toBe(false);
    expect(view(c, "s").partsHeld).toBe(1);
    expect(c.transferPart("s", part(1, 3, 1))).toBe(false);
    expect(c.transferPart("s", part(0, 2, 1))).toBe(false);
    expect(view(c, "s").partsHeld).toBe(1);
    expect(c.transferPart("s", part(1, 2, 1))).toBe(true);
    expect(view(c, "s").partsHeld).toBe(0);
    expect(c.snapshot("s")!.transfer).toBeNull();
  });

  it("a newer transfer replaces the one in progress and releases its parts", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.transferPart("s", part(1, 3, 0))).toBe(false);
    expect(c.transferPart("s", part(1, 3, 1))).toBe(false);
    expect(view(c, "s").partsHeld).toBe(2);
    expect(c.transferPart("s", part(2, 2, 0))).toBe(false);
    expect(view(c, "s").partsHeld).toBe(1);
    expect(c.transferPart("s", part(1, 3, 2))).toBe(false); // the replaced transfer's last part
    expect(c.transferPart("s", part(2, 2, 1))).toBe(true);
    expect(view(c, "s").partsHeld).toBe(0);
  });

  it("a transfer of more parts than maxTrackedSeqs is never counted; one of exactly that many is", () => {
    const c = cursors(2);
    c.adopt("s", 1);
    expect([0, 1, 2].map((p) => c.transferPart("s", part(1, 3, p)))).toEqual([false, false, false]);
    expect(view(c, "s").partsHeld).toBe(0);
    expect([0, 1].map((p) => c.transferPart("s", part(2, 2, p)))).toEqual([false, true]);
  });

  it("transfer parts share the per-sender budget with split deltas: at the limit the incomplete split deltas are forgotten", () => {
    const c = cursors(3);
    c.adopt("s", 1);
    expect(c.receive("s", 5, 0, 3)).toBe("partial");
    expect(c.receive("s", 5, 1, 3)).toBe("partial");
    expect(c.transferPart("s", part(1, 2, 0))).toBe(false);
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [[5, 3, [0, 1]]], partsHeld: 3 });
    expect(c.transferPart("s", part(1, 2, 1))).toBe(true);
    expect(view(c, "s")).toEqual({ contig: 0, above: [], partial: [], partsHeld: 0 });
  });
});

describe("inbound cursors: cursor resync (§5.3)", () => {
  it("resync to u drops the seqs above the prefix and the incomplete split deltas up to u, keeps those beyond, and re-advances", () => {
    const c = cursors();
    c.adopt("s", 1);
    expect(c.receive("s", 2, 0, 1)).toBe("new");
    expect(c.receive("s", 9, 0, 1)).toBe("new");
    expect(c.receive("s", 4, 0, 2)).toBe("partial");
    expect(c.receive("s", 5, 0, 2)).toBe("partial");
    expect(c.receive("s", 8, 0, 3)).toBe("partial");
    expect(c.receive("s", 8, 1, 3)).toBe("partial");
    expect(view(c, "s")).toEqual({ contig: 0, above: [2, 9], partial: [[4, 2, [0]], [5, 2, [0]], [8, 3, [0, 1]]], partsHeld: 4 });
    c.resync("s", 5);
    expect(view(c, "s")).toEqual({ contig: 5, above: [9], partial: [[8, 3, [0, 1]]], partsHeld: 2 });
    expect(c.snapshot("s")!.based).toBe(true);
    expect(c.receive("s", 8, 2, 3)).toBe("new");
    expect(view(c, "s")).toEqual({ contig: 5, above: [8, 9], partial: [], partsHeld: 0 });
    c.resync("s", 7);
    expect(view(c, "s")).toEqual({ contig: 9, above: [], partial: [], partsHeld: 0 });
  });
});

describe("inbound cursors: too much to track (§5.3 step 6)", () => {
  it("past maxTrackedSeqs seqs above the prefix plus incomplete split deltas, both are cleared, the prefix kept and the gap timers disarmed", () => {
    const c = cursors(3);
    c.adopt("s", 1);
    expect(c.receive("s", 1, 0, 1)).toBe("new");
    c.checkGap("s", 0);
    expect(c.receive("s", 10, 0, 2)).toBe("partial");
    expect(c.receive("s", 3, 0, 1)).toBe("new");
    c.checkGap("s", 0);
    expect(c.receive("s", 5, 0, 1)).toBe("new");
    c.checkGap("s", 0); // 2 above + 1 incomplete: at the limit, kept
    expect(view(c, "s")).toEqual({ contig: 1, above: [3, 5], partial: [[10, 2, [0]]], partsHeld: 1 });
    expect(c.nextDeadline()).toBe(50);
    expect(c.receive("s", 7, 0, 1)).toBe("new");
    c.checkGap("s", 10); // 3 + 1: past it
    expect(view(c, "s")).toEqual({ contig: 1, above: [], partial: [], partsHeld: 0 });
    expect(c.nextDeadline()).toBeNull();
    expect(c.due(10_000)).toEqual([]);
    expect(c.receive("s", 10, 1, 2)).toBe("partial"); // seq 10 starts over
  });
});
