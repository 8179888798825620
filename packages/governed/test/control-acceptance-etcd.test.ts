/**
 * governed.md §5.4's control-plane acceptance tests against the etcd backend (issue 18): three heddle members whose
 * control log is a real 3-member etcd cluster on loopback (started here from Debian's `etcd-server`), each member
 * reaching etcd through its own cuttable proxy. The same tests run against the embedded Raft in
 * `control-acceptance.test.ts` (and C1/C2 over seeds in their own files, C14 in `control-simulation.test.ts`); C2
 * and C3's concurrency and C6's lost-answer retry also run in `control-log-conformance.test.ts`.
 *
 * Where etcd differs: a "minority" is a heddle member cut off from etcd, or etcd itself without quorum (C1, C10).
 * C4(a)'s stalled propose is a member cut off from etcd, and the etcd log fails closed: once it has not heard from
 * etcd for `unavailableAfterMs` the writer gate closes, so data-plane calls still complete without touching the log
 * but `reserve`/`schedule` refuse (the embedded Raft keeps writing, governed.md §3.11). C4(b), the throughput
 * benchmark with and without control traffic, is a bench and exists for the embedded Raft only (`bench/control.ts`);
 * `bench/backends.ts` times control acts and claims pairs on both backends but not that ratio. C14's faults are
 * etcd's own (three heddle members proposing concurrently through three etcd members), not the simulation's seeded
 * network, so its seed (`HEDDLE_SEED`) fixes the command mix, not the interleaving.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AttachmentId, GroupId, ReplicaId } from "@heddle/ledger";
import type { EntitlementLedger } from "@heddle/ledger";
import { heddleStatic, memoryStore, realTimers, seededRandom } from "@heddle/node";
import type { HeddleNode } from "@heddle/node";
import { ControlPlaneHaltedError, encodeEnvelope, IncarnationReusedError, OutcomeUnknownError, outcomeJson } from "../src/index.ts";
import type { ControlLog, ControlOutcome, ControlState, LogEntry } from "../src/index.ts";
import { canonicalJson } from "../src/control/canonical-json.ts";
import { ControlModel } from "./support/control-model.ts";
import { EtcdCluster, sleep } from "./support/etcd-cluster.ts";
import { EtcdBackend } from "./support/log-backends.ts";
import { rec } from "./support/governed-cluster.ts";

const r = ReplicaId;
const e = AttachmentId;
const conflictOf = (o: ControlOutcome) => (o.kind === "conflict" ? o.conflict : null);
const applied = (o: ControlOutcome) => expect(o.kind, JSON.stringify(o, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))).toBe("applied");
const T = { timeoutMs: 20_000 };

let etcd: EtcdCluster | null = null;
let b: EtcdBackend | null = null;
beforeAll(async () => {
  etcd = await EtcdCluster.start(3);
}, 60_000);
afterAll(async () => {
  await etcd?.stop();
});
afterEach(async () => {
  await b?.close();
  b = null;
});
const start = async (): Promise<EtcdBackend> => (b = await EtcdBackend.start({ etcd: etcd! }));
const gov = (i: number) => b!.members[i - 1]!.gov;
const HUNGRY = { targetOutstanding: 1_000n, maximumUsefulGrant: 1_000n };
const g = GroupId;

/** Counts every call the governed node makes on member `i`'s log (the etcd counterpart of `StubRaft.calls`). */
function countLogCalls(i: number): Map<string, number> {
  const calls = new Map<string, number>();
  const log = b!.members[i]!.log as unknown as Record<string, unknown>;
  for (const m of ["propose", "readIndex", "committedFrom", "publishSnapshot", "close"] as const) {
    const f = log[m] as (...a: unknown[]) => unknown;
    log[m] = (...a: unknown[]) => {
      calls.set(m, (calls.get(m) ?? 0) + 1);
      return f.apply(log, a);
    };
  }
  return calls;
}

/** A static peer `x` on the members' network (empty genesis, as governed peers have) to gossip hand-made patches. */
function staticPeer(): HeddleNode {
  const x = heddleStatic({
    seam: b!.net.join("x"),
    self: ReplicaId("x"),
    root: g("root"),
    supply: new Map(),
    topology: [],
    config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000_000n, antiEntropyIntervalMs: 100, resendRetryMs: 200, fullStateRetryMs: 500, timers: realTimers, random: seededRandom(9), store: memoryStore() },
  });
  cleanups.push(() => x.shutdown());
  return x;
}
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

async function until(cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function publish(x: HeddleNode, m: ReturnType<EntitlementLedger["close"]>): void {
  if (!m.ok) throw new Error(m.refusal.message);
  x.controlSink().publish(m.patch);
}

describe("governed.md §5.4 on the etcd backend", () => {
  it("C1 split-brain mint impossible: a member cut off from etcd, and etcd without quorum, commit nothing; after healing, the keyed retry lands once", async () => {
    await start();
    // (a) member 3 cut off from etcd: its mint stays unresolved (then OutcomeUnknown); the others mint
    b!.disconnect(2);
    const key = { client: "c1", seq: 1 };
    const cut = gov(3).mint(r("m3"), 100n, { key, timeoutMs: 3_000 });
    applied(await gov(1).mint(r("m1"), 100n, T));
    await expect(cut).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(gov(3).controlView().mintedTotal()).toBe(0n);
    b!.reconnect(2);
    applied(await gov(3).mint(r("m3"), 100n, { key, ...T }));
    // (b) etcd loses quorum (2 of 3 members killed): nobody commits; the members' views stay put. Every member
    // first applies (a)'s mints: member 3's retry was acknowledged by member 3 alone, the others follow by watch.
    await until(() => [2, 3].every((i) => gov(i).controlView().mintedTotal() === gov(1).controlView().mintedTotal()) && gov(1).controlView().mintedTotal() >= 200n, "every member applied (a)'s mints");
    const before = gov(1).controlView().mintedTotal();
    await etcd!.kill(1);
    await etcd!.kill(2);
    const key2 = { client: "c1", seq: 2 };
    await expect(gov(1).mint(r("m1"), 100n, { key: key2, timeoutMs: 3_000 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    for (let i = 1; i <= 3; i++) expect(gov(i).controlView().mintedTotal()).toBe(before);
    etcd!.startMember(1);
    etcd!.startMember(2);
    await etcd!.ready();
    applied(await gov(1).mint(r("m1"), 100n, { key: key2, ...T }));
    const v = await gov(2).sync(T);
    await b!.applied(v.appliedIndex);
    for (let i = 1; i <= 3; i++) expect(gov(i).controlView().mintedTotal()).toBe(300n);
  }, 90_000);

  it("C2 overlapping reshapes serialize; C3 non-overlapping ones do not contend", async () => {
    await start();
    applied(await gov(1).prepare(rec("eA", "pA", "c"), T));
    applied(await gov(2).prepare(rec("eB", "pB", "c"), T));
    const [a, bb] = await Promise.all([gov(1).activate(e("eA"), T), gov(2).activate(e("eB"), T)]);
    const winner = a.kind === "applied" ? "eA" : "eB";
    const loser = winner === "eA" ? "eB" : "eA";
    expect([a.kind, bb.kind].sort()).toEqual(["applied", "conflict"]);
    expect(conflictOf(winner === "eA" ? bb : a)).toEqual({ reason: "dualInbound", child: "c", incumbent: winner, rejected: loser });
    applied(await gov(3).prepare(rec("e1", "root", "c1"), T));
    applied(await gov(3).prepare(rec("e2", "root", "c2"), T));
    const [x, y] = await Promise.all([gov(1).activate(e("e1"), T), gov(2).activate(e("e2"), T)]);
    applied(x);
    applied(y);
    const v = await gov(3).sync(T);
    await b!.applied(v.appliedIndex);
    for (let i = 1; i <= 3; i++) {
      expect(gov(i).controlView().liveInbound(GroupId("c"))).toEqual([winner]);
      expect(gov(i).controlView().liveInbound(GroupId("c1"))).toEqual(["e1"]);
      expect(gov(i).controlView().liveInbound(GroupId("c2"))).toEqual(["e2"]);
    }
  }, 60_000);

  it("C7 timeout then keyed retry returns the first outcome; a retry without the key is a new act", async () => {
    await start();
    b!.disconnect(0);
    const key = { client: "c7", seq: 1 };
    let err: unknown;
    try {
      await gov(1).mint(r("m1"), 100n, { key, timeoutMs: 1_000 });
    } catch (x) {
      err = x;
    }
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as OutcomeUnknownError).key).toEqual(key);
    b!.reconnect(0);
    const first = await gov(1).mint(r("m1"), 100n, { key, ...T });
    applied(first);
    expect(await gov(1).mint(r("m1"), 100n, { key, ...T })).toEqual(first);
    expect(gov(1).controlView().mintedTotal()).toBe(100n);
    applied(await gov(1).mint(r("m1"), 100n, T));
    expect(gov(1).controlView().mintedTotal()).toBe(200n);
  }, 60_000);

  it("C8 restart: a new incarnation replays and mints; a reused incarnation is refused after sync()", async () => {
    await start();
    const m = await b!.reopen(0, "inc-A");
    applied(await m.gov.mint(r("m1"), 100n, T));
    const m2 = await b!.reopen(0, "inc-B");
    await m2.gov.sync(T);
    applied(await m2.gov.mint(r("m1"), 40n, T));
    const m3 = await b!.reopen(0, "inc-B");
    await m3.gov.sync(T);
    await expect(m3.gov.mint(r("m1"), 1n, T)).rejects.toBeInstanceOf(IncarnationReusedError);
    expect(m3.gov.controlView().mintedTotal()).toBe(140n);
  }, 60_000);

  it("C9 validation outcomes", async () => {
    await start();
    const n = gov;
    expect(conflictOf(await n(1).activate(e("nope"), T))).toEqual({ reason: "unknownEdge", edge: "nope" });
    expect(conflictOf(await n(2).close(e("nope"), T))).toEqual({ reason: "unknownEdge", edge: "nope" });
    applied(await n(1).prepare(rec("e1", "a", "b"), T));
    expect(await n(3).prepare(rec("e1", "a", "b"), T)).toMatchObject({ kind: "applied", noop: true });
    expect(conflictOf(await n(2).prepare(rec("e1", "a", "b", 2n), T))).toMatchObject({ reason: "recordMismatch", edge: "e1" });
    expect(conflictOf(await n(1).prepare(rec("s", "q", "q"), T))).toEqual({ reason: "invalidRecord", edge: "s", detail: "selfLoop" });
    expect(conflictOf(await n(1).prepare(rec("t", "q", "root"), T))).toEqual({ reason: "invalidRecord", edge: "t", detail: "rootAsChild" });
    for (const step of [() => n(1).prepare(rec("e9", "root", "z"), T), () => n(2).activate(e("e9"), T), () => n(3).close(e("e9"), T), () => n(1).retire(e("e9"), T)]) applied(await step());
    expect(conflictOf(await n(2).activate(e("e9"), T))).toEqual({ reason: "lifecycleRegression", edge: "e9", current: "RETIRED", requested: "ACTIVE" });
    applied(await n(1).activate(e("e1"), T));
    expect(conflictOf(await n(3).retire(e("e1"), T))).toEqual({ reason: "notClosing", edge: "e1", current: "ACTIVE" });
    applied(await n(1).prepare(rec("e2", "b", "a"), T));
    expect(conflictOf(await n(2).activate(e("e2"), T))).toEqual({ reason: "wouldCycle", edge: "e2", path: ["e1"] });
  }, 60_000);

  it("C10 roster: self-enrolls and a self-depart agree everywhere at every index; a third-party depart is notSelf; a cut-off member's depart never commits", async () => {
    await start();
    for (let i = 1; i <= 3; i++) applied(await gov(i).enroll(r(`m${i}`), T));
    applied(await gov(2).depart(T));
    const key = { client: "hand", seq: 1 };
    const bytes = encodeEnvelope({ v: 1, key, ackFloor: 0, proposer: r("m1"), cmd: { op: "depart", replica: r("m3") } });
    const { index } = await b!.members[0]!.log.propose(bytes, key);
    await b!.applied(index);
    for (let i = 1; i <= 3; i++) expect(conflictOf(gov(i).controlView().outcomeOf(key) as ControlOutcome)).toEqual({ reason: "notSelf", replica: "m3", proposer: "m1" });
    b!.disconnect(2);
    await expect(gov(3).depart({ timeoutMs: 1_500 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await sleep(200);
    const views = b!.members.map((m) => m.gov.roster());
    const top = Math.min(...views.map((v) => v.appliedIndex));
    for (const v of views) {
      expect([...v.enrolledAt(top)].sort()).toEqual(["m1", "m3"]);
      for (let i = 0; i <= top; i++) expect([...v.enrolledAt(i)].sort()).toEqual([...views[0]!.enrolledAt(i)].sort());
    }
    b!.reconnect(2);
  }, 60_000);

  it("C12 writer gate: nothing granted before enroll(self), reserve works after, refused again after depart()", async () => {
    await start();
    const g1 = gov(1);
    applied(await g1.mint(r("m1"), 1_000n, T));
    applied(await g1.prepare(rec("w", "root", "leaf"), T));
    applied(await g1.activate(e("w"), T));
    g1.advertise(e("w"), { targetOutstanding: 1_000n, maximumUsefulGrant: 1_000n });
    expect(g1.schedule(GroupId("root")).grants).toEqual([]);
    expect(g1.reserve(GroupId("leaf"), 1n)).toEqual({ ok: false, refusal: { kind: "not-writable" } });
    applied(await g1.enroll(r("m1"), T));
    let granted = false;
    for (let t = 0; t < 100 && !granted; t++) {
      granted = g1.schedule(GroupId("root")).grants.length > 0;
      if (!granted) await sleep(20);
    }
    expect(granted).toBe(true);
    let ok = false;
    for (let t = 0; t < 100 && !ok; t++) {
      ok = g1.reserve(GroupId("leaf"), 1n).ok;
      if (!ok) await sleep(20);
    }
    expect(ok).toBe(true);
    applied(await g1.depart(T));
    expect(g1.reserve(GroupId("leaf"), 1n)).toEqual({ ok: false, refusal: { kind: "not-writable" } });
  }, 60_000);

  it("C13 foreign entries are skipped; a tagged malformed entry halts every member at its index", async () => {
    await start();
    applied(await gov(1).mint(r("m1"), 5n, T));
    const { index: fi } = await b!.members[0]!.log.propose(new TextEncoder().encode("some other consumer's bytes"), null);
    await b!.applied(fi);
    const bad = Uint8Array.from([0x48, 0x44, 0x4c, 0x43, 1, ...new TextEncoder().encode('{"v":1,')]);
    const { index: bi } = await b!.members[1]!.log.propose(bad, null);
    for (let i = 1; i <= 3; i++) {
      let halted: unknown;
      for (let t = 0; t < 200 && halted === undefined; t++) {
        halted = await gov(i).sync({ timeoutMs: 500 }).then(() => undefined, (x: unknown) => (x instanceof ControlPlaneHaltedError ? x : undefined));
      }
      expect(halted).toBeInstanceOf(ControlPlaneHaltedError);
      expect((halted as ControlPlaneHaltedError).index).toBe(bi);
      expect(gov(i).controlView().appliedIndex).toBe(bi - 1);
      expect(gov(i).controlView().mintedTotal()).toBe(5n);
    }
  }, 60_000);

  it("C4(a) spend path unaffected: with a control act in flight on a member cut off from etcd, every data-plane call completes and makes zero log calls; once the log reports etcd unavailable the gate fails closed", async () => {
    await start();
    const g1 = gov(1);
    for (const p of [() => g1.mint(r("m1"), 1_000n, T), () => g1.prepare(rec("e1", "root", "g1"), T), () => g1.activate(e("e1"), T), () => g1.enroll(r("m1"), T)]) applied(await p());
    const calls = countLogCalls(0);
    b!.disconnect(0);
    const inFlight = g1.mint(r("m1"), 5n, { timeoutMs: 60_000 });
    let settled = false;
    void inFlight.then(
      () => (settled = true),
      () => (settled = true),
    );
    await sleep(20);
    expect(calls.get("propose")).toBeGreaterThanOrEqual(1); // the mint is in flight (its attempts retry while cut off)
    const before = new Map(calls);
    // still within unavailableAfterMs: the gate is open, the data plane works on its own
    expect(b!.members[0]!.log.available!.get()).toBe(true);
    g1.advertise(e("e1"), HUNGRY);
    const sch = g1.schedule(g("root"));
    expect(sch.grants.length).toBeGreaterThan(0);
    const res = g1.reserve(g("g1"), 10n);
    expect(res.ok).toBe(true);
    if (res.ok) expect(g1.complete(res.id, 7n)).toMatchObject({ ok: true, charged: 7n });
    const res2 = g1.reserve(g("g1"), 5n);
    if (res2.ok) expect(g1.cancel(res2.id)).toMatchObject({ ok: true });
    expect(g1.boundMetrics(g("root")).isConsistent).toBe(true);
    void g1.ledger.get().holdings(g("g1"), r("m1"));
    expect(calls).toEqual(before);
    expect(settled).toBe(false);
    // etcd-only: after unavailableAfterMs without etcd the writer gate closes (fail-closed), still without a log
    // call from the data plane (the in-flight mint's own propose retries go on meanwhile, so compare around the calls)
    await until(() => b!.members[0]!.log.available!.get() === false, "available → false");
    const before2 = new Map(calls);
    expect(g1.isWritable).toBe(false);
    expect(g1.reserve(g("g1"), 1n)).toEqual({ ok: false, refusal: { kind: "not-writable" } });
    expect(g1.schedule(g("root")).grants).toEqual([]);
    expect(g1.boundMetrics(g("root")).isConsistent).toBe(true);
    expect(calls).toEqual(before2);
    expect(settled).toBe(false);
    // back on etcd: the in-flight act lands once and the gate reopens
    b!.reconnect(0);
    applied(await inFlight);
    expect(g1.controlView().mintedTotal()).toBe(1_005n);
    await until(() => g1.isWritable, "gate reopens");
    expect(g1.reserve(g("g1"), 1n)).toMatchObject({ ok: true });
  }, 60_000);

  it("C5 the gate ignores gossip-ahead state: a data-plane view showing eA CLOSING then RETIRED does not let eB activate", async () => {
    await start();
    const g1 = gov(1);
    applied(await g1.prepare(rec("eA", "root", "c"), T));
    applied(await gov(2).prepare(rec("eB", "root", "c"), T));
    applied(await g1.activate(e("eA"), T));
    // a peer that saw eA close and retire (not through the log) gossips it
    const x = staticPeer();
    // its record too: gossip may bring eA's ACTIVE state ahead of its record, and close needs the record
    await until(() => x.ledger.get().record(e("eA")) !== null && x.ledger.get().lifecycle(e("eA")) === "ACTIVE", "x sees eA's record, ACTIVE");
    publish(x, x.ledger.get().close(e("eA")));
    publish(x, x.ledger.get().retire(e("eA")));
    await until(() => [1, 2, 3].every((i) => gov(i).ledger.get().lifecycle(e("eA")) === "RETIRED"), "eA RETIRED in every member's ledger");
    const out = await gov(3).activate(e("eB"), T);
    expect(conflictOf(out)).toEqual({ reason: "dualInbound", child: "c", incumbent: "eA", rejected: "eB" });
    await b!.applied(out.index!);
    for (let i = 1; i <= 3; i++) {
      expect(gov(i).controlView().liveInbound(g("c"))).toEqual(["eA"]);
      expect(gov(i).controlView().lifecycle(e("eA"))).toBe("ACTIVE");
      expect(gov(i).ledger.get().lifecycle(e("eB"))).toBe("PREPARED");
    }
  }, 60_000);

  it("C11 retire drain gate: outstanding > 0, or opposite non-zero positions, refuse locally (index null) and leave the edge CLOSING; a drained edge retires", async () => {
    await start();
    const g1 = gov(1);
    const setup = [
      () => g1.mint(r("m1"), 1_000n, T),
      () => g1.mint(r("p"), 10n, T),
      () => g1.prepare(rec("e1", "root", "a"), T),
      () => g1.activate(e("e1"), T),
      () => g1.prepare(rec("e2", "root", "b"), T),
      () => g1.activate(e("e2"), T),
      () => g1.prepare(rec("e2b", "b", "b1"), T),
      () => g1.activate(e("e2b"), T),
      () => g1.prepare(rec("e3", "root", "c"), T),
      () => g1.activate(e("e3"), T),
      () => g1.enroll(r("m1"), T),
    ];
    for (const p of setup) applied(await p());
    const calls = countLogCalls(0);
    // case 1: m1 delegates down e1, so e1 has outstanding entitlement in this member's view
    g1.advertise(e("e1"), HUNGRY);
    expect(g1.schedule(g("root")).grants.length).toBeGreaterThan(0);
    const out1 = g1.ledger.get().edge(e("e1"))!.outstanding;
    expect(out1).toBeGreaterThan(0n);
    applied(await g1.close(e("e1"), T));
    const nd1 = await g1.retire(e("e1"), T);
    expect(nd1).toMatchObject({ kind: "conflict", index: null, key: null, conflict: { reason: "notDrained", edge: "e1", outstanding: out1 } });
    expect((nd1 as unknown as { conflict: { positions: Map<string, bigint> } }).conflict.positions).toEqual(new Map([["m1", out1]]));
    // case 2: p delegates 10 down e2 and on down e2b, hands it to q inside b1, and q spends it there: e2's
    // outstanding is 0, but p's position on e2 is +10 and q's is −10 (ledger.md §6.1, §7.4)
    const x = staticPeer();
    await until(() => x.ledger.get().lifecycle(e("e2b")) === "ACTIVE" && x.ledger.get().mintedTotal() === 1_010n, "x sees the setup");
    const steps = [
      (l: EntitlementLedger) => l.delegate(r("p"), e("e2"), 10n),
      (l: EntitlementLedger) => l.delegate(r("p"), e("e2b"), 10n),
      (l: EntitlementLedger) => l.transfer(g("b1"), r("p"), r("q"), 10n),
      (l: EntitlementLedger) => l.spend(r("q"), g("b1"), 10n),
    ];
    for (const step of steps) publish(x, step(x.ledger.get()));
    await until(() => g1.ledger.get().edgePosition(e("e2"), r("q")) === -10n, "m1 sees q's position on e2");
    expect(g1.ledger.get().edge(e("e2"))!.outstanding).toBe(0n);
    applied(await g1.close(e("e2"), T));
    const proposalsBefore = calls.get("propose");
    const nd2 = await g1.retire(e("e2"), T);
    expect(nd2).toMatchObject({ kind: "conflict", index: null, key: null, conflict: { reason: "notDrained", edge: "e2", outstanding: 0n } });
    expect((nd2 as unknown as { conflict: { positions: Map<string, bigint> } }).conflict.positions).toEqual(new Map([["p", 10n], ["q", -10n]]));
    expect(calls.get("propose")).toBe(proposalsBefore); // refused before proposing
    // a drained edge retires
    applied(await g1.close(e("e3"), T));
    const ok = await g1.retire(e("e3"), T);
    applied(ok);
    await b!.applied(ok.index!);
    for (let i = 1; i <= 3; i++) {
      expect(gov(i).controlView().lifecycle(e("e1"))).toBe("CLOSING");
      expect(gov(i).controlView().lifecycle(e("e2"))).toBe("CLOSING");
      expect(gov(i).controlView().lifecycle(e("e3"))).toBe("RETIRED");
    }
    await until(() => g1.ledger.get().lifecycle(e("e3")) === "RETIRED", "e3 RETIRED in m1's ledger");
  }, 60_000);

  it("C14 determinism: more than 1 000 commands, conflicting on purpose, from all three members at once; equal ControlStates at equal appliedIndex, outcomes as the reference model decides", async () => {
    const SEED = Number(process.env.HEDDLE_SEED ?? 14);
    const COMMANDS = 1_020;
    const OPERATORS_PER_MEMBER = 4;
    await start();
    const rand = seededRandom(SEED);
    const pick = <X>(xs: readonly X[]): X => xs[Math.floor(rand() * xs.length)]!;
    // a small fixed set of edges on few children, so activations contend (dualInbound, wouldCycle) and lifecycles regress
    const groups = ["root", "c0", "c1", "c2", "c3"];
    const edges = Array.from({ length: 12 }, (_, k) => {
      const child = groups[1 + (k % 4)]!;
      const parents = groups.filter((x) => x !== child);
      return { id: `e${k}`, parent: parents[(k * 7) % parents.length]!, child };
    });
    const acks: { what: string; outcome: ControlOutcome }[] = [];
    let issued = 0;
    const operator = async (m: number): Promise<void> => {
      const gv = gov(m);
      while (issued < COMMANDS) {
        issued++;
        const ed = pick(edges);
        const roll = rand();
        let what: string;
        let p: Promise<ControlOutcome>;
        if (roll < 0.2) (what = `prepare ${ed.id}`), (p = gv.prepare(rec(ed.id, ed.parent, ed.child, rand() < 0.1 ? 2n : 1n), T));
        else if (roll < 0.45) (what = `activate ${ed.id}`), (p = gv.activate(e(ed.id), T));
        else if (roll < 0.6) (what = `close ${ed.id}`), (p = gv.close(e(ed.id), T));
        else if (roll < 0.7) (what = `retire ${ed.id}`), (p = gv.retire(e(ed.id), T));
        else if (roll < 0.9) (what = "mint"), (p = gv.mint(r(`m${m}`), BigInt(1 + Math.floor(rand() * 100)), T));
        else if (roll < 0.95) (what = "enroll"), (p = gv.enroll(r(`m${m}`), T));
        else (what = "depart"), (p = gv.depart(T));
        acks.push({ what: `m${m} ${what}`, outcome: await p });
      }
    };
    await Promise.all([1, 2, 3].flatMap((m) => Array.from({ length: OPERATORS_PER_MEMBER }, () => operator(m))));
    expect(acks.length).toBeGreaterThan(1_000);
    const conflicts = acks.filter((a) => a.outcome.kind === "conflict").length;
    expect(conflicts).toBeGreaterThan(100);
    const view = await gov(1).sync(T);
    const top = view.appliedIndex;
    await b!.applied(top);
    // equal states at equal appliedIndex (nothing more is proposed, so every member stops at `top`)
    const states = b!.members.map((m) => m.gov.controlView() as ControlState);
    for (const st of states) {
      expect(st.appliedIndex).toBe(top);
      expect(st.stateText()).toBe(states[0]!.stateText());
    }
    // replay the committed prefix, read back from etcd by a fresh log instance, into the reference model
    const reader: ControlLog = b!.log(0);
    const model = new ControlModel("root");
    const modelAt = new Map<number, ControlOutcome>();
    try {
      for await (const item of reader.committedFrom(1)) {
        if (item.kind === "install") throw new Error(`seed ${SEED}: the log was compacted under the test (install through ${item.snapshot.throughIndex})`);
        if (item.kind === "internal") model.applyInternal(item.index);
        else {
          const out = model.applyEntry(item.entry as LogEntry);
          if (out !== null) modelAt.set(item.entry.index, out);
        }
        if (model.applied >= top) break;
      }
    } finally {
      await reader.close();
    }
    expect(model.applied).toBe(top);
    const json = (o: ControlOutcome): string => canonicalJson(outcomeJson(o));
    expect(states[0]!.mintedTotal(), `seed ${SEED}`).toBe(model.total);
    for (const m of b!.members) expect(m.gov.ledger.get().mintedTotal(), `seed ${SEED}`).toBe(model.total);
    let compared = 0;
    for (const a of acks) {
      if (a.outcome.index === null) continue; // refused locally (notDrained): never proposed
      const want = modelAt.get(a.outcome.index);
      expect(want === undefined ? "nothing" : json(want), `seed ${SEED}: ${a.what} at ${a.outcome.index}`).toBe(json(a.outcome));
      compared++;
    }
    expect(compared).toBeGreaterThan(1_000);
    for (const [client, s] of model.sessions) {
      for (const [seq, rec0] of s.out) {
        const mine = states[0]!.outcomeOf({ client, seq });
        expect(typeof mine === "string" ? mine : json(mine), `seed ${SEED}: outcome of ${client}/${seq}`).toBe(json(rec0.outcome));
      }
    }
    for (let i = 0; i <= top; i++) expect([...states[0]!.roster.enrolledAt(i)].sort().join(","), `seed ${SEED}: enrolledAt(${i})`).toBe(model.enrolledAt(i).join(","));
  }, 120_000);
});
