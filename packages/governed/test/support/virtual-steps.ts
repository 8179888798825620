// Driving virtual timers a millisecond at a time, letting the event loop run between steps: what the Raft driver
// tests' harnesses share.
import type { VirtualTimers } from "@heddle/seam/testing";

/** One turn of the event loop (promises, I/O callbacks) between virtual milliseconds. */
export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Advances `timers` by `ms` virtual milliseconds, one at a time. */
export async function runFor(timers: VirtualTimers, ms: number): Promise<void> {
  for (let t = 0; t < ms; t++) {
    timers.advanceBy(1);
    await tick();
  }
}

/** Advances `timers` a millisecond at a time until `cond` holds; throws after `maxMs`. */
export async function runUntil(timers: VirtualTimers, cond: () => boolean, maxMs = 5000): Promise<void> {
  for (let t = 0; t < maxMs && !cond(); t++) {
    timers.advanceBy(1);
    await tick();
  }
  if (!cond()) throw new Error("condition not reached");
}
