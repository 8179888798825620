/**
 * `etcdControlLog` on its own (issue 18): the entry codec, stamps that never run backwards whatever the proposers'
 * clocks say, a halt (not a skip) on a value it did not write, group commit of concurrent proposals, and the start
 * error when etcd does not answer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { Etcd3 } from "etcd3";
import { decodeEtcdEntry, encodeEtcdEntry, etcdControlLog, EtcdLogCorruptError, EtcdUnreachableError, ETCD_MAX_PENDING_EVENTS, LeadershipLostError, NodeShutdownError } from "../src/index.ts";
import type { Committed, EtcdControlLog } from "../src/index.ts";
import { EtcdCluster, freePort, take } from "./support/etcd-cluster.ts";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 500);
let etcd: EtcdCluster;
beforeAll(async () => {
  etcd = await EtcdCluster.start(1);
}, 60_000);
afterAll(async () => {
  await etcd?.stop();
});

describe("etcd entry codec", () => {
  it("round-trips stamp, key and command bytes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), // whole ms: other stamps are refused (etcd-log-stamps.test.ts)
        fc.option(fc.record({ client: fc.string(), seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }) }), { nil: null }),
        fc.uint8Array({ maxLength: 512 }),
        (stamp, key, command) => {
          const d = decodeEtcdEntry(encodeEtcdEntry(stamp, key, command));
          expect(d.stamp).toBe(stamp);
          expect(d.key).toEqual(key);
          expect([...d.command]).toEqual([...command]);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("refuses what it did not write", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        if (bytes.length >= 13 && bytes[0] === 1) return; // may be a valid entry
        expect(() => decodeEtcdEntry(bytes)).toThrow(EtcdLogCorruptError);
      }),
      { numRuns: RUNS },
    );
    const e = encodeEtcdEntry(1, { client: "c", seq: 1 }, new Uint8Array([1]));
    e.writeUInt32BE(999, 9); // key length beyond the value
    expect(() => decodeEtcdEntry(e)).toThrow(EtcdLogCorruptError);
  });
});

describe("etcdControlLog", () => {
  it("reads back entries and snapshots larger than gRPC's 4 MiB default answer (found in review: a new reader never caught up)", async () => {
    const prefix = `big/${process.pid}/`;
    const w = etcdControlLog({ id: "w", endpoints: etcd.endpoints, prefix });
    const r = etcdControlLog({ id: "r", endpoints: etcd.endpoints, prefix });
    try {
      const big = (i: number) => new Uint8Array(300 * 1024).fill(i);
      for (let i = 0; i < 20; i++) await w.propose(big(i), null); // one catch-up read of 20 × 300 KiB ≈ 6 MiB
      const items = await take(r, 1, 20);
      expect(items.map((c) => (c.kind === "entry" ? [c.entry.index, c.entry.command.length, c.entry.command[0]] : null))).toEqual(Array.from({ length: 20 }, (_, i) => [i + 1, 300 * 1024, i]));
      // a 6 MiB snapshot (6+ chunks, read in pages) covering the log is installed by a reader from index 1
      const state = Uint8Array.from({ length: 6 * 1024 * 1024 + 5 }, (_, i) => (i * 7) & 0xff);
      w.publishSnapshot({ throughIndex: 20, state });
      const fresh = etcdControlLog({ id: "f", endpoints: etcd.endpoints, prefix });
      try {
        let installed: Uint8Array | null = null;
        for (let attempt = 0; attempt < 100 && installed === null; attempt++) {
          const first = (await take(fresh, 1, 1))[0]!;
          if (first.kind === "install") installed = first.snapshot.state;
          else await new Promise((res) => setTimeout(res, 50)); // the publish is asynchronous
        }
        expect(installed).not.toBeNull();
        expect(installed!.length).toBe(state.length);
        expect(Buffer.from(installed!).equals(Buffer.from(state))).toBe(true);
      } finally {
        await fresh.close();
      }
    } finally {
      await w.close();
      await r.close();
    }
  }, 60_000);

  it("stamps never run backwards in the log, whatever the proposers' clocks say", async () => {
    const prefix = `stamps/${process.pid}/`;
    const ahead = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix, now: () => 1_000_000 });
    const behind = etcdControlLog({ id: "b", endpoints: etcd.endpoints, prefix, now: () => 5 });
    try {
      for (let i = 0; i < 5; i++) {
        await ahead.propose(new Uint8Array([i]), null);
        await behind.propose(new Uint8Array([i]), null);
      }
      const items = await take(behind, 1, 10);
      const stamps = items.map((c) => (c.kind === "entry" ? c.entry.stampedAt : NaN));
      expect(stamps).toEqual(Array(10).fill(1_000_000));
    } finally {
      await ahead.close();
      await behind.close();
    }
  });

  it("after a confirmed read, its stampFloor covers every stamp appended before it — another member's clock included", async () => {
    const prefix = `floor/${process.pid}/`;
    const ahead = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix, now: () => 2_000_000 });
    const behind = etcdControlLog({ id: "b", endpoints: etcd.endpoints, prefix, now: () => 7 });
    try {
      await behind.started;
      expect(behind.stampFloor()).toBe(0); // an empty log: no head yet
      await behind.propose(new Uint8Array([1]), null);
      expect(behind.stampFloor()).toBe(7); // its own append
      await ahead.propose(new Uint8Array([2]), null);
      // the ahead member's entry is not known here until a read of head: a read that judges claims must confirm first
      expect(behind.stampFloor()).toBe(7);
      await behind.readIndex();
      expect(behind.stampFloor()).toBe(2_000_000);
      // and its next proposal is stamped no earlier (the log's clamp), so the floor is exact, not merely safe
      const { index } = await behind.propose(new Uint8Array([3]), null);
      const items = await take(behind, 1, index);
      const last = items.at(-1)!;
      expect(last.kind === "entry" ? last.entry.stampedAt : NaN).toBe(2_000_000);
      expect(behind.stampFloor()).toBe(2_000_000);
    } finally {
      await ahead.close();
      await behind.close();
    }
  });

  it("appends concurrent proposals of one process in few transactions, each at its own index", async () => {
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix: `batch/${process.pid}/` });
    try {
      await log.started;
      const res = await Promise.all(Array.from({ length: 200 }, (_, i) => log.propose(new TextEncoder().encode(`x${i}`), { client: "c", seq: i + 1 })));
      expect(res.map((r) => r.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      const c = log.counters();
      expect(c.entries).toBe(200);
      expect(c.transactions).toBeLessThan(200); // group commit: several entries per transaction
      const items = await take(log, 1, 200);
      for (const [i, r] of res.entries()) {
        const it = items[r.index - 1]!;
        expect(it.kind === "entry" && new TextDecoder().decode(it.entry.command)).toBe(`x${i}`);
        expect(it.kind === "entry" && it.entry.key).toEqual({ client: "c", seq: i + 1 });
      }
    } finally {
      await log.close();
    }
  });

  it("halts its reader on a value under the log range that it did not write", async () => {
    const prefix = `corrupt/${process.pid}/`;
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix });
    const raw = new Etcd3({ hosts: etcd.endpoints });
    try {
      await log.propose(new Uint8Array([7]), null);
      await raw.put(`${prefix}log/${String(2).padStart(16, "0")}`).value(Buffer.from("not an entry"));
      await raw.put(`${prefix}head`).value(JSON.stringify({ index: 2, stamp: 0 }));
      await expect(take(log, 1, 3)).rejects.toBeInstanceOf(EtcdLogCorruptError);
    } finally {
      raw.close();
      await log.close();
    }
  });

  it("says which endpoints did not answer at start, and validates its options", async () => {
    const port = await freePort();
    const log = etcdControlLog({ id: "a", endpoints: [`http://127.0.0.1:${port}`], callTimeoutMs: 300 });
    await expect(log.started).rejects.toBeInstanceOf(EtcdUnreachableError);
    await expect(log.started).rejects.toThrow(`etcd at http://127.0.0.1:${port} did not answer`);
    await log.close();
    expect(() => etcdControlLog({ id: "a", endpoints: ["127.0.0.1:2379"] })).toThrow(/endpoints/);
    expect(() => etcdControlLog({ id: "", endpoints: ["http://127.0.0.1:2379"] })).toThrow(/id/);
    expect(() => etcdControlLog({ id: "a", endpoints: ["http://127.0.0.1:2379"], prefix: "" })).toThrow(/prefix/);
    expect(() => etcdControlLog({ id: "a", endpoints: ["http://127.0.0.1:2379"], callTimeoutMs: 0 })).toThrow(/callTimeoutMs/);
  });
});

describe("etcdControlLog availability", () => {
  it("turns unavailable after unavailableAfterMs even while a probe hangs on a frozen etcd (found in review: only at the probe's call deadline)", async () => {
    const log = etcdControlLog({ id: "p", endpoints: etcd.endpoints, prefix: `avail/${process.pid}/`, callTimeoutMs: 30_000, unavailableAfterMs: 1_000, probeEveryMs: 100 });
    const proc = etcd.members[0]!.proc!;
    try {
      await log.started;
      expect(log.available.get()).toBe(true);
      proc.kill("SIGSTOP"); // alive but silent: every call hangs until its deadline
      const until = Date.now() + 15_000; // half the call deadline: the old code could not turn false before 30 s
      while (log.available.get() && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(log.available.get()).toBe(false);
    } finally {
      proc.kill("SIGCONT");
      await log.close();
    }
  }, 40_000);
});

describe("etcdControlLog reader", () => {
  it("replaces a watch that went silent while the head moved on (found in review: a watch on a frozen member stalled the reader for good)", async () => {
    const { EventEmitter } = await import("node:events");
    const prefix = `stall/${process.pid}/`;
    const real = new Etcd3({ hosts: etcd.endpoints });
    let silenced = 0;
    // the first watch the reader opens never says anything, as one on a frozen or cut-off member
    const client = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === "watch" && silenced === 0) {
          return () => {
            silenced++;
            const b = { prefix: () => b, startRevision: () => b, watcher: () => Object.assign(new EventEmitter(), { cancel: async () => {} }) };
            return b;
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const reader = etcdControlLog({ id: "r", client, prefix, probeEveryMs: 100 });
    const writer = etcdControlLog({ id: "w", endpoints: etcd.endpoints, prefix });
    try {
      await writer.propose(new Uint8Array([1]), null);
      const got: number[] = [];
      const done = (async () => {
        for await (const c of reader.committedFrom(1)) {
          if (c.kind === "entry") got.push(c.entry.index);
          if (got.length === 3) return;
        }
      })();
      while (got.length < 1) await new Promise((r) => setTimeout(r, 20)); // caught up; now tailing the silent watch
      await writer.propose(new Uint8Array([2]), null);
      await writer.propose(new Uint8Array([3]), null);
      await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error(`reader stuck at ${JSON.stringify(got)}`)), 20_000))]);
      expect(got).toEqual([1, 2, 3]);
      expect(silenced).toBe(1);
      expect(reader.counters().stalls).toBeGreaterThanOrEqual(1);
    } finally {
      await reader.close();
      await writer.close();
      real.close();
    }
  }, 30_000);
});

describe("etcdControlLog reader queue", () => {
  it(`holds at most ETCD_MAX_PENDING_EVENTS watch events for a slow consumer, then catches up by ranged reads — nothing lost or repeated (found in review: the queue had no bound)`, async () => {
    const prefix = `overflow/${process.pid}/`;
    const w = etcdControlLog({ id: "w", endpoints: etcd.endpoints, prefix });
    const r = etcdControlLog({ id: "r", endpoints: etcd.endpoints, prefix });
    const it = r.committedFrom(1)[Symbol.asyncIterator]();
    try {
      await w.propose(new Uint8Array([0]), null);
      expect((await it.next()).value).toMatchObject({ kind: "entry", entry: { index: 1 } }); // by the ranged read
      // resuming runs the reader up to its wait on the watch (from the read's revision), before entry 2 exists
      const second = it.next();
      await w.propose(new Uint8Array([1]), null);
      expect((await second).value).toMatchObject({ kind: "entry", entry: { index: 2 } }); // by the watch
      // the consumer now pauses while far more entries than the bound arrive on the watch
      const burst = ETCD_MAX_PENDING_EVENTS + 300;
      await Promise.all(Array.from({ length: burst }, (_, i) => w.propose(new TextEncoder().encode(`e${i + 3}`), { client: "c", seq: i + 1 })));
      const until = Date.now() + 20_000;
      while (r.counters().overflows < 1 && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
      expect(r.counters().overflows).toBe(1);
      // the consumer resumes: every entry once, in order
      for (let i = 3; i <= burst + 2; i++) {
        const c = (await it.next()).value as Committed;
        expect(c.kind === "entry" ? [c.entry.index, new TextDecoder().decode(c.entry.command)] : null).toEqual([i, `e${i}`]);
      }
      expect(r.counters().resyncs).toBeGreaterThanOrEqual(1);
    } finally {
      await it.return?.();
      await w.close();
      await r.close();
    }
  }, 60_000);
});

describe("etcdControlLog close", () => {
  it("waits for the append in flight: its proposer gets the real answer, a proposal not yet sent is refused, and nothing is written after (found in review: close returned at once)", async () => {
    const prefix = `close/${process.pid}/`;
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix });
    const raw = new Etcd3({ hosts: etcd.endpoints });
    try {
      await log.started;
      const order: string[] = [];
      const sent = log.propose(new Uint8Array([1]), { client: "c", seq: 1 }).then((v) => (order.push("appended"), v));
      const queued = log.propose(new Uint8Array([2]), { client: "c", seq: 2 }).catch((e: unknown) => e); // behind the transaction in flight
      await log.close().then(() => order.push("closed"));
      expect(order).toEqual(["appended", "closed"]);
      expect((await sent).index).toBe(1);
      expect(await queued).toBeInstanceOf(NodeShutdownError);
      expect(JSON.parse((await raw.get(`${prefix}head`).string())!)).toMatchObject({ index: 1 });
      expect(await raw.getAll().prefix(`${prefix}log/`).keys()).toEqual([`${prefix}log/${"1".padStart(16, "0")}`]);
      await expect(log.propose(new Uint8Array([3]), null)).rejects.toBeInstanceOf(NodeShutdownError);
    } finally {
      raw.close();
      await log.close();
    }
  });

  it("waits at most one call's bound for an append etcd does not answer: its proposer is told the outcome is unknown, not that nothing was written", async () => {
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix: `close-frozen/${process.pid}/`, callTimeoutMs: 1_000 });
    const proc = etcd.members[0]!.proc!;
    try {
      await log.started;
      proc.kill("SIGSTOP");
      const order: string[] = [];
      const sent = log.propose(new Uint8Array([1]), { client: "c", seq: 1 }).catch((e: unknown) => (order.push("unanswered"), e));
      await log.close().then(() => order.push("closed"));
      expect(order).toEqual(["unanswered", "closed"]);
      expect(await sent).toBeInstanceOf(LeadershipLostError); // it may have committed: retry by key
      expect(await sent).not.toBeInstanceOf(NodeShutdownError);
    } finally {
      proc.kill("SIGCONT");
      await log.close();
    }
  }, 30_000);
});
