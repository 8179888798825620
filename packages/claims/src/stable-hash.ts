/**
 * A 32-bit hash of a string that every peer computes alike: FNV-1a over the
 * string's UTF-8 bytes (an unpaired surrogate counts as U+FFFD), followed by a
 * final avalanche step (xor-shift and multiply) so that strings differing only in
 * their last character still land far apart. Not cryptographic.
 */
export function stableHash(text: string): number {
  let h = fnv1a32(text);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** 32-bit FNV-1a over the UTF-8 bytes of `text` (an unpaired surrogate counts as U+FFFD). */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  const byte = (b: number): void => {
    h = Math.imul(h ^ b, 0x01000193);
  };
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      // Past the end charCodeAt gives NaN, which fails the range test below as any non-low-surrogate does.
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      } else {
        c = 0xfffd;
      }
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      c = 0xfffd;
    }
    if (c < 0x80) byte(c);
    else if (c < 0x800) {
      byte(0xc0 | (c >> 6));
      byte(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      byte(0xe0 | (c >> 12));
      byte(0x80 | ((c >> 6) & 0x3f));
      byte(0x80 | (c & 0x3f));
    } else {
      byte(0xf0 | (c >> 18));
      byte(0x80 | ((c >> 12) & 0x3f));
      byte(0x80 | ((c >> 6) & 0x3f));
      byte(0x80 | (c & 0x3f));
    }
  }
  return h >>> 0;
}
