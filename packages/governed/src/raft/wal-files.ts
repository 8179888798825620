/**
 * The few file operations the Raft log store needs, behind an interface so the store runs unchanged on the real
 * file system (`nodeWalDirectory`) and on a simulated one that loses unsynced writes and tears the last one in a
 * crash (the tests' `SimDirectory`). Every call is synchronous except `preallocate`, which prepares a spare
 * segment in the background.
 */
import { close, closeSync, constants, rm, fdatasync, fdatasyncSync, fsync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, write, writeSync } from "node:fs";
import { dirname, join } from "node:path";

/** An open file: positional writes and a data sync. */
export interface WalFile {
  /** Writes all of `bytes` at `position`. */
  write(bytes: Uint8Array, position: number): void;
  /** Makes every write so far durable (fdatasync; a no-op for a file opened with O_DSYNC, whose writes already are). */
  sync(): void;
  /**
   * `write` then `sync`, calling `done` once durable (real files only): the sync on libuv's I/O pool, the write
   * too unless it is at most {@link INLINE_WRITE_MAX_BYTES} on a file without O_DSYNC (then on the caller's thread).
   */
  writeAndSyncAsync?(bytes: Uint8Array, position: number, done: (error: Error | null) => void): void;
  close(): void;
}

/** One directory holding the store's files. */
export interface WalDirectory {
  /** Where the directory is, for error messages. */
  readonly location: string;
  /** File names in the directory. */
  list(): string[];
  /** The whole content of `name`. */
  read(name: string): Uint8Array;
  /** Opens `name` for writing; `create` makes an empty file (replacing any). `dsync` asks for O_DSYNC writes. */
  open(name: string, o: { readonly create: boolean; readonly dsync: boolean }): WalFile;
  rename(from: string, to: string): void;
  remove(name: string): void;
  /** Makes creations, renames and removals in the directory durable (fsync of the directory). */
  syncDirectory(): void;
  /**
   * Creates `name` holding `bytes` zero bytes, durable, and calls `done` (possibly later, possibly at once); on
   * failure the file is removed again before `done(error)`, so a full disk is not held full by a partial file.
   * Writing the zeros (rather than leaving a sparse file) is what lets a later overwrite plus fdatasync skip the
   * file-system metadata: the blocks are already allocated and the size does not change.
   */
  preallocate(name: string, bytes: number, done: (error: Error | null) => void): void;
}

const ZEROS = new Uint8Array(1 << 20);

/**
 * The largest batch `writeAndSyncAsync` writes on the calling thread before handing the sync to libuv's pool;
 * a larger one (a snapshot, a big catch-up batch) is written on the pool too, so the event loop never copies
 * megabytes.
 */
export const INLINE_WRITE_MAX_BYTES = 64 * 1024;

/** The real file system: the directory `path` (created if missing). */
export function nodeWalDirectory(path: string): WalDirectory {
  const made = mkdirSync(path, { recursive: true });
  if (made !== undefined) {
    // a directory just created is only durable once its parent is synced: without that, a crash soon after a
    // member's first start could lose the whole log, and the member would restart empty under its old id (R-P5)
    for (let d = path; ; d = dirname(d)) {
      fsyncDirectory(dirname(d));
      if (d === made || dirname(d) === d) break;
    }
  }
  const at = (name: string): string => join(path, name);
  return {
    location: path,
    list: () => readdirSync(path),
    read: (name) => new Uint8Array(readFileSync(at(name))),
    open(name, o) {
      const flags = constants.O_WRONLY | (o.create ? constants.O_CREAT | constants.O_TRUNC : 0) | (o.dsync ? constants.O_DSYNC : 0);
      const fd = openSync(at(name), flags, 0o600);
      let open = true;
      return {
        write(bytes, position) {
          let done = 0;
          while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
        },
        sync() {
          if (!o.dsync) fdatasyncSync(fd);
        },
        writeAndSyncAsync(bytes, position, done) {
          if (!o.dsync && bytes.length <= INLINE_WRITE_MAX_BYTES) {
            // Copying a small batch into the page cache takes microseconds; only the sync waits on the disk. So
            // the write runs here and the pool gets one job, not two: one thread hop and one wake-up of this
            // thread per batch instead of two (a follower's CPU per commit is mostly such per-batch costs).
            try {
              let written = 0;
              while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written, position + written);
            } catch (e) {
              queueMicrotask(() => done(e as Error));
              return;
            }
            return fdatasync(fd, (e) => done(e));
          }
          const rest = (from: number): void => {
            if (from >= bytes.length) {
              if (o.dsync) return done(null);
              return fdatasync(fd, (e) => done(e));
            }
            write(fd, bytes, from, bytes.length - from, position + from, (e, n) => {
              if (e) return done(e);
              if (n === 0) return done(new Error(`raft log: a write at ${position + from} wrote nothing`)); // never spin
              rest(from + n);
            });
          };
          rest(0);
        },
        close() {
          if (open) closeSync(fd);
          open = false;
        },
      };
    },
    rename: (from, to) => renameSync(at(from), at(to)),
    remove: (name) => rmSync(at(name), { force: true }),
    syncDirectory: () => fsyncDirectory(path),
    preallocate(name, bytes, done) {
      let fd: number;
      try {
        fd = openSync(at(name), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
      } catch (e) {
        return done(e as Error);
      }
      // chunked asynchronous writes on libuv's pool: the calling thread keeps serving appends meanwhile
      const step = (offset: number): void => {
        if (offset >= bytes) {
          fsync(fd, (e) => close(fd, () => (e ? rm(at(name), { force: true }, () => done(e)) : done(null))));
          return;
        }
        const n = Math.min(ZEROS.length, bytes - offset);
        // a failed fill (a full disk) gives back the space it took: a partial spare must not keep the disk full
        // for the store's own next write, nor for anything else in the directory
        write(fd, ZEROS, 0, n, offset, (e, written) => {
          const failed = e ?? (written > 0 ? null : new Error(`raft log: zero-filling ${name} wrote nothing at ${offset}`));
          if (failed !== null) close(fd, () => rm(at(name), { force: true }, () => done(failed)));
          else step(offset + written); // a short write continues where it stopped
        });
      };
      step(0);
    },
  };
}

function fsyncDirectory(path: string): void {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
