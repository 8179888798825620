import type { Timers } from "./timers.ts";

interface Pending {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

function earlier(a: Pending, b: Pending): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}

/**
 * Deterministic virtual time for simulations. `now()` starts at 0 and moves only through `advanceBy`,
 * which runs every due callback in order of (due time, creation sequence) — including callbacks
 * scheduled by callbacks while their due time falls inside the window. There is deliberately no
 * "run until idle": periodic timers re-arm forever.
 */
export class VirtualTimers implements Timers {
  #now = 0;
  #seq = 0;
  readonly #heap: Pending[] = [];

  now(): number {
    return this.#now;
  }

  set(fn: () => void, ms: number): unknown {
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const entry: Pending = { due: this.#now + delay, seq: this.#seq++, fn, cancelled: false };
    this.#push(entry);
    return entry;
  }

  clear(h: unknown): void {
    if (h !== null && typeof h === "object" && "cancelled" in h) (h as Pending).cancelled = true;
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
      if (top.cancelled) continue;
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
    let i = 0;
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
