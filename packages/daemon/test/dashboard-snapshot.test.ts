// What the dashboard snapshot says about each edge's shares and tone, on a ledger built by hand and a demand
// board faked per edge: node.md §11 measures fairness among the children demanding *now* (D), so a bar is
// graded against the child's share among its demanding siblings — not among every ACTIVE sibling, which
// counts a sibling that idles (found in review: with one of three siblings idle, the two demanding ones got
// half each, exactly their due, and were drawn over-served against a third).
import fc from "fast-check";
import { AttachmentId, EntitlementLedger, GroupId, ReplicaId, Weight, type MutationResult } from "@heddle/ledger";
import { WatchCell } from "@heddle/node";
import { boundMetrics } from "@heddle/node/testing";
import { DEMAND_NONE, type Demand } from "@heddle/policy";
import { describe, expect, it } from "vitest";
import type { DataPlane } from "../src/data-plane.ts";
import { dashboardSnapshot, SHARE_DECIMALS, SHARE_OK, shareTone } from "../src/dashboard-snapshot.ts";
import type { PeerReads } from "../src/peer-reads.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 300);
const SEED = process.env["HEDDLE_SEED"] === undefined ? undefined : Number(process.env["HEDDLE_SEED"]);

const SELF = ReplicaId("peer-1");
const ROOT = GroupId("root");
const WANTS: Demand = { targetOutstanding: 400n, maximumUsefulGrant: 60n };

function must(l: EntitlementLedger, r: MutationResult): EntitlementLedger {
  if (!r.ok) throw new Error(`refused: ${r.refusal.kind} ${r.refusal.message}`);
  return l.join(r.patch);
}

interface Child {
  readonly name: string;
  readonly weight: bigint;
  /** Committed service delegated to it so far. */
  readonly service: bigint;
  readonly demanding: boolean;
}

/** Root with `children` (edge id `e-<name>`), each delegated its service by this peer; demand per `demanding`. */
function peer(children: readonly Child[], opts: { demandReadable?: boolean } = {}): PeerReads {
  const supply = children.reduce((s, c) => s + c.service, 0n) + 1_000n;
  let view = EntitlementLedger.bootstrap(ROOT, new Map([[SELF, supply]]), "snapshot-test");
  for (const c of children) {
    const id = AttachmentId(`e-${c.name}`);
    view = must(view, view.prepare({ id, parent: ROOT, child: GroupId(c.name), weight: Weight.of(c.weight) }));
    view = must(view, view.activate(id));
    if (c.service > 0n) view = must(view, view.delegate(SELF, id, c.service));
  }
  const wants = new Set(children.filter((c) => c.demanding).map((c) => `e-${c.name}`));
  const demand = (e: AttachmentId): Demand => (wants.has(e) ? WANTS : DEMAND_NONE);
  const final = view;
  const data: Partial<DataPlane> = {
    self: SELF,
    ledger: new WatchCell(final),
    boundMetrics: (parent: GroupId) => boundMetrics({ view: final, parent, replicas: new Set([SELF]), maxHoldingsPerPeer: 1_000_000n, quantum: 10n, demand }),
    ...(opts.demandReadable === false ? {} : { demand }),
  };
  return {
    data: data as DataPlane, // the snapshot reads only the members given here
    mode: "static",
    root: ROOT,
    roster: [{ id: SELF, addrs: [] }],
    connected: () => new Set(),
    lastLiveness: () => new Map(),
    control: null,
    raft: null,
  };
}

const edgeOf = (reads: PeerReads, name: string) => dashboardSnapshot(reads, 0).edges.get(`e-${name}`)!;

describe("the dashboard snapshot's shares and tone", () => {
  it("grades two demanding siblings that split the service evenly as ok, though a third idles (was warn/bad against a third)", () => {
    const reads = peer([
      { name: "a", weight: 1n, service: 50n, demanding: true },
      { name: "b", weight: 1n, service: 50n, demanding: true },
      { name: "c", weight: 1n, service: 0n, demanding: false },
    ]);
    for (const n of ["a", "b"]) {
      const e = edgeOf(reads, n);
      expect(e["tone"]).toBe("ok");
      // among ACTIVE siblings, as GET /v1/tree and /metrics report them
      expect(e["fairShare"]).toBe(0.3333);
      expect(e["committedShare"]).toBe(0.5);
      // among the demanding siblings: what the bar is graded by
      expect(e["demanding"]).toBe(true);
      expect(e["fairShareDemanding"]).toBe(0.5);
      expect(e["committedShareDemanding"]).toBe(0.5);
      expect(e["demandingSiblings"]).toBe(2);
    }
    const c = edgeOf(reads, "c");
    expect(c["tone"]).toBe("idle");
    expect(c["fairShareDemanding"]).toBeNull();
    expect(c["committedShareDemanding"]).toBeNull();
    expect(c["demandingSiblings"]).toBeNull();
    // the bound metrics agree: nobody in D is off its due
    expect(dashboardSnapshot(reads, 0).bounds.get("root")!["observed"]).toBe("0");
  });

  it("leaves an idle sibling's past service out of the demanding children's committed shares", () => {
    // c was served 100 before it stopped demanding; a and b have since split theirs 3 : 1 against weights 1 : 1
    const reads = peer([
      { name: "a", weight: 1n, service: 60n, demanding: true },
      { name: "b", weight: 1n, service: 20n, demanding: true },
      { name: "c", weight: 2n, service: 100n, demanding: false },
    ]);
    const a = edgeOf(reads, "a");
    const b = edgeOf(reads, "b");
    // graded among the ACTIVE siblings (the old way) a's 60/180 against a quarter was only warn
    expect([a["tone"], b["tone"]]).toEqual(["bad", "bad"]);
    expect([a["committedShareDemanding"], b["committedShareDemanding"]]).toEqual([0.75, 0.25]);
    expect([a["fairShareDemanding"], b["fairShareDemanding"]]).toEqual([0.5, 0.5]);
    // observedDeviation = |0.5·80 − 60| = 20 = 0.25 of T
    expect(dashboardSnapshot(reads, 0).bounds.get("root")!["observed"]).toBe("20");
  });

  it("grades among the ACTIVE siblings where this peer cannot read demand", () => {
    const reads = peer(
      [
        { name: "a", weight: 1n, service: 50n, demanding: true },
        { name: "b", weight: 1n, service: 50n, demanding: true },
        { name: "c", weight: 1n, service: 0n, demanding: false },
      ],
      { demandReadable: false },
    );
    const a = edgeOf(reads, "a");
    expect(a["demanding"]).toBeNull();
    expect(a["fairShareDemanding"]).toBeNull();
    expect(a["tone"]).toBe(shareTone(0.3333, 0.5, null));
    expect(a["tone"]).toBe("bad");
  });

  it("draws a demanding child neutrally while nothing is committed to any demanding sibling (T = 0: no deviation to show)", () => {
    const reads = peer([
      { name: "a", weight: 1n, service: 0n, demanding: true },
      { name: "c", weight: 1n, service: 70n, demanding: false },
    ]);
    const a = edgeOf(reads, "a");
    expect(a["fairShareDemanding"]).toBe(1);
    expect(a["committedShareDemanding"]).toBeNull();
    expect(a["tone"]).toBe("idle");
    expect(dashboardSnapshot(reads, 0).bounds.get("root")!["observed"]).toBe("0");
  });

  it("over any siblings and demand: D's shares sum to one, and the worst demanding bar is boundMetrics' observedDeviation over T", () => {
    const child = fc.record({ weight: fc.bigInt({ min: 1n, max: 9n }), service: fc.bigInt({ min: 0n, max: 5_000n }), demanding: fc.boolean() });
    fc.assert(
      fc.property(fc.array(child, { minLength: 1, maxLength: 6 }), (cs) => {
        const children = cs.map((c, i) => ({ ...c, name: `g${i}` }));
        const reads = peer(children);
        const snap = dashboardSnapshot(reads, 0);
        const D = children.filter((c) => c.demanding);
        const T = D.reduce((s, c) => s + c.service, 0n);
        const observed = BigInt(snap.bounds.get("root")!["observed"] as string);
        const slack = 10 ** -SHARE_DECIMALS; // two rounded shares
        let worst = 0;
        let fairSum = 0;
        for (const c of children) {
          const e = snap.edges.get(`e-${c.name}`)!;
          if (!c.demanding) {
            expect(e["tone"]).toBe("idle");
            expect(e["fairShareDemanding"]).toBeNull();
            continue;
          }
          expect(e["demandingSiblings"]).toBe(D.length);
          const fair = e["fairShareDemanding"] as number;
          fairSum += fair;
          if (T === 0n) {
            expect(e["committedShareDemanding"]).toBeNull();
            expect(e["tone"]).toBe("idle");
            continue;
          }
          const got = e["committedShareDemanding"] as number;
          worst = Math.max(worst, Math.abs(got - fair));
          expect(e["tone"]).toBe(shareTone(fair, got, true));
        }
        if (D.length > 0) expect(Math.abs(fairSum - 1)).toBeLessThanOrEqual(D.length * slack);
        if (T === 0n) expect(observed).toBe(0n);
        else {
          // observed = ceil(max |(w/W)·T − c|): the worst bar's distance, scaled by T, within rounding and the ceil
          expect(Math.abs(worst * Number(T) - Number(observed))).toBeLessThanOrEqual(1 + Number(T) * slack);
          // and a bar drawn ok is one whose term of the deviation is at most SHARE_OK of T (up to rounding)
          if (D.every((c) => snap.edges.get(`e-${c.name}`)!["tone"] === "ok")) expect(Number(observed)).toBeLessThanOrEqual(Math.ceil(Number(T) * (SHARE_OK + slack)) + 1);
        }
      }),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) },
    );
  });
});
