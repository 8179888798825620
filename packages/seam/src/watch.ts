/** A current value that can be read and observed (same shape as governed.md's `Watch`). */
export interface Watch<T> {
  get(): T;
  subscribe(fn: (v: T) => void): () => void;
}

/** A stream of discrete events; subscribers see only events emitted after they subscribed. */
export interface EventStream<T> {
  subscribe(fn: (e: T) => void): () => void;
}

/**
 * A settable `Watch`: `set` stores the value and notifies subscribers synchronously, in subscription
 * order, only when `same` says the value changed. A throwing subscriber is a bug in the subscriber and
 * propagates.
 */
export class WatchCell<T> implements Watch<T> {
  #value: T;
  readonly #subscribers = new Set<(v: T) => void>();
  readonly #same: (a: T, b: T) => boolean;

  constructor(initial: T, same: (a: T, b: T) => boolean = Object.is) {
    this.#value = initial;
    this.#same = same;
  }

  get(): T {
    return this.#value;
  }

  set(value: T): void {
    if (this.#same(this.#value, value)) return;
    this.#value = value;
    for (const fn of [...this.#subscribers]) fn(value);
  }

  subscribe(fn: (v: T) => void): () => void {
    this.#subscribers.add(fn);
    return () => {
      this.#subscribers.delete(fn);
    };
  }
}

/** An `EventStream` its owner can emit into; emission is synchronous, in subscription order. */
export class EventChannel<T> implements EventStream<T> {
  readonly #subscribers = new Set<(e: T) => void>();

  /** True iff someone subscribed (an owner may skip building events nobody hears). */
  get listening(): boolean {
    return this.#subscribers.size > 0;
  }

  emit(event: T): void {
    for (const fn of [...this.#subscribers]) fn(event);
  }

  subscribe(fn: (e: T) => void): () => void {
    this.#subscribers.add(fn);
    return () => {
      this.#subscribers.delete(fn);
    };
  }
}

/** Set equality for membership views. */
export function sameMembers<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
