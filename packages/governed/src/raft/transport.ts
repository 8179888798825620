/** The Raft transport contract (governed.md §4.1) and its implementation over a node `Seam` (§4.12). */
import { ChannelTag, muxSeam } from "@heddle/seam";
import type { Seam, Watch } from "@heddle/seam";
import type { NodeId } from "./types.ts";

/** Best-effort frame delivery between Raft members. `send` never throws into the engine. */
export interface RaftTransport {
  readonly self: NodeId;
  readonly peers: Watch<ReadonlySet<NodeId>>;
  send(to: NodeId, frame: Uint8Array): void;
  onFrame(fn: (from: NodeId, frame: Uint8Array) => void): () => void;
  /** Largest frame; re-read on every use (it can shrink). Null = no limit known. */
  readonly maxPayloadBytes: number | null;
}

/** Counters of frames a seam transport could not send (R-X2). */
export interface SeamTransportCounters {
  notConnected: number;
  oversize: number;
  backpressure: number;
}

/**
 * Adapts a `Seam` (already a dedicated channel) to `RaftTransport`: drops silently when the peer is not
 * connected, counts and warns once per kind when a frame is over budget, never throws (R-X2). The sender identity
 * is the seam's (R-X3).
 */
export function seamRaftTransport(seam: Seam, warn: (msg: string) => void = () => {}): RaftTransport & { readonly counters: SeamTransportCounters } {
  const counters: SeamTransportCounters = { notConnected: 0, oversize: 0, backpressure: 0 };
  let warnedOversize = false;
  return {
    counters,
    self: seam.self,
    peers: seam.peers,
    get maxPayloadBytes() {
      return seam.maxFrameBytes;
    },
    send(to, frame) {
      let r: string;
      try {
        r = seam.send(to, frame);
      } catch {
        r = "closed";
      }
      if (r === "not-connected" || r === "closed") counters.notConnected++;
      else if (r === "backpressure") counters.backpressure++;
      else if (r === "oversize") {
        counters.oversize++;
        if (!warnedOversize) {
          warnedOversize = true;
          warn(`raft: dropped a ${frame.length}-byte frame to ${to}: over the seam budget of ${seam.maxFrameBytes}`);
        }
      }
    },
    onFrame(fn) {
      return seam.onFrame((from, frame) => {
        if (typeof from !== "string" || from.length === 0) return; // R-X3: no sender, no frame
        fn(from, frame);
      });
    },
  };
}

/** The Raft transport on channel 4 of a shared seam (node.md §3.2, R-X1). */
export function raftChannelTransport(seam: Seam, warn?: (msg: string) => void): RaftTransport & { readonly counters: SeamTransportCounters } {
  return seamRaftTransport(muxSeam(seam).channel(ChannelTag.raft), warn);
}
