import { randomBytes } from "node:crypto";
import { defaultCrypto } from "@chainsafe/libp2p-noise/crypto";
import { Uint8ArrayList } from "uint8arraylist";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NODE_CIPHER_MIN_BYTES, noiseCrypto, sessionKey } from "../src/noise-crypto.ts";

const flat = (b: Uint8Array | Uint8ArrayList): Uint8Array => (b instanceof Uint8Array ? b : b.subarray());

/** `bytes` as a list of up to three pieces, as Noise hands a yamux frame over. */
function pieces(bytes: Uint8Array, cut1: number, cut2: number): Uint8ArrayList {
  const a = Math.min(cut1, bytes.length);
  const b = Math.min(Math.max(a, cut2), bytes.length);
  return new Uint8ArrayList(bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b));
}

describe("noiseCrypto", () => {
  it("interoperates with the package's default both ways, for every size around the switch and lists of pieces", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5000 }),
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        (size, c1, c2, asList) => {
          const k = randomBytes(32);
          const nonce = randomBytes(12);
          const ad = randomBytes(size % 3 === 0 ? 0 : 32);
          const plain = randomBytes(size);
          const input = asList ? pieces(plain, c1 % (size + 1), c2 % (size + 1)) : plain;
          const ours = flat(noiseCrypto.chaCha20Poly1305Encrypt(input, nonce, ad, k));
          const theirs = flat(defaultCrypto.chaCha20Poly1305Encrypt(plain, nonce, ad, k));
          expect(Buffer.compare(ours, theirs)).toBe(0); // the same AEAD: identical bytes
          const back = asList ? pieces(ours, c1 % (ours.length + 1), c2 % (ours.length + 1)) : ours;
          expect(Buffer.compare(flat(noiseCrypto.chaCha20Poly1305Decrypt(back, nonce, ad, k)), plain)).toBe(0);
          expect(Buffer.compare(flat(defaultCrypto.chaCha20Poly1305Decrypt(Uint8Array.from(ours), nonce, ad, k)), plain)).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("refuses a message whose ciphertext, tag, nonce or key does not match", () => {
    const k = randomBytes(32);
    const nonce = randomBytes(12);
    const ad = new Uint8Array(0);
    const plain = randomBytes(NODE_CIPHER_MIN_BYTES + 100);
    const sealed = flat(noiseCrypto.chaCha20Poly1305Encrypt(plain, nonce, ad, k));
    for (const at of [0, 700, sealed.length - 1]) {
      const bad = Uint8Array.from(sealed);
      bad[at]! ^= 1;
      expect(() => noiseCrypto.chaCha20Poly1305Decrypt(bad, nonce, ad, k)).toThrow();
    }
    expect(() => noiseCrypto.chaCha20Poly1305Decrypt(sealed, randomBytes(12), ad, k)).toThrow();
    expect(() => noiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, randomBytes(32))).toThrow();
    expect(() => noiseCrypto.chaCha20Poly1305Decrypt(new Uint8Array(NODE_CIPHER_MIN_BYTES).subarray(0, 10), nonce, ad, k)).toThrow();
  });

  it("imports a key array once, and again if its bytes change", () => {
    const k = randomBytes(32);
    const first = sessionKey(k);
    expect(sessionKey(k)).toBe(first);
    expect(sessionKey(Uint8Array.from(k))).not.toBe(first); // another array: its own import
    k[0]! ^= 0xff; // a caller reusing the array for another key
    const second = sessionKey(k);
    expect(second).not.toBe(first);
    expect(Buffer.compare(second.export(), k)).toBe(0);
    // and sealing with the changed array uses the new key
    const nonce = randomBytes(12);
    const plain = randomBytes(2000);
    const ours = flat(noiseCrypto.chaCha20Poly1305Encrypt(plain, nonce, new Uint8Array(0), k));
    const theirs = flat(defaultCrypto.chaCha20Poly1305Encrypt(plain, nonce, new Uint8Array(0), Uint8Array.from(k)));
    expect(Buffer.compare(ours, theirs)).toBe(0);
  });
});
