/**
 * The last two survivors of the sixteenth Stryker sitting (governed.md R-E3, R-P1), on hand-driven cores:
 *
 * - a candidate that lost its election keeps its own vote of that term: a second candidate of the same term is
 *   refused (one vote per term), and no hard state is written again;
 * - a single voter wins in the very ready that makes its term and vote durable; its AppendEntries to a learner go
 *   out only with the ordinary messages, after that write — never early, or a crash before the write could bring it
 *   back at the old term to lead that term a second time with another log.
 */
import { describe, expect, it } from "vitest";
import type { ClusterConfig } from "../src/index.ts";
import { cycle, handCore, sentTo } from "./support/hand-driven.ts";

describe("a candidate that lost its election (R-E3)", () => {
  it("keeps its vote for itself in that term: another candidate of the same term is refused", () => {
    const a = handCore("a");
    a.tick(150);
    cycle(a);
    a.step("b", { type: "preVoteReply", term: 1, granted: true, round: 1 });
    const campaign = cycle(a);
    expect(campaign.hardState).toEqual({ term: 1, votedFor: "a" });
    a.step("b", { type: "voteReply", term: 1, granted: false });
    a.step("c", { type: "voteReply", term: 1, granted: false });
    const lost = cycle(a);
    expect([a.state, a.term]).toEqual(["follower", 1]);
    expect(lost.hardState).toBeNull();
    // c campaigns in the same term with a log as good as a's
    a.step("c", { type: "vote", term: 1, lastLogIndex: 0, lastLogTerm: 0, transfer: false });
    const answer = cycle(a);
    expect(sentTo(answer, "c")).toEqual([{ type: "voteReply", term: 1, granted: false }]);
    expect(answer.hardState).toBeNull();
  });
});

describe("a single voter's first ready as leader (R-P1)", () => {
  it("sends its AppendEntries to a learner after its term and vote are durable, not early", () => {
    const solo: ClusterConfig = { voters: ["a"], learners: ["l"] };
    const a = handCore("a", { bootstrap: solo });
    a.tick(150);
    const rd = cycle(a);
    expect(a.state).toBe("leader");
    expect(rd.hardState).toEqual({ term: 1, votedFor: "a" });
    expect(rd.earlyMessages).toEqual([]);
    expect(rd.messages.filter((m) => m.to === "l").map((m) => m.message.type)).toContain("append");
  });
});
