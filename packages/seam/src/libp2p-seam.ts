import { noise } from "@chainsafe/libp2p-noise";
import { yamux } from "@chainsafe/libp2p-yamux";
import type { Connection, PeerId as Libp2pPeerId, PrivateKey, Stream } from "@libp2p/interface";
import { peerIdFromString } from "@libp2p/peer-id";
import { tcp } from "@libp2p/tcp";
import { multiaddr } from "@multiformats/multiaddr";
import { createLibp2p, type Libp2p } from "libp2p";
import * as lp from "it-length-prefixed";
import { FrameDecoder } from "./frame-decoder.ts";
import { whenWritable } from "./drain.ts";
import { halfWindowUpdates, withCoalescedWrites } from "./coalesced-writes.ts";
import { noiseCrypto } from "./noise-crypto.ts";
import { peerIdOf } from "./peer-key.ts";
import { SeamSubscriberError, sortedIds, type PeerId, type Seam, type SendResult } from "./seam.ts";
import type { Timers } from "./timers.ts";
import { WatchCell, sameMembers, type Watch } from "./watch.ts";

/** The libp2p protocol that carries heddle frames. */
export const FRAMES_PROTOCOL = "/heddle/frames/1.0.0";

/** Defaults of the libp2p seam (node.md §3.4). */
export const LIBP2P_SEAM_DEFAULTS = {
  maxFrameBytes: 1_048_576,
  maxQueuedFrames: 1_024,
  redialMinMs: 1_000,
  redialMaxMs: 30_000,
} as const;

/** One known peer: its id string and the multiaddrs it listens on (may be empty if it dials us). */
export interface RosterEntry {
  id: PeerId;
  addrs: string[];
}

/** Options of `libp2pSeam` (node.md §3.4). */
export interface Libp2pSeamOptions {
  /** Ed25519 key; its peer id string is this peer's `ReplicaId`. */
  privateKey: PrivateKey;
  listen: string[];
  roster: RosterEntry[];
  allowOnlyRoster: boolean;
  timers: Timers;
  random: () => number;
  maxFrameBytes?: number;
  maxQueuedFrames?: number;
  redialMinMs?: number;
  redialMaxMs?: number;
}

/** Transport counters of a libp2p seam. */
export interface Libp2pSeamCounters {
  framesIn: number;
  framesOut: number;
  bytesOut: number;
  /** Inbound streams aborted because a length prefix exceeded `maxFrameBytes`. */
  oversize: number;
  /** Inbound streams aborted because the length prefix was malformed (unfinished after 8 bytes). */
  badPrefix: number;
  /** Inbound streams that ended in the middle of a frame (the cut frame is dropped). */
  cutFrames: number;
  /** Frames whose handler threw (a bug above the seam; the frame is lost, the stream goes on). */
  handlerErrors: number;
  /** Sends refused because the peer's queue was full. */
  backpressure: number;
  /** Queued frames lost because the stream's `send` threw (its write side closed under us); the rest go on a new stream. */
  sendErrors: number;
  /** Queued frames discarded because their peer disconnected (or the seam closed) before they were written. */
  discarded: number;
  /** Connections the gater refused. */
  refused: number;
  dials: number;
  dialFailures: number;
}

/** A `Seam` over libp2p (TCP + Noise + yamux), with a partition hook for tests. */
export interface Libp2pSeam extends Seam {
  /** Closes every connection to `peers` and makes the gater refuse them until `setBlocked([])`. */
  setBlocked(peers: PeerId[]): void;
  /** The multiaddrs this seam listens on, each ending in `/p2p/<self>`. */
  addrs(): string[];
  /** Adds or updates a roster entry at run time (e.g. a peer whose port became known). */
  addRosterEntry(entry: RosterEntry): void;
  counters(): Libp2pSeamCounters;
}

interface Outbound {
  readonly queue: Uint8Array[];
  stream: Stream | null;
  opening: boolean;
  waitingDrain: boolean;
}

interface Redial {
  delay: number;
  timer: unknown;
}

function validPositiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new RangeError(`${name} must be a positive integer, got ${v}`);
  return v;
}

/**
 * Starts a libp2p node and returns its `Seam` (node.md §3.4). The Noise-authenticated remote peer id is
 * the `from` of every frame; with `allowOnlyRoster` the connection gater refuses every peer outside
 * the roster in both directions. Each side writes frames on one outbound stream per connected peer
 * as `unsigned-varint length ‖ bytes`; a declared length above `maxFrameBytes` aborts that stream
 * before any body byte is buffered. Per-peer send queues are bounded by `maxQueuedFrames`; a full
 * queue drops the frame, returns `'backpressure'` and fires `onBackpressure`. Roster peers that are
 * not connected are redialed with exponential backoff (`redialMinMs` doubling to `redialMaxMs`,
 * ±20 % jitter from `random`); a connected one is only re-checked every `redialMaxMs` (its disconnect redials it
 * at once).
 */
export async function libp2pSeam(opts: Libp2pSeamOptions): Promise<Libp2pSeam> {
  const self = peerIdOf(opts.privateKey);
  const maxFrameBytes = validPositiveInt("maxFrameBytes", opts.maxFrameBytes ?? LIBP2P_SEAM_DEFAULTS.maxFrameBytes);
  const maxQueuedFrames = validPositiveInt("maxQueuedFrames", opts.maxQueuedFrames ?? LIBP2P_SEAM_DEFAULTS.maxQueuedFrames);
  const redialMinMs = validPositiveInt("redialMinMs", opts.redialMinMs ?? LIBP2P_SEAM_DEFAULTS.redialMinMs);
  const redialMaxMs = validPositiveInt("redialMaxMs", opts.redialMaxMs ?? LIBP2P_SEAM_DEFAULTS.redialMaxMs);
  if (redialMaxMs < redialMinMs) throw new RangeError("redialMaxMs must be >= redialMinMs");
  const { timers, random } = opts;

  const roster = new Map<PeerId, string[]>();
  for (const e of opts.roster) if (e.id !== self) roster.set(e.id, [...e.addrs]);
  const blocked = new Set<PeerId>();
  const counters: Libp2pSeamCounters = {
    framesIn: 0, framesOut: 0, bytesOut: 0, oversize: 0, badPrefix: 0, cutFrames: 0, handlerErrors: 0, backpressure: 0, sendErrors: 0,
    discarded: 0, refused: 0, dials: 0, dialFailures: 0,
  };

  const refuse = (peer: Libp2pPeerId): boolean => {
    const id = peer.toString();
    const deny = blocked.has(id) || (opts.allowOnlyRoster && !roster.has(id));
    if (deny) counters.refused++;
    return deny;
  };

  const node: Libp2p = await createLibp2p({
    privateKey: opts.privateKey,
    addresses: { listen: opts.listen },
    transports: [tcp()],
    connectionEncrypters: [withCoalescedWrites(noise({ crypto: noiseCrypto }))],
    streamMuxers: [yamux()],
    connectionMonitor: { enabled: false },
    connectionGater: {
      denyDialPeer: (peer) => refuse(peer),
      denyInboundEncryptedConnection: (peer) => refuse(peer),
      denyOutboundEncryptedConnection: (peer) => refuse(peer),
      denyInboundUpgradedConnection: (peer) => refuse(peer),
      denyOutboundUpgradedConnection: (peer) => refuse(peer),
    },
    start: false,
  });

  const peers = new WatchCell<ReadonlySet<PeerId>>(new Set(), sameMembers);
  const outbound = new Map<PeerId, Outbound>();
  const redials = new Map<PeerId, Redial>();
  let handler: ((from: PeerId, frame: Uint8Array) => void) | null = null;
  const backpressureFns = new Set<(peer: PeerId) => void>();
  let closed = false;

  const refreshPeers = () => {
    const now = new Set<PeerId>();
    for (const c of node.getConnections()) {
      const id = c.remotePeer.toString();
      if (c.status === "open" && !blocked.has(id) && id !== self) now.add(id);
    }
    for (const id of outbound.keys()) {
      if (!now.has(id)) {
        const o = outbound.get(id)!;
        counters.discarded += o.queue.length;
        o.queue.length = 0;
        o.stream = null;
        outbound.delete(id);
      }
    }
    peers.set(now);
  };

  // Our own length-prefix decoder (frame-decoder.ts): a declared length above `maxFrameBytes` aborts the
  // stream before any body byte is kept, a zero-length frame reaches the mux (which counts it), and a frame
  // cut by the end of its stream is counted. A handler that throws is a bug above the seam: counted, the
  // frame is lost, the stream goes on.
  const readStream = (stream: Stream, from: PeerId) => {
    halfWindowUpdates(stream);
    const decoder = new FrameDecoder(maxFrameBytes);
    let failed = false;
    const deliver = (frame: Uint8Array) => {
      counters.framesIn++;
      if (closed || handler === null) return;
      try {
        handler(from, frame);
      } catch {
        counters.handlerErrors++;
      }
    };
    stream.addEventListener("message", (evt) => {
      if (failed) return;
      const data = evt.data instanceof Uint8Array ? evt.data : evt.data.subarray();
      const failure = decoder.push(data, deliver);
      if (failure === null) return;
      failed = true;
      if (failure === "oversize") counters.oversize++;
      else counters.badPrefix++;
      stream.abort(new Error(`heddle frames: ${failure === "oversize" ? "oversize" : "malformed"} length prefix`));
    });
    // The remote's end of writing (or the stream's close, whichever comes first) ends the frames.
    let ended = false;
    const end = () => {
      if (ended || failed) return;
      ended = true;
      if (decoder.inFrame) counters.cutFrames++;
    };
    // We never write on an inbound stream: once the remote is done, close it, or every stream a peer opens
    // and closes would keep counting against the per-connection inbound stream limit.
    stream.addEventListener("remoteCloseWrite", () => {
      end();
      void stream.close().catch(() => stream.abort(new Error("heddle frames: close failed")));
    });
    stream.addEventListener("close", end);
  };

  await node.handle(
    FRAMES_PROTOCOL,
    (stream, connection: Connection) => {
      const from = connection.remotePeer.toString();
      if (refuse(connection.remotePeer)) {
        stream.abort(new Error("peer not admitted"));
        return;
      }
      readStream(stream, from);
    },
    { maxInboundStreams: 8, maxOutboundStreams: 8 },
  );

  const pump = (id: PeerId) => {
    const o = outbound.get(id);
    if (o === undefined || closed) return;
    if (o.stream !== null && o.stream.status !== "open") o.stream = null;
    if (o.stream === null) {
      if (o.opening || o.queue.length === 0) return;
      o.opening = true;
      node
        .dialProtocol(peerIdFromString(id), FRAMES_PROTOCOL)
        .then((stream) => {
          o.opening = false;
          if (closed || outbound.get(id) !== o) {
            stream.abort(new Error("seam closed"));
            return;
          }
          o.stream = stream;
          // The remote never writes on our outbound stream, but drain it so its buffers stay empty.
          stream.addEventListener("close", () => {
            if (o.stream === stream) o.stream = null;
            if (o.queue.length > 0) timers.set(() => pump(id), 50);
          });
          pump(id);
        })
        .catch(() => {
          o.opening = false;
          if (!closed && outbound.get(id) === o && o.queue.length > 0) timers.set(() => pump(id), 200);
        });
      return;
    }
    const stream = o.stream;
    while (o.queue.length > 0 && !o.waitingDrain) {
      if (stream.writableNeedsDrain) {
        o.waitingDrain = true;
        // not stream.onDrain(): after a stream's first drain it resolves at once every time (see drain.ts), and
        // this loop would spin on it without ever yielding to the event loop
        whenWritable(stream)
          .then(() => {
            o.waitingDrain = false;
            pump(id);
          })
          .catch(() => {
            o.waitingDrain = false;
            if (o.stream === stream) o.stream = null;
            pump(id);
          });
        return;
      }
      const frame = o.queue.shift()!;
      try {
        stream.send(frame);
        counters.framesOut++;
        counters.bytesOut += frame.length;
      } catch {
        // the stream's write side closed between its status check and this write: this frame is lost (counted);
        // the rest of the queue goes on a new stream now, not at the next send
        counters.sendErrors++;
        if (o.stream === stream) o.stream = null;
        pump(id);
        return;
      }
    }
  };

  // Our own redial loop, not libp2p's KEEP_ALIVE reconnect queue: that queue gives up after a fixed
  // number of attempts, backs off without a ceiling and draws no jitter from the injected `random`,
  // while a static roster must be redialed forever, capped at redialMaxMs, reproducibly (node.md §3.4).
  const scheduleRedial = (id: PeerId, delay: number) => {
    const r = redials.get(id) ?? { delay: redialMinMs, timer: null };
    redials.set(id, r);
    if (r.timer !== null) timers.clear(r.timer);
    const jittered = Math.round(delay * (0.8 + 0.4 * random()));
    r.timer = timers.set(() => {
      r.timer = null;
      void redial(id);
    }, jittered);
  };

  const redial = async (id: PeerId) => {
    if (closed) return;
    const r = redials.get(id);
    if (r === undefined) return;
    if (peers.get().has(id)) {
      // Connected: its `peer:disconnect` redials at once, so this only re-checks, at the slowest redial pace — not
      // every `redialMinMs` (a timer wake per connected peer each time: 40 wakes a second on each member of a
      // 5-member Raft bench at redialMinMs 100).
      scheduleRedial(id, redialMaxMs);
      return;
    }
    const addrs = roster.get(id) ?? [];
    if (blocked.has(id) || addrs.length === 0) {
      scheduleRedial(id, r.delay);
      return;
    }
    counters.dials++;
    try {
      await node.dial(addrs.map((a) => multiaddr(a.includes("/p2p/") ? a : `${a}/p2p/${id}`)));
      r.delay = redialMinMs;
    } catch {
      counters.dialFailures++;
      r.delay = Math.min(r.delay * 2, redialMaxMs);
    }
    if (!closed) scheduleRedial(id, r.delay);
  };

  node.addEventListener("peer:connect", () => refreshPeers());
  node.addEventListener("peer:disconnect", (evt) => {
    refreshPeers();
    const r = redials.get(evt.detail.toString());
    if (r !== undefined) {
      r.delay = redialMinMs;
      scheduleRedial(evt.detail.toString(), 0);
    }
  });
  node.addEventListener("connection:close", () => refreshPeers());

  await node.start();
  for (const id of roster.keys()) {
    redials.set(id, { delay: redialMinMs, timer: null });
    scheduleRedial(id, 0);
  }

  const seam: Libp2pSeam = {
    self,
    maxFrameBytes,
    peers: peers as Watch<ReadonlySet<PeerId>>,
    send(to: PeerId, frame: Uint8Array): SendResult {
      if (closed) return "closed";
      if (frame.length > maxFrameBytes) return "oversize";
      if (!peers.get().has(to)) return "not-connected";
      let o = outbound.get(to);
      if (o === undefined) {
        o = { queue: [], stream: null, opening: false, waitingDrain: false };
        outbound.set(to, o);
      }
      if (o.queue.length >= maxQueuedFrames) {
        counters.backpressure++;
        for (const fn of [...backpressureFns]) fn(to);
        return "backpressure";
      }
      o.queue.push(lp.encode.single(frame).subarray());
      pump(to);
      return "queued";
    },
    broadcast(frame: Uint8Array): void {
      for (const p of sortedIds(peers.get())) seam.send(p, frame);
    },
    onFrame(fn) {
      if (handler !== null) throw new SeamSubscriberError(`libp2p seam ${self}`);
      handler = fn;
      return () => {
        if (handler === fn) handler = null;
      };
    },
    onBackpressure(fn) {
      backpressureFns.add(fn);
      return () => {
        backpressureFns.delete(fn);
      };
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      handler = null;
      for (const r of redials.values()) if (r.timer !== null) timers.clear(r.timer);
      for (const o of outbound.values()) counters.discarded += o.queue.length;
      outbound.clear();
      peers.set(new Set());
      await node.stop();
    },
    setBlocked(list: PeerId[]): void {
      blocked.clear();
      for (const p of list) blocked.add(p);
      for (const c of node.getConnections()) {
        if (blocked.has(c.remotePeer.toString())) void c.close().catch(() => c.abort(new Error("blocked")));
      }
      refreshPeers();
    },
    addrs: () => node.getMultiaddrs().map((m) => m.toString()),
    addRosterEntry(entry: RosterEntry): void {
      if (entry.id === self) return;
      roster.set(entry.id, [...entry.addrs]);
      if (!redials.has(entry.id) && !closed) {
        redials.set(entry.id, { delay: redialMinMs, timer: null });
        scheduleRedial(entry.id, 0);
      }
    },
    counters: () => ({ ...counters }),
  };
  return seam;
}
