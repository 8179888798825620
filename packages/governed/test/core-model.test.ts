/**
 * Model-based property test of the Raft core with fast-check: random action sequences (clock ticks, delivery in
 * any order, drops, duplicates, proposals — some retried under the same key — leadership transfers, crashes with
 * restart from disk, compaction) against a scripted
 * 3-node cluster, checking after every action the safety properties a correct Raft keeps — and shrinking any
 * counterexample to a minimal action list.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { sameEntry } from "../src/index.ts";
import type { LogEntry } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { Script } from "./support/script.ts";

const IDS = ["a", "b", "c"];
type Action =
  | { kind: "tick"; node: number; ms: number }
  | { kind: "deliver"; pick: number }
  | { kind: "drop"; pick: number }
  | { kind: "dup"; pick: number }
  | { kind: "propose"; node: number }
  | { kind: "crash"; node: number }
  | { kind: "compact"; node: number }
  | { kind: "retry"; node: number; back: number }
  | { kind: "transfer"; node: number; target: number };

const node = fc.integer({ min: 0, max: 2 });
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("tick" as const), node, ms: fc.integer({ min: 10, max: 200 }) }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("deliver" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("dup" as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("propose" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("crash" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("compact" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("retry" as const), node, back: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("transfer" as const), node, target: node }) },
);

function run(actions: Action[]): void {
  const s = new Script(IDS, { snapshotChunkBytes: 32, maxMessageBytes: 400 });
  const clocks = [0, 0, 0];
  const leaders = new Map<number, string>();
  const committed = new Map<number, LogEntry>();
  const lastCommit = new Map<string, number>();
  let seq = 0;
  const check = (): void => {
    for (const id of IDS) {
      const c = s.core(id);
      if (c.state === "leader") {
        const prior = leaders.get(c.term);
        expect(prior === undefined || prior === id, `two leaders in term ${c.term}`).toBe(true);
        if (prior === undefined) {
          leaders.set(c.term, id);
          for (const [i, e] of committed) if (i > c.floor) expect(c.entryAt(i) !== undefined && sameEntry(c.entryAt(i)!, e), `leader ${id} lacks committed ${i}`).toBe(true);
        }
      }
      expect(c.commitIndex, `${id} commit regressed`).toBeGreaterThanOrEqual(lastCommit.get(id) ?? 0);
      lastCommit.set(id, c.commitIndex);
      for (let i = c.floor + 1; i <= c.commitIndex; i++) {
        const e = c.entryAt(i)!;
        const ref = committed.get(i);
        if (ref === undefined) committed.set(i, e);
        else expect(sameEntry(ref, e), `${id} committed a different entry at ${i}`).toBe(true);
      }
    }
    // Log Matching over every pair
    for (let x = 0; x < 3; x++) {
      for (let y = x + 1; y < 3; y++) {
        const a = s.core(IDS[x]!);
        const b = s.core(IDS[y]!);
        const lo = Math.max(a.floor, b.floor) + 1;
        const hi = Math.min(a.lastIndex, b.lastIndex);
        let match = false;
        for (let i = hi; i >= lo; i--) {
          if (match) expect(sameEntry(a.entryAt(i)!, b.entryAt(i)!), `logs differ at ${i} below a matching entry`).toBe(true);
          else if (a.termAt(i) === b.termAt(i)) {
            match = true;
            expect(sameEntry(a.entryAt(i)!, b.entryAt(i)!)).toBe(true);
          }
        }
      }
    }
  };
  for (const act of actions) {
    switch (act.kind) {
      case "tick": {
        clocks[act.node]! += act.ms;
        s.core(IDS[act.node]!).tick(clocks[act.node]!);
        break;
      }
      case "deliver":
      case "drop":
      case "dup": {
        if (s.inflight.length === 0) break;
        const k = act.pick % s.inflight.length;
        const m = s.inflight[k]!;
        if (act.kind !== "dup") s.inflight.splice(k, 1);
        if (act.kind !== "drop") s.core(m.to).step(m.from, m.message);
        break;
      }
      case "propose":
        s.propose(IDS[act.node]!, kvCommand({ op: "put", key: "k", value: `${++seq}` }), { client: "m", seq });
        break;
      case "retry": {
        const again = seq - act.back;
        if (again >= 1) s.propose(IDS[act.node]!, kvCommand({ op: "put", key: "k", value: `${again}` }), { client: "m", seq: again });
        break;
      }
      case "transfer":
        s.core(IDS[act.node]!).transferLeadership(s.nextId++, IDS[act.target]!);
        break;
      case "crash": {
        const id = IDS[act.node]!;
        s.start(id);
        lastCommit.delete(id); // commit is volatile: monotone per incarnation
        s.core(id).tick(clocks[act.node]!);
        break;
      }
      case "compact": {
        const id = IDS[act.node]!;
        const kv = s.kvs.get(id)!;
        s.core(id).compact(kv.applied, kv.snapshot());
        break;
      }
    }
    s.flushAll();
    check();
  }
}

describe("Raft core model-based property (fast-check)", () => {
  it("keeps Election Safety, Log Matching, Leader Completeness and committed entries under any action order", () => {
    fc.assert(
      fc.property(fc.array(action, { minLength: 20, maxLength: 300 }), (actions) => run(actions)),
      { numRuns: Number(process.env.HEDDLE_RAFT_MODEL_RUNS ?? 300) },
    );
  });

  it("the random actions do reach elections and commits (the property is not vacuous)", () => {
    let committedRuns = 0;
    fc.assert(
      fc.property(fc.array(action, { minLength: 150, maxLength: 300 }), (actions) => {
        const s = new Script(IDS);
        const clocks = [0, 0, 0];
        for (const act of actions) {
          if (act.kind === "tick") s.core(IDS[act.node]!).tick((clocks[act.node]! += act.ms));
          else if (act.kind === "deliver" && s.inflight.length > 0) {
            const m = s.inflight.splice(act.pick % s.inflight.length, 1)[0]!;
            s.core(m.to).step(m.from, m.message);
          } else if (act.kind === "propose") s.propose(IDS[act.node]!, kvCommand({ op: "put", key: "k", value: "v" }));
          s.flushAll();
        }
        if (IDS.some((id) => s.core(id).commitIndex > 1)) committedRuns++;
      }),
      { numRuns: 50, seed: 42 },
    );
    expect(committedRuns).toBeGreaterThan(10);
  });
});
