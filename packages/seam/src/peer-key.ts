import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from "@libp2p/crypto/keys";
import type { PrivateKey } from "@libp2p/interface";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";

/**
 * Loads the Ed25519 peer key stored at `path`, or generates one and stores it there (mode 0600).
 * The key is the peer's identity: its peer id string is the `ReplicaId`, so it must survive restarts;
 * losing the file means a new identity.
 */
export async function loadOrCreatePeerKey(path: string): Promise<PrivateKey> {
  if (existsSync(path)) return privateKeyFromProtobuf(readFileSync(path));
  const key = await generateKeyPair("Ed25519");
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, privateKeyToProtobuf(key), { mode: 0o600, flag: "wx" });
  chmodSync(path, 0o600);
  return key;
}

/** The peer id string (the `ReplicaId`) of a private key. */
export function peerIdOf(key: PrivateKey): string {
  return peerIdFromPrivateKey(key).toString();
}

/** A fresh in-memory Ed25519 key (tests and benchmarks). */
export async function generatePeerKey(): Promise<PrivateKey> {
  return generateKeyPair("Ed25519");
}
