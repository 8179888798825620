// A real filesystem that can be made to fail, for the storage-fault tests (the governed log store's and the
// daemon's): a small tmpfs, filled to the last byte, then remounted read-only.
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** `null` when this process may mount a tmpfs (root on Linux), else why not. */
export function canMount(): string | null {
  if (process.platform !== "linux") return "not Linux";
  if (process.getuid?.() !== 0) return "not root";
  const probe = mkdtempSync(join(tmpdir(), "heddle-mount-probe-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { stdio: "ignore" });
    execFileSync("umount", [probe], { stdio: "ignore" });
    return null;
  } catch {
    return "mount is not permitted here";
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** Fills the filesystem holding `filler` to the last byte: 64 KiB writes until ENOSPC, then single bytes. */
export function fillDisk(filler: string): void {
  const fd = openSync(filler, "w");
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
  }
  try {
    for (;;) writeSync(fd, chunk, 0, 1);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
  }
  closeSync(fd);
}
