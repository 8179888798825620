// The control plane over HTTP on a one-voter governed peer (in-process): idempotent mint, structured
// conflicts, outcomes by key, claims, and refused requests that change nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeUnknownAnswer, proposalKeyOf } from "../src/api.ts";
import { governedSoloDaemon, type SoloDaemon } from "./support/embedded.ts";

let s: SoloDaemon;

/** The ledger bytes and the control state (its applied index aside: a replayed or refused act still takes an entry). */
async function state(): Promise<string> {
  const [st, view] = await Promise.all([s.client.status(), s.client.controlView()]);
  const { appliedIndex: _, ...rest } = view as Record<string, unknown>;
  return JSON.stringify([(st as { ledgerDigest: string }).ledgerDigest, rest]);
}

/** Waits until the scheduler has nothing left to do (it seats a newly active edge on its next round). */
async function settled(): Promise<string> {
  let last = await state();
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await state();
    if (now === last) return now;
    last = now;
  }
  throw new Error("the ledger kept changing");
}

beforeAll(async () => {
  s = await governedSoloDaemon();
});
afterAll(() => s.close());

describe("HTTP API: governed control plane", () => {
  it("applies a mint retried with the same Idempotency-Key once, on the same index, and serves its outcome by key", async () => {
    const a = (await s.client.mint(1000, { holder: s.daemon.self, idempotencyKey: "supply-1" })) as { kind: string; index: number; mintId: string };
    expect(a).toMatchObject({ kind: "applied", noop: false });
    const before = await state();
    const b = (await s.client.mint(1000, { holder: s.daemon.self, idempotencyKey: "supply-1" })) as { index: number; mintId: string };
    expect(b.index).toBe(a.index);
    expect(b.mintId).toBe(a.mintId);
    expect(await state()).toBe(before);
    expect(((await s.client.sync()) as { mintedTotal: string }).mintedTotal).toBe("1000");
    const o = (await s.client.outcome({ idempotencyKey: "supply-1" })) as { outcome: { index: number } };
    expect(o.outcome.index).toBe(a.index);
    const none = await s.client.raw("GET", "/v1/control/outcome?idempotencyKey=never-used");
    expect(none.status).toBe(404);
    // The same key with another body is a conflict that changes nothing.
    const reuse = await s.client.raw("POST", "/v1/control/mint", { amount: "7", holder: s.daemon.self }, { idempotencyKey: "supply-1" });
    expect(reuse.status).toBe(409);
    expect(reuse.body).toMatchObject({ error: "conflict", conflict: { reason: "keyReuse" } });
    // the remedy is to look up what the key did (it may have applied), never a bare "send a new key"
    expect((reuse.body as { message: string }).message).toContain("GET /v1/control/outcome?idempotencyKey=supply-1 (heddle outcome --idempotency-key supply-1)");
    expect(await state()).toBe(before);
    // Out-of-range numbers are 400s naming their field, and change nothing.
    const huge = await s.client.raw("POST", "/v1/control/mint", { amount: "9223372036854775808" });
    expect(huge.status).toBe(400);
    expect(huge.body).toMatchObject({ error: "invalid-request", issues: [{ field: "amount", in: "body" }] });
    const weight = await s.client.raw("POST", "/v1/control/prepare", { id: "e-heavy", parent: "root", child: "heavy", weight: "9999999999999999999" });
    expect(weight.status).toBe(400);
    expect(weight.body).toMatchObject({ error: "invalid-request", issues: [{ field: "weight", in: "body" }] });
    const noSeq = await s.client.raw("GET", "/v1/control/outcome?client=c1");
    expect(noSeq.status).toBe(400);
    expect(noSeq.body).toMatchObject({ issues: [{ field: "seq", in: "query" }] });
    const seq = await s.client.raw("GET", "/v1/control/outcome?client=c1&seq=9007199254740993");
    expect(seq.status).toBe(400);
    expect(seq.body).toMatchObject({ error: "invalid-request", issues: [{ field: "seq", in: "query" }] });
    expect(await state()).toBe(before);
  });

  it("answers conflicts with 409 carrying the spec's conflict object, and nothing changes", async () => {
    expect(await s.client.prepare({ id: "e1", parent: "root", child: "a", weight: 1 })).toMatchObject({ kind: "applied" });
    expect(await s.client.activate("e1")).toMatchObject({ kind: "applied" });
    expect(await s.client.prepare({ id: "e2", parent: "root", child: "a", weight: 2 })).toMatchObject({ kind: "applied" });
    const before = await settled();
    const dual = await s.client.raw("POST", "/v1/control/activate", { edge: "e2" });
    expect(dual.status).toBe(409);
    expect(dual.body).toMatchObject({ error: "conflict", conflict: { reason: "dualInbound", child: "a", incumbent: "e1", rejected: "e2" }, index: expect.any(Number) });
    const unknown = await s.client.raw("POST", "/v1/control/close", { edge: "nope" });
    expect(unknown.body).toMatchObject({ conflict: { reason: "unknownEdge", edge: "nope" } });
    const mismatch = await s.client.raw("POST", "/v1/control/prepare", { id: "e1", parent: "root", child: "a", weight: 5 });
    expect(mismatch.body).toMatchObject({ conflict: { reason: "recordMismatch", edge: "e1", existing: { weight: "1" }, proposed: { weight: "5" } } });
    const notClosing = await s.client.raw("POST", "/v1/control/retire", { edge: "e1" });
    expect(notClosing.body).toMatchObject({ conflict: { reason: "notClosing", edge: "e1", current: "ACTIVE" } });
    // The conflicts took log entries (recorded outcomes) but changed no edge, no mint and no ledger byte.
    expect(await state()).toBe(before);
  });

  it("refuses a prepare whose child is its parent or the root with 400 naming child, before proposing anything", async () => {
    const root = ((await s.client.status()) as { root: string }).root;
    const applied = async () => ((await s.client.roster()) as { appliedIndex: number }).appliedIndex;
    const at = await applied();
    const self = await s.client.raw("POST", "/v1/control/prepare", { id: "loop", parent: "a", child: "a", weight: 1 });
    expect(self.status).toBe(400);
    expect(self.body).toMatchObject({ error: "invalid-request", issues: [{ field: "child", in: "body" }] });
    expect((self.body as { message: string }).message).toContain("the same group as parent");
    const rootChild = await s.client.raw("POST", "/v1/control/prepare", { id: "up", parent: "a", child: root, weight: 1 });
    expect(rootChild.status).toBe(400);
    expect(rootChild.body).toMatchObject({ error: "invalid-request", issues: [{ field: "child", in: "body" }] });
    expect((rootChild.body as { message: string }).message).toContain("the root (mode.root)");
    // nothing reached the log: before, each was committed as a 409 invalidRecord
    expect(await applied()).toBe(at);
  });

  it("every conflict says what to do", async () => {
    const msg = async (path: string, body: unknown) => {
      const r = await s.client.raw("POST", path, body);
      expect(r.status, JSON.stringify(r.body)).toBe(409);
      return (r.body as { message: string }).message;
    };
    await s.client.prepare({ id: "m1", parent: "root", child: "m", weight: 1 });
    expect(await msg("/v1/control/prepare", { id: "m1", parent: "root", child: "m", weight: 4 })).toMatch(/recordMismatch: edge m1 is already prepared as root → m \(weight 1\).*under a new edge id/);
    expect(await msg("/v1/control/close", { edge: "m1" })).toMatch(/notActive: m1 is PREPARED .*heddle activate m1.*heddle retire m1/);
    await s.client.activate("m1");
    expect(await msg("/v1/control/retire", { edge: "m1" })).toMatch(/notClosing: m1 is ACTIVE; close it first \(heddle close m1\)/);
    await s.client.closeEdge("m1");
    expect(await msg("/v1/control/activate", { edge: "m1" })).toMatch(/lifecycleRegression: m1 is CLOSING.*never back to ACTIVE; to attach its child again, prepare a new edge id/);
    // x → y live; then y → x would make x its own ancestor (x has no live inbound edge, so no dualInbound first)
    await s.client.prepare({ id: "xy", parent: "x", child: "y", weight: 1 });
    await s.client.activate("xy");
    await s.client.prepare({ id: "yx", parent: "y", child: "x", weight: 1 });
    expect(await msg("/v1/control/activate", { edge: "yx" })).toMatch(/wouldCycle: activating yx would close a cycle through xy .*attach the child under a group that is not below it/);
    const total = BigInt(((await s.client.sync()) as { mintedTotal: string }).mintedTotal);
    expect(await msg("/v1/control/mint", { amount: "9223372036854775807" })).toContain(`At most ${(2n ** 63n - 1n - total).toString()} more can be minted`);
  });

  it("takes, refuses and releases claims", async () => {
    const t = (await s.client.claimsTake({ holder: "alice", resources: [{ key: "deploy", mode: "exclusive" }] })) as { claims: { ok: boolean; grants: { token: number }[] } };
    expect(t.claims.ok).toBe(true);
    const blocked = await s.client.raw("POST", "/v1/claims/take", { holder: "bob", resources: [{ key: "deploy", mode: "exclusive" }] });
    expect(blocked.status).toBe(409);
    expect(blocked.body).toMatchObject({ error: "refused", refusal: { kind: "blocked", blocked: [{ key: "deploy", holders: ["alice"] }] } });
    expect(await s.client.claimsList("deploy")).toMatchObject({ holders: ["alice"], owner: "alice" });
    expect(await s.client.claimsRelease("alice", "deploy")).toMatchObject({ claims: true });
    expect(await s.client.claimsList("deploy")).toMatchObject({ holders: [] });
  });

  it("serves shared claims as mode.claims configures the table: a reader/writer lock, a pool, a roster", async () => {
    const g = await governedSoloDaemon({
      config: (c) => (c.mode.kind === "governed" ? { ...c, mode: { ...c.mode, claims: { capacity: { doc: null, pool: 2 }, roster: ["doc", "pool", "lock"] } } } : c),
    });
    try {
      const take = (holder: string, key: string, mode: "exclusive" | "shared") => g.client.raw("POST", "/v1/claims/take", { holder, resources: [{ key, mode }] });
      // capacity null: any number of readers; the writer is refused naming them all
      expect((await take("r1", "doc", "shared")).status).toBe(200);
      expect((await take("r2", "doc", "shared")).status).toBe(200);
      const writer = await take("w", "doc", "exclusive");
      expect(writer.status).toBe(409);
      expect(writer.body).toMatchObject({ refusal: { blocked: [{ key: "doc", reason: "held", capacity: null, holders: ["r1", "r2"] }] } });
      // a pool of 2 units: the third shared holder is refused for capacity
      expect((await take("p1", "pool", "shared")).status).toBe(200);
      expect((await take("p2", "pool", "shared")).status).toBe(200);
      expect((await take("p3", "pool", "shared")).body).toMatchObject({ refusal: { blocked: [{ key: "pool", reason: "capacity", capacity: 2, holders: ["p1", "p2"] }] } });
      // an unlisted key of the roster is a mutex; a key off the roster is refused
      expect((await take("x", "lock", "shared")).status).toBe(200);
      expect((await take("y", "lock", "shared")).body).toMatchObject({ refusal: { blocked: [{ key: "lock", reason: "capacity", capacity: 1 }] } });
      expect((await take("z", "dco", "exclusive")).body).toMatchObject({ refusal: { blocked: [{ key: "dco", reason: "not-on-roster" }] } });
    } finally {
      await g.close();
    }
  });

  it("reports the Raft member and the enrolled roster", async () => {
    const r = (await s.client.roster()) as { enrolled: string[]; raft: { role: string; leader: string; voters: string[] } };
    expect(r.enrolled).toEqual([s.daemon.self]);
    expect(r.raft).toMatchObject({ role: "leader", leader: s.daemon.self, voters: [s.daemon.self] });
    const st = (await s.client.status()) as { mode: string; control: { isWritable: boolean } };
    expect(st).toMatchObject({ mode: "governed", control: { isWritable: true } });
    // a lone voter installs no snapshot: the stall list is there, and empty
    expect((st as unknown as { control: { snapshotStalls: unknown[] } }).control.snapshotStalls).toEqual([]);
  });

  it("takes a body-less call whose fields are all optional, and the bearer scheme in any case", async () => {
    const r = await fetch(`${s.daemon.url}/v1/control/enroll`, { method: "POST", headers: { authorization: `bearer ${s.daemon.token}` } });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ kind: "applied" });
    const upper = await fetch(`${s.daemon.url}/v1/status`, { headers: { authorization: `BEARER ${s.daemon.token}` } });
    expect(upper.status).toBe(200);
    await upper.arrayBuffer();
    const basic = await fetch(`${s.daemon.url}/v1/status`, { headers: { authorization: `Basic ${s.daemon.token}` } });
    expect(basic.status).toBe(401);
    await basic.arrayBuffer();
  });

  it("enroll refuses an id off the cluster's roster (400 naming replica), applying nothing (found by a new user's walkthrough)", async () => {
    const before = ((await s.client.roster()) as { enrolled?: unknown[] }).enrolled;
    expect(Array.isArray(before) && before.length > 0).toBe(true);
    const r = await s.client.raw("POST", "/v1/control/enroll", { replica: "NOTAPEER" });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: "invalid-request", issues: [{ field: "replica" }] });
    expect((r.body as { message: string }).message).toMatch(/not a peer of this cluster's roster/);
    expect(((await s.client.roster()) as { enrolled?: unknown[] }).enrolled).toEqual(before);
  });

  it("a 504 says how to retry safely: with the Idempotency-Key, or (unkeyed) after looking the outcome up", () => {
    const keyed = outcomeUnknownAnswer(proposalKeyOf("supply-9"));
    expect(keyed.message).toMatch(/Retry with the same Idempotency-Key/);
    const auto = outcomeUnknownAnswer({ client: "auto:n1:abc", seq: 7 });
    expect(auto.message).toContain("no Idempotency-Key");
    expect(auto.message).toContain("GET /v1/control/outcome?client=auto%3An1%3Aabc&seq=7");
    expect(auto.message).not.toMatch(/Retry with the same Idempotency-Key/);
    expect(auto.key).toEqual({ client: "auto:n1:abc", seq: 7 });
    // what the control log said travels with it (e.g. etcd refusing this peer's user), when it said something
    expect(keyed).not.toHaveProperty("cause");
    const denied = outcomeUnknownAnswer(proposalKeyOf("supply-9"), Object.assign(new Error("etcd refused the call (permission denied): check the etcd user's role"), { name: "EtcdRefusedError" }));
    expect(denied.cause).toBe("EtcdRefusedError: etcd refused the call (permission denied): check the etcd user's role");
  });

  // A prepare under a parent no edge names is applied, by the spec: governed.md §3.4 lists prepare's checks (self-loop,
  // root as child, the id's record) and none is about the parent, and ledger.md ⟨1.1⟩ §5.2 makes a group whose walk
  // ends at a top group that is no mint root *detached* — a normal state (a subtree built before it hangs under the
  // root, or a tree built before the first mint), not a fault. So the API does not refuse it as `bounds` refuses an
  // unknown parent (a read of something that is not there); the child reads 0 and takes no work until the parent is
  // attached, and that is what this pins.
  it("applies a prepare under a parent no edge names (governed.md §3.4); the child stays detached until the parent hangs under the root", async () => {
    type Tree = { groups: { group: string; detached: boolean; holdings: string }[] };
    const group = async (g: string) => ((await s.client.tree()) as Tree).groups.find((x) => x.group === g);
    expect(await group("staging")).toBeUndefined();
    expect((await s.client.raw("GET", "/v1/bounds?parent=staging")).status).toBe(404);
    expect(await s.client.prepare({ id: "e-orphan", parent: "staging", child: "orphan", weight: 1 })).toMatchObject({ kind: "applied", noop: false });
    expect(await s.client.activate("e-orphan")).toMatchObject({ kind: "applied", noop: false });
    expect(await group("staging")).toMatchObject({ detached: true, holdings: "0" });
    expect(await group("orphan")).toMatchObject({ detached: true, holdings: "0" });
    const refused = await s.client.raw("POST", "/v1/reservations", { leaf: "orphan", maximumCost: "1" });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ refusal: { kind: "no-lineage" } });
    // once the parent hangs under the root, the child is attached like any other
    expect(await s.client.prepare({ id: "e-staging", parent: "root", child: "staging", weight: 1 })).toMatchObject({ kind: "applied" });
    expect(await s.client.activate("e-staging")).toMatchObject({ kind: "applied" });
    expect(await group("orphan")).toMatchObject({ detached: false });
    expect((await s.client.raw("GET", "/v1/bounds?parent=staging")).status).toBe(200);
  });

  it("reports available and earmarked holdings as a static peer does (found in review: null on a governed peer, so heddle bench waited for entitlement it could not see)", async () => {
    const h = (await s.client.holdings("root")) as { groups: { group: string; holdings: string; available: string | null; earmarked: string | null }[] };
    expect(h.groups[0]).toMatchObject({ group: "root", available: expect.stringMatching(/^[0-9]+$/), earmarked: "0" });
    expect(h.groups[0]!.available).toBe(h.groups[0]!.holdings);
  });
});
