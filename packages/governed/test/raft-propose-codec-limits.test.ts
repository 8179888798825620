/**
 * `propose` and `changeMembership` refuse, with a `RangeError` naming the argument and the limit, what the Raft
 * codec would refuse to decode (`MAX_STRING_BYTES` for `key.client` and member ids, a safe integer ≥ 0 for
 * `key.seq`, `MAX_CONFIG_MEMBERS` per member list) — on a follower and on the leader alike, before anything is
 * forwarded or appended.
 *
 * Found in review: the limits were enforced only on decode. A too-long `key.client` proposed on a follower was
 * forwarded, dropped at the leader as undecodable, and the promise never settled; proposed on the leader, it was
 * appended, every AppendEntries carrying it was undecodable at the followers, they called an election and deposed
 * the leader — and the caller's retry deposed the next one.
 */
import { describe, expect, it } from "vitest";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { runFor, runUntil } from "./support/virtual-steps.ts";
import { MAX_CONFIG_MEMBERS, MAX_STRING_BYTES } from "../src/raft/codec.ts";
import { memoryRaftStorage, raftChannelTransport, raftNode } from "../src/index.ts";
import type { ClusterConfig, RaftNode, RaftTraceEvent } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent } from "./support/hand-driven.ts";
import { kvCommand } from "./support/kv-machine.ts";

const ABC: ClusterConfig = { voters: ["n1", "n2", "n3"], learners: [] };
const put = (k: string): Uint8Array => kvCommand({ op: "put", key: k, value: "v" });

/** Three voters over the in-memory network in virtual time; every election started and step-down is recorded. */
class Cluster {
  readonly timers = new VirtualTimers();
  readonly net = new MemoryNetwork({ timers: this.timers, random: seededRandom(7000), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 3] } });
  readonly nodes: RaftNode[] = [];
  /** Elections started and leaders stepping down, as `id type term`. */
  readonly upsets: string[] = [];

  constructor() {
    for (const id of ABC.voters) {
      const node = raftNode({ cluster: ABC, transport: raftChannelTransport(this.net.join(id)), storage: memoryRaftStorage(), timers: this.timers, random: seededRandom(7000 + id.charCodeAt(1)) });
      this.nodes.push(node);
      void (async () => {
        for await (const t of node.trace as AsyncIterable<RaftTraceEvent>) {
          if (t.type === "electionStart" || t.type === "stepDown") this.upsets.push(`${id} ${t.type} ${t.term}`);
        }
      })();
    }
  }

  run(ms: number): Promise<void> {
    return runFor(this.timers, ms);
  }

  until(cond: () => boolean, maxMs = 5000): Promise<void> {
    return runUntil(this.timers, cond, maxMs);
  }

  leader(): RaftNode | undefined {
    return this.nodes.find((n) => n.role.get() === "leader");
  }

  /** The value or error `p` settles with, within `maxMs` of virtual time (an error when it does not settle). */
  async outcome<T>(p: Promise<T>, maxMs = 3000): Promise<T | Error> {
    let done = false;
    let result: T | Error = new Error("never settled");
    p.then((v) => ((done = true), (result = v)), (e: unknown) => ((done = true), (result = e as Error)));
    await this.until(() => done, maxMs).catch(() => {});
    return result;
  }

  undecodable(): number[] {
    return this.nodes.map((n) => n.refusedFrames().get("undecodable") ?? 0);
  }

  async close(): Promise<void> {
    for (const n of this.nodes) await n.close();
  }
}

function expectRangeError(e: unknown, ...words: string[]): void {
  expect(e).toBeInstanceOf(RangeError);
  for (const w of words) expect((e as Error).message).toContain(w);
}

describe("propose refuses a key no frame can carry (codec limits)", () => {
  it("a too-long key.client, on a follower and on the leader: RangeError, the leader keeps leading, nothing undecodable, a valid proposal then commits", async () => {
    const c = new Cluster();
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    const follower = c.nodes.find((n) => n !== leader)!;
    await c.run(500); // the no-op committed everywhere, heartbeats flowing
    const upsetsBefore = c.upsets.length;

    const long = "x".repeat(MAX_STRING_BYTES + 1);
    expectRangeError(await c.outcome(follower.propose(put("f"), { client: long, seq: 1 })), "key.client", "MAX_STRING_BYTES", `${MAX_STRING_BYTES}`);
    expectRangeError(await c.outcome(leader.propose(put("l"), { client: long, seq: 1 })), "key.client", "MAX_STRING_BYTES");
    // UTF-8 bytes are counted, not code units: 513 × "é" is 1,026 bytes
    expectRangeError(await c.outcome(leader.propose(put("u"), { client: "é".repeat(513), seq: 1 })), "key.client");

    // the followers would have called an election within two election timeouts of undecodable AppendEntries
    await c.run(1000);
    expect(c.leader()).toBe(leader);
    expect(c.nodes.map((n) => n.leader.get())).toEqual(c.nodes.map(() => leader.id));
    expect(c.upsets.slice(upsetsBefore)).toEqual([]);
    expect(c.undecodable()).toEqual([0, 0, 0]);

    // exactly at the limit is carried, from either role
    const at = "y".repeat(MAX_STRING_BYTES);
    const a = await c.outcome(follower.propose(put("f"), { client: at, seq: 1 }));
    expect(a).not.toBeInstanceOf(Error);
    const b = await c.outcome(leader.propose(put("l"), { client: at, seq: 2 }));
    expect(b).not.toBeInstanceOf(Error);
    expect((b as { index: number }).index).toBeGreaterThan((a as { index: number }).index);
    expect(c.undecodable()).toEqual([0, 0, 0]);
    expect(c.leader()).toBe(leader);
    await c.close();
  });

  it("a key.seq that is not a safe integer ≥ 0: RangeError naming key.seq, on either role", async () => {
    const c = new Cluster();
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    const follower = c.nodes.find((n) => n !== leader)!;
    for (const seq of [-1, 1.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY]) {
      for (const n of [follower, leader]) expectRangeError(await c.outcome(n.propose(put("s"), { client: "c", seq })), "key.seq");
    }
    await c.run(1000);
    expect(c.leader()).toBe(leader);
    expect(c.undecodable()).toEqual([0, 0, 0]);
    expect(await c.outcome(follower.propose(put("s"), { client: "c", seq: 0 }))).not.toBeInstanceOf(Error);
    await c.close();
  });
});

describe("changeMembership refuses a target no frame can carry (codec limits)", () => {
  it("a member id over MAX_STRING_BYTES or a list over MAX_CONFIG_MEMBERS: RangeError naming it, nothing appended, the leader keeps leading", async () => {
    const c = new Cluster();
    await c.until(() => c.leader() !== undefined);
    const leader = c.leader()!;
    await c.run(500);
    const commit = leader.commitIndex.get();
    const longId = "m".repeat(MAX_STRING_BYTES + 1);
    expectRangeError(await c.outcome(leader.changeMembership({ voters: ABC.voters, learners: [longId] })), "target.learners[0]", "MAX_STRING_BYTES");
    expectRangeError(await c.outcome(leader.changeMembership({ voters: [...ABC.voters, longId], learners: [] })), "target.voters[3]", "MAX_STRING_BYTES");
    const many = Array.from({ length: MAX_CONFIG_MEMBERS + 1 }, (_, i) => `l${i}`);
    expectRangeError(await c.outcome(leader.changeMembership({ voters: ABC.voters, learners: many })), "target.learners", "MAX_CONFIG_MEMBERS", `${MAX_CONFIG_MEMBERS}`);
    await c.run(1000);
    expect(c.leader()).toBe(leader);
    expect(leader.commitIndex.get()).toBe(commit);
    expect(leader.membership.get()).toEqual(ABC);
    expect(c.undecodable()).toEqual([0, 0, 0]);
    // a valid change still goes through
    const learner = "w".repeat(MAX_STRING_BYTES);
    expect(await c.outcome(leader.changeMembership({ voters: ABC.voters, learners: [learner] }))).toEqual({ voters: ABC.voters, learners: [learner] });
    expect(c.undecodable()).toEqual([0, 0, 0]);
    await c.close();
  });
});

describe("the core's refusal (hand-driven): before any role is asked, nothing sent or appended", () => {
  it("answers invalid-argument with a detail naming the argument and the limit, on a leader and on a follower that knows the leader", () => {
    const a = handCore("a");
    const b = handCore("b");
    hand(a, sent(electVia(a, b)), b); // b follows a
    expect(b.leader).toBe("a");
    const long = "k".repeat(MAX_STRING_BYTES + 1);
    for (const core of [a, b]) {
      const last = core.lastIndex;
      core.propose(41, new Uint8Array([1]), { client: long, seq: 1 });
      core.propose(42, new Uint8Array([1]), { client: "c", seq: -1 });
      core.changeMembership(43, { voters: ["a", "b", "c"], learners: [long] });
      const rd = cycle(core);
      expect(rd.outcomes).toEqual([
        { id: 41, ok: false, refusal: "invalid-argument", detail: `propose: key.client is ${MAX_STRING_BYTES + 1} UTF-8 bytes, above MAX_STRING_BYTES (${MAX_STRING_BYTES})` },
        { id: 42, ok: false, refusal: "invalid-argument", detail: "propose: key.seq must be a safe integer ≥ 0, got -1" },
        { id: 43, ok: false, refusal: "invalid-argument", detail: `changeMembership: target.learners[0] is ${MAX_STRING_BYTES + 1} UTF-8 bytes, above MAX_STRING_BYTES (${MAX_STRING_BYTES})` },
      ]);
      expect(sent(rd).filter((e) => e.message.type === "forward" || (e.message.type === "append" && e.message.entries.length > 0))).toEqual([]);
      expect(rd.storage).toEqual([]);
      expect(core.lastIndex).toBe(last);
    }
  });
});
