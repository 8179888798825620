import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AttachmentId, EntitlementLedger, GroupId, Rational, ReplicaId, Weight } from "@heddle/ledger";
import type { MutationResult } from "@heddle/ledger";
import { HeddlePolicy } from "../src/index.ts";
import type { Grant, PolicyConfig, PolicyEdge } from "../src/index.ts";
import { applyGrant } from "../src/grant-application.ts";
import { edgesFromLedger } from "./edge-builder.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 150);
const root = GroupId("root");
const me = ReplicaId("peer-1");

function ok(r: MutationResult): EntitlementLedger {
  if (!r.ok) throw new Error(`refused: ${r.refusal.kind} ${r.refusal.message}`);
  return r.patch;
}

interface ChildSpec {
  wn: bigint;
  wd: bigint;
  seat: readonly [bigint, bigint] | null;
  initial: bigint;
  spendPct: number;
  releasePct: number;
  target: bigint;
  maxGrant: bigint;
  offset: readonly [bigint, bigint];
}

const childArb: fc.Arbitrary<ChildSpec> = fc.record({
  wn: fc.bigInt({ min: 1n, max: 9n }),
  wd: fc.bigInt({ min: 1n, max: 4n }),
  seat: fc.option(fc.tuple(fc.bigInt({ min: 0n, max: 60n }), fc.bigInt({ min: 1n, max: 5n })), { nil: null }),
  initial: fc.bigInt({ min: 0n, max: 40n }),
  spendPct: fc.nat(100),
  releasePct: fc.nat(100),
  target: fc.bigInt({ min: 0n, max: 80n }),
  maxGrant: fc.bigInt({ min: 0n, max: 12n }),
  offset: fc.tuple(fc.bigInt({ min: 0n, max: 10n }), fc.bigInt({ min: 1n, max: 3n })),
});

/** The parent's ACTIVE children as the node reads them from a ledger view, in id order. */
const edgesFrom = (L: EntitlementLedger, ids: readonly AttachmentId[], specs: readonly ChildSpec[]): PolicyEdge[] =>
  edgesFromLedger(L, ids, specs.map((s) => ({ ...s, offset: Rational.of(s.offset[0], s.offset[1]) })));

describe("allocate agrees with a loop of pick + ledger.delegate over the same ledger view", () => {
  it("identical grant lists, and the engine's apply step checkpoints exactly as ledger.delegate does", () => {
    let roundsWithGrants = 0;
    fc.assert(
      fc.property(
        fc.array(childArb, { minLength: 1, maxLength: 6 }),
        fc.bigInt({ min: 0n, max: 150n }),
        fc.bigInt({ min: 1n, max: 8n }),
        fc.option(fc.bigInt({ min: 0n, max: 60n }), { nil: undefined }),
        (specs, budget, quantum, cap) => {
          const ids = specs.map((_, i) => AttachmentId(`e${i}`));
          const totalInitial = specs.reduce((s, c) => s + c.initial, 0n);
          let L = EntitlementLedger.bootstrap(root, new Map([[me, totalInitial + budget]]), "agreement");
          specs.forEach((s, i) => {
            const id = ids[i]!;
            L = L.join(ok(L.prepare({ id, parent: root, child: GroupId(`g${i}`), weight: Weight.of(s.wn, s.wd) })));
            L = L.join(ok(L.activate(id)));
            if (s.seat !== null) L = L.join(ok(L.seat(id, Rational.of(s.seat[0], s.seat[1]))));
            if (s.initial > 0n) L = L.join(ok(L.delegate(me, id, s.initial)));
            const spend = (s.initial * BigInt(s.spendPct)) / 100n;
            if (spend > 0n) L = L.join(ok(L.spend(me, GroupId(`g${i}`), spend)));
            const release = ((s.initial - spend) * BigInt(s.releasePct)) / 100n;
            if (release > 0n) L = L.join(ok(L.release(me, id, release)));
          });
          const config: PolicyConfig = cap === undefined ? { quantum } : { quantum, perChildOutstandingCap: cap };
          const start = edgesFrom(L, ids, specs);
          const h = L.holdings(root, me);
          const planned = HeddlePolicy.allocate(start, config, h, 100_000);

          const executed: Grant[] = [];
          let copy = start;
          for (;;) {
            const view = edgesFrom(L, ids, specs);
            const g = HeddlePolicy.pick(view, config, L.holdings(root, me));
            if (g === null) break;
            L = L.join(ok(L.delegate(me, g.attachment, g.amount)));
            executed.push(g);
            copy = applyGrant(copy, g);
            const after = edgesFrom(L, ids, specs);
            copy.forEach((e, i) => {
              const fromLedger = after[i]!;
              expect(e.baseIssued).toBe(fromLedger.baseIssued);
              expect(e.summary.issued).toBe(fromLedger.summary.issued);
              expect(e.gauge?.floor.toString()).toBe(fromLedger.gauge?.floor.toString());
              expect(e.gauge?.folded).toBe(fromLedger.gauge?.folded);
              expect(HeddlePolicy.virtualService(e).equals(L.virtualService(e.record.id)!)).toBe(true);
            });
          }
          if (executed.length > 1) roundsWithGrants++;
          expect(planned.map((g) => `${g.attachment}:${g.amount}`)).toEqual(executed.map((g) => `${g.attachment}:${g.amount}`));
        },
      ),
      { numRuns: RUNS },
    );
    expect(roundsWithGrants * 3).toBeGreaterThan(RUNS);
  });
});
