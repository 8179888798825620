/** Largest length a varint prefix may declare before the reader gives up on the stream (2^53 − 1). */
const MAX_VARINT_BYTES = 8;

/** `unsigned-varint(length) ‖ bytes`, the framing of `/heddle/frames/1.0.0`. */
export function lengthPrefixed(frame: Uint8Array): Uint8Array {
  const head: number[] = [];
  let n = frame.length;
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    head.push(b);
  } while (n > 0);
  const out = new Uint8Array(head.length + frame.length);
  out.set(head, 0);
  out.set(frame, head.length);
  return out;
}

/** Why a length-prefixed byte stream had to be abandoned. */
export type FrameReadFault = "oversize" | "decode";

/**
 * Incremental reader of length-prefixed frames. The declared length is checked against `maxFrameBytes`
 * as soon as the prefix is complete, before any body byte is buffered; an over-long prefix or a
 * length above the limit makes the reader fail permanently (the caller aborts the stream).
 */
export class LengthPrefixedReader {
  readonly #max: number;
  readonly #onFrame: (frame: Uint8Array) => void;
  #fault: FrameReadFault | null = null;
  #prefixValue = 0;
  #prefixShift = 1;
  #prefixBytes = 0;
  #body: Uint8Array | null = null;
  #filled = 0;

  constructor(maxFrameBytes: number, onFrame: (frame: Uint8Array) => void) {
    this.#max = maxFrameBytes;
    this.#onFrame = onFrame;
  }

  get fault(): FrameReadFault | null {
    return this.#fault;
  }

  /** Feeds received bytes; returns the fault if the stream must be abandoned. */
  push(chunk: Uint8Array): FrameReadFault | null {
    let i = 0;
    while (i < chunk.length && this.#fault === null) {
      if (this.#body === null) {
        const b = chunk[i++]!;
        this.#prefixValue += (b & 0x7f) * this.#prefixShift;
        this.#prefixShift *= 128;
        this.#prefixBytes++;
        if (b & 0x80) {
          if (this.#prefixBytes >= MAX_VARINT_BYTES) this.#fault = "decode";
          continue;
        }
        const len = this.#prefixValue;
        this.#prefixValue = 0;
        this.#prefixShift = 1;
        this.#prefixBytes = 0;
        if (len > this.#max) {
          this.#fault = "oversize";
          break;
        }
        if (len === 0) {
          this.#onFrame(new Uint8Array(0));
          continue;
        }
        this.#body = new Uint8Array(len);
        this.#filled = 0;
      } else {
        const take = Math.min(this.#body.length - this.#filled, chunk.length - i);
        this.#body.set(chunk.subarray(i, i + take), this.#filled);
        this.#filled += take;
        i += take;
        if (this.#filled === this.#body.length) {
          const done = this.#body;
          this.#body = null;
          this.#onFrame(done);
        }
      }
    }
    return this.#fault;
  }
}
