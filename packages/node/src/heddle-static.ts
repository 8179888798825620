import { EntitlementLedger, fnv1a64, LedgerOverflowError } from "@heddle/ledger";
import type { AttachmentRecord, GroupId, ReplicaId } from "@heddle/ledger";
import type { Seam } from "@heddle/seam";
import { resolveHeddleConfig, type HeddleConfig } from "./heddle-config.ts";
import { Node, type HeddleNode } from "./heddle-node.ts";
import { checkRestoredReads } from "./replication/read-check.ts";
import { restoreLedger } from "./store.ts";
import { prepareAndActivate } from "./topology-builder.ts";

const INT64_MAX = (1n << 63n) - 1n;

/** The nonce every static peer bootstraps with, so all derive the same mint ids (node.md §13.1). */
export const STATIC_GENESIS_NONCE = "heddle-static-genesis";

/** Static inputs that cannot start a node (node.md §13.1); the message names the offending input. */
export class BootstrapError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BootstrapError";
  }
}

/** What `heddleStatic` starts from (node.md §13). */
export interface StaticOptions {
  /** The node claims tags 1–3 on `muxSeam(seam)`. */
  readonly seam: Seam;
  /** Must equal `seam.self`. */
  readonly self: ReplicaId;
  readonly root: GroupId;
  /** The roster: every peer with its root supply (≥ 0). Empty = the governed start (genesis `EMPTY`). */
  readonly supply: ReadonlyMap<ReplicaId, bigint>;
  /** Initial edges, all prepared and activated at genesis. */
  readonly topology: readonly AttachmentRecord[];
  readonly config: HeddleConfig;
}

/**
 * The genesis ledger of node.md §13.1 steps 2–3: `bootstrap(root, supply, "heddle-static-genesis")`, then
 * each record, sorted by id, prepared and activated. A pure function of its inputs, so every peer given
 * the same inputs computes byte-identical canonical bytes. Empty supply and topology give `EMPTY`.
 * Throws {@link BootstrapError} when a record is refused or a group does not hang from `root`.
 */
export function staticGenesis(root: GroupId, supply: ReadonlyMap<ReplicaId, bigint>, topology: readonly AttachmentRecord[]): EntitlementLedger {
  let genesis: EntitlementLedger;
  try {
    genesis = supply.size === 0 ? EntitlementLedger.EMPTY : EntitlementLedger.bootstrap(root, supply, STATIC_GENESIS_NONCE);
  } catch (e) {
    throw new BootstrapError(`bootstrap(${JSON.stringify(root)}) failed: ${(e as Error).message}`, { cause: e });
  }
  const sorted = [...topology].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const r = prepareAndActivate(genesis, sorted);
  if (!r.ok) throw new BootstrapError(`topology record ${JSON.stringify(r.edge)}: ${r.step} refused: ${r.refusal.kind} (${r.refusal.message})`);
  // A tree that does not hang from the root would start detached (ledger.md ⟨1.1⟩ §5.2: a top group that
  // is not the mint root reads 0 and refuses every mutator), and stay so on every peer.
  for (const g of r.ledger.groups()) {
    if (r.ledger.lineageOf(g) === null) {
      throw new BootstrapError(`topology: group ${JSON.stringify(g)} does not hang from the root ${JSON.stringify(root)}; every edge must descend from it`);
    }
  }
  return r.ledger;
}

interface SharedStart {
  root: GroupId;
  genesis: EntitlementLedger;
  digest: string;
  /** The roster's ids (read-only, shared by every peer started from the same `supply`). */
  roster: ReadonlySet<ReplicaId>;
}

const genesisCache = new WeakMap<ReadonlyMap<ReplicaId, bigint>, WeakMap<readonly AttachmentRecord[], SharedStart>>();

/**
 * The genesis, its digest and the roster. Peers started in one process from the same `supply` and
 * `topology` objects (a simulation of many peers) share one immutable genesis value and one roster set
 * instead of each computing them: with a roster of 1 000 that is 1 000 mints bootstrapped, indexed,
 * encoded and hashed once, not 1 000 times, and one 1 000-id set instead of 1 000 of them.
 * The inputs are read once; a caller that mutates them between calls gets the first genesis.
 */
function sharedGenesis(root: GroupId, supply: ReadonlyMap<ReplicaId, bigint>, topology: readonly AttachmentRecord[]): SharedStart {
  let byTopology = genesisCache.get(supply);
  if (byTopology === undefined) genesisCache.set(supply, (byTopology = new WeakMap()));
  const hit = byTopology.get(topology);
  if (hit !== undefined && hit.root === root) return hit;
  const genesis = staticGenesis(root, supply, topology);
  const entry: SharedStart = { root, genesis, digest: fnv1a64(genesis.encode()), roster: new Set(supply.keys()) };
  byTopology.set(topology, entry);
  return entry;
}

function validateStatic(o: StaticOptions): void {
  if (typeof o !== "object" || o === null) throw new BootstrapError("heddleStatic needs an options object");
  if (typeof o.seam !== "object" || o.seam === null) throw new BootstrapError("seam: missing");
  if (typeof o.self !== "string" || o.self.length === 0) throw new BootstrapError("self: must be a non-empty ReplicaId");
  if (o.self !== o.seam.self) throw new BootstrapError(`self: ${JSON.stringify(o.self)} differs from seam.self ${JSON.stringify(o.seam.self)}`);
  if (typeof o.root !== "string" || o.root.length === 0) throw new BootstrapError("root: must be a non-empty GroupId");
  if (!(o.supply instanceof Map)) throw new BootstrapError("supply: must be a Map<ReplicaId, bigint>");
  if (o.supply.size > 0 && !o.supply.has(o.self)) throw new BootstrapError(`supply: self ${JSON.stringify(o.self)} is not in the roster`);
  let sum = 0n;
  for (const [r, a] of o.supply) {
    if (typeof r !== "string" || r.length === 0) throw new BootstrapError("supply: replica ids must be non-empty strings");
    if (typeof a !== "bigint" || a < 0n) throw new BootstrapError(`supply: amount of ${JSON.stringify(r)} must be a bigint ≥ 0, got ${String(a)}`);
    sum += a;
    if (sum > INT64_MAX) throw new BootstrapError("supply: the total exceeds 2^63 − 1");
  }
  if (!Array.isArray(o.topology)) throw new BootstrapError("topology: must be an array of AttachmentRecord");
  if (o.supply.size === 0 && o.topology.length > 0) throw new BootstrapError("topology: an empty supply (governed start) takes no topology");
  const ids = new Set<string>();
  for (const rec of o.topology) {
    if (typeof rec !== "object" || rec === null || typeof rec.id !== "string") throw new BootstrapError("topology: every record needs an id");
    if (ids.has(rec.id)) throw new BootstrapError(`topology: record id ${JSON.stringify(rec.id)} appears twice`);
    ids.add(rec.id);
  }
}

/**
 * node.md §11's configured worst case `n·E + q` must be an int64 for the roster this node starts with (§12: a
 * config the node cannot run is refused at construction, naming the field). A governed start counts `n = 1`; peers
 * enrolled later can still take it past int64, where `boundMetrics` saturates it.
 */
function checkWorstCase(rosterSize: number, E: bigint, q: bigint): void {
  const n = BigInt(Math.max(1, rosterSize));
  if (n * E + q <= INT64_MAX) return;
  const largest = (INT64_MAX - q) / n;
  if (largest < 1n) {
    throw new RangeError(
      `HeddleConfig.policy.quantum is ${q}: with ${n} roster peers, n·HeddleConfig.maxHoldingsPerPeer + the quantum (node.md §11's ` +
        `configured worst case) leaves 2^63 − 1 whatever maxHoldingsPerPeer is; set the quantum to at most ${INT64_MAX - n}`,
    );
  }
  throw new RangeError(
    `HeddleConfig.maxHoldingsPerPeer is ${E}: with ${n} roster peers, n·maxHoldingsPerPeer + HeddleConfig.policy.quantum (${q}) — ` +
      `node.md §11's configured worst case — leaves 2^63 − 1, so no bound could be reported; set maxHoldingsPerPeer to at most ${largest}`,
  );
}

/**
 * Starts a static-mode peer (node.md §13): validates the inputs (→ {@link BootstrapError}; a bad config field →
 * `RangeError` naming it, §12, including a `maxHoldingsPerPeer` whose bound `n·E + q` leaves int64 for the roster), computes the genesis, boots the store (→ `StoreMismatchError` for a
 * store of another replica or genesis), restores `genesis ⊔ snapshot ⊔ patches` and the open
 * reservations, claims channels 1–3 and starts replication, the demand board and liveness. Synchronous.
 */
export function heddleStatic(opts: StaticOptions): HeddleNode {
  validateStatic(opts);
  const config = resolveHeddleConfig(opts.config); // RangeError naming the field (§12)
  checkWorstCase(opts.supply.size, config.maxHoldingsPerPeer, config.policy.quantum);
  const { genesis, digest, roster } = sharedGenesis(opts.root, opts.supply, opts.topology);
  const store = config.store;
  const { epoch, persisted } = store.boot(opts.self, digest);
  if (!Number.isSafeInteger(epoch) || epoch < 0 || epoch >= 2 ** 31) {
    store.close();
    throw new BootstrapError(`store: boot counter ${epoch} is outside 0 … 2^31 − 1 (the demand clock's epoch)`);
  }
  let initial: EntitlementLedger;
  try {
    initial = restoreLedger(genesis, persisted);
    checkRestoredReads(initial);
  } catch (e) {
    store.close();
    if (e instanceof LedgerOverflowError) {
      // Refused rather than repaired (node.md §9.3: the state is genesis ⊔ snapshot ⊔ every row; a snapshot
      // cannot be split, and dropping rows could drop this replica's own writes and let it spend them twice).
      // Nor may the remedy rebuild this id from less than this store: an older backup or an empty store starts
      // its own slots below what it already published, and nothing holds it back from spending before it hears
      // from its peers (node.md §9's double spend) — the only safe way back into service is a new identity, as
      // governed.md R-P5 prescribes for a wiped Raft store.
      throw new BootstrapError(
        `store: the restored ledger makes a ledger-wide read leave int64 (${e.message}); it holds an inbound value ` +
          `that a version before the join's total check accepted. Keep this store as it is, and do not start replica ` +
          `${JSON.stringify(opts.self)} from an older backup or an empty store: either rebuilds its own slots below what ` +
          "it already published, and it would spend those units a second time (node.md §9). To serve again, run this " +
          "peer under a new replica id with a new, empty store (with libp2p: a new key file); in governed mode enrol " +
          "the new id, in static mode the roster is part of the genesis, so a new id needs a new roster on every peer. " +
          `What ${JSON.stringify(opts.self)} holds stays stranded in its own slots, spendable by no one else (node.md §10)`,
        { cause: e },
      );
    }
    throw e;
  }
  const restarted = epoch > 1 || persisted.snapshot !== null || persisted.patches.length > 0 || persisted.reservations.length > 0;
  try {
    return new Node({
      self: opts.self,
      seam: opts.seam,
      config,
      store,
      epoch,
      genesis,
      genesisDigest: digest,
      initial,
      restarted,
      roster,
      restored: persisted.reservations,
      ...(persisted.keeperSlot !== undefined ? { restoredKeeperSlot: persisted.keeperSlot } : {}),
      rowsAtBoot: persisted.patches.length,
      rowBytesAtBoot: persisted.patches.reduce((n, p) => n + p.length, 0),
      snapshotBytesAtBoot: persisted.snapshot?.length ?? 0,
    });
  } catch (e) {
    store.close();
    throw e;
  }
}
