/**
 * Elections and check-quorum on hand-driven cores (every timeout 150 ms, heartbeats every 50 ms):
 *
 * - a pre-vote reply of an earlier round is discarded (governed.md §4.2, R-E2: "a pre-vote round id discards stale
 *   replies"): a grant that arrives after the pre-candidate's timer started a new round does not count;
 * - check-quorum windows (R-C1) are counted from the win: the votes that elected the leader are its first window's
 *   answers, so a leader whose followers then fall silent for a while still leads as long as each following window
 *   of one election timeout holds an answer, and steps down "lost-quorum" at the end of the first window that holds
 *   none.
 */
import { describe, expect, it } from "vitest";
import type { RaftCore } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent } from "./support/hand-driven.ts";

describe("a pre-vote round id discards stale replies (§4.2, R-E2)", () => {
  it("a granted pre-vote of round 1 arriving during round 2 is not counted; round 2's grant is", () => {
    const a = handCore("a");
    const b = handCore("b");
    cycle(a);
    cycle(b);
    a.tick(150);
    const round1 = sent(cycle(a));
    expect(round1.map((e) => [e.to, e.message.type])).toEqual([["b", "preVote"], ["c", "preVote"]]);
    const late = sent(hand(a, round1, b)); // b grants round 1, but its answer is delayed
    expect(late).toMatchObject([{ to: "a", message: { type: "preVoteReply", granted: true, round: 1 } }]);
    a.tick(300); // nobody answered in time: a new pre-vote round
    const round2 = sent(cycle(a));
    expect(round2).toMatchObject([{ to: "b", message: { type: "preVote", round: 2 } }, { to: "c", message: { type: "preVote", round: 2 } }]);

    const rd = hand(b, late, a); // round 1's grant arrives now
    expect([a.state, a.term]).toEqual(["precandidate", 0]);
    expect(sent(rd)).toEqual([]);
    expect(rd.trace.map((t) => t.type)).not.toContain("electionStart");

    const rd2 = hand(b, sent(hand(a, round2, b)), a); // b grants round 2: a majority of this round
    expect([a.state, a.term]).toEqual(["candidate", 1]);
    expect(sent(rd2).map((e) => [e.to, e.message.type])).toEqual([["b", "vote"], ["c", "vote"]]);
  });
});

describe("check-quorum windows are counted from the win (R-C1)", () => {
  /** Ticks `a` at `now` and takes its ready; returns the ready's frames. */
  function tickAt(a: RaftCore, now: number) {
    a.tick(now);
    return sent(cycle(a));
  }

  it("a leader answered by nobody for 200 ms after its win, then by b, keeps leading; a silent window deposes it", () => {
    const a = handCore("a");
    const b = handCore("b");
    electVia(a, b); // a wins at 150: its first window (150, 300] holds the votes
    let frames = tickAt(a, 200);
    // b's and c's answers to everything sent from 200 to 350 are lost
    for (const now of [250, 300, 350]) {
      frames = tickAt(a, now);
      expect(a.state).toBe("leader");
    }
    // the heartbeat sent at 350 reaches b, and b's answer reaches a at 360: the window (300, 450] holds an answer
    const answer = sent(hand(a, frames, b));
    expect(answer).toMatchObject([{ to: "a", message: { type: "appendReply", success: true } }]);
    a.tick(360);
    hand(b, answer, a);
    for (const now of [400, 450, 500, 550]) {
      tickAt(a, now);
      expect(a.state).toBe("leader");
    }
    // nothing answered in (450, 600]: a steps down at the same term
    a.tick(600);
    const rd = cycle(a);
    expect([a.state, a.term]).toEqual(["follower", 1]);
    expect(rd.trace).toContainEqual({ type: "stepDown", term: 1, reason: "lost-quorum" });
  });
});
