// Waiting for a libp2p stream to take more bytes, without `stream.onDrain()`.
//
// In @libp2p/utils 7.4 (the stream class under libp2p 3.3's yamux streams) `onDrain()` creates one promise the
// first time a stream needs a drain, resolves it on the first `drain` event and never replaces it: every later
// `onDrain()` while `writableNeedsDrain` is true again hands back that promise, already resolved. A sender that
// loops "needs drain → await onDrain() → send" then spins on resolved promises — microtasks only, so the event
// loop never turns again: no timers, no sockets, no HTTP API (issue 17: a voter stopped answering for good when
// a peer it was streaming to was SIGKILLed during the crash trials). This waits for the event itself.
import type { Stream } from "@libp2p/interface";

/** What {@link whenWritable} needs of a stream (a libp2p `Stream`, or a test double). */
export type DrainableStream = Pick<Stream, "writableNeedsDrain" | "status" | "addEventListener" | "removeEventListener">;

/** Why {@link whenWritable} gave up: the stream closed (or was aborted or reset) before it drained. */
export class StreamGoneError extends Error {
  constructor(status: string) {
    super(`the stream is ${status}; it will not drain`);
    this.name = "StreamGoneError";
  }
}

/**
 * Resolves when `stream` may take more bytes: at once when it does not need a drain, else at its next `drain`
 * event — never on a promise settled by an earlier drain. Rejects with {@link StreamGoneError} if the stream is
 * not open, or closes before it drains. Each wait adds two listeners and removes both when it settles.
 */
export function whenWritable(stream: DrainableStream): Promise<void> {
  if (stream.status !== "open") return Promise.reject(new StreamGoneError(stream.status));
  if (!stream.writableNeedsDrain) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      stream.removeEventListener("drain", onDrain);
      stream.removeEventListener("close", onClose);
    };
    const onDrain = () => {
      done();
      resolve();
    };
    const onClose = () => {
      done();
      reject(new StreamGoneError(stream.status));
    };
    stream.addEventListener("drain", onDrain);
    stream.addEventListener("close", onClose);
  });
}
