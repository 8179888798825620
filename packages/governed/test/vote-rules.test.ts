/**
 * Model-based property test of a voter's election decisions (governed.md R-E2, R-E3, R-E4, R-T1): random voter
 * states (term, vote, log, how long ago it heard its leader, whether its own adopted configuration lists it as a
 * voter, a learner or not at all) meet random PreVote and RequestVote frames — with and
 * without the leadership-transfer flag — and the real core's answer, its term, its vote, its durable writes and
 * its election timer are compared with a small reference model of the rules. The core draws randomness only to
 * re-arm its election timer (R-E1: re-drawn on every reset), so "the timer was not touched" is "no draw was
 * taken".
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { LogEntry, Message } from "../src/index.ts";

const CFG = raftConfig();
const VOTERS = ["a", "c", "v"];

interface Case {
  readonly voterTerms: number[];
  readonly extraTerm: number;
  readonly votedFor: "a" | "c" | null;
  /** Milliseconds since the voter last heard its leader `a`; null when it never did in this life. */
  readonly sinceContact: number | null;
  readonly pre: boolean;
  readonly termDelta: number;
  readonly candLastTerm: number;
  readonly candLastIndex: number;
  readonly transfer: boolean;
  /** Where the voter's own adopted configuration puts it; the answer must not depend on it (seed 746). */
  readonly own: "voter" | "learner" | "outside";
}

const arbCase: fc.Arbitrary<Case> = fc.record({
  voterTerms: fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 6 }).map((ts) => ts.sort((x, y) => x - y)),
  extraTerm: fc.integer({ min: 0, max: 2 }),
  votedFor: fc.constantFrom("a" as const, "c" as const, null),
  sinceContact: fc.option(fc.integer({ min: 0, max: CFG.electionTimeoutMaxMs - 2 }), { nil: null }),
  pre: fc.boolean(),
  termDelta: fc.integer({ min: -1, max: 2 }),
  candLastTerm: fc.integer({ min: 0, max: 6 }),
  candLastIndex: fc.integer({ min: 0, max: 8 }),
  transfer: fc.boolean(),
  own: fc.constantFrom("voter" as const, "learner" as const, "outside" as const),
});

function entry(index: number, term: number): LogEntry {
  return { index, term, kind: "noop", key: null, command: new Uint8Array(), stampedAt: 0 };
}

/**
 * What the rules say the voter answers and becomes. Its own configuration plays no part: the candidate asks
 * the voters of its configuration and counts only theirs, so a member that an uncommitted entry demoted or
 * removed still answers by term, vote, lease and log.
 */
function expected(c: Case, term: number, lastTerm: number, lastIndex: number, msgTerm: number, candLastTerm: number) {
  const inLease = c.sinceContact !== null && c.sinceContact < CFG.electionTimeoutMinMs;
  const upToDate = candLastTerm > lastTerm || (candLastTerm === lastTerm && c.candLastIndex >= lastIndex);
  if (c.pre) {
    // R-E2: grant iff a later term, outside the lease, log at least as up to date — and change nothing.
    const granted = msgTerm > term && !inLease && upToDate;
    return { granted, replyTerm: granted ? msgTerm : term, term, votedFor: c.votedFor, durable: false, timerReset: false };
  }
  let t = term;
  let voted: string | null = c.votedFor;
  let durable = false;
  let timerReset = false;
  if (msgTerm > term) {
    // R-E4: inside the lease a higher-term vote is denied without adopting its term — unless it carries the
    // transfer flag (R-T1).
    if (inLease && !c.transfer) return { granted: false, replyTerm: term, term, votedFor: c.votedFor, durable: false, timerReset: false };
    t = msgTerm;
    voted = null;
    durable = true;
    timerReset = true;
  }
  // R-E3: same term, no other vote, candidate's log at least as up to date.
  const granted = msgTerm === t && (voted === null || voted === "c") && upToDate;
  if (granted) {
    voted = "c";
    durable = true;
    timerReset = true;
  }
  return { granted, replyTerm: t, term: t, votedFor: voted, durable, timerReset };
}

function check(c: Case): void {
  const log = c.voterTerms.map((t, i) => entry(i + 1, t));
  const lastTerm = log.length === 0 ? 0 : log[log.length - 1]!.term;
  const term = Math.max(1, lastTerm) + c.extraTerm;
  let draws = 0;
  // Every timeout is drawn at the top of the range, so the voter never times out before the frame arrives.
  const random = (): number => {
    draws++;
    return 0.999;
  };
  // A voter that last heard its leader `a` in this term `sinceContact` ms ago (or never, in this life).
  const own = c.own === "voter" ? { voters: VOTERS, learners: [] } : { voters: ["a", "c", "x"], learners: c.own === "learner" ? ["v"] : [] };
  const v = new RaftCore({ id: "v", bootstrap: own, persisted: { term, votedFor: c.votedFor, snapshot: null, entries: log }, config: CFG, random, now: 0 });
  let now = 0;
  if (c.sinceContact !== null) {
    v.step("a", { type: "append", term, prevLogIndex: log.length, prevLogTerm: lastTerm, leaderCommit: 0, round: 0, entries: [] });
    v.advance(v.ready());
    now = c.sinceContact;
  }
  v.tick(now); // stays below the election timeout: the voter is a follower throughout
  expect(v.state).toBe("follower");
  const msgTerm = Math.max(0, term + c.termDelta);
  const candLastTerm = Math.min(c.candLastTerm, msgTerm);
  const before = draws;
  const m: Message = c.pre
    ? { type: "preVote", term: msgTerm, lastLogIndex: c.candLastIndex, lastLogTerm: candLastTerm, round: 1 }
    : c.transfer
      ? { type: "vote", term: msgTerm, lastLogIndex: c.candLastIndex, lastLogTerm: candLastTerm, transfer: true }
      : { type: "vote", term: msgTerm, lastLogIndex: c.candLastIndex, lastLogTerm: candLastTerm };
  v.step("c", m);
  const rd = v.ready();
  const want = expected(c, term, lastTerm, log.length, msgTerm, candLastTerm);
  const replies = rd.messages.filter((e) => e.to === "c").map((e) => e.message);
  expect(replies).toHaveLength(1);
  expect(replies[0]).toMatchObject({ type: c.pre ? "preVoteReply" : "voteReply", granted: want.granted, term: want.replyTerm });
  expect(v.term, "term").toBe(want.term);
  expect(v.votedFor, "vote").toBe(want.votedFor);
  expect(rd.hardState !== null, "durable term/vote write").toBe(want.durable);
  if (want.durable) expect(rd.hardState).toEqual({ term: want.term, votedFor: want.votedFor });
  expect(draws > before, "election timer re-armed").toBe(want.timerReset);
  v.advance(rd);
}

describe("vote and pre-vote decisions against a reference model (R-E2, R-E3, R-E4, R-T1)", () => {
  it("answer, term, vote, durable write and timer all follow the rules", () => {
    fc.assert(fc.property(arbCase, check), { numRuns: Number(process.env.HEDDLE_RUNS ?? 500), seed: Number(process.env.HEDDLE_SEED ?? 1904) });
  });

  it("the generated cases reach every decision (the property is not vacuous)", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(arbCase, (c) => {
        const log = c.voterTerms;
        const lastTerm = log.length === 0 ? 0 : log[log.length - 1]!;
        const term = Math.max(1, lastTerm) + c.extraTerm;
        const msgTerm = Math.max(0, term + c.termDelta);
        const w = expected(c, term, lastTerm, log.length, msgTerm, Math.min(c.candLastTerm, msgTerm));
        seen.add(`${c.pre ? "pre" : "vote"}:${w.granted}:${w.term !== term}`);
        if (w.granted) seen.add(`${c.pre ? "pre" : "vote"}-granted-by-${c.own}`);
        const upToDate = Math.min(c.candLastTerm, msgTerm) > lastTerm || (Math.min(c.candLastTerm, msgTerm) === lastTerm && c.candLastIndex >= log.length);
        if (!upToDate && msgTerm > term && c.sinceContact === null) seen.add(c.pre ? "pre-denied-behind" : "vote-denied-behind");
      }),
      { numRuns: Number(process.env.HEDDLE_RUNS ?? 500), seed: Number(process.env.HEDDLE_SEED ?? 1904) },
    );
    const byOwn = ["voter", "learner", "outside"].flatMap((o) => [`pre-granted-by-${o}`, `vote-granted-by-${o}`]);
    for (const k of ["pre:true:false", "pre:false:false", "vote:true:true", "vote:true:false", "vote:false:true", "vote:false:false", "pre-denied-behind", "vote-denied-behind", ...byOwn]) {
      expect(seen.has(k), k).toBe(true);
    }
  });
});
