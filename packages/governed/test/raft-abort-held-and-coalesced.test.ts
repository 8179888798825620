/**
 * `abort` in the states the waiting-for-leader test does not reach (governed.md R-F5, R-D4, R-T1): a proposal held
 * for a leadership transfer is withdrawn (true, never appended, never answered) while the others held stay; a
 * coalesced retry is dropped from its entry's waiters (never answered, its slot freed for later retries) while
 * the other waiters of that entry — local and forwarded — are still answered when it commits. Also the stale-term
 * InstallSnapshot answer and the messages of `ready`/`advance` misuse.
 */
import { describe, expect, it } from "vitest";
import { seededRandom } from "@heddle/seam";
import { raftConfig, RaftCore } from "../src/index.ts";
import type { PersistedState } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, Script } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const put = (k: string, v: string): Uint8Array => kvCommand({ op: "put", key: k, value: v });

function settled(config = {}): Script {
  const s = new Script(ABC, config);
  s.elect("a"); // stabilized: the no-op committed everywhere
  return s;
}
const seqsOf = (s: Script, id: string, client: string): number[] =>
  s.core(id).entries.filter((e) => e.key?.client === client).map((e) => e.key!.seq);
function lone(id: string, p: PersistedState): RaftCore {
  return new RaftCore({ id, bootstrap: { voters: ABC, learners: [] }, persisted: p, config: raftConfig({}), random: seededRandom(3), now: 0 });
}
function thrown(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  return "(nothing thrown)";
}

describe("abort of a proposal held for a leadership transfer (R-F5)", () => {
  it("withdraws exactly that proposal: true, never appended or answered; the others held are appended once the transfer ends", () => {
    const s = settled();
    const a = s.core("a");
    const cutB = isolate(["b"]);
    const t = s.nextId++;
    a.transferLeadership(t, "b");
    const p1 = s.propose("a", put("k1", "v"), { client: "w", seq: 1 });
    const p2 = s.propose("a", put("k2", "v"), { client: "w", seq: 2 });
    const p3 = s.propose("a", put("k3", "v"), { client: "w", seq: 3 });
    s.stabilize(cutB);
    expect(seqsOf(s, "a", "w")).toEqual([]); // all three held
    expect(a.abort(p2)).toBe(true);
    expect(a.abort(p2)).toBe(false); // already withdrawn
    expect(a.abort(999)).toBe(false); // unknown: the proposals held stay held
    for (let i = 0; i < 20 && !s.outcomes.has(t); i++) s.advance(50, cutB, 50); // abandoned after electionTimeoutMax
    expect(s.outcomes.get(t)).toEqual({ id: t, ok: false, refusal: "transfer-timed-out" });
    s.stabilize(cutB);
    expect(s.outcomes.get(p1)).toMatchObject({ ok: true });
    expect(s.outcomes.get(p3)).toMatchObject({ ok: true });
    expect(s.outcomes.has(p2)).toBe(false);
    expect(seqsOf(s, "a", "w")).toEqual([1, 3]);
  });
});

describe("abort of a coalesced retry (R-F5, R-D4)", () => {
  it("drops only that waiter: the entry's other waiters, local and forwarded, are answered at commit; its slot is freed", () => {
    const s = settled({ maxPendingProposals: 3 });
    const a = s.core("a");
    const cmd = put("k", "v");
    const key = { client: "w", seq: 1 };
    const first = s.propose("a", cmd, key);
    s.flush("a"); // appended and sent, not committed
    const index = a.lastIndex;
    const r1 = s.propose("a", cmd, key); // coalesced: 1 waiter
    const fwd = s.propose("c", cmd, key);
    s.flush("c");
    s.deliver((m) => m.message.type === "forward"); // coalesced: 2 waiters
    const r2 = s.propose("a", cmd, key); // 3 waiters: the limit
    expect(a.abort(r1)).toBe(false); // the entry was sent and may still commit
    const r3 = s.propose("a", cmd, key); // r1's slot is free again
    const r4 = s.propose("a", cmd, key); // 3 waiters again: refused
    const rd = s.flush("a");
    expect(rd.outcomes).toEqual([{ id: r4, ok: false, refusal: "overloaded" }]);
    s.stabilize();
    expect(a.commitIndex).toBeGreaterThanOrEqual(index);
    const term = a.term;
    expect(s.outcomes.get(first)).toEqual({ id: first, ok: true, index, term });
    expect(s.outcomes.get(r2)).toEqual({ id: r2, ok: true, index, term });
    expect(s.outcomes.get(r3)).toEqual({ id: r3, ok: true, index, term });
    expect(s.outcomes.get(fwd)).toEqual({ id: fwd, ok: true, index, term });
    expect(s.outcomes.has(r1)).toBe(false);
    expect(seqsOf(s, "a", "w")).toEqual([1]);
  });

  it("aborting the only waiter of an entry: the entry commits, the waiter is never answered, and a later retry is coalesced", () => {
    const s = settled({ maxPendingProposals: 1 });
    const a = s.core("a");
    const cmd = put("k", "v");
    const key = { client: "w", seq: 1 };
    const first = s.propose("a", cmd, key);
    s.flush("a");
    const index = a.lastIndex;
    const r1 = s.propose("a", cmd, key);
    expect(a.abort(r1)).toBe(false);
    const r2 = s.propose("a", cmd, key); // the one slot is free again
    s.stabilize();
    const term = a.term;
    expect(s.outcomes.get(first)).toEqual({ id: first, ok: true, index, term });
    expect(s.outcomes.get(r2)).toEqual({ id: r2, ok: true, index, term });
    expect(s.outcomes.has(r1)).toBe(false);
  });
});

describe("stale-term InstallSnapshot and Ready misuse", () => {
  it("a snapshot chunk from an older term is answered with the current term, not done, and installs nothing", () => {
    const b = lone("b", { term: 5, votedFor: null, snapshot: null, entries: [] });
    b.step("a", { type: "snapshot", term: 3, lastIndex: 4, lastTerm: 2, config: null, total: 3, offset: 0, data: new Uint8Array([1, 2, 3]) });
    const rd = b.ready();
    expect([...rd.earlyMessages, ...rd.messages]).toEqual([
      { to: "a", message: { type: "snapshotReply", term: 5, lastIndex: 4, nextOffset: 0, done: false } },
    ]);
    expect(rd.storage).toEqual([]);
    expect(b.snapshot).toBeNull();
    expect(b.term).toBe(5);
  });

  it("ready() twice without advance, and advance() without an outstanding Ready, throw naming the misuse", () => {
    const c = lone("c", { term: 0, votedFor: null, snapshot: null, entries: [] });
    const rd = c.ready();
    expect(thrown(() => c.ready())).toBe("RaftCore.ready: the previous Ready has not been advanced");
    c.advance(rd);
    expect(thrown(() => c.advance(rd))).toBe("RaftCore.advance without an outstanding Ready");
    expect(c.ready()).toBeDefined(); // the misuse left the core usable
  });
});
