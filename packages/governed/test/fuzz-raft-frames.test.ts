import { describe, expect, it } from "vitest";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { heddleStatic, memoryStore, MemoryNetwork, realTimers, REJECT_REASONS, seededRandom, type RejectReason, type ReservationId } from "@heddle/node";
import { sleep } from "@heddle/seam/testing";
import { heddleGoverned, memoryRaftStorage, raftChannelTransport, raftNode, type GovernedHeddleNode, type RaftNode, type RaftStorage } from "../src/index.ts";
import { FrameFuzzer } from "../../node/test/support/frame-fuzz.ts";
import { HostilePeer, heapAfterGc, startFuzzCast, until as untilSeeded } from "../../node/test/support/fuzz-harness.ts";
import { conservation } from "../../node/test/node-sim.ts";
import { raftFuzzChannel } from "./support/raft-frame-fuzz.ts";

/**
 * Issue 17's frame fuzzer against a governed peer: the victim is a voter of a three-voter Raft cluster whose members
 * are governed peers over libp2p (Raft on tag 4 of the same seam as the ledger, demand, liveness and claims
 * channels), and the hostile roster peer ("mallory", a raw libp2p peer, not a Raft member) sends it
 * HEDDLE_FUZZ_FRAMES frames (20,000 in CI) on every channel — the node package's generator, with the Raft channel
 * added (`support/raft-frame-fuzz.ts`) — while the three peers keep reserving, scheduling and completing on the data
 * plane and keep committing claims through the log. Pass: nothing throws, no unhandled rejection; every frame
 * accounted for by reason (the data plane's counters exactly as the generator predicts; on Raft, every frame the
 * codec cannot read counted `undecodable`, every other refused `not-member`); heap after forced GC at most 1.5× the
 * heap after warm-up; conservation on every peer throughout; the Raft cluster commits in every quarter of the run,
 * never has two leaders in one term, and every member's committed entries are the same; the ledgers converge.
 */
const FRAMES = Number(process.env.HEDDLE_FUZZ_FRAMES ?? 20_000);
const SEED = Number(process.env.HEDDLE_SEED ?? 17);
const WARMUP = Math.min(2_000, Math.floor(FRAMES / 10));
const SEAM_MAX = 65_536;
const NODE_MAX = 32_768;
const MAX_DEMAND_ENTRIES = 64;
const MAX_CLAIMS_PER_SLOT = 64;
/** Applied indexes between ControlState snapshots: Raft compacts, so a long run's log does not read as heap growth. */
const SNAPSHOT_EVERY = 256;
const ROOT = GroupId("root");

const until = (cond: () => boolean, what: string, ms?: number) => untilSeeded(cond, what, SEED, ms);
const edge = (id: string, child: string) => ({ id: AttachmentId(id), parent: ROOT, child: GroupId(child), weight: Weight.of(1n) });

/** The genesis digest every governed peer shares (an empty supply and topology under `ROOT`). */
async function governedGenesis(): Promise<string> {
  const probe = heddleStatic({
    seam: new MemoryNetwork({ timers: realTimers, random: seededRandom(1) }).join("probe"), self: ReplicaId("probe"), root: ROOT, supply: new Map(), topology: [],
    config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1n, timers: realTimers, random: seededRandom(2), store: memoryStore() },
  });
  const digest = probe.genesisDigest;
  await probe.shutdown();
  return digest;
}

/** `storage` reporting every term it saves (Raft makes a term durable before acting in it, R-P1). */
function observedTerm(storage: RaftStorage, onTerm: (t: number) => void): RaftStorage {
  return { ...storage, saveTermAndVote: async (t, v) => { await storage.saveTermAndVote(t, v); onTerm(t); }, load: async () => { const s = await storage.load(); onTerm(s.term); return s; } };
}

/** Data-plane work of an honest peer: demand, a schedule round, reservations opened and completed. */
function honestStep(node: GovernedHeddleNode, open: ReservationId[], rnd: () => number): void {
  for (const x of ["e1", "e2"]) node.advertise(AttachmentId(x), { targetOutstanding: BigInt(50 + Math.floor(rnd() * 500)), maximumUsefulGrant: BigInt(10 + Math.floor(rnd() * 100)) });
  node.schedule(ROOT);
  const r = node.reserve(GroupId(rnd() < 0.5 ? "g1" : "g2"), BigInt(1 + Math.floor(rnd() * 5)));
  if (r.ok) open.push(r.id);
  while (open.length > 3) {
    const done = node.complete(open.shift()!, BigInt(Math.floor(rnd() * 2)));
    if (!done.ok && done.refusal.kind !== "closed") throw new Error(`complete refused: ${JSON.stringify(done.refusal)}`);
  }
}

describe("frame fuzzer against a governed peer's Raft member and data plane over libp2p (issue 17, governed.md §4.12, node.md §4.3)", () => {
  it(`${FRAMES} hostile frames on every channel: no crash, every frame accounted for, heap bounded, Raft keeps committing safely, honest peers conserve and converge`, async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on("unhandledRejection", onUnhandled);
    const { seams, victimSeam, mallory, tapped } = await startFuzzCast(SEED, SEAM_MAX);
    const ids = seams.map((s) => s.self);
    const members = new Set(ids);
    /** Leaders seen per term: Raft's election safety says one at most. */
    const leaders = new Map<number, Set<string>>();
    const terms = ids.map(() => 0);
    /** Per member, the committed entries it delivered, by index (term and command). */
    const committed = ids.map(() => new Map<number, string>());
    const rafts: RaftNode[] = [];
    const peers = seams.map((s, k) => {
      const seam = k === 0 ? tapped.seam : s;
      const raft = raftNode({
        cluster: { voters: ids, learners: [] },
        transport: raftChannelTransport(seam),
        storage: observedTerm(memoryRaftStorage(), (t) => (terms[k] = t)),
        timers: realTimers,
        random: seededRandom(SEED * 10 + 5 + k),
        // election timeouts for a shared 2-core machine: a stalled event loop should not look like a dead leader
        config: { electionTimeoutMinMs: 600, electionTimeoutMaxMs: 1_200, heartbeatMs: 100 },
        defer: (fn) => void setImmediate(fn),
        admit: (from) => members.has(from),
      });
      raft.role.subscribe((role) => {
        if (role !== "leader") return;
        const at = leaders.get(terms[k]!) ?? new Set<string>();
        at.add(ids[k]!);
        leaders.set(terms[k]!, at);
      });
      rafts.push(raft);
      void (async () => {
        for await (const c of raft.committedFrom(1)) {
          if (c.kind === "entry") committed[k]!.set(c.entry.index, `${c.entry.term}:${Buffer.from(c.entry.command).toString("base64")}`);
        }
      })();
      return heddleGoverned({
        seam, self: ReplicaId(ids[k]!), root: ROOT, raft, incarnation: `fuzz-${SEED}-${k}`, snapshotEvery: SNAPSHOT_EVERY,
        config: {
          policy: { quantum: 10n }, maxHoldingsPerPeer: 100_000n, timers: realTimers, random: seededRandom(SEED * 10 + k), store: memoryStore(),
          antiEntropyIntervalMs: 200, maxFrameBytes: NODE_MAX, maxDemandEntries: MAX_DEMAND_ENTRIES, claims: { maxClaimsPerSlot: MAX_CLAIMS_PER_SLOT },
        },
      });
    });
    const victim = peers[0]!;
    const violations: string[] = [];
    const checkConservation = (when: string) => {
      for (const p of peers) {
        const l = p.ledger.get();
        const c = conservation(l);
        if (c.minted !== c.held + c.leafSpent) violations.push(`${when}: ${p.self} minted ${c.minted} ≠ held ${c.held} + leaf-spent ${c.leafSpent}`);
        // a hostile value can give any replica it names negative holdings; the honest peers' own never go negative
        const negative = l.groups().flatMap((g) => ids.filter((id) => l.holdings(g, ReplicaId(id)) < 0n).map((id) => `${g}/${id}`));
        if (negative.length > 0) violations.push(`${when}: ${p.self} negative honest holdings ${negative.join(", ")}`);
      }
    };
    let stop = false;
    let rounds = 0;
    let dataPlane: Promise<void> = Promise.resolve();
    let controlPlane: Promise<void> = Promise.resolve();
    let applied = 0;
    const callErrors = new Map<string, number>();
    try {
      await until(() => seams.every((s) => s.peers.get().size === 2), "full mesh");
      // the log first: every peer enrolls itself, the tree's two edges, a supply for each peer
      await Promise.all(peers.map((p) => p.enroll(p.self, { timeoutMs: 30_000 })));
      for (const [id, child] of [["e1", "g1"], ["e2", "g2"]] as const) {
        await victim.prepare(edge(id, child), { timeoutMs: 30_000 });
        await victim.activate(AttachmentId(id), { timeoutMs: 30_000 });
      }
      for (const id of ids) await peers[1]!.mint(ReplicaId(id), 1_000n, { timeoutMs: 30_000 });
      await until(() => peers.every((p) => p.isWritable && p.controlView().mintedTotal() === 3_000n), "enrolled, tree and supply applied everywhere");

      dataPlane = (async () => {
        const rnd = seededRandom(SEED * 100);
        const open: ReservationId[][] = peers.map(() => []);
        while (!stop) {
          peers.forEach((p, k) => honestStep(p, open[k]!, rnd));
          checkConservation(`round ${rounds}`);
          rounds++;
          await sleep(10);
        }
      })();
      // The log keeps committing: claims taken and released in turn through each peer (bounded state, unlike mints).
      controlPlane = (async () => {
        for (let k = 0; !stop; k++) {
          const p = peers[k % peers.length]!;
          const holder = `honest-${k % 5}`;
          try {
            const took = await p.claims.take({ holder, resources: [{ key: `job-${k % 7}`, mode: "exclusive" }] }, { timeoutMs: 10_000 });
            if (took.kind === "applied") applied++;
            const released = await p.claims.releaseAll(holder, { timeoutMs: 10_000 });
            if (released.kind === "applied") applied++;
          } catch (err) {
            const name = (err as Error).name;
            callErrors.set(name, (callErrors.get(name) ?? 0) + 1);
          }
          await sleep(20);
        }
      })();

      const fuzzer = new FrameFuzzer(
        {
          mallory: mallory.self, others: ids, genesis: await governedGenesis(), nodeMaxFrameBytes: NODE_MAX, seamMaxFrameBytes: SEAM_MAX,
          maxDemandEntries: MAX_DEMAND_ENTRIES, maxClaimsPerSlot: MAX_CLAIMS_PER_SLOT, foreign: raftFuzzChannel({ members: ids, maxBodyBytes: SEAM_MAX - 1 }),
        },
        seededRandom(SEED),
      );
      const hostile = new HostilePeer({ fuzzer, mallory, addr: victimSeam.addrs()[0]!, victim: victimSeam, delivered: tapped.count, seed: SEED, yieldEvery: 50 });
      await hostile.connect();
      const tally = hostile.tally;
      const seamBase = victimSeam.counters();
      const rejectedBase = victim.metrics().framesRejected;
      const overflowBase = victim.metrics().peer.ledger.valueOverflows;
      const raftBase = new Map(rafts[0]!.refusedFrames());
      const raftRefused = (reason: string) => (rafts[0]!.refusedFrames().get(reason) ?? 0) - (raftBase.get(reason) ?? 0);

      const check = (when: string) => {
        const seam = victimSeam.counters();
        const rejected = victim.metrics().framesRejected;
        const got = Object.fromEntries(REJECT_REASONS.map((r) => [r, rejected[r] - rejectedBase[r]])) as Record<RejectReason, number>;
        const overflows = victim.metrics().peer.ledger.valueOverflows - overflowBase;
        expect(overflows).toBeLessThanOrEqual(tally.acceptedValues);
        expect(got, `${when}: data-plane rejections by reason (seed ${SEED})`).toEqual({ ...tally.rejected, "bad-value": tally.rejected["bad-value"] + overflows });
        // the Raft member: every frame from mallory refused, by reason; no honest member sends either kind
        expect({ undecodable: raftRefused("undecodable"), "not-member": raftRefused("not-member") }, `${when}: Raft refusals (seed ${SEED})`).toEqual({
          undecodable: tally.foreign.get("raft:undecodable") ?? 0,
          "not-member": tally.foreign.get("raft:not-member") ?? 0,
        });
        expect([...tally.foreign.keys()].filter((k) => k !== "raft:undecodable" && k !== "raft:not-member"), when).toEqual([]);
        expect(tapped.count(), when).toBe(tally.delivered);
        expect(seam.handlerErrors, when).toBe(0);
        expect(seam.oversize - seamBase.oversize, `${when}: streams aborted for an oversize prefix`).toBe(tally.ends.oversize);
        expect(seam.badPrefix - seamBase.badPrefix, `${when}: streams aborted for an endless prefix`).toBe(tally.ends.malformed);
        expect(victim.metrics().failed, when).toBe(false);
        expect(unhandled, when).toEqual([]);
      };

      await hostile.send(WARMUP);
      check("after warm-up");
      const heapBefore = heapAfterGc();
      const t1 = Date.now();
      // the run in quarters: the log must commit in each (the cluster is not stalled by what mallory sends)
      const commitAt = [rafts[0]!.commitIndex.get()];
      let nextReport = 100_000;
      const progress = (n: number) => {
        if (n < nextReport) return;
        nextReport += 100_000;
        console.log(`fuzz-raft-frames progress: ${n} frames, ${Date.now() - t1}ms, victim commit index ${rafts[0]!.commitIndex.get()}`);
      };
      for (let q = 1; q <= 4; q++) {
        await hostile.send(WARMUP + Math.ceil(((FRAMES - WARMUP) * q) / 4), progress);
        // a quarter can outrun a round trip of the log at small sizes: wait (bounded) for one more commit
        const before = commitAt[q - 1]!;
        await until(() => rafts[0]!.commitIndex.get() > before, `the log commits in quarter ${q}`, 30_000);
        commitAt.push(rafts[0]!.commitIndex.get());
      }
      const ms = Date.now() - t1;
      await until(() => victimSeam.counters().cutFrames - seamBase.cutFrames === tally.ends.cut, "cut frames counted");
      check("after the run");
      const heapAfter = heapAfterGc();

      stop = true;
      await dataPlane;
      await controlPlane;
      await until(() => peers.every((p) => p.ledger.get().equals(victim.ledger.get())), "honest peers converge");
      await until(() => rafts.every((r) => r.commitIndex.get() === rafts[0]!.commitIndex.get()), "members at one commit index");
      checkConservation("converged");
      expect(violations).toEqual([]);
      expect(rounds).toBeGreaterThan(10);
      for (const p of peers.slice(1)) expect(Object.values(p.metrics().framesRejected).reduce((a, b) => a + b, 0)).toBe(0);
      for (const r of rafts.slice(1)) expect(Object.fromEntries(r.refusedFrames())).toEqual({});
      // election safety: at most one leader per term
      const twoLeaders = [...leaders].filter(([, who]) => who.size > 1);
      expect(twoLeaders, `terms with two leaders (seed ${SEED})`).toEqual([]);
      // log matching on what was committed: every index two members both delivered carries the same entry
      let compared = 0;
      committed.forEach((mine, i) => {
        for (const [index, entry] of mine) {
          for (const other of committed.slice(i + 1)) {
            const o = other.get(index);
            if (o === undefined) continue;
            compared++;
            expect(o, `committed entry ${index} (seed ${SEED})`).toBe(entry);
          }
        }
      });
      expect(compared).toBeGreaterThan(0);
      expect(applied).toBeGreaterThan(0);
      const families = [...tally.families].sort((a, b) => b[1] - a[1]).map(([f, n]) => `${f}=${n}`).join(" ");
      console.log(
        `fuzz-raft-frames seed=${SEED} frames=${tally.delivered} accepted=${tally.accepted} rejected=${tally.rejectedTotal()} ` +
          `raft: undecodable=${raftRefused("undecodable")} not-member=${raftRefused("not-member")} ` +
          `streams: oversize=${tally.ends.oversize} open-retries=${hostile.openRetries} endless=${tally.ends.malformed} cut=${tally.ends.cut} clean=${tally.ends.clean} ` +
          `value-overflows=${victim.metrics().peer.ledger.valueOverflows - overflowBase} time=${ms}ms heap ${(heapBefore / 2 ** 20).toFixed(1)}→${(heapAfter / 2 ** 20).toFixed(1)} MiB ` +
          `honest rounds=${rounds} control calls applied=${applied} errors=${JSON.stringify(Object.fromEntries(callErrors))} ` +
          `commit index by quarter ${commitAt.join("→")} terms=${[...leaders.keys()].join(",")} committed entries compared=${compared}\n` +
          `  by reason ${JSON.stringify(tally.rejected)}\n  families ${families}`,
      );
      expect(heapAfter).toBeLessThanOrEqual(1.5 * heapBefore);
    } finally {
      stop = true;
      await dataPlane.catch(() => {});
      await controlPlane.catch(() => {});
      for (const p of peers) await p.shutdown();
      for (const s of seams) await s.close();
      await mallory.stop();
      process.off("unhandledRejection", onUnhandled);
    }
  }, Math.max(180_000, FRAMES * 10)); // a guard, not a figure
});
