/**
 * governed.md §2.2 "Errors": every invalid argument is a `TypeError` (wrong type) or `RangeError` (value out of
 * range), thrown synchronously by the call, before anything is proposed — each case checked against a counting
 * Raft stub that must see no `propose`.
 */
import { describe, expect, it } from "vitest";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { memoryStore, MemoryNetwork, seededRandom } from "@heddle/node";
import { VirtualTimers } from "@heddle/seam/testing";
import { CLAIM_GUARANTEES } from "@heddle/claims";
import { heddleGoverned } from "../src/index.ts";
import type { GovernedHeddleNode } from "../src/index.ts";
import { testConfig } from "./support/governed-cluster.ts";
import { StubRaft } from "./support/stub-raft.ts";

function node(): { gov: GovernedHeddleNode; raft: StubRaft } {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(1) });
  const raft = new StubRaft("n1", timers);
  const gov = heddleGoverned({ seam: net.join("n1"), self: ReplicaId("n1"), root: GroupId("root"), config: testConfig(timers, seededRandom(2), memoryStore()), raft, incarnation: "i", claims: { capacity: { pool: 2 }, maxPerHolder: 3 } });
  return { gov, raft };
}

const w = Weight.of(1n);
const good = { id: AttachmentId("e1"), parent: GroupId("root"), child: GroupId("a"), weight: w };
type Case = [string, (g: GovernedHeddleNode) => unknown, typeof TypeError | typeof RangeError];
const any = (v: unknown) => v as never;

const cases: Case[] = [
  // mint: the amount (the table's own examples) and the holder
  ["mint: negative amount", (g) => g.mint(ReplicaId("n1"), -1n), RangeError],
  ["mint: zero amount", (g) => g.mint(ReplicaId("n1"), 0n), RangeError],
  ["mint: amount above int64", (g) => g.mint(ReplicaId("n1"), 1n << 63n), RangeError],
  ["mint: non-integer amount (a number)", (g) => g.mint(ReplicaId("n1"), any(1.5)), TypeError],
  ["mint: amount as a string", (g) => g.mint(ReplicaId("n1"), any("100")), TypeError],
  ["mint: holder not a string", (g) => g.mint(any(7), 1n), TypeError],
  ["mint: empty holder", (g) => g.mint(any(""), 1n), RangeError],
  ["mint: ill-formed holder", (g) => g.mint(any("\ud800"), 1n), RangeError],
  ["mint: holder too long", (g) => g.mint(any("h".repeat(300)), 1n), RangeError],
  // prepare: malformed records
  ["prepare: record not an object", (g) => g.prepare(any(null)), TypeError],
  ["prepare: record id missing", (g) => g.prepare(any({ ...good, id: undefined })), TypeError],
  ["prepare: empty parent", (g) => g.prepare(any({ ...good, parent: "" })), RangeError],
  ["prepare: child not a string", (g) => g.prepare(any({ ...good, child: 3 })), TypeError],
  ["prepare: weight not a Weight", (g) => g.prepare(any({ ...good, weight: { num: 1n, den: 1n } })), TypeError],
  ["prepare: weight as a number", (g) => g.prepare(any({ ...good, weight: 1 })), TypeError],
  // edge verbs
  ["activate: edge not a string", (g) => g.activate(any(1)), TypeError],
  ["close: empty edge", (g) => g.close(any("")), RangeError],
  ["retire: edge not a string", (g) => g.retire(any(undefined)), TypeError],
  ["enroll: empty replica", (g) => g.enroll(any("")), RangeError],
  ["enroll: replica not a string", (g) => g.enroll(any({})), TypeError],
  // call options
  ["options not an object", (g) => g.enroll(ReplicaId("n1"), any(5)), TypeError],
  ["timeoutMs not a number", (g) => g.depart(any({ timeoutMs: "1s" })), TypeError],
  ["timeoutMs zero", (g) => g.depart({ timeoutMs: 0 }), RangeError],
  ["timeoutMs infinite", (g) => g.depart({ timeoutMs: Infinity }), RangeError],
  ["signal not an AbortSignal", (g) => g.depart(any({ signal: {} })), TypeError],
  ["key not an object", (g) => g.depart(any({ key: "k" })), TypeError],
  ["key.client not a string", (g) => g.depart(any({ key: { client: 1, seq: 1 } })), TypeError],
  ["key.client empty", (g) => g.depart({ key: { client: "", seq: 1 } }), RangeError],
  ["key.client in the auto: namespace of another process", (g) => g.depart({ key: { client: "auto:n9:x", seq: 1 } }), RangeError],
  ["key of this process's own auto client with a seq never issued", (g) => g.depart({ key: { client: "auto:n1:i", seq: 1 } }), RangeError],
  ["key.seq zero", (g) => g.depart({ key: { client: "ops", seq: 0 } }), RangeError],
  ["key.seq fractional", (g) => g.depart({ key: { client: "ops", seq: 1.5 } }), RangeError],
  ["key.seq not a number", (g) => g.depart(any({ key: { client: "ops", seq: "1" } })), TypeError],
  ["ackFloor without a key", (g) => g.depart({ ackFloor: 1 }), TypeError],
  ["ackFloor negative", (g) => g.depart({ key: { client: "ops", seq: 3 }, ackFloor: -1 }), RangeError],
  ["ackFloor above key.seq", (g) => g.depart({ key: { client: "ops", seq: 3 }, ackFloor: 4 }), RangeError],
  ["ackFloor not a number", (g) => g.depart(any({ key: { client: "ops", seq: 3 }, ackFloor: "1" })), TypeError],
  // the claims family
  ["claims.take: request not an object", (g) => g.claims.take(any(null)), TypeError],
  ["claims.take: holder not a string", (g) => g.claims.take(any({ holder: 1, resources: [{ key: "k", mode: "exclusive" }] })), TypeError],
  ["claims.take: empty holder", (g) => g.claims.take({ holder: " ", resources: [{ key: "k", mode: "exclusive" }] }), RangeError],
  ["claims.take: resources not an array", (g) => g.claims.take(any({ holder: "h", resources: "k" })), TypeError],
  ["claims.take: no resources", (g) => g.claims.take({ holder: "h", resources: [] }), RangeError],
  ["claims.take: unknown mode", (g) => g.claims.take(any({ holder: "h", resources: [{ key: "k", mode: "both" }] })), RangeError],
  ["claims.take: a key named twice", (g) => g.claims.take({ holder: "h", resources: [{ key: "k", mode: "shared" }, { key: "k", mode: "shared" }] }), RangeError],
  ["claims.take: ttlMs not a number", (g) => g.claims.take(any({ holder: "h", resources: [{ key: "k", mode: "shared" }], ttlMs: "5" })), TypeError],
  ["claims.take: ttlMs zero", (g) => g.claims.take({ holder: "h", resources: [{ key: "k", mode: "shared" }], ttlMs: 0 }), RangeError],
  ["claims.take: label not a string", (g) => g.claims.take(any({ holder: "h", resources: [{ key: "k", mode: "shared" }], label: 3 })), TypeError],
  ["claims.release: key not a string", (g) => g.claims.release("h", any(null)), TypeError],
  ["claims.renew: empty holder", (g) => g.claims.renew("", "k"), RangeError],
  ["claims.releaseAll: holder not a string", (g) => g.claims.releaseAll(any(0)), TypeError],
  ["claims.releaseScope: empty scope", (g) => g.claims.releaseScope(""), RangeError],
  // every verb, both kinds: the same checks guard each entry point
  ["prepare: empty record id", (g) => g.prepare(any({ ...good, id: "" })), RangeError],
  ["prepare: parent not a string", (g) => g.prepare(any({ ...good, parent: null })), TypeError],
  ["prepare: empty child", (g) => g.prepare(any({ ...good, child: "" })), RangeError],
  ["prepare: record id too long", (g) => g.prepare(any({ ...good, id: "e".repeat(300) })), RangeError],
  ["activate: empty edge", (g) => g.activate(any("")), RangeError],
  ["close: edge not a string", (g) => g.close(any(7n)), TypeError],
  ["retire: empty edge", (g) => g.retire(any("")), RangeError],
  ["retire: ill-formed edge", (g) => g.retire(any("\udc00")), RangeError],
  ["enroll: replica too long", (g) => g.enroll(any("r".repeat(300))), RangeError],
  ["mint: bad options", (g) => g.mint(ReplicaId("n1"), 1n, { timeoutMs: -1 }), RangeError],
  ["prepare: bad options", (g) => g.prepare(good, any({ key: 5 })), TypeError],
  ["activate: bad options", (g) => g.activate(AttachmentId("e1"), { key: { client: "ops", seq: 0 } }), RangeError],
  ["close: bad options", (g) => g.close(AttachmentId("e1"), any({ signal: "stop" })), TypeError],
  ["retire: bad options (checked before the drain pre-check)", (g) => g.retire(AttachmentId("e1"), { timeoutMs: NaN }), RangeError],
  ["enroll: bad options", (g) => g.enroll(ReplicaId("n1"), any({ ackFloor: "0", key: { client: "ops", seq: 1 } })), TypeError],
  ["claims.take: a resource not an object", (g) => g.claims.take(any({ holder: "h", resources: ["k"] })), TypeError],
  ["claims.take: a resource key not a string", (g) => g.claims.take(any({ holder: "h", resources: [{ key: 1, mode: "shared" }] })), TypeError],
  ["claims.take: more resources than a take may name", (g) => g.claims.take({ holder: "h", resources: Array.from({ length: 257 }, (_, i) => ({ key: `k${i}`, mode: "shared" as const })) }), RangeError],
  ["claims.take: label too long", (g) => g.claims.take({ holder: "h", resources: [{ key: "k", mode: "shared" }], label: "l".repeat(5000) }), RangeError],
  ["claims.take: empty scope", (g) => g.claims.take({ holder: "h", resources: [{ key: "k", mode: "shared" }], scope: "" }), RangeError],
  ["claims.take: bad options", (g) => g.claims.take({ holder: "h", resources: [{ key: "k", mode: "shared" }] }, { timeoutMs: 0 }), RangeError],
  ["claims.release: empty holder", (g) => g.claims.release("", "k"), RangeError],
  ["claims.renew: key not a string", (g) => g.claims.renew("h", any(undefined)), TypeError],
  ["claims.releaseAll: empty holder", (g) => g.claims.releaseAll("  "), RangeError],
  ["claims.releaseScope: scope not a string", (g) => g.claims.releaseScope(any(["s"])), TypeError],
  ["claims.release: bad options", (g) => g.claims.release("h", "k", any({ key: { client: "ops" } })), TypeError],
  ["claims.release: token not a number", (g) => g.claims.release("h", "k", any({ token: "250" })), TypeError],
  ["claims.release: token null", (g) => g.claims.release("h", "k", any({ token: null })), TypeError],
  ["claims.release: token negative", (g) => g.claims.release("h", "k", { token: -1 }), RangeError],
  ["claims.release: token fractional", (g) => g.claims.release("h", "k", { token: 2.5 }), RangeError],
  ["claims.release: token above 2^53 − 1", (g) => g.claims.release("h", "k", { token: 2 ** 53 }), RangeError],
  ["claims.release: bad options beside a good token", (g) => g.claims.release("h", "k", { token: 3, timeoutMs: 0 }), RangeError],
  ["claims.release: options not an object", (g) => g.claims.release("h", "k", any(7)), TypeError],
  ["depart: options not an object", (g) => g.depart(any("now")), TypeError],
  // sync
  ["sync: timeoutMs negative", (g) => g.sync({ timeoutMs: -5 }), RangeError],
  ["sync: timeoutMs not a number", (g) => g.sync(any({ timeoutMs: "5" })), TypeError],
  ["sync: signal not an AbortSignal", (g) => g.sync(any({ signal: true })), TypeError],
  // reads and the revocation seam
  ["roster().enrolledAt beyond the applied index", (g) => g.roster().enrolledAt(1), RangeError],
  ["roster().enrolledAt negative", (g) => g.roster().enrolledAt(-1), RangeError],
  ["revocation.revoke: holder not a string", (g) => g.revocation.revoke(any(1), GroupId("root")), TypeError],
  ["revocation.revoke: empty group", (g) => g.revocation.revoke(ReplicaId("n2"), any("")), RangeError],
  // the data plane's own bad input is not swallowed by the writer gate
  ["reserve: non-bigint cost while not writable", (g) => g.reserve(GroupId("a"), any(5)), TypeError],
  ["schedule: parent not a string", (g) => g.schedule(any(1)), TypeError],
];

describe("bad input to the control verbs throws before anything is proposed (governed.md §2.2)", () => {
  for (const [name, call, kind] of cases) {
    it(name, async () => {
      const { gov, raft } = node();
      let thrown: unknown;
      let returned: unknown;
      try {
        returned = call(gov);
      } catch (e) {
        thrown = e;
      }
      if (returned instanceof Promise) await returned.catch(() => {}); // a rejection instead of a throw fails below
      expect(thrown, "thrown synchronously").toBeInstanceOf(kind);
      expect(raft.calls.get("propose") ?? 0).toBe(0);
      expect(gov.controlView().appliedIndex).toBe(0);
      await gov.shutdown();
    });
  }

  it("a RangeError from an argument check leaves the auto key sequence untouched (no seq is burned)", async () => {
    const { gov, raft } = node();
    expect(() => gov.mint(ReplicaId("n1"), -1n)).toThrow(RangeError);
    const ok = await gov.mint(ReplicaId("n1"), 1n);
    expect(ok).toMatchObject({ kind: "applied", key: { client: "auto:n1:i", seq: 1 } });
    expect(raft.calls.get("propose")).toBe(1);
    await gov.shutdown();
  });

  it("sync({ leaderOnly }) answers only once the applied prefix reaches the confirmed read index", async () => {
    const { gov, raft } = node();
    await gov.sync({ leaderOnly: true });
    for (let round = 0; round < 20; round++) {
      // committed but not yet applied here: the node applies one entry per turn of its committed stream, so of
      // fifty committed at once most are still unapplied when the read index is confirmed
      let index = 0;
      for (let k = 0; k < 50; k++) index = raft.commitRaw(new Uint8Array([0x66, 0x6f, round, k]));
      expect(gov.controlView().appliedIndex).toBeLessThan(index);
      const view = await gov.sync({ leaderOnly: true });
      expect(view.appliedIndex).toBeGreaterThanOrEqual(index);
    }
    await gov.shutdown();
  });

  it("the claims family says which mode it is and the guarantee it gives, as the daemon and the CLI word it", async () => {
    const { gov } = node();
    expect(gov.claims.mode).toBe("granted");
    expect(gov.claims.guarantee).toBe(CLAIM_GUARANTEES.granted);
    expect(gov.claims.guarantee).toMatch(/\S/);
    await gov.shutdown();
  });

  it("heddleGoverned refuses bad options by name", () => {
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(1) });
    const seam = net.join("n1");
    const base = { seam, self: ReplicaId("n1"), root: GroupId("root"), config: testConfig(timers, seededRandom(2), memoryStore()), raft: new StubRaft("n1", timers), incarnation: "i" };
    expect(() => heddleGoverned(any({ ...base, raft: undefined }))).toThrow(/raft/);
    expect(() => heddleGoverned({ ...base, raft: new StubRaft("n2", timers) })).toThrow(/G1/);
    expect(() => heddleGoverned({ ...base, incarnation: "" })).toThrow(RangeError);
    expect(() => heddleGoverned(any({ ...base, incarnation: 5 }))).toThrow(TypeError);
    expect(() => heddleGoverned({ ...base, snapshotEvery: -1 })).toThrow(/snapshotEvery/);
    expect(() => heddleGoverned({ ...base, claims: { scopeEnded: () => true } })).toThrow(/scopeEnded/);
    expect(() => heddleGoverned({ ...base, claims: { capacity: { k: 0 } } })).toThrow(RangeError);
  });
});
