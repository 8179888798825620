/** Longest unsigned-varint length prefix accepted (8 bytes hold 56 bits, far above any frame limit). */
export const MAX_PREFIX_BYTES = 8;

/** Smallest buffer a frame arriving in pieces is gathered in (it doubles from there, up to the frame). */
const MIN_GATHER_BYTES = 1_024;

/** Why a stream of frames cannot be read further: the declared length is above the limit, or the prefix never ends. */
export type FrameStreamFailure = "oversize" | "malformed";

/**
 * Splits one inbound byte stream into `unsigned-varint length ‖ bytes` frames (node.md §3.4). A declared
 * length above `maxFrameBytes` fails the stream as soon as the prefix shows it, before any body byte is
 * kept; a prefix still unfinished after {@link MAX_PREFIX_BYTES} bytes is malformed. A zero-length frame
 * is emitted like any other (the mux counts it as `unknown-channel`), and a non-minimal prefix (e.g.
 * `0x85 0x00` for 5) is read as the value it encodes, so every byte of a stream is in a prefix, in a
 * delivered frame, or in the one unfinished frame at its end ({@link inFrame}). A frame that arrives in
 * pieces is gathered in one buffer that doubles as it fills, up to the declared length: the work per byte
 * is constant however the peer splits its writes, and what is kept between pushes is below one prefix
 * plus one frame — bytes and objects alike (a list of the pieces themselves cost ~230× the frame in heap
 * when a peer sent one byte per write).
 */
export class FrameDecoder {
  readonly #max: number;
  // prefix being read
  #len = 0;
  #scale = 1;
  #prefixBytes = 0;
  // body being read: its declared length (-1 while reading a prefix) and the bytes so far
  #bodyLen = -1;
  #buf: Uint8Array | null = null;
  #have = 0;

  constructor(maxFrameBytes: number) {
    this.#max = maxFrameBytes;
  }

  /** True while a prefix or a frame body is unfinished (at a stream's end: a cut frame). */
  get inFrame(): boolean {
    return this.#prefixBytes > 0 || this.#bodyLen >= 0;
  }

  /**
   * Feeds `data`, calling `emit` for each complete frame in order; returns the failure that ends the
   * stream, or null. After a failure the decoder must not be fed again.
   */
  push(data: Uint8Array, emit: (frame: Uint8Array) => void): FrameStreamFailure | null {
    let at = 0;
    for (;;) {
      if (this.#bodyLen < 0) {
        while (at < data.length && this.#bodyLen < 0) {
          const b = data[at++]!;
          this.#len += (b & 0x7f) * this.#scale;
          this.#scale *= 128;
          this.#prefixBytes++;
          if (this.#len > this.#max) return "oversize";
          if ((b & 0x80) === 0) {
            this.#bodyLen = this.#len;
            this.#len = 0;
            this.#scale = 1;
            this.#prefixBytes = 0;
          } else if (this.#prefixBytes >= MAX_PREFIX_BYTES) return "malformed";
        }
        if (this.#bodyLen < 0) return null;
      }
      const want = this.#bodyLen - this.#have;
      const avail = data.length - at;
      if (avail < want) {
        if (avail > 0) {
          const need = this.#have + avail;
          if (this.#buf === null || this.#buf.length < need) {
            const grown = new Uint8Array(Math.min(this.#bodyLen, Math.max(need * 2, MIN_GATHER_BYTES)));
            if (this.#buf !== null) grown.set(this.#buf.subarray(0, this.#have));
            this.#buf = grown;
          }
          this.#buf.set(data.subarray(at), this.#have);
          this.#have = need;
        }
        return null;
      }
      let frame: Uint8Array;
      if (this.#have === 0) frame = data.subarray(at, at + want);
      else {
        frame = this.#buf!;
        if (frame.length < this.#bodyLen) {
          const full = new Uint8Array(this.#bodyLen);
          full.set(frame.subarray(0, this.#have));
          frame = full;
        }
        frame.set(data.subarray(at, at + want), this.#have);
        this.#buf = null;
        this.#have = 0;
      }
      at += want;
      this.#bodyLen = -1;
      emit(frame);
      if (at === data.length) return null;
    }
  }
}
