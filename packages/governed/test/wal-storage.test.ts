/**
 * The segmented Raft log store (`wal-log.ts`): CRC-32C, round trips, crash recovery at every byte of the last
 * record, refusal of damage in the middle of the log, crashes at every step of a segment roll, a model-based
 * property test with crashes and power cuts against the in-memory store, and the same crash checks on real files.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memoryRaftStorage, RaftRestoreError, walRaftStorage } from "../src/index.ts";
import type { LogEntry, PersistedState, StoredSnapshot } from "../src/index.ts";
import { crc32c } from "../src/raft/crc32c.ts";
import { INLINE_WRITE_MAX_BYTES, nodeWalDirectory } from "../src/raft/wal-files.ts";
import { openSegmentedLog, SegmentedLog } from "../src/raft/wal-log.ts";
import { PowerCut, SimDirectory } from "./support/sim-directory.ts";
import { scanSegment } from "../src/raft/wal-records.ts";
import { seededRandom } from "@heddle/node";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 500);
const SEED = Number(process.env.HEDDLE_SEED ?? 1515);
const SMALL = { segmentBytes: 4096 };

function entry(index: number, term: number, size = 20, kind: LogEntry["kind"] = "app"): LogEntry {
  if (kind === "config") return { index, term, kind, key: null, command: new Uint8Array(0), config: { voters: ["a", "b", `c${index}`], learners: ["l"] }, stampedAt: 1000 + index };
  const command = new Uint8Array(size).map((_, k) => (index * 31 + k) & 0xff);
  // odd terms write a client id with multi-byte UTF-8 (2, 3 and 4 bytes per character)
  const client = term % 2 === 0 ? `client-${term}` : `клиент-€-😀-${term}`;
  return { index, term, kind, key: kind === "app" ? { client, seq: index } : null, command, stampedAt: 1000 + index };
}

/** Canonical view of a loaded state, for equality (Uint8Arrays compared by content). */
function view(p: PersistedState): unknown {
  const e = (x: LogEntry): unknown => ({ ...x, command: [...x.command] });
  return { term: p.term, votedFor: p.votedFor, snapshot: p.snapshot === null ? null : { ...p.snapshot, state: [...p.snapshot.state] }, entries: p.entries.map(e) };
}

/** Loaded state of a store (entries above the snapshot only, as the log store returns them). */
function modelView(m: ReturnType<typeof memoryRaftStorage>): unknown {
  const s = m.snapshotOf();
  const floor = s.snapshot?.lastIndex ?? 0;
  return view({ ...s, entries: s.entries.filter((e) => e.index > floor) });
}

describe("crc32c", () => {
  const reference = (b: Uint8Array): number => {
    let c = 0xffffffff;
    for (const x of b) {
      c ^= x;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    }
    return ~c >>> 0;
  };
  it("matches the published check value and a bit-by-bit reference", () => {
    expect(crc32c(new TextEncoder().encode("123456789"))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa); // RFC 3720 B.4: 32 bytes of zeros
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(20), (b, cut) => {
        expect(crc32c(b)).toBe(reference(b));
        const k = Math.min(cut, b.length);
        expect(crc32c(b, k, b.length, crc32c(b, 0, k))).toBe(reference(b));
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});

describe("segmented log store", () => {
  it("round-trips term, vote, entries of every kind, truncation, snapshots and compaction across reopen", () => {
    const dir = new SimDirectory();
    const log = openSegmentedLog(dir, SMALL);
    const model = memoryRaftStorage();
    const both = (f: (s: { saveTermAndVote(t: number, v: string | null): unknown; append(e: readonly LogEntry[]): unknown; truncateFrom(i: number): unknown; saveSnapshot(s: StoredSnapshot): unknown; discardThrough(i: number): unknown }) => unknown): void => {
      f(log);
      f(model);
    };
    both((s) => s.saveTermAndVote(1, "a"));
    both((s) => s.append([entry(1, 1, 0, "noop"), entry(2, 1), entry(3, 1, 0, "config")]));
    for (let i = 4; i <= 120; i += 4) both((s) => s.append([entry(i, 1, 50), entry(i + 1, 1, 7), entry(i + 2, 1, 300), entry(i + 3, 1)]));
    both((s) => s.truncateFrom(100));
    both((s) => s.saveTermAndVote(2, null));
    both((s) => s.append([entry(100, 2), entry(101, 2, 1000)]));
    expect(log.segmentNames.length, "small segments roll").toBeGreaterThan(3);
    expect(view(openSegmentedLog(dir, SMALL).load())).toEqual(modelView(model));
    const snap: StoredSnapshot = { lastIndex: 90, lastTerm: 1, config: { voters: ["a"], learners: [] }, state: new Uint8Array([1, 2, 3]) };
    both((s) => s.saveSnapshot(snap));
    const before = log.segmentNames.length;
    both((s) => s.discardThrough(90));
    expect(log.segmentNames.length, "whole segments below the snapshot are dropped").toBeLessThan(before);
    expect(log.segmentNames.length).toBeGreaterThan(0);
    log.close();
    const again = openSegmentedLog(dir, SMALL);
    expect(view(again.load())).toEqual(modelView(model));
    expect(again.tornTail).toBeNull();
  });

  it("a crash at every byte of the last record recovers the exact prefix (and the whole record once written)", () => {
    const build = (): { dir: SimDirectory; log: SegmentedLog; model: Model } => {
      const dir = new SimDirectory();
      const log = openSegmentedLog(dir, SMALL);
      const model = memoryRaftStorage();
      for (const s of [log, model]) {
        void s.saveTermAndVote(3, "b");
        for (let i = 1; i <= 30; i += 3) void s.append([entry(i, 3), entry(i + 1, 3, 40), entry(i + 2, 3, 5)]);
      }
      return { dir, log, model };
    };
    const last = entry(31, 3, 37);
    const probe = build();
    const at = probe.log.tailOffset;
    const start = probe.dir.steps;
    probe.log.append([last]);
    const recordBytes = probe.log.tailOffset - at;
    expect(probe.dir.steps - start, "one write and one sync").toBe(recordBytes + 1);
    // the record is whole once its last non-zero byte is down (the padding after it is zeros, as the file was)
    const written = probe.dir.read(probe.log.segmentNames.at(-1)!).subarray(at, at + recordBytes);
    let whole = recordBytes;
    while (written[whole - 1] === 0) whole--;
    expect(whole).toBeGreaterThan(37);
    for (let cut = 0; cut <= recordBytes + 1; cut++) {
      const { dir, log, model } = build();
      dir.cutPowerAfter(cut);
      if (cut <= recordBytes) expect(() => log.append([last])).toThrow(PowerCut);
      else log.append([last]);
      const crashed = dir.crash({ random: () => 0, keepAllWrites: true });
      const after = openSegmentedLog(crashed, SMALL);
      if (cut < whole) {
        expect(view(after.load()), `cut at byte ${cut}`).toEqual(modelView(model));
        if (cut > 0) expect(after.tornTail, `cut at byte ${cut}`).not.toBeNull();
      } else {
        void model.append([last]);
        expect(view(after.load()), "a whole record survives").toEqual(modelView(model));
      }
      // the recovered store keeps working where the torn record was
      after.append([entry(31, 3, 9), entry(32, 3)]);
      void model.append([entry(31, 3, 9), entry(32, 3)]);
      expect(view(openSegmentedLog(cleanly(after, crashed), SMALL).load()), `cut ${cut}, then appended`).toEqual(modelView(model));
    }
  });

  it("refuses to start on a byte flipped anywhere in an acknowledged batch, naming the file and the offset", () => {
    const dir = new SimDirectory();
    const log = openSegmentedLog(dir, { segmentBytes: 1 << 16 });
    log.saveTermAndVote(1, "a");
    for (let i = 1; i <= 20; i++) log.append([entry(i, 1, 24)]);
    const seg = log.segmentNames[0]!;
    const records = scanSegment(dir.read(seg), true, seg).records;
    // batches: the header, the hard state, then one per entry; flip every byte of entries 2..17 (the last batches
    // are where a crash can tear, so damage there reads as a torn tail)
    const from = records.find((r) => r.record.type === "entry" && r.record.entry.index === 2)!.offset;
    const to = records.find((r) => r.record.type === "entry" && r.record.entry.index === 18)!.offset;
    for (let at = from; at < to; at++) {
      const copy = dir.crash({ random: () => 0, keepAllWrites: true });
      copy.mutate(seg, (b) => void (b[at] = b[at]! ^ 0x40));
      let err: unknown = null;
      try {
        openSegmentedLog(copy, { segmentBytes: 1 << 16 });
      } catch (e) {
        err = e;
      }
      expect(err, `flip at byte ${at}`).toBeInstanceOf(RaftRestoreError);
      expect((err as Error).message).toMatch(new RegExp(`${seg.replace(".", "\\.")} is corrupt at byte \\d+: .*refuses to start`));
    }
    expect(to - from).toBeGreaterThan(400);
  });

  it("refuses damage in an older segment and in the snapshot, a missing segment, and a snapshot with no log", () => {
    const dir = new SimDirectory();
    const log = openSegmentedLog(dir, SMALL);
    log.saveTermAndVote(1, "a");
    for (let i = 1; i <= 60; i++) log.append([entry(i, 1, 100)]);
    log.saveSnapshot({ lastIndex: 10, lastTerm: 1, config: null, state: new Uint8Array(50).fill(7) });
    const [first, second] = log.segmentNames;
    expect(log.segmentNames.length).toBeGreaterThan(2);
    const copy = (): SimDirectory => dir.crash({ random: () => 0, keepAllWrites: true });
    const flipped = (name: string, at: number): SimDirectory => {
      const d = copy();
      d.mutate(name, (b) => void (b[at] = b[at]! ^ 1));
      return d;
    };
    expect(() => openSegmentedLog(flipped(first!, 200), SMALL)).toThrow(/wal-0000000000000001\.seg is corrupt at byte/);
    const snap = dir.list().find((n) => n.startsWith("snap-"))!;
    expect(() => openSegmentedLog(flipped(snap, 40), SMALL)).toThrow(/snapshot .* is corrupt: checksum mismatch/);
    const wiped = copy();
    for (const n of wiped.list()) if (n.startsWith("wal-")) wiped.remove(n);
    expect(() => openSegmentedLog(wiped, SMALL)).toThrow(/snapshot without any log segment/);
    const holed = copy();
    holed.remove(second!);
    expect(() => openSegmentedLog(holed, SMALL)).toThrow(/segment 0000000000000002 is missing/);
  });

  it("a crash at every step of a segment roll — including between the roll and the hard-state write — recovers", () => {
    for (const trigger of ["hardState", "append"] as const) {
      // a log whose newest segment is nearly full; `fill` more small hard-state writes bring it to the rolling one
      const build = (fill: number): { dir: SimDirectory; log: SegmentedLog; model: Model } => {
        const dir = new SimDirectory();
        const log = openSegmentedLog(dir, SMALL);
        const model = memoryRaftStorage();
        for (const s of [log, model]) void s.saveTermAndVote(4, "c");
        for (let i = 1; log.tailOffset + 200 <= 4096; i++) for (const s of [log, model]) void s.append([entry(i, 4, 60)]);
        for (let k = 0; k < fill; k++) for (const s of [log, model]) void s.saveTermAndVote(4, "c");
        return { dir, log, model };
      };
      let fill = 0;
      for (;;) {
        const probe = build(fill);
        const segs = probe.log.segmentNames.length;
        probe.log.saveTermAndVote(4, "c");
        if (probe.log.segmentNames.length > segs) break;
        fill++;
      }
      const op = (s: SegmentedLog | Model, next: number): unknown => (trigger === "hardState" ? s.saveTermAndVote(5, null) : s.append([entry(next, 4, 3000)]));
      const probe = build(fill);
      const next = lastIndex(probe.model) + 1;
      const segs = probe.log.segmentNames.length;
      const start = probe.dir.steps;
      op(probe.log, next);
      expect(probe.log.segmentNames.length, `${trigger} rolls a segment`).toBe(segs + 1);
      const total = probe.dir.steps - start;
      const outcomes = new Set<string>();
      for (let cut = 0; cut <= total; cut += cut < 64 || total - cut < 64 ? 1 : 97) {
        for (const seed of [1, 2, 3]) {
          const { dir, log, model } = build(fill);
          const before = modelView(model);
          void op(model, next);
          const after = modelView(model);
          dir.cutPowerAfter(cut);
          let finished = true;
          try {
            op(log, next);
          } catch (e) {
            expect(e).toBeInstanceOf(PowerCut);
            finished = false;
          }
          const crashed = dir.crash({ random: seededRandom(seed * 7919 + cut) });
          const recovered = openSegmentedLog(crashed, SMALL);
          const got = view(recovered.load());
          if (finished) expect(got).toEqual(after);
          else expect([before, after], `${trigger}: cut at byte ${cut} of ${total}`).toContainEqual(got);
          outcomes.add(JSON.stringify(got) === JSON.stringify(before) ? "before" : "after");
          // it keeps going: a batch written after recovery is durable and recovers
          recovered.saveTermAndVote(9, "z");
          expect(view(openSegmentedLog(cleanly(recovered, crashed), SMALL).load())).toMatchObject({ term: 9, votedFor: "z" });
        }
      }
      expect(outcomes, `${trigger}: crashes landed both before and after the call took effect`).toEqual(new Set(["before", "after"]));
    }
  });
});

/** A SimDirectory whose next call of one kind fails once (an EIO, say), then behaves again. */
class FailingDirectory extends SimDirectory {
  armed: "rename" | "syncDirectory" | "remove" | null = null;
  readonly injected = new Error("EIO: injected");
  #fire(kind: "rename" | "syncDirectory" | "remove"): void {
    if (this.armed !== kind) return;
    this.armed = null;
    throw this.injected;
  }
  override rename(from: string, to: string): void {
    this.#fire("rename");
    super.rename(from, to);
  }
  override syncDirectory(): void {
    this.#fire("syncDirectory");
    super.syncDirectory();
  }
  override remove(name: string): void {
    this.#fire("remove");
    super.remove(name);
  }
}

describe("a failure mid-roll or mid-discard stops the store until it is reopened", () => {
  /** Appends one entry at a time from `from` until a call throws; returns the last acknowledged index. */
  const appendUntilThrows = (log: SegmentedLog, from: number): { last: number; error: unknown } => {
    for (let i = from; i < from + 1000; i++) {
      try {
        log.append([entry(i, 2)]);
      } catch (error) {
        return { last: i - 1, error };
      }
    }
    throw new Error("no call failed");
  };

  for (const kind of ["rename", "syncDirectory"] as const) {
    it(`a roll whose ${kind} fails refuses every later write; reopened, the store holds every acknowledged entry and goes on`, () => {
      const dir = new FailingDirectory();
      const log = openSegmentedLog(dir, SMALL);
      log.saveTermAndVote(2, "a");
      for (let i = 1; i <= 5; i++) log.append([entry(i, 2)]);
      const before = log.segmentNames.length;
      dir.armed = kind; // only a roll renames or syncs the directory while appending
      const { last, error } = appendUntilThrows(log, 6);
      expect(error).toBe(dir.injected);
      expect(dir.armed, "the fault fired in the roll").toBeNull();
      // before, the next batch went into the old segment with a batch number after the spent header's (rename) or
      // beside a new segment already named (syncDirectory); the log still reopened when nothing tore, but a torn
      // batch after the skipped number could be read as corruption. The store now stops instead (the Raft driver
      // stops the member on any storage error anyway), and reopening recovers everything acknowledged.
      expect(() => log.append([entry(last + 1, 2)])).toThrow(/a write failed earlier.*EIO: injected.*reopen/);
      expect(() => log.saveTermAndVote(3, "b")).toThrow(/reopen/);
      log.close();
      const again = openSegmentedLog(dir, SMALL);
      const st = again.load();
      expect(st.term).toBe(2);
      expect(st.entries.map((e) => e.index)).toEqual(Array.from({ length: last }, (_, k) => k + 1));
      for (let i = last + 1; i <= last + 200; i++) again.append([entry(i, 3)]);
      expect(again.segmentNames.length).toBeGreaterThan(before);
      again.close();
      expect(openSegmentedLog(dir, SMALL).load().entries.at(-1)?.index).toBe(last + 200);
    });
  }

  it("a gap in an append through appendAsync rejects rather than throws", async () => {
    const log = openSegmentedLog(new SimDirectory(), SMALL);
    log.append([entry(1, 1)]);
    let p: Promise<void> | undefined;
    expect(() => (p = log.appendAsync([entry(5, 1)]))).not.toThrow();
    await expect(p).rejects.toThrow(/append at 5 leaves a gap after 1/);
  });

  it("a removal that fails in discardThrough keeps the segment listed, stops writes, and the reopened log has no hole", () => {
    const dir = new FailingDirectory();
    const log = openSegmentedLog(dir, SMALL);
    log.saveTermAndVote(2, "a");
    for (let i = 1; i <= 400; i++) log.append([entry(i, 2)]);
    const names = log.segmentNames;
    expect(names.length, "several segments to discard").toBeGreaterThan(3);
    log.saveSnapshot({ lastIndex: 400, lastTerm: 2, config: null, state: new Uint8Array([1]) });
    dir.armed = "remove";
    expect(() => log.discardThrough(400)).toThrow(dir.injected);
    expect(log.segmentNames, "nothing dropped from the list").toEqual(names);
    // a later discard must not delete newer segments past the one still on disk (a hole refuses the next start)
    expect(() => log.append([entry(401, 2)])).toThrow(/reopen/);
    log.close();
    const again = openSegmentedLog(dir, SMALL);
    expect(again.load().snapshot?.lastIndex).toBe(400);
    again.discardThrough(400);
    expect(again.segmentNames.length).toBe(1);
    again.append([entry(401, 2)]);
    again.close();
    expect(openSegmentedLog(dir, SMALL).load().entries.map((e) => e.index)).toEqual([401]);
  });
});

describe("the real files' write-and-sync", () => {
  const sizes = [1, INLINE_WRITE_MAX_BYTES, INLINE_WRITE_MAX_BYTES + 1, 3 * INLINE_WRITE_MAX_BYTES];

  it("writes every size at its position, on the caller's thread or the pool, and answers after returning", async () => {
    const path = mkdtempSync(join(tmpdir(), "heddle-wal-files-"));
    try {
      for (const dsync of [false, true]) {
        const dir = nodeWalDirectory(path);
        const f = dir.open(`f-${dsync}`, { create: true, dsync });
        let at = 7;
        const want: Uint8Array[] = [new Uint8Array(7)];
        for (const [k, n] of sizes.entries()) {
          const bytes = new Uint8Array(n).fill(k + 1);
          let answered = false;
          const done = new Promise<Error | null>((resolve) =>
            f.writeAndSyncAsync!(bytes, at, (e) => {
              answered = true;
              resolve(e);
            }),
          );
          expect(answered).toBe(false); // never answers before it returns
          expect(await done).toBeNull();
          want.push(bytes);
          at += n;
        }
        f.close();
        expect(Buffer.compare(readFileSync(join(path, `f-${dsync}`)), Buffer.concat(want))).toBe(0);
      }
    } finally {
      rmSync(path, { recursive: true, force: true });
    }
  });

  it("reports a failed write through the callback, with the system's code, for every size", async () => {
    const path = mkdtempSync(join(tmpdir(), "heddle-wal-files-"));
    try {
      const f = nodeWalDirectory(path).open("f", { create: true, dsync: false });
      for (const n of sizes) {
        let answered = false;
        const done = new Promise<Error | null>((resolve) =>
          f.writeAndSyncAsync!(new Uint8Array(n), 2 ** 52, (e) => {
            answered = true;
            resolve(e);
          }),
        );
        expect(answered).toBe(false);
        const e = await done;
        expect(e).toBeInstanceOf(Error);
        expect((e as NodeJS.ErrnoException).code).toMatch(/^(EFBIG|EINVAL)$/); // beyond any file system's largest file
      }
      f.close();
    } finally {
      rmSync(path, { recursive: true, force: true });
    }
  });

  it("creates a missing directory and its missing parents, and a log lives there", () => {
    const root = mkdtempSync(join(tmpdir(), "heddle-wal-files-"));
    try {
      const path = join(root, "a", "b", "raft-wal");
      const log = openSegmentedLog(nodeWalDirectory(path), SMALL);
      log.saveTermAndVote(1, "x");
      log.append([entry(1, 1)]);
      log.close();
      expect(openSegmentedLog(nodeWalDirectory(path), SMALL).load().entries.map((e) => e.index)).toEqual([1]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("segmented log store against the in-memory store (model-based, fast-check)", () => {
  type Cmd =
    | { kind: "vote"; term: number; vote: number }
    | { kind: "append"; back: number; sizes: number[] }
    | { kind: "truncate"; back: number }
    | { kind: "compact"; back: number }
    | { kind: "install"; ahead: number }
    | { kind: "crash"; during: boolean; at: number; seed: number };
  const cmd: fc.Arbitrary<Cmd> = fc.oneof(
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("vote" as const), term: fc.nat(3), vote: fc.nat(3) }) },
    { weight: 8, arbitrary: fc.record({ kind: fc.constant("append" as const), back: fc.oneof(fc.constant(0), fc.nat(6)), sizes: fc.array(fc.nat(700), { minLength: 1, maxLength: 6 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("truncate" as const), back: fc.nat(6) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("compact" as const), back: fc.nat(10) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("install" as const), ahead: fc.integer({ min: 1, max: 5 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("crash" as const), during: fc.boolean(), at: fc.nat(5000), seed: fc.nat() }) },
  );

  it("every state recovered after a crash (at any step of any call) is one the calls so far could leave", () => {
    type Call = (s: SegmentedLog | Model) => void;
    fc.assert(
      fc.property(fc.array(cmd, { maxLength: 40 }), (cmds) => {
        let dir = new SimDirectory();
        let log = openSegmentedLog(dir, SMALL);
        let model = memoryRaftStorage();
        let term = 1;
        const floor = (): number => model.snapshotOf().snapshot?.lastIndex ?? 0;
        // the storage calls the driver would make for one command, in order
        const plan = (c: Exclude<Cmd, { kind: "crash" }>): Call[] => {
          const last = lastIndex(model);
          switch (c.kind) {
            case "vote": {
              term = Math.max(term, model.snapshotOf().term) + c.term;
              const t = term;
              return [(s) => void s.saveTermAndVote(t, c.vote === 0 ? null : `n${c.vote}`)];
            }
            case "append": {
              const from = Math.max(floor() + 1, last + 1 - c.back);
              const t = Math.max(1, model.snapshotOf().term);
              const es = c.sizes.map((n, k) => entry(from + k, t, n, k % 5 === 4 ? "config" : k % 7 === 6 ? "noop" : "app"));
              return [(s) => void s.append(es)];
            }
            case "truncate": {
              const at = Math.max(floor() + 1, last + 1 - c.back);
              return [(s) => void s.truncateFrom(at)];
            }
            case "compact": {
              const at = last - c.back;
              if (at <= floor()) return [];
              const snap: StoredSnapshot = { lastIndex: at, lastTerm: 1, config: { voters: ["n1"], learners: [] }, state: new Uint8Array(at % 50).fill(at & 0xff) };
              return [(s) => void s.saveSnapshot(snap), (s) => void s.discardThrough(at)];
            }
            case "install": {
              const at = last + c.ahead;
              const snap: StoredSnapshot = { lastIndex: at, lastTerm: 1, config: null, state: new Uint8Array([at & 0xff]) };
              const old = floor();
              return [(s) => void s.truncateFrom(old + 1), (s) => void s.saveSnapshot(snap), (s) => void s.discardThrough(at)];
            }
          }
        };
        for (let k = 0; k < cmds.length; k++) {
          const c = cmds[k]!;
          if (c.kind !== "crash") {
            for (const call of plan(c)) {
              call(log);
              call(model);
            }
            continue;
          }
          // a crash between commands, or at a random step during the next one
          const allowed = [JSON.stringify(modelView(model))];
          const next = cmds[k + 1];
          if (c.during && next !== undefined && next.kind !== "crash") {
            k++;
            dir.cutPowerAfter(c.at);
            let cut = false;
            for (const call of plan(next)) {
              if (!cut) {
                try {
                  call(log);
                } catch (e) {
                  if (!(e instanceof PowerCut)) throw e;
                  cut = true;
                }
              }
              call(model);
              allowed.push(JSON.stringify(modelView(model)));
            }
          }
          log.close();
          dir = dir.crash({ random: seededRandom(c.seed) });
          log = openSegmentedLog(dir, SMALL);
          const rec = log.load();
          expect(allowed, "the recovered state is one the calls could have left").toContain(JSON.stringify(view(rec)));
          // carry on from what was recovered
          model = memoryRaftStorage();
          void model.saveTermAndVote(rec.term, rec.votedFor);
          if (rec.snapshot !== null) void model.saveSnapshot(rec.snapshot);
          void model.append(rec.entries);
        }
        log.close();
        const final = openSegmentedLog(dir.crash({ random: () => 0, keepAllWrites: true }), SMALL);
        expect(view(final.load())).toEqual(modelView(model));
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});

type Model = ReturnType<typeof memoryRaftStorage>;

/** The directory a log was opened on, after closing it cleanly (every write kept). */
function cleanly(log: SegmentedLog, dir: SimDirectory): SimDirectory {
  log.close();
  return dir.crash({ random: () => 0, keepAllWrites: true });
}

function lastIndex(m: Model): number {
  const s = m.snapshotOf();
  return s.entries[s.entries.length - 1]?.index ?? s.snapshot?.lastIndex ?? 0;
}
