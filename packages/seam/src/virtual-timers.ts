import type { Timers } from "./timers.ts";

interface Pending {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
  /** Taken off the heap (run or skipped). */
  done: boolean;
}

function earlier(a: Pending, b: Pending): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}

/**
 * Deterministic virtual time for simulations. `now()` starts at 0 and moves only through `advanceBy`,
 * which runs every due callback in order of (due time, creation sequence) — including callbacks
 * scheduled by callbacks while their due time falls inside the window. There is deliberately no
 * "run until idle": periodic timers re-arm forever. Cancelled callbacks leave the heap at once when they
 * make up more than half of it (a simulation of 1,000 nodes re-arming timers would otherwise keep every
 * cancelled callback, and what it closes over, alive until its due time).
 */
export class VirtualTimers implements Timers {
  #now = 0;
  #seq = 0;
  #heap: Pending[] = [];
  /** Cancelled entries still on the heap. */
  #cancelled = 0;

  now(): number {
    return this.#now;
  }

  set(fn: () => void, ms: number): unknown {
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const entry: Pending = { due: this.#now + delay, seq: this.#seq++, fn, cancelled: false, done: false };
    this.#push(entry);
    return entry;
  }

  clear(h: unknown): void {
    if (h === null || typeof h !== "object" || !("cancelled" in h)) return;
    const e = h as Pending;
    if (e.cancelled) return;
    e.cancelled = true;
    if (e.done) return;
    this.#cancelled++;
    if (this.#cancelled > 64 && this.#cancelled * 2 > this.#heap.length) this.#compact();
  }

  /** Drops every cancelled entry and rebuilds the heap (the pop order, by due time then sequence, is unchanged). */
  #compact(): void {
    this.#heap = this.#heap.filter((e) => !e.cancelled);
    this.#cancelled = 0;
    const h = this.#heap;
    for (let i = (h.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }

  /** Number of scheduled, not yet run or cancelled callbacks (diagnostic). */
  pending(): number {
    let n = 0;
    for (const e of this.#heap) if (!e.cancelled) n++;
    return n;
  }

  /** Advances virtual time by `ms`, running every callback that falls due on the way. */
  advanceBy(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advanceBy: ms must be >= 0, got ${ms}`);
    const target = this.#now + ms;
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || top.due > target) break;
      this.#pop();
      top.done = true;
      if (top.cancelled) {
        this.#cancelled--;
        continue;
      }
      this.#now = top.due;
      top.fn();
    }
    this.#now = target;
  }

  #push(e: Pending): void {
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!earlier(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    this.#siftDown(0);
  }

  #siftDown(start: number): void {
    const h = this.#heap;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && earlier(h[l]!, h[m]!)) m = l;
      if (r < h.length && earlier(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
