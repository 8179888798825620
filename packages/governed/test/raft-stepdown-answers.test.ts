/**
 * What a leader that steps down owes the requests it held (governed.md R-F2, R-F4, R-D4), on hand-driven cores whose
 * `random` is a constant:
 *
 * - a forwarded proposal it appended but did not commit is answered "failed" to the forwarder at once, so the
 *   forwarder retries instead of waiting for an answer that will never come;
 * - every request is answered exactly once: when the same node is elected again and the entries of the earlier
 *   term commit under its new no-op, the proposals, coalesced retries and forwards the step-down already answered
 *   get no second answer;
 * - commit notices it owed when it stepped down are forgotten: elected again, it times the notice of its next
 *   commits from those commits alone.
 */
import { describe, expect, it } from "vitest";
import type { ClusterConfig, Ready, RaftCore } from "../src/index.ts";
import { ABC, cycle, electVia as elect, handCore, hand, sent } from "./support/hand-driven.ts";
import type { HandConfig } from "./support/hand-driven.ts";

const enc = new TextEncoder();
const KEY = { client: "k", seq: 1 };

function core(id: string, bootstrap: ClusterConfig = ABC, cfg: HandConfig = {}): RaftCore {
  return handCore(id, { bootstrap, cfg: { commitNoticeMs: 5, ...cfg } });
}

/**
 * a leads term 1 (b's votes) and holds, uncommitted: proposal 10 at index 2 under KEY, its retry 11 coalesced with
 * it, and b's forward (corrId 7) at index 3. Then c, at term 2, makes a step down; returns that step-down's Ready.
 */
function steppedDown(): { a: RaftCore; down: Ready } {
  const a = core("a");
  const b = core("b");
  elect(a, b, 150);
  a.propose(10, enc.encode("p"), KEY);
  a.propose(11, enc.encode("p"), KEY);
  a.step("b", { type: "forward", corrId: 7, key: null, command: enc.encode("f") });
  const held = cycle(a);
  expect(held.trace).toContainEqual({ type: "proposalCoalesced", index: 2, committed: false });
  expect([a.lastIndex, a.commitIndex]).toEqual([3, 0]);
  expect(held.outcomes).toEqual([]);
  a.step("c", { type: "voteReply", term: 2, granted: false });
  const down = cycle(a);
  expect(down.trace).toContainEqual({ type: "stepDown", term: 2, reason: "higher-term" });
  return { a, down };
}

describe("a leader's step-down answers what it held (R-F2, R-F4)", () => {
  it("the forwarder of an uncommitted forward is told failed; local proposals and retries get leadership-lost", () => {
    const { down } = steppedDown();
    expect(sent(down)).toContainEqual({ to: "b", message: { type: "forwardReply", corrId: 7, outcome: "failed", index: 0, term: 0 } });
    expect(down.outcomes).toEqual([
      { id: 10, ok: false, refusal: "leadership-lost" },
      { id: 11, ok: false, refusal: "leadership-lost" },
    ]);
  });

  it("elected again, the node does not answer those requests a second time when their entries commit", () => {
    const { a } = steppedDown();
    const c = core("c");
    const readies = [elect(a, c, 300)];
    expect([a.term, a.lastIndex]).toEqual([3, 4]);
    // c starts empty: a backs up to index 1 and sends it everything; c's answer commits 1–4
    for (let i = 0; i < 4 && a.commitIndex < 4; i++) {
      readies.push(hand(c, sent(hand(a, sent(readies[readies.length - 1]!), c)), a));
    }
    expect(a.commitIndex).toBe(4);
    expect(a.entryAt(2)).toMatchObject({ term: 1, key: KEY });
    readies.push(cycle(a));
    expect(readies.flatMap((rd) => rd.outcomes)).toEqual([]);
    expect(readies.flatMap((rd) => sent(rd)).filter((m) => m.message.type === "forwardReply")).toEqual([]);
  });
});

describe("commit notices owed at a step-down (R-R4)", () => {
  it("are forgotten: elected again, the leader sends its next notice commitNoticeMs after the commit that owes it", () => {
    const ABCL: ClusterConfig = { voters: ["a", "b", "c"], learners: ["l"] };
    const a = core("a", ABCL, { maxEntriesPerMessage: 1 });
    const b = core("b", ABCL);
    const c = core("c", ABCL);
    const l = core("l", ABCL);
    const won = elect(a, b, 150);
    // l and b take the no-op; b's answer commits it: both are owed a commit notice (due at 155)
    hand(l, sent(hand(a, sent(won), l)), a);
    hand(b, sent(hand(a, sent(won), b)), a);
    expect(a.commitIndex).toBe(1);
    // a removes the learner at once (R-M1: a config entry is in force when appended); l no longer has a progress
    a.changeMembership(30, { voters: ["a", "b", "c"], learners: [] });
    cycle(a);
    expect([...a.progress.keys()].sort()).toEqual(["b", "c"]);
    // before the notice falls due, c (at term 2) makes a step down; the removal stays in a's log, uncommitted
    a.step("c", { type: "voteReply", term: 2, granted: false });
    expect(cycle(a).outcomes).toEqual([{ id: 30, ok: false, refusal: "leadership-lost" }]);
    // c elects a for term 3 at 300; a proposes at once: the no-op is 3, the proposal 4
    let toC = sent(elect(a, c, 300));
    a.propose(40, enc.encode("p"), null);
    toC = [...toC, ...sent(cycle(a))];
    expect([a.term, a.lastIndex, a.config.learners]).toEqual([3, 4, []]);
    // c starts empty and gets one entry per frame: its answer for index 3 commits 1–3 while 4 is still unsent to it
    for (let i = 0; i < 8 && a.commitIndex < 3; i++) toC = sent(hand(c, sent(hand(a, toC, c)), a));
    expect(a.commitIndex).toBe(3);
    // at 302 c takes 4: committed, and c (now holding everything) is owed a notice, due at 307
    a.tick(302);
    const last = hand(c, sent(hand(a, toC, c)), a);
    expect(a.commitIndex).toBe(4);
    expect(last.outcomes).toEqual([{ id: 40, ok: true, index: 4, term: 3 }]);
    expect(sent(last)).toEqual([]);
    a.tick(305);
    expect(sent(cycle(a))).toEqual([]);
    a.tick(307);
    expect(sent(cycle(a))).toEqual([
      { to: "c", message: { type: "append", term: 3, prevLogIndex: 4, prevLogTerm: 3, leaderCommit: 4, round: 0, entries: [] } },
    ]);
  });
});
