const OFFSET = 0xcbf29ce484222325n;
const PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/**
 * FNV-1a-64 of `bytes` as 16 lower-case hex digits (node.md §4.1). Used for the genesis digest and the
 * anti-entropy state digest. Not a cryptographic hash: it detects divergence, it does not authenticate.
 */
export function fnv1a64(bytes: Uint8Array | string): string {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  // Two 32-bit halves keep the loop on numbers; the bigint form is the definition.
  let hi = Number(OFFSET >> 32n);
  let lo = Number(OFFSET & 0xffffffffn);
  for (let i = 0; i < data.length; i++) {
    lo = (lo ^ data[i]!) >>> 0;
    // (hi:lo) × 0x100000001b3 mod 2^64 = (hi:lo) × 0x1b3 + (lo << 40)
    const loMul = lo * 0x1b3;
    const carry = Math.floor(loMul / 0x100000000);
    const newLo = loMul >>> 0;
    const newHi = (Math.imul(hi, 0x1b3) + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = newLo;
    hi = newHi;
  }
  return ((BigInt(hi) << 32n) | BigInt(lo)).toString(16).padStart(16, "0");
}

/** Reference implementation on bigint, straight from the definition (tests compare the two). */
export function fnv1a64Reference(bytes: Uint8Array): string {
  let h = OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * PRIME) & MASK;
  return h.toString(16).padStart(16, "0");
}
