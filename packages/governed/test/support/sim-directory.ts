/**
 * A simulated directory for the Raft log store (`WalDirectory`) that models what a crash does to a real disk:
 * writes not yet synced may be lost, kept, or kept in part (a torn write, cut at any byte), in order; creations,
 * renames and removals not yet made durable by a directory sync may be lost, in order. A power cut can also be
 * armed to stop the machine after a given number of written bytes, in the middle of a write.
 */
import type { WalDirectory, WalFile } from "../../src/raft/wal-files.ts";

/** Thrown by a write or directory call once an armed power cut fires. */
export class PowerCut extends Error {
  override readonly name = "PowerCut";
}

class Bytes {
  buf = new Uint8Array(0);
  len = 0;
  write(bytes: Uint8Array, pos: number): void {
    const end = pos + bytes.length;
    if (end > this.buf.length) {
      const b = new Uint8Array(Math.max(end, this.buf.length * 2));
      b.set(this.buf.subarray(0, this.len));
      this.buf = b;
    }
    this.buf.set(bytes, pos);
    if (end > this.len) this.len = end;
  }
  view(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
  copy(): Bytes {
    const c = new Bytes();
    c.write(this.view(), 0);
    return c;
  }
}

class SimFile {
  current = new Bytes();
  durable = new Bytes();
  pending: { pos: number; bytes: Uint8Array }[] = [];
}

type DirOp = { op: "link"; name: string; file: SimFile } | { op: "unlink"; name: string };

/** How a crash treats unsynced state; every choice comes from `random` unless fixed. */
export interface CrashChoice {
  readonly random: () => number;
  /** Keep every unsynced write in full (the state the machine had written at the moment of the cut). */
  readonly keepAllWrites?: boolean;
}

/** The simulated directory. `crash()` returns the directory a reboot would find. */
export class SimDirectory implements WalDirectory {
  readonly location: string;
  #names = new Map<string, SimFile>();
  #durableNames = new Map<string, SimFile>();
  #pendingDirOps: DirOp[] = [];
  #budget = Infinity;
  #cut = false;
  /** Work done so far, in steps: one per byte written, one per other call that changes the disk. */
  steps = 0;
  /** Directory syncs and file syncs so far. */
  syncs = 0;

  constructor(location = "sim") {
    this.location = location;
  }

  /**
   * Arms a power cut after `steps` more steps (one per byte written, one per sync, open, rename, removal or
   * directory sync): the call that would go past it stops there (a write keeps the bytes before the cut) and
   * throws `PowerCut`, and so does every call after it. Infinity disarms.
   */
  cutPowerAfter(steps: number): void {
    this.#budget = steps;
    this.#cut = false;
  }

  #step(): void {
    if (this.#cut) throw new PowerCut("power cut");
    if (this.#budget < 1) {
      this.#cut = true;
      throw new PowerCut("power cut");
    }
    this.#budget--;
    this.steps++;
  }

  #spend(bytes: Uint8Array): Uint8Array {
    if (this.#cut) throw new PowerCut("power cut");
    const n = Math.min(this.#budget, bytes.length);
    this.#budget -= n;
    this.steps += n;
    if (n < bytes.length) this.#cut = true;
    return bytes.subarray(0, n);
  }

  list(): string[] {
    return [...this.#names.keys()].sort();
  }

  read(name: string): Uint8Array {
    const f = this.#names.get(name);
    if (f === undefined) throw new Error(`ENOENT: ${name}`);
    return f.current.view().slice();
  }

  open(name: string, o: { readonly create: boolean; readonly dsync: boolean }): WalFile {
    this.#step();
    let f = this.#names.get(name);
    if (o.create || f === undefined) {
      if (!o.create) throw new Error(`ENOENT: ${name}`);
      f = new SimFile();
      this.#link(name, f);
    }
    const file = f;
    let open = true;
    return {
      write: (bytes, pos) => {
        if (!open) throw new Error("write to a closed file");
        const part = this.#spend(bytes);
        const copy = part.slice();
        file.current.write(copy, pos);
        file.pending.push({ pos, bytes: copy });
        if (part.length < bytes.length) throw new PowerCut("power cut mid-write");
      },
      sync: () => {
        this.#step();
        for (const w of file.pending) file.durable.write(w.bytes, w.pos);
        file.pending = [];
        this.syncs++;
      },
      close: () => {
        open = false;
      },
    };
  }

  #link(name: string, f: SimFile): void {
    this.#names.set(name, f);
    this.#pendingDirOps.push({ op: "link", name, file: f });
  }

  rename(from: string, to: string): void {
    this.#step();
    const f = this.#names.get(from);
    if (f === undefined) throw new Error(`ENOENT: ${from}`);
    this.#names.delete(from);
    this.#names.set(to, f);
    this.#pendingDirOps.push({ op: "unlink", name: from }, { op: "link", name: to, file: f });
  }

  remove(name: string): void {
    this.#step();
    if (!this.#names.delete(name)) return;
    this.#pendingDirOps.push({ op: "unlink", name });
  }

  syncDirectory(): void {
    this.#step();
    for (const op of this.#pendingDirOps) {
      if (op.op === "link") this.#durableNames.set(op.name, op.file);
      else this.#durableNames.delete(op.name);
    }
    this.#pendingDirOps = [];
    this.syncs++;
  }

  preallocate(name: string, bytes: number, done: (error: Error | null) => void): void {
    this.#step();
    const f = new SimFile();
    f.current.write(new Uint8Array(bytes), 0);
    f.durable.write(new Uint8Array(bytes), 0);
    this.#link(name, f);
    done(null);
  }

  /** Bytes of `name` as the live machine sees them (tests flip bytes here). */
  mutate(name: string, fn: (bytes: Uint8Array) => void): void {
    const f = this.#names.get(name)!;
    fn(f.current.buf.subarray(0, f.current.len));
    fn(f.durable.buf.subarray(0, f.durable.len));
  }

  /**
   * The directory after a crash now: a random prefix of the unsynced directory operations survives, and each
   * file keeps its synced bytes plus a random prefix of its unsynced writes, the last one possibly cut short.
   */
  crash(c: CrashChoice): SimDirectory {
    const names = new Map(this.#durableNames);
    const keepOps = c.keepAllWrites ? this.#pendingDirOps.length : Math.floor(c.random() * (this.#pendingDirOps.length + 1));
    for (const op of this.#pendingDirOps.slice(0, keepOps)) {
      if (op.op === "link") names.set(op.name, op.file);
      else names.delete(op.name);
    }
    const after = new SimDirectory(this.location);
    const seen = new Map<SimFile, SimFile>();
    for (const [name, f] of names) {
      let g = seen.get(f);
      if (g === undefined) {
        g = new SimFile();
        const b = f.durable.copy();
        const keep = c.keepAllWrites ? f.pending.length : Math.floor(c.random() * (f.pending.length + 1));
        f.pending.slice(0, keep).forEach((w, k) => {
          const last = k === keep - 1 && !c.keepAllWrites;
          b.write(last ? w.bytes.subarray(0, Math.floor(c.random() * (w.bytes.length + 1))) : w.bytes, w.pos);
        });
        g.current = b;
        g.durable = b.copy();
        seen.set(f, g);
      }
      after.#names.set(name, g);
      after.#durableNames.set(name, g);
    }
    return after;
  }
}
