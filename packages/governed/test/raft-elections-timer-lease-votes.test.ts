/**
 * Elections on hand-driven cores (governed.md R-E1–R-E4, R-F1, R-M4): what a voter's timer, lease and vote record
 * do, and what a node drops when it starts a (pre-)election.
 * - hearing its leader re-draws a follower's election timeout once (R-E1), and starting an election re-draws it too;
 * - the leader lease lasts strictly less than `electionTimeoutMinMs` after the last contact, and only while the
 *   voter follows a leader of its term (R-E2, R-E4); a pre-vote denied inside it is traced "leader lease";
 * - a voter grants a repeated RequestVote from the candidate it already voted for (R-E3);
 * - a pre-candidate and a candidate know no leader: forwards to the old one fail, new proposals wait (R-F1, R-F4);
 * - only a transfer campaign carries the transfer flag (R-T1);
 * - a candidate (or pre-candidate) denied by a majority gives up at once;
 * - a joiner that knows no voters never drops a leader frame as one from a removed leader (R-M4).
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { ClusterConfig, Envelope, LogEntry, Message, PersistedState, Ready } from "../src/index.ts";

const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: [] };
// election timeout in [150, 300): a draw r gives 150 + floor(150 r)
const CFG = raftConfig({ electionTimeoutMinMs: 150, electionTimeoutMaxMs: 300, heartbeatMs: 50 });
const EMPTY: PersistedState = { term: 0, votedFor: null, snapshot: null, entries: [] };

function e(index: number, term: number): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 };
}
/** A core whose `random` returns `draws` in order, then `rest` forever. */
function core(id: string, draws: readonly number[], persisted: PersistedState = EMPTY, rest = 0, bootstrap = ABC): RaftCore {
  let i = 0;
  return new RaftCore({ id, bootstrap, persisted, config: CFG, random: () => (i < draws.length ? draws[i++]! : rest), now: 0 });
}
/** One ready/advance cycle. */
function cycle(c: RaftCore): Ready {
  const rd = c.ready();
  c.advance(rd);
  return rd;
}
function sent(rd: Ready): Envelope[] {
  return [...rd.earlyMessages, ...rd.messages];
}
const heartbeat = (term: number, prev: number, prevTerm: number): Message => ({
  type: "append", term, prevLogIndex: prev, prevLogTerm: prevTerm, leaderCommit: 0, round: 0, entries: [],
});
/** b at term 1 holding entry 1 (term 1), following a since time 0. */
function followerOfA(draws: readonly number[], rest = 0): RaftCore {
  const b = core("b", draws, { term: 1, votedFor: null, snapshot: null, entries: [e(1, 1)] }, rest);
  b.step("a", heartbeat(1, 1, 1));
  cycle(b);
  expect([b.state, b.leader]).toEqual(["follower", "a"]);
  return b;
}

describe("election timer (R-E1)", () => {
  it("a follower hearing its leader draws its new election timeout once, from the next random value", () => {
    // draws: construction 0.9, the heartbeat's reset 0 (deadline 0 + 150); any further draw would be 0.99 (298)
    const b = followerOfA([0.9, 0], 0.99);
    b.tick(149);
    expect(cycle(b).trace).toEqual([]);
    b.tick(150);
    expect(cycle(b).trace).toEqual([{ type: "electionTimeout", term: 1 }, { type: "preVoteStart", term: 2, round: 1 }]);
  });

  it("a pre-candidate that wins its pre-vote re-draws its timeout when it becomes a candidate", () => {
    // every draw 0: timeouts are exactly 150 ms from the reset
    const b = core("b", [], EMPTY, 0);
    b.tick(150); // pre-vote; deadline 300
    cycle(b);
    b.tick(200);
    b.step("a", { type: "preVoteReply", term: 1, granted: true, round: 1 }); // campaign at 200: deadline 350
    const started = cycle(b);
    expect(started.trace).toEqual([{ type: "electionStart", term: 1 }]);
    b.tick(300);
    expect(cycle(b).trace).toEqual([]);
    expect(b.state).toBe("candidate");
    b.tick(350);
    expect(cycle(b).trace).toEqual([{ type: "electionTimeout", term: 1 }, { type: "preVoteStart", term: 2, round: 2 }]);
  });
});

describe("leader lease (R-E2, R-E4)", () => {
  const preVote = (term: number, round: number): Message => ({ type: "preVote", term, lastLogIndex: 1, lastLogTerm: 1, round });

  it("lasts strictly less than electionTimeoutMinMs after the last contact; a pre-vote refused inside it is traced 'leader lease'", () => {
    const b = followerOfA([0.5], 0.5); // deadline 225 after the heartbeat at 0: no timeout below
    b.tick(149);
    b.step("c", preVote(2, 1));
    const inside = cycle(b);
    expect(inside.trace).toEqual([{ type: "voteDenied", to: "c", term: 2, preVote: true, reason: "leader lease" }]);
    expect(sent(inside)).toEqual([{ to: "c", message: { type: "preVoteReply", term: 1, granted: false, round: 1 } }]);
    b.tick(150);
    b.step("c", preVote(2, 2));
    const after = cycle(b);
    expect(after.trace).toEqual([]);
    expect(sent(after)).toEqual([{ to: "c", message: { type: "preVoteReply", term: 2, granted: true, round: 2 } }]);
    expect(b.term).toBe(1);
  });

  it("holds only while the voter follows a leader: once a transfer vote moved it to a later term, a pre-vote is granted at once", () => {
    const b = followerOfA([0.5], 0.5);
    b.tick(10);
    // c campaigns on a's TimeoutNow: the transfer flag passes the lease; b adopts term 2 and knows no leader
    b.step("c", { type: "vote", term: 2, lastLogIndex: 1, lastLogTerm: 1, transfer: true });
    expect(sent(cycle(b))).toEqual([{ to: "c", message: { type: "voteReply", term: 2, granted: true } }]);
    expect([b.term, b.leader]).toEqual([2, null]);
    b.step("a", preVote(3, 1));
    const rd = cycle(b);
    expect(rd.trace).toEqual([]);
    expect(sent(rd)).toEqual([{ to: "a", message: { type: "preVoteReply", term: 3, granted: true, round: 1 } }]);
  });
});

describe("votes (R-E3)", () => {
  it("a voter grants a repeated RequestVote from the candidate it voted for", () => {
    const b = core("b", [], { term: 1, votedFor: "a", snapshot: null, entries: [] });
    b.step("a", { type: "vote", term: 1, lastLogIndex: 0, lastLogTerm: 0 });
    const rd = cycle(b);
    expect(rd.trace).toEqual([]);
    expect(sent(rd)).toEqual([{ to: "a", message: { type: "voteReply", term: 1, granted: true } }]);
    expect(b.votedFor).toBe("a");
  });

  it("an election the timer started asks for votes without the transfer flag", () => {
    const b = core("b", [], EMPTY, 0);
    b.tick(150);
    cycle(b);
    b.step("a", { type: "preVoteReply", term: 1, granted: true, round: 1 });
    expect(sent(cycle(b))).toEqual([
      { to: "a", message: { type: "vote", term: 1, lastLogIndex: 0, lastLogTerm: 0 } },
      { to: "c", message: { type: "vote", term: 1, lastLogIndex: 0, lastLogTerm: 0 } },
    ]);
  });

  it("a candidate denied by a majority steps down as having lost the election", () => {
    const b = core("b", [], EMPTY, 0);
    b.tick(150);
    cycle(b);
    b.step("a", { type: "preVoteReply", term: 1, granted: true, round: 1 });
    cycle(b);
    expect(b.state).toBe("candidate");
    b.step("a", { type: "voteReply", term: 1, granted: false });
    expect(b.state).toBe("candidate"); // one denial is no majority
    b.step("c", { type: "voteReply", term: 1, granted: false });
    expect(b.state).toBe("follower");
    expect(cycle(b).trace).toEqual([{ type: "stepDown", term: 1, reason: "lost-election" }]);
  });

  it("a pre-candidate denied by a majority gives up the pre-vote", () => {
    const b = core("b", [], EMPTY, 0);
    b.tick(150);
    cycle(b);
    b.step("a", { type: "preVoteReply", term: 0, granted: false, round: 1 });
    expect(b.state).toBe("precandidate");
    b.step("c", { type: "preVoteReply", term: 0, granted: false, round: 1 });
    expect([b.state, b.term]).toEqual(["follower", 0]);
  });
});

describe("a node starting an election knows no leader (R-F1, R-F4)", () => {
  it("on its pre-vote a follower fails its forward to the old leader and holds new proposals", () => {
    const b = followerOfA([0], 0); // deadline 150
    b.propose(7, new Uint8Array([7]), null);
    expect(sent(cycle(b))).toEqual([{ to: "a", message: { type: "forward", corrId: 7, key: null, command: new Uint8Array([7]) } }]);
    b.tick(150);
    expect(b.state).toBe("precandidate");
    expect(b.leader).toBeNull();
    b.propose(8, new Uint8Array([8]), null);
    const rd = cycle(b);
    expect(rd.outcomes).toEqual([{ id: 7, ok: false, refusal: "leadership-lost" }]);
    expect(sent(rd).filter((m) => m.message.type === "forward")).toEqual([]); // 8 waits for a leader
  });

  it("a transfer target campaigning on TimeoutNow follows nobody: a proposal waits and is appended once it wins", () => {
    const b = followerOfA([0.5], 0.5);
    b.step("a", { type: "timeoutNow", term: 1 });
    expect([b.state, b.term, b.leader]).toEqual(["candidate", 2, null]);
    b.propose(9, new Uint8Array([9]), null);
    const rd = cycle(b);
    expect(sent(rd).map((m) => m.message)).toEqual([
      { type: "vote", term: 2, lastLogIndex: 1, lastLogTerm: 1, transfer: true },
      { type: "vote", term: 2, lastLogIndex: 1, lastLogTerm: 1, transfer: true },
    ]);
    b.step("c", { type: "voteReply", term: 2, granted: true });
    expect(b.state).toBe("leader");
    // the no-op at 2, then the held proposal at 3
    expect(b.entries.map((x) => [x.index, x.term, x.kind])).toEqual([[1, 1, "app"], [2, 2, "noop"], [3, 2, "app"]]);
  });
});

describe("a joiner knows no voters (R-M4)", () => {
  it("accepts a leader frame at its own term 0: nobody counts as a removed leader", () => {
    const d = core("d", [], EMPTY, 0, { voters: [], learners: [] });
    d.step("a", heartbeat(0, 0, 0));
    const rd = cycle(d);
    expect(rd.trace).toEqual([]);
    expect(sent(rd)).toEqual([
      { to: "a", message: { type: "appendReply", term: 0, success: true, matchIndex: 0, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 0 } },
    ]);
    expect(d.leader).toBe("a");
    expect(d.refusedFrames.size).toBe(0);
  });
});
