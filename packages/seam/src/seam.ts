import type { Watch } from "./watch.ts";

/** A peer's identity string; equals the `ReplicaId` string of the same peer. */
export type PeerId = string;

/** Outcome of a `Seam.send`. Best effort: `'queued'` promises nothing about delivery. */
export type SendResult = "queued" | "not-connected" | "backpressure" | "oversize" | "closed";

/**
 * The one transport abstraction of heddle (node.md §3.1). `from` in `onFrame` is the authenticated
 * sender — the transport's identity, never a field inside the frame. Delivery is at most once per
 * send, unordered and possibly duplicated; every layer above tolerates all of that.
 * `send` never throws and never awaits. `onFrame` admits one subscriber; a second throws.
 */
export interface Seam {
  readonly self: PeerId;
  /** Largest frame this seam carries, in bytes. */
  readonly maxFrameBytes: number;
  /**
   * Current membership view; never contains `self`. Every change publishes a new set and a published set
   * is never modified afterwards, so subscribers keep it by reference instead of copying it.
   */
  readonly peers: Watch<ReadonlySet<PeerId>>;
  send(to: PeerId, frame: Uint8Array): SendResult;
  /** A `send` to every current member, in id order. */
  broadcast(frame: Uint8Array): void;
  onFrame(fn: (from: PeerId, frame: Uint8Array) => void): () => void;
  onBackpressure(fn: (peer: PeerId) => void): () => void;
  close(): Promise<void>;
}

/** Thrown by `onFrame` when a subscriber is already attached. */
export class SeamSubscriberError extends Error {
  constructor(what: string) {
    super(`${what}: onFrame admits one subscriber; unsubscribe the first before attaching another`);
    this.name = "SeamSubscriberError";
  }
}

/** Sorts ids by UTF-16 code units, the order every heddle output uses. */
export function sortedIds(ids: Iterable<PeerId>): PeerId[] {
  return [...ids].sort();
}
