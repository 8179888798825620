/**
 * governed.md §5.4's control-plane acceptance tests against the etcd backend (issue 18): three heddle members whose
 * control log is a real 3-member etcd cluster on loopback (started here from Debian's `etcd-server`), each member
 * reaching etcd through its own cuttable proxy. The same tests run against the embedded Raft in
 * `control-acceptance.test.ts` (and C1/C2 over seeds in their own files). C4, C5, C11 and C14 exercise the data
 * plane, the ledger-side gate and the state machine alone, not the log, so they are not repeated here; C2 and C3's
 * concurrency and C6's lost-answer retry also run in `control-log-conformance.test.ts`.
 *
 * Where etcd differs: a "minority" is a heddle member cut off from etcd, or etcd itself without quorum (C1, C10).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AttachmentId, GroupId, ReplicaId } from "@heddle/ledger";
import { ControlPlaneHaltedError, encodeEnvelope, IncarnationReusedError, OutcomeUnknownError } from "../src/index.ts";
import type { ControlOutcome } from "../src/index.ts";
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
    // (b) etcd loses quorum (2 of 3 members killed): nobody commits; the members' views stay put
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
});
