/**
 * governed.md §5.4 control-plane acceptance tests C3–C13, by name (C1 and C2 run over ≥ 200 seeds in their own
 * files; C14 is the determinism check of the seeded simulation). Multi-peer tests run production
 * `GovernedHeddleNode`s over `MemoryNetwork` + `VirtualTimers`; the tests that need Raft to misbehave on cue use a
 * scripted single-member `StubRaft`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EntitlementLedger, GroupId } from "@heddle/ledger";
import { memoryStore, MemoryNetwork, seededRandom, sqliteStore } from "@heddle/node";
import { VirtualTimers } from "@heddle/seam/testing";
import type { HeddleStore } from "@heddle/node";
import {
  ControlPlaneHaltedError,
  encodeEnvelope,
  heddleGoverned,
  IncarnationReusedError,
  OutcomeUnknownError,
  raftChannelTransport,
  raftNode,
  sqliteRaftStorage,
} from "../src/index.ts";
import type { ControlOutcome, GovernedHeddleNode, RaftNode, RaftStorage } from "../src/index.ts";
import { e, g, GovernedCluster, r, rec, settleOn, testConfig } from "./support/governed-cluster.ts";
import { StubRaft } from "./support/stub-raft.ts";
import { Single } from "./support/single.ts";

const HUNGRY = { targetOutstanding: 1_000n, maximumUsefulGrant: 1_000n };
const applied = (o: ControlOutcome) => expect(o.kind, JSON.stringify(o, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))).toBe("applied");
const conflictOf = (o: ControlOutcome) => (o.kind === "conflict" ? o.conflict : null);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

describe("§5.4 control-plane acceptance", () => {
  it("C3 non-overlapping reshapes do not contend: concurrent activations of two children from different nodes both apply", async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const c = new GovernedCluster({ seed, voters: ["n1", "n2", "n3"], faults: { dropRate: 0.05, duplicateRate: 0.05, delayMs: [1, 8] } });
      await c.elect();
      applied(await c.settle(c.gov("n1").prepare(rec("e1", "root", "c1"))));
      applied(await c.settle(c.gov("n2").prepare(rec("e2", "root", "c2"))));
      const [a, b] = await c.settle(Promise.all([c.gov("n1").activate(e("e1")), c.gov("n3").activate(e("e2"))]));
      applied(a);
      applied(b);
      const top = Math.max(a.index!, b.index!);
      await c.until(() => c.allApplied(top) && c.ledgersConverged(), 10_000, "convergence");
      for (const p of c.live()) {
        expect(p.gov.controlView().liveInbound(g("c1"))).toEqual(["e1"]);
        expect(p.gov.controlView().liveInbound(g("c2"))).toEqual(["e2"]);
        expect(p.gov.ledger.get().lifecycle(e("e1"))).toBe("ACTIVE");
        expect(p.gov.ledger.get().lifecycle(e("e2"))).toBe("ACTIVE");
      }
      await c.shutdown();
    }
  }, 60_000);

  it("C4(a) spend path unaffected: with a control act in flight on a Raft node whose propose never answers, every data-plane call completes and makes zero Raft calls", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    const gov = s.gov;
    for (const p of [() => gov.mint(r("n1"), 1_000n), () => gov.prepare(rec("e1", "root", "g1")), () => gov.activate(e("e1")), () => gov.enroll(r("n1"))]) applied(await s.settle(p()));
    s.raft.plan.push("hang");
    const inFlight = gov.mint(r("n1"), 5n, { timeoutMs: 60_000 });
    let settled = false;
    void inFlight.then(
      () => (settled = true),
      () => (settled = true),
    );
    await s.run(5);
    const before = new Map(s.raft.calls);
    gov.advertise(e("e1"), HUNGRY);
    const sch = gov.schedule(g("root"));
    expect(sch.grants.length).toBeGreaterThan(0);
    const res = gov.reserve(g("g1"), 10n);
    expect(res.ok).toBe(true);
    if (res.ok) expect(gov.complete(res.id, 7n)).toMatchObject({ ok: true, charged: 7n });
    const res2 = gov.reserve(g("g1"), 5n);
    if (res2.ok) expect(gov.cancel(res2.id)).toMatchObject({ ok: true });
    expect(gov.boundMetrics(g("root")).isConsistent).toBe(true);
    void gov.ledger.get().holdings(g("g1"), r("n1"));
    expect(s.raft.calls).toEqual(before);
    expect(settled).toBe(false);
  });

  it("C5 the gate ignores gossip-ahead state: a data-plane view showing eA CLOSING then RETIRED does not let eB activate", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    const gov = s.gov;
    applied(await s.settle(gov.prepare(rec("eA", "root", "c"))));
    applied(await s.settle(gov.prepare(rec("eB", "root", "c"))));
    applied(await s.settle(gov.activate(e("eA"))));
    // a peer that saw eA close and retire (not through the log) gossips it
    const x = s.x;
    // its record too: gossip may bring eA's ACTIVE state ahead of its record, and close needs the record
    await s.until(() => x.ledger.get().record(e("eA")) !== null && x.ledger.get().lifecycle(e("eA")) === "ACTIVE");
    const closed = x.ledger.get().close(e("eA"));
    if (!closed.ok) throw new Error(closed.refusal.message);
    x.controlSink().publish(closed.patch);
    const retired = x.ledger.get().retire(e("eA"));
    if (!retired.ok) throw new Error(retired.refusal.message);
    x.controlSink().publish(retired.patch);
    await s.until(() => gov.ledger.get().lifecycle(e("eA")) === "RETIRED");
    const out = await s.settle(gov.activate(e("eB")));
    expect(conflictOf(out)).toEqual({ reason: "dualInbound", child: "c", incumbent: "eA", rejected: "eB" });
    expect(gov.controlView().liveInbound(g("c"))).toEqual(["eA"]);
    expect(gov.controlView().lifecycle(e("eA"))).toBe("ACTIVE");
    expect(gov.ledger.get().lifecycle(e("eB"))).toBe("PREPARED");
  });

  it("C6 exactly-once under retry: Raft commits the entry but the first attempt throws LeadershipLostError; one mint applies, the log holds it twice", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    s.raft.plan.push("append-then-lose", "commit");
    const out = await s.settle(s.gov.mint(r("n1"), 100n));
    applied(out);
    expect(s.gov.controlView().mintedTotal()).toBe(100n);
    await s.until(() => s.gov.ledger.get().mintedTotal() === 100n);
    const same = s.raft.log.filter((x) => x.key?.client === out.key!.client && x.key.seq === out.key!.seq);
    expect(same.map((x) => x.index)).toEqual([1, 2]);
    expect(out.index).toBe(1); // the first attempt's entry decided it; the second replayed the recorded outcome
    expect(s.raft.calls.get("propose")).toBe(2);
  });

  it("C7 timeout then keyed retry: the retry returns the first outcome (100 in total); a retry without the key is a new act (200)", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    s.raft.plan.push("stall");
    let err: unknown;
    await s.settle(s.gov.mint(r("n1"), 100n, { timeoutMs: 500 }).catch((x: unknown) => (err = x)));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    const key = (err as OutcomeUnknownError).key!;
    expect(key.client).toMatch(/^auto:n1:/);
    expect(s.gov.controlView().mintedTotal()).toBe(0n);
    s.raft.commitAll(); // Raft recovers: the first proposal commits
    await s.until(() => s.gov.controlView().mintedTotal() === 100n);
    const first = s.gov.controlView().outcomeOf(key);
    const again = await s.settle(s.gov.mint(r("n1"), 100n, { key }));
    expect(again).toEqual(first);
    expect(s.gov.controlView().mintedTotal()).toBe(100n);
    applied(await s.settle(s.gov.mint(r("n1"), 100n)));
    expect(s.gov.controlView().mintedTotal()).toBe(200n);
    // the auto floor has passed the retried seq: one more retry under it is stale and changes nothing
    expect(conflictOf(await s.settle(s.gov.mint(r("n1"), 100n, { key })))).toEqual({ reason: "stale", key });
    // a durable client's key reused for another command is keyReuse, and changes nothing
    const ops = { client: "ops", seq: 1 };
    applied(await s.settle(s.gov.mint(r("n1"), 1n, { key: ops })));
    expect(conflictOf(await s.settle(s.gov.mint(r("n1"), 2n, { key: ops })))).toEqual({ reason: "keyReuse", key: ops });
    expect(s.gov.controlView().mintedTotal()).toBe(201n);
  });

  it("C8 restart: incarnations A and B mint 100 and 40 without colliding; a third process reusing B is refused IncarnationReusedError", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-c8-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(3) });
    const cluster = { voters: ["n1"], learners: [] };
    let seam = net.join("n1");
    const boot = (incarnation: string, draw: number): { gov: GovernedHeddleNode; raft: RaftNode } => {
      const storage: RaftStorage = sqliteRaftStorage(join(dir, "raft.db"));
      const raft = raftNode({ cluster, transport: raftChannelTransport(seam), storage, timers, random: seededRandom(draw) });
      const store: HeddleStore = sqliteStore(join(dir, "node.db"));
      return { raft, gov: heddleGoverned({ seam, self: r("n1"), root: g("root"), config: testConfig(timers, seededRandom(draw + 1), store), raft, incarnation }) };
    };
    const settle = settleOn(timers);
    const restart = async (gov: GovernedHeddleNode): Promise<void> => {
      await settle(gov.shutdown());
      net.crash("n1", "silent");
      seam = net.restart("n1");
    };
    const a = boot("A", 10);
    applied(await settle(a.gov.mint(r("n1"), 100n)));
    await restart(a.gov);
    const b = boot("B", 20);
    await settle(b.gov.sync());
    expect(b.gov.controlView().mintedTotal()).toBe(100n);
    const m40 = await settle(b.gov.mint(r("n1"), 40n));
    applied(m40);
    expect(m40.kind === "applied" && m40.mintId).toBe("mint:auto:n1:B:1");
    expect(b.gov.controlView().mintedTotal()).toBe(140n);
    await restart(b.gov);
    const b2 = boot("B", 30);
    await settle(b2.gov.sync());
    expect(b2.gov.controlView().mintedTotal()).toBe(140n);
    await expect(settle(b2.gov.mint(r("n1"), 1n))).rejects.toBeInstanceOf(IncarnationReusedError);
    await settle(b2.gov.sync());
    expect(b2.gov.controlView().mintedTotal()).toBe(140n);
    expect(b2.gov.ledger.get().mintedTotal()).toBe(140n);
    await settle(b2.gov.shutdown());
  }, 60_000);

  it("C9 validation outcomes through a 3-voter cluster", async () => {
    const c = new GovernedCluster({ seed: 9, voters: ["n1", "n2", "n3"] });
    await c.elect();
    const n = (i: number) => c.gov(`n${i}`);
    const go = (p: Promise<ControlOutcome>) => c.settle(p);
    expect(conflictOf(await go(n(1).activate(e("nope"))))).toEqual({ reason: "unknownEdge", edge: "nope" });
    expect(conflictOf(await go(n(2).close(e("nope"))))).toEqual({ reason: "unknownEdge", edge: "nope" });
    applied(await go(n(1).prepare(rec("e1", "a", "b"))));
    expect(await go(n(3).prepare(rec("e1", "a", "b")))).toMatchObject({ kind: "applied", noop: true });
    expect(conflictOf(await go(n(2).prepare(rec("e1", "a", "b", 2n))))).toMatchObject({ reason: "recordMismatch", edge: "e1" });
    expect(conflictOf(await go(n(1).prepare(rec("s", "q", "q"))))).toEqual({ reason: "invalidRecord", edge: "s", detail: "selfLoop" });
    expect(conflictOf(await go(n(1).prepare(rec("t", "q", "root"))))).toEqual({ reason: "invalidRecord", edge: "t", detail: "rootAsChild" });
    for (const step of [() => n(1).prepare(rec("e9", "root", "z")), () => n(2).activate(e("e9")), () => n(3).close(e("e9")), () => n(1).retire(e("e9"))]) applied(await go(step()));
    expect(conflictOf(await go(n(2).activate(e("e9"))))).toEqual({ reason: "lifecycleRegression", edge: "e9", current: "RETIRED", requested: "ACTIVE" });
    applied(await go(n(1).activate(e("e1"))));
    expect(conflictOf(await go(n(3).retire(e("e1"))))).toEqual({ reason: "notClosing", edge: "e1", current: "ACTIVE" });
    applied(await go(n(1).prepare(rec("e2", "b", "a"))));
    expect(conflictOf(await go(n(2).activate(e("e2"))))).toEqual({ reason: "wouldCycle", edge: "e2", path: ["e1"] });
    expect(conflictOf(await go(n(1).close(e("e2"))))).toEqual({ reason: "notActive", edge: "e2", current: "PREPARED" });
    await c.shutdown();
  }, 60_000);

  it("C10 roster: self-enrolls and a self-depart agree everywhere at every index; a third-party depart is notSelf; a minority depart never commits", async () => {
    const c = new GovernedCluster({ seed: 10, voters: ["n1", "n2", "n3"] });
    await c.elect();
    for (const id of ["n1", "n2", "n3"]) applied(await c.settle(c.gov(id).enroll(r(id))));
    applied(await c.settle(c.gov("n2").depart()));
    // n1 proposes a depart of n3 through a hand-built envelope
    const key = { client: "hand", seq: 1 };
    const bytes = encodeEnvelope({ v: 1, key, ackFloor: 0, proposer: r("n1"), cmd: { op: "depart", replica: r("n3") } });
    const { index } = await c.settle(c.peer("n1").raft.propose(bytes, key));
    await c.until(() => c.allApplied(index), 5_000, "the hand-built depart to apply");
    for (const p of c.live()) {
      expect(conflictOf(p.gov.controlView().outcomeOf(key) as ControlOutcome)).toEqual({ reason: "notSelf", replica: "n3", proposer: "n1" });
    }
    const views = c.live().map((p) => p.gov.roster());
    const top = Math.min(...views.map((v) => v.appliedIndex));
    for (const v of views) {
      expect([...v.enrolledAt(top)].sort()).toEqual(["n1", "n3"]);
      for (let i = 0; i <= top; i++) expect([...v.enrolledAt(i)].sort()).toEqual([...views[0]!.enrolledAt(i)].sort());
    }
    await c.shutdown();

    // 5 voters: a 2-node minority tries to depart
    const d = new GovernedCluster({ seed: 11, voters: ["n1", "n2", "n3", "n4", "n5"] });
    await d.elect();
    for (const id of ["n1", "n2", "n3", "n4", "n5"]) applied(await d.settle(d.gov(id).enroll(r(id))));
    const enrolledBefore = Math.max(...d.live().map((p) => p.gov.controlView().appliedIndex));
    await d.until(() => d.allApplied(enrolledBefore), 5_000, "enrolls everywhere");
    d.net.partition([["n1", "n2"], ["n3", "n4", "n5"]], "silent");
    const minority = d.gov("n1").depart({ timeoutMs: 3_000 });
    await expect(d.settle(minority, 10_000)).rejects.toBeInstanceOf(OutcomeUnknownError);
    for (const p of d.live()) expect([...p.gov.enrolledReplicas()].sort()).toEqual(["n1", "n2", "n3", "n4", "n5"]);
    d.net.heal();
    await d.run(2_000);
    const view = await d.settle(d.gov("n3").sync());
    await d.until(() => d.allApplied(view.appliedIndex), 5_000, "catch-up after heal");
    for (const p of d.live()) expect([...p.gov.enrolledReplicas()].sort()).toEqual(["n1", "n2", "n3", "n4", "n5"]);
    await d.shutdown();
  }, 60_000);

  it("C11 retire drain gate: outstanding > 0, or opposite non-zero positions, refuse locally (index null) and leave the edge CLOSING; a drained edge retires", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    const gov = s.gov;
    const setup = [
      () => gov.mint(r("n1"), 1_000n),
      () => gov.mint(r("p"), 10n),
      () => gov.prepare(rec("e1", "root", "a")),
      () => gov.activate(e("e1")),
      () => gov.prepare(rec("e2", "root", "b")),
      () => gov.activate(e("e2")),
      () => gov.prepare(rec("e2b", "b", "b1")),
      () => gov.activate(e("e2b")),
      () => gov.prepare(rec("e3", "root", "c")),
      () => gov.activate(e("e3")),
      () => gov.enroll(r("n1")),
    ];
    for (const p of setup) applied(await s.settle(p()));
    // case 1: n1 delegates down e1, so e1 has outstanding entitlement in this node's view
    gov.advertise(e("e1"), HUNGRY);
    expect(gov.schedule(g("root")).grants.length).toBeGreaterThan(0);
    const out1 = gov.ledger.get().edge(e("e1"))!.outstanding;
    expect(out1).toBeGreaterThan(0n);
    applied(await s.settle(gov.close(e("e1"))));
    const nd1 = await gov.retire(e("e1"));
    expect(nd1).toMatchObject({ kind: "conflict", index: null, key: null, conflict: { reason: "notDrained", edge: "e1", outstanding: out1 } });
    expect((nd1 as unknown as { conflict: { positions: Map<string, bigint> } }).conflict.positions).toEqual(new Map([["n1", out1]]));
    // case 2: p delegates 10 down e2 and on down e2b, hands it to q inside b1, and q spends it there: e2's
    // outstanding is 0, but p's position on e2 is +10 and q's is −10 (ledger.md §6.1, §7.4 "Why per-replica")
    const x = s.x;
    await s.until(() => x.ledger.get().lifecycle(e("e2b")) === "ACTIVE" && x.ledger.get().mintedTotal() === 1_010n);
    const steps = [
      (l: EntitlementLedger) => l.delegate(r("p"), e("e2"), 10n),
      (l: EntitlementLedger) => l.delegate(r("p"), e("e2b"), 10n),
      (l: EntitlementLedger) => l.transfer(g("b1"), r("p"), r("q"), 10n),
      (l: EntitlementLedger) => l.spend(r("q"), g("b1"), 10n),
    ];
    for (const step of steps) {
      const m = step(x.ledger.get());
      if (!m.ok) throw new Error(m.refusal.message);
      x.controlSink().publish(m.patch);
    }
    await s.until(() => gov.ledger.get().edgePosition(e("e2"), r("q")) === -10n);
    expect(gov.ledger.get().edge(e("e2"))!.outstanding).toBe(0n);
    applied(await s.settle(gov.close(e("e2"))));
    const proposalsBefore = s.raft.calls.get("propose");
    const nd2 = await gov.retire(e("e2"));
    expect(nd2).toMatchObject({ kind: "conflict", index: null, key: null, conflict: { reason: "notDrained", edge: "e2", outstanding: 0n } });
    expect((nd2 as unknown as { conflict: { positions: Map<string, bigint> } }).conflict.positions).toEqual(new Map([["p", 10n], ["q", -10n]]));
    expect(s.raft.calls.get("propose")).toBe(proposalsBefore); // refused before proposing
    expect(gov.controlView().lifecycle(e("e1"))).toBe("CLOSING");
    expect(gov.controlView().lifecycle(e("e2"))).toBe("CLOSING");
    // a drained edge retires
    applied(await s.settle(gov.close(e("e3"))));
    applied(await s.settle(gov.retire(e("e3"))));
    expect(gov.controlView().lifecycle(e("e3"))).toBe("RETIRED");
    await s.until(() => gov.ledger.get().lifecycle(e("e3")) === "RETIRED");
  });

  it("C11 witness: a retire carries the proposer's slice of the edge with its writers' mints, so a replica that has only the retire patch validates clean", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    const gov = s.gov;
    for (const p of [() => gov.mint(r("n1"), 100n), () => gov.prepare(rec("e1", "root", "a")), () => gov.activate(e("e1")), () => gov.enroll(r("n1"))]) applied(await s.settle(p()));
    gov.advertise(e("e1"), HUNGRY);
    gov.schedule(g("root"));
    // n1 gives back what it was delegated: drained, with non-zero issued/returned slots
    const x = s.x;
    await s.until(() => x.ledger.get().edge(e("e1"))?.issued === gov.ledger.get().edge(e("e1"))?.issued);
    const back = x.ledger.get().release(r("n1"), e("e1"), gov.ledger.get().holdings(g("a"), r("n1")));
    if (!back.ok) throw new Error(back.refusal.message);
    x.controlSink().publish(back.patch);
    await s.until(() => gov.ledger.get().edge(e("e1"))!.outstanding === 0n);
    applied(await s.settle(gov.close(e("e1"))));
    const proposed = s.raft.log.length;
    applied(await s.settle(gov.retire(e("e1"))));
    const entry = s.raft.log[proposed]!;
    const text = new TextDecoder().decode(entry.command.subarray(5));
    const witness = EntitlementLedger.decode((JSON.parse(text) as { cmd: { witness: string } }).cmd.witness);
    expect(witness.edge(e("e1"))!.issued).toBeGreaterThan(0n);
    expect(witness.mintedTotal()).toBe(100n);
    // the projection's retire patch joined with the witness, alone on an empty replica, reports no conflict
    // what the retire published, alone on an empty replica (the RETIRED lifecycle with the witness), is clean
    const lone = EntitlementLedger.EMPTY.join(gov.ledger.get().projectEdge(e("e1"))).join(witness);
    expect(lone.lifecycle(e("e1"))).toBe("RETIRED");
    expect(lone.validate()).toEqual([]);
  });

  it("C12 writer gate: nothing is written before enroll(self) applies, the data plane writes after it, and stops again after depart()", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    const gov = s.gov;
    for (const p of [() => gov.mint(r("n1"), 100n), () => gov.prepare(rec("e1", "root", "g1")), () => gov.activate(e("e1"))]) applied(await s.settle(p()));
    await s.until(() => gov.ledger.get().lifecycle(e("e1")) === "ACTIVE");
    gov.advertise(e("e1"), HUNGRY);
    const bytes = gov.ledger.get().encode();
    expect(gov.isWritable).toBe(false);
    expect(gov.schedule(g("root"))).toEqual({ grants: [], seated: [], clamped: [] });
    expect(gov.reserve(g("g1"), 1n)).toEqual({ ok: false, refusal: { kind: "not-writable" } });
    await s.run(50);
    expect(gov.ledger.get().encode()).toBe(bytes); // no slot written
    applied(await s.settle(gov.enroll(r("n1"))));
    expect(gov.isWritable).toBe(true);
    expect(gov.schedule(g("root")).grants.length).toBeGreaterThan(0);
    expect(gov.reserve(g("g1"), 10n)).toMatchObject({ ok: true });
    applied(await s.settle(gov.depart()));
    expect(gov.isWritable).toBe(false);
    expect(gov.reserve(g("g1"), 1n)).toEqual({ ok: false, refusal: { kind: "not-writable" } });
    expect(gov.schedule(g("root")).grants).toEqual([]);
  });

  it("C12 a third party enrolling this replica does not open its gate", async () => {
    const c = new GovernedCluster({ seed: 12, voters: ["n1", "n2", "n3"] });
    await c.elect();
    applied(await c.settle(c.gov("n1").enroll(r("n2"))));
    await c.until(() => c.gov("n2").enrolledReplicas().has(r("n2")), 5_000, "n2 to see its enroll");
    expect(c.gov("n2").isWritable).toBe(false);
    expect(c.gov("n1").isWritable).toBe(false);
    applied(await c.settle(c.gov("n2").enroll(r("n2"))));
    expect(c.gov("n2").isWritable).toBe(true);
    await c.shutdown();
  }, 60_000);

  it("C13 foreign and malformed entries: foreign bytes are skipped (index advances, nothing published); tagged invalid JSON halts at its index", async () => {
    const c = new GovernedCluster({ seed: 13, voters: ["n1"] });
    const p = await c.elect();
    applied(await c.settle(p.gov.mint(r("n1"), 5n)));
    await c.run(20);
    const ledger = p.gov.ledger.get().encode();
    const { index: fi } = await c.settle(p.raft.propose(new TextEncoder().encode("some other consumer's bytes"), null));
    await c.until(() => p.gov.controlView().appliedIndex === fi, 2_000, "the foreign entry to be folded");
    await c.run(20);
    expect(p.gov.ledger.get().encode()).toBe(ledger);
    const bad = Uint8Array.from([0x48, 0x44, 0x4c, 0x43, 1, ...new TextEncoder().encode('{"v":1,')]);
    const badIndex = p.raft.propose(bad, null);
    let halted: unknown;
    const pending = p.gov.mint(r("n1"), 1n, { timeoutMs: 60_000 }).catch((x: unknown) => (halted = x)); // proposed after the bad entry: never applies
    const { index: mi } = await c.settle(badIndex);
    await c.settle(pending);
    expect(halted).toBeInstanceOf(ControlPlaneHaltedError);
    expect((halted as ControlPlaneHaltedError).index).toBe(mi);
    expect(p.gov.controlView().appliedIndex).toBe(mi - 1);
    await expect(p.gov.mint(r("n1"), 1n)).rejects.toBeInstanceOf(ControlPlaneHaltedError);
    await expect(p.gov.sync()).rejects.toBeInstanceOf(ControlPlaneHaltedError);
    expect(p.gov.controlView().mintedTotal()).toBe(5n);
    await c.shutdown();
  }, 60_000);
});

describe("reads and bookkeeping", () => {
  it("sync() on a follower proposes a barrier and returns a view that includes every act resolved before it began", async () => {
    const c = new GovernedCluster({ seed: 21, voters: ["n1", "n2", "n3"] });
    const leader = await c.elect();
    const follower = c.live().find((p) => p !== leader)!;
    applied(await c.settle(leader.gov.mint(r("n1"), 7n)));
    const before = follower.raft.commitIndex.get();
    const view = await c.settle(follower.gov.sync());
    expect(view.mintedTotal()).toBe(7n);
    expect(view.appliedIndex).toBeGreaterThan(before);
    const lv = await c.settle(leader.gov.sync());
    expect(lv.mintedTotal()).toBe(7n);
    await c.shutdown();
  }, 60_000);

  it("shutdown rejects pending calls with NodeShutdownError and later calls at once", async () => {
    const s = new Single();
    s.raft.plan.push("hang");
    const p = s.gov.mint(r("n1"), 1n);
    await s.run(2);
    await s.gov.shutdown();
    await expect(p).rejects.toMatchObject({ name: "NodeShutdownError" });
    await expect(s.gov.mint(r("n1"), 1n)).rejects.toMatchObject({ name: "NodeShutdownError" });
  });

  it("auto keys carry an ackFloor below every open seq, so a timed-out act stays retryable while later acts prune the rest", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    s.raft.plan.push("commit", "stall", "commit", "commit");
    applied(await s.settle(s.gov.mint(r("n1"), 1n)));
    const stalled = s.gov.mint(r("n1"), 2n, { timeoutMs: 200 }).catch((x: unknown) => x as OutcomeUnknownError);
    const err = await s.settle(stalled);
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    applied(await s.settle(s.gov.mint(r("n1"), 3n)));
    applied(await s.settle(s.gov.mint(r("n1"), 4n)));
    const client = (err as OutcomeUnknownError).key!.client;
    // seq 1 was resolved and pruned; seq 2 (unknown) keeps the floor at 2
    expect(s.gov.controlView().outcomeOf({ client, seq: 1 })).toBe("pruned");
    expect(s.gov.controlView().outcomeOf({ client, seq: 3 })).toMatchObject({ kind: "applied" });
    s.raft.commitAll();
    await s.until(() => s.gov.controlView().mintedTotal() === 10n);
    const retry = await s.settle(s.gov.mint(r("n1"), 2n, { key: (err as OutcomeUnknownError).key! }));
    applied(retry);
    expect(s.gov.controlView().mintedTotal()).toBe(10n);
  });

  it("publishes a ControlState snapshot every snapshotEvery applied indexes, restorable to an equal state", async () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(1) });
    const raft = new StubRaft("n1", timers);
    const gov = heddleGoverned({ seam: net.join("n1"), self: r("n1"), root: g("root"), config: testConfig(timers, seededRandom(2), memoryStore()), raft, incarnation: "s", snapshotEvery: 3 });
    for (let i = 0; i < 7; i++) await gov.mint(r("n1"), 1n);
    expect(raft.snapshots.map((x) => x.throughIndex)).toEqual([3, 6]);
    const { ControlState } = await import("../src/index.ts");
    const st = ControlState.decode(raft.snapshots[1]!.state, { root: GroupId("root") });
    expect(st.appliedIndex).toBe(6);
    expect(st.mintedTotal()).toBe(6n);
    await gov.shutdown();
  });

  it("revocation answers notShipped and reclaims nothing", async () => {
    const s = new Single();
    cleanups.push(() => s.shutdown());
    await expect(s.gov.revocation.revoke(r("n2"), g("root"))).resolves.toEqual({ kind: "notShipped" });
    expect(s.raft.totalCalls).toBe(1); // committedFrom only
  });
});
