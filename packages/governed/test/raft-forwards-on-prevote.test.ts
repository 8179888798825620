/**
 * A follower's forwards when it stops following its leader (governed.md R-F4), on hand-driven cores whose `random`
 * is a constant: once its election timer fires and it starts a pre-vote, it no longer follows the leader it
 * forwarded to; the forward fails at once as `leadership-lost` (retryable), and a late answer from that leader
 * changes nothing — the request has its one outcome.
 */
import { describe, expect, it } from "vitest";
import { cycle, handCore as core, hand, sent } from "./support/hand-driven.ts";

const enc = new TextEncoder();

describe("forwards of a follower that starts a pre-vote (R-F4)", () => {
  it("fail at once as leadership-lost, and the old leader's late answer is ignored", () => {
    const a = core("a");
    const b = core("b");
    a.tick(150);
    const votes = sent(hand(b, sent(hand(a, sent(cycle(a)), b)), a));
    const won = hand(b, sent(hand(a, votes, b)), a);
    expect(a.state).toBe("leader");
    hand(a, sent(won), b); // the no-op: b follows a
    expect([b.leader, b.term]).toEqual(["a", 1]);

    b.propose(5, enc.encode("p"), null);
    expect(sent(cycle(b))).toEqual([{ to: "a", message: { type: "forward", corrId: 5, key: null, command: enc.encode("p") } }]);

    // a falls silent; b's election timer fires
    b.tick(150);
    const rd = cycle(b);
    expect(rd.trace).toContainEqual({ type: "preVoteStart", term: 2, round: 1 });
    expect([b.state, b.leader]).toEqual(["precandidate", null]);
    expect(rd.outcomes).toEqual([{ id: 5, ok: false, refusal: "leadership-lost" }]);

    // a committed it after all and says so, too late
    b.step("a", { type: "forwardReply", corrId: 5, outcome: "committed", index: 2, term: 1 });
    const late = cycle(b);
    expect(late.outcomes).toEqual([]);
    expect(late.trace).toEqual([]);
  });
});
