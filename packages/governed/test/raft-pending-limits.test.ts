/**
 * The named limits at the door of the Raft core, each at its exact edge (governed.md R-F1, R-F5, R-Q1–R-Q3 and the
 * §4.1 limits: "all limits are named and enforced"): `maxPendingProposals` on the leader and on a follower still
 * waiting for a leader, `maxPendingReads` over every queue a read can wait in, and the frame budget for a command a
 * follower forwards. Then `abort` (R-F5) of the first proposal of each queue, and of a proposal already forwarded or
 * appended: it may still commit, but its outcome is never reported and its slot is free again.
 */
import { describe, expect, it } from "vitest";
import { APPEND_OVERHEAD_BYTES, entryBytes, forwardBytes } from "../src/raft/codec.ts";
import type { LogEntry, ProposalKey } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, Script } from "./support/script.ts";
import type { InFlight } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const put = (k: string, v: string): Uint8Array => kvCommand({ op: "put", key: k, value: v });
const noAppends = (m: InFlight): boolean => m.message.type !== "append";

function settled(config = {}): Script {
  const s = new Script(ABC, config);
  s.elect("a"); // the no-op committed everywhere
  return s;
}
const seqsOf = (s: Script, id: string, client: string): number[] =>
  s.core(id).entries.filter((e) => e.key?.client === client).map((e) => e.key!.seq);
const overloaded = (id: number) => ({ id, ok: false, refusal: "overloaded" });

describe("maxPendingProposals: exactly N proposals wait, the next is refused overloaded", () => {
  it("on the leader: N uncommitted proposals are appended, proposal N+1 is refused and never appended; a commit frees the slots", () => {
    const s = settled({ maxPendingProposals: 3 });
    const a = s.core("a");
    const ids = [1, 2, 3, 4].map((seq) => s.propose("a", put(`k${seq}`, "v"), { client: "w", seq }));
    const rd = s.flush("a");
    expect(rd.outcomes).toEqual([overloaded(ids[3]!)]);
    expect(seqsOf(s, "a", "w")).toEqual([1, 2, 3]);
    s.stabilize();
    for (const id of ids.slice(0, 3)) expect(s.outcomes.get(id)).toMatchObject({ ok: true });
    const later = s.propose("a", put("k5", "v"), { client: "w", seq: 5 });
    s.stabilize();
    expect(s.outcomes.get(later)).toMatchObject({ ok: true });
    expect(seqsOf(s, "a", "w")).toEqual([1, 2, 3, 5]);
    expect(a.state).toBe("leader");
  });

  it("on a follower with no leader known: N proposals wait, N+1 is refused; the N are forwarded and commit once a leader appears", () => {
    const s = new Script(ABC, { maxPendingProposals: 2 });
    const ids = [1, 2, 3].map((seq) => s.propose("b", put(`k${seq}`, "v"), { client: "w", seq }));
    const rd = s.flush("b");
    expect(rd.outcomes).toEqual([overloaded(ids[2]!)]);
    expect([...rd.messages, ...rd.earlyMessages].filter((m) => m.message.type === "forward")).toEqual([]);
    s.elect("a");
    expect(s.outcomes.get(ids[0]!)).toMatchObject({ ok: true });
    expect(s.outcomes.get(ids[1]!)).toMatchObject({ ok: true });
    expect(seqsOf(s, "a", "w")).toEqual([1, 2]);
  });
});

describe("the frame budget for a proposal made on a follower (R-R7)", () => {
  it("the Forward frame of any command is smaller than the AppendEntries frame that must carry it", () => {
    const keys: (ProposalKey | null)[] = [null, { client: "", seq: 0 }, { client: "c", seq: 1 }, { client: "ü".repeat(300), seq: 2 ** 40 }];
    for (const key of keys) {
      for (const len of [0, 1, 100, 70_000]) {
        const command = new Uint8Array(len);
        const entry: LogEntry = { index: 0, term: 0, kind: "app", key, command, stampedAt: 0 };
        expect(forwardBytes(command, key)).toBeLessThan(APPEND_OVERHEAD_BYTES + entryBytes(entry));
      }
    }
  });

  it("a command that exactly fits the AppendEntries budget is forwarded and commits, every frame within budget; one byte more is refused", () => {
    const s = settled({ maxMessageBytes: 400 });
    const key = { client: "w", seq: 1 };
    const fits = new Uint8Array(400 - APPEND_OVERHEAD_BYTES - entryBytes({ index: 0, term: 0, kind: "app", key, command: new Uint8Array(0), stampedAt: 0 }));
    const big = s.propose("b", new Uint8Array(fits.length + 1), { client: "w", seq: 2 });
    const ok = s.propose("b", fits, key);
    const rd = s.flush("b");
    expect(rd.outcomes).toEqual([{ id: big, ok: false, refusal: "payload-too-large" }]);
    expect([...rd.messages, ...rd.earlyMessages].filter((m) => m.message.type === "forward")).toHaveLength(1);
    s.stabilize();
    expect(s.outcomes.get(ok)).toMatchObject({ ok: true });
    expect(seqsOf(s, "a", "w")).toEqual([1]);
    expect(Math.max(...s.frameSizes)).toBeLessThanOrEqual(400);
  });
});

describe("abort of the first proposal in a queue (R-F5)", () => {
  it("the first of the proposals waiting for a leader is withdrawn: true, never forwarded or answered; the next is sent", () => {
    const s = new Script(ABC);
    const b = s.core("b");
    const p1 = s.propose("b", put("k1", "v"), { client: "w", seq: 1 });
    const p2 = s.propose("b", put("k2", "v"), { client: "w", seq: 2 });
    expect(b.abort(p1)).toBe(true);
    expect(b.abort(p1)).toBe(false);
    s.elect("a");
    expect(s.outcomes.get(p2)).toMatchObject({ ok: true });
    expect(s.outcomes.has(p1)).toBe(false);
    expect(seqsOf(s, "a", "w")).toEqual([2]);
  });

  it("the first of the proposals held for a leadership transfer is withdrawn: true, never appended or answered", () => {
    const s = settled();
    const a = s.core("a");
    const cutB = isolate(["b"]);
    const t = s.nextId++;
    a.transferLeadership(t, "b");
    const p1 = s.propose("a", put("k1", "v"), { client: "w", seq: 1 });
    const p2 = s.propose("a", put("k2", "v"), { client: "w", seq: 2 });
    s.stabilize(cutB);
    expect(a.abort(p1)).toBe(true);
    expect(a.abort(p1)).toBe(false);
    for (let i = 0; i < 20 && !s.outcomes.has(t); i++) s.advance(50, cutB, 50); // abandoned after electionTimeoutMax
    expect(s.outcomes.get(t)).toMatchObject({ ok: false, refusal: "transfer-timed-out" });
    s.stabilize(cutB);
    expect(s.outcomes.get(p2)).toMatchObject({ ok: true });
    expect(s.outcomes.has(p1)).toBe(false);
    expect(seqsOf(s, "a", "w")).toEqual([2]);
  });
});

describe("abort after send (R-F5): the command may commit, its outcome is never reported", () => {
  it("a forwarded proposal: abort is false, the leader commits it, the follower reports nothing for it", () => {
    const s = settled();
    const c = s.core("c");
    const p = s.propose("c", put("k", "v"), { client: "w", seq: 1 });
    s.flush("c"); // the Forward is on its way
    expect(c.abort(p)).toBe(false);
    s.stabilize();
    expect(seqsOf(s, "a", "w")).toEqual([1]);
    expect(s.core("a").commitIndex).toBe(s.core("a").lastIndex);
    expect(s.outcomes.has(p)).toBe(false);
    expect(s.traces.get("c")!.filter((e) => e.type === "forwardAnswered")).toEqual([]);
  });

  it("a forwarded proposal aborted, then the leader changes: it is not failed either", () => {
    const s = settled();
    const c = s.core("c");
    const p = s.propose("c", put("k", "v"), { client: "w", seq: 1 });
    s.flush("c");
    expect(c.abort(p)).toBe(false);
    s.inflight = []; // the Forward is lost
    // b leads a later term: forwards still outstanding to a are failed (R-F4); this one is no longer outstanding
    c.step("b", { type: "append", term: c.term + 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [] });
    expect(c.leader).toBe("b");
    expect(s.flush("c").outcomes).toEqual([]);
    expect(s.outcomes.has(p)).toBe(false);
  });

  it("an appended proposal on the leader: abort is false, the entry commits unanswered, and its slot is free at once", () => {
    const s = settled({ maxPendingProposals: 1 });
    const a = s.core("a");
    const p = s.propose("a", put("k1", "v"), { client: "w", seq: 1 });
    expect(a.abort(p)).toBe(false); // appended: it will be sent
    const next = s.propose("a", put("k2", "v"), { client: "w", seq: 2 }); // the one slot is free again
    expect(s.flush("a").outcomes).toEqual([]);
    s.stabilize();
    expect(seqsOf(s, "a", "w")).toEqual([1, 2]);
    expect(s.outcomes.has(p)).toBe(false);
    expect(s.outcomes.get(next)).toMatchObject({ ok: true });
  });
});

describe("maxPendingReads counts every read waiting, in whichever queue (R-Q1–R-Q3)", () => {
  it("reads waiting for the fresh leader's no-op: N wait, N+1 is refused overloaded; the N are confirmed later", () => {
    const s = new Script(ABC, { maxPendingReads: 2 });
    s.elect("a", noAppends);
    const a = s.core("a");
    expect(a.commitIndex).toBeLessThan(a.lastIndex); // the no-op is not committed
    const ids = [s.nextId++, s.nextId++, s.nextId++];
    for (const id of ids) a.readIndex(id);
    expect(s.flush("a").outcomes).toEqual([overloaded(ids[2]!)]);
    s.advance(60, undefined, 10, ["a"]); // only the leader's clock moves: its heartbeat re-sends the no-op
    expect(s.outcomes.get(ids[0]!)).toMatchObject({ ok: true });
    expect(s.outcomes.get(ids[1]!)).toMatchObject({ ok: true });
  });

  it("a read in confirmation and a read queued behind it make N = 2: the third is refused; a confirmed read frees its slot", () => {
    const s = settled({ maxPendingReads: 2 });
    const a = s.core("a");
    const r1 = s.nextId++;
    a.readIndex(r1);
    s.flush("a"); // r1's confirmation round is sent
    const r2 = s.nextId++;
    a.readIndex(r2); // waits for the next round
    const r3 = s.nextId++;
    a.readIndex(r3);
    expect(s.flush("a").outcomes).toEqual([overloaded(r3)]);
    s.stabilize();
    expect(s.outcomes.get(r1)).toMatchObject({ ok: true });
    expect(s.outcomes.get(r2)).toMatchObject({ ok: true });
    const r4 = s.nextId++;
    a.readIndex(r4);
    s.stabilize();
    expect(s.outcomes.get(r4)).toMatchObject({ ok: true });
  });

  it("two reads in one confirmation round fill N = 2: the third is refused", () => {
    const s = settled({ maxPendingReads: 2 });
    const a = s.core("a");
    const ids = [s.nextId++, s.nextId++];
    for (const id of ids) a.readIndex(id);
    s.flush("a"); // both in the round now
    const r3 = s.nextId++;
    a.readIndex(r3);
    expect(s.flush("a").outcomes).toEqual([overloaded(r3)]);
    s.stabilize();
    for (const id of ids) expect(s.outcomes.get(id)).toMatchObject({ ok: true });
  });
});
