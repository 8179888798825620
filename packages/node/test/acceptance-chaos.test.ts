import { describe, expect, it } from "vitest";
import { seededRandom, type LinkFaults, type ReservationId } from "../src/index.ts";
import { Cluster, D, FLAT, conservation, e, forSeeds, g, rec, seedList } from "./node-sim.ts";

const SEEDS = Number(process.env.HEDDLE_SEEDS ?? 50);
const CHAOS: LinkFaults = { dropRate: 0.2, duplicateRate: 0.2, delayMs: [0, 200] };

/**
 * One A3 run: random advertise / schedule / reserve / complete / cancel, new leaf edges (one proposer per
 * id), silent and disconnect partitions and heals, one crash and restart from the store; then heal,
 * drop rate 0, settle, and check every §16 A3 invariant.
 */
function chaosRun(seed: number, n: number): { charged: bigint; grants: number; edges: number } {
  const rnd = seededRandom(seed * 7 + n);
  const pickOf = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const ids = Array.from({ length: n }, (_, i) => `p${i}`);
  const c = new Cluster({ seed: seed * 10 + n, supply: Object.fromEntries(ids.map((id) => [id, 100n + BigInt(Math.floor(rnd() * 200))])), faults: CHAOS, topology: FLAT });
  const leaves = ["g1", "g2"];
  const edges = ["e1", "e2"];
  const open = new Map<string, { id: ReservationId; max: bigint }[]>(ids.map((id) => [id, []]));
  let charged = 0n;
  let edgeCount = 0;
  const crashAt = Math.floor(rnd() * 40);
  let crashed: string | null = null;
  let restartAt = -1;
  for (let step = 0; step < 60; step++) {
    if (step === crashAt) {
      crashed = pickOf(ids);
      c.crash(crashed, rnd() < 0.5 ? "silent" : "disconnect");
      restartAt = step + 1 + Math.floor(rnd() * 10);
    } else if (step === restartAt && crashed !== null) {
      c.restart(crashed);
      // Reservations survive in the store: the restarted node still knows them.
      expect(c.n(crashed).openReservations().map((x) => x.id).sort()).toEqual(open.get(crashed)!.map((x) => x.id).sort());
      crashed = null;
    }
    const who = pickOf(ids.filter((id) => id !== crashed));
    const node = c.n(who);
    const roll = rnd();
    if (roll < 0.2) {
      node.advertise(e(pickOf(edges)), D(BigInt(Math.floor(rnd() * 300)), BigInt(Math.floor(rnd() * 40))));
    } else if (roll < 0.35) {
      node.schedule(g("root"));
    } else if (roll < 0.55) {
      const r = node.reserve(g(pickOf(leaves)), 1n + BigInt(Math.floor(rnd() * 30)));
      if (r.ok) open.get(who)!.push({ id: r.id, max: BigInt(0) + (node.openReservations().find((x) => x.id === r.id)!.maximumCost) });
    } else if (roll < 0.75) {
      const mine = open.get(who)!;
      if (mine.length > 0) {
        const k = Math.floor(rnd() * mine.length);
        const { id, max } = mine[k]!;
        const cost = rnd() < 0.2 ? 0n : BigInt(Math.floor(rnd() * (Number(max) + 1)));
        const res = rnd() < 0.2 ? node.cancel(id) : node.complete(id, cost);
        if (!res.ok) throw new Error(`complete refused: ${res.refusal.kind}`);
        expect(res.outcome).toBe("charged");
        charged += res.charged;
        mine.splice(k, 1);
      }
    } else if (roll < 0.82) {
      const id = `x${who}-${edgeCount++}`;
      const leaf = `l${id}`;
      if (node.prepare(rec(id, "root", leaf)).ok && node.activate(e(id)).ok) {
        edges.push(id);
        leaves.push(leaf);
      }
    } else if (roll < 0.9) {
      const shuffled = [...ids].sort(() => rnd() - 0.5);
      const cut = 1 + Math.floor(rnd() * (n - 1));
      c.net.partition([shuffled.slice(0, cut), shuffled.slice(cut)], rnd() < 0.5 ? "silent" : "disconnect");
    } else if (roll < 0.95) {
      c.net.heal();
    }
    c.timers.advanceBy(Math.floor(rnd() * 300));
  }
  if (crashed !== null) c.restart(crashed);
  c.net.heal();
  c.net.setFaults("*", "*", { ...CHAOS, dropRate: 0 });
  c.settle();
  const views = c.live().map((p) => p.node.ledger.get());
  const l = views[0]!;
  for (const v of views) expect(v.equals(l)).toBe(true);
  expect(l.validate()).toEqual([]);
  const k = conservation(l);
  expect(k.negative).toEqual([]);
  expect(k.minted).toBe(k.held + k.leafSpent);
  expect(k.leafSpent).toBe(charged);
  for (const p of c.live()) expect(p.node.metrics().failed).toBe(false);
  const grants = c.live().reduce((x, p) => x + p.node.metrics().grants, 0);
  void c.shutdown();
  return { charged, grants, edges: edges.length - 2 };
}

describe("node.md §16 A3 chaos convergence on the integrated node", () => {
  for (const n of [3, 5]) {
    it(`A3 ${n} peers × ${SEEDS} seeds: drop 0.2, dup 0.2, delay 0–200 ms, partitions, one crash/restart → equal, valid, conserved, Σ leaf-spent = Σ charged`, () => {
      const total = { charged: 0n, grants: 0, edges: 0 };
      forSeeds(seedList(SEEDS), (seed) => {
        const t = chaosRun(seed, n);
        total.charged += t.charged;
        total.grants += t.grants;
        total.edges += t.edges;
      });
      // The runs exercise what they claim to: charges, grants and new edges happen.
      expect(total.charged > 0n && total.grants > 0 && total.edges > 0).toBe(true);
      console.log(`A3 n=${n}: Σ charged ${total.charged}, grants ${total.grants}, new edges ${total.edges}`);
    }, 60_000 + SEEDS * 3_000);
  }
});
