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
 * Where a {@link WatchCell} or {@link EventChannel} sends what a subscriber throws. With one, every
 * subscriber is still called and the owner's code after `set`/`emit` still runs (a timer re-arms, a
 * sweep finishes): an owner whose stream is fed from timers or the network path passes one.
 */
export type SubscriberErrorHandler = (error: unknown) => void;

/** Calls each of `subscribers` with `value`; with `onError`, a throw goes to it and the rest are still called. */
function notify<T>(subscribers: ReadonlySet<(v: T) => void>, value: T, onError: SubscriberErrorHandler | undefined): void {
  if (onError === undefined) {
    for (const fn of [...subscribers]) fn(value);
    return;
  }
  for (const fn of [...subscribers]) {
    try {
      fn(value);
    } catch (error) {
      onError(error);
    }
  }
}

/**
 * A settable `Watch`: `set` stores the value and notifies subscribers synchronously, in subscription
 * order, only when `same` says the value changed. A throwing subscriber is a bug in the subscriber: it
 * goes to `onSubscriberError` if one was given (the other subscribers are still told), else propagates.
 */
export class WatchCell<T> implements Watch<T> {
  #value: T;
  readonly #subscribers = new Set<(v: T) => void>();
  readonly #same: (a: T, b: T) => boolean;
  readonly #onError: SubscriberErrorHandler | undefined;

  constructor(initial: T, same: (a: T, b: T) => boolean = Object.is, onSubscriberError?: SubscriberErrorHandler) {
    this.#value = initial;
    this.#same = same;
    this.#onError = onSubscriberError;
  }

  get(): T {
    return this.#value;
  }

  set(value: T): void {
    if (this.#same(this.#value, value)) return;
    this.#value = value;
    notify(this.#subscribers, value, this.#onError);
  }

  subscribe(fn: (v: T) => void): () => void {
    this.#subscribers.add(fn);
    return () => {
      this.#subscribers.delete(fn);
    };
  }
}

/**
 * An `EventStream` its owner can emit into; emission is synchronous, in subscription order. A throwing
 * subscriber goes to `onSubscriberError` if one was given (the other subscribers still get the event),
 * else propagates out of `emit`.
 */
export class EventChannel<T> implements EventStream<T> {
  readonly #subscribers = new Set<(e: T) => void>();
  readonly #onError: SubscriberErrorHandler | undefined;

  constructor(onSubscriberError?: SubscriberErrorHandler) {
    this.#onError = onSubscriberError;
  }

  /** True iff someone subscribed (an owner may skip building events nobody hears). */
  get listening(): boolean {
    return this.#subscribers.size > 0;
  }

  emit(event: T): void {
    notify(this.#subscribers, event, this.#onError);
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
