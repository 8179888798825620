/**
 * `@heddle/seam/testing` — helpers for simulations and tests, kept out of the production surface:
 * deterministic virtual time and a harness that starts libp2p seams on 127.0.0.1.
 */
export { VirtualTimers } from "./virtual-timers.ts";
export { startLibp2pSeams, startRawFramePeer, peerKeyFromSeed, sleep } from "./libp2p-harness.ts";
export type { RawFramePeer, RawFrameStream } from "./libp2p-harness.ts";
export { FrameDecoder, MAX_PREFIX_BYTES } from "./frame-decoder.ts";
export type { FrameStreamFailure } from "./frame-decoder.ts";
export { collectionWrites } from "./collection-writes.ts";
