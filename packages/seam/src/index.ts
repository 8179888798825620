/**
 * `@heddle/seam` — the one transport abstraction of heddle (node.md §2–3): the `Seam` interface, the
 * channel mux that shares one seam among protocols, a deterministic in-memory fabric with seeded
 * faults, a libp2p seam (TCP + Noise + yamux), injected timers, watches and persisted peer keys.
 * `@heddle/node` and the Raft of `@heddle/governed` both run on it. Simulation helpers
 * (`VirtualTimers`, a libp2p test harness) are on the `@heddle/seam/testing` subpath.
 */
export type { PeerId, SendResult, Seam } from "./seam.ts";
export { SeamSubscriberError, sortedIds } from "./seam.ts";
export type { SeamMux, SeamMuxCounters } from "./seam-mux.ts";
export { muxSeam, ChannelTag, ChannelClaimError } from "./seam-mux.ts";
export type { LinkFaults, CutMode, MemoryNetworkOptions, MemoryNetworkStats } from "./memory-network.ts";
export { MemoryNetwork, MEMORY_MAX_FRAME_BYTES } from "./memory-network.ts";
export type { Libp2pSeam, Libp2pSeamOptions, Libp2pSeamCounters, RosterEntry } from "./libp2p-seam.ts";
export { libp2pSeam, FRAMES_PROTOCOL, LIBP2P_SEAM_DEFAULTS } from "./libp2p-seam.ts";
export { loadOrCreatePeerKey, peerIdOf, generatePeerKey } from "./peer-key.ts";
export { ephemeralPortRange, freeListenPort, listenPortRange } from "./ports.ts";
export type { Timers } from "./timers.ts";
export { realTimers, seededRandom } from "./timers.ts";
export type { Watch, EventStream, SubscriberErrorHandler } from "./watch.ts";
export { WatchCell, EventChannel, sameMembers } from "./watch.ts";
