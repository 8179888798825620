/** The worker-thread host of the Raft log store: one request at a time, answered in order. */
import { parentPort, workerData } from "node:worker_threads";
import { nodeWalDirectory } from "./wal-files.ts";
import { openSegmentedLog } from "./wal-log.ts";
import type { SegmentedLog, SegmentedLogOptions } from "./wal-log.ts";

const { path, options } = workerData as { path: string; options: SegmentedLogOptions };
type Op = "load" | "saveTermAndVote" | "append" | "truncateFrom" | "saveSnapshot" | "discardThrough" | "close";
let log: SegmentedLog | null = null;
parentPort!.on("message", (m: { id: number; op: Op; args: unknown[] }) => {
  try {
    // opened on the first request, so a corrupt store rejects `load` (and the member refuses to start)
    log ??= openSegmentedLog(nodeWalDirectory(path), options);
    const fn = log[m.op] as (...a: unknown[]) => unknown;
    const value = fn.apply(log, m.args);
    parentPort!.postMessage({ id: m.id, ok: true, value });
    if (m.op === "close") parentPort!.close();
  } catch (e) {
    const err = e as Error;
    // the errno code (ENOSPC, EROFS, EIO…) travels too: callers tell a full or read-only disk by it
    const code = (err as NodeJS.ErrnoException).code;
    parentPort!.postMessage({ id: m.id, ok: false, error: { name: err.name, message: err.message, ...(code !== undefined ? { code } : {}) } });
  }
});
