/**
 * The leader-side dedup cache (governed.md R-D4): a retried key in flight resolves with the original's index, a
 * retried key recently committed is answered with its index without appending, the cache is bounded by
 * `maxDedupKeys`, and it never changes what the state machine decides — its exact per-(client, seq) dedup stays
 * authoritative (a model-based property compares every run with the same run with the cache off).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ProposalDedup } from "../src/raft/dedup.ts";
import type { LogEntry } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { Script } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const put = (k: string, v: string): Uint8Array => kvCommand({ op: "put", key: k, value: v });
const appendCmd = (k: string, v: string): Uint8Array => kvCommand({ op: "append", key: k, value: v });
const keyed = (s: Script, id: string, client: string, seq: number): LogEntry[] =>
  s.core(id).entries.filter((e) => e.key?.client === client && e.key.seq === seq);

function settled(config = {}): Script {
  const s = new Script(ABC, config);
  s.elect("a");
  s.advance(1000);
  return s;
}

describe("leader-side dedup cache (R-D4)", () => {
  it("a retry of an in-flight key resolves with the original's index; the entry is appended once", () => {
    const s = settled();
    const a = s.leader()!;
    const first = s.propose(a.id, appendCmd("k", "x"), { client: "w", seq: 1 });
    s.flush(a.id); // appended and sent, not committed
    const index = a.lastIndex;
    expect(a.commitIndex).toBeLessThan(index);
    const retry = s.propose(a.id, appendCmd("k", "x"), { client: "w", seq: 1 });
    const rd = s.flush(a.id);
    expect(rd.storage).toEqual([]);
    expect(a.lastIndex).toBe(index);
    expect(rd.trace).toContainEqual({ type: "proposalCoalesced", index, committed: false });
    expect(s.outcomes.has(retry)).toBe(false);
    s.stabilize();
    expect(s.outcomes.get(first)).toMatchObject({ ok: true, index });
    expect(s.outcomes.get(retry)).toMatchObject({ ok: true, index, term: a.term });
    expect(keyed(s, a.id, "w", 1)).toHaveLength(1);
    expect(s.kvs.get(a.id)!.data.get("k")).toBe("x");
  });

  it("a retry of a recently committed key is answered with its index, without appending anything", () => {
    const s = settled();
    const a = s.leader()!;
    const first = s.propose(a.id, put("k", "v"), { client: "w", seq: 1 });
    s.stabilize();
    const { index } = s.outcomes.get(first) as { index: number };
    const last = a.lastIndex;
    const retry = s.propose(a.id, put("k", "v"), { client: "w", seq: 1 });
    const rd = s.flush(a.id);
    expect(rd.storage).toEqual([]);
    expect([...rd.earlyMessages, ...rd.messages].filter((m) => m.message.type === "append" && m.message.entries.length > 0)).toEqual([]);
    expect(s.outcomes.get(retry)).toMatchObject({ ok: true, index });
    expect(a.lastIndex).toBe(last);
  });

  it("a forwarded retry coalesces too, in flight and once committed", () => {
    const s = settled();
    const a = s.leader()!;
    const f = ABC.find((x) => x !== a.id)!;
    const first = s.propose(f, put("k", "v"), { client: "w", seq: 1 });
    s.flush(f);
    s.deliver((m) => m.message.type === "forward");
    s.flush(a.id); // appended by the leader, not committed
    const retry = s.propose(f, put("k", "v"), { client: "w", seq: 1 });
    s.stabilize();
    const o1 = s.outcomes.get(first) as { ok: true; index: number };
    expect(o1.ok).toBe(true);
    expect(s.outcomes.get(retry)).toMatchObject({ ok: true, index: o1.index });
    const again = s.propose(f, put("k", "v"), { client: "w", seq: 1 });
    s.stabilize();
    expect(s.outcomes.get(again)).toMatchObject({ ok: true, index: o1.index });
    expect(keyed(s, a.id, "w", 1)).toHaveLength(1);
  });

  it("a key reused for a different command is not coalesced: it is appended and the state machine decides", () => {
    const s = settled();
    const a = s.leader()!;
    s.propose(a.id, put("k", "first"), { client: "w", seq: 1 });
    s.stabilize();
    const reuse = s.propose(a.id, put("k", "second"), { client: "w", seq: 1 });
    s.stabilize();
    const o = s.outcomes.get(reuse) as { ok: true; index: number };
    expect(keyed(s, a.id, "w", 1).map((e) => e.index)).toContain(o.index);
    expect(keyed(s, a.id, "w", 1)).toHaveLength(2);
    expect(s.kvs.get(a.id)!.data.get("k")).toBe("first"); // the test machine's exact dedup replays the first outcome
  });

  it("is bounded by maxDedupKeys: the oldest key is forgotten and its retry is appended (and replayed by the state machine)", () => {
    const s = settled({ maxDedupKeys: 3 });
    const a = s.leader()!;
    for (let seq = 1; seq <= 4; seq++) s.propose(a.id, put(`k${seq}`, "v"), { client: "w", seq });
    s.stabilize();
    const recent = s.propose(a.id, put("k2", "v"), { client: "w", seq: 2 }); // still remembered
    const old = s.propose(a.id, put("k1", "v"), { client: "w", seq: 1 }); // forgotten: 3 newer keys since
    s.stabilize();
    expect(keyed(s, a.id, "w", 2)).toHaveLength(1);
    expect(keyed(s, a.id, "w", 1)).toHaveLength(2);
    expect(s.outcomes.get(recent)).toMatchObject({ ok: true, index: keyed(s, a.id, "w", 2)[0]!.index });
    expect(s.outcomes.get(old)).toMatchObject({ ok: true, index: keyed(s, a.id, "w", 1)[1]!.index });
    expect(s.kvs.get(a.id)!.effects).toBe(4);
    const d = new ProposalDedup(3);
    for (let i = 1; i <= 10; i++) d.remember({ index: i, term: 1, kind: "app", key: { client: "c", seq: i }, command: new Uint8Array(), stampedAt: 0 });
    expect(d.size).toBe(3);
  });

  it("maxDedupKeys: 0 turns the cache off", () => {
    const s = settled({ maxDedupKeys: 0 });
    const a = s.leader()!;
    s.propose(a.id, put("k", "v"), { client: "w", seq: 1 });
    s.stabilize();
    s.propose(a.id, put("k", "v"), { client: "w", seq: 1 });
    s.stabilize();
    expect(keyed(s, a.id, "w", 1)).toHaveLength(2);
  });

  it("a new leader remembers keys its log already holds, committed under the previous leader", () => {
    const s = settled();
    const a = s.leader()!;
    const first = s.propose(a.id, put("k", "v"), { client: "w", seq: 1 });
    s.stabilize();
    const { index } = s.outcomes.get(first) as { index: number };
    const target = ABC.find((x) => x !== a.id)!;
    const t = s.nextId++;
    a.transferLeadership(t, target);
    s.stabilize();
    expect(s.outcomes.get(t)).toMatchObject({ ok: true });
    const last = s.core(target).lastIndex;
    const retry = s.propose(target, put("k", "v"), { client: "w", seq: 1 });
    s.stabilize();
    expect(s.outcomes.get(retry)).toMatchObject({ ok: true, index });
    expect(s.core(target).lastIndex).toBe(last);
  });

  it("a coalesced waiter fails with leadership-lost when the leader steps down before the entry commits", () => {
    const s = settled();
    const a = s.leader()!;
    s.propose(a.id, put("k", "v"), { client: "w", seq: 1 });
    s.flush(a.id);
    const retry = s.propose(a.id, put("k", "v"), { client: "w", seq: 1 });
    s.flush(a.id);
    s.inflight = [];
    a.step(ABC.find((x) => x !== a.id)!, { type: "append", term: a.term + 1, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [] });
    s.flush(a.id);
    expect(s.outcomes.get(retry)).toEqual({ id: retry, ok: false, refusal: "leadership-lost" });
  });

  it("never changes what the state machine decides: any run gives the same outcomes and state as with the cache off", () => {
    // Proposals (fresh and retried, at any node, forwarded or not) and transfers; the network delivers in order,
    // so the two runs differ only in the cache.
    type Act =
      | { kind: "new"; node: number; op: "put" | "append" | "get"; k: number }
      | { kind: "retry"; node: number; pick: number }
      | { kind: "settle" }
      | { kind: "transfer"; node: number };
    const act: fc.Arbitrary<Act> = fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant("new" as const), node: fc.nat(2), op: fc.constantFrom("put" as const, "append" as const, "get" as const), k: fc.nat(2) }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant("retry" as const), node: fc.nat(2), pick: fc.nat() }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant("settle" as const) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("transfer" as const), node: fc.nat(2) }) },
    );
    const run = (acts: Act[], maxDedupKeys: number) => {
      const s = settled({ maxDedupKeys });
      const issued: { key: { client: string; seq: number }; command: Uint8Array }[] = [];
      const asked: { id: number; key: { client: string; seq: number }; command: Uint8Array }[] = [];
      let coalesced = 0;
      for (const x of acts) {
        if (x.kind === "new") {
          const n = issued.length;
          const command = x.op === "put" ? put(`k${x.k}`, `${n}`) : x.op === "append" ? appendCmd(`k${x.k}`, `[${n}]`) : kvCommand({ op: "get", key: `k${x.k}` });
          issued.push({ key: { client: "w", seq: n + 1 }, command });
        }
        const p = x.kind === "new" ? issued[issued.length - 1] : x.kind === "retry" && issued.length > 0 ? issued[x.pick % issued.length] : undefined;
        if (p !== undefined && (x.kind === "new" || x.kind === "retry")) asked.push({ id: s.propose(ABC[x.node]!, p.command, p.key), ...p });
        else if (x.kind === "settle") s.stabilize();
        else if (x.kind === "transfer") s.leader()?.transferLeadership(s.nextId++, ABC[x.node]!);
      }
      s.advance(2000);
      for (const id of ABC) coalesced += s.traces.get(id)!.filter((t) => t.type === "proposalCoalesced").length;
      const leader = s.leader()!;
      const kv = s.kvs.get(leader.id)!;
      // Every proposal that resolved points at a committed entry carrying its own key and command.
      for (const q of asked) {
        const o = s.outcomes.get(q.id);
        if (o === undefined || !o.ok) continue;
        const e = leader.entryAt(o.index)!;
        expect(o.index).toBeLessThanOrEqual(leader.commitIndex);
        expect(e.key).toEqual(q.key);
        expect(e.command).toEqual(q.command);
      }
      const resolved = asked.map((q) => {
        const o = s.outcomes.get(q.id);
        return o === undefined ? "pending" : o.ok ? "ok" : o.refusal;
      });
      return {
        state: kv.stateText(),
        outcomes: issued.map((p) => kv.outcome(p.key.client, p.key.seq) ?? null),
        resolved,
        entries: leader.entries.filter((e) => e.kind === "app").length,
        coalesced,
      };
    };
    let hits = 0;
    fc.assert(
      fc.property(fc.array(act, { minLength: 5, maxLength: 60 }), (acts) => {
        const on = run(acts, 4096);
        const off = run(acts, 0);
        expect(on.state).toBe(off.state);
        expect(on.outcomes).toEqual(off.outcomes);
        expect(on.resolved).toEqual(off.resolved);
        expect(on.entries).toBe(off.entries - on.coalesced);
        expect(off.coalesced).toBe(0);
        hits += on.coalesced;
      }),
      { numRuns: Number(process.env.HEDDLE_RUNS ?? 150), seed: Number(process.env.HEDDLE_SEED ?? 4411) },
    );
    expect(hits).toBeGreaterThan(100); // the runs did coalesce retries, in flight and committed
  });
});

describe("the cache coalesces only the exact command (R-D4: a key reused for a different command is a miss)", () => {
  it("one byte changed, a byte added or a byte dropped under the same key is a miss; the same bytes are a hit", () => {
    const d = new ProposalDedup(8);
    const key = { client: "w", seq: 3 };
    const original: LogEntry = { index: 5, term: 2, kind: "app", key, command: Uint8Array.of(1, 2, 3), stampedAt: 0 };
    d.remember(original);
    const at = (i: number): LogEntry | undefined => (i === 5 ? original : undefined);
    expect(d.lookup(key, Uint8Array.of(1, 2, 3), at)).toBe(original);
    expect(d.lookup(key, Uint8Array.of(1, 2, 4), at)).toBeUndefined();
    expect(d.lookup(key, Uint8Array.of(9, 2, 3), at)).toBeUndefined();
    expect(d.lookup(key, Uint8Array.of(1, 2, 3, 4), at)).toBeUndefined();
    expect(d.lookup(key, Uint8Array.of(1, 2), at)).toBeUndefined();
    expect(d.lookup(key, new Uint8Array(0), at)).toBeUndefined();
  });

  it("coalesces only the keys its predicate admits: the others are neither remembered nor answered", () => {
    const d = new ProposalDedup(8, (k) => !k.client.startsWith("idem:"));
    const entry = (index: number, client: string): LogEntry => ({ index, term: 1, kind: "app", key: { client, seq: 1 }, command: Uint8Array.of(index), stampedAt: 0 });
    const kept = entry(1, "w");
    const skipped = entry(2, "idem:x");
    d.remember(kept);
    d.remember(skipped);
    expect(d.size).toBe(1);
    const at = (i: number): LogEntry | undefined => [kept, skipped][i - 1];
    expect(d.lookup(kept.key, kept.command, at)).toBe(kept);
    expect(d.lookup(skipped.key, skipped.command, at)).toBeUndefined();
  });
});
