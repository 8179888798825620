/**
 * Gauge floors anywhere in the signed 64-bit range (policy.md §2.2, §7; ledger.md §3.8). `allocate` — what the
 * node's `schedule()` runs — must end exactly as the node loop of policy.md §7 does, `pick` then
 * `ledger.delegate`: the same grants, or `LedgerOverflowError` where that loop throws one. The policy's arithmetic
 * throws where any 64-bit implementation would (§2.1: "including throwing in the same cases"), so near 2^63 some
 * rounds must throw; but the gauge join only picks one of two floors it already has, and ledger.md (which governs
 * the gauge, policy.md's preamble) compares the floors exactly. The policy's own join used the checked compare:
 * a round whose every `pick` and every checkpoint the ledger accepts threw in `allocate`'s apply step, so the node
 * scheduled nothing at that parent.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AttachmentId, EntitlementLedger, GroupId, LedgerOverflowError, MAX, Rational, ReplicaId, Weight } from "@heddle/ledger";
import type { Gauge, MutationResult } from "@heddle/ledger";
import { HeddlePolicy, joinGauge } from "../src/index.ts";
import type { Grant, PolicyConfig, PolicyEdge } from "../src/index.ts";
import { edge, edgesFromLedger } from "./edge-builder.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 300);
const root = GroupId("root");
const me = ReplicaId("peer-1");

function ok(r: MutationResult): EntitlementLedger {
  if (!r.ok) throw new Error(`refused: ${r.refusal.kind} ${r.refusal.message}`);
  return r.patch;
}

/** The round's grants as text, or "LedgerOverflowError" when it throws one (anything else propagates). */
function outcome(f: () => readonly Grant[]): string {
  try {
    return f().map((g) => `${g.attachment}:${g.amount}`).join(" ");
  } catch (err) {
    if (err instanceof LedgerOverflowError) return "LedgerOverflowError";
    throw err;
  }
}

interface ChildSpec {
  readonly wn: bigint;
  readonly wd: bigint;
  readonly floorNum: bigint;
  readonly floorDen: bigint;
  readonly initial: bigint;
  readonly target: bigint;
  readonly maxGrant: bigint;
}

// Floors from small to the very top of the range, with denominators up to 2^32: the cross products the checked
// compare forms (num × den) then leave int64 while each floor, and what pick computes from it, may still fit.
const bigNum = fc.oneof(
  fc.bigInt({ min: 0n, max: 50n }),
  fc.bigInt({ min: 1n << 28n, max: 1n << 34n }),
  fc.bigInt({ min: 1n << 60n, max: MAX }),
);
const bigDen = fc.oneof(fc.bigInt({ min: 1n, max: 7n }), fc.bigInt({ min: (1n << 28n) - 9n, max: (1n << 32n) + 9n }));
const childArb: fc.Arbitrary<ChildSpec> = fc.record({
  wn: fc.bigInt({ min: 1n, max: 9n }),
  wd: fc.bigInt({ min: 1n, max: 4n }),
  floorNum: bigNum,
  floorDen: bigDen,
  initial: fc.bigInt({ min: 0n, max: 20n }),
  target: fc.bigInt({ min: 0n, max: 60n }),
  maxGrant: fc.bigInt({ min: 0n, max: 12n }),
});

/** The parent's children as the node reads them from a ledger view, in id order (no virtual offset). */
const edgesFrom = (L: EntitlementLedger, ids: readonly AttachmentId[], specs: readonly ChildSpec[]): PolicyEdge[] => edgesFromLedger(L, ids, specs);

describe("gauge floors whose cross products leave int64 (near 2^63, or over denominators near 2^32)", () => {
  it("allocate ends as the node loop (pick + ledger.delegate) does: the same grants, or LedgerOverflowError", () => {
    let granted = 0;
    let grantedNearTop = 0;
    let overflowed = 0;
    fc.assert(
      fc.property(
        fc.array(childArb, { minLength: 1, maxLength: 3 }),
        fc.bigInt({ min: 0n, max: 40n }),
        fc.bigInt({ min: 1n, max: 8n }),
        (specs, budget, quantum) => {
          const ids = specs.map((_, i) => AttachmentId(`e${i}`));
          const totalInitial = specs.reduce((s, c) => s + c.initial, 0n);
          let L = EntitlementLedger.bootstrap(root, new Map([[me, totalInitial + budget]]), "extreme");
          try {
            specs.forEach((s, i) => {
              const id = ids[i]!;
              L = L.join(ok(L.prepare({ id, parent: root, child: GroupId(`g${i}`), weight: Weight.of(s.wn, s.wd) })));
              L = L.join(ok(L.activate(id)));
              L = L.join(ok(L.seat(id, Rational.of(s.floorNum, s.floorDen))));
              if (s.initial > 0n) L = L.join(ok(L.delegate(me, id, s.initial)));
            });
          } catch (err) {
            // a setup checkpoint itself left int64: not a round this property is about
            fc.pre(!(err instanceof LedgerOverflowError));
            throw err;
          }
          const config: PolicyConfig = { quantum };
          const planned = outcome(() => HeddlePolicy.allocate(edgesFrom(L, ids, specs), config, L.holdings(root, me), 1_000));
          const executed = outcome(() => {
            const grants: Grant[] = [];
            let work = L;
            for (;;) {
              const g = HeddlePolicy.pick(edgesFrom(work, ids, specs), config, work.holdings(root, me));
              if (g === null) return grants;
              work = work.join(ok(work.delegate(me, g.attachment, g.amount)));
              grants.push(g);
            }
          });
          expect(planned, `allocate vs pick + delegate on ${JSON.stringify(specs, (_k, v: unknown) => (typeof v === "bigint" ? `${v}` : v))}`).toBe(executed);
          if (executed === "LedgerOverflowError") overflowed++;
          else if (executed !== "") {
            granted++;
            if (specs.some((s) => s.floorNum >= 1n << 60n)) grantedNearTop++;
          }
        },
      ),
      { numRuns: RUNS },
    );
    // not vacuous: rounds near the top of the range grant, and others throw as the spec says they must
    expect(grantedNearTop).toBeGreaterThan(RUNS / 100);
    expect(granted).toBeGreaterThan(RUNS / 10);
    expect(overflowed).toBeGreaterThan(RUNS / 20);
  });

  it("a floor (2^31 + 1)/(2^31 − 1) under weight 3: pick grants, the checkpoint fits, and so does allocate's round", () => {
    const a = (1n << 31n) + 1n;
    const b = (1n << 31n) - 1n;
    const es = [edge("a", { w: 3n, gauge: [Rational.of(a, b), 5n], issued: 5n })];
    expect(HeddlePolicy.pick(es, { quantum: 1n }, 1n)).toEqual({ attachment: "a", amount: 1n });
    // the checked compare of the old floor a/b with the checkpoint (3a + b)/3b forms a·3b ≈ 3·2^62
    expect(HeddlePolicy.allocate(es, { quantum: 1n }, 1n, 10)).toEqual([{ attachment: "a", amount: 1n }]);
  });

  it("joinGauge compares floors exactly, as the ledger's join does: it never throws, and picks the larger floor", () => {
    const big: Gauge = { floor: Rational.of(MAX, 3n), folded: 4n };
    const bigger: Gauge = { floor: Rational.of(MAX - 1n, 2n), folded: 2n };
    expect(joinGauge(big, bigger)).toEqual({ floor: bigger.floor, folded: 4n });
    expect(joinGauge(bigger, big)).toEqual({ floor: bigger.floor, folded: 4n });
    const top: Gauge = { floor: Rational.of(MAX), folded: 0n };
    const tiny: Gauge = { floor: Rational.of(1n, MAX), folded: 9n };
    expect(joinGauge(tiny, top)).toEqual({ floor: top.floor, folded: 9n });
  });
});
