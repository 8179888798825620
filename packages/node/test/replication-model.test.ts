import { AttachmentId, ReplicaId, type EntitlementLedger } from "@heddle/ledger";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReplicationSim } from "./replication-sim.ts";

type Command =
  | { kind: "delegate"; peer: number; amount: number }
  | { kind: "advance"; ms: number }
  | { kind: "partition"; mask: number; mode: "silent" | "disconnect" }
  | { kind: "heal" }
  | { kind: "faults"; drop: number; dup: number }
  | { kind: "crash"; peer: number; mode: "silent" | "disconnect"; downMs: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("delegate" as const), peer: fc.integer({ min: 0, max: 2 }), amount: fc.integer({ min: 1, max: 30 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 500 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("partition" as const), mask: fc.integer({ min: 1, max: 6 }), mode: fc.constantFrom("silent" as const, "disconnect" as const) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "heal" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("faults" as const), drop: fc.double({ min: 0, max: 0.6, noNaN: true }), dup: fc.double({ min: 0, max: 0.6, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("crash" as const), peer: fc.integer({ min: 0, max: 2 }), mode: fc.constantFrom("silent" as const, "disconnect" as const), downMs: fc.integer({ min: 0, max: 2_000 }) }) },
);

describe("replication against a reference model (fast-check)", () => {
  it("after heal, every replica equals genesis ⊔ every patch any peer published — no more, no less", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e6 }), fc.array(command, { maxLength: 40 }), (seed, commands) => {
        const ids = ["p0", "p1", "p2"];
        const sim = new ReplicationSim(ids, seed);
        let model: EntitlementLedger = sim.genesis;
        sim.timers.advanceBy(1);
        for (const c of commands) {
          switch (c.kind) {
            case "delegate": {
              const p = sim.peer(ids[c.peer]!);
              if (!p.alive) break;
              const r = p.rep.ledger.get().delegate(ReplicaId(p.id), AttachmentId("e2"), BigInt(c.amount));
              if (!r.ok) break;
              p.rep.publish(r.patch);
              model = model.join(r.patch);
              break;
            }
            case "advance":
              sim.timers.advanceBy(c.ms);
              break;
            case "partition":
              sim.net.partition([ids.filter((_, i) => (c.mask >> i) & 1)], c.mode);
              break;
            case "heal":
              sim.net.heal();
              break;
            case "faults":
              sim.net.setFaults("*", "*", { dropRate: c.drop, duplicateRate: c.dup, delayMs: [0, 100] });
              break;
            case "crash": {
              const p = sim.peer(ids[c.peer]!);
              if (!p.alive) break;
              const saved = sim.crash(p.id, c.mode);
              sim.timers.advanceBy(c.downMs);
              sim.restart(p.id, saved);
              break;
            }
          }
        }
        sim.net.heal();
        sim.net.setFaults("*", "*", { dropRate: 0, duplicateRate: 0, delayMs: [0, 100] });
        expect(sim.settle()).toBe(true);
        for (const p of sim.live()) expect(p.rep.ledger.get().encode()).toBe(model.encode());
      }),
      { numRuns: Number(process.env.HEDDLE_MODEL_RUNS ?? 150), seed: Number(process.env.HEDDLE_SEED ?? 77) },
    );
  });
});
