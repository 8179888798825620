/**
 * The segmented Raft log store (`walRaftStorage`) on a real file system that fills up or turns read-only (issue 17's
 * storage faults, for the store the daemon runs on): a small tmpfs, Linux as root with mount rights only (skipped
 * elsewhere, saying why). Pass: a write the disk refuses rejects with the system's error (ENOSPC / EROFS) and
 * never resolves; every call acknowledged before it is recovered by the next open; no temporary file the failure
 * left behind survives that open; and once the disk is writable again the store carries on.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { walRaftStorage } from "../src/index.ts";
import { canMount, fillDisk } from "./support/tmpfs.ts";
import type { LogEntry, RaftStorage, StoredSnapshot } from "../src/index.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});


const noMount = canMount();
if (noMount !== null) console.log(`Raft log store on a full / read-only filesystem skipped: ${noMount}`);

const SEGMENT = 64 * 1024;

function entry(index: number, term: number): LogEntry {
  const command = new Uint8Array(200).map((_, k) => (index * 7 + k) & 0xff);
  return { index, term, kind: "app", key: { client: "c", seq: index }, command, stampedAt: index };
}


/** Waits (up to 10 s) until no temporary file is in `dir`: a spare segment being filled is one until it fails. */
async function noTemporaryFiles(dir: string): Promise<void> {
  const tmp = () => readdirSync(dir).filter((n) => n.endsWith(".tmp"));
  for (let i = 0; i < 200 && tmp().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  expect(tmp()).toEqual([]);
}

/** Appends one entry at a time until the store refuses one; returns the last acknowledged index. */
async function appendUntilRefused(s: RaftStorage, from: number, term: number, max: number): Promise<{ last: number; error: Error }> {
  for (let i = from; i < from + max; i++) {
    try {
      await s.append([entry(i, term)]);
    } catch (e) {
      return { last: i - 1, error: e as Error };
    }
  }
  throw new Error(`the store took ${max} appends on a full disk`);
}

describe.skipIf(noMount !== null)("Raft log store on a real filesystem that fills up, then turns read-only", () => {
  for (const thread of ["io-pool", "worker", "caller"] as const) {
    it(`thread ${thread}: refuses with ENOSPC / EROFS, keeps every acknowledged call, carries on once writable`, async () => {
      const mnt = mkdtempSync(join(tmpdir(), "heddle-wal-tmpfs-"));
      dirs.push(mnt);
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt]);
      try {
        const path = join(mnt, "raft-wal");
        const filler = join(mnt, "filler");
        let s = walRaftStorage(path, { thread, segmentBytes: SEGMENT });
        await s.load();
        await s.saveTermAndVote(3, "b");
        for (let i = 1; i <= 50; i++) await s.append([entry(i, 3)]);
        const snap: StoredSnapshot = { lastIndex: 20, lastTerm: 3, config: { voters: ["a", "b", "c"], learners: [] }, state: new Uint8Array(300).fill(9) };
        await s.saveSnapshot(snap);
        await s.discardThrough(20);
        fillDisk(filler);
        // Appends go into space the segment already holds (preallocated), so a full disk refuses only the write
        // that needs new space: the next segment, or a snapshot.
        const big: StoredSnapshot = { ...snap, lastIndex: 40, state: new Uint8Array(200_000).fill(7) };
        await expect(s.saveSnapshot(big)).rejects.toMatchObject({ code: "ENOSPC" });
        const { last, error } = await appendUntilRefused(s, 51, 3, 10 * SEGMENT);
        expect(last).toBeGreaterThan(51); // the preallocated rest of the segment took entries
        expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
        // After a refused write the store takes no more (its tail is unknown to it until reopened).
        await expect(s.append([entry(last + 1, 3)])).rejects.toThrow();
        // Regression: the failed snapshot and the failed spare segment gave their space back (a partial spare was
        // left holding the disk full, and refilled on every batch).
        await noTemporaryFiles(path);
        await s.close();
        // Reopen on the full disk: every acknowledged call is there, the snapshot that failed is not, and the
        // temporary files the failures left are gone.
        s = walRaftStorage(path, { thread, segmentBytes: SEGMENT });
        const st = await s.load();
        expect(st.term).toBe(3);
        expect(st.votedFor).toBe("b");
        expect(st.snapshot?.lastIndex).toBe(20);
        expect(st.entries[0]?.index).toBe(21);
        expect(st.entries.at(-1)?.index).toBe(last);
        expect(st.entries.every((e, k) => e.index === 21 + k && e.command[0] === ((e.index * 7) & 0xff))).toBe(true);
        await noTemporaryFiles(path);
        await s.close();
        // Read-only: opening for writing is refused with EROFS, saying so.
        unlinkSync(filler);
        execFileSync("mount", ["-o", "remount,ro", mnt]);
        const ro = walRaftStorage(path, { thread, segmentBytes: SEGMENT });
        await expect(ro.load()).rejects.toThrow(/EROFS|read-only/);
        await ro.close();
        // Writable again: the store carries on from what it acknowledged, rolling new segments.
        execFileSync("mount", ["-o", "remount,rw", mnt]);
        s = walRaftStorage(path, { thread, segmentBytes: SEGMENT });
        const again = await s.load();
        expect(again.entries.at(-1)?.index).toBe(last);
        for (let i = last + 1; i <= last + 600; i++) await s.append([entry(i, 4)]);
        await s.saveSnapshot(big);
        await s.close();
        s = walRaftStorage(path, { thread, segmentBytes: SEGMENT });
        const end = await s.load();
        expect(end.snapshot?.lastIndex).toBe(40);
        expect(end.entries.at(-1)?.index).toBe(last + 600);
        await s.close();
      } finally {
        execFileSync("umount", ["-l", mnt]);
      }
    }, 60_000);
  }
});
