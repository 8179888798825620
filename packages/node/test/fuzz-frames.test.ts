import { describe, expect, it } from "vitest";
import { ReplicaId } from "@heddle/ledger";
import { MAX_SLOT_CLAIMS } from "@heddle/claims";
import { sleep } from "@heddle/seam/testing";
import { heddleStatic, memoryStore, realTimers, seededRandom, type HeddleNode, type ReservationId } from "../src/index.ts";
import { REJECT_REASONS, type RejectReason } from "../src/index.ts";
import { FLAT, conservation, e, g } from "./node-sim.ts";
import { FrameFuzzer } from "./support/frame-fuzz.ts";
import { HostilePeer, heapAfterGc, startFuzzCast, until as untilSeeded } from "./support/fuzz-harness.ts";

/**
 * Issue 17: a frame fuzzer against a live node over libp2p. A hostile roster peer ("mallory", a raw
 * libp2p peer that writes bytes, length prefixes included) sends HEDDLE_FUZZ_FRAMES frames (20,000 in
 * CI) to a victim node while the victim and two honest peers keep mutating. Pass: nothing throws, no
 * unhandled rejection; the victim's counters account for every frame mallory's bytes make — each one
 * rejected under the reason the generator predicted or accepted, every stream that ends badly under
 * its seam counter; heap after a forced GC at most 1.5× the heap after warm-up; conservation on every
 * peer throughout, and the three ledgers converge once mallory stops. (`@heddle/governed`'s
 * `fuzz-raft-frames.test.ts` runs the same generator against a governed peer whose Raft member reads tag 4.)
 */
const FRAMES = Number(process.env.HEDDLE_FUZZ_FRAMES ?? 20_000);
const SEED = Number(process.env.HEDDLE_SEED ?? 17);
const WARMUP = Math.min(2_000, Math.floor(FRAMES / 10));
const SEAM_MAX = 65_536;
const NODE_MAX = 32_768;
const MAX_DEMAND_ENTRIES = 64;

const heap = heapAfterGc;
const until = (cond: () => boolean, what: string, ms?: number) => untilSeeded(cond, what, SEED, ms);

/** Mutations an honest peer makes: demand, a schedule round, reservations opened and completed. */
function honestStep(node: HeddleNode, open: ReservationId[], rnd: () => number): void {
  for (const x of ["e1", "e2"]) node.advertise(e(x), { targetOutstanding: BigInt(50 + Math.floor(rnd() * 500)), maximumUsefulGrant: BigInt(10 + Math.floor(rnd() * 100)) });
  node.schedule(g("root"));
  const leaf = g(rnd() < 0.5 ? "g1" : "g2");
  const r = node.reserve(leaf, BigInt(1 + Math.floor(rnd() * 5)));
  if (r.ok) open.push(r.id);
  while (open.length > 3) {
    const id = open.shift()!;
    const done = node.complete(id, BigInt(Math.floor(rnd() * 2)));
    if (!done.ok && done.refusal.kind !== "closed") throw new Error(`complete refused: ${JSON.stringify(done.refusal)}`);
  }
}

describe("frame fuzzer against a live node over libp2p (issue 17, node.md §3.4, §4.3)", () => {
  it(`${FRAMES} hostile frames: no crash, every frame accounted for by reason, heap bounded, honest peers conserve and converge`, async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on("unhandledRejection", onUnhandled);
    const { seams, victimSeam, mallory, tapped } = await startFuzzCast(SEED, SEAM_MAX);
    const supply = new Map(seams.map((s) => [ReplicaId(s.self), 1_000n]));
    const nodes = seams.map((seam, k) =>
      heddleStatic({
        seam: k === 0 ? tapped.seam : seam, self: ReplicaId(seam.self), root: g("root"), supply, topology: FLAT,
        config: {
          policy: { quantum: 10n }, maxHoldingsPerPeer: 10_000n, timers: realTimers, random: seededRandom(SEED * 10 + k), store: memoryStore(),
          antiEntropyIntervalMs: 200, maxFrameBytes: NODE_MAX, maxDemandEntries: MAX_DEMAND_ENTRIES,
        },
      }),
    );
    const victim = nodes[0]!;
    const honestIds = seams.map((x) => x.self);
    const violations: string[] = [];
    const checkConservation = (when: string) => {
      for (const n of nodes) {
        const c = conservation(n.ledger.get());
        if (c.minted !== c.held + c.leafSpent) violations.push(`${when}: ${n.self} minted ${c.minted} ≠ held ${c.held} + leaf-spent ${c.leafSpent}`);
        // Only the honest peers' own holdings must stay non-negative: a hostile value can name any replica
        // (mallory's own id, or a garbage id a mutation made of a string in the value) and give it negative holdings.
        const l = n.ledger.get();
        const honestNegative = l.groups().flatMap((grp) => honestIds.filter((id) => l.holdings(grp, ReplicaId(id)) < 0n).map((id) => `${grp}/${id}`));
        if (honestNegative.length > 0) violations.push(`${when}: ${n.self} negative honest holdings ${honestNegative.join(", ")}`);
      }
    };
    let stopLoad = false;
    let rounds = 0;
    const load = (async () => {
      const rnd = seededRandom(SEED * 100);
      const open: ReservationId[][] = nodes.map(() => []);
      while (!stopLoad) {
        nodes.forEach((n, k) => honestStep(n, open[k]!, rnd));
        checkConservation(`round ${rounds}`);
        rounds++;
        await sleep(10);
      }
    })();
    try {
      await until(() => seams.every((s) => s.peers.get().size === 2), "full mesh");
      const fuzzer = new FrameFuzzer(
        { mallory: mallory.self, others: seams.map((s) => s.self), genesis: victim.genesisDigest, nodeMaxFrameBytes: NODE_MAX, seamMaxFrameBytes: SEAM_MAX, maxDemandEntries: MAX_DEMAND_ENTRIES, maxClaimsPerSlot: MAX_SLOT_CLAIMS },
        seededRandom(SEED),
      );
      const hostile = new HostilePeer({ fuzzer, mallory, addr: victimSeam.addrs()[0]!, victim: victimSeam, delivered: tapped.count, seed: SEED });
      await hostile.connect();
      const tally = hostile.tally;
      const seamBase = victimSeam.counters();
      const rejectedBase = victim.metrics().framesRejected;
      const overflowBase = victim.metrics().peer.ledger.valueOverflows;
      let nextReport = 100_000;
      const t0 = Date.now();
      const progress = (n: number) => {
        if (n < nextReport) return;
        nextReport += 100_000;
        console.log(`fuzz-frames progress: ${n} frames, ${Date.now() - t0}ms, victim got ${tapped.count()}`);
      };
      const send = (limit: number) => hostile.send(limit, progress);

      const check = (when: string) => {
        const seam = victimSeam.counters();
        const rejected = victim.metrics().framesRejected;
        const got = Object.fromEntries(REJECT_REASONS.map((r) => [r, rejected[r] - rejectedBase[r]])) as Record<RejectReason, number>;
        // The one stateful refusal: a value the readers accept but whose join would overflow an aggregate
        // (ledger.md I-15) is counted as bad-value and, on its own, as valueOverflows.
        const overflows = victim.metrics().peer.ledger.valueOverflows - overflowBase;
        expect(overflows).toBeLessThanOrEqual(tally.acceptedValues);
        expect(got, `${when}: rejections by reason (seed ${SEED})`).toEqual({ ...tally.rejected, "bad-value": tally.rejected["bad-value"] + overflows });
        expect(tapped.count(), when).toBe(tally.delivered);
        expect(seam.handlerErrors, when).toBe(0);
        expect(seam.oversize - seamBase.oversize, `${when}: streams aborted for an oversize prefix`).toBe(tally.ends.oversize);
        expect(seam.badPrefix - seamBase.badPrefix, `${when}: streams aborted for an endless prefix`).toBe(tally.ends.malformed);
        expect(victim.metrics().failed, when).toBe(false);
        expect(unhandled, when).toEqual([]);
      };

      await send(WARMUP);
      check("after warm-up");
      const heapBefore = heap();
      const t1 = Date.now();
      await send(FRAMES);
      const ms = Date.now() - t1;
      // cut frames are counted when the victim sees the stream's end, which may trail its last frame
      await until(() => victimSeam.counters().cutFrames - seamBase.cutFrames === tally.ends.cut, "cut frames counted");
      check("after the run");
      const heapAfter = heap();

      stopLoad = true;
      await load;
      await until(() => nodes.every((n) => n.ledger.get().equals(victim.ledger.get())), "honest peers converge");
      checkConservation("converged");
      expect(violations).toEqual([]);
      expect(rounds).toBeGreaterThan(10);
      for (const n of nodes.slice(1)) expect(Object.values(n.metrics().framesRejected).reduce((a, b) => a + b, 0)).toBe(0);
      const families = [...tally.families].sort((a, b) => b[1] - a[1]).map(([f, n]) => `${f}=${n}`).join(" ");
      console.log(
        `fuzz-frames seed=${SEED} frames=${tally.delivered} accepted=${tally.accepted} rejected=${tally.rejectedTotal()} ` +
          `streams: oversize=${tally.ends.oversize} open-retries=${hostile.openRetries} endless=${tally.ends.malformed} cut=${tally.ends.cut} clean=${tally.ends.clean} ` +
          `value-overflows=${victim.metrics().peer.ledger.valueOverflows - overflowBase} time=${ms}ms heap ${(heapBefore / 2 ** 20).toFixed(1)}→${(heapAfter / 2 ** 20).toFixed(1)} MiB honest rounds=${rounds}\n` +
          `  by reason ${JSON.stringify(tally.rejected)}\n  families ${families}`,
      );
      expect(heapAfter).toBeLessThanOrEqual(1.5 * heapBefore);
    } finally {
      stopLoad = true;
      await load.catch(() => {});
      for (const n of nodes) await n.shutdown();
      for (const s of seams) await s.close();
      await mallory.stop();
      process.off("unhandledRejection", onUnhandled);
    }
  }, Math.max(120_000, FRAMES * 10)); // a guard, not a figure: 1M frames outran 2 ms per frame at load 14–26
});
