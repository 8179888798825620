/**
 * CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF), the checksum
 * on every record of the Raft log store. Hand-written because it is a formula: eight 256-entry tables built from
 * the polynomial at load, consumed eight bytes per step ("slicing-by-8"). Check value: "123456789" → 0xE3069283.
 */

const POLY = 0x82f63b78;

const TABLES: Uint32Array[] = (() => {
  const t = Array.from({ length: 8 }, () => new Uint32Array(256));
  const t0 = t[0]!;
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t0[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    let c = t0[n]!;
    for (let s = 1; s < 8; s++) {
      c = (c >>> 8) ^ t0[c & 0xff]!;
      t[s]![n] = c >>> 0;
    }
  }
  return t;
})();

/** CRC-32C of `bytes[start, end)`, continuing from `crc` (pass 0 to start). */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length, crc = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES as [Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  let c = ~crc >>> 0;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const lo = (c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24))) >>> 0;
    c =
      t7[lo & 0xff]! ^
      t6[(lo >>> 8) & 0xff]! ^
      t5[(lo >>> 16) & 0xff]! ^
      t4[lo >>> 24]! ^
      t3[bytes[i + 4]!]! ^
      t2[bytes[i + 5]!]! ^
      t1[bytes[i + 6]!]! ^
      t0[bytes[i + 7]!]!;
  }
  for (; i < end; i++) c = (c >>> 8) ^ t0[(c ^ bytes[i]!) & 0xff]!;
  return ~c >>> 0;
}
