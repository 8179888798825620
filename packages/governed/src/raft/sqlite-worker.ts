/** The worker-thread host of a SQLite Raft log: one request at a time, answered in order. */
import { parentPort, workerData } from "node:worker_threads";
import { openSqliteRaftLog } from "./sqlite-storage.ts";
import type { SqliteRaftLog } from "./sqlite-storage.ts";

const { path } = workerData as { path: string };
let log: SqliteRaftLog | null = null;
let openError: Error | null = null;
try {
  log = openSqliteRaftLog(path);
} catch (e) {
  openError = e as Error;
}
parentPort!.on("message", (m: { id: number; op: keyof SqliteRaftLog; args: unknown[] }) => {
  try {
    if (log === null) throw openError ?? new Error("sqlite log not open");
    const fn = log[m.op] as (...a: unknown[]) => unknown;
    const value = fn.apply(log, m.args);
    parentPort!.postMessage({ id: m.id, ok: true, value });
    if (m.op === "close") log = null;
  } catch (e) {
    const err = e as Error;
    parentPort!.postMessage({ id: m.id, ok: false, error: { name: err.name, message: err.message } });
  }
});
