/**
 * The etcd log's stamps and `head` (review s28, findings 1, 4, 5), against a one-member etcd on loopback:
 *
 * - A stamp is whole milliseconds in 0 … 2^53 − 1, as the claims table takes and the embedded Raft's codec enforces.
 *   `propose` refuses a clock outside that (a `RangeError` naming `now`, nothing written), and a stamp outside it in
 *   an entry or in `head` is an `EtcdLogCorruptError` naming the key and its revision. Before, one member whose clock
 *   was in ns stamped the log, every later append was clamped up to it, and every member halted at the next claims act.
 * - `head` records the member whose clock gave its stamp (`by`), and a member that reads a head stamped more than
 *   `maxClockAheadMs` past its own clock says so in `status().clockAhead` and through `onWarning`.
 * - A malformed `head` is a definite refusal (nothing was written and etcd answered), shown in `status().corrupt`;
 *   the probe no longer counts etcd as answering while it is, so the writer gate closes. Before, appends ended as
 *   an unknown outcome ("it may still have committed — retry with the same key") and `available` stayed true.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { randomUUID } from "node:crypto";
import { Etcd3 } from "etcd3";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { memoryStore, MemoryNetwork, realTimers, seededRandom } from "@heddle/node";
import {
  decodeEtcdEntry,
  encodeEtcdEntry,
  etcdControlLog,
  EtcdLogCorruptError,
  ETCD_MAX_CLOCK_AHEAD_BOUNDS,
  ETCD_MAX_CLOCK_AHEAD_MS,
  ETCD_MAX_STAMP,
  heddleGoverned,
} from "../src/index.ts";
import { EtcdCluster, take } from "./support/etcd-cluster.ts";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 300);
const DAY = 86_400_000;
let etcd: EtcdCluster;
let raw: Etcd3;
beforeAll(async () => {
  etcd = await EtcdCluster.start(1);
  raw = new Etcd3({ hosts: etcd.endpoints });
}, 60_000);
afterAll(async () => {
  raw?.close();
  await etcd?.stop();
});

const prefixOf = (what: string): string => `${what}-${randomUUID()}/`;
const config = (seed: number) => ({ policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000_000n, timers: realTimers, random: seededRandom(seed), store: memoryStore() });
/** Any number that is not whole milliseconds in 0 … 2^53 − 1. */
const notAStamp = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isSafeInteger(x) || x < 0),
  fc.constantFrom(NaN, Infinity, -Infinity, -1, 0.5, 2 ** 53, 2 ** 60),
);

describe("etcd entry stamps", () => {
  it("the codec round-trips every stamp the claims table takes; encode refuses every other (RangeError), decode reads an older release's finite stamps as the table applied them and refuses the rest (EtcdLogCorruptError)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: ETCD_MAX_STAMP }), (stamp) => {
        expect(decodeEtcdEntry(encodeEtcdEntry(stamp, { client: "c", seq: 1 }, new Uint8Array([7]))).stamp).toBe(stamp);
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(notAStamp, (stamp) => {
        expect(() => encodeEtcdEntry(stamp, null, new Uint8Array(0))).toThrow(RangeError);
        // the bytes another writer (or a member before this check) could have left: what a release before it
        // wrote and the claims table applied (any finite number up to 2^53 − 1, rounded down, negatives as 0) is
        // read the same way — an upgrade must not halt on its own log; anything else no member could apply
        const v = encodeEtcdEntry(1, { client: "c", seq: 1 }, new Uint8Array([1]));
        v.writeDoubleBE(stamp, 1);
        if (Number.isFinite(stamp) && stamp <= ETCD_MAX_STAMP) expect(decodeEtcdEntry(v).stamp).toBe(Math.max(0, Math.floor(stamp)));
        else expect(() => decodeEtcdEntry(v)).toThrow(EtcdLogCorruptError);
      }),
      { numRuns: RUNS },
    );
  });

  it("propose refuses a clock outside whole milliseconds with a RangeError naming `now`, and writes nothing", async () => {
    const prefix = prefixOf("badclock");
    for (const now of [() => 1_700_000_000_000 * 1_000_000, () => 1_700_000_000.5, () => -1, () => NaN]) {
      const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix, now });
      try {
        await log.started;
        await expect(log.propose(new Uint8Array([1]), { client: "c", seq: 1 })).rejects.toThrow(RangeError);
        await expect(log.propose(new Uint8Array([1]), null)).rejects.toThrow(/^now: .*milliseconds/);
        expect(await log.readIndex()).toBe(0);
        expect(log.counters().transactions).toBe(0);
      } finally {
        await log.close();
      }
    }
    expect((await raw.getAll().prefix(prefix).keys()).length).toBe(0);
  });

  it("one member's clock in the wrong unit is refused at its own call and halts no member", async () => {
    const prefix = prefixOf("wrongunit");
    const net = new MemoryNetwork({ timers: realTimers, random: seededRandom(3), faults: { dropRate: 0, duplicateRate: 0, delayMs: [0, 1] } });
    const mk = (id: string, now?: () => number) => {
      const log = etcdControlLog({ id, endpoints: etcd.endpoints, prefix, ...(now ? { now } : {}) });
      const gov = heddleGoverned({ seam: net.join(id), self: ReplicaId(id), root: GroupId("root"), config: config(id.charCodeAt(0)), raft: log, incarnation: randomUUID() });
      return { log, gov };
    };
    const a = mk("a", () => Date.now() * 1_000_000); // ns where ms are expected
    const b = mk("b");
    try {
      await a.log.started;
      await b.log.started;
      // a definite refusal at once (nothing was appended), not an unknown outcome after every attempt
      const err = await a.gov.mint(ReplicaId("a"), 10n, { timeoutMs: 10_000 }).then(() => null, (e: Error) => e);
      expect(err).toBeInstanceOf(RangeError);
      expect(err?.message).toMatch(/^now: /);
      const t = await b.gov.claims.take({ holder: "w1", resources: [{ key: "job", mode: "exclusive" }], ttlMs: 60_000 }, { timeoutMs: 10_000 });
      expect(t.kind).toBe("applied");
      expect((t as { claims?: { ok?: boolean } }).claims?.ok).toBe(true);
      await b.gov.sync({ timeoutMs: 10_000 });
      expect([a.gov.controlHalted.get(), b.gov.controlHalted.get()]).toEqual([null, null]);
    } finally {
      await a.gov.shutdown();
      await b.gov.shutdown();
    }
  }, 60_000);

  it("an entry whose stamp is out of range halts the reader with an EtcdLogCorruptError naming its key and revision", async () => {
    const prefix = prefixOf("badentry");
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix, now: () => 5_000 });
    try {
      await log.propose(new Uint8Array([1]), null);
      const v = encodeEtcdEntry(5_000, null, new Uint8Array([2]));
      v.writeDoubleBE(2 ** 60, 1);
      const put = await raw.put(`${prefix}log/${"2".padStart(16, "0")}`).value(v).exec();
      await raw.put(`${prefix}head`).value(JSON.stringify({ index: 2, stamp: 5_000 }));
      const err = await take(log, 1, 2).then(() => null, (e: Error) => e);
      expect(err).toBeInstanceOf(EtcdLogCorruptError);
      expect(err?.message).toContain(`${prefix}log/0000000000000002 at mod revision ${put.header.revision}`);
      expect(err?.message).toMatch(/is an entry stamped 1152921504606847000, not a number of milliseconds up to/);
      expect(log.counters().malformed).toBe(1);
    } finally {
      await log.close();
    }
  });
});

describe("etcd head", () => {
  it("a head whose stamp is out of range refuses appends (EtcdLogCorruptError naming key, revision, fix) until an operator rewrites it", async () => {
    const prefix = prefixOf("badheadstamp");
    const warnings: string[] = [];
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix, now: () => 9_000, onWarning: (m) => warnings.push(m) });
    try {
      await log.propose(new Uint8Array([1]), null);
      const put = await raw.put(`${prefix}head`).value(JSON.stringify({ index: 1, stamp: 1_700_000_000_000 * 1_000_000 })).exec(); // an older member's ns clock
      const err = await log.readIndex().then(() => null, (e: Error) => e);
      expect(err).toBeInstanceOf(EtcdLogCorruptError);
      expect(err?.message).toContain(`${prefix}head at mod revision ${put.header.revision}`);
      expect(err?.message).toContain("etcdctl put");
      await expect(log.propose(new Uint8Array([2]), null)).rejects.toBeInstanceOf(EtcdLogCorruptError);
      expect(log.status().corrupt).toBe(err?.message);
      expect(warnings.filter((w) => w.includes("is not a head this log writes"))).toHaveLength(1); // once, not per read
      expect(log.counters().malformed).toBeGreaterThanOrEqual(2); // counted at every read
      // the fix the message gives: rewrite head with the last index and its stamp
      await raw.put(`${prefix}head`).value(JSON.stringify({ index: 1, stamp: 9_000 }));
      expect((await log.propose(new Uint8Array([2]), null)).index).toBe(2);
      expect(log.status().corrupt).toBeNull();
      expect(warnings.at(-1)).toMatch(/parses again/);
    } finally {
      await log.close();
    }
  });

  it("a malformed head is a definite refusal the governed node passes on, shown in status, and closes the writer gate", async () => {
    const prefix = prefixOf("badhead");
    const net = new MemoryNetwork({ timers: realTimers, random: seededRandom(5), faults: { dropRate: 0, duplicateRate: 0, delayMs: [0, 1] } });
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix, unavailableAfterMs: 1_000, probeEveryMs: 100 });
    const gov = heddleGoverned({ seam: net.join("a"), self: ReplicaId("a"), root: GroupId("root"), config: config(1), raft: log, incarnation: randomUUID() });
    try {
      await log.started;
      expect((await gov.enroll(ReplicaId("a"), { timeoutMs: 10_000 })).kind).toBe("applied");
      expect(gov.isWritable).toBe(true);
      await raw.put(`${prefix}head`).value("not json"); // an operator's etcdctl put, or another tool's write
      const err = await gov.mint(ReplicaId("a"), 5n, { timeoutMs: 10_000 }).then(() => null, (e: Error) => e);
      expect(err?.name).toBe("EtcdLogCorruptError");
      expect(err?.message).toMatch(/head at mod revision \d+ is not a head this log writes \(not JSON/);
      expect(log.status().corrupt).toBe(err?.message);
      // etcd answers, but a member that cannot append must not count as writable: the probe judges head first
      await vi.waitFor(() => expect(log.available.get()).toBe(false), { timeout: 10_000, interval: 50 });
      expect(gov.isWritable).toBe(false);
      expect(log.status().available).toBe(false);
    } finally {
      await gov.shutdown();
    }
  }, 60_000);

  it("a start against a malformed head rejects with the corruption, not as etcd unreachable", async () => {
    const prefix = prefixOf("badheadstart");
    await raw.put(`${prefix}head`).value(JSON.stringify({ index: -3, stamp: 1 }));
    const log = etcdControlLog({ id: "a", endpoints: etcd.endpoints, prefix });
    try {
      const err = await log.started.then(() => null, (e: Error) => e);
      expect(err).toBeInstanceOf(EtcdLogCorruptError);
      expect(err?.message).toMatch(/index -3 is not a whole number/);
    } finally {
      await log.close();
    }
  });
});

describe("etcd clocks ahead (claims time held forward for every member)", () => {
  it("head records the member whose clock gave its stamp; a member that reads it far ahead of its own clock warns, once, until it is not", async () => {
    const prefix = prefixOf("ahead");
    const T0 = 1_700_000_000_000;
    let slow = T0;
    const warnings: string[] = [];
    const fast = etcdControlLog({ id: "fast", endpoints: etcd.endpoints, prefix, now: () => T0 + DAY });
    const b = etcdControlLog({ id: "b", endpoints: etcd.endpoints, prefix, now: () => slow, onWarning: (m) => warnings.push(m) });
    try {
      await b.started;
      await b.propose(new Uint8Array([1]), null);
      expect(b.status()).toMatchObject({ head: { index: 1, stamp: T0, stampedBy: "b" }, clockAhead: null, corrupt: null, maxClockAheadMs: ETCD_MAX_CLOCK_AHEAD_MS });
      await fast.propose(new Uint8Array([2]), null);
      expect(fast.status().clockAhead).toBeNull(); // its own clock: not ahead of itself
      await b.readIndex();
      expect(b.status().clockAhead).toMatchObject({ aheadMs: DAY, stampedBy: "fast", index: 2 });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/stamped 86400000 ms past this member's clock \(maxClockAheadMs 60000\), by member "fast"/);
      // b's own append is clamped up to fast's stamp: head still names the clock that set it
      await b.propose(new Uint8Array([3]), null);
      expect(b.status().head).toEqual({ index: 3, stamp: T0 + DAY, stampedBy: "fast" });
      expect(JSON.parse((await raw.get(`${prefix}head`).string())!)).toEqual({ index: 3, stamp: T0 + DAY, by: "fast" });
      await b.readIndex();
      expect(warnings).toHaveLength(1); // not repeated while it lasts
      slow = T0 + DAY - ETCD_MAX_CLOCK_AHEAD_MS; // real time caught up to within the limit
      await b.readIndex();
      expect(b.status().clockAhead).toBeNull();
      expect(warnings).toHaveLength(2);
      expect(warnings[1]).toMatch(/back within maxClockAheadMs/);
      await b.propose(new Uint8Array([4]), null); // still clamped (stamps never run backwards), and still fast's stamp
      expect(b.status().head).toEqual({ index: 4, stamp: T0 + DAY, stampedBy: "fast" });
      slow = T0 + DAY + 1;
      await b.propose(new Uint8Array([5]), null);
      expect(b.status().head).toEqual({ index: 5, stamp: T0 + DAY + 1, stampedBy: "b" });
    } finally {
      await fast.close();
      await b.close();
    }
  });

  it("a clamped stamp from a head that did not record its member leaves `by` absent rather than naming the clamping member", async () => {
    const prefix = prefixOf("noby");
    const T0 = 1_700_000_000_000;
    await raw.put(`${prefix}head`).value(JSON.stringify({ index: 0, stamp: T0 + DAY })); // a head written before `by`
    const warnings: string[] = [];
    const b = etcdControlLog({ id: "b", endpoints: etcd.endpoints, prefix, now: () => T0, onWarning: (m) => warnings.push(m) });
    try {
      await b.propose(new Uint8Array([1]), null);
      expect(JSON.parse((await raw.get(`${prefix}head`).string())!)).toEqual({ index: 1, stamp: T0 + DAY });
      expect(b.status().clockAhead).toMatchObject({ aheadMs: DAY, stampedBy: null });
      expect(warnings[0]).toMatch(/by a member \(not recorded\)/);
    } finally {
      await b.close();
    }
  });

  it("maxClockAheadMs and id are checked at construction", () => {
    const { min, max } = ETCD_MAX_CLOCK_AHEAD_BOUNDS;
    for (const bad of [min - 1, max + 1, 1.5, NaN]) {
      expect(() => etcdControlLog({ id: "a", endpoints: etcd.endpoints, maxClockAheadMs: bad })).toThrow(/^maxClockAheadMs: must be a whole number of ms in 1000 … 86400000/);
    }
    expect(() => etcdControlLog({ id: "x".repeat(257), endpoints: etcd.endpoints })).toThrow(/^id: at most ETCD_MAX_ID_CHARS/);
  });
});
