import { AttachmentId, GroupId, ReplicaId, Weight, type EntitlementLedger } from "@heddle/ledger";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../src/index.ts";
import { ReplicationSim } from "./replication-sim.ts";

/** Σ over groups ∪ roots and replicas of holdings, plus leaf spend — must equal the minted total. */
export function conservationHolds(l: EntitlementLedger): boolean {
  const groups = new Set([...l.groups(), ...l.roots()]);
  let sum = 0n;
  for (const g of [...groups].sort()) for (const r of l.replicas()) sum += l.holdings(g, r);
  return l.mintedTotal() === sum + l.leafSpentTotal();
}

export function negativeHoldings(l: EntitlementLedger): string[] {
  const out: string[] = [];
  for (const g of new Set([...l.groups(), ...l.roots()])) for (const r of l.replicas()) if (l.holdings(g, r) < 0n) out.push(`${g}/${r}`);
  return out;
}

interface ChaosOutcome {
  ledger: EntitlementLedger;
  spent: bigint;
  mutations: number;
}

/**
 * One seeded chaos run (node.md §16 A3 without the node-level calls of the next issue): random
 * delegate / release / spend / new leaf edges on every peer, drop 20 %, duplicate 20 %, delay
 * 0–200 ms, random silent and disconnect partitions and heals, one crash and restart; then heal,
 * stop dropping, settle. With `antiEntropy` off, no periodic digest repairs anything: convergence rests on
 * replication's own bookkeeping — acks, cursors, resends, tail re-offers, handshakes — so a bug there
 * (an ack past a gap, a cursor that skips a seq) shows up as a run that never settles.
 */
function chaosRun(n: number, seed: number, antiEntropy = true): ChaosOutcome {
  const ids = Array.from({ length: n }, (_, i) => `peer-${i}`);
  // Without anti-entropy nothing else repairs a lost handshake, so handshakes must not give up.
  const sim = new ReplicationSim(ids, seed, antiEntropy ? {} : { config: { antiEntropy: false, fullStateRetryLimit: 1_000_000 } });
  const rnd = seededRandom(seed * 1000 + 999);
  sim.net.setFaults("*", "*", { dropRate: 0.2, duplicateRate: 0.2, delayMs: [0, 200] });
  const crashAt = 1_000 + Math.floor(rnd() * 4_000);
  const restartAfter = 500 + Math.floor(rnd() * 3_000);
  const victim = ids[Math.floor(rnd() * n)]!;
  let saved: EntitlementLedger | null = null;
  let restartAt = Infinity;
  let spent = 0n;
  let mutations = 0;
  let edgeCounter = 0;
  const leaves = new Set(["g2", "g3", "g4"]);

  const mutate = (id: string) => {
    const p = sim.peer(id);
    if (!p.alive) return;
    const l = p.rep.ledger.get();
    const self = ReplicaId(id);
    const op = rnd();
    const edges = l.knownEdges().filter((e) => l.lifecycle(e) === "ACTIVE" && l.record(e) !== null);
    if (edges.length === 0) return;
    const e = edges[Math.floor(rnd() * edges.length)]!;
    const rec = l.record(e)!;
    let r;
    if (op < 0.45) {
      const h = l.holdings(rec.parent, self);
      if (h <= 0n) return;
      r = l.delegate(self, e, 1n + BigInt(Math.floor(rnd() * Number(h < 50n ? h : 50n))));
    } else if (op < 0.55) {
      const h = l.holdings(rec.child, self);
      if (h <= 0n) return;
      r = l.release(self, e, 1n + BigInt(Math.floor(rnd() * Number(h < 20n ? h : 20n))));
    } else if (op < 0.92) {
      const leaf = [...leaves].filter((g) => l.isLeaf(GroupId(g)))[Math.floor(rnd() * leaves.size)];
      if (leaf === undefined) return;
      const h = l.holdings(GroupId(leaf), self);
      if (h <= 0n) return;
      const amount = 1n + BigInt(Math.floor(rnd() * Number(h < 10n ? h : 10n)));
      r = l.spend(self, GroupId(leaf), amount);
      if (r.ok) spent += amount;
    } else {
      // A new leaf edge under g2 or a fresh group; one proposer per id (the id names the proposer).
      const k = edgeCounter++;
      const child = `${id}-leaf${k}`;
      const parent = rnd() < 0.5 ? "g2" : "root";
      const prep = l.prepare({ id: AttachmentId(`${id}-e${k}`), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(1n + BigInt(k % 3)) });
      if (!prep.ok) throw new Error(`prepare refused: ${prep.refusal.kind}`);
      p.rep.publish(prep.patch);
      const act = p.rep.ledger.get().activate(AttachmentId(`${id}-e${k}`));
      if (!act.ok) return; // e.g. the parent is quarantined in this view: the edge stays PREPARED
      p.rep.publish(act.patch);
      leaves.add(child);
      mutations += 2;
      return;
    }
    if (r.ok) {
      p.rep.publish(r.patch);
      mutations++;
    }
  };

  for (let t = 0; t < 8_000; t += 20) {
    sim.timers.advanceBy(20);
    if (t >= crashAt && saved === null && restartAt === Infinity) {
      saved = sim.crash(victim, rnd() < 0.5 ? "silent" : "disconnect");
      restartAt = t + restartAfter;
    }
    if (t >= restartAt && saved !== null) {
      sim.restart(victim, saved);
      saved = null;
    }
    const x = rnd();
    if (x < 0.01) {
      const cut = ids.filter(() => rnd() < 0.5);
      sim.net.partition([cut], rnd() < 0.5 ? "silent" : "disconnect");
    } else if (x < 0.02) {
      sim.net.heal();
    }
    for (const id of ids) if (rnd() < 0.15) mutate(id);
  }
  if (saved !== null) sim.restart(victim, saved);
  sim.net.heal();
  sim.net.setFaults("*", "*", { dropRate: 0, duplicateRate: 0.2, delayMs: [0, 200] });
  if (!sim.settle()) throw new Error(`did not converge within ${200 * sim.config.antiEntropyIntervalMs} ms of virtual time`);
  for (const p of sim.live()) expect(p.rejections.total()).toBe(0);
  return { ledger: sim.live()[0]!.rep.ledger.get(), spent, mutations };
}

const seeds = Number(process.env.HEDDLE_CHAOS_SEEDS ?? 50);
const firstSeed = Number(process.env.HEDDLE_SEED ?? 1);

describe("seeded chaos convergence on MemoryNetwork (node.md §16 A3)", () => {
  for (const n of [3, 5]) {
    it(`${n} peers, ${seeds} seeds from ${firstSeed}: equal, validate() empty, conservation, spends counted once`, () => {
      for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
        try {
          const out = chaosRun(n, seed);
          expect(out.mutations).toBeGreaterThan(20);
          expect(out.ledger.validate()).toEqual([]);
          expect(negativeHoldings(out.ledger)).toEqual([]);
          expect(conservationHolds(out.ledger)).toBe(true);
          expect(out.ledger.leafSpentTotal()).toBe(out.spent);
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          throw new Error(`chaos failed for ${n} peers, seed ${seed} (reproduce: HEDDLE_SEED=${seed} HEDDLE_CHAOS_SEEDS=1): ${msg}`);
        }
      }
    }, 60_000 + seeds * 2_000);
  }

  for (const n of [3, 5]) {
    it(`anti-entropy off (replication's own bookkeeping only): ${n} peers, ${seeds} seeds from ${firstSeed}: equal, valid, conserved`, () => {
      for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
        try {
          const out = chaosRun(n, seed, false);
          expect(out.mutations).toBeGreaterThan(20);
          expect(out.ledger.validate()).toEqual([]);
          expect(conservationHolds(out.ledger)).toBe(true);
          expect(out.ledger.leafSpentTotal()).toBe(out.spent);
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          throw new Error(`chaos (anti-entropy off) failed for ${n} peers, seed ${seed} (reproduce: HEDDLE_SEED=${seed} HEDDLE_CHAOS_SEEDS=1): ${msg}`);
        }
      }
    }, 60_000 + seeds * 2_000);
  }

  it("one seed reproduces one run exactly", () => {
    const a = chaosRun(3, 7);
    const b = chaosRun(3, 7);
    expect(a.ledger.encode()).toBe(b.ledger.encode());
    expect(a.mutations).toBe(b.mutations);
    expect(chaosRun(3, 8).ledger.encode()).not.toBe(a.ledger.encode());
  });
});
