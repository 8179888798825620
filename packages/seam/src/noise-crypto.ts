// The ChaCha20-Poly1305 of our Noise sessions, with the session key imported into OpenSSL once (issue 15).
//
// `@chainsafe/libp2p-noise` 17 seals and opens messages of 1,200 bytes and more with `node:crypto`, passing the
// raw 32-byte session key to `createCipheriv` for every message, so Node imports it as a new secret key each time.
// In a CPU profile of a 5-voter Raft leader at 64 clients (its AppendEntries batches are such messages) that key
// handling was about 7 % of the leader's busy time, and a micro-benchmark here puts it at 8–10 µs per message of
// 1.5–8 KB (13–16 µs with a raw key, 5–6 µs with a `KeyObject`). This keeps one `KeyObject` per session key.
// Everything else — the small-message path, hashing, key agreement — is the package's own.
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from "node:crypto";
import type { ICryptoInterface } from "@chainsafe/libp2p-noise";
import { defaultCrypto } from "@chainsafe/libp2p-noise/crypto";

type Bytes = Parameters<ICryptoInterface["chaCha20Poly1305Encrypt"]>[0];

/** Below this many bytes the package's WebAssembly ChaCha20-Poly1305 is used, as in its own default. */
export const NODE_CIPHER_MIN_BYTES = 1200;
const TAG_BYTES = 16;
const CIPHER = "chacha20-poly1305";

/** A session key and the OpenSSL key made from it; the copy guards against the caller reusing the array. */
interface Imported {
  readonly bytes: Uint8Array;
  readonly key: KeyObject;
}

const imported = new WeakMap<Uint8Array, Imported>();

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The `KeyObject` of session key `k`, made once per key array (and again if its bytes ever change). */
export function sessionKey(k: Uint8Array): KeyObject {
  const hit = imported.get(k);
  if (hit !== undefined && sameBytes(hit.bytes, k)) return hit.key;
  const entry = { bytes: Uint8Array.from(k), key: createSecretKey(k) };
  imported.set(k, entry);
  return entry.key;
}

function chunks(data: Bytes): Iterable<Uint8Array> {
  return data instanceof Uint8Array ? [data] : data;
}

function seal(plaintext: Bytes, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Uint8Array {
  const cipher = createCipheriv(CIPHER, sessionKey(k), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(ad, { plaintextLength: plaintext.byteLength });
  const out: Uint8Array[] = [];
  for (const c of chunks(plaintext)) out.push(cipher.update(c));
  out.push(cipher.final(), cipher.getAuthTag());
  return Buffer.concat(out);
}

function open(ciphertext: Bytes, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Uint8Array {
  const textBytes = ciphertext.byteLength - TAG_BYTES;
  if (textBytes < 0) throw new Error("Invalid chacha20poly1305 decryption: shorter than its tag");
  const decipher = createDecipheriv(CIPHER, sessionKey(k), nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(ad, { plaintextLength: textBytes });
  decipher.setAuthTag(ciphertext.subarray(textBytes));
  const text = ciphertext instanceof Uint8Array ? ciphertext.subarray(0, textBytes) : ciphertext.sublist(0, textBytes);
  const out: Uint8Array[] = [];
  for (const c of chunks(text)) out.push(decipher.update(c));
  out.push(decipher.final()); // throws when the tag does not match
  return Buffer.concat(out);
}

/** Noise's crypto for our libp2p nodes: the package's default, with session keys imported once. */
export const noiseCrypto: ICryptoInterface = {
  ...defaultCrypto,
  chaCha20Poly1305Encrypt(plaintext, nonce, ad, k) {
    if (plaintext.byteLength < NODE_CIPHER_MIN_BYTES) return defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k);
    return seal(plaintext, nonce, ad, k);
  },
  chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst) {
    if (ciphertext.byteLength < NODE_CIPHER_MIN_BYTES) return defaultCrypto.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst);
    return open(ciphertext, nonce, ad, k);
  },
};
