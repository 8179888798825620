// What the dashboard and the metrics endpoint read of one running peer: its data plane, its roster and
// connections, liveness, and — governed — the control plane and the Raft member's watches. Both only
// read: nothing here is called on the spend path, and nothing here changes the peer.
import type { GroupId } from "@heddle/ledger";
import { muxSeam, type Libp2pSeam, type Watch } from "@heddle/node";
import type { ControlPlane } from "./control-plane.ts";
import type { DataPlane } from "./data-plane.ts";

/** The last liveness event seen for a peer (node.md §10). */
export interface LivenessNote {
  readonly kind: string;
  readonly at: number;
  readonly reason?: string;
}

/** The Raft member's state as watches (governed.md §4), plus the term the daemon sees it persist. */
export interface RaftWatches {
  readonly role: Watch<string>;
  readonly leader: Watch<string | null>;
  readonly commitIndex: Watch<number>;
  /** The current term: the last one the member made durable (R-P1), so followers see it too. */
  readonly term: Watch<number>;
  readonly membership: Watch<{ readonly voters: readonly string[]; readonly learners: readonly string[] }>;
  /** Raft frames this member refused so far, by reason (bad input from the network is counted, never thrown). */
  refusedFrames(): ReadonlyMap<string, number>;
  /** Errors thrown by subscribers of the member's cells, caught so the member went on (a Raft member has it; etcd's log does not). */
  subscriberErrors?(): number;
}

/**
 * What the transport under the node counts and no node counter sees: the libp2p seam's own counters (frames and
 * bytes it moved, inbound framing it refused, outbound frames it lost or refused, connections and dials) and its
 * channel mux's unheard inbound frames (`/metrics` exports them all).
 */
export interface TransportCounters {
  /** Frames read whole off inbound streams (every channel), before the mux and the protocols judge them. */
  readonly framesIn: number;
  /** Frames written to outbound streams. */
  readonly framesOut: number;
  /** Bytes written to outbound streams, length prefixes included. */
  readonly bytesOut: number;
  /** Inbound streams aborted because a length prefix exceeded the seam's `maxFrameBytes`. */
  readonly oversize: number;
  /** Inbound streams aborted because a length prefix was malformed (unfinished after 8 bytes). */
  readonly badPrefix: number;
  /** Inbound streams that ended inside a frame (the partial frame is dropped). */
  readonly cutFrames: number;
  /** Inbound frames whose handler (the mux, a protocol above it) threw: a bug; the frame is lost, the stream goes on. */
  readonly handlerErrors: number;
  /** Sends refused because the peer's queue held `maxQueuedFrames` unwritten frames. */
  readonly backpressure: number;
  /** Queued frames lost because the stream's write threw (its write side closed under the seam). */
  readonly sendErrors: number;
  /** Queued frames discarded because their peer disconnected, or the seam closed, before they were written. */
  readonly discarded: number;
  /** Connections (and streams) the seam's gater refused: a peer outside the roster, or one blocked. */
  readonly refused: number;
  /** Dials of roster peers that were not connected. */
  readonly dials: number;
  /** Those of them that failed. */
  readonly dialFailures: number;
  /** Inbound frames for a claimed channel that had no subscriber yet (dropped unread). */
  readonly unheard: number;
}

/**
 * The transport counters of `seam` and of its channel mux — the node's own: `muxSeam` keeps one mux per seam
 * object, so this reads the mux the node (and a governed peer's Raft channel) claimed their channels on.
 */
export function transportCountersOf(seam: Libp2pSeam): () => TransportCounters {
  const mux = muxSeam(seam);
  return () => {
    const s = seam.counters();
    return {
      framesIn: s.framesIn,
      framesOut: s.framesOut,
      bytesOut: s.bytesOut,
      oversize: s.oversize,
      badPrefix: s.badPrefix,
      cutFrames: s.cutFrames,
      handlerErrors: s.handlerErrors,
      backpressure: s.backpressure,
      sendErrors: s.sendErrors,
      discarded: s.discarded,
      refused: s.refused,
      dials: s.dials,
      dialFailures: s.dialFailures,
      unheard: mux.counters().unheard,
    };
  };
}

/** Everything the dashboard and `/metrics` read of one peer. */
export interface PeerReads {
  readonly data: DataPlane;
  readonly mode: "static" | "governed";
  readonly root: GroupId;
  /** Every peer of the cluster with its configured addresses (this one included). */
  readonly roster: readonly { readonly id: string; readonly addrs: readonly string[] }[];
  /** Peers connected now. */
  connected(): ReadonlySet<string>;
  /** The last liveness event per peer. */
  lastLiveness(): ReadonlyMap<string, LivenessNote>;
  /** The control plane (governed mode), or null. */
  readonly control: ControlPlane | null;
  /** The Raft member's watches (governed mode), or null. */
  readonly raft: RaftWatches | null;
  /** The transport's own counters; without it the labelled `heddle_seam_*` families have no samples and the rest stay 0. */
  transport?(): TransportCounters;
}

/** How a peer looks from here: this peer, up, cut off (unresponsive), lost, or not connected. */
export type PeerState = "self" | "up" | "cut off" | "lost" | "not connected";

/**
 * The state of `peer` as seen from `reads.data.self`: the node's `unreachable` set decides whether it is cut
 * off (node.md §10), its last liveness event whether the cut has lasted long enough to be `lost`; otherwise
 * the transport's connection says up or not connected.
 */
export function peerState(reads: PeerReads, peer: string, connected: ReadonlySet<string>, unreachable: ReadonlySet<string>): PeerState {
  if (peer === reads.data.self) return "self";
  if (unreachable.has(peer)) return reads.lastLiveness().get(peer)?.kind === "lost" ? "lost" : "cut off";
  return connected.has(peer) ? "up" : "not connected";
}
