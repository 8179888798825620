// The frames of `heddle-call/1`, the daemon's call wire: the API's control and granted-claims calls multiplexed over
// one connection, upgraded from the API's own HTTP(S) port (`GET /v1/wire`, `Upgrade: heddle-call/1`, the bearer
// token on the upgrade). Both ends use this file: the daemon to read calls and write answers, the client the reverse.
//
// Every frame is a 4-byte big-endian length of what follows, then:
//   call   (client → daemon): u32 id · u8 path length · path (ASCII, e.g. "/claims/take") · u8 key length · key
//                              (the Idempotency-Key, visible ASCII; 0 = none) · body (UTF-8 JSON; empty = no body)
//   answer (daemon → client): u32 id · u16 status (the HTTP status the same call answers) · body (UTF-8 JSON)
// An answer carries its call's id; answers may come in any order.

/** The upgrade's path (under the API's `/v1`). */
export const CALL_WIRE_PATH = "/v1/wire";
/** The protocol named in the upgrade's `Upgrade` header, both ways. */
export const CALL_WIRE_PROTOCOL = "heddle-call/1";
/** The length prefix of every frame. */
export const FRAME_LENGTH_BYTES = 4;
/** A call frame's fixed part after the length: id, path length, key length. */
export const CALL_HEAD_BYTES = 4 + 1 + 1;
/** An answer frame's fixed part after the length: id, status. */
export const ANSWER_HEAD_BYTES = 4 + 2;
/** The longest path a call frame can name (its length is one byte). */
export const MAX_CALL_PATH_BYTES = 255;

/** A frame whose length prefix is above the reader's bound: the stream cannot be trusted past it, so the connection ends. */
export class FrameTooLargeError extends Error {
  readonly declared: number;
  readonly limit: number;

  constructor(declared: number, limit: number) {
    super(`a frame of ${declared} bytes is above the limit of ${limit}`);
    this.name = "FrameTooLargeError";
    this.declared = declared;
    this.limit = limit;
  }
}

/**
 * What a {@link FrameReader} does with a frame above its bound when given `oversized`: the frame's bytes are discarded
 * as they arrive (nothing is buffered), and `oversized` is called once with its declared length and its first four
 * bytes read as an id, as soon as those have arrived.
 */
export type OversizedFrame = (declared: number, id: number) => void;

/**
 * Cuts a byte stream into frames (the bytes after each length prefix), whatever the chunking. A frame is handed out
 * as a view that stays valid (it is never overwritten). A frame split across chunks is gathered into one buffer of
 * its declared size, allocated once its prefix is read — so what it holds is bounded by `maxFrameBytes` however the
 * bytes trickle in. A frame above the bound throws {@link FrameTooLargeError} (and every later `push` throws again),
 * or, with an `oversized` handler, is skipped.
 */
export class FrameReader {
  readonly #max: number;
  readonly #head = Buffer.alloc(FRAME_LENGTH_BYTES);
  #headHave = 0;
  /** The frame being gathered across chunks, and how much of it has arrived. */
  #body: Buffer | null = null;
  #bodyHave = 0;
  /** Bytes of an oversized frame still to discard, and its first four bytes (its id) as they arrive. */
  #skip = 0;
  #skipDeclared = 0;
  readonly #skipId = Buffer.alloc(4);
  #skipIdHave = 0;
  #failed: FrameTooLargeError | null = null;

  /** @param maxFrameBytes the largest frame accepted, length prefix excluded. */
  constructor(maxFrameBytes: number) {
    // at least an id's 4 bytes: a skipped frame always carries one
    if (!Number.isSafeInteger(maxFrameBytes) || maxFrameBytes < 4 || maxFrameBytes > 0xffffffff) throw new RangeError(`maxFrameBytes must be a whole number in 4 … 2^32 − 1, got ${maxFrameBytes}`);
    this.#max = maxFrameBytes;
  }

  /** Bytes held of a frame not yet whole (its prefix included). */
  get buffered(): number {
    return this.#headHave + this.#bodyHave;
  }

  /**
   * Takes `chunk` and calls `frame` for every frame it completes, in order. A frame above the bound: with
   * `oversized`, skipped (see {@link OversizedFrame}); without, {@link FrameTooLargeError} is thrown as soon as its
   * prefix is read (the frames before it have been handed out), and every later call throws it again.
   */
  push(chunk: Buffer, frame: (f: Buffer) => void, oversized?: OversizedFrame): void {
    if (this.#failed !== null) throw this.#failed;
    let at = 0;
    const n = chunk.length;
    while (at < n) {
      if (this.#skip > 0) {
        const take = Math.min(this.#skip, n - at);
        for (let i = 0; i < take && this.#skipIdHave < 4; i++) this.#skipId[this.#skipIdHave++] = chunk[at + i]!;
        this.#skip -= take;
        at += take;
        if (this.#skipIdHave === 4 && this.#skipDeclared >= 0) {
          oversized!(this.#skipDeclared, this.#skipId.readUInt32BE(0));
          this.#skipDeclared = -1;
        }
        continue;
      }
      if (this.#body !== null) {
        const take = Math.min(this.#body.length - this.#bodyHave, n - at);
        chunk.copy(this.#body, this.#bodyHave, at, at + take);
        this.#bodyHave += take;
        at += take;
        if (this.#bodyHave === this.#body.length) {
          const f = this.#body;
          this.#body = null;
          this.#bodyHave = 0;
          frame(f);
        }
        continue;
      }
      let len: number;
      if (this.#headHave === 0 && n - at >= FRAME_LENGTH_BYTES) {
        len = chunk.readUInt32BE(at);
        at += FRAME_LENGTH_BYTES;
      } else {
        while (this.#headHave < FRAME_LENGTH_BYTES && at < n) this.#head[this.#headHave++] = chunk[at++]!;
        if (this.#headHave < FRAME_LENGTH_BYTES) return;
        this.#headHave = 0;
        len = this.#head.readUInt32BE(0);
      }
      if (len > this.#max) {
        if (oversized === undefined) throw (this.#failed = new FrameTooLargeError(len, this.#max));
        this.#skip = len;
        this.#skipDeclared = len;
        this.#skipIdHave = 0;
        continue;
      }
      if (n - at >= len) {
        // the common case: the whole frame is in this chunk, handed out as a view of it
        frame(chunk.subarray(at, at + len));
        at += len;
        continue;
      }
      this.#body = Buffer.allocUnsafe(len);
      this.#bodyHave = 0;
    }
  }
}

/** A call frame, decoded. */
export interface CallFrame {
  readonly id: number;
  readonly path: string;
  /** The Idempotency-Key; `null` for none. */
  readonly key: string | null;
  /** The body's UTF-8 text; "" for none. */
  readonly body: string;
  /** The body's length in bytes. */
  readonly bodyBytes: number;
}

/** Encodes a call frame, length prefix included. Throws a RangeError naming what does not fit (path, key, id). */
export function encodeCall(id: number, path: string, key: string | null, body: string): Buffer {
  if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new RangeError(`id must be a whole number in 0 … 2^32 − 1, got ${id}`);
  const pathBytes = Buffer.byteLength(path, "latin1");
  if (pathBytes > MAX_CALL_PATH_BYTES || !/^[\x21-\x7e]*$/.test(path)) throw new RangeError(`path must be at most ${MAX_CALL_PATH_BYTES} visible ASCII characters, got ${JSON.stringify(path.slice(0, 300))}`);
  const keyBytes = key === null ? 0 : key.length;
  if (key !== null && (keyBytes === 0 || keyBytes > 255 || !/^[\x21-\x7e]+$/.test(key))) throw new RangeError(`key must be 1 … 255 visible ASCII characters, got ${JSON.stringify(key.slice(0, 300))}`);
  const bodyBytes = Buffer.byteLength(body, "utf8");
  const n = CALL_HEAD_BYTES + pathBytes + keyBytes + bodyBytes;
  const b = Buffer.allocUnsafe(FRAME_LENGTH_BYTES + n);
  b.writeUInt32BE(n, 0);
  b.writeUInt32BE(id, 4);
  b[8] = pathBytes;
  b.write(path, 9, "latin1");
  b[9 + pathBytes] = keyBytes;
  if (key !== null) b.write(key, 10 + pathBytes, "latin1");
  b.write(body, 10 + pathBytes + keyBytes, "utf8");
  return b;
}

/** Why a call frame cannot be read, with its id when that much could be. */
export interface CallFrameProblem {
  readonly id: number | null;
  readonly problem: string;
}

/** Decodes a call frame (without its length prefix); a frame too short for what it declares is a problem, not a throw. */
export function decodeCall(f: Buffer): CallFrame | CallFrameProblem {
  if (f.length < 4) return { id: null, problem: `a call frame of ${f.length} bytes is shorter than its id` };
  const id = f.readUInt32BE(0);
  if (f.length < CALL_HEAD_BYTES) return { id, problem: `a call frame of ${f.length} bytes is shorter than its fixed part (${CALL_HEAD_BYTES} bytes)` };
  const pathBytes = f[4]!;
  if (f.length < CALL_HEAD_BYTES + pathBytes) return { id, problem: `the call frame declares a path of ${pathBytes} bytes and has ${f.length - CALL_HEAD_BYTES} after its fixed part` };
  const path = f.toString("latin1", 5, 5 + pathBytes);
  const keyBytes = f[5 + pathBytes]!;
  if (f.length < CALL_HEAD_BYTES + pathBytes + keyBytes) return { id, problem: `the call frame declares a key of ${keyBytes} bytes and has ${f.length - CALL_HEAD_BYTES - pathBytes} after its path` };
  const key = keyBytes === 0 ? null : f.toString("latin1", 6 + pathBytes, 6 + pathBytes + keyBytes);
  const body = f.toString("utf8", 6 + pathBytes + keyBytes, f.length);
  return { id, path, key, body, bodyBytes: f.length - 6 - pathBytes - keyBytes };
}

/** Encodes an answer frame, length prefix included. */
export function encodeAnswer(id: number, status: number, body: string): Buffer {
  const bodyBytes = Buffer.byteLength(body, "utf8");
  const n = ANSWER_HEAD_BYTES + bodyBytes;
  const b = Buffer.allocUnsafe(FRAME_LENGTH_BYTES + n);
  b.writeUInt32BE(n, 0);
  b.writeUInt32BE(id >>> 0, 4);
  b.writeUInt16BE(status, 8);
  b.write(body, 10, "utf8");
  return b;
}

/** An answer frame, decoded; `null` for a frame shorter than its fixed part. */
export function decodeAnswer(f: Buffer): { id: number; status: number; body: string } | null {
  if (f.length < ANSWER_HEAD_BYTES) return null;
  return { id: f.readUInt32BE(0), status: f.readUInt16BE(4), body: f.toString("utf8", ANSWER_HEAD_BYTES, f.length) };
}

/**
 * Writes to a socket so that everything written in one turn of the event loop leaves in one write: the socket is
 * corked at the turn's first write and uncorked once the turn's work (its microtasks included) is done.
 */
export class TurnWriter {
  readonly #socket: { cork(): void; uncork(): void; write(b: Uint8Array): boolean };
  #corked = false;

  constructor(socket: { cork(): void; uncork(): void; write(b: Uint8Array): boolean }) {
    this.#socket = socket;
  }

  write(b: Uint8Array): void {
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      process.nextTick(() => {
        this.#corked = false;
        this.#socket.uncork();
      });
    }
    this.#socket.write(b);
  }
}
