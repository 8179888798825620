import { SeamSubscriberError, sortedIds, type PeerId, type Seam, type SendResult } from "./seam.ts";
import type { Watch } from "./watch.ts";

/** Channel tags assigned by node.md §3.2. */
export const ChannelTag = {
  ledger: 1,
  demand: 2,
  liveness: 3,
  raft: 4,
  claims: 5,
} as const;

/** Counters kept by a mux for frames it could not route. */
export interface SeamMuxCounters {
  /** Frames whose tag no channel has claimed (or empty frames, which carry no tag). */
  unknownChannel: number;
  /** Frames for a claimed channel that had no `onFrame` subscriber yet (nothing listened; dropped). */
  unheard: number;
}

/**
 * Shares one `Seam` among several protocols (node.md §3.2). Each channel is itself a `Seam` whose
 * frames are the parent's frames prefixed by one tag byte; `onActivity` sees the sender of every
 * inbound frame on any channel (liveness uses it).
 */
export interface SeamMux {
  /** Claims `tag` (1…254) and returns its channel; a tag can be claimed once until the channel closes. */
  channel(tag: number): Seam;
  onActivity(fn: (from: PeerId) => void): () => void;
  /** Reports every frame dropped because its tag is unclaimed (the node counts it as `unknown-channel`). */
  onUnknownChannel(fn: (from: PeerId, tag: number | null) => void): () => void;
  counters(): SeamMuxCounters;
}

/** Thrown when a tag is claimed twice, or is outside 1…254. */
export class ChannelClaimError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChannelClaimError";
  }
}

const muxes = new WeakMap<Seam, SeamMux>();

/** Returns the one `SeamMux` of `seam` (cached per seam object); it subscribes to `seam.onFrame` once. */
export function muxSeam(seam: Seam): SeamMux {
  let mux = muxes.get(seam);
  if (mux === undefined) {
    mux = createMux(seam);
    muxes.set(seam, mux);
  }
  return mux;
}

interface ChannelSlot {
  handler: ((from: PeerId, frame: Uint8Array) => void) | null;
}

function createMux(seam: Seam): SeamMux {
  const slots = new Map<number, ChannelSlot>();
  const activity = new Set<(from: PeerId) => void>();
  const unknown = new Set<(from: PeerId, tag: number | null) => void>();
  const counters: SeamMuxCounters = { unknownChannel: 0, unheard: 0 };

  seam.onFrame((from, frame) => {
    // Set iteration tolerates a listener unsubscribing itself; no per-frame copy of the listeners.
    for (const fn of activity) fn(from);
    const tag = frame[0];
    const slot = tag === undefined ? undefined : slots.get(tag);
    if (slot === undefined) {
      counters.unknownChannel++;
      for (const fn of [...unknown]) fn(from, tag ?? null);
      return;
    }
    // A claimed channel without a subscriber yet drops the frame (nothing listens), counted like any other drop.
    if (slot.handler === null) counters.unheard++;
    else slot.handler(from, frame.subarray(1));
  });

  return {
    channel(tag: number): Seam {
      if (!Number.isInteger(tag) || tag < 1 || tag > 254) throw new ChannelClaimError(`channel tag ${tag} is outside 1…254`);
      if (slots.has(tag)) throw new ChannelClaimError(`channel tag ${tag} is already claimed`);
      const slot: ChannelSlot = { handler: null };
      slots.set(tag, slot);
      return channelSeam(seam, tag, slot, () => {
        if (slots.get(tag) === slot) slots.delete(tag);
      });
    },
    onActivity(fn) {
      activity.add(fn);
      return () => {
        activity.delete(fn);
      };
    },
    onUnknownChannel(fn) {
      unknown.add(fn);
      return () => {
        unknown.delete(fn);
      };
    },
    counters: () => ({ ...counters }),
  };
}

function channelSeam(parent: Seam, tag: number, slot: ChannelSlot, release: () => void): Seam {
  let closed = false;
  const wrap = (frame: Uint8Array): Uint8Array => {
    const out = new Uint8Array(frame.length + 1);
    out[0] = tag;
    out.set(frame, 1);
    return out;
  };
  const maxFrameBytes = parent.maxFrameBytes - 1;
  const peers: Watch<ReadonlySet<PeerId>> = parent.peers;
  return {
    self: parent.self,
    maxFrameBytes,
    peers,
    send(to: PeerId, frame: Uint8Array): SendResult {
      if (closed) return "closed";
      if (frame.length > maxFrameBytes) return "oversize";
      return parent.send(to, wrap(frame));
    },
    broadcast(frame: Uint8Array): void {
      if (closed || frame.length > maxFrameBytes) return;
      const wrapped = wrap(frame);
      for (const p of sortedIds(parent.peers.get())) parent.send(p, wrapped);
    },
    onFrame(fn) {
      if (slot.handler !== null) throw new SeamSubscriberError(`channel ${tag}`);
      slot.handler = fn;
      return () => {
        if (slot.handler === fn) slot.handler = null;
      };
    },
    onBackpressure: (fn) => parent.onBackpressure(fn),
    async close(): Promise<void> {
      closed = true;
      slot.handler = null;
      release();
    },
  };
}
