/**
 * The leader's dedup cache (governed.md R-D4) meets the control plane's keyed retries (§3.10). With the cache on
 * (`maxDedupKeys` default), a retry whose key the leader still remembers is not appended again: `propose` answers
 * with the index of the entry that already carries the key. When that entry was applied here before the retry
 * began, no later apply step will ever name the key again, so the retry must be answered from the outcome recorded
 * at that index — not left waiting for an apply that never comes (it used to time out with `OutcomeUnknownError`).
 * An `idem:` key's outcome is forgotten past its retention window while its entry can still be in the log, so a
 * Raft node under the daemon leaves `idem:` keys out of the cache, and one that does not fails such a retry at once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { IDEMPOTENCY_CLIENT_PREFIX, OutcomeUnknownError } from "../src/index.ts";
import type { ControlOutcome, ProposalKey } from "../src/index.ts";
import { GovernedCluster, r } from "./support/governed-cluster.ts";
import type { GovPeer } from "./support/governed-cluster.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});

/** How many entries of `p`'s persisted log carry `key`. */
const carrying = (p: GovPeer, key: ProposalKey): number => p.disk.entries.filter((x) => x.key?.client === key.client && x.key.seq === key.seq).length;

/**
 * Elects a leader and has every member apply one entry first. The cache coalesces identical bytes only, and a member
 * carries its settings in the entries it proposes until its log has fixed them (the first entry does), so an act
 * proposed before that and retried after it is other bytes: these tests retry in the steady state after it.
 */
async function electFixed(c: GovernedCluster): Promise<GovPeer> {
  const leader = await c.elect();
  await c.settle(leader.gov.claims.take({ holder: "warm-up", resources: [{ key: "warm-up", mode: "exclusive" }] }));
  await c.until(() => c.live().every((p) => p.gov.controlView().fixedSettings !== null), 5_000, "every member applying the entry that fixes the settings");
  return leader;
}

function cluster(seed: number): GovernedCluster {
  const c = new GovernedCluster({ seed, voters: ["n1", "n2", "n3"], learners: ["l1"] });
  cleanups.push(() => c.shutdown());
  return c;
}

describe("keyed retries coalesced by the leader's dedup cache (R-D4) resolve from the recorded outcome", () => {
  it("a durable-key retry after the act applied, on the leader, a follower and a learner: the first outcome, nothing appended, one mint each", async () => {
    const c = cluster(41);
    const leader = await electFixed(c);
    const follower = c.live().find((p) => p !== leader && p.id !== "l1")!;
    const learner = c.peer("l1");
    for (const p of [leader, follower, learner]) {
      const key = { client: `ops-${p.id}`, seq: 1 };
      const first = await c.settle(p.gov.mint(r("n1"), 100n, { key, ackFloor: 1 }));
      expect(first.kind).toBe("applied");
      await c.until(() => c.allApplied(first.index!), 5_000, "every peer applying the mint");
      const last = leader.raft.commitIndex.get();
      // the timeout is far above a round trip: a retry that waited for a new apply would run into it
      const again: ControlOutcome = await c.settle(p.gov.mint(r("n1"), 100n, { key, ackFloor: 1, timeoutMs: 3_000 }), 5_000);
      expect(again, `retry on ${p.id}`).toEqual(first);
      await c.run(100);
      expect(carrying(leader, key), `entries carrying ${p.id}'s key`).toBe(1); // coalesced: no duplicate appended
      expect(leader.raft.commitIndex.get()).toBe(last);
    }
    for (const p of c.live()) expect(p.gov.controlView().mintedTotal()).toBe(300n);
    // a retry through another peer is another proposer's entry (other bytes): appended, and replayed, never re-applied
    const key = { client: `ops-${leader.id}`, seq: 1 };
    const recorded = leader.gov.controlView().outcomeOf(key);
    expect(await c.settle(learner.gov.mint(r("n1"), 100n, { key, ackFloor: 1, timeoutMs: 3_000 }), 5_000)).toEqual(recorded);
    await c.run(100);
    expect(carrying(leader, key)).toBe(2);
    for (const p of c.live()) expect(p.gov.controlView().mintedTotal()).toBe(300n);
  }, 60_000);

  it("an act that fixed the settings, retried once they are fixed: other bytes (version 1), so appended, and replayed — one mint", async () => {
    const c = cluster(45);
    const leader = await c.elect(); // nothing fixed yet: this mint is the log's first act and carries the settings
    const key = { client: "ops-first", seq: 1 };
    const first = await c.settle(leader.gov.mint(r("n1"), 100n, { key, ackFloor: 1 }));
    expect(leader.gov.controlView().fixedSettings?.fixedAt).toBe(first.index);
    const again = await c.settle(leader.gov.mint(r("n1"), 100n, { key, ackFloor: 1, timeoutMs: 3_000 }), 5_000);
    expect(again).toEqual(first);
    await c.run(100);
    expect(carrying(leader, key)).toBe(2);
    for (const p of c.live()) expect(p.gov.controlView().mintedTotal()).toBe(100n);
  }, 60_000);

  it("an auto-key mint that timed out while its leader was cut off, then committed: the retry with its key returns the first outcome", async () => {
    const c = cluster(42);
    const leader = await electFixed(c);
    c.net.partition([[leader.id]], "silent");
    let err: unknown;
    // shorter than check-quorum's step-down, so the entry stays in the leader's log and commits after the heal
    await c.settle(leader.gov.mint(r("n1"), 100n, { timeoutMs: 100 }).catch((x: unknown) => (err = x)), 1_000);
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    const key = (err as OutcomeUnknownError).key!;
    c.net.heal();
    await c.until(() => leader.gov.controlView().mintedTotal() === 100n, 5_000, "the timed-out mint committing after the heal");
    const recorded = leader.gov.controlView().outcomeOf(key);
    expect(recorded).toMatchObject({ kind: "applied", key });
    const again = await c.settle(leader.gov.mint(r("n1"), 100n, { key, timeoutMs: 3_000 }), 5_000);
    expect(again).toEqual(recorded);
    await c.run(200);
    const now = c.leader()!;
    expect(carrying(now, key)).toBe(1);
    for (const p of c.live()) expect(p.gov.controlView().mintedTotal()).toBe(100n);
  }, 60_000);

  it("a retry below its client's ackFloor that the leader coalesces answers stale, as an appended retry would", async () => {
    const c = cluster(43);
    const leader = await electFixed(c);
    const k1 = { client: "ops", seq: 1 };
    expect((await c.settle(leader.gov.mint(r("n1"), 1n, { key: k1, ackFloor: 1 }))).kind).toBe("applied");
    // the next act promises never to retry seq 1 again, which prunes its outcome
    expect((await c.settle(leader.gov.mint(r("n1"), 2n, { key: { client: "ops", seq: 2 }, ackFloor: 2 }))).kind).toBe("applied");
    expect(leader.gov.controlView().outcomeOf(k1)).toBe("pruned");
    const again = await c.settle(leader.gov.mint(r("n1"), 1n, { key: k1, ackFloor: 1, timeoutMs: 3_000 }), 5_000);
    expect(again).toMatchObject({ kind: "conflict", key: k1, conflict: { reason: "stale", key: k1 } });
    expect(leader.gov.controlView().mintedTotal()).toBe(3n);
  }, 60_000);

  it("a key reused for another command, retried so the leader coalesces it, answers keyReuse again — not the first command's outcome", async () => {
    const c = cluster(44);
    const leader = await electFixed(c);
    const k = { client: "ops", seq: 1 };
    const first = await c.settle(leader.gov.mint(r("n1"), 5n, { key: k, ackFloor: 1 }));
    expect(first.kind).toBe("applied");
    const misuse = await c.settle(leader.gov.mint(r("n1"), 6n, { key: k, ackFloor: 1 }));
    expect(misuse).toMatchObject({ kind: "conflict", key: k, conflict: { reason: "keyReuse", key: k } });
    await c.until(() => leader.gov.controlView().appliedIndex >= misuse.index!, 1_000, "the misuse applied");
    const again = await c.settle(leader.gov.mint(r("n1"), 6n, { key: k, ackFloor: 1, timeoutMs: 3_000 }), 5_000);
    expect(again).toEqual(misuse);
    await c.run(100);
    expect(carrying(leader, k)).toBe(2); // the misuse's retry was coalesced with the misuse's entry
    expect(leader.gov.controlView().mintedTotal()).toBe(5n);
  }, 60_000);
});

describe("idem: keys past their retention window meet the leader's dedup cache", () => {
  const WINDOW = 3;
  const idemCluster = (seed: number, coalesce?: (k: ProposalKey) => boolean): GovernedCluster => {
    const c = new GovernedCluster({ seed, voters: ["n1", "n2", "n3"], idempotencyWindow: WINDOW, ...(coalesce === undefined ? {} : { coalesce }) });
    cleanups.push(() => c.shutdown());
    return c;
  };
  /** `n` more applied control entries, none under an idem: key. */
  const push = async (c: GovernedCluster, p: GovPeer, n: number): Promise<void> => {
    for (let i = 0; i < n; i++) expect((await c.settle(p.gov.enroll(r("n1")))).kind).toBe("applied");
  };

  it("with idem: keys left out of the cache (as the daemon builds it), a late retry is appended, decided anew, and mints nothing twice", async () => {
    const c = idemCluster(51, (k) => !k.client.startsWith(IDEMPOTENCY_CLIENT_PREFIX));
    const leader = await electFixed(c);
    const key = { client: "idem:late", seq: 1 };
    const first = await c.settle(leader.gov.mint(r("n1"), 100n, { key }));
    expect(first).toMatchObject({ kind: "applied", noop: false });
    // a retry in flight or just applied is appended too, and replays the recorded outcome
    expect(await c.settle(leader.gov.mint(r("n1"), 100n, { key, timeoutMs: 3_000 }), 5_000)).toEqual(first);
    expect(carrying(leader, key)).toBe(2);
    await push(c, leader, WINDOW + 1);
    expect(leader.gov.controlView().outcomeOf(key)).toBe("unknown");
    const late = await c.settle(leader.gov.mint(r("n1"), 100n, { key, timeoutMs: 3_000 }), 5_000);
    expect(late).toMatchObject({ kind: "applied", noop: true, mintId: first.kind === "applied" ? first.mintId : "" });
    expect(late.index).toBeGreaterThan(first.index!);
    for (const p of c.live()) expect(p.gov.controlView().mintedTotal()).toBe(100n);
  }, 60_000);

  it("with a cache that coalesces idem: keys, a late retry pointed at a forgotten entry fails at once with OutcomeUnknownError saying why", async () => {
    const c = idemCluster(52);
    const leader = await electFixed(c);
    const key = { client: "idem:late", seq: 1 };
    const first = await c.settle(leader.gov.mint(r("n1"), 100n, { key }));
    await push(c, leader, WINDOW + 1);
    const started = c.timers.now();
    const late = leader.gov.mint(r("n1"), 100n, { key, timeoutMs: 20_000 });
    await expect(c.settle(late, 25_000)).rejects.toThrow(OutcomeUnknownError);
    await expect(late).rejects.toThrow(new RegExp(`coalesced this retry with the entry at ${first.index}`));
    expect(c.timers.now() - started).toBeLessThan(20_000); // answered, not timed out
    expect(carrying(leader, key)).toBe(1);
    for (const p of c.live()) expect(p.gov.controlView().mintedTotal()).toBe(100n);
  }, 60_000);
});
