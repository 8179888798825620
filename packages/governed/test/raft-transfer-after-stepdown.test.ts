/**
 * A node whose leadership transfer is still running after it stepped down (governed.md R-T2, R-F1): when the
 * target's first leader frame at a later term arrives — AppendEntries or InstallSnapshot — the node adopts the
 * target as its leader, and hands it the proposals that waited for a leader, before it reports the transfer as
 * succeeded.
 */
import { describe, expect, it } from "vitest";
import type { Message } from "../src/index.ts";
import { type Script, transferringToB } from "./support/script.ts";

/** a led a, b, c and started a transfer to b (request 1, TimeoutNow lost); a later-term reply made it a follower of nobody; proposal 2 waits. */
function strandedTransfer(): { s: Script; term: number } {
  const { s, a, term } = transferringToB();
  a.step("c", { type: "appendReply", term: term + 1, success: false, matchIndex: 0, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 0 });
  expect([a.state, a.leader, a.transfer?.target]).toEqual(["follower", null, "b"]);
  a.propose(2, new Uint8Array([2]), null);
  s.flush("a");
  expect(s.outcomes.has(2)).toBe(false);
  return { s, term };
}

describe("the leader frame that ends a transfer (R-T2)", () => {
  const cases: [string, (a: { lastIndex: number; commitIndex: number }, term: number) => Message, string][] = [
    ["an AppendEntries", (a, term) => ({ type: "append", term: term + 2, prevLogIndex: a.lastIndex, prevLogTerm: term, leaderCommit: a.commitIndex, round: 0, entries: [] }), "appendReply"],
    ["an InstallSnapshot chunk", (a, term) => ({
      type: "snapshot", term: term + 2, lastIndex: a.lastIndex, lastTerm: term, config: { voters: ["a", "b", "c"], learners: [] }, total: 1, offset: 0, data: new Uint8Array([1]),
    }), "snapshotReply"],
  ];
  for (const [what, frame, reply] of cases) {
    it(`${what} from the target makes it the leader first: waiting proposals are forwarded to it, then the transfer ends as succeeded`, () => {
      const { s, term } = strandedTransfer();
      const a = s.core("a");
      s.traces.set("a", []);
      a.step("b", frame(a, term));
      const rd = s.flush("a");
      expect(rd.trace).toEqual([
        { type: "forwardSent", to: "b", corrId: 2 },
        { type: "transferEnd", target: "b", generation: 1, outcome: "succeeded" },
      ]);
      expect([...rd.earlyMessages, ...rd.messages].map((m) => [m.to, m.message.type])).toEqual([["b", "forward"], ["b", reply]]);
      expect(s.outcomes.get(1)).toMatchObject({ id: 1, ok: true });
      expect([a.term, a.leader]).toEqual([term + 2, "b"]);
    });
  }
});
