/**
 * The Raft log store made for Raft (governed.md §4.4; issue 15): segmented append-only files, each preallocated
 * with zeros, one write and one data sync per storage call (the driver's group-commit batch), a CRC-32C on every
 * record, torn-tail recovery, and compaction by deleting whole segments below the snapshot. Synchronous; the
 * `walRaftStorage` facade runs it on the caller's thread or in a worker thread.
 *
 * Files in the directory:
 * - `wal-<seq>.seg` — segments, `<seq>` 16 hex digits, consecutive. Each opens with a header batch (format
 *   version, its seq, and the hard state in force when it was created), so deleting older segments never loses
 *   the term and vote. A segment is prepared under a temporary name (zero-filled, header written and synced) and
 *   renamed into place, so a named segment always has an intact header: a crash during a roll leaves either the
 *   old newest segment or the new one with its header, never a headerless segment.
 * - `snap-<lastIndex>.snap` — the newest snapshot (checksummed), written to a temporary file, synced and
 *   renamed; older ones are removed once it is in place.
 * - `*.tmp` — a spare segment being zero-filled in the background, or an interrupted write; removed at open.
 *
 * Records replay in order: an entry at index i replaces everything from i on (so a truncation followed by an
 * append needs no separate record), a truncate record drops everything from its index, a hard-state record
 * replaces the term and vote. Only complete batches apply, so every storage call is all-or-nothing.
 */
import { crc32c } from "./crc32c.ts";
import { decodeConfig, encodeConfig } from "./codec.ts";
import { RaftRestoreError } from "./errors.ts";
import type { WalDirectory, WalFile } from "./wal-files.ts";
import { BatchWriter, scanSegment, WAL_FORMAT_VERSION } from "./wal-records.ts";
import type { LogEntry, LogIndex, NodeId, PersistedState, StoredSnapshot } from "./types.ts";

/** Nominal segment size: a segment is rolled when the next batch would not fit (a bigger batch gets its own). */
export const DEFAULT_SEGMENT_BYTES = 16 * 1024 * 1024;
/** Smallest allowed `segmentBytes` (tests use small segments to exercise rolls). */
export const MIN_SEGMENT_BYTES = 4096;

/** Options of the log store. */
export interface SegmentedLogOptions {
  /** Nominal segment size in bytes (≥ `MIN_SEGMENT_BYTES`). Default `DEFAULT_SEGMENT_BYTES`. */
  readonly segmentBytes?: number;
  /**
   * How a batch is made durable: `"dsync"` (segments opened with O_DSYNC, one write call on libuv's pool) or
   * `"fdatasync"` (a small batch written on the calling thread, then fdatasync on the pool). Both overwrite
   * preallocated zeros. Default `"dsync"` (see the README for the measurement behind the default).
   */
  readonly sync?: "fdatasync" | "dsync";
}

const SEGMENT_RE = /^wal-([0-9a-f]{16})\.seg$/;
const SNAPSHOT_RE = /^snap-([0-9a-f]{16})\.snap$/;
const SPARE = "wal-spare.tmp";
const SNAP_MAGIC = 0x4e534448; // "HDSN"
const hex = (n: number): string => n.toString(16).padStart(16, "0");
const segName = (seq: number): string => `wal-${hex(seq)}.seg`;
const snapName = (index: number): string => `snap-${hex(index)}.snap`;
const ZEROS = new Uint8Array(1 << 20);

/** One storage call as a batch of records, and its bookkeeping once durable. */
interface Batch {
  fill(w: BatchWriter): void;
  done(): void;
}

interface Segment {
  readonly seq: number;
  readonly name: string;
  /** Highest entry index written into it (0 when none): it can go once the snapshot covers that. */
  maxIndex: LogIndex;
}

/** What recovery read from the directory. */
interface Recovered {
  readonly state: PersistedState;
  readonly segments: Segment[];
  readonly tail: number;
  readonly headerEnd: number;
  readonly dataEnd: number;
  readonly lastBatch: number;
  readonly torn: string | null;
}

/** Encodes a snapshot file: magic, checksum of the rest, position, configuration, state. */
function encodeSnapshot(s: StoredSnapshot): Uint8Array {
  const config = s.config === null ? null : encodeConfig(s.config);
  const b = new Uint8Array(28 + (config?.length ?? 0) + s.state.length);
  const v = new DataView(b.buffer);
  v.setUint32(0, SNAP_MAGIC, true);
  v.setFloat64(8, s.lastIndex, true);
  v.setFloat64(16, s.lastTerm, true);
  v.setInt32(24, config === null ? -1 : config.length, true);
  if (config !== null) b.set(config, 28);
  b.set(s.state, 28 + (config?.length ?? 0));
  v.setUint32(4, crc32c(b, 8), true);
  return b;
}

function decodeSnapshot(b: Uint8Array, where: string): StoredSnapshot {
  const bad = (why: string): never => {
    throw new RaftRestoreError(`raft snapshot ${where} is corrupt: ${why}; the member refuses to start`);
  };
  if (b.length < 28) bad("shorter than its header");
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (v.getUint32(0, true) !== SNAP_MAGIC) bad("bad magic");
  if (v.getUint32(4, true) !== crc32c(b, 8)) bad("checksum mismatch");
  const n = v.getInt32(24, true);
  if (n < -1 || 28 + Math.max(0, n) > b.length) bad("bad configuration length");
  const config = n < 0 ? null : decodeConfig(b.slice(28, 28 + n));
  if (n >= 0 && config === null) bad("undecodable configuration");
  return { lastIndex: v.getFloat64(8, true), lastTerm: v.getFloat64(16, true), config, state: b.slice(28 + Math.max(0, n)) };
}

/** Reads and checks everything in `dir`; throws `RaftRestoreError` on damage. Changes nothing. */
function recover(dir: WalDirectory): Recovered {
  const names = dir.list();
  const segs = names
    .map((n) => SEGMENT_RE.exec(n))
    .filter((m) => m !== null)
    .map((m) => ({ seq: parseInt(m[1]!, 16), name: m[0], maxIndex: 0 }))
    .sort((a, b) => a.seq - b.seq);
  const snaps = names
    .map((n) => SNAPSHOT_RE.exec(n))
    .filter((m) => m !== null)
    .map((m) => ({ index: parseInt(m[1]!, 16), name: m[0] }))
    .sort((a, b) => b.index - a.index);
  const where = dir.location;
  const fail = (why: string): never => {
    throw new RaftRestoreError(`raft log in ${where}: ${why}; the member refuses to start`);
  };
  let snapshot: StoredSnapshot | null = null;
  if (snaps.length > 0) {
    snapshot = decodeSnapshot(dir.read(snaps[0]!.name), `${where}/${snaps[0]!.name}`);
    if (snapshot.lastIndex !== snaps[0]!.index) fail(`${snaps[0]!.name} holds index ${snapshot.lastIndex}`);
  }
  if (segs.length === 0) {
    if (snapshot !== null) fail("a snapshot without any log segment (a wiped log: restart under a new NodeId, R-P5)");
    return { state: { term: 0, votedFor: null, snapshot: null, entries: [] }, segments: [], tail: 0, headerEnd: 0, dataEnd: 0, lastBatch: 0, torn: null };
  }
  for (let i = 1; i < segs.length; i++) if (segs[i]!.seq !== segs[i - 1]!.seq + 1) fail(`segment ${hex(segs[i - 1]!.seq + 1)} is missing`);

  let term = 0;
  let votedFor: NodeId | null = null;
  let log: LogEntry[] = [];
  let base = 0; // index of log[0]
  let lastBatch = -1;
  let tail = 0;
  let headerEnd = 0;
  let dataEnd = 0;
  let torn: string | null = null;
  segs.forEach((seg, k) => {
    const newest = k === segs.length - 1;
    const scan = scanSegment(dir.read(seg.name), newest, `${where}/${seg.name}`);
    const first = scan.records[0];
    if (first === undefined || first.record.type !== "segment") return fail(`${seg.name} has no intact header`);
    const head = first.record;
    if (head.seq !== seg.seq) fail(`${seg.name} says it is segment ${head.seq}`);
    if (head.version !== WAL_FORMAT_VERSION) fail(`${seg.name} has format version ${head.version}; this build reads version ${WAL_FORMAT_VERSION}`);
    if (first.batch <= lastBatch) fail(`${seg.name} starts with batch ${first.batch} after ${lastBatch}`);
    for (const { record } of scan.records) {
      switch (record.type) {
        case "segment":
          break;
        case "hardState":
          term = record.term;
          votedFor = record.votedFor;
          break;
        case "truncate":
          if (record.index <= base) log = [];
          else if (record.index - base < log.length) log.length = record.index - base;
          break;
        case "entry": {
          const i = record.entry.index;
          if (i > seg.maxIndex) seg.maxIndex = i;
          if (log.length > 0 && i >= base && i <= base + log.length) log.length = i - base;
          else {
            // a fresh run: the first entry, one after an install (a gap), or a rewrite below what we hold; a
            // hole that matters (above the snapshot) is caught by the check after the replay
            log = [];
            base = i;
          }
          log.push(record.entry);
          break;
        }
      }
    }
    lastBatch = Math.max(lastBatch, scan.lastBatch);
    if (newest) {
      tail = scan.tail;
      const h = scan.records.findIndex((r) => r.end);
      headerEnd = scan.records[h + 1]?.offset ?? scan.tail;
      dataEnd = scan.dataEnd;
      torn = scan.torn;
    }
  });
  const floor = snapshot?.lastIndex ?? 0;
  const entries = log.filter((e) => e.index > floor);
  if (entries.length > 0 && entries[0]!.index !== floor + 1) fail(`entries ${floor + 1}…${entries[0]!.index - 1} are missing above the snapshot at ${floor}`);
  return { state: { term, votedFor, snapshot, entries }, segments: segs, tail, headerEnd, dataEnd, lastBatch, torn };
}

/** The synchronous log store over one directory. Open with `openSegmentedLog`. */
export class SegmentedLog {
  readonly #dir: WalDirectory;
  readonly #segmentBytes: number;
  readonly #dsync: boolean;
  readonly #segments: Segment[];
  #file: WalFile | null = null;
  #tail: number;
  /** Where the newest segment's header batch ends. */
  #headerEnd: number;
  #batch: number;
  #term: number;
  #votedFor: NodeId | null;
  #lastIndex: LogIndex;
  #floor: LogIndex;
  #spare: "none" | "preparing" | "ready" = "none";
  /** How many segments there were when preparing a spare last failed (a full disk): no retry until a roll. */
  #spareFailedAt = -1;
  #closed = false;
  /** A failed write leaves the tail unknown: no further writes until reopened. */
  #broken: Error | null = null;
  #recovered: PersistedState | null;
  /** Why the last open dropped a torn tail (null when it did not). */
  readonly tornTail: string | null;
  /** Data syncs issued (one per storage call that wrote, plus segment rolls). */
  syncs = 0;

  constructor(dir: WalDirectory, o: SegmentedLogOptions = {}) {
    const segmentBytes = o.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    if (!Number.isSafeInteger(segmentBytes) || segmentBytes < MIN_SEGMENT_BYTES) throw new RangeError(`segmentBytes must be an integer ≥ ${MIN_SEGMENT_BYTES}`);
    this.#dir = dir;
    this.#segmentBytes = segmentBytes;
    this.#dsync = o.sync !== "fdatasync";
    for (const n of dir.list()) if (n.endsWith(".tmp")) dir.remove(n);
    const r = recover(dir);
    this.#segments = r.segments;
    this.#tail = r.tail;
    this.#headerEnd = r.headerEnd;
    this.#batch = r.lastBatch + 1;
    this.#term = r.state.term;
    this.#votedFor = r.state.votedFor;
    this.#floor = r.state.snapshot?.lastIndex ?? 0;
    const last = r.state.entries[r.state.entries.length - 1];
    this.#lastIndex = last?.index ?? this.#floor;
    this.#recovered = r.state;
    this.tornTail = r.torn;
    if (this.#segments.length === 0) this.#roll();
    else {
      const newest = this.#segments[this.#segments.length - 1]!;
      this.#file = dir.open(newest.name, { create: false, dsync: this.#dsync });
      if (r.dataEnd > r.tail) {
        // clear the torn bytes, so a later scan cannot mistake them for records after our next batches
        try {
          this.#file.write(new Uint8Array(r.dataEnd - r.tail), r.tail);
          this.#sync();
        } catch (e) {
          // the open is retried by the next call: this one must not keep its descriptor
          this.#file.close();
          this.#file = null;
          throw e;
        }
      }
      this.#prepareSpare();
    }
  }

  /** What the store holds (entries above the snapshot only, R-P4). */
  load(): PersistedState {
    const r = this.#recovered ?? recover(this.#dir).state;
    this.#recovered = null;
    return r;
  }

  saveTermAndVote(term: number, votedFor: NodeId | null): void {
    this.#run(this.#hardStateBatch(term, votedFor));
  }

  append(entries: readonly LogEntry[]): void {
    this.#run(this.#appendBatch(entries));
  }

  truncateFrom(index: LogIndex): void {
    this.#run(this.#truncateBatch(index));
  }

  /**
   * `saveTermAndVote`, `append` and `truncateFrom` with the batch's write and sync handed to libuv's I/O pool
   * (a segment roll, rare, still runs synchronously): the calling thread keeps running meanwhile. Calls must not
   * overlap (the driver issues storage calls one after another).
   */
  saveTermAndVoteAsync(term: number, votedFor: NodeId | null): Promise<void> {
    return this.#runAsync(() => this.#hardStateBatch(term, votedFor));
  }

  appendAsync(entries: readonly LogEntry[]): Promise<void> {
    return this.#runAsync(() => this.#appendBatch(entries));
  }

  truncateFromAsync(index: LogIndex): Promise<void> {
    return this.#runAsync(() => this.#truncateBatch(index));
  }

  #hardStateBatch(term: number, votedFor: NodeId | null): Batch {
    return {
      fill: (w) => w.hardState(term, votedFor),
      done: () => {
        this.#term = term;
        this.#votedFor = votedFor;
      },
    };
  }

  #appendBatch(entries: readonly LogEntry[]): Batch | null {
    const first = entries[0];
    if (first === undefined) return null;
    if (first.index > this.#lastIndex + 1 && first.index !== this.#floor + 1) {
      throw new Error(`raft log: append at ${first.index} leaves a gap after ${this.#lastIndex}`);
    }
    return {
      fill: (w) => {
        for (const e of entries) w.entry(e);
      },
      done: () => {
        const last = entries[entries.length - 1]!.index;
        const seg = this.#segments[this.#segments.length - 1]!;
        if (last > seg.maxIndex) seg.maxIndex = last;
        this.#lastIndex = last;
      },
    };
  }

  #truncateBatch(index: LogIndex): Batch | null {
    if (index > this.#lastIndex) return null;
    return { fill: (w) => w.truncate(index), done: () => void (this.#lastIndex = Math.max(index - 1, 0)) };
  }

  saveSnapshot(s: StoredSnapshot): void {
    const name = snapName(s.lastIndex);
    const tmp = `${name}.tmp`;
    const f = this.#dir.open(tmp, { create: true, dsync: false });
    try {
      f.write(encodeSnapshot(s), 0);
      f.sync();
    } catch (e) {
      // a full disk: give back what the partial file took (the log's own next roll needs it)
      f.close();
      this.#dir.remove(tmp);
      throw e;
    }
    f.close();
    this.#snapshotWritten(s, name, tmp);
  }

  /**
   * `saveSnapshot` with the snapshot file's write and data sync on libuv's I/O pool (issue 15: a member's own
   * compaction runs in the background while it keeps sending, which only helps if the event loop is not held by
   * the write — a snapshot is megabytes where a batch of entries is kilobytes). The rename, the directory sync and
   * the removal of older snapshots stay synchronous: metadata only, and they make the new snapshot the one a
   * restart loads. The caller makes no other call on the store until this settles (the driver's storage calls
   * never overlap). Falls back to `saveSnapshot` for a directory without asynchronous writes.
   */
  saveSnapshotAsync(s: StoredSnapshot): Promise<void> {
    const name = snapName(s.lastIndex);
    const tmp = `${name}.tmp`;
    let f: WalFile;
    let bytes: Uint8Array;
    try {
      bytes = encodeSnapshot(s);
      f = this.#dir.open(tmp, { create: true, dsync: false });
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const io = f.writeAndSyncAsync;
    if (io === undefined) {
      f.close();
      return new Promise((resolve) => resolve(this.saveSnapshot(s)));
    }
    return new Promise((resolve, reject) =>
      io.call(f, bytes, 0, (e) => {
        f.close();
        if (e !== null) {
          // as in saveSnapshot: a full disk gets back what the partial file took
          try {
            this.#dir.remove(tmp);
          } catch {
            // the write's error is the one to report
          }
          return reject(e);
        }
        try {
          this.#snapshotWritten(s, name, tmp);
          resolve();
        } catch (e2) {
          reject(e2 as Error);
        }
      }),
    );
  }

  /** Makes the durable snapshot file `tmp` the store's snapshot `name` and drops older ones. */
  #snapshotWritten(s: StoredSnapshot, name: string, tmp: string): void {
    this.#dir.rename(tmp, name);
    this.#dir.syncDirectory();
    for (const n of this.#dir.list()) if (SNAPSHOT_RE.test(n) && n !== name) this.#dir.remove(n);
    this.#floor = s.lastIndex;
    if (s.lastIndex > this.#lastIndex) this.#lastIndex = s.lastIndex;
  }

  /** Deletes the oldest segments whose every entry is at or below `index` (never the newest), oldest first. */
  discardThrough(index: LogIndex): void {
    while (this.#segments.length > 1 && this.#segments[0]!.maxIndex <= index) {
      const seg = this.#segments[0]!;
      try {
        this.#dir.remove(seg.name);
        // one at a time: the removals that survive a crash are always the oldest ones (no hole in the sequence)
        this.#dir.syncDirectory();
      } catch (e) {
        // kept in the list (a later discard must not delete a newer segment past it, leaving a hole), and the
        // store writes nothing more until reopened: it cannot tell whether the removal is durable
        this.#broken = e as Error;
        throw e;
      }
      this.#segments.shift();
    }
  }

  close(): void {
    this.#closed = true;
    this.#file?.close();
    this.#file = null;
  }

  /** Byte offset in the newest segment where the next batch goes (for tests and diagnostics). */
  get tailOffset(): number {
    return this.#tail;
  }

  /** Segment names, oldest first (for tests and diagnostics). */
  get segmentNames(): string[] {
    return this.#segments.map((s) => s.name);
  }

  #sync(): void {
    this.#file!.sync();
    this.syncs++;
  }

  #run(b: Batch | null): void {
    if (b === null) return;
    const w = this.#prepare(b);
    try {
      w.file.write(w.bytes, w.at);
      this.#sync();
    } catch (e) {
      this.#broken = e as Error;
      throw e;
    }
    b.done();
  }

  /** `batch` is built inside, so that every failure (a gap in an append too) rejects rather than throws. */
  #runAsync(batch: () => Batch | null): Promise<void> {
    let b: Batch | null;
    let w: { file: WalFile; bytes: Uint8Array; at: number };
    try {
      b = batch();
      if (b === null) return Promise.resolve();
      w = this.#prepare(b);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const io = w.file.writeAndSyncAsync;
    if (io === undefined) return Promise.reject(new Error("raft log: this directory has no asynchronous writes"));
    return new Promise((resolve, reject) =>
      io.call(w.file, w.bytes, w.at, (e) => {
        if (e !== null) {
          this.#broken = e;
          return reject(e);
        }
        this.syncs++;
        b!.done();
        resolve();
      }),
    );
  }

  /**
   * Encodes one batch and reserves its place: rolls first when it would not fit the newest segment (a segment
   * takes at least one batch after its header, however big).
   */
  #prepare(b: Batch): { file: WalFile; bytes: Uint8Array; at: number } {
    if (this.#closed) throw new Error("raft log: closed");
    if (this.#broken !== null) throw new Error(`raft log: a write failed earlier (${this.#broken.message}); reopen the store`);
    const w = new BatchWriter();
    b.fill(w);
    if (this.#tail + w.size > this.#segmentBytes && this.#tail > this.#headerEnd) {
      try {
        this.#roll();
      } catch (e) {
        // Whatever part of the roll failed, the store cannot tell what it left: a batch number spent on a header
        // that never became durable, or a new segment that may already be named. Writing on usually recovers
        // anyway, but a batch torn after the skipped number could be misread as corruption by the next start; so,
        // conservatively and as after a failed write, nothing more is written until the store is reopened
        // (recovery then reads what is really there). The Raft driver stops the member on the error in any case.
        this.#broken = e as Error;
        throw e;
      }
    }
    const bytes = w.finish(this.#batch++);
    const at = this.#tail;
    this.#tail += bytes.length;
    this.#prepareSpare();
    return { file: this.#file!, bytes, at };
  }

  /** Starts a new segment: a zero-filled file under a temporary name, its header batch synced, then renamed in. */
  #roll(): void {
    const seq = (this.#segments[this.#segments.length - 1]?.seq ?? 0) + 1;
    let tmp: string;
    let f: WalFile | null = null;
    let header: Uint8Array;
    try {
      if (this.#spare === "ready") {
        tmp = SPARE;
        this.#spare = "none";
        f = this.#dir.open(tmp, { create: false, dsync: this.#dsync });
      } else {
        // no spare ready (the first segment, or appends outran the background fill): zero-fill here
        tmp = `${segName(seq)}.tmp`;
        const z = this.#dir.open(tmp, { create: true, dsync: false });
        try {
          for (let at = 0; at < this.#segmentBytes; at += ZEROS.length) z.write(ZEROS.subarray(0, Math.min(ZEROS.length, this.#segmentBytes - at)), at);
          z.sync();
        } finally {
          z.close();
        }
        f = this.#dir.open(tmp, { create: false, dsync: this.#dsync });
      }
      const w = new BatchWriter();
      w.segment(seq);
      w.hardState(this.#term, this.#votedFor);
      header = w.finish(this.#batch++);
      f.write(header, 0);
      f.sync();
    } catch (e) {
      // a roll that fails before its rename (a full disk) removes its temporary file: the space goes back, the
      // newest segment stays the old one, and recovery never sees the new one
      f?.close();
      this.#dir.remove(tmp!);
      throw e;
    }
    this.syncs++;
    try {
      this.#dir.rename(tmp, segName(seq));
      this.#dir.syncDirectory();
    } catch (e) {
      f.close();
      throw e;
    }
    this.#file?.close();
    this.#file = f;
    this.#tail = header.length;
    this.#headerEnd = header.length;
    this.#segments.push({ seq, name: segName(seq), maxIndex: 0 });
    this.#prepareSpare();
  }

  /** Starts filling the next segment in the background once the newest is half full (not at start-up, when
   * every member would write a whole segment of zeros at once). */
  #prepareSpare(): void {
    if (this.#spare !== "none" || this.#closed || this.#tail < this.#segmentBytes / 2) return;
    // after a failure (the disk is full), one attempt per segment, not one per batch: each attempt writes zeros
    // until the disk refuses; the roll itself zero-fills when no spare is ready (and fails there if still full)
    if (this.#spareFailedAt === this.#segments.length) return;
    this.#spare = "preparing";
    this.#dir.preallocate(SPARE, this.#segmentBytes, (e) => {
      if (this.#spare !== "preparing") return;
      if (e !== null) this.#spareFailedAt = this.#segments.length;
      this.#spare = e === null && !this.#closed ? "ready" : "none";
    });
  }
}

/** Opens (creating if needed) the log store in `dir`, recovering it: torn tails dropped, damage refused. */
export function openSegmentedLog(dir: WalDirectory, o: SegmentedLogOptions = {}): SegmentedLog {
  return new SegmentedLog(dir, o);
}
