/**
 * The log directory's asynchronous writers on a file system that writes less than asked (a short write is legal for
 * `write(2)`: a signal, a nearly full disk, some network file systems). `preallocate` zero-fills a spare segment in
 * 1 MiB chunks and `writeAndSyncAsync` writes a large batch on libuv's pool; each must continue where a short write
 * stopped (not leave a hole of non-zero or stale bytes), and fail rather than spin when a write makes no progress.
 * `node:fs`'s `write` is wrapped here to cap every call at `cap` bytes (0: no progress at all).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const fault = vi.hoisted(() => ({ cap: Infinity, calls: 0, ranges: [] as [number, number][] }));
vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const write = (fd: number, buf: Uint8Array, off: number, len: number, pos: number, cb: (e: NodeJS.ErrnoException | null, n: number) => void): void => {
    fault.calls++;
    if (fault.cap === 0) return void queueMicrotask(() => cb(null, 0));
    const n = Math.min(len, fault.cap);
    fault.ranges.push([pos, pos + n]);
    real.write(fd, buf, off, n, pos, cb);
  };
  return { ...real, default: { ...real, write }, write };
});

const { nodeWalDirectory, INLINE_WRITE_MAX_BYTES } = await import("../src/raft/wal-files.ts");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "heddle-wal-short-"));
  fault.cap = Infinity;
  fault.calls = 0;
  fault.ranges = [];
});

/** Whether the writes made cover [from, to) exactly once, in order: no range skipped (a hole reads as zeros) or repeated. */
const tiles = (from: number, to: number): boolean => {
  let at = from;
  for (const [a, b] of fault.ranges) {
    if (a !== at) return false;
    at = b;
  }
  return at === to;
};
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const preallocate = (d: ReturnType<typeof nodeWalDirectory>, name: string, bytes: number): Promise<Error | null> => new Promise((resolve) => d.preallocate(name, bytes, resolve));

describe("short writes on the log directory's pool writers", () => {
  it("preallocate continues after each short write: the spare is exactly the size asked, all zeros", async () => {
    const d = nodeWalDirectory(join(dir, "log"));
    const bytes = 3 * (1 << 20) + 12_345; // more than one 1 MiB chunk, and a ragged end
    fault.cap = 200_003;
    expect(await preallocate(d, "spare", bytes)).toBeNull();
    const got = readFileSync(join(dir, "log", "spare"));
    expect(got.length).toBe(bytes);
    expect(got.every((b) => b === 0)).toBe(true);
    // a skipped range would leave a hole that also reads as zeros, so check what was written: every byte, once
    expect(fault.calls).toBeGreaterThanOrEqual(Math.ceil(bytes / 200_003)); // it did go through the short path
    expect(tiles(0, bytes)).toBe(true);
  });

  it("preallocate fails, rather than spinning, on a write that makes no progress — and gives the space back", async () => {
    const d = nodeWalDirectory(join(dir, "log"));
    fault.cap = 0;
    const e = await preallocate(d, "spare", 1 << 20);
    expect(e?.message).toMatch(/zero-filling spare wrote nothing at 0/);
    expect(fault.calls).toBe(1);
    expect(existsSync(join(dir, "log", "spare"))).toBe(false);
  });

  it("a large batch written on the pool continues after each short write and lands whole", async () => {
    const d = nodeWalDirectory(join(dir, "log"));
    const f = d.open("seg", { create: true, dsync: false });
    const bytes = new Uint8Array(INLINE_WRITE_MAX_BYTES * 3 + 7).map((_, i) => (i * 31 + 7) & 0xff);
    fault.cap = 10_007;
    const err = await new Promise<Error | null>((resolve) => f.writeAndSyncAsync!(bytes, 4096, resolve));
    f.close();
    expect(err).toBeNull();
    const got = readFileSync(join(dir, "log", "seg"));
    expect(statSync(join(dir, "log", "seg")).size).toBe(4096 + bytes.length);
    expect(Buffer.compare(got.subarray(4096), Buffer.from(bytes))).toBe(0);
    expect(fault.calls).toBeGreaterThanOrEqual(Math.ceil(bytes.length / 10_007));
    expect(tiles(4096, 4096 + bytes.length)).toBe(true);
  });

  it("a large batch whose write makes no progress fails with where it stopped", async () => {
    const d = nodeWalDirectory(join(dir, "log"));
    const f = d.open("seg", { create: true, dsync: false });
    fault.cap = 0;
    const err = await new Promise<Error | null>((resolve) => f.writeAndSyncAsync!(new Uint8Array(INLINE_WRITE_MAX_BYTES + 1), 100, resolve));
    f.close();
    expect(err?.message).toMatch(/a write at 100 wrote nothing/);
  });
});
