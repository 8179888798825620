/**
 * `walRaftStorage`: the `RaftStorage` of production members — the segmented log store of `wal-log.ts` in a
 * directory, hosted on the caller's thread or in a worker thread (governed.md §3.11: Raft storage I/O off the
 * data-plane thread).
 */
import { Worker } from "node:worker_threads";
import { RaftRestoreError } from "./errors.ts";
import type { RaftStorage } from "./storage.ts";
import type { PersistedState } from "./types.ts";
import { nodeWalDirectory } from "./wal-files.ts";
import { openSegmentedLog } from "./wal-log.ts";
import type { SegmentedLogOptions } from "./wal-log.ts";

/** Options of `walRaftStorage`. */
export interface WalRaftStorageOptions extends SegmentedLogOptions {
  /**
   * Where the files are written and synced: `"io-pool"` (default) runs the store on the caller's thread with each
   * batch's write and data sync on libuv's I/O pool, so the event loop keeps running (sending frames, reading
   * sockets) meanwhile; `"worker"` hosts the whole store in a worker thread (the same, at the price of a message
   * round trip and a copy of the entries per call); `"caller"` does everything synchronously, blocking the event
   * loop for each sync (fine for tools and tests). See the README for the measurements behind the default.
   */
  readonly thread?: "caller" | "io-pool" | "worker";
}

/**
 * Opens (creating if needed) the Raft log store in directory `path`. `load()` recovers it: a torn tail left by a
 * crash is dropped, damage anywhere else rejects with `RaftRestoreError` and the member refuses to start.
 */
export function walRaftStorage(path: string, options: WalRaftStorageOptions = {}): RaftStorage {
  const { thread = "io-pool", ...logOptions } = options;
  if (thread === "worker") return workerStorage(path, logOptions);
  let log: ReturnType<typeof openSegmentedLog> | null = null;
  const open = (): ReturnType<typeof openSegmentedLog> => (log ??= openSegmentedLog(nodeWalDirectory(path), logOptions));
  if (thread === "io-pool") {
    return {
      load: async () => open().load(),
      saveTermAndVote: (t, v) => open().saveTermAndVoteAsync(t, v),
      append: (es) => open().appendAsync(es),
      truncateFrom: (i) => open().truncateFromAsync(i),
      saveSnapshot: (s) => open().saveSnapshotAsync(s),
      discardThrough: async (i) => open().discardThrough(i),
      close: async () => log?.close(),
    };
  }
  return {
    load: async () => open().load(),
    saveTermAndVote: async (t, v) => open().saveTermAndVote(t, v),
    append: async (es) => open().append(es),
    truncateFrom: async (i) => open().truncateFrom(i),
    saveSnapshot: async (s) => open().saveSnapshot(s),
    discardThrough: async (i) => open().discardThrough(i),
    close: async () => log?.close(),
  };
}

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: { name: string; message: string; code?: string };
}

/** The worker's error as the caller's: `RaftRestoreError` by name, any errno `code` kept. */
function errorOf(e: Reply["error"]): Error {
  if (e?.name === "RaftRestoreError") return new RaftRestoreError(e.message);
  const err = new Error(e?.message ?? "raft log worker failed") as NodeJS.ErrnoException;
  if (e?.code !== undefined) err.code = e.code;
  return err;
}

function workerStorage(path: string, options: SegmentedLogOptions): RaftStorage {
  const worker = new Worker(new URL("./wal-worker.ts", import.meta.url), { workerData: { path, options } });
  worker.unref();
  let next = 1;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let broken: Error | null = null;
  const failAll = (e: Error): void => {
    broken = e;
    for (const w of waiting.values()) w.reject(e);
    waiting.clear();
  };
  worker.on("message", (m: Reply) => {
    const w = waiting.get(m.id);
    if (w === undefined) return;
    waiting.delete(m.id);
    if (waiting.size === 0) worker.unref();
    if (m.ok) w.resolve(m.value);
    else w.reject(errorOf(m.error));
  });
  worker.on("error", (e) => failAll(e));
  worker.on("exit", () => failAll(new Error("raft log worker exited")));
  const call = <T>(op: string, args: unknown[]): Promise<T> => {
    if (broken !== null) return Promise.reject(broken);
    const id = next++;
    worker.ref();
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: (v) => resolve(v as T), reject });
      worker.postMessage({ id, op, args });
    });
  };
  return {
    load: () => call<PersistedState>("load", []),
    saveTermAndVote: (t, v) => call("saveTermAndVote", [t, v]),
    append: (es) => call("append", [es]),
    truncateFrom: (i) => call("truncateFrom", [i]),
    saveSnapshot: (s) => call("saveSnapshot", [s]),
    discardThrough: (i) => call("discardThrough", [i]),
    close: async () => {
      if (broken === null) await call("close", []).catch(() => {});
      await worker.terminate();
    },
  };
}
