/**
 * `ControlState` as a pure value (governed.md §3.2–3.5, §3.8, §3.10, R-S4): the decision table in its listed order,
 * exactly-once sessions, the roster, halting on malformed or out-of-order input, snapshots, and a fast-check
 * model-based property against the independent reference model (`support/control-model.ts`).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { ControlModel } from "./support/control-model.ts";
import { canonicalJson as canonicalJsonForTest } from "../src/control/canonical-json.ts";
import { ControlPlaneHaltedError, ControlState, encodeEnvelope, LAPSED_CLAIM_RETENTION_MS, LAPSED_CLAIMS_PER_APPLY, mintIdOf, outcomeJson } from "../src/index.ts";
import { takeArg } from "../src/control/call-arguments.ts";
import { MAX_TTL_MS } from "@heddle/claims";
import type { AppliedStep, ControlCommand, ControlOutcome, LogEntry, ProposalKey } from "../src/index.ts";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 500);
const root = GroupId("root");
const rec = (id: string, parent: string, child: string, w = 1n) => ({ id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(w) });
const E = AttachmentId;
const R = ReplicaId;

/** Drives a state with hand-built entries. */
class Driver {
  readonly st: ControlState;
  index = 0;
  seq = 0;
  constructor(st = new ControlState({ root, claims: { capacity: { pool: 2 } } })) {
    this.st = st;
  }
  entry(cmd: ControlCommand, o: { key?: ProposalKey | null; ackFloor?: number; proposer?: string; stampedAt?: number } = {}): AppliedStep {
    const key = o.key === undefined ? { client: "c", seq: ++this.seq } : o.key;
    const command = encodeEnvelope({ v: 1, key, ackFloor: o.ackFloor ?? 0, proposer: R(o.proposer ?? "n1"), cmd });
    const entry: LogEntry = { index: ++this.index, term: 1, kind: "app", key, command, stampedAt: o.stampedAt ?? 1_000 };
    return this.st.apply({ kind: "entry", entry });
  }
  out(cmd: ControlCommand, o: Parameters<Driver["entry"]>[1] = {}): ControlOutcome {
    return this.entry(cmd, o).outcome!;
  }
  internal(): AppliedStep {
    return this.st.apply({ kind: "internal", index: ++this.index });
  }
}

const conflict = (o: ControlOutcome) => (o.kind === "conflict" ? o.conflict : null);

describe("ControlState decisions (governed.md §3.4, in the listed order)", () => {
  it("mint: a key whose plain mint id would pass 256 code units gets a hashed id the peers accept (found in review)", async () => {
    const { EntitlementLedger } = await import("@heddle/ledger");
    const { MAX_ID_LENGTH } = await import("@heddle/node");
    const d = new Driver();
    const longest = "c".repeat(256); // callOptionsArg's limit on key.client
    const s = d.entry({ op: "mint", holder: R("n1"), amount: 5n }, { key: { client: longest, seq: 9_007_199_254_740_991 } });
    const id = (s.outcome as { mintId: string }).mintId;
    expect(id).toMatch(/^mint:h:[0-9a-f]{32}:9007199254740991$/);
    expect(id.length).toBeLessThanOrEqual(MAX_ID_LENGTH);
    // what a receiving peer decodes from the published patch (node.md §4.3's limit) — not refused
    expect(() => EntitlementLedger.decodeBinary(s.publish[0]!.encodeBinary(), [], MAX_ID_LENGTH)).not.toThrow();
    // stable per key, distinct per key; a key that fits keeps its plain id
    expect(mintIdOf({ client: longest, seq: 9_007_199_254_740_991 })).toBe(id);
    expect(mintIdOf({ client: longest, seq: 1 })).not.toBe(mintIdOf({ client: "d".repeat(256), seq: 1 }));
    const fits = "e".repeat(256 - "mint::1".length);
    expect(mintIdOf({ client: fits, seq: 1 })).toBe(`mint:${fits}:1`);
    expect(mintIdOf({ client: `${fits}e`, seq: 1 })).toMatch(/^mint:h:/);
  });

  it("mint: records the mint under mintIdOf(key), publishes its patch; an overflowing total is an outcome, not a wrap", () => {
    const d = new Driver();
    const s = d.entry({ op: "mint", holder: R("n1"), amount: 100n }, { key: { client: "op", seq: 4 } });
    expect(s.outcome).toMatchObject({ kind: "applied", noop: false, mintId: "mint:op:4", index: 1 });
    expect(s.publish).toHaveLength(1);
    expect(s.publish[0]!.mintedTotal()).toBe(100n);
    expect(d.st.mintedTotal()).toBe(100n);
    expect(d.st.minted().get("mint:op:4" as never)).toMatchObject({ root: "root", holder: "n1", amount: 100n });
    const big = d.entry({ op: "mint", holder: R("n2"), amount: (1n << 63n) - 100n });
    expect(conflict(big.outcome!)).toEqual({ reason: "overflow", what: "mintedTotal" });
    expect(big.publish).toHaveLength(0);
    expect(d.st.mintedTotal()).toBe(100n);
    expect(conflict(d.out({ op: "mint", holder: R("n2"), amount: (1n << 63n) - 101n }))).toBeNull();
  });

  it("C9 at the state level: unknownEdge ×2, noop then recordMismatch, invalidRecord ×2, lifecycleRegression, notClosing, wouldCycle", () => {
    const d = new Driver();
    expect(conflict(d.out({ op: "activate", edge: E("nope") }))).toEqual({ reason: "unknownEdge", edge: "nope" });
    expect(conflict(d.out({ op: "close", edge: E("nope") }))).toEqual({ reason: "unknownEdge", edge: "nope" });
    expect(d.out({ op: "prepare", record: rec("e1", "a", "b") })).toMatchObject({ kind: "applied", noop: false });
    expect(d.out({ op: "prepare", record: rec("e1", "a", "b") })).toMatchObject({ kind: "applied", noop: true });
    expect(conflict(d.out({ op: "prepare", record: rec("e1", "a", "b", 2n) }))).toMatchObject({ reason: "recordMismatch", edge: "e1" });
    expect(conflict(d.out({ op: "prepare", record: rec("x", "a", "a") }))).toEqual({ reason: "invalidRecord", edge: "x", detail: "selfLoop" });
    expect(conflict(d.out({ op: "prepare", record: rec("y", "a", "root") }))).toEqual({ reason: "invalidRecord", edge: "y", detail: "rootAsChild" });
    // full lifecycle of e9 then activate again
    d.out({ op: "prepare", record: rec("e9", "root", "z") });
    d.out({ op: "activate", edge: E("e9") });
    d.out({ op: "close", edge: E("e9") });
    d.out({ op: "retire", edge: E("e9") });
    expect(conflict(d.out({ op: "activate", edge: E("e9") }))).toEqual({ reason: "lifecycleRegression", edge: "e9", current: "RETIRED", requested: "ACTIVE" });
    // retire an ACTIVE edge
    d.out({ op: "activate", edge: E("e1") });
    expect(conflict(d.out({ op: "retire", edge: E("e1") }))).toEqual({ reason: "notClosing", edge: "e1", current: "ACTIVE" });
    // e1: a→b ACTIVE, a unattached; activate e2: b→a
    d.out({ op: "prepare", record: rec("e2", "b", "a") });
    expect(conflict(d.out({ op: "activate", edge: E("e2") }))).toEqual({ reason: "wouldCycle", edge: "e2", path: ["e1"] });
    expect(d.st.lifecycle(E("e2"))).toBe("PREPARED");
  });

  it("activate: a second live generation is dualInbound naming the incumbent; CLOSING counts as live (break-before-make)", () => {
    const d = new Driver();
    d.out({ op: "prepare", record: rec("eA", "pA", "c") });
    d.out({ op: "prepare", record: rec("eB", "pB", "c") });
    expect(d.out({ op: "activate", edge: E("eA") })).toMatchObject({ kind: "applied", noop: false });
    expect(conflict(d.out({ op: "activate", edge: E("eB") }))).toEqual({ reason: "dualInbound", child: "c", incumbent: "eA", rejected: "eB" });
    expect(d.out({ op: "activate", edge: E("eA") })).toMatchObject({ kind: "applied", noop: true });
    d.out({ op: "close", edge: E("eA") });
    expect(conflict(d.out({ op: "activate", edge: E("eB") }))).toEqual({ reason: "dualInbound", child: "c", incumbent: "eA", rejected: "eB" });
    expect(d.st.liveInbound(GroupId("c"))).toEqual(["eA"]);
    d.out({ op: "retire", edge: E("eA") });
    expect(d.st.liveInbound(GroupId("c"))).toEqual([]);
    expect(d.out({ op: "activate", edge: E("eB") })).toMatchObject({ kind: "applied", noop: false });
    expect(d.st.liveInbound(GroupId("c"))).toEqual(["eB"]);
  });

  it("close: RETIRED regresses, PREPARED is notActive (amended), CLOSING is a noop; retire: PREPARED abandons, RETIRED is a noop", () => {
    const d = new Driver();
    d.out({ op: "prepare", record: rec("e1", "root", "a") });
    expect(conflict(d.out({ op: "close", edge: E("e1") }))).toEqual({ reason: "notActive", edge: "e1", current: "PREPARED" });
    d.out({ op: "activate", edge: E("e1") });
    expect(d.out({ op: "close", edge: E("e1") })).toMatchObject({ noop: false });
    expect(d.out({ op: "close", edge: E("e1") })).toMatchObject({ noop: true });
    const ret = d.entry({ op: "retire", edge: E("e1") });
    expect(ret.outcome).toMatchObject({ noop: false });
    expect(ret.publish[0]!.lifecycle(E("e1"))).toBe("RETIRED");
    expect(d.out({ op: "retire", edge: E("e1") })).toMatchObject({ noop: true });
    expect(conflict(d.out({ op: "close", edge: E("e1") }))).toEqual({ reason: "lifecycleRegression", edge: "e1", current: "RETIRED", requested: "CLOSING" });
    d.out({ op: "prepare", record: rec("e2", "root", "b") });
    expect(d.out({ op: "retire", edge: E("e2") })).toMatchObject({ kind: "applied", noop: false });
    expect(d.st.lifecycle(E("e2"))).toBe("RETIRED");
  });

  it("retire: the witness travels in the published patch only, never into the projection", () => {
    const d = new Driver();
    d.out({ op: "prepare", record: rec("e1", "root", "a") });
    d.out({ op: "activate", edge: E("e1") });
    const mint = d.entry({ op: "mint", holder: R("w"), amount: 50n });
    // a data-plane view: w delegates 10 down e1 and releases it again (drained), then the edge closes
    let v = d.st.projection;
    const del = v.delegate(R("w"), E("e1"), 10n);
    if (!del.ok) throw new Error(del.refusal.message);
    v = v.join(del.patch);
    const back = v.release(R("w"), E("e1"), 10n);
    if (!back.ok) throw new Error(back.refusal.message);
    v = v.join(back.patch);
    d.out({ op: "close", edge: E("e1") });
    const witness = v.projectEdge(E("e1")).join(mint.publish[0]!);
    const s = d.entry({ op: "retire", edge: E("e1"), witness: witness.encode() });
    expect(s.outcome).toMatchObject({ kind: "applied" });
    expect(s.publish[0]!.edge(E("e1"))!.issued).toBe(10n);
    expect(d.st.projection.edge(E("e1"))!.issued).toBe(0n);
  });

  it("enroll: anyone may enroll anyone, an enroll of the enrolled is a noop that still announces; depart: only self (notSelf), else noop", () => {
    const d = new Driver();
    const a = d.entry({ op: "enroll", replica: R("n2") }, { proposer: "n1" });
    expect(a.outcome).toMatchObject({ noop: false });
    expect(a.enrolled).toEqual(["n2"]);
    const b = d.entry({ op: "enroll", replica: R("n2") });
    expect(b.outcome).toMatchObject({ noop: true });
    expect(b.enrolled).toEqual(["n2"]);
    expect(conflict(d.out({ op: "depart", replica: R("n2") }, { proposer: "n1" }))).toEqual({ reason: "notSelf", replica: "n2", proposer: "n1" });
    expect(d.out({ op: "depart", replica: R("n3") }, { proposer: "n3" })).toMatchObject({ noop: true });
    const c = d.entry({ op: "depart", replica: R("n2") }, { proposer: "n2" });
    expect(c.outcome).toMatchObject({ noop: false });
    expect(c.enrolled).toEqual([]);
    expect([...d.st.roster.enrolled]).toEqual([]);
  });

  it("claims: the leader's stamp clamped never to run backwards, the entry index as token, the table's answer as the outcome", () => {
    const d = new Driver();
    const take = (holder: string, ttlMs: number): ControlCommand => ({ op: "claims.take", request: { holder, resources: [{ key: "m", mode: "exclusive" }], ttlMs } });
    const a = d.out(take("A", 100), { stampedAt: 1_000 });
    expect(a).toMatchObject({ kind: "applied", noop: false, claims: { ok: true, grants: [{ key: "m", token: 1 }] } });
    const b = d.out(take("B", 100), { stampedAt: 400 });
    expect(d.st.claimsNow).toBe(1_000);
    expect(b).toMatchObject({ kind: "applied", claims: { ok: false, blocked: [{ key: "m", reason: "held", holders: ["A"] }] } });
    const c = d.out(take("B", 100), { stampedAt: 1_100 });
    expect(c).toMatchObject({ claims: { ok: true, grants: [{ token: 3 }] } });
    expect(d.st.claims.checkFence("m", 1)).toBe(false);
    expect(d.st.claims.checkFence("m", 3)).toBe(true);
    expect(d.out({ op: "claims.release", holder: "B", key: "m" }, { stampedAt: 1_110 })).toMatchObject({ claims: true });
    expect(d.out({ op: "claims.releaseAll", holder: "B" })).toMatchObject({ claims: [] });
    expect(d.entry({ op: "claims.releaseScope", scope: "s" }).publish).toEqual([]);
  });

  it("a lease past MAX_TTL_MS is refused as invalid, so the state always snapshots and restores (an expiry past 2^53 would not decode)", () => {
    const d = new Driver();
    const now = 1_764_800_000_000;
    const take = (holder: string, key: string, ttlMs: number): ControlCommand => ({ op: "claims.take", request: { holder, resources: [{ key, mode: "exclusive" }], ttlMs } });
    // an entry written before the bound (or by hand): refused deterministically on every replica, nothing granted
    const huge = d.out(take("A", "m", Number.MAX_SAFE_INTEGER - 1_000), { stampedAt: now });
    expect(huge).toMatchObject({ kind: "applied", claims: { ok: false, blocked: [], invalid: expect.stringMatching(/MAX_TTL_MS/) } });
    // the longest lease allowed is granted, and its expiry is a safe integer
    expect(d.out(take("B", "n", MAX_TTL_MS), { stampedAt: now })).toMatchObject({ claims: { ok: true } });
    expect(d.out(take("C", "o", MAX_TTL_MS + 1), { stampedAt: now })).toMatchObject({ claims: { ok: false, invalid: expect.stringMatching(/from 1 to 3155760000000/) } });
    const back = ControlState.decode(d.st.encode(), { root, claims: { capacity: { pool: 2 } } });
    expect(back.stateText()).toBe(d.st.stateText());
    expect(back.claims.owner("n")).toBe("B");
    expect(back.claims.owner("m")).toBeUndefined();
    // and a proposer refuses it before it reaches the log
    expect(() => takeArg({ holder: "A", resources: [{ key: "m", mode: "exclusive" }], ttlMs: MAX_TTL_MS + 1 }, {})).toThrow(/claims\.take: ttlMs must be a whole number of ms from 1 to/);
  });

  it("drops leases that ended more than LAPSED_CLAIM_RETENTION_MS ago, at most LAPSED_CLAIMS_PER_APPLY per claims entry, as the model does", () => {
    const d = new Driver();
    const model = new ControlModel("root", { capacity: { pool: 2 } });
    const both = (cmd: ControlCommand, stampedAt: number) => {
      const key = { client: "c", seq: d.seq + 1 };
      const out = d.out(cmd, { stampedAt });
      const entry: LogEntry = { index: d.index, term: 1, kind: "app", key, command: encodeEnvelope({ v: 1, key, ackFloor: 0, proposer: R("n1"), cmd }), stampedAt };
      expect(outcomeJson(model.applyEntry(entry)!)).toEqual(outcomeJson(out));
      return out;
    };
    const take = (holder: string, keys: string[], ttlMs?: number): ControlCommand => ({ op: "claims.take", request: { holder, resources: keys.map((key) => ({ key, mode: "exclusive" as const })), ...(ttlMs === undefined ? {} : { ttlMs }) } });
    // 600 one-key leases of crashed holders (3 takes of 200), one that is renewed, one without a lease
    for (let i = 0; i < 3; i++) both(take(`gone-${i}`, Array.from({ length: 200 }, (_, k) => `job-${i}-${k}`), 1_000), 0);
    both(take("alive", ["renewed"], 1_000), 0);
    both(take("forever", ["held"]), 0);
    const open = () => d.st.claims.open(0).length;
    expect(open()).toBe(602);
    // just before the retention has passed since the leases ended: nothing goes, a lapsed claim is still reported
    both({ op: "claims.renew", holder: "alive", key: "renewed" }, 500);
    both({ op: "claims.release", holder: "nobody", key: "x" }, 1_000 + LAPSED_CLAIM_RETENTION_MS - 1);
    expect(open()).toBe(602);
    expect(d.st.claims.lapsed().length).toBe(601);
    // after it: at most LAPSED_CLAIMS_PER_APPLY per entry, earliest expiry first (order taken among equal ones)
    both({ op: "claims.release", holder: "nobody", key: "x" }, 1_000 + LAPSED_CLAIM_RETENTION_MS);
    expect(open()).toBe(602 - LAPSED_CLAIMS_PER_APPLY);
    expect(d.st.claims.open(0).slice(0, 2).map((c) => c.key)).toEqual(["job-2-112", "job-2-113"]);
    both({ op: "claims.release", holder: "nobody", key: "x" }, 1_000 + LAPSED_CLAIM_RETENTION_MS + 1);
    // the renewed lease ended at 1,500: still within its retention; the lease-less claim never goes
    expect(d.st.claims.open(0).map((c) => c.key)).toEqual(["renewed", "held"]);
    both({ op: "claims.release", holder: "nobody", key: "x" }, 1_500 + LAPSED_CLAIM_RETENTION_MS);
    expect(d.st.claims.open(0).map((c) => c.key)).toEqual(["held"]);
    expect(d.st.stateText()).toBe(ControlState.decode(d.st.encode(), { root, claims: { capacity: { pool: 2 } } }).stateText());
    expect(model.claims.encode()).toBe(d.st.claims.encode());
  });

  it("minted() lists mints in id order, the same after a replay and after a snapshot install", () => {
    const d = new Driver();
    for (const [client, seq] of [["zed", 1], ["amy", 2], ["mid", 3]] as const) d.out({ op: "mint", holder: R("n1"), amount: 5n }, { key: { client, seq } });
    const ids = [...d.st.minted().keys()];
    expect(ids).toEqual(["mint:amy:2", "mint:mid:3", "mint:zed:1"]);
    expect([...ControlState.decode(d.st.encode(), { root, claims: { capacity: { pool: 2 } } }).minted().keys()]).toEqual(ids);
  });

  it("latestStamp: the latest stamp of any applied entry, a mint's too, never below claimsNow and never falling", () => {
    const d = new Driver();
    expect(d.st.latestStamp).toBe(0);
    d.out({ op: "claims.take", request: { holder: "A", resources: [{ key: "m", mode: "exclusive" }], ttlMs: 100 } }, { stampedAt: 1_000 });
    expect(d.st.latestStamp).toBe(1_000);
    // a non-claims entry stamped ahead (a peer whose clock runs ahead, on etcd) moves it; claimsNow stays
    d.out({ op: "enroll", replica: R("n2") }, { stampedAt: 5_000 });
    expect(d.st.claimsNow).toBe(1_000);
    expect(d.st.latestStamp).toBe(5_000);
    d.out({ op: "enroll", replica: R("n3") }, { stampedAt: 2_000 });
    expect(d.st.latestStamp).toBe(5_000);
    // the table judges at its own clock, so a read must judge at latestStamp to see the lease lapsed as the log would
    const request = { holder: "B", resources: [{ key: "m", mode: "exclusive" as const }] };
    expect(d.st.claims.wouldRefuse(request, 1_050)).toBeDefined();
    expect(d.st.claims.wouldRefuse(request, d.st.latestStamp)).toBeUndefined();
    expect(d.out({ op: "claims.take", request }, { stampedAt: d.st.latestStamp })).toMatchObject({ claims: { ok: true } });
  });
});

describe("ControlState: a release that names its grant's token (claims.md §2 release, rule 7)", () => {
  const take: ControlCommand = { op: "claims.take", request: { holder: "A", resources: [{ key: "m", mode: "exclusive" }] } };

  it("ends the grant with that token; a stale token releases nothing and says which grant the holder has now", () => {
    const d = new Driver();
    const first = d.out(take); // token = its index, 1
    expect(first).toMatchObject({ claims: { ok: true, grants: [{ token: 1 }] } });
    const released = d.out({ op: "claims.release", holder: "A", key: "m", token: 1 });
    expect(released).toEqual({ kind: "applied", index: 2, key: { client: "c", seq: 2 }, noop: false, claims: true });
    expect(d.out(take)).toMatchObject({ claims: { ok: true, grants: [{ token: 3 }] } });
    // the first release again, as a new act (its key long forgotten): the newer grant stays
    const late = d.out({ op: "claims.release", holder: "A", key: "m", token: 1 });
    expect(late).toEqual({ kind: "applied", index: 4, key: { client: "c", seq: 4 }, noop: false, claims: false, heldToken: 3 });
    expect(d.st.claims.owner("m")).toBe("A");
    expect(d.st.claims.checkFence("m", 3)).toBe(true);
    // another holder's release with the current token ends nothing either: a token names the holder's own grant
    expect(d.out({ op: "claims.release", holder: "B", key: "m", token: 3 })).toMatchObject({ claims: false, heldToken: null });
    expect(d.st.claims.checkFence("m", 3)).toBe(true);
    // an old, token-less entry applies as it always did: whatever A holds goes, and the outcome has no heldToken
    const bare = d.out({ op: "claims.release", holder: "A", key: "m" });
    expect(bare).toEqual({ kind: "applied", index: 6, key: { client: "c", seq: 6 }, noop: false, claims: true });
    expect(d.st.claims.owner("m")).toBeUndefined();
  });

  it("the recorded outcome (heldToken included) survives a snapshot, and a retry under the same key replays it", () => {
    const d = new Driver();
    d.out(take);
    d.out({ op: "claims.release", holder: "A", key: "m", token: 1 });
    d.out(take);
    const key = { client: "idem:k", seq: 1 };
    const late = d.out({ op: "claims.release", holder: "A", key: "m", token: 1 }, { key });
    expect(late).toMatchObject({ claims: false, heldToken: 3 });
    const restored = ControlState.decode(d.st.encode(), { root, claims: { capacity: { pool: 2 } } });
    expect(restored.stateText()).toBe(d.st.stateText());
    expect(restored.outcomeOf(key)).toEqual(late);
    const b = new Driver(restored);
    b.index = d.index;
    expect(b.entry({ op: "claims.release", holder: "A", key: "m", token: 1 }, { key }).outcome).toEqual(late);
    expect(b.out({ op: "claims.release", holder: "A", key: "m", token: 3 }, { key })).toMatchObject({ kind: "conflict", conflict: { reason: "keyReuse" } });
    expect(b.st.claims.owner("m")).toBe("A");
  });
});

describe("ControlState sessions (governed.md §3.3 steps 4–6, §3.10)", () => {
  it("a duplicate with the same digest replays the recorded outcome and changes nothing; a different command under the key is keyReuse", () => {
    const d = new Driver();
    const key = { client: "op", seq: 1 };
    const first = d.entry({ op: "mint", holder: R("n1"), amount: 100n }, { key });
    const again = d.entry({ op: "mint", holder: R("n1"), amount: 100n }, { key });
    expect(again.outcome).toEqual(first.outcome);
    expect(again.decided).toBe(false);
    expect(again.publish).toEqual([]);
    expect(d.st.mintedTotal()).toBe(100n);
    const reuse = d.out({ op: "mint", holder: R("n1"), amount: 7n }, { key });
    expect(reuse).toEqual({ kind: "conflict", index: 3, key, conflict: { reason: "keyReuse", key } });
    expect(d.st.outcomeOf(key)).toEqual(first.outcome);
  });

  it("a retire retried under its key with another witness (through another peer) replays the recorded outcome, not keyReuse", () => {
    // the crash trials (issue 17): the first peer proposed retire with its view as witness and died before answering;
    // the client's retry through another peer carried that peer's view. Same act, same key → the recorded outcome.
    const d = new Driver();
    d.entry({ op: "prepare", record: rec("e1", "root", "a") });
    d.entry({ op: "activate", edge: E("e1") });
    d.entry({ op: "close", edge: E("e1") });
    const mint = d.entry({ op: "mint", holder: R("n1"), amount: 10n });
    const witness = d.st.projection.projectEdge(E("e1")).join(mint.publish[0]!).encode();
    const key = { client: "idem:retry", seq: 1 };
    const first = d.entry({ op: "retire", edge: E("e1"), witness }, { key });
    expect(first.outcome).toMatchObject({ kind: "applied", noop: false });
    const viaOther = d.entry({ op: "retire", edge: E("e1") }, { key });
    expect(viaOther.outcome).toEqual(first.outcome);
    expect(viaOther.decided).toBe(false);
    expect(d.st.replayOf(key, { op: "retire", edge: E("e1") }, 99)).toEqual(first.outcome);
    // another act under the key is still keyReuse
    expect(d.out({ op: "retire", edge: E("e2") }, { key })).toMatchObject({ kind: "conflict", conflict: { reason: "keyReuse" } });
  });

  it("concurrent seqs committed out of order both apply (no high-water mark)", () => {
    const d = new Driver();
    d.out({ op: "mint", holder: R("n1"), amount: 1n }, { key: { client: "op", seq: 2 } });
    expect(d.out({ op: "mint", holder: R("n1"), amount: 2n }, { key: { client: "op", seq: 1 } })).toMatchObject({ kind: "applied", noop: false });
    expect(d.st.mintedTotal()).toBe(3n);
  });

  it("ackFloor raises the floor, drops outcomes below it (pruned), and a seq below the floor is stale and does nothing", () => {
    const d = new Driver();
    for (let seq = 1; seq <= 3; seq++) d.out({ op: "enroll", replica: R(`r${seq}`) }, { key: { client: "op", seq } });
    d.out({ op: "enroll", replica: R("r4") }, { key: { client: "op", seq: 4 }, ackFloor: 3 });
    expect(d.st.outcomeOf({ client: "op", seq: 1 })).toBe("pruned");
    expect(d.st.outcomeOf({ client: "op", seq: 3 })).toMatchObject({ kind: "applied" });
    expect(d.st.outcomeOf({ client: "op", seq: 9 })).toBe("unknown");
    expect(d.st.outcomeOf({ client: "other", seq: 1 })).toBe("unknown");
    const stale = d.out({ op: "mint", holder: R("n1"), amount: 5n }, { key: { client: "op", seq: 2 } });
    expect(stale).toMatchObject({ kind: "conflict", conflict: { reason: "stale", key: { client: "op", seq: 2 } } });
    expect(d.st.mintedTotal()).toBe(0n);
    expect(d.st.outcomeOf({ client: "op", seq: 2 })).toBe("pruned");
  });

  it("a barrier has no key, no session and no effect; foreign entries advance the index only", () => {
    const d = new Driver();
    const s = d.entry({ op: "barrier" }, { key: null });
    expect(s).toMatchObject({ kind: "control", outcome: null, publish: [], enrolled: [] });
    const f = d.st.apply({ kind: "entry", entry: { index: ++d.index, term: 1, kind: "app", key: null, command: new TextEncoder().encode("kv:set"), stampedAt: 0 } });
    expect(f).toMatchObject({ kind: "foreign", publish: [] });
    expect(d.st.appliedIndex).toBe(2);
    expect(d.st.sessionOf("c")).toBeUndefined();
  });
});

describe("ControlState roster (governed.md §3.8)", () => {
  it("enrolledAt replays transitions with index ≤ i (inclusive) and refuses indexes this peer has not applied", () => {
    const d = new Driver();
    d.internal(); // 1
    d.out({ op: "enroll", replica: R("a") }); // 2
    d.out({ op: "enroll", replica: R("b") }); // 3
    d.out({ op: "enroll", replica: R("a") }); // 4: noop, no transition
    d.out({ op: "depart", replica: R("a") }, { proposer: "a" }); // 5
    expect([...d.st.roster.enrolledAt(0)]).toEqual([]);
    expect([...d.st.roster.enrolledAt(1)]).toEqual([]);
    expect([...d.st.roster.enrolledAt(2)]).toEqual(["a"]);
    expect([...d.st.roster.enrolledAt(4)].sort()).toEqual(["a", "b"]);
    expect([...d.st.roster.enrolledAt(5)]).toEqual(["b"]);
    expect(d.st.roster.appliedIndex).toBe(5);
    expect(() => d.st.roster.enrolledAt(6)).toThrow(RangeError);
    expect(() => d.st.roster.enrolledAt(-1)).toThrow(RangeError);
    expect(() => d.st.roster.enrolledAt(1.5)).toThrow(RangeError);
  });
});

describe("ControlState halts instead of diverging (governed.md §3.3)", () => {
  it("halts on a malformed tagged entry, at that index, and on every later call", () => {
    const d = new Driver();
    d.internal();
    const bad = Uint8Array.from([0x48, 0x44, 0x4c, 0x43, 1, ...new TextEncoder().encode("{not json")]);
    const apply = () => d.st.apply({ kind: "entry", entry: { index: 2, term: 1, kind: "app", key: null, command: bad, stampedAt: 0 } });
    expect(apply).toThrow(ControlPlaneHaltedError);
    try {
      apply();
    } catch (e) {
      expect((e as ControlPlaneHaltedError).index).toBe(2);
      expect((e as Error).message).toMatch(/malformed control entry/);
    }
    expect(() => d.st.apply({ kind: "internal", index: 2 })).toThrow(ControlPlaneHaltedError);
    expect(d.st.appliedIndex).toBe(1);
  });

  it("halts on an index gap or repeat", () => {
    const d = new Driver();
    d.internal();
    expect(() => d.st.apply({ kind: "internal", index: 3 })).toThrow(/roster advanced to 3 after 1/);
    const e = new Driver();
    e.internal();
    expect(() => e.st.apply({ kind: "internal", index: 1 })).toThrow(ControlPlaneHaltedError);
  });

  it("halts on a retire witness that does not decode, and on a snapshot that does not restore", () => {
    const d = new Driver();
    d.out({ op: "prepare", record: rec("e1", "root", "a") });
    expect(() => d.entry({ op: "retire", edge: E("e1"), witness: "{broken" })).toThrow(/witness does not decode/);
    const s = new ControlState({ root });
    expect(() => s.apply({ kind: "install", snapshot: { throughIndex: 5, state: new TextEncoder().encode("{}") } })).toThrow(ControlPlaneHaltedError);
  });
});

describe("ControlState snapshots (R-S4)", () => {
  function busy(): Driver {
    const d = new Driver();
    d.internal();
    d.out({ op: "mint", holder: R("n1"), amount: 100n });
    d.out({ op: "prepare", record: rec("e1", "root", "a", 3n) });
    d.out({ op: "activate", edge: E("e1") });
    d.out({ op: "prepare", record: rec("e2", "root", "a") });
    d.out({ op: "activate", edge: E("e2") }); // dualInbound, recorded
    d.out({ op: "enroll", replica: R("n1") });
    d.out({ op: "claims.take", request: { holder: "w", resources: [{ key: "pool", mode: "shared" }], ttlMs: 50 } }, { stampedAt: 10 });
    d.out({ op: "enroll", replica: R("n2") }, { key: { client: "op", seq: 5 }, ackFloor: 2 });
    return d;
  }

  it("encode → decode gives an equal state that goes on deciding alike", () => {
    const a = busy();
    const bytes = a.st.encode();
    const b = new Driver(ControlState.decode(bytes, { root, claims: { capacity: { pool: 2 } } }));
    b.index = a.index;
    b.seq = a.seq;
    expect(b.st.stateText()).toBe(a.st.stateText());
    expect(b.st.appliedIndex).toBe(a.index);
    expect([...b.st.roster.enrolledAt(a.index)].sort()).toEqual(["n1", "n2"]);
    for (const cmd of [{ op: "activate", edge: E("e2") }, { op: "mint", holder: R("n2"), amount: 5n }] as ControlCommand[]) {
      expect(outcomeJson(b.out(cmd))).toEqual(outcomeJson(a.out(cmd)));
    }
    expect(b.st.stateText()).toBe(a.st.stateText());
  });

  it("an install restores the state at its index and republishes the projection and the roster", () => {
    const a = busy();
    const s = new ControlState({ root, claims: { capacity: { pool: 2 } } });
    const step = s.apply({ kind: "install", snapshot: { throughIndex: a.index, state: a.st.encode() } });
    expect(step.kind).toBe("install");
    expect(step.publish[0]!.mintedTotal()).toBe(100n);
    expect(step.enrolled).toEqual(["n1", "n2"]);
    expect(s.stateText()).toBe(a.st.stateText());
  });

  it("refuses a snapshot of another root, other claims options, a wrong index or a non-canonical text", () => {
    const a = busy();
    const bytes = a.st.encode();
    expect(() => ControlState.decode(bytes, { root: GroupId("other"), claims: { capacity: { pool: 2 } } })).toThrow(/root/);
    expect(() => ControlState.decode(bytes, { root, claims: { capacity: { pool: 3 } } })).toThrow(/capacity/);
    const s = new ControlState({ root, claims: { capacity: { pool: 2 } } });
    expect(() => s.apply({ kind: "install", snapshot: { throughIndex: a.index + 1, state: bytes } })).toThrow(/holds a state applied through/);
    const text = new TextDecoder().decode(bytes);
    expect(() => ControlState.decode(new TextEncoder().encode(text.replace('"claimsNow":10', '"claimsNow":11')), { root, claims: { capacity: { pool: 2 } } })).toThrow();
    expect(() => ControlState.decode(new TextEncoder().encode(` ${text}`), { root, claims: { capacity: { pool: 2 } } })).toThrow(/canonical/);
  });
});

// ------------------------------------------------------------------------------------------------ model-based

const ids = ["g0", "g1", "g2", "g3"];
const edges = ["e0", "e1", "e2", "e3", "e4", "e5"];
const reps = ["n1", "n2", "n3"];

type Step = { cmd: ControlCommand; client: string; seq: number; ackFloor: number; proposer: string; stampedAt: number } | { internal: true };

const arbCmd: fc.Arbitrary<ControlCommand> = fc.oneof(
  fc.record({ op: fc.constant("mint" as const), holder: fc.constantFrom(...reps).map(R), amount: fc.oneof(fc.bigInt({ min: 1n, max: 1000n }), fc.constant((1n << 62n) + 1n)) }),
  fc
    .tuple(fc.constantFrom(...edges), fc.constantFrom("root", ...ids), fc.constantFrom("root", ...ids), fc.bigInt({ min: 1n, max: 3n }))
    .map(([id, p, c, w]) => ({ op: "prepare" as const, record: rec(id, p, c, w) })),
  fc.record({ op: fc.constantFrom("activate" as const, "close" as const, "retire" as const), edge: fc.constantFrom(...edges).map(E) }),
  fc.record({ op: fc.constantFrom("enroll" as const, "depart" as const), replica: fc.constantFrom(...reps).map(R) }),
  fc.record({
    op: fc.constant("claims.take" as const),
    request: fc.record({ holder: fc.constantFrom("h1", "h2"), resources: fc.constantFrom([{ key: "m", mode: "exclusive" as const }], [{ key: "pool", mode: "shared" as const }]), ttlMs: fc.integer({ min: 1, max: 300 }) }),
  }),
  fc.record({ op: fc.constant("claims.release" as const), holder: fc.constantFrom("h1", "h2"), key: fc.constantFrom("m", "pool") }),
  // a release naming a grant by token: tokens are entry indexes, so small ones match a grant now and then
  fc.record({ op: fc.constant("claims.release" as const), holder: fc.constantFrom("h1", "h2"), key: fc.constantFrom("m", "pool"), token: fc.integer({ min: 0, max: 30 }) }),
);

const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ internal: true as const }) },
  {
    weight: 12,
    arbitrary: fc.record({
      cmd: arbCmd,
      client: fc.constantFrom("a", "b"),
      seq: fc.integer({ min: 1, max: 12 }),
      ackFloor: fc.integer({ min: 0, max: 6 }),
      proposer: fc.constantFrom(...reps),
      stampedAt: fc.integer({ min: 0, max: 2_000 }),
    }),
  },
);

describe("ControlState against the reference model (fast-check; §5.2 control linearizability (a))", () => {
  it("decides every entry of random, deliberately conflicting logs exactly as the model does, with an equal roster, and survives a snapshot at any point", () => {
    fc.assert(
      fc.property(fc.array(arbStep, { minLength: 1, maxLength: 80 }), fc.nat(), (steps, cut) => {
        let st = new ControlState({ root, claims: { capacity: { pool: 2 } } });
        const model = new ControlModel("root", { capacity: { pool: 2 } });
        const at = cut % steps.length;
        steps.forEach((s, i) => {
          const index = i + 1;
          if ("internal" in s) {
            st.apply({ kind: "internal", index });
            model.applyInternal(index);
          } else {
            const key = { client: s.client, seq: s.seq };
            const command = encodeEnvelope({ v: 1, key, ackFloor: Math.min(s.ackFloor, s.seq), proposer: R(s.proposer), cmd: s.cmd });
            const entry: LogEntry = { index, term: 1, kind: "app", key, command, stampedAt: s.stampedAt };
            const got = st.apply({ kind: "entry", entry }).outcome!;
            const want = model.applyEntry(entry)!;
            expect(canonicalJsonForTest(outcomeJson(got)), `entry ${index}`).toBe(canonicalJsonForTest(outcomeJson(want)));
          }
          if (i === at) {
            const restored = ControlState.decode(st.encode(), { root, claims: { capacity: { pool: 2 } } });
            expect(restored.stateText()).toBe(st.stateText());
            st = restored;
          }
        });
        expect(st.mintedTotal()).toBe(model.total);
        for (let i = 0; i <= steps.length; i++) expect([...st.roster.enrolledAt(i)].sort()).toEqual(model.enrolledAt(i));
        for (const e of edges) expect(st.lifecycle(E(e))).toBe(model.lc.get(e));
        for (const g of ["root", ...ids]) expect(st.liveInbound(GroupId(g))).toEqual(model.live(g));
      }),
      { numRuns: RUNS },
    );
  });
});
