// `heddle init`: everything a local cluster needs, one folder per peer — a key, a token and a config.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { privateKeyToProtobuf } from "@libp2p/crypto/keys";
import { edgeId, freeListenPort, generatePeerKey, peerIdOf } from "@heddle/node";
import { AttachmentId, GroupId, Weight } from "@heddle/ledger";
import { CONFIG_VERSION, type PeerConfigDocument } from "./config-schema.ts";
import { genesisWeightProblems } from "./weight-sum.ts";

/**
 * A new API bearer token: 32 random bytes, base64url (43 characters), never starting with `-`. One token in 64
 * did, and a command line then reads `--token -…` as a missing value (`util.parseArgs` refuses an option value that
 * looks like an option), so `heddle … --token "$(cat token)"` failed with a usage error for that peer alone.
 */
export function newApiToken(random: (bytes: number) => Buffer = randomBytes): string {
  for (;;) {
    const token = random(32).toString("base64url");
    if (!token.startsWith("-")) return token;
  }
}

/** Options of {@link initCluster}. */
export interface InitOptions {
  /** The folder to create (must not exist, or be empty). */
  readonly dir: string;
  /** Number of peers, 1 … {@link MAX_INIT_PEERS}. */
  readonly peers: number;
  readonly mode: "static" | "governed";
  /** First port: peer i gets p2p port base+i and API port base+100+i. Default: ports free now, outside the ephemeral range. */
  readonly basePort?: number;
  /** Static mode: root supply of every peer (default 1000). */
  readonly supply?: bigint;
  /** Static mode: the genesis tree, `parent>child=weight` items separated by commas (`child=weight` hangs under the root). */
  readonly tree?: string;
  readonly root?: string;
  /** The policy quantum, the largest single grant (default 10). */
  readonly quantum?: bigint;
}

/** One peer written by init. */
export interface InitPeer {
  readonly index: number;
  readonly id: string;
  readonly dir: string;
  readonly config: string;
  readonly apiUrl: string;
  readonly p2pAddr: string;
}

/** Most peers `init` writes. */
export const MAX_INIT_PEERS = 64;
/** The default static tree. */
export const DEFAULT_STATIC_TREE = "tenant-a=3,tenant-b=1";
/** The config file name inside a peer folder. */
export const CONFIG_FILE = "heddle.json";

/** A spec problem in `--tree`. */
export class TreeSpecError extends Error {}

/** Parses a `--tree` spec into topology entries (edge ids from `edgeId(parent, child)`). */
export function parseTreeSpec(spec: string, root: string): { id: string; parent: string; child: string; weight: string }[] {
  const out: { id: string; parent: string; child: string; weight: string }[] = [];
  for (const raw of spec.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const m = /^(?:([^>=,\s]+)>)?([^>=,\s]+)=([1-9][0-9]*(?:\/[1-9][0-9]*)?)$/.exec(item);
    if (m === null) throw new TreeSpecError(`--tree item "${item}" is not parent>child=weight (or child=weight under the root), e.g. tenant-a=3,tenant-a>batch=1`);
    const parent = m[1] ?? root;
    const child = m[2]!;
    out.push({ id: edgeId(parent, child), parent, child, weight: m[3]! });
  }
  if (out.length === 0) throw new TreeSpecError("--tree names no edge");
  // every group must hang from the root through one parent, else the peers would refuse the genesis at start
  // (node: "does not hang from the root") after init had reported success
  const parentOf = new Map<string, string>();
  for (const e of out) {
    if (e.child === root) throw new TreeSpecError(`--tree item "${e.parent}>${e.child}" makes the root ${JSON.stringify(root)} a child; the root has no parent`);
    const before = parentOf.get(e.child);
    if (before !== undefined) throw new TreeSpecError(`--tree gives group "${e.child}" two parents ("${before}" and "${e.parent}"); each group hangs from one`);
    parentOf.set(e.child, e.parent);
  }
  for (const e of out) {
    const seen = new Set<string>([e.child]);
    for (let g = e.parent; g !== root; g = parentOf.get(g)!) {
      if (!parentOf.has(g)) throw new TreeSpecError(`--tree: group "${g}" (the parent of "${e.child}") does not hang from the root ${JSON.stringify(root)}; add an item for it, e.g. ${g}=1, or write ${e.child}=${e.weight}`);
      if (seen.has(g)) throw new TreeSpecError(`--tree: groups ${[...seen].map((x) => `"${x}"`).join(", ")} form a cycle; each group must descend from the root`);
      seen.add(g);
    }
  }
  // and each parent's children's weights must sum within int64, else start refuses the config (and no round at that
  // parent could run): say so here, at the item that tips it over
  const records = out.map((e) => {
    const [n, d] = e.weight.split("/");
    try {
      return { id: AttachmentId(e.id), parent: GroupId(e.parent), child: GroupId(e.child), weight: Weight.of(BigInt(n!), BigInt(d ?? "1")) };
    } catch {
      throw new TreeSpecError(`--tree item "${e.parent}>${e.child}=${e.weight}": a weight's parts must be 1 … 2^63 − 1`);
    }
  });
  for (const bad of genesisWeightProblems(records)) {
    const e = out[bad.index]!;
    throw new TreeSpecError(`--tree item "${e.parent}>${e.child}=${e.weight}": ${bad.message}`);
  }
  return out;
}

function writeSecret(path: string, data: Uint8Array | string): void {
  writeFileSync(path, data, { mode: 0o600, flag: "wx" });
  chmodSync(path, 0o600);
}

/** Voters for `n` peers: 1, 3 or 5 (an even voter set adds no fault tolerance). */
export function votersFor(n: number): number {
  return n >= 5 ? 5 : n >= 3 ? 3 : 1;
}

/** Writes a local cluster: `dir/peer-<i>/{peer.key, token, heddle.json}`. Throws on a non-empty `dir`. */
export async function initCluster(o: InitOptions): Promise<InitPeer[]> {
  if (!Number.isInteger(o.peers) || o.peers < 1 || o.peers > MAX_INIT_PEERS) throw new RangeError(`--peers must be 1 … ${MAX_INIT_PEERS}`);
  const dir = resolve(o.dir);
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new Error(`${dir} is not empty; init writes a fresh cluster (pick a new folder)`);
  const root = o.root ?? "root";
  const topology = o.mode === "static" ? parseTreeSpec(o.tree ?? DEFAULT_STATIC_TREE, root) : [];
  mkdirSync(dir, { recursive: true, mode: 0o700 });

  const peers: { id: string; key: Uint8Array; p2pPort: number; apiPort: number }[] = [];
  const picked = new Set<number>();
  for (let i = 1; i <= o.peers; i++) {
    const key = await generatePeerKey();
    const p2pPort = o.basePort !== undefined ? o.basePort + i : await freeListenPort(picked);
    const apiPort = o.basePort !== undefined ? o.basePort + 100 + i : await freeListenPort(picked);
    peers.push({ id: peerIdOf(key), key: privateKeyToProtobuf(key), p2pPort, apiPort });
  }
  const roster = peers.map((p) => ({ id: p.id, addrs: [`/ip4/127.0.0.1/tcp/${p.p2pPort}`] }));
  const nVoters = votersFor(o.peers);
  const mode: PeerConfigDocument["mode"] =
    o.mode === "static"
      ? { kind: "static", root, supply: Object.fromEntries(peers.map((p) => [p.id, (o.supply ?? 1000n).toString()])), topology }
      : { kind: "governed", root, voters: peers.slice(0, nVoters).map((p) => p.id), learners: peers.slice(nVoters).map((p) => p.id) };

  const out: InitPeer[] = [];
  peers.forEach((p, k) => {
    const i = k + 1;
    const pdir = join(dir, `peer-${i}`);
    mkdirSync(pdir, { mode: 0o700 });
    writeSecret(join(pdir, "peer.key"), p.key);
    writeSecret(join(pdir, "token"), `${newApiToken()}\n`);
    const doc: PeerConfigDocument = {
      version: CONFIG_VERSION,
      identity: { keyFile: "peer.key" },
      p2p: { listen: [`/ip4/127.0.0.1/tcp/${p.p2pPort}`], announce: [`/ip4/127.0.0.1/tcp/${p.p2pPort}`] },
      roster,
      mode,
      store: { dir: "store" },
      api: { listen: `127.0.0.1:${p.apiPort}`, tokenFile: "token" },
      node: { quantum: (o.quantum ?? 10n).toString(), maxHoldingsPerPeer: "1000000", antiEntropyIntervalMs: 1000, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 3000 },
      scheduler: { intervalMs: 100 },
      log: { format: "text", level: "info" },
    };
    const config = join(pdir, CONFIG_FILE);
    writeFileSync(config, `${JSON.stringify(doc, null, 2)}\n`, { flag: "wx" });
    out.push({ index: i, id: p.id, dir: pdir, config, apiUrl: `http://127.0.0.1:${p.apiPort}`, p2pAddr: roster[k]!.addrs[0]! });
  });
  return out;
}
