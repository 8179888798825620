/**
 * The leader's own appends as the driver sees them, and the replication state a new leader starts from (governed.md
 * R-R1, R-R4), on hand-driven cores whose `random` is a constant:
 *
 * - appends made between two readies reach storage as one `append` step carrying them in order;
 * - an entry that carries no configuration has no `config` property at all (LogEntry's `config` is optional, not
 *   `undefined`: the codec and the stores see exactly the fields the entry has);
 * - `changedFrom` (the harness's incremental-check cursor) moves down to the first index an append writes;
 * - a new leader treats each peer as having acknowledged since its last heartbeat: a peer that answered (even with
 *   nothing matched yet) and has a frame in flight gets a plain heartbeat at the first heartbeat, not the frame
 *   again.
 */
import { describe, expect, it } from "vitest";
import type { RaftCore, Ready } from "../src/index.ts";
import { cycle, handCore as core, hand, sent } from "./support/hand-driven.ts";

const enc = new TextEncoder();
/** a elected for term 1 at 150 with b's votes; returns a's Ready of the win (the no-op and its AppendEntries). */
function leaderA(): { a: RaftCore; b: RaftCore; c: RaftCore; won: Ready } {
  const a = core("a");
  const b = core("b");
  const c = core("c");
  a.tick(150);
  const votes = sent(hand(b, sent(hand(a, sent(cycle(a)), b)), a));
  const won = hand(b, sent(hand(a, votes, b)), a);
  expect([a.state, a.term]).toEqual(["leader", 1]);
  return { a, b, c, won };
}

describe("the leader's appends in storage (R-R4)", () => {
  it("appends made between two readies are one append step, in order, and entries without a config have no config field", () => {
    const { a, won } = leaderA();
    expect(won.storage).toHaveLength(1);
    a.propose(1, enc.encode("x"), { client: "k", seq: 1 });
    a.propose(2, enc.encode("y"), null);
    a.propose(3, enc.encode("z"), null);
    const rd = cycle(a);
    expect(rd.storage).toHaveLength(1);
    const op = rd.storage[0]!;
    if (op.op !== "append") throw new Error(`expected an append step, got ${op.op}`);
    expect(op.entries.map((e) => e.index)).toEqual([2, 3, 4]);
    expect(op.entries[0]).toStrictEqual({ index: 2, term: 1, kind: "app", key: { client: "k", seq: 1 }, command: enc.encode("x"), stampedAt: 150 });
    for (const e of [...op.entries, ...(won.storage[0]?.op === "append" ? won.storage[0].entries : [])]) expect(Object.keys(e)).not.toContain("config");
  });

  it("changedFrom moves down to the index of the first entry appended", () => {
    const { a } = leaderA();
    a.changedFrom = Infinity;
    a.propose(1, enc.encode("x"), null);
    expect(a.changedFrom).toBe(2);
    a.propose(2, enc.encode("y"), null);
    expect(a.changedFrom).toBe(2);
  });
});

describe("a new leader's replication state (R-R1)", () => {
  it("a peer that answered and has a frame in flight gets a plain heartbeat at the leader's first heartbeat", () => {
    const { a, b, c, won } = leaderA();
    // b acknowledges the no-op: committed. c got the no-op's AppendEntries too, still unanswered
    hand(b, sent(hand(a, sent(won), b)), a);
    expect(a.commitIndex).toBe(1);
    a.readIndex(9);
    const round = cycle(a);
    const toC = sent(round).filter((m) => m.to === "c");
    expect(toC.map((m) => m.message)).toEqual([{ type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 1, round: 1, entries: [] }]);
    const answer = sent(hand(a, toC, c));
    expect(answer.map((m) => m.message)).toEqual([
      { type: "appendReply", term: 1, success: true, matchIndex: 0, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 1 },
    ]);
    // c answered at index 0: a replicates to it, sending the no-op again (in flight)
    const again = hand(c, answer, a);
    expect(again.outcomes).toEqual([{ id: 9, ok: true, index: 1, term: 1 }]);
    expect(sent(again).filter((m) => m.to === "c").map((m) => m.message)).toMatchObject([{ type: "append", prevLogIndex: 0, entries: [{ index: 1 }] }]);
    a.tick(200); // the first heartbeat since the election
    const hb = sent(cycle(a)).filter((m) => m.to === "c").map((m) => m.message);
    expect(hb).toEqual([{ type: "append", term: 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 1, round: 1, entries: [] }]);
  });
});
