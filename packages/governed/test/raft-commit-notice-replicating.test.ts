/**
 * Commit notices (the entry-less AppendEntries a leader sends `commitNoticeMs` after a commit to a follower with
 * nothing more to receive) go only to followers in replicate state. A peer still being probed has an AppendEntries
 * outstanding whose answer brings it what it lacks, commit index included — even when its next index lies past the
 * leader's log, as for a learner added by the entry just committed: a notice there would only repeat the probe.
 */
import { describe, expect, it } from "vitest";
import { cycle, electVia, hand, handCore, sent, sentTo } from "./support/hand-driven.ts";

describe("commit notices go to replicating followers only", () => {
  it("a learner added by the committed entry, its probe unanswered, gets no notice; the replicating voter does", () => {
    const a = handCore("a");
    const b = handCore("b");
    hand(b, sent(hand(a, sent(electVia(a, b)), b)), a); // a leads term 1 and its no-op (1) is committed with b
    expect(a.commitIndex).toBe(1);

    a.changeMembership(1, { voters: ["a", "b", "c"], learners: ["d"] }); // entry 2 adds the learner d
    const rd0 = cycle(a);
    // d starts in probe at next 3: its probe (prev 2, nothing to carry) is outstanding and stays unanswered
    expect(sentTo(rd0, "d")).toMatchObject([{ type: "append", prevLogIndex: 2, leaderCommit: 1, entries: [] }]);
    expect(a.progress.get("d")).toMatchObject({ state: "probe", next: 3 });

    const rd = hand(b, sent(hand(a, sent(rd0), b)), a); // b holds 2: committed
    expect(a.commitIndex).toBe(2);
    expect(rd.outcomes).toEqual([{ id: 1, ok: true, index: 2, term: 1 }]);
    expect(sentTo(rd, "d")).toEqual([]);

    a.tick(150 + 5); // commitNoticeMs (5) after the commit, before the next heartbeat (200)
    const notice = cycle(a);
    expect(sentTo(notice, "b")).toMatchObject([{ type: "append", prevLogIndex: 2, leaderCommit: 2, entries: [] }]);
    expect(sentTo(notice, "d")).toEqual([]);
  });
});
