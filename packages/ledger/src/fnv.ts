/**
 * FNV-1a-64 (node.md §4.1): `h = 0xcbf29ce484222325`; per byte `h = ((h XOR byte) × 0x100000001b3) mod 2^64`.
 * Hand-written because the spec fixes the algorithm. Not cryptographic: it detects divergence between
 * authenticated peers, it does not authenticate anything. The loop runs on two 32-bit halves; the
 * bigint form (`fnv1a64Reference`) is the definition the tests compare against.
 */

const OFFSET_HI = 0xcbf29ce4;
const OFFSET_LO = 0x84222325;

/** A running FNV-1a-64 state over bytes, in two unsigned 32-bit halves. */
export class Fnv1a64 {
  hi = OFFSET_HI;
  lo = OFFSET_LO;

  /** Feeds one byte (0…255). */
  byte(b: number): void {
    const lo = (this.lo ^ b) >>> 0;
    // (hi:lo) × 0x100000001b3 mod 2^64 = (hi:lo) × 0x1b3 + (lo << 40)
    const loMul = lo * 0x1b3;
    const carry = Math.floor(loMul / 0x100000000);
    this.lo = loMul >>> 0;
    this.hi = (Math.imul(this.hi, 0x1b3) + carry + ((lo << 8) >>> 0)) >>> 0;
  }

  /**
   * Feeds the UTF-8 bytes of `s`, encoded on the fly: the bytes `TextEncoder` writes, so a lone surrogate
   * (which no id holds, but a caller's string may) is U+FFFD, as there.
   */
  text(s: string): void {
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) {
        this.byte(c);
      } else if (c < 0x800) {
        this.byte(0xc0 | (c >> 6));
        this.byte(0x80 | (c & 0x3f));
      } else if (c >= 0xd800 && c <= 0xdfff) {
        // charCodeAt past the end is NaN, which is no low surrogate
        const low = c <= 0xdbff ? s.charCodeAt(i + 1) : NaN;
        if (low >= 0xdc00 && low <= 0xdfff) {
          i++;
          c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
          this.byte(0xf0 | (c >> 18));
          this.byte(0x80 | ((c >> 12) & 0x3f));
          this.byte(0x80 | ((c >> 6) & 0x3f));
          this.byte(0x80 | (c & 0x3f));
        } else {
          this.byte(0xef); // U+FFFD
          this.byte(0xbf);
          this.byte(0xbd);
        }
      } else {
        this.byte(0xe0 | (c >> 12));
        this.byte(0x80 | ((c >> 6) & 0x3f));
        this.byte(0x80 | (c & 0x3f));
      }
    }
  }

  /** 16 lower-case hex digits. */
  hex(): string {
    return this.hi.toString(16).padStart(8, "0") + this.lo.toString(16).padStart(8, "0");
  }
}

/** FNV-1a-64 of `data` (bytes, or the UTF-8 of a string) as 16 lower-case hex digits. */
export function fnv1a64(data: Uint8Array | string): string {
  const h = new Fnv1a64();
  if (typeof data === "string") h.text(data);
  else for (let i = 0; i < data.length; i++) h.byte(data[i]!);
  return h.hex();
}

/** The definition on bigint, byte by byte (tests compare the fast form against it). */
export function fnv1a64Reference(bytes: Uint8Array): string {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, "0");
}
