/** The named Raft regression tests of governed.md §5.3, as deterministic interaction scripts on the pure core. */
import { describe, expect, it } from "vitest";
import { seededRandom } from "@heddle/seam";
import { isLocalStep, raftConfig, RaftConfigError, RaftCore, RaftRestoreError } from "../src/index.ts";
import type { ClusterConfig, LogEntry, PersistedState, RaftTraceEvent } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, persistReady, Script } from "./support/script.ts";
import type { InFlight } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const enc = new TextEncoder();

function e(index: number, term: number, extra: Partial<LogEntry> = {}): LogEntry {
  return { index, term, kind: "app", key: null, command: enc.encode(`e${index}t${term}`), stampedAt: 0, ...extra };
}
function persisted(term: number, entries: LogEntry[], extra: Partial<PersistedState> = {}): PersistedState {
  return { term, votedFor: null, snapshot: null, entries, ...extra };
}
function lone(id: string, voters: readonly string[], p: PersistedState = persisted(0, []), cfg = {}): RaftCore {
  return new RaftCore({ id, bootstrap: { voters, learners: [] }, persisted: p, config: raftConfig(cfg), random: seededRandom(7), now: 0 });
}
function append(term: number, prev: number, prevTerm: number, entries: LogEntry[], leaderCommit: number, round = 0) {
  return { type: "append" as const, term, prevLogIndex: prev, prevLogTerm: prevTerm, leaderCommit, round, entries };
}
const noAppends = (m: InFlight): boolean => m.message.type !== "append";
const traceOf = (s: Script, id: string): RaftTraceEvent[] => s.traces.get(id)!;
const put = (k: string, v: string): Uint8Array => kvCommand({ op: "put", key: k, value: v });

describe("§5.3 commitment", () => {
  it("commit restriction: an old-term entry on a majority is not committed by counting, only after a current-term entry", () => {
    const s = new Script(ABC, { maxEntriesPerMessage: 1 });
    s.start("a", s.bootstrap, persisted(2, [e(1, 1), e(2, 2)]));
    s.start("b", s.bootstrap, persisted(2, [e(1, 1)]));
    s.start("c", s.bootstrap, persisted(2, [e(1, 1)]));
    s.elect("a", noAppends);
    const a = s.core("a");
    expect(a.term).toBe(3);
    expect(a.lastIndex).toBe(3); // its no-op
    const toB = (m: InFlight): boolean => (m.from === "a" && m.to === "b") || (m.from === "b" && m.to === "a");
    // heartbeat re-sends the probe; walk b back to index 2 one entry at a time
    s.now += 50;
    a.tick(s.now);
    for (let i = 0; i < 3 && a.progress.get("b")!.match < 2; i++) {
      s.flush("a");
      s.deliver(toB);
      s.flush("b");
      s.deliver(toB);
    }
    expect(a.progress.get("b")!.match).toBe(2);
    expect(s.core("b").termAt(2)).toBe(2);
    s.flush("a");
    // index 2 (term 2) sits on a and b, a majority, yet it must not commit
    expect(a.commitIndex).toBe(0);
    s.deliver(toB);
    s.flush("b");
    s.deliver(toB);
    s.flush("a");
    expect(a.progress.get("b")!.match).toBe(3);
    expect(a.commitIndex).toBe(3);
    expect(s.kvs.get("a")!.applied).toBe(3);
  });

  it("the leader counts itself toward commitment only once its own append is durable (R-R4)", () => {
    const s = new Script(ABC);
    s.elect("a");
    const a = s.core("a");
    const id = s.propose("a", put("k", "v"), { client: "w", seq: 1 });
    const index = a.lastIndex;
    // The leader's AppendEntries leave before its own write (early messages); its copy is not durable yet.
    const rd = a.ready();
    expect(rd.storage).toEqual([{ op: "append", entries: [a.entryAt(index)] }]);
    const toB = rd.earlyMessages.find((env) => env.to === "b" && env.message.type === "append")!;
    s.core("b").step("a", toB.message);
    s.flush("b");
    s.deliver((m) => m.from === "b" && m.to === "a");
    expect(a.progress.get("b")!.match).toBe(index);
    // b's durable copy plus a's undurable one would be "two of three": not a majority of durable copies
    expect(a.commitIndex).toBeLessThan(index);
    persistReady(s.disks.get("a")!, rd);
    a.advance(rd);
    expect(a.commitIndex).toBe(index);
    s.flush("a");
    expect(s.outcomes.get(id)).toMatchObject({ ok: true, index });
  });

  it("identical re-delivered AppendEntries never truncates", () => {
    const f = lone("f", ["a", "f", "c"]);
    f.step("a", append(1, 0, 0, [e(1, 1), e(2, 1), e(3, 1)], 0));
    const first = f.ready();
    f.advance(first);
    f.step("a", append(1, 0, 0, [e(1, 1), e(2, 1)], 0));
    f.step("a", append(1, 1, 1, [e(2, 1), e(3, 1)], 0));
    const rd = f.ready();
    expect(rd.storage).toEqual([]);
    expect(f.lastIndex).toBe(3);
    f.advance(rd);
  });

  it("follower commit never exceeds the prefix the frame verified, and never regresses", () => {
    const f = lone("f", ["a", "b", "f"], persisted(1, [e(1, 1), e(2, 1), e(3, 1)]));
    f.step("a", append(2, 1, 1, [], 5));
    expect(f.commitIndex).toBe(1); // entries 2..3 are unverified (they may be stale)
    f.step("a", append(2, 1, 1, [e(2, 2)], 2));
    expect(f.lastIndex).toBe(2);
    expect(f.termAt(2)).toBe(2);
    expect(f.commitIndex).toBe(2);
    f.step("a", append(2, 0, 0, [], 1));
    expect(f.commitIndex).toBe(2);
  });

  it("an oversized batch splits by the frame budget and a catching-up follower converges", () => {
    const s = new Script(ABC, { maxMessageBytes: 400 });
    s.elect("a");
    const cut = isolate(["c"]);
    for (let i = 0; i < 30; i++) s.propose("a", enc.encode("x".repeat(100)));
    s.advance(200, cut);
    expect(s.core("a").commitIndex).toBe(31);
    expect(s.core("c").lastIndex).toBeLessThan(31);
    s.advance(1000);
    expect(s.core("c").lastIndex).toBe(31);
    expect(s.kvs.get("c")!.applied).toBe(31);
    expect(Math.max(...s.frameSizes)).toBeLessThanOrEqual(400);
  });

  it("an oversized propose is refused before anything is appended or sent", () => {
    const s = new Script(ABC, { maxMessageBytes: 400 });
    s.elect("a");
    const before = s.core("a").lastIndex;
    const id = s.propose("a", enc.encode("y".repeat(500)));
    const rd = s.flush("a");
    expect(s.outcomes.get(id)).toEqual({ id, ok: false, refusal: "payload-too-large" });
    expect(rd.storage).toEqual([]);
    expect(s.core("a").lastIndex).toBe(before);
    const id2 = s.propose("b", enc.encode("y".repeat(500)));
    const rd2 = s.flush("b");
    expect(s.outcomes.get(id2)).toMatchObject({ ok: false, refusal: "payload-too-large" });
    expect([...rd2.messages, ...rd2.earlyMessages].filter((m) => m.message.type === "forward")).toEqual([]);
  });

  it("fast backup strictly decreases nextIndex on every rejection", () => {
    const s = new Script(ABC, { maxEntriesPerMessage: 2 });
    const leaderLog = [e(1, 1), e(2, 1), e(3, 1), e(4, 4), e(5, 4), e(6, 5), e(7, 5), e(8, 5), e(9, 5), e(10, 5), e(11, 5)];
    const stale = [e(1, 1), e(2, 1), e(3, 1), e(4, 2), e(5, 2), e(6, 2), e(7, 3), e(8, 3), e(9, 3), e(10, 3), e(11, 3), e(12, 3), e(13, 3)];
    s.start("a", s.bootstrap, persisted(5, leaderLog));
    s.start("b", s.bootstrap, persisted(3, stale));
    s.start("c", s.bootstrap, persisted(5, leaderLog.slice(0, 3)));
    s.elect("a", noAppends);
    const a = s.core("a");
    const toB = (m: InFlight): boolean => (m.from === "a" && m.to === "b") || (m.from === "b" && m.to === "a");
    const nexts: number[] = [a.progress.get("b")!.next];
    s.now += 50;
    a.tick(s.now);
    let rejections = 0;
    for (let i = 0; i < 40 && a.progress.get("b")!.match < a.lastIndex; i++) {
      s.flush("a");
      s.inflight = s.inflight.filter(toB);
      s.deliver((m) => m.to === "b");
      s.flush("b");
      const replies = s.inflight.filter((m) => m.to === "a" && m.message.type === "appendReply");
      for (const r of replies) if (r.message.type === "appendReply" && !r.message.success) rejections++;
      const pre = a.progress.get("b")!.next;
      s.deliver((m) => m.to === "a");
      const post = a.progress.get("b")!;
      if (replies.some((r) => r.message.type === "appendReply" && !r.message.success)) {
        expect(post.next).toBeLessThan(pre);
        nexts.push(post.next);
      }
    }
    expect(rejections).toBeGreaterThan(0);
    for (let i = 1; i < nexts.length; i++) expect(nexts[i]!).toBeLessThan(nexts[i - 1]!);
    expect(rejections).toBeLessThanOrEqual(3); // term hints skip whole terms, not one index at a time
    s.stabilize();
    expect(s.core("b").entries.map((x) => x.term)).toEqual(a.entries.map((x) => x.term));
  });
});

describe("§5.3 reads", () => {
  it("read echo: a stale-term rejection (round 0) and a forged future round do not confirm a read", () => {
    const s = new Script(ABC);
    s.elect("a");
    const a = s.core("a");
    const id = s.nextId++;
    a.readIndex(id);
    s.flush("a");
    const heartbeats = s.inflight.filter((m) => m.message.type === "append");
    expect(heartbeats.length).toBe(2);
    s.inflight = [];
    const round = (heartbeats[0]!.message as { round: number }).round;
    const reply = { type: "appendReply" as const, term: a.term, success: false, matchIndex: 0, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0 };
    a.step("b", { ...reply, round: 0 });
    a.step("c", { ...reply, success: true, matchIndex: a.lastIndex, round: round + 5 });
    a.step("b", { ...reply, success: true, matchIndex: a.lastIndex, round: round - 1 });
    s.flush("a");
    expect(s.outcomes.has(id)).toBe(false);
    expect(a.refusedFrames.get("future-round")).toBe(1);
    s.inflight = heartbeats;
    s.stabilize();
    expect(s.outcomes.get(id)).toMatchObject({ ok: true, index: a.commitIndex });
  });

  it("one confirmation round at a time: reads arriving during a round wait for the next, which starts after them (R-Q2)", () => {
    const s = new Script(ABC);
    s.elect("a");
    const a = s.core("a");
    const first = s.nextId++;
    a.readIndex(first);
    s.flush("a");
    const round1 = s.inflight.filter((m) => m.message.type === "append");
    expect(round1.length).toBe(2); // one heartbeat per follower
    s.inflight = [];
    // three more reads while round 1 is unanswered: no new heartbeats go out for them
    const later = [s.nextId++, s.nextId++, s.nextId++];
    for (const id of later) {
      a.readIndex(id);
      s.flush("a");
    }
    expect(s.inflight.filter((m) => m.message.type === "append")).toEqual([]);
    expect(a.hasReady()).toBe(false); // waiting reads alone do not make the driver spin
    // round 1 answered: the first read is confirmed; the later ones are not (round 1 started before they arrived)
    const r1 = (round1[0]!.message as { round: number }).round;
    const ok = { type: "appendReply" as const, term: a.term, success: true, matchIndex: a.lastIndex, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0 };
    a.step("b", { ...ok, rejectedPrev: a.lastIndex, round: r1 });
    s.flush("a");
    expect(s.outcomes.get(first)).toMatchObject({ ok: true });
    for (const id of later) expect(s.outcomes.has(id)).toBe(false);
    // ...and one round, started now, carries all three
    const round2 = s.inflight.filter((m) => m.message.type === "append" && m.from === "a");
    expect(round2.length).toBe(2);
    for (const m of round2) expect((m.message as { round: number }).round).toBe(r1 + 1);
    s.inflight = [];
    a.step("c", { ...ok, rejectedPrev: a.lastIndex, round: r1 + 1 });
    s.flush("a");
    for (const id of later) expect(s.outcomes.get(id)).toMatchObject({ ok: true, index: a.commitIndex });
  });

  it("a fresh leader's read waits for its no-op to commit", () => {
    const s = new Script(ABC);
    s.elect("a", noAppends);
    const a = s.core("a");
    const noop = a.lastIndex;
    expect(a.commitIndex).toBeLessThan(noop);
    const id = s.nextId++;
    a.readIndex(id);
    s.flush("a");
    s.inflight = [];
    expect(s.outcomes.has(id)).toBe(false);
    s.advance(60, undefined, 10, ["a"]); // only the leader's clock moves: its heartbeat re-sends the probe
    expect(s.outcomes.get(id)).toMatchObject({ ok: true });
    expect((s.outcomes.get(id) as { index: number }).index).toBeGreaterThanOrEqual(noop);
  });

  it("pending reads — including those waiting for the no-op — fail on step-down", () => {
    const s = new Script(ABC);
    s.elect("a", noAppends);
    const a = s.core("a");
    const waiting = s.nextId++;
    a.readIndex(waiting);
    s.flush("a");
    s.inflight = [];
    a.step("b", append(a.term + 1, 0, 0, [], 0));
    s.flush("a");
    expect(a.state).toBe("follower");
    expect(s.outcomes.get(waiting)).toMatchObject({ ok: false, refusal: "leadership-lost" });

    const s2 = new Script(ABC);
    s2.elect("a");
    const a2 = s2.core("a");
    const pending = s2.nextId++;
    a2.readIndex(pending);
    s2.flush("a");
    s2.inflight = [];
    a2.step("c", append(a2.term + 1, 0, 0, [], 0));
    s2.flush("a");
    expect(s2.outcomes.get(pending)).toMatchObject({ ok: false, refusal: "leadership-lost" });
  });

  it("the applied prefix (folding internal entries) reaches readIndex right after an election and after a config change", () => {
    const s = new Script(ABC, {}, ["d"]);
    s.elect("a");
    const a = s.core("a");
    const r1 = s.nextId++;
    a.readIndex(r1);
    s.stabilize();
    const o1 = s.outcomes.get(r1) as { ok: true; index: number };
    expect(o1.ok).toBe(true);
    expect(o1.index).toBe(1); // the no-op: an internal entry
    expect(s.kvs.get("a")!.applied).toBeGreaterThanOrEqual(o1.index);
    const cfgId = s.nextId++;
    a.changeMembership(cfgId, { voters: ABC, learners: ["d"] });
    s.stabilize();
    const oc = s.outcomes.get(cfgId) as { ok: true; index: number };
    expect(oc.ok).toBe(true);
    const r2 = s.nextId++;
    a.readIndex(r2);
    s.stabilize();
    const o2 = s.outcomes.get(r2) as { ok: true; index: number };
    expect(o2.index).toBeGreaterThanOrEqual(oc.index);
    expect(s.kvs.get("a")!.applied).toBeGreaterThanOrEqual(o2.index);
    expect(s.kvs.get("d")!.applied).toBe(o2.index);
  });

  it("readIndex off the leader is refused; a single voter answers at once", () => {
    const s = new Script(ABC);
    s.elect("a");
    const id = s.nextId++;
    s.core("b").readIndex(id);
    s.flush("b");
    expect(s.outcomes.get(id)).toMatchObject({ ok: false, refusal: "not-leader" });
    const one = new Script(["z"]);
    one.elect("z");
    const rid = one.nextId++;
    one.core("z").readIndex(rid);
    one.flush("z");
    expect(one.outcomes.get(rid)).toMatchObject({ ok: true, index: 1 });
  });

  it("reads in flight when the cluster shrinks to one voter are answered by that voter at once (R-Q3)", () => {
    const s = new Script(["a", "b"]);
    s.elect("a");
    const a = s.core("a");
    const r1 = s.nextId++;
    a.readIndex(r1);
    s.flush("a"); // round 1 in flight: its heartbeat to b is lost below
    s.inflight = [];
    const r2 = s.nextId++;
    a.readIndex(r2); // queued behind round 1
    s.flush("a");
    const shrink = s.nextId++;
    a.changeMembership(shrink, { voters: ["a"], learners: [] });
    s.flush("a");
    // b never answers again: only the new configuration's lone voter can confirm the reads
    s.advance(5_000, isolate(["a"]), 10, ["a"]);
    expect(s.outcomes.get(shrink)).toMatchObject({ ok: true });
    expect(s.outcomes.get(r1)).toMatchObject({ ok: true });
    expect(s.outcomes.get(r2)).toMatchObject({ ok: true });
    expect(a.state).toBe("leader");
  });
});

describe("§5.3 forwarding", () => {
  it("a forward reply from the wrong peer is ignored", () => {
    const s = new Script(ABC);
    s.elect("a");
    const id = s.propose("b", put("k", "v"), { client: "cb", seq: 1 });
    s.flush("b");
    s.core("b").step("c", { type: "forwardReply", corrId: id, outcome: "committed", index: 9, term: 1 });
    s.flush("b");
    expect(s.outcomes.has(id)).toBe(false);
    expect(s.core("b").refusedFrames.get("forward-reply-wrong-peer")).toBe(1);
    s.stabilize();
    const o = s.outcomes.get(id) as { ok: true; index: number };
    expect(o.ok).toBe(true);
    const entry = s.core("a").entryAt(o.index)!;
    expect(entry.key).toEqual({ client: "cb", seq: 1 }); // forwarded under the proposer's key, unchanged
  });

  it("without a leader a proposal waits and is sent once one appears; abort before send sends nothing", () => {
    const s = new Script(ABC);
    const waiting = s.propose("b", put("k", "1"), { client: "cb", seq: 1 });
    const aborted = s.propose("b", put("k", "2"), { client: "cb", seq: 2 });
    expect(s.core("b").abort(aborted)).toBe(true);
    const rd = s.flush("b");
    expect(rd.messages.length + rd.earlyMessages.length).toBe(0);
    s.elect("a");
    s.stabilize();
    expect(s.outcomes.get(waiting)).toMatchObject({ ok: true });
    const keys = s.core("a").entries.filter((x) => x.kind === "app").map((x) => x.key?.seq);
    expect(keys).toEqual([1]);
  });
});

describe("§5.3 elections and leadership", () => {
  it("pre-vote: an isolated node rejoining does not depose a healthy leader and never bumps its term", () => {
    const s = new Script(ABC);
    s.elect("a");
    const term = s.core("a").term;
    s.advance(3000, isolate(["c"]));
    expect(s.core("c").term).toBe(term);
    expect(traceOf(s, "c").some((t) => t.type === "preVoteStart")).toBe(true);
    s.advance(1000);
    expect(s.core("a").state).toBe("leader");
    expect(s.core("a").term).toBe(term);
    expect(s.core("c").leader).toBe("a");
  });

  it("pre-vote: a granted pre-vote adopts no term and changes no vote or timer on the voter (R-E2)", () => {
    // Two identical voters that heard no leader in this life: `v` grants a pre-vote, its twin sees nothing.
    const p = persisted(3, [e(1, 1), e(2, 3)], { votedFor: "a" });
    const v = lone("v", ["a", "c", "v"], p);
    const twin = lone("v", ["a", "c", "v"], p);
    v.step("c", { type: "preVote", term: 4, lastLogIndex: 2, lastLogTerm: 3, round: 7 });
    const rd = v.ready();
    expect(rd.messages.map((m) => m.message)).toEqual([{ type: "preVoteReply", term: 4, granted: true, round: 7 }]);
    expect(rd.hardState).toBeNull();
    expect(v.term).toBe(3);
    expect(v.votedFor).toBe("a");
    v.advance(rd);
    // The timer was not re-armed: the voter times out at exactly the twin's moment.
    const firstPreVote = (core: RaftCore): number => {
      for (let now = 1; now < 1000; now++) {
        core.tick(now);
        const r = core.ready();
        core.advance(r);
        if (r.trace.some((t) => t.type === "preVoteStart")) return now;
      }
      return -1;
    };
    const at = firstPreVote(twin);
    expect(at).toBeGreaterThan(0);
    expect(firstPreVote(v)).toBe(at);
    expect(v.term).toBe(3);
  });

  it("pre-vote: voters that granted failed pre-votes do not unseat the healthy leader", () => {
    const FIVE = ["a", "b", "c", "d", "e"];
    const s = new Script(FIVE);
    s.elect("a");
    s.advance(1000); // every clock catches up with the leader's; the cluster settles on one leader
    const a = s.leader()!.id;
    const term = s.core(a).term;
    const [, , , d, e] = [a, ...FIVE.filter((x) => x !== a)] as [string, string, string, string, string];
    for (const id of FIVE) s.traces.set(id, []);
    // d and e stop hearing the leader (a→d and a↔e cut); the leader keeps its majority with the other two.
    let grants = 0;
    const cut = (m: InFlight): boolean => {
      if (m.from === a && (m.to === d || m.to === e)) return false;
      if (m.from === e && m.to === a) return false;
      if (m.message.type === "preVoteReply" && m.message.granted && (m.from === d || m.from === e)) grants++;
      return true;
    };
    s.advance(1500, cut);
    // d and e, both outside any lease, granted each other's pre-votes; each pre-vote still failed (2 of 5)
    expect(grants).toBeGreaterThan(0);
    expect(FIVE.some((id) => traceOf(s, id).some((t) => t.type === "electionStart"))).toBe(false);
    // heal: had a granting voter adopted the pre-vote's term, its first reply to the leader would depose it
    s.advance(1000);
    expect(traceOf(s, a).filter((t) => t.type === "stepDown")).toEqual([]);
    expect(s.core(a).state).toBe("leader");
    expect(s.core(d).leader).toBe(a);
    expect(s.core(e).leader).toBe(a);
    for (const id of FIVE) expect(s.core(id).term, id).toBe(term);
  });

  it("check-quorum: a minority leader steps down within two election timeouts", () => {
    const s = new Script(["a", "b", "c", "d", "e"]);
    s.elect("a");
    const start = s.now;
    let downAt = -1;
    for (let t = 0; t < 1000 && downAt < 0; t += 10) {
      s.advance(10, isolate(["a", "b"]), 10, ["a", "b"]);
      if (s.core("a").state !== "leader") downAt = s.now;
    }
    expect(downAt).toBeGreaterThan(0);
    expect(downAt - start).toBeLessThanOrEqual(2 * s.cfg.electionTimeoutMaxMs);
    expect(traceOf(s, "a").some((t) => t.type === "stepDown" && t.reason === "lost-quorum")).toBe(true);
  });

  it("same-term leader contact tears a leader down fully (pending proposals and reads fail)", () => {
    const s = new Script(ABC);
    s.elect("a");
    const a = s.core("a");
    const p = s.propose("a", put("k", "v"), { client: "x", seq: 1 });
    const r = s.nextId++;
    a.readIndex(r);
    s.flush("a");
    s.inflight = [];
    a.step("b", append(a.term, 0, 0, [], 0));
    s.flush("a");
    expect(a.state).toBe("follower");
    expect(a.leader).toBe("b");
    expect(a.progress.size).toBe(0);
    expect(s.outcomes.get(p)).toMatchObject({ ok: false, refusal: "leadership-lost" });
    expect(s.outcomes.get(r)).toMatchObject({ ok: false, refusal: "leadership-lost" });
    expect(traceOf(s, "a").some((t) => t.type === "stepDown" && t.reason === "leader-contact")).toBe(true);
  });

  it("stickiness: within the leader lease a higher-term RequestVote is denied without adopting its term", () => {
    const s = new Script(ABC);
    s.elect("a");
    const b = s.core("b");
    const term = b.term;
    b.step("c", { type: "vote", term: term + 1, lastLogIndex: 100, lastLogTerm: term });
    expect(b.term).toBe(term);
    s.flush("b");
    expect(s.inflight.find((m) => m.from === "b" && m.message.type === "voteReply")?.message).toMatchObject({ granted: false, term });
  });

  it("learners never campaign, are never asked for a vote, and a learner's grant never counts (R-M5)", () => {
    const s = new Script(["a"], {}, ["l"]);
    s.elect("a");
    const id = s.nextId++;
    s.core("a").changeMembership(id, { voters: ["a"], learners: ["l"] });
    s.stabilize();
    const l = s.core("l");
    expect(l.role).toBe("learner");
    s.advance(3000, (m) => m.from !== "a" && m.to !== "a", 10, ["l"]);
    expect(l.term).toBe(s.core("a").term);
    expect(traceOf(s, "l").some((t) => t.type === "preVoteStart")).toBe(false);

    // whether a vote counts is the candidate's call: it asks only its voters and tallies only their replies
    const t = new Script(ABC, {}, ["l"]);
    t.elect("a");
    const add = t.nextId++;
    t.core("a").changeMembership(add, { voters: ABC, learners: ["l"] });
    t.stabilize();
    expect(t.outcomes.get(add)).toMatchObject({ ok: true });
    const b = t.core("b");
    // a falls silent; b times out and asks for pre-votes, which are held back
    const asked: string[] = [];
    for (let i = 0; i < 100 && b.state !== "precandidate"; i++) {
      t.now += 10;
      b.tick(t.now);
      for (const env of t.flush("b").messages) if (env.message.type === "preVote") asked.push(env.to);
      t.inflight = [];
    }
    expect(b.state).toBe("precandidate");
    expect(asked.sort()).toEqual(["a", "c"]);
    const start = traceOf(t, "b").filter((e) => e.type === "preVoteStart").at(-1)!;
    const round = (start as { round: number }).round;
    b.step("l", { type: "preVoteReply", term: b.term + 1, granted: true, round }); // b and l would be two of three
    t.flush("b");
    expect(b.state).toBe("precandidate");
    expect(traceOf(t, "b").some((e) => e.type === "electionStart")).toBe(false);
  });
});

describe("§5.3 membership", () => {
  it("a config is adopted on append and rolled back on truncate", () => {
    const f = lone("f", ["a", "b", "f"]);
    const cfg: ClusterConfig = { voters: ["a", "b", "f"], learners: ["d"] };
    f.step("a", append(1, 0, 0, [e(1, 1, { kind: "noop", command: new Uint8Array() }), e(2, 1, { kind: "config", config: cfg, command: new Uint8Array() })], 1));
    expect(f.config.learners).toEqual(["d"]);
    expect(f.commitIndex).toBe(1);
    f.step("b", append(2, 1, 1, [e(2, 2)], 1));
    expect(f.config.learners).toEqual([]);
    expect(f.termAt(2)).toBe(2);
  });

  it("one uncommitted config at a time; only after the leader's no-op commits; single-server steps only", () => {
    const s = new Script(ABC, {}, ["d", "x"]);
    s.elect("a", noAppends);
    const a = s.core("a");
    const early = s.nextId++;
    a.changeMembership(early, { voters: ABC, learners: ["d"] });
    s.stabilize();
    expect(s.outcomes.get(early)).toMatchObject({ ok: false, refusal: "membership-in-progress" });
    s.advance(60, undefined, 10, ["a"]); // the heartbeat re-sends the probe; the no-op commits
    const first = s.nextId++;
    a.changeMembership(first, { voters: ABC, learners: ["d"] });
    s.flush("a");
    const second = s.nextId++;
    a.changeMembership(second, { voters: ABC, learners: ["d", "x"] });
    s.flush("a");
    expect(s.outcomes.get(second)).toMatchObject({ ok: false, refusal: "membership-in-progress" });
    s.stabilize();
    expect(s.outcomes.get(first)).toMatchObject({ ok: true });
    const twoVoters = s.nextId++;
    a.changeMembership(twoVoters, { voters: [...ABC, "d", "x"], learners: [] });
    s.flush("a");
    expect(s.outcomes.get(twoVoters)).toMatchObject({ ok: false, refusal: "invalid-membership" });
    const promote = s.nextId++;
    a.changeMembership(promote, { voters: [...ABC, "d"], learners: [] });
    s.stabilize();
    expect(s.outcomes.get(promote)).toMatchObject({ ok: true });
    expect(s.core("d").role).toBe("follower");
    expect(s.core("d").config.voters).toContain("d");
  });

  it("a leader outside the new voter set steps down once that config commits", () => {
    const s = new Script(ABC);
    s.elect("a");
    const id = s.nextId++;
    s.core("a").changeMembership(id, { voters: ["b", "c"], learners: [] });
    s.stabilize();
    expect(s.outcomes.get(id)).toMatchObject({ ok: true });
    expect(s.core("a").state).toBe("follower");
    expect(traceOf(s, "a").some((t) => t.type === "stepDown" && t.reason === "removed")).toBe(true);
    s.advance(2000);
    expect(["b", "c"]).toContain(s.leader()!.id);
    expect(s.core("a").state).toBe("follower");
  });
});

describe("§4.8 R-M4 (amended): leader frames from outside the adopted voter set", () => {
  const refusedAsNonVoter = (s: Script, id: string): boolean =>
    traceOf(s, id).some((t) => t.type === "frameRefused" && t.reason === "sender-not-voter");
  const cfgEntry = (index: number, term: number, config: ClusterConfig): LogEntry =>
    e(index, term, { kind: "config", config, command: new Uint8Array() });
  /**
   * Runs every clock (so the other members' leader leases lapse) until `winner` leads; only `winner`'s
   * campaign frames get through, so no one else can win first.
   */
  function electOnly(s: Script, winner: string, allow: (m: InFlight) => boolean): void {
    const campaign = (m: InFlight): boolean => m.message.type === "preVote" || m.message.type === "vote";
    for (let i = 0; i < 1000 && s.core(winner).state !== "leader"; i++) s.advance(10, (m) => allow(m) && (!campaign(m) || m.from === winner));
    expect(s.core(winner).state).toBe("leader");
  }

  it("R-M4 dropped (AppendEntries and TimeoutNow) only at the term of the entry carrying the configuration (the leader that removed itself); processed at a higher term; a joiner accepts any sender", () => {
    // f adopted {b, f} from a config entry a appended at term 1: a removed itself
    const f = lone("f", ["a", "b", "f"]);
    f.step("a", append(1, 0, 0, [e(1, 1, { kind: "noop", command: new Uint8Array() }), cfgEntry(2, 1, { voters: ["b", "f"], learners: [] })], 1));
    f.advance(f.ready());
    expect(f.config.voters).toEqual(["b", "f"]);
    f.step("a", append(1, 2, 1, [], 1)); // same term as the config entry: dropped
    const dropped = f.ready();
    expect(dropped.trace).toContainEqual({ type: "frameRefused", from: "a", reason: "sender-not-voter" });
    expect(dropped.messages).toEqual([]);
    f.advance(dropped);
    // a TimeoutNow from the leader that removed itself is dropped too: f does not campaign on its word
    f.step("a", { type: "timeoutNow", term: 1 });
    const noCampaign = f.ready();
    expect(noCampaign.trace).toContainEqual({ type: "frameRefused", from: "a", reason: "sender-not-voter" });
    expect(f.state).toBe("follower");
    expect(f.term).toBe(1);
    f.advance(noCampaign);
    f.step("a", append(2, 2, 1, [e(3, 2)], 3)); // a higher term: a was elected by a configuration f has not seen
    const heard = f.ready();
    expect(heard.trace.some((t) => t.type === "frameRefused")).toBe(false);
    expect(f.lastIndex).toBe(3);
    expect(f.leader).toBe("a");
    f.advance(heard);
    const joiner = lone("j", []);
    joiner.step("z", append(1, 0, 0, [e(1, 1)], 0));
    expect(joiner.lastIndex).toBe(1);
  });

  it("R-M4 regression: a lagging member whose adopted configuration excludes the new leader catches up", () => {
    const s = new Script(ABC, {}, ["d"]);
    s.elect("a");
    const add = s.nextId++;
    s.core("a").changeMembership(add, { voters: ABC, learners: ["d"] });
    s.stabilize();
    expect(s.outcomes.get(add)).toMatchObject({ ok: true });
    // c lags: it misses d's promotion, which a, b and d commit
    const withoutC = (m: InFlight): boolean => m.from !== "c" && m.to !== "c";
    s.advance(100, withoutC);
    const promote = s.nextId++;
    s.core("a").changeMembership(promote, { voters: [...ABC, "d"], learners: [] });
    s.stabilize(withoutC);
    expect(s.outcomes.get(promote)).toMatchObject({ ok: true });
    expect(s.core("c").config).toEqual({ voters: ABC, learners: ["d"] });
    // a restarts as a follower; d wins term 2 with a's and b's votes, c still cut off
    s.start("a");
    electOnly(s, "d", withoutC);
    const d = s.core("d");
    expect(d.term).toBeGreaterThan(s.core("c").term);
    const last = s.propose("d", put("k", "after"));
    s.stabilize(withoutC);
    expect(s.outcomes.get(last)).toMatchObject({ ok: true });
    // heal: d's frames reach c, whose adopted configuration does not list d as a voter
    expect(s.core("c").config.voters).not.toContain("d");
    s.advance(200);
    const c = s.core("c");
    expect(refusedAsNonVoter(s, "c")).toBe(false);
    expect(c.leader).toBe("d");
    expect(c.config.voters).toEqual([...ABC, "d"]);
    expect(c.lastIndex).toBe(d.lastIndex);
    expect(c.commitIndex).toBe(d.commitIndex);
    expect(s.kvs.get("c")!.stateText()).toBe(s.kvs.get("d")!.stateText());
  });

  it("R-M4 regression: a crashed leader's uncommitted self-removal is truncated by the next leader", () => {
    const s = new Script(ABC);
    s.elect("a");
    const a = s.core("a");
    const k = a.lastIndex + 1;
    const removal = s.nextId++;
    a.changeMembership(removal, { voters: ["b", "c"], learners: [] });
    expect(a.config.voters).toEqual(["b", "c"]); // adopted on append (R-M1)
    // a sends the entry to b while writing it, and crashes before the write completes: only b holds it
    const rd = a.ready();
    for (const env of [...rd.earlyMessages, ...rd.messages]) if (env.to === "b") s.core("b").step("a", env.message);
    expect(s.core("b").entryAt(k)?.kind).toBe("config");
    expect(s.core("b").config.voters).toEqual(["b", "c"]);
    s.start("a");
    expect(s.core("a").lastIndex).toBe(k - 1);
    // the next leader is a itself, elected at term 2 with c's vote while b is cut off
    electOnly(s, "a", isolate(["a", "c"]));
    const next = s.core("a");
    expect(next.term).toBe(2);
    const done = s.propose("a", put("k", "v"));
    s.stabilize(isolate(["a", "c"]));
    expect(s.outcomes.get(done)).toMatchObject({ ok: true });
    // heal: a's frames reach b, whose adopted configuration {b, c} excludes a — at term 2, above the
    // entry's term 1, they are processed and the uncommitted removal is truncated
    s.advance(200);
    const b = s.core("b");
    expect(refusedAsNonVoter(s, "b")).toBe(false);
    expect(b.entryAt(k)).toEqual(next.entryAt(k));
    expect(b.entryAt(k)!.term).toBe(2);
    expect(b.config.voters).toEqual(ABC);
    expect(b.lastIndex).toBe(next.lastIndex);
    expect(b.commitIndex).toBe(next.commitIndex);
    expect(s.outcomes.get(removal)).toBeUndefined(); // never committed, and its proposer's life ended
  });

  it("R-M4 regression (variant): when the crashed leader kept its self-removal on disk, the next leader truncates it there and it votes again", () => {
    const s = new Script(ABC);
    s.elect("a");
    const k = s.core("a").lastIndex + 1;
    s.core("a").changeMembership(s.nextId++, { voters: ["b", "c"], learners: [] });
    s.flush("a"); // durable on a; its appends are lost in the crash
    s.inflight = [];
    s.start("a");
    expect(s.core("a").config.voters).toEqual(["b", "c"]); // restarts outside its own adopted configuration
    electOnly(s, "b", (m) => m.from !== "a" && m.to !== "a");
    s.propose("b", put("k", "v"));
    s.stabilize((m) => m.from !== "a" && m.to !== "a");
    s.advance(200);
    const a = s.core("a");
    expect(a.entryAt(k)!.term).toBe(s.core("b").term);
    expect(a.config.voters).toEqual(ABC);
    expect(a.commitIndex).toBe(s.core("b").commitIndex);
  });
});

describe("votes never consult the voter's own configuration (simulation seed 746)", () => {
  /** Every clock runs until some member leads; only frames passing `allow` arrive. */
  function electAny(s: Script, allow: (m: InFlight) => boolean = () => true, ms = 5000): RaftCore | undefined {
    for (let t = 0; t < ms && s.leader() === undefined; t += 10) s.advance(10, allow);
    return s.leader();
  }

  it("two leaders in a row crash right after their own uncommitted removal/demotion: both still vote, and the next leader truncates both", () => {
    // seed 746's shape: b (leader) appends its own removal and crashes with it durable; d wins without b,
    // appends its own demotion to learner and crashes with it durable; both come back. Their adopted
    // configurations leave them out, but the committed one is still {a, b, c, d}: a or c must win with b's vote.
    const ABCD = ["a", "b", "c", "d"];
    const s = new Script(ABCD);
    s.elect("b");
    s.propose("b", put("k", "1"));
    s.stabilize();
    const k = s.core("b").lastIndex + 1;
    s.core("b").changeMembership(s.nextId++, { voters: ["a", "c", "d"], learners: [] });
    s.flush("b"); // durable on b; every frame carrying it is lost in the crash
    s.inflight = [];
    const withoutB = (m: InFlight): boolean => m.from !== "b" && m.to !== "b";
    s.start("b");
    expect(s.core("b").config.voters).toEqual(["a", "c", "d"]);
    for (let i = 0; i < 1000 && s.core("d").state !== "leader"; i++) {
      const campaign = (m: InFlight): boolean => m.message.type === "preVote" || m.message.type === "vote";
      s.advance(10, (m) => withoutB(m) && (!campaign(m) || m.from === "d"));
    }
    const d = s.core("d");
    expect(d.state).toBe("leader");
    const dTerm = d.term;
    const kept = s.propose("d", put("k", "2"));
    s.stabilize(withoutB);
    expect(s.outcomes.get(kept)).toMatchObject({ ok: true });
    const j = d.lastIndex + 1;
    d.changeMembership(s.nextId++, { voters: ["a", "b", "c"], learners: ["d"] });
    s.flush("d");
    s.inflight = [];
    s.start("d");
    expect(s.core("d").config).toEqual({ voters: ["a", "b", "c"], learners: ["d"] });
    expect(s.core("d").lastIndex).toBe(j);
    // everyone up and connected: b's log is behind a's and c's, d's is ahead; neither b nor d may campaign
    const leader = electAny(s);
    expect(leader?.id === "a" || leader?.id === "c", "a or c leads").toBe(true);
    expect(s.core("b").votedFor, "b, outside its own adopted config, cast the deciding vote").toBe(leader!.id);
    expect(s.core("d").votedFor, "d's log is ahead of the winner's: it refused").toBe(null);
    const done = s.propose(leader!.id, put("k", "3"));
    s.advance(500);
    expect(s.outcomes.get(done)).toMatchObject({ ok: true });
    for (const id of ABCD) {
      const n = s.core(id);
      expect(n.config, id).toEqual({ voters: ABCD, learners: [] }); // both uncommitted changes truncated
      expect(n.entryAt(k)!.term, id).toBe(dTerm);
      expect(n.termAt(j), id).toBe(leader!.term);
      expect(n.commitIndex, id).toBe(leader!.commitIndex);
      expect(s.kvs.get(id)!.stateText(), id).toBe(s.kvs.get(leader!.id)!.stateText());
    }
  });

  it("a learner whose promotion it has not received votes for the candidate that holds it (the old leader down)", () => {
    const s = new Script(ABC, {}, ["d"]);
    s.elect("a");
    const add = s.nextId++;
    s.core("a").changeMembership(add, { voters: ABC, learners: ["d"] });
    s.stabilize();
    expect(s.outcomes.get(add)).toMatchObject({ ok: true });
    // a appends d's promotion, only b receives it, and a goes down for good
    s.core("a").changeMembership(s.nextId++, { voters: [...ABC, "d"], learners: [] });
    s.flush("a");
    s.deliver((m) => m.to === "b");
    s.flush("b");
    s.inflight = [];
    const withoutA = (m: InFlight): boolean => m.from !== "a" && m.to !== "a";
    s.cores.delete("a");
    expect(s.core("b").config.voters).toEqual([...ABC, "d"]);
    expect(s.core("d").config).toEqual({ voters: ABC, learners: ["d"] });
    // b, c (a majority of the committed {a, b, c}) and d are up: only b can win, with c's and d's votes
    const leader = electAny(s, withoutA);
    expect(leader?.id).toBe("b");
    expect(s.core("d").votedFor, "d, a learner in its own adopted config, cast the deciding vote").toBe("b");
    const done = s.propose("b", put("k", "v"));
    s.advance(500, withoutA);
    expect(s.outcomes.get(done)).toMatchObject({ ok: true });
    expect(s.core("d").config.voters).toEqual([...ABC, "d"]);
    expect(s.core("d").commitIndex).toBe(s.core("b").commitIndex);
  });
});

describe("§5.3 frame hygiene, restore, configuration", () => {
  it("the term-jump bound drops a far-future frame", () => {
    const f = lone("f", ["a", "f", "c"], persisted(1, []));
    f.step("a", append(1 + 10_001, 0, 0, [], 0));
    expect(f.term).toBe(1);
    expect(f.refusedFrames.get("term-jump")).toBe(1);
    f.step("a", append(1 + 10_000, 0, 0, [], 0));
    expect(f.term).toBe(10_001);
  });

  it("frames with entry terms above the frame term or gaps are refused", () => {
    const f = lone("f", ["a", "f", "c"], persisted(1, []));
    f.step("a", append(1, 0, 0, [e(1, 2)], 0));
    f.step("a", append(1, 0, 0, [e(1, 1), e(3, 1)], 0));
    expect(f.lastIndex).toBe(0);
    expect(f.refusedFrames.get("entry-term-above-frame")).toBe(1);
    expect(f.refusedFrames.get("non-contiguous-entries")).toBe(1);
  });

  it("restore refuses a corrupt store", () => {
    const bad: PersistedState[] = [
      persisted(3, [e(1, 1), e(3, 1)]), // gap
      persisted(3, [e(1, 2), e(2, 1)]), // terms decrease
      persisted(1, [e(1, 1), e(2, 2)]), // entry term above the stored term
      persisted(2 ** 51, []), // above the ceiling
      persisted(3, [e(12, 3)], { snapshot: { lastIndex: 10, lastTerm: 3, config: null, state: new Uint8Array() } }), // gap after the floor
      persisted(2, [], { snapshot: { lastIndex: 10, lastTerm: 3, config: null, state: new Uint8Array() } }), // snapshot term above stored
    ];
    for (const p of bad) expect(() => lone("f", ["f"], p)).toThrow(RaftRestoreError);
    expect(() => lone("f", ["f"], persisted(3, [e(1, 1), e(2, 3)]))).not.toThrow();
  });

  it("timing configuration is validated at construction", () => {
    expect(() => raftConfig({ electionTimeoutMinMs: 300, electionTimeoutMaxMs: 300 })).toThrow(RaftConfigError);
    expect(() => raftConfig({ heartbeatMs: 150 })).toThrow(RaftConfigError);
    expect(() => raftConfig({ heartbeatMs: 0 })).toThrow(RaftConfigError);
    expect(() => raftConfig({ maxTermJump: 2 ** 20 + 1 })).toThrow(RaftConfigError);
    expect(() => raftConfig({ electionTimeoutMinMs: 1.5 })).toThrow(RaftConfigError);
    expect(raftConfig().electionTimeoutMinMs).toBe(150);
    expect(raftConfig({ heartbeatMs: 20 }).heartbeatMs).toBe(20);
  });
});

describe("§5.3 snapshots and compaction", () => {
  it("vote restriction with an empty post-compaction log uses the snapshot's position", () => {
    const snap = { lastIndex: 10, lastTerm: 3, config: { voters: ["a", "b", "f"], learners: [] }, state: new Uint8Array() };
    const f = lone("f", ["a", "b", "f"], persisted(3, [], { snapshot: snap }));
    expect(f.lastIndex).toBe(10);
    f.step("a", { type: "vote", term: 4, lastLogIndex: 5, lastLogTerm: 3 });
    let rd = f.ready();
    expect(rd.messages.find((m) => m.to === "a")?.message).toMatchObject({ type: "voteReply", granted: false });
    f.advance(rd);
    f.step("b", { type: "vote", term: 4, lastLogIndex: 10, lastLogTerm: 3 });
    rd = f.ready();
    expect(rd.messages.find((m) => m.to === "b")?.message).toMatchObject({ type: "voteReply", granted: true });
    expect(rd.hardState).toEqual({ term: 4, votedFor: "b" });
  });

  it("a stale install is acknowledged, ignored, and does not regress state", () => {
    const f = lone("f", ["a", "f", "c"]);
    const entries = Array.from({ length: 10 }, (_, i) => e(i + 1, 1));
    f.step("a", append(1, 0, 0, entries, 10));
    f.advance(f.ready());
    f.step("a", { type: "snapshot", term: 1, lastIndex: 5, lastTerm: 1, config: null, total: 3, offset: 0, data: new Uint8Array([1, 2, 3]) });
    const rd = f.ready();
    expect(rd.committed.some((c) => c.kind === "install")).toBe(false);
    expect(rd.storage).toEqual([]);
    expect(rd.messages[0]!.message).toMatchObject({ type: "snapshotReply", done: true, lastIndex: 5 });
    expect(f.floor).toBe(0);
    expect(f.commitIndex).toBe(10);
  });

  it("the node's own compaction is marked local; an install in the same ready supersedes it, so local steps never touch what the install writes", () => {
    const f = lone("f", ["a", "f", "c"]);
    f.step("a", append(1, 0, 0, Array.from({ length: 10 }, (_, i) => e(i + 1, 1)), 5));
    f.advance(f.ready()); // applies 1..5
    expect(f.compact(3, new Uint8Array([3]))).toBe(true);
    let rd = f.ready();
    expect(rd.storage.map((op) => [op.op, isLocalStep(op)])).toEqual([["snapshot", true], ["discardThrough", true]]);
    f.advance(rd);
    expect(f.compact(5, new Uint8Array([5]))).toBe(true);
    f.step("a", { type: "snapshot", term: 1, lastIndex: 12, lastTerm: 1, config: null, total: 3, offset: 0, data: new Uint8Array([1, 2, 3]) });
    rd = f.ready();
    expect(rd.storage.some(isLocalStep)).toBe(false);
    expect(rd.storage.map((op) => op.op)).toEqual(["snapshot", "truncateFrom", "discardThrough"]);
    expect(rd.storage[0]).toMatchObject({ op: "snapshot", snapshot: { lastIndex: 12 } });
    expect(rd.storage[1]).toEqual({ op: "truncateFrom", index: 6 });
    expect(rd.storage[2]).toEqual({ op: "discardThrough", index: 12 });
    expect(rd.messages.map((m) => m.message)).toContainEqual(expect.objectContaining({ type: "snapshotReply", done: true }));
    f.advance(rd);
    expect(f.floor).toBe(12);
  });

  it("a restart in the middle of compaction restores the same state at every crash point", () => {
    for (let limit = 0; limit <= 2; limit++) {
      const s = new Script(["a"]);
      s.elect("a");
      for (let i = 0; i < 14; i++) s.propose("a", put(`k${i % 4}`, `v${i}`), { client: "c", seq: i + 1 });
      s.stabilize();
      const kv = s.kvs.get("a")!;
      expect(kv.applied).toBe(15);
      const snap15 = kv.snapshot();
      for (let i = 14; i < 20; i++) s.propose("a", put(`k${i % 4}`, `v${i}`), { client: "c", seq: i + 1 });
      s.stabilize();
      const before = kv.stateText();
      const a = s.core("a");
      expect(a.compact(15, snap15)).toBe(true);
      const rd = a.ready();
      expect(rd.storage.map((o) => o.op)).toEqual(["snapshot", "discardThrough"]);
      persistReady(s.disks.get("a")!, rd, limit); // crash after `limit` durable steps
      const restarted = s.start("a");
      expect(restarted.floor).toBe(limit >= 1 ? 15 : 0);
      expect(restarted.lastIndex).toBe(21);
      s.elect("a");
      s.stabilize();
      const after = s.kvs.get("a")!;
      expect(after.applied).toBe(22); // the replayed prefix plus the new leader's no-op
      expect(JSON.parse(after.stateText())).toEqual(JSON.parse(before));
    }
  });

  it("InstallSnapshot in bounded chunks brings a partitioned follower back, with chunks lost on the way", () => {
    const s = new Script(ABC, { snapshotChunkBytes: 64, maxMessageBytes: 400 });
    s.elect("a");
    const cut = isolate(["c"]);
    for (let i = 0; i < 40; i++) s.propose("a", put(`k${i % 5}`, `value-${i}`), { client: "w", seq: i + 1 });
    s.advance(300, cut);
    const a = s.core("a");
    expect(a.compact(a.appliedIndex, s.kvs.get("a")!.snapshot())).toBe(true);
    s.flush("a");
    expect(a.floor).toBe(41);
    const rnd = seededRandom(99);
    let chunks = 0;
    const flaky = (m: InFlight): boolean => {
      if (m.message.type === "snapshot") chunks++;
      return m.message.type === "snapshot" || m.message.type === "snapshotReply" ? rnd() > 0.3 : true;
    };
    s.advance(3000, flaky);
    const c = s.core("c");
    expect(traceOf(s, "c").some((t) => t.type === "snapshotInstalled" && t.lastIndex === 41)).toBe(true);
    expect(chunks).toBeGreaterThan(Math.ceil(s.kvs.get("a")!.snapshot().length / 64) - 1);
    expect(c.floor).toBe(41);
    expect(s.kvs.get("c")!.stateText()).toBe(s.kvs.get("a")!.stateText());
    expect(Math.max(...s.frameSizes)).toBeLessThanOrEqual(400);
    // and it keeps replicating past the snapshot
    s.propose("a", put("after", "snap"), { client: "w", seq: 99 });
    s.advance(100);
    expect(s.kvs.get("c")!.data.get("after")).toBe("snap");
  });

  it("an incoming snapshot over the reassembly cap is discarded and restarts from offset 0", () => {
    const f = lone("f", ["a", "f", "c"], persisted(0, []), { snapshotMaxBytes: 10 });
    f.step("a", { type: "snapshot", term: 1, lastIndex: 5, lastTerm: 1, config: null, total: 11, offset: 0, data: new Uint8Array(11) });
    const rd = f.ready();
    expect(f.refusedFrames.get("snapshot-too-large")).toBe(1);
    expect(rd.messages.find((m) => m.message.type === "snapshotReply")?.message).toMatchObject({ nextOffset: 0, done: false });
    expect(f.floor).toBe(0);
  });

  it("an out-of-order chunk is answered with the offset the receiver needs", () => {
    const f = lone("f", ["a", "f", "c"]);
    const data = new Uint8Array([1, 2, 3, 4, 5, 6]);
    f.step("a", { type: "snapshot", term: 1, lastIndex: 5, lastTerm: 1, config: null, total: 6, offset: 0, data: data.subarray(0, 2) });
    f.step("a", { type: "snapshot", term: 1, lastIndex: 5, lastTerm: 1, config: null, total: 6, offset: 4, data: data.subarray(4) });
    f.step("a", { type: "snapshot", term: 1, lastIndex: 5, lastTerm: 1, config: null, total: 6, offset: 2, data: data.subarray(2, 4) });
    f.step("a", { type: "snapshot", term: 1, lastIndex: 5, lastTerm: 1, config: null, total: 6, offset: 4, data: data.subarray(4) });
    const rd = f.ready();
    const replies = rd.messages.map((m) => m.message).filter((m) => m.type === "snapshotReply");
    expect(replies.map((r) => (r as { nextOffset: number }).nextOffset)).toEqual([2, 2, 4, 6]);
    expect(rd.committed).toEqual([{ kind: "install", snapshot: { throughIndex: 5, state: data } }]);
    expect(f.floor).toBe(5);
  });
});

describe("§5.3 leadership transfer (§4.10, R-T1–R-T3)", () => {
  const settled = (voters: readonly string[], extra: readonly string[] = []): Script => {
    const s = new Script(voters, {}, extra);
    s.elect(voters[0]!);
    s.advance(1000);
    return s;
  };
  const votesOf = (s: Script, from: string) => s.inflight.filter((m) => m.from === from && m.message.type === "vote").map((m) => m.message);

  it("transfer confirmation only by the target's own leader frame", () => {
    const s = settled(ABC);
    const a = s.leader()!;
    const [b, c] = ABC.filter((x) => x !== a.id) as [string, string];
    const term = a.term;
    const id = s.nextId++;
    a.transferLeadership(id, b);
    s.flush(a.id);
    // b holds the whole log already: TimeoutNow goes out at once
    const order = s.inflight.filter((m) => m.message.type === "timeoutNow");
    expect(order.map((m) => [m.to, m.message])).toEqual([[b, { type: "timeoutNow", term }]]);
    s.deliver((m) => m.message.type === "timeoutNow");
    s.flush(b);
    expect(votesOf(s, b)).toEqual([
      { type: "vote", term: term + 1, lastLogIndex: a.lastIndex, lastLogTerm: term, transfer: true },
      { type: "vote", term: term + 1, lastLogIndex: a.lastIndex, lastLogTerm: term, transfer: true },
    ]);
    // The old leader meets b's vote (the transfer flag gets it through the lease): it steps down and grants —
    // and that is not a confirmation.
    s.deliver((m) => m.from === b && m.to === a.id);
    s.flush(a.id);
    expect(a.state).toBe("follower");
    expect(a.term).toBe(term + 1);
    expect(s.outcomes.has(id)).toBe(false);
    // Neither is any frame from b that a leader does not author, nor a leader frame from b at the old term.
    a.step(b, { type: "voteReply", term: term + 1, granted: true });
    a.step(b, { type: "appendReply", term: term + 1, success: true, matchIndex: a.lastIndex, rejectedPrev: 0, conflictTerm: null, conflictIndex: 0, round: 0 });
    a.step(b, append(term, a.lastIndex, term, [], a.commitIndex));
    s.flush(a.id);
    expect(s.outcomes.has(id)).toBe(false);
    expect(a.transfer).toMatchObject({ target: b, term });
    // b wins; its first AppendEntries at the new term confirms.
    s.inflight = s.inflight.filter((m) => m.from !== a.id || m.message.type !== "appendReply");
    s.deliver((m) => m.from === b && m.to === c);
    s.flush(c);
    s.deliver((m) => m.from === c && m.to === b);
    s.flush(b);
    expect(s.core(b).state).toBe("leader");
    s.stabilize();
    expect(s.outcomes.get(id)).toMatchObject({ ok: true, term: term + 1 });
    expect(a.transfer).toBeNull();
    expect(traceOf(s, a.id).filter((t) => t.type === "transferEnd")).toEqual([{ type: "transferEnd", target: b, generation: 1, outcome: "succeeded" }]);
  });

  it("a leader frame at a later term from another node ends the transfer as superseded, not succeeded", () => {
    const s = settled(ABC);
    const a = s.leader()!;
    const [b, c] = ABC.filter((x) => x !== a.id) as [string, string];
    const id = s.nextId++;
    a.transferLeadership(id, b);
    s.flush(a.id);
    s.inflight = [];
    a.step(c, append(a.term + 1, 0, 0, [], 0));
    s.flush(a.id);
    expect(s.outcomes.get(id)).toEqual({ id, ok: false, refusal: "transfer-superseded" });
  });

  it("a transfer to a lagging follower: the leader first brings it up to its last index, then it wins", () => {
    const s = settled(ABC);
    const a = s.leader()!;
    const [, c] = ABC.filter((x) => x !== a.id) as [string, string];
    for (let i = 0; i < 25; i++) s.propose(a.id, put(`k${i}`, `v${i}`), { client: "w", seq: i + 1 });
    s.advance(300, isolate([c]));
    expect(a.commitIndex).toBe(a.lastIndex);
    const last = a.lastIndex;
    expect(s.core(c).lastIndex).toBeLessThan(last - 20);
    const term = a.term;
    const id = s.nextId++;
    a.transferLeadership(id, c);
    s.flush(a.id);
    expect(s.inflight.some((m) => m.message.type === "timeoutNow")).toBe(false); // not before c has caught up
    let votedFrom = -1;
    s.advance(200, (m) => {
      if (m.message.type === "vote" && m.from === c) votedFrom = m.message.lastLogIndex;
      return true;
    });
    expect(votedFrom).toBe(last); // c campaigned holding the leader's whole log
    expect(s.core(c).state).toBe("leader");
    expect(s.core(c).term).toBe(term + 1);
    expect(s.outcomes.get(id)).toMatchObject({ ok: true });
    expect(s.kvs.get(c)!.data.get("k24")).toBe("v24");
  });

  it("a transfer to a learner or a stranger is refused; to the leader itself it succeeds at once; a second target waits its turn", () => {
    const s = new Script(ABC, {}, ["l"]);
    s.elect("a");
    const a = s.core("a");
    const cfg = s.nextId++;
    a.changeMembership(cfg, { voters: ABC, learners: ["l"] });
    s.stabilize();
    expect(s.outcomes.get(cfg)).toMatchObject({ ok: true });
    const [toLearner, toStranger, toSelf, toB, toC, toBAgain] = [1, 2, 3, 4, 5, 6].map(() => s.nextId++) as [number, number, number, number, number, number];
    a.transferLeadership(toLearner, "l");
    a.transferLeadership(toStranger, "zz");
    a.transferLeadership(toSelf, "a");
    s.flush("a");
    expect(s.outcomes.get(toLearner)).toEqual({ id: toLearner, ok: false, refusal: "transfer-invalid-target" });
    expect(s.outcomes.get(toStranger)).toEqual({ id: toStranger, ok: false, refusal: "transfer-invalid-target" });
    expect(s.outcomes.get(toSelf)).toMatchObject({ ok: true });
    expect(a.state).toBe("leader");
    expect(s.inflight.some((m) => m.message.type === "timeoutNow")).toBe(false);
    const notLeader = s.nextId++;
    s.core("b").transferLeadership(notLeader, "c");
    s.flush("b");
    expect(s.outcomes.get(notLeader)).toMatchObject({ ok: false, refusal: "not-leader" });
    a.transferLeadership(toB, "b");
    a.transferLeadership(toC, "c");
    a.transferLeadership(toBAgain, "b");
    s.flush("a");
    expect(s.outcomes.get(toC)).toEqual({ id: toC, ok: false, refusal: "transfer-in-progress" });
    s.stabilize();
    expect(s.outcomes.get(toB)).toMatchObject({ ok: true });
    expect(s.outcomes.get(toBAgain)).toMatchObject({ ok: true });
    expect(s.core("b").state).toBe("leader");
  });

  it("a transfer whose target cannot take over is abandoned after one electionTimeoutMax; the leader keeps leading and appends what it held", () => {
    const s = settled(ABC);
    const a = s.leader()!;
    const [b, c] = ABC.filter((x) => x !== a.id) as [string, string];
    const term = a.term;
    const id = s.nextId++;
    const start = s.now;
    const cutB = isolate([b]);
    a.transferLeadership(id, b);
    const held = s.propose(a.id, put("during", "transfer"), { client: "w", seq: 1 });
    const forwarded = s.propose(c, put("forwarded", "during"), { client: "w", seq: 2 });
    const cfgChange = s.nextId++;
    a.changeMembership(cfgChange, { voters: ABC, learners: ["x"] });
    s.stabilize(cutB);
    expect(s.outcomes.get(cfgChange)).toEqual({ id: cfgChange, ok: false, refusal: "transferring" });
    expect(a.entries.some((x) => x.key?.client === "w")).toBe(false); // held, not appended
    let endedAt = -1;
    for (let i = 0; i < 100 && endedAt < 0; i++) {
      s.advance(10, cutB);
      if (s.outcomes.has(id)) endedAt = s.now;
    }
    expect(s.outcomes.get(id)).toEqual({ id, ok: false, refusal: "transfer-timed-out" });
    expect(endedAt - start).toBeGreaterThanOrEqual(s.cfg.electionTimeoutMaxMs);
    expect(endedAt - start).toBeLessThanOrEqual(s.cfg.electionTimeoutMaxMs + 10);
    expect(a.state).toBe("leader");
    expect(a.term).toBe(term);
    s.advance(50, cutB);
    expect(s.outcomes.get(held)).toMatchObject({ ok: true });
    expect(s.outcomes.get(forwarded)).toMatchObject({ ok: true });
  });

  it("proposals reaching the leader during a successful transfer are refused once it ends, and their retry commits at the new leader", () => {
    const s = settled(ABC);
    const a = s.leader()!;
    const [b, c] = ABC.filter((x) => x !== a.id) as [string, string];
    const id = s.nextId++;
    a.transferLeadership(id, b);
    const local = s.propose(a.id, put("k", "1"), { client: "w", seq: 1 });
    const viaC = s.propose(c, put("k2", "1"), { client: "w", seq: 2 });
    s.flush(a.id);
    s.flush(c);
    s.deliver((m) => m.message.type === "forward");
    s.flush(a.id);
    expect(s.outcomes.has(local)).toBe(false); // held until the transfer ends
    s.stabilize();
    expect(s.outcomes.get(id)).toMatchObject({ ok: true });
    expect(s.outcomes.get(local)).toEqual({ id: local, ok: false, refusal: "transferring" });
    expect(s.outcomes.get(viaC)).toEqual({ id: viaC, ok: false, refusal: "leadership-lost" });
    expect(s.core(b).entries.some((x) => x.key?.client === "w")).toBe(false);
    const retry = s.propose(a.id, put("k", "1"), { client: "w", seq: 1 });
    s.stabilize();
    expect(s.outcomes.get(retry)).toMatchObject({ ok: true, term: s.core(b).term });
    expect(s.kvs.get(b)!.data.get("k")).toBe("1");
  });

  it("the deadline of an ended transfer never ends a later one (each carries its generation)", () => {
    const s = settled(ABC);
    const a = s.leader()!;
    const [b, c] = ABC.filter((x) => x !== a.id) as [string, string];
    const first = s.nextId++;
    a.transferLeadership(first, b);
    const firstDeadline = a.transfer!.deadline;
    s.stabilize();
    expect(s.outcomes.get(first)).toMatchObject({ ok: true });
    const back = s.nextId++;
    s.core(b).transferLeadership(back, a.id);
    s.stabilize();
    expect(s.outcomes.get(back)).toMatchObject({ ok: true });
    expect(a.state).toBe("leader");
    s.advance(100);
    const second = s.nextId++;
    a.transferLeadership(second, c);
    const cutC = isolate([c]);
    s.stabilize(cutC);
    expect(a.transfer).toMatchObject({ target: c, generation: 2 });
    while (s.now <= firstDeadline + 10) s.advance(10, cutC);
    expect(s.outcomes.has(second)).toBe(false);
    expect(a.transfer).toMatchObject({ target: c, generation: 2 });
    s.advance(s.cfg.electionTimeoutMaxMs, cutC);
    expect(s.outcomes.get(second)).toMatchObject({ ok: false, refusal: "transfer-timed-out" });
  });

  it("TimeoutNow is accepted only from the leader established for the current term", () => {
    const s = new Script(ABC, {}, ["l"]);
    s.elect("a");
    const cfg = s.nextId++;
    s.core("a").changeMembership(cfg, { voters: ABC, learners: ["l"] });
    s.advance(500);
    const leader = s.leader()!.id;
    const [b, c] = ABC.filter((x) => x !== leader) as [string, string];
    const term = s.core(b).term;
    expect(s.core(b).leader).toBe(leader);
    s.inflight = [];
    s.core(b).step(c, { type: "timeoutNow", term }); // not b's leader
    s.core(b).step(leader, { type: "timeoutNow", term: term - 1 }); // a stale term
    s.flush(b);
    expect(s.core(b).term).toBe(term);
    expect(votesOf(s, b)).toEqual([]);
    expect(s.core(b).refusedFrames.get("timeout-now-not-from-leader")).toBe(1);
    s.core("l").step(leader, { type: "timeoutNow", term }); // a learner never campaigns
    s.flush("l");
    expect(s.core("l").refusedFrames.get("timeout-now-not-voter")).toBe(1);
    expect(s.core("l").term).toBe(term);
    // after a restart b knows no leader for its term yet
    const restarted = s.start(b);
    restarted.step(leader, { type: "timeoutNow", term });
    s.flush(b);
    expect(restarted.term).toBe(term);
    expect(restarted.refusedFrames.get("timeout-now-not-from-leader")).toBe(1);
    // once the leader's frame re-establishes it, the order is obeyed: an immediate campaign with the flag
    restarted.step(leader, append(term, 0, 0, [], 0));
    restarted.step(leader, { type: "timeoutNow", term });
    s.flush(b);
    expect(restarted.term).toBe(term + 1);
    expect(votesOf(s, b).every((v) => v.type === "vote" && v.transfer === true && v.term === term + 1)).toBe(true);
    expect(votesOf(s, b)).toHaveLength(2);
  });
});

describe("a roster peer outside the Raft membership (issue 17's frame fuzzer; RaftCoreOptions.admit)", () => {
  const member = (id: string, voters: readonly string[], admit?: (from: string) => boolean): RaftCore =>
    new RaftCore({ id, bootstrap: { voters, learners: [] }, persisted: persisted(0, []), config: raftConfig({}), random: seededRandom(7), now: 0, ...(admit ? { admit } : {}) });
  /** f follows a at term 1 with entries 1–2 committed. */
  function follower(admit?: (from: string) => boolean): RaftCore {
    const f = member("f", ["a", "b", "f"], admit);
    f.step("a", append(1, 0, 0, [e(1, 1), e(2, 1)], 2));
    f.advance(f.ready());
    expect([f.term, f.leader, f.commitIndex]).toEqual([1, "a", 2]);
    return f;
  }
  // What a stranger "m" (in the seam's roster, in no configuration) sends: a leader frame at the next term whose
  // entry extends f's log and whose commit index covers it, and a vote carrying the transfer flag.
  const takeOver = append(2, 2, 1, [e(3, 2, { command: enc.encode("not from the cluster") })], 3);
  const transferVote = { type: "vote" as const, term: 5, lastLogIndex: 99, lastLogTerm: 4, transfer: true };

  it("without admit, a stranger's valid frames move the term, take the lead and commit an entry no member proposed (R-M4 hears them)", () => {
    const f = follower();
    f.step("m", takeOver);
    f.advance(f.ready());
    expect([f.term, f.leader, f.commitIndex]).toEqual([2, "m", 3]);
    expect(new TextDecoder().decode(f.entryAt(3)!.command)).toBe("not from the cluster");
    f.step("m", transferVote);
    expect(f.term).toBe(5);
  });

  it("with admit, every frame of a stranger is refused as not-member and counted; the member's term, leader, log and vote do not move", () => {
    const f = follower((id) => ["a", "b", "f"].includes(id));
    for (const m of [takeOver, transferVote, { type: "preVote" as const, term: 2, lastLogIndex: 99, lastLogTerm: 1, round: 1 }, { type: "timeoutNow" as const, term: 1 }]) f.step("m", m);
    f.step("m", { type: "forward", corrId: 1, key: { client: "auto:a:x", seq: 1 }, command: enc.encode("x") });
    const rd = f.ready();
    expect(rd.messages).toEqual([]);
    expect(rd.hardState).toBeNull();
    f.advance(rd);
    expect([f.term, f.leader, f.commitIndex, f.lastIndex]).toEqual([1, "a", 2, 2]);
    expect(f.refusedFrames.get("not-member")).toBe(5);
    // the members are still heard
    f.step("a", append(1, 2, 1, [e(3, 1)], 3));
    f.advance(f.ready());
    expect([f.commitIndex, f.lastIndex]).toEqual([3, 3]);
  });

  it("with admit, a leader does not append a stranger's forwarded command", () => {
    const a = member("a", ["a"], (id) => id === "a");
    for (let now = 10; a.state !== "leader" && now < 10_000; now += 10) {
      a.tick(now);
      a.advance(a.ready());
    }
    expect(a.state).toBe("leader");
    const last = a.lastIndex;
    a.step("m", { type: "forward", corrId: 1, key: { client: "auto:a:x", seq: 1 }, command: enc.encode("mint me") });
    const rd = a.ready();
    expect(rd.messages).toEqual([]);
    a.advance(rd);
    expect(a.lastIndex).toBe(last);
    expect(a.refusedFrames.get("not-member")).toBe(1);
  });
});
