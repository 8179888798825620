/**
 * The governed node's answers per key and its writer gate (governed.md §3.9, §3.10), on one member over a stub log:
 * - a replayed old enroll(self) after depart() does not reopen the writer gate;
 * - two calls under one key with different commands each get the answer for their own command (`keyReuse` for the
 *   second), and neither moves the gate unless its own enroll applied.
 * Both were found in review (2026-12-04); each test fails on the code before the fix.
 * Found in a second review (2026-12-04), each failing on the code before its fix:
 * - after a restart, an enroll(self) retried under a key a pre-boot entry carries does not open the gate from that
 *   entry's replay (§3.9 b), and the gate follows the applied roster (a later depart of self closes it, §3.9 a);
 * - at the idempotency window's edge, a call under a key whose record the same step forgets is answered with its
 *   own entry's outcome, never another command's.
 * Found in review s28 (2026-12-04), failing on the code before its fix:
 * - after a restart, an enroll(self) retried under a durable key that the leader's dedup cache (R-D4) coalesces with
 *   the pre-boot entry does not open the gate before the entries committed after that one are applied (§3.9 b) —
 *   on the stub, and on a real single-voter Raft log over SQLite.
 */
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryNetwork, seededRandom, sqliteStore } from "@heddle/node";
import { VirtualTimers } from "@heddle/seam/testing";
import { ControlState, encodeEnvelope, heddleGoverned, raftChannelTransport, raftNode, sqliteRaftStorage } from "../src/index.ts";
import type { ControlCommand, GovernedHeddleNode, ProposalKey } from "../src/index.ts";
import { g, r, settleOn, testConfig } from "./support/governed-cluster.ts";
import { Single } from "./support/single.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});
const single = (...args: ConstructorParameters<typeof Single>): Single => {
  const s = new Single(...args);
  cleanups.push(() => s.shutdown());
  return s;
};

/** An entry as a process of `n1` proposes it under `key` (what a previous incarnation left in the log). */
const entryOf = (key: ProposalKey, cmd: ControlCommand): Uint8Array => encodeEnvelope({ v: 1, key, ackFloor: 0, proposer: r("n1"), cmd });

/** Settles within the turns given, or reports "pending". */
async function within<T>(s: Single, p: Promise<T>, ms: number): Promise<T | "pending"> {
  let out: T | "pending" = "pending";
  void p.then((v) => (out = v), () => {});
  await s.run(ms);
  return out;
}

describe("the writer gate (§3.9) and answers per key (§3.10)", () => {
  it("a replayed old enroll(self) after depart() does not reopen the writer gate", async () => {
    const s = single();
    const key = { client: "ops", seq: 1 };
    expect((await s.settle(s.gov.enroll(r("n1"), { key }))).kind).toBe("applied");
    expect(s.gov.isWritable).toBe(true);
    expect((await s.settle(s.gov.depart())).kind).toBe("applied");
    expect(s.gov.isWritable).toBe(false);
    const again = await s.settle(s.gov.enroll(r("n1"), { key }));
    expect(again).toMatchObject({ kind: "applied", index: 1 }); // the recorded outcome, replayed
    expect(s.gov.enrolledReplicas().has(r("n1"))).toBe(false);
    expect(s.gov.isWritable).toBe(false);
    // a fresh enroll opens it again
    expect((await s.settle(s.gov.enroll(r("n1")))).kind).toBe("applied");
    expect(s.gov.isWritable).toBe(true);
  });

  it("two concurrent calls under one key with different commands: each gets its own command's answer", async () => {
    const s = single();
    const key = { client: "idem:abc", seq: 1 };
    const [m, en] = await s.settle(Promise.all([s.gov.mint(r("n1"), 100n, { key }), s.gov.enroll(r("n1"), { key })]));
    expect(m).toMatchObject({ kind: "applied", mintId: "mint:idem:abc:1" });
    expect(en).toMatchObject({ kind: "conflict", conflict: { reason: "keyReuse" } });
    expect(s.gov.enrolledReplicas().has(r("n1"))).toBe(false);
    expect(s.gov.isWritable).toBe(false);
    // and a retry of the mint under its key still gets the mint's outcome
    expect(await s.settle(s.gov.mint(r("n1"), 100n, { key }))).toMatchObject({ kind: "applied", mintId: "mint:idem:abc:1" });
  });

  it("after a restart, an enroll(self) retried under a key of a pre-boot entry opens the gate only at its own entry", async () => {
    // the key the daemon derives from an Idempotency-Key; the previous incarnation enrolled under it, then departed
    const K = { client: "idem:0123456789abcdef0123456789abcdef", seq: 1 };
    const s = single("inc-new", {
      log: (raft) => {
        raft.commitRaw(entryOf(K, { op: "enroll", replica: r("n1") }), K); // 1
        const old = { client: "auto:n1:inc-old", seq: 1 };
        raft.commitRaw(entryOf(old, { op: "depart", replica: r("n1") }), old); // 2
        raft.replayTo(0); // the replay has not started when the client retries
      },
    });
    const call = s.gov.enroll(r("n1"), { key: K }); // appended at 3
    await s.run(5);
    s.raft.replayTo(1); // the replay reaches the old enroll only
    expect(await within(s, call, 20)).toBe("pending"); // its own entry (3) is not applied yet
    expect(s.gov.controlView().appliedIndex).toBe(1);
    expect(s.gov.isWritable).toBe(false); // §3.9(b): no write against a control state older than this boot
    s.raft.replayTo(Number.POSITIVE_INFINITY); // the old depart (2), then the retry's own entry (3): a replay
    expect(await s.settle(call)).toMatchObject({ kind: "applied", index: 1 });
    expect(s.gov.controlView().appliedIndex).toBe(3);
    expect(s.gov.enrolledReplicas().has(r("n1"))).toBe(false);
    expect(s.gov.isWritable).toBe(false); // §3.9(a): every writer is an enrolled writer
    // a fresh enroll(self) enrolls it again and opens the gate
    expect(await s.settle(s.gov.enroll(r("n1")))).toMatchObject({ kind: "applied", index: 4, noop: false });
    expect(s.gov.isWritable).toBe(true);
  });

  it("after a restart, an enroll(self) retry the leader coalesces with a pre-boot entry opens no gate on a stale prefix", async () => {
    // a durable (non-idem:) key, which the leader's dedup cache may coalesce; the previous process's first entry was
    // enroll(self) under it (version 2, fixing the settings: the bytes the new process proposes again), then it departed
    const K = { client: "ops:n1-enroll", seq: 1 };
    const settings = new ControlState({ root: g("root") }).settings;
    const s = single("inc-new", {
      log: (raft) => {
        raft.commitRaw(encodeEnvelope({ v: 2, key: K, ackFloor: 0, proposer: r("n1"), cmd: { op: "enroll", replica: r("n1") }, settings }), K); // 1
        const old = { client: "auto:n1:inc-old", seq: 1 };
        raft.commitRaw(entryOf(old, { op: "depart", replica: r("n1") }), old); // 2
        raft.replayTo(0); // the replay has not started when the client retries
        raft.coalesce = true;
      },
    });
    const call = s.gov.enroll(r("n1"), { key: K });
    await s.run(5);
    expect(s.raft.coalesced).toBe(1); // answered with index 1, nothing appended
    s.raft.replayTo(1); // the replay reaches the old enroll only: the call's "own" entry
    expect(await within(s, call, 20)).toBe("pending");
    expect(s.gov.controlView().appliedIndex).toBe(1);
    expect(s.gov.isWritable).toBe(false); // §3.9(b): the depart at 2, committed before this boot, is not applied
    s.raft.replayTo(Number.POSITIVE_INFINITY);
    expect(await s.settle(call)).toMatchObject({ kind: "applied", index: 1 }); // the recorded outcome
    expect(s.gov.enrolledReplicas().has(r("n1"))).toBe(false);
    expect(s.gov.isWritable).toBe(false); // §3.9(a): the old depart stands
    expect(s.gov.reserve(g("a"), 1n)).toMatchObject({ ok: false, refusal: { kind: "not-writable" } });
    // a fresh enroll(self) enrolls it again and opens the gate
    expect(await s.settle(s.gov.enroll(r("n1")))).toMatchObject({ kind: "applied", noop: false });
    expect(s.gov.isWritable).toBe(true);
  });

  it("the gate follows the applied roster: a depart of self applied after the gate opened closes it", async () => {
    const s = single();
    expect((await s.settle(s.gov.enroll(r("n1")))).kind).toBe("applied");
    expect(s.gov.isWritable).toBe(true);
    // a depart of n1 by another process of it (an old incarnation still running)
    const zombie = { client: "auto:n1:inc-old", seq: 1 };
    s.raft.commitRaw(entryOf(zombie, { op: "depart", replica: r("n1") }), zombie);
    await s.until(() => s.gov.controlView().appliedIndex === 2);
    expect(s.gov.enrolledReplicas().has(r("n1"))).toBe(false);
    expect(s.gov.isWritable).toBe(false);
    expect(s.gov.reserve(s.gov.self as never, 1n)).toMatchObject({ ok: false, refusal: { kind: "not-writable" } });
  });

  it("at the idempotency window's edge, a call under a key the same step forgets gets its own entry's outcome", async () => {
    const s = single("inc-A", { idempotencyWindow: 2 });
    const K = { client: "idem:k", seq: 1 };
    expect(await s.settle(s.gov.mint(r("h"), 100n, { key: K }))).toMatchObject({ kind: "applied", index: 1, mintId: "mint:idem:k:1" });
    expect((await s.settle(s.gov.enroll(r("n9"), { key: { client: "ops", seq: 1 } }))).kind).toBe("applied"); // 2
    s.raft.plan.push("stall", "stall");
    const mint = s.gov.mint(r("h"), 100n, { key: K }); // 3: replays index 1, whose record this step's pruning forgets
    const enroll = s.gov.enroll(r("n5"), { key: K }); // 4: another command under K, decided afresh (K is forgotten)
    await s.run(5);
    s.raft.commitAll();
    const [m, en] = await s.settle(Promise.all([mint, enroll]));
    expect(m).toMatchObject({ kind: "applied", index: 1, mintId: "mint:idem:k:1" });
    // what index 4 did: it enrolled n5 (a window-expired key is a new act) — and that is the enroll's answer
    expect(s.gov.enrolledReplicas().has(r("n5"))).toBe(true);
    expect(en).toEqual({ kind: "applied", index: 4, key: K, noop: false });
    expect(s.gov.controlView().outcomeOf(K)).toEqual(en);
    expect(s.gov.controlView().mintedTotal()).toBe(100n);
  });

  it("an enroll(self) whose own entry applied before its propose answered is answered with that entry's outcome", async () => {
    const s = single("inc-A", { idempotencyWindow: 2 });
    const K = { client: "idem:self", seq: 1 };
    expect(await s.settle(s.gov.enroll(r("n1"), { key: K }))).toMatchObject({ kind: "applied", index: 1 });
    expect((await s.settle(s.gov.enroll(r("n9"), { key: { client: "ops", seq: 1 } }))).kind).toBe("applied"); // 2
    s.raft.plan.push("stall");
    const again = s.gov.enroll(r("n1"), { key: K }); // 3: replays index 1, whose record this step forgets
    await s.run(5);
    s.raft.commitAll({ answer: false });
    await s.until(() => s.gov.controlView().appliedIndex === 3);
    expect(s.gov.controlView().outcomeOf(K)).toBe("unknown"); // the record is gone: only the step knew the answer
    s.raft.answerStalled();
    expect(await s.settle(again, 500)).toMatchObject({ kind: "applied", index: 1 });
    expect(s.gov.isWritable).toBe(true);
  });
});

describe("the writer gate on a real Raft log after a restart (§3.9 b, R-D4)", () => {
  it("an enroll(self) retried under the durable key of the log's first entry resolves with the gate closed: its old depart stands", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-gate-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const timers = new VirtualTimers();
    const net = new MemoryNetwork({ timers, random: seededRandom(5) });
    let seam = net.join("n1");
    const boot = (incarnation: string, draw: number): GovernedHeddleNode => {
      const raft = raftNode({ cluster: { voters: ["n1"], learners: [] }, transport: raftChannelTransport(seam), storage: sqliteRaftStorage(join(dir, "raft.db")), timers, random: seededRandom(draw) });
      return heddleGoverned({ seam, self: r("n1"), root: g("root"), config: testConfig(timers, seededRandom(draw + 1), sqliteStore(join(dir, "node.db"))), raft, incarnation });
    };
    const settle = settleOn(timers);
    const K = { client: "ops:n1-enroll", seq: 1 };
    const a = boot("A", 10);
    expect(await settle(a.enroll(r("n1"), { key: K }))).toMatchObject({ kind: "applied", noop: false });
    expect((await settle(a.depart())).kind).toBe("applied");
    await settle(a.shutdown());
    net.crash("n1", "silent");
    seam = net.restart("n1");
    const b = boot("B", 20);
    cleanups.push(() => b.shutdown());
    // the retry the daemon makes on every start; whatever the leader does with it (append, or answer with the
    // first entry's index), the call must not resolve while the gate is open on the prefix before the depart
    let writableAtAnswer: boolean | null = null;
    const out = await settle(b.enroll(r("n1"), { key: K }).then((o) => ((writableAtAnswer = b.isWritable), o)));
    expect(out).toMatchObject({ kind: "applied", noop: false }); // the recorded outcome of the first entry
    expect(writableAtAnswer).toBe(false);
    expect(b.enrolledReplicas().has(r("n1"))).toBe(false);
    expect((await settle(b.enroll(r("n1")))).kind).toBe("applied");
    expect(b.isWritable).toBe(true);
  });
});
