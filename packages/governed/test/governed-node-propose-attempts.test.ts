/**
 * A control call's propose attempts (governed.md §3.10 "up to 5 attempts", §4.1 `proposeRetries`), on one member
 * over a stub log. Found in review (2026-12-04), each test failing on the code before its fix:
 * - attempts were counted per distinct leader, so a member whose leader never changed re-proposed until the call's
 *   timeout; now every attempt counts and the fifth failure ends the call as unknown — with refusals from a leader
 *   that stays the known one spaced like unanswered attempts, so bounces do not spend them in milliseconds;
 * - a `PayloadTooLargeError` from the log (refused before anything was appended, R-R7) was reported as
 *   `OutcomeUnknownError` and left the auto seq open, holding every later entry's ackFloor down for good.
 */
import { afterEach, describe, expect, it } from "vitest";
import { decodeEntry, EtcdRefusedError, OutcomeUnknownError, PayloadTooLargeError, PROPOSE_ATTEMPTS, PROPOSE_ATTEMPT_TIMEOUT_MS, PROPOSE_RETRY_BACKOFF_MS } from "../src/index.ts";
import type { ControlEnvelope } from "../src/index.ts";
import { r } from "./support/governed-cluster.ts";
import { Single } from "./support/single.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});
const single = (): Single => {
  const s = new Single();
  cleanups.push(() => s.shutdown());
  return s;
};

const envelopeAt = (s: Single, index: number): ControlEnvelope => {
  const d = decodeEntry(s.raft.log[index - 1]!.command);
  if (d.kind !== "control") throw new Error(`entry ${index} is not a control entry`);
  return d.envelope;
};

describe("propose attempts (§3.10)", () => {
  it(`a call whose every attempt goes unanswered ends as unknown after ${PROPOSE_ATTEMPTS} attempts, the leader unchanged`, async () => {
    const s = single();
    for (let i = 0; i < PROPOSE_ATTEMPTS + 3; i++) s.raft.plan.push("hang");
    const timeoutMs = 10 * PROPOSE_ATTEMPTS * PROPOSE_ATTEMPT_TIMEOUT_MS;
    const call = s.gov.mint(r("h"), 100n, { timeoutMs });
    const start = s.timers.now();
    const err = await s.settle(call, timeoutMs + 1_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as OutcomeUnknownError).key).toMatchObject({ seq: 1 });
    expect(s.raft.calls.get("propose")).toBe(PROPOSE_ATTEMPTS);
    // ended by the spent attempts, long before the call's own timeout
    expect(s.timers.now() - start).toBeLessThan(timeoutMs / 2);
    expect(s.raft.leader.get()).toBe("n1");
  });

  it("refusals from a leader that stays the known one are spaced by the attempt timeout, and still end after the cap", async () => {
    const s = single();
    for (let i = 0; i < PROPOSE_ATTEMPTS + 3; i++) s.raft.plan.push("append-then-lose");
    const start = s.timers.now();
    const call = s.gov.mint(r("h"), 100n, { timeoutMs: 20 * PROPOSE_ATTEMPT_TIMEOUT_MS });
    void call.catch(() => {});
    await s.run(PROPOSE_ATTEMPT_TIMEOUT_MS / 2);
    expect(s.raft.calls.get("propose")).toBe(1); // not re-proposed every backoff step
    const err = await s.settle(call, 20 * PROPOSE_ATTEMPT_TIMEOUT_MS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect(s.raft.calls.get("propose")).toBe(PROPOSE_ATTEMPTS);
    expect(s.timers.now() - start).toBeGreaterThanOrEqual((PROPOSE_ATTEMPTS - 1) * PROPOSE_ATTEMPT_TIMEOUT_MS);
  });

  it("after a refusal, a newly known leader gets the retry at once", async () => {
    const s = single();
    s.raft.plan.push("append-then-lose");
    const call = s.gov.mint(r("h"), 100n);
    await s.run(1);
    expect(s.raft.calls.get("propose")).toBe(1);
    s.raft.leader.set("n2"); // (the stub still appends and commits the retry itself)
    await s.run(2 * PROPOSE_RETRY_BACKOFF_MS);
    expect(s.raft.calls.get("propose")).toBe(2);
    // the first attempt's entry commits too: both apply, the second as a replay
    expect(await s.settle(call)).toMatchObject({ kind: "applied", index: 1 });
    expect(s.gov.controlView().mintedTotal()).toBe(100n);
  });

  it("a PayloadTooLargeError from the log is a definite refusal that frees the auto seq", async () => {
    const s = single();
    s.raft.plan.push("too-large");
    const err = await s.settle(s.gov.mint(r("h"), 100n)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).not.toBeInstanceOf(OutcomeUnknownError);
    expect(err).toBeInstanceOf(RangeError); // what §2.2 (and the daemon's 400) make of an act refused before proposing
    expect(s.raft.calls.get("propose")).toBe(1); // not retried
    expect(s.raft.log).toHaveLength(0);
    // the next call's ackFloor is its own seq: seq 1 no longer holds it down
    expect(await s.settle(s.gov.mint(r("h"), 100n))).toMatchObject({ kind: "applied", index: 1 });
    expect(envelopeAt(s, 1)).toMatchObject({ key: { seq: 2 }, ackFloor: 2 });
    expect(s.gov.controlView().mintedTotal()).toBe(100n);
  });

  it("etcd refusing the entry as too large is the same definite refusal; its other refusals stay unknown, with etcd's words as the cause (found in review)", async () => {
    const s = single();
    const propose = s.raft.propose.bind(s.raft);
    const refusals = [new EtcdRefusedError("too-large", "etcd refused the call (request is too large)"), new EtcdRefusedError("permission", "etcd refused the call (permission denied)")];
    (s.raft as { propose: typeof propose }).propose = (c, k, sig) => {
      const next = refusals.shift();
      return next === undefined ? propose(c, k, sig) : Promise.reject(next);
    };
    const tooLarge = await s.settle(s.gov.mint(r("h"), 100n)).catch((e: unknown) => e);
    expect(tooLarge).toBeInstanceOf(PayloadTooLargeError);
    expect((tooLarge as Error).message).toMatch(/--max-request-bytes/);
    // a permission refusal may follow an attempt that timed out and landed: unknown, saying what etcd said
    const denied = await s.settle(s.gov.mint(r("h"), 7n)).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(OutcomeUnknownError);
    expect(((denied as Error).cause as Error).message).toMatch(/permission denied/);
    // the too-large call's seq 1 was freed; the permission-refused seq 2 stays open (it may yet commit)
    expect(await s.settle(s.gov.mint(r("h"), 100n))).toMatchObject({ kind: "applied", index: 1 });
    expect(envelopeAt(s, 1)).toMatchObject({ key: { seq: 3 }, ackFloor: 2 });
  });
});
