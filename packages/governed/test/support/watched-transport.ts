/** A `RaftTransport` that hands every frame it sends to `sent` (with its destination) before sending it on. */
import { decodeMessage } from "../../src/index.ts";
import type { Message, RaftTransport } from "../../src/index.ts";

export function watchedTransport(inner: RaftTransport, sent: (to: string, m: Message, frame: Uint8Array) => void): RaftTransport {
  return {
    self: inner.self,
    peers: inner.peers,
    get maxPayloadBytes() {
      return inner.maxPayloadBytes;
    },
    onFrame: (fn) => inner.onFrame(fn),
    send: (to, frame) => {
      const m = decodeMessage(frame);
      if (m !== null) sent(to, m, frame);
      inner.send(to, frame);
    },
  };
}
