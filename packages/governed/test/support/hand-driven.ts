/**
 * Hand-driven Raft cores for tests that script every message themselves: no network, no clock, no randomness.
 *
 * A core made by `handCore` has `random: () => 0`, so every election timeout is the minimum (150 ms), and starts at
 * time 0. `cycle` runs one ready/advance round (as a driver would after persisting and sending), `hand` delivers the
 * envelopes addressed to one core and cycles it, and `electVia` runs a whole pre-vote + vote exchange with one voter.
 */
import { expect } from "vitest";
import { raftConfig, RaftCore } from "../../src/index.ts";
import type { ClusterConfig, Envelope, LogEntry, Message, Ready } from "../../src/index.ts";

/** Three voters, no learner. */
export const ABC: ClusterConfig = { voters: ["a", "b", "c"], learners: [] };
export type HandConfig = Parameters<typeof raftConfig>[0];
/** The timing every hand-driven core gets unless a test overrides it. */
export const HAND_TIMING: HandConfig = { electionTimeoutMinMs: 150, electionTimeoutMaxMs: 300, heartbeatMs: 50 };

export interface HandCoreOptions {
  bootstrap?: ClusterConfig;
  cfg?: HandConfig;
  term?: number;
  entries?: LogEntry[];
}

export function handCore(id: string, o: HandCoreOptions = {}): RaftCore {
  return new RaftCore({
    id, bootstrap: o.bootstrap ?? ABC,
    persisted: { term: o.term ?? 0, votedFor: null, snapshot: null, entries: o.entries ?? [] },
    config: raftConfig({ ...HAND_TIMING, ...o.cfg }), random: () => 0, now: 0,
  });
}

/** An application entry whose command is its own index, so two entries at different indexes never compare equal. */
export function entry(index: number, term: number): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0 };
}

/** One ready/advance cycle. */
export function cycle(c: RaftCore): Ready {
  const rd = c.ready();
  c.advance(rd);
  return rd;
}

/** Every envelope a Ready sends, the early ones (sent before the write is durable) first. */
export function sent(rd: Ready): Envelope[] {
  return [...rd.earlyMessages, ...rd.messages];
}

/** The messages a Ready sends to one peer. */
export function sentTo(rd: Ready, id: string): Message[] {
  return sent(rd).filter((m) => m.to === id).map((m) => m.message);
}

/** Hands the envelopes of `msgs` addressed to `to` over to it (as sent by `from`) and returns its next Ready. */
export function hand(from: RaftCore, msgs: readonly Envelope[], to: RaftCore): Ready {
  for (const m of msgs) if (m.to === to.id) to.step(from.id, m.message);
  return cycle(to);
}

/**
 * `a`'s election timer fires at `now`; `voter` grants its pre-vote and its vote. Returns `a`'s Ready of the win (its
 * first AppendEntries, carrying the no-op). Fails the test if `a` did not win.
 */
export function electVia(a: RaftCore, voter: RaftCore, now = 150): Ready {
  a.tick(now);
  const preVotes = sent(cycle(a));
  const votes = sent(hand(voter, sent(hand(a, preVotes, voter)), a));
  const won = hand(voter, sent(hand(a, votes, voter)), a);
  expect(a.state).toBe("leader");
  return won;
}
