import { noise } from "@chainsafe/libp2p-noise";
import { yamux } from "@chainsafe/libp2p-yamux";
import type { PrivateKey } from "@libp2p/interface";
import { generateKeyPairFromSeed } from "@libp2p/crypto/keys";
import { tcp } from "@libp2p/tcp";
import { multiaddr } from "@multiformats/multiaddr";
import { createLibp2p } from "libp2p";
import { FRAMES_PROTOCOL, generatePeerKey, libp2pSeam, peerIdOf, realTimers, seededRandom, type Libp2pSeam } from "./index.ts";
import { whenWritable } from "./drain.ts";

/** Real-time pause. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** An Ed25519 key derived from `seed` (tests that must replay byte for byte: the peer id is in frames). */
export async function peerKeyFromSeed(seed: number): Promise<PrivateKey> {
  const bytes = new Uint8Array(32);
  new DataView(bytes.buffer).setFloat64(0, seed);
  bytes[31] = 0x5e;
  return generateKeyPairFromSeed("Ed25519", bytes);
}

/** Starts `n` libp2p seams on 127.0.0.1, each dialing the ones started before it. */
export async function startLibp2pSeams(
  n: number,
  opts: { maxFrameBytes?: (i: number) => number; keys?: PrivateKey[]; allowOnlyRoster?: boolean; maxQueuedFrames?: number } = {},
): Promise<{ seams: Libp2pSeam[]; keys: PrivateKey[] }> {
  const keys = opts.keys ?? (await Promise.all(Array.from({ length: n }, () => generatePeerKey())));
  const ids = keys.map(peerIdOf);
  const seams: Libp2pSeam[] = [];
  for (let i = 0; i < n; i++) {
    const roster = ids.map((id, j) => ({ id, addrs: j < i ? seams[j]!.addrs() : [] }));
    seams.push(
      await libp2pSeam({
        privateKey: keys[i]!,
        listen: ["/ip4/127.0.0.1/tcp/0"],
        roster,
        allowOnlyRoster: opts.allowOnlyRoster ?? true,
        timers: realTimers,
        random: seededRandom(1000 + i),
        redialMinMs: 100,
        redialMaxMs: 1000,
        ...(opts.maxFrameBytes ? { maxFrameBytes: opts.maxFrameBytes(i) } : {}),
        ...(opts.maxQueuedFrames ? { maxQueuedFrames: opts.maxQueuedFrames } : {}),
      }),
    );
  }
  // Every seam learns every address, so any of them can redial any other after a restart.
  for (const s of seams) for (const o of seams) if (o !== s) s.addRosterEntry({ id: o.self, addrs: o.addrs() });
  return { seams, keys };
}

/** A raw writer on one `/heddle/frames/1.0.0` stream: whatever bytes it is given, length prefixes included. */
export interface RawFrameStream {
  /** Writes `bytes` as they are, waiting while the stream's buffer is full. */
  write(bytes: Uint8Array): Promise<void>;
  /** Closes the stream for writing (the remote sees its end). */
  close(): Promise<void>;
}

/** A libp2p peer that speaks the frames protocol byte by byte, for hostile-peer tests; inbound frames are drained and counted. */
export interface RawFramePeer {
  readonly self: string;
  /** Dials `addr` (a multiaddr ending in `/p2p/<id>`) and opens a frames stream to that peer. */
  open(addr: string): Promise<RawFrameStream>;
  /** Bytes received on inbound frames streams (what the remote sent us). */
  bytesIn(): number;
  stop(): Promise<void>;
}

/** Starts a {@link RawFramePeer} on 127.0.0.1 (port 0) with `privateKey` (generated if absent). */
export async function startRawFramePeer(privateKey?: PrivateKey): Promise<RawFramePeer> {
  const key = privateKey ?? (await generatePeerKey());
  const node = await createLibp2p({
    privateKey: key,
    addresses: { listen: ["/ip4/127.0.0.1/tcp/0"] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionMonitor: { enabled: false },
  });
  let bytesIn = 0;
  await node.handle(FRAMES_PROTOCOL, (stream) => {
    stream.addEventListener("message", (evt) => {
      bytesIn += evt.data.byteLength;
    });
  }, { maxInboundStreams: 64, maxOutboundStreams: 64 });
  return {
    self: peerIdOf(key),
    async open(addr: string): Promise<RawFrameStream> {
      const stream = await node.dialProtocol(multiaddr(addr), FRAMES_PROTOCOL);
      return {
        async write(bytes: Uint8Array): Promise<void> {
          stream.send(bytes);
          await whenWritable(stream); // not stream.onDrain(): see drain.ts
        },
        async close(): Promise<void> {
          await stream.close();
        },
      };
    },
    bytesIn: () => bytesIn,
    async stop(): Promise<void> {
      await node.stop();
    },
  };
}
