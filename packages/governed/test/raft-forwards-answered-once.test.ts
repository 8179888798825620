/**
 * A forward is answered once (governed.md R-F1, R-F4): once the leader's answer has arrived, neither the same answer
 * arriving again (a duplicated frame) nor a later term (which fails every forward still open) reports a second
 * outcome for it.
 */
import { describe, expect, it } from "vitest";
import type { Message, RaftCore } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent } from "./support/hand-driven.ts";

/** b, a follower of a (term 1, no-op at index 1), whose forward 30 a has answered "committed" at index 2. */
function answered(): { b: RaftCore; reply: Message } {
  const a = handCore("a");
  const b = handCore("b");
  hand(a, sent(electVia(a, b)), b);
  expect([b.leader, b.term, b.lastIndex]).toEqual(["a", 1, 1]);
  b.propose(30, new Uint8Array([1]), null);
  expect(sent(cycle(b)).map((m) => [m.to, m.message.type])).toEqual([["a", "forward"]]);
  const reply: Message = { type: "forwardReply", corrId: 30, outcome: "committed", index: 2, term: 1 };
  b.step("a", reply);
  const rd = cycle(b);
  expect(rd.outcomes).toEqual([{ id: 30, ok: true, index: 2, term: 1 }]);
  expect(rd.trace.filter((t) => t.type === "forwardAnswered")).toHaveLength(1);
  return { b, reply };
}

describe("a forward answered once (R-F1, R-F4)", () => {
  it("the same answer arriving again reports nothing", () => {
    const { b, reply } = answered();
    b.step("a", reply);
    const rd = cycle(b);
    expect(rd.outcomes).toEqual([]);
    expect(rd.trace).toEqual([]);
  });

  it("a later term, which fails the forwards still open, does not fail the answered one", () => {
    const { b } = answered();
    b.step("c", { type: "append", term: 2, prevLogIndex: 1, prevLogTerm: 1, leaderCommit: 1, round: 0, entries: [] });
    const rd = cycle(b);
    expect([b.term, b.leader]).toEqual([2, "c"]);
    expect(rd.outcomes).toEqual([]);
  });
});
