// Fewer socket writes, and less work per message, under libp2p's TCP connections (issue 15).
//
// Under libp2p 3.3 every yamux frame becomes one Noise message, and `@chainsafe/libp2p-noise` 17 hands the TCP
// connection that message as a list of two buffers: its 2-byte length prefix and the ciphertext. `@libp2p/tcp` 11
// writes each buffer of the list with its own `socket.write`, and a socket with Nagle off turns each into its own
// syscall. Counted with strace on the Raft benchmark's one-client cell, 45 % of the leader's socket writes were
// those 2-byte prefixes. Here a Noise message always leaves in one syscall (one `writev` of its buffers). The
// first message a connection is given in a turn of the event loop's `nextTick` queue leaves at once; what follows
// it in the same turn is corked and leaves in one more `writev` when the turn ends. Holding the first one to the
// turn's end too (as this did before) kept a 5-voter Raft commit at one client ~60 µs longer per hop, measured
// with timestamps along the path: a leader's AppendEntries waited for its own log write to be started, and a
// follower's answer for the entries it had just learned were committed to be applied.
//
// The bytes on the wire are the same, in the same order; only the syscalls that carry them change. Backpressure
// is the socket's own: `write` still answers whether the socket's buffer is below its high-water mark, and the
// socket still emits `drain` once a flush empties it.
//
// Two more per-message costs of the same stack are cut here, each explained at its function:
// `halfWindowUpdates` (yamux's window update after every data frame) and `quietLengthDecoder` (an exception
// thrown after every Noise message received). `withCoalescedWrites` applies the Noise-side ones to each connection.
import type { Socket } from "node:net";
import type { ConnectionEncrypter } from "@libp2p/interface";
import { StreamState, YamuxStream } from "@chainsafe/libp2p-yamux/stream";

/** What is patched: a libp2p TCP connection, i.e. a `MessageStream` with the Node socket under it. */
interface TcpConnectionLike {
  socket?: unknown;
  sendData?: unknown;
}

/** Buffers, as libp2p's `Uint8ArrayList` exposes them to `sendData`. */
interface ByteList extends Iterable<Uint8Array> {
  readonly byteLength: number;
}

const PATCHED = Symbol("heddle.coalescedWrites");

function isSocket(value: unknown): value is Socket {
  return (
    typeof value === "object" && value !== null &&
    typeof (value as Socket).cork === "function" &&
    typeof (value as Socket).uncork === "function" &&
    typeof (value as Socket).write === "function"
  );
}

/**
 * Makes `connection` (a libp2p TCP `MultiaddrConnection`) send each message in one syscall: a turn's first message
 * at once, whatever follows it in the same turn together when the turn ends. Returns whether it did: a connection
 * without a Node socket under it (another transport, a test double) is left as it is. Patching twice is a no-op.
 */
export function coalesceWrites(connection: unknown): boolean {
  if (typeof connection !== "object" || connection === null) return false;
  const conn = connection as TcpConnectionLike & { [PATCHED]?: true };
  if (conn[PATCHED] === true) return true;
  const socket = conn.socket;
  if (!isSocket(socket) || typeof conn.sendData !== "function") return false;
  // `inTurn`: something was sent in this turn of the nextTick queue; `corked`: what followed it is held back
  let inTurn = false;
  let corked = false;
  const endTurn = (): void => {
    inTurn = false;
    if (!corked) return;
    corked = false;
    // `end()`/`destroy()` uncork (or drop) what is buffered themselves; uncorking a finished socket is a no-op.
    socket.uncork();
  };
  const sendData = (data: ByteList): { sentBytes: number; canSendMore: boolean } => {
    let canSendMore = true;
    if (!inTurn) {
      // the turn's first message leaves now, in one syscall: waiting for the tick's end would hold it behind
      // whatever else the turn does (a follower's answer behind applying what it just learned was committed)
      inTurn = true;
      process.nextTick(endTurn);
      socket.cork();
      try {
        for (const buf of data) canSendMore = socket.write(buf);
      } finally {
        // a write that throws (a chunk the socket refuses) must not leave the socket corked for good
        socket.uncork();
      }
    } else {
      if (!corked) {
        corked = true;
        socket.cork();
      }
      for (const buf of data) canSendMore = socket.write(buf);
    }
    // Every byte was handed to the socket (Node buffers past the high-water mark); `canSendMore: false` asks the
    // stream to wait for the socket's `drain` before the next send, as `@libp2p/tcp` does.
    return { sentBytes: data.byteLength, canSendMore };
  };
  Object.defineProperty(conn, "sendData", { value: sendData, configurable: true, writable: true });
  Object.defineProperty(conn, PATCHED, { value: true });
  return true;
}

/** The one "need more bytes" signal {@link quietLengthDecoder} throws when it cannot answer with a length. */
const SHORT = new RangeError("heddle: a Noise length prefix needs 2 bytes");

/** Bytes of a Noise length prefix (a big-endian uint16). */
const NOISE_PREFIX_BYTES = 2;

/** What {@link quietLengthDecoder} reads of `@chainsafe/libp2p-noise` 17's encrypted stream. */
interface NoiseDecoding {
  decoder?: { lengthDecoder?: unknown; encodingLength?: unknown };
}

/**
 * Makes a Noise connection's frame decoder wait for a length prefix's second byte without an exception.
 * `@libp2p/utils`' `LengthPrefixedDecoder` asks its length decoder for the next length after every message it takes
 * out, and Noise's `uint16BEDecode` answers a buffer holding less than a prefix by constructing a `RangeError`,
 * which the decoder catches to wait for more bytes. Building that error captured a stack per message received
 * (157 ms of a Raft leader's 1.9 s busy in a 4.5 s profile); throwing one prebuilt instance still made V8 compute
 * the throw's source location per message (1.7 % of a 5-voter follower's CPU, 2.7 % of the leader's, in a `perf`
 * profile of the Raft bench's one-client cell). So a short buffer is answered with length 0 instead: the decoder
 * then needs `encodingLength(0)` = 2 bytes for the message, holds fewer, and waits for more — the same outcome,
 * no throw. Where the decoder's `encodingLength` would not ask for those 2 bytes (not Noise's), the prebuilt
 * error is thrown as before. Returns whether `connection` had such a decoder (else it is left as it is).
 */
export function quietLengthDecoder(connection: unknown): boolean {
  const decoder = (connection as NoiseDecoding | null)?.decoder;
  if (typeof decoder !== "object" || decoder === null || typeof decoder.lengthDecoder !== "function") return false;
  const original = decoder.lengthDecoder as ((data: ByteList) => number) & { bytes?: number };
  const encodingLength = decoder.encodingLength;
  const waitsOnZero = typeof encodingLength === "function" && (encodingLength as (n: number) => unknown)(0) === NOISE_PREFIX_BYTES;
  const lengthDecoder = (data: ByteList & { length?: number }): number => {
    if (data.byteLength < NOISE_PREFIX_BYTES) {
      if (waitsOnZero) return 0;
      throw SHORT;
    }
    return original(data);
  };
  lengthDecoder.bytes = original.bytes;
  decoder.lengthDecoder = lengthDecoder;
  return true;
}

/**
 * Wraps a connection encrypter factory (libp2p's `connectionEncrypters` entry, e.g. `noise()`) so that each
 * connection it secures has its socket writes coalesced ({@link coalesceWrites}) before the handshake starts, and
 * its decrypting side decodes without an error per message ({@link quietLengthDecoder}).
 */
export function withCoalescedWrites<C>(
  factory: (components: C) => ConnectionEncrypter,
): (components: C) => ConnectionEncrypter {
  return (components: C) => {
    const inner = factory(components);
    const outer: ConnectionEncrypter = Object.create(inner) as ConnectionEncrypter;
    outer.secureOutbound = async (connection, options) => {
      coalesceWrites(connection);
      const secured = await inner.secureOutbound(connection, options);
      quietLengthDecoder(secured.connection);
      return secured;
    };
    outer.secureInbound = async (connection, options) => {
      coalesceWrites(connection);
      const secured = await inner.secureInbound(connection, options);
      quietLengthDecoder(secured.connection);
      return secured;
    };
    return outer;
  };
}

/** The parts of a yamux 8 stream that {@link halfWindowUpdates} reads (TS-private in the package's types). */
interface YamuxWindow {
  state: StreamState;
  recvWindow: number;
  recvWindowCapacity: number;
  sendWindowUpdate(): void;
}

/**
 * Makes a yamux stream we only read from return its receive window when half of it is used, not after every
 * data frame. Yamux 8 answers each data frame it receives with a 12-byte window-update frame (one more Noise
 * message, one more socket write per frame; a quarter of a Raft leader's socket writes). The hashicorp and go
 * yamux implementations wait until half the window is consumed; so does this. A stream that still owes its
 * peer an ACK or SYN (its first update carries the flag), or that is paused, keeps yamux's own rule, and an
 * update is never held back once the window is half used, so a writer is never left waiting for one: the
 * window the writer sees is at least half the full window at any time. Returns whether `stream` was a yamux
 * stream (anything else is left as it is).
 */
export function halfWindowUpdates(stream: unknown): boolean {
  if (!(stream instanceof YamuxStream)) return false;
  const s = stream as unknown as YamuxWindow;
  if (typeof s.recvWindow !== "number" || typeof s.recvWindowCapacity !== "number") return false;
  const eager = s.sendWindowUpdate;
  Object.defineProperty(stream, "sendWindowUpdate", {
    configurable: true,
    writable: true,
    value: function sendWindowUpdate(this: YamuxWindow): void {
      if (this.state === StreamState.Established && this.recvWindowCapacity * 2 >= this.recvWindow) return;
      eager.call(this);
    },
  });
  return true;
}
