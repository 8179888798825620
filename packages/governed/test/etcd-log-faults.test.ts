/**
 * `etcdControlLog` under etcd faults it must ride out or report (found in review):
 *
 * - one member of three frozen (SIGSTOP: connections open, nothing answered), follower or leader: appends and reads
 *   go on through the two healthy members. etcd3's default gave every retry of a call one absolute deadline, so the
 *   first attempt on the frozen member used it up and the call failed.
 * - refusals no retry can change — permission denied, wrong password, an entry above the cluster's
 *   `--max-request-bytes` — end the call at once with an `EtcdRefusedError` that says what to fix (they were
 *   `LeadershipLostError`s, which the control plane retries until its call times out); a group-committed batch that
 *   is too large while each entry fits is split, not refused.
 */
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Etcd3, Range } from "etcd3";
import { ETCD_BATCH_GROW_AFTER, etcdControlLog, EtcdRefusedError, EtcdUnreachableError, LeadershipLostError } from "../src/index.ts";
import type { Committed, EtcdControlLog } from "../src/index.ts";
import { EtcdCluster, take } from "./support/etcd-cluster.ts";

/** etcd3's host order: with `deterministicOrder` every call tries the last endpoint first, then the others. */
const pool = createRequire(import.meta.url)("etcd3/lib/connection-pool") as { ConnectionPool: { deterministicOrder: boolean } };

describe("etcdControlLog with one of three etcd members frozen", () => {
  let etcd: EtcdCluster;
  beforeAll(async () => {
    etcd = await EtcdCluster.start(3);
  }, 60_000);
  afterAll(async () => {
    await etcd?.stop();
  });

  for (const which of ["a follower", "the leader"] as const) {
    it(`appends and reads through the healthy majority while ${which} is frozen, though every call tries the frozen member first`, async () => {
      const leader = await etcd.leader();
      expect(leader).not.toBeNull();
      const frozen = which === "the leader" ? leader! : (leader! + 1) % 3;
      // the frozen member's endpoint last: with deterministic order it is every call's first attempt
      const endpoints = [...etcd.endpoints.filter((_, i) => i !== frozen), etcd.endpoints[frozen]!];
      pool.ConnectionPool.deterministicOrder = true;
      const log = etcdControlLog({ id: "a", endpoints, prefix: `frozen-${which === "the leader" ? "leader" : "follower"}/${process.pid}/` });
      try {
        await log.started;
        etcd.freeze(frozen);
        const indexes: number[] = [];
        for (let i = 0; i < 4; i++) {
          indexes.push((await log.propose(new Uint8Array([i]), { client: "c", seq: i + 1 })).index);
          expect(await log.readIndex()).toBe(indexes.at(-1));
        }
        expect(indexes).toEqual([1, 2, 3, 4]);
        const items = await take(log, 1, 4);
        expect(items.map((c) => (c.kind === "entry" ? [c.entry.index, c.entry.command[0]] : null))).toEqual([[1, 0], [2, 1], [3, 2], [4, 3]]);
      } finally {
        pool.ConnectionPool.deterministicOrder = false;
        etcd.thaw(frozen);
        await log.close();
        await etcd.ready();
      }
    }, 60_000);
  }
});

describe("etcdControlLog refusals", () => {
  let etcd: EtcdCluster;
  const user = (username: string, password: string) => ({ username, password });
  beforeAll(async () => {
    etcd = await EtcdCluster.start(1, ["--max-request-bytes", String(64 * 1024)]);
    const root = new Etcd3({ hosts: etcd.endpoints });
    try {
      await root.user("root").create("root-pw");
      await root.user("root").addRole("root");
      await root.role("rw").create();
      await root.role("rw").grant({ permission: "Readwrite", range: Range.prefix("rw/") });
      await root.user("writer").create("writer-pw");
      await root.user("writer").addRole("rw");
      await root.role("ro").create();
      await root.role("ro").grant({ permission: "Read", range: Range.prefix("ro/") });
      await root.user("reader").create("reader-pw");
      await root.user("reader").addRole("ro");
      await root.auth.authEnable();
    } finally {
      root.close();
    }
  }, 60_000);
  afterAll(async () => {
    await etcd?.stop();
  });

  it("an entry above the cluster's --max-request-bytes is refused at once, saying so; nothing is written", async () => {
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix: "rw/large/", auth: user("writer", "writer-pw") });
    try {
      await log.started;
      const e = await log.propose(new Uint8Array(100 * 1024), { client: "c", seq: 1 }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(EtcdRefusedError);
      expect((e as EtcdRefusedError).reason).toBe("too-large");
      expect((e as Error).message).toContain("--max-request-bytes");
      expect(log.counters()).toMatchObject({ refusals: 1, transactions: 0, entries: 0 });
      expect(await log.readIndex()).toBe(0);
      // and the log goes on: the next entry takes index 1
      expect((await log.propose(new Uint8Array([1]), { client: "c", seq: 2 })).index).toBe(1);
    } finally {
      await log.close();
    }
  });

  it("a group-committed batch too large for the cluster, each entry of which fits, is split and every entry appended once", async () => {
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix: "rw/split/", auth: user("writer", "writer-pw") });
    try {
      await log.started;
      // proposed together, so they would go in one transaction of ≈ 160 KiB > 64 KiB
      const res = await Promise.all(Array.from({ length: 4 }, (_, i) => log.propose(new Uint8Array(40 * 1024).fill(i), { client: "c", seq: i + 1 })));
      expect(res.map((r) => r.index)).toEqual([1, 2, 3, 4]);
      expect(log.counters().splits).toBeGreaterThanOrEqual(1);
      expect(log.counters().entries).toBe(4);
      const items = await take(log, 1, 4);
      expect(items.map((c) => (c.kind === "entry" ? [c.entry.index, c.entry.command.length, c.entry.command[0]] : null))).toEqual([0, 1, 2, 3].map((i) => [i + 1, 40 * 1024, i]));
    } finally {
      await log.close();
    }
  });

  it("after a split the batch cap grows back with successful appends: a later burst takes as few transactions as it fits", async () => {
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix: "rw/regrow/", auth: user("writer", "writer-pw") });
    try {
      await log.started;
      // the first 10 KiB entry goes alone; the eight proposed meanwhile make one 80 KiB batch > 64 KiB: refused and
      // split, the cap now 40 KiB
      const big = await Promise.all(Array.from({ length: 9 }, (_, i) => log.propose(new Uint8Array(10 * 1024).fill(i), { client: "c", seq: i + 1 })));
      expect(big.map((r) => r.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(log.counters().splits).toBe(1);
      // successful appends, one transaction each: the cap grows halfway towards the refused 80 KiB twice (60, 70 KiB)
      for (let i = 0; i < 2 * ETCD_BATCH_GROW_AFTER; i++) await log.propose(new Uint8Array([i]), { client: "c", seq: 100 + i });
      // one entry goes alone and 49 KB queue behind it: one more transaction under the regrown cap, where a cap left
      // at 40 KiB for the life of the process needed two
      const before = log.counters().transactions;
      await Promise.all(Array.from({ length: 50 }, (_, i) => log.propose(new Uint8Array(i === 0 ? 1 : 1000).fill(1), { client: "d", seq: i + 1 })));
      expect(log.counters().transactions - before).toBe(2);
      expect(log.counters().splits).toBe(1);
      expect(log.counters().entries).toBe(9 + 2 * ETCD_BATCH_GROW_AFTER + 50);
    } finally {
      await log.close();
    }
  });

  it("a user whose role may only read the prefix: reads answer, an append is refused at once naming the prefix and what to grant", async () => {
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix: "ro/log/", auth: user("reader", "reader-pw") });
    try {
      await log.started;
      expect(await log.readIndex()).toBe(0);
      const e = await log.propose(new Uint8Array([1]), { client: "c", seq: 1 }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(EtcdRefusedError);
      expect(e).not.toBeInstanceOf(LeadershipLostError); // the control plane would retry it to its deadline
      expect((e as EtcdRefusedError).reason).toBe("permission");
      expect((e as Error).message).toContain("readwrite on the key prefix \"ro/log/\"");
    } finally {
      await log.close();
    }
  });

  it("a user with no role on the prefix, and a wrong password: the first read and readIndex are refused, saying what to check", async () => {
    const none = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix: "elsewhere/", auth: user("reader", "reader-pw") });
    const wrong = etcdControlLog({ id: "b", endpoints: etcd.endpoints, prefix: "rw/pw/", auth: user("writer", "not-the-password") });
    try {
      await expect(none.started).rejects.toBeInstanceOf(EtcdUnreachableError);
      await expect(none.started).rejects.toThrow(/refused the first read.*readwrite on the key prefix "elsewhere\/"/);
      await expect(none.readIndex()).rejects.toMatchObject({ name: "EtcdRefusedError", reason: "permission" });
      await expect(wrong.started).rejects.toThrow(/refused the first read.*user name and password/);
      await expect(wrong.readIndex()).rejects.toMatchObject({ name: "EtcdRefusedError", reason: "auth" });
    } finally {
      await none.close();
      await wrong.close();
    }
  });
});
