// The schema of one peer's config file (JSON). Documented field by field in the package README.
import { Type, type Static } from "@sinclair/typebox";
import { Amount, Id, Obj, WeightText } from "./schema.ts";
import { EtcdLogSchema } from "./etcd-config.ts";

/** The config file format version this build reads. */
export const CONFIG_VERSION = 1;

const Multiaddr = Type.String({ minLength: 1, maxLength: 512, pattern: "^/", "x-expected": "a multiaddr such as /ip4/127.0.0.1/tcp/7101" });

/** One peer of the cluster: its peer id (the `ReplicaId`) and the multiaddrs to dial it on. */
export const RosterEntrySchema = Obj({
  id: Id("the peer id (libp2p, base58), equal to the peer's ReplicaId", 128),
  addrs: Type.Array(Multiaddr, { maxItems: 16, description: "multiaddrs to dial the peer on (may be empty if it dials us)" }),
});

/** One edge of a static genesis topology. */
export const TopologyEntrySchema = Obj({
  id: Id("the edge's AttachmentId"),
  parent: Id("the parent group"),
  child: Id("the child group"),
  weight: WeightText("the edge's weight under its parent"),
});

/** `mode` for a static cluster (node.md §13): a fixed roster with pre-partitioned supply and topology. */
export const StaticModeSchema = Obj(
  {
    kind: Type.Literal("static"),
    root: Id("the root group"),
    supply: Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Amount("root supply held by this peer id"), {
      description: "root supply per peer id; every peer of the roster must be named (0 is allowed)",
      maxProperties: 1024,
    }),
    topology: Type.Array(TopologyEntrySchema, { maxItems: 10_000, description: "edges prepared and activated at genesis" }),
  },
  { description: "static mode: supply and topology fixed by the genesis, identical on every peer" },
);

/** `mode` for a governed cluster (governed.md): supply and topology come from the Raft log. */
export const GovernedModeSchema = Obj(
  {
    kind: Type.Literal("governed"),
    root: Id("the root group"),
    voters: Type.Array(Id("a voter's peer id", 128), { maxItems: 7, description: "Raft voters (3 or 5 recommended; at least one unless mode.etcd is set)" }),
    learners: Type.Array(Id("a learner's peer id", 128), { maxItems: 1024, description: "Raft learners (apply the log, never vote)" }),
    raft: Type.Optional(
      Obj({
        electionTimeoutMinMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 60_000 })),
        electionTimeoutMaxMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 120_000 })),
        heartbeatIntervalMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
        snapshotMaxBytes: Type.Optional(
          Type.Integer({ minimum: 1_048_576, maximum: 4_294_967_296, description: "largest snapshot this member assembles when a leader sends it one (bytes; default 64 MiB). Below the leader's snapshot, this member cannot catch up: GET /v1/status shows control.snapshotStalls naming the size to raise it to" }),
        ),
      }),
    ),
    etcd: Type.Optional(EtcdLogSchema),
    claims: Type.Optional(
      Obj(
        {
          roster: Type.Optional(
            Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 1_000_000, description: "the keys that exist; a take of any other key is refused naming the roster (claims.md §1). Absent: any key may be taken" }),
          ),
          capacity: Type.Optional(
            Type.Record(Type.String({ minLength: 1, maxLength: 1024 }), Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()], { "x-expected": "a whole number ≥ 1, or null for any number of holders" }), {
              maxProperties: 1_000_000,
              description: "per key: how many shared holders at once (N: a pool of N units), or null for any number (a reader/writer lock: readers shared, the writer exclusive). An unlisted key has capacity 1",
            }),
          ),
          maxPerHolder: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "most keys one holder may hold at once (claims.md rule 4). Absent: unbounded" })),
        },
        { description: "the granted claims table's options (claims.md §1–2): identical on every peer and fixed for the life of the control log — every peer re-decides the log's takes with them" },
      ),
    ),
  },
  { description: "governed mode: mint, reshape, enroll and claims through the Raft log" },
);

/** The node's tunables (node.md §12); amounts as integers or decimal strings. */
export const NodeTuningSchema = Obj({
  quantum: Type.Optional(Amount("largest single grant (policy quantum)", { minimum: 1 })),
  maxHoldingsPerPeer: Type.Optional(Amount("E of node.md §11: the most one peer is expected to hold at a parent", { minimum: 1 })),
  perChildOutstandingCap: Type.Optional(Amount("largest outstanding entitlement per child")),
  sleeperCredit: Type.Optional(Amount("virtual-time credit a waking child may keep")),
  demandTtlMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400_000 })),
  antiEntropyIntervalMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 3_600_000 })),
  heartbeatIntervalMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 600_000 })),
  heartbeatTimeoutMs: Type.Optional(Type.Integer({ minimum: 20, maximum: 3_600_000 })),
  reconnectWindowMs: Type.Optional(Type.Integer({ minimum: 20, maximum: 86_400_000 })),
  maxFrameBytes: Type.Optional(Type.Integer({ minimum: 4096, maximum: 16 * 1_048_576 })),
  maxGrantsPerSchedule: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
  compactAfterPatches: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
  compactAfterPatchBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_073_741_824 })),
});

const Ms = (description: string, max = 86_400_000) => Type.Optional(Type.Integer({ minimum: 1, maximum: max, description }));

/** Keeper and advisory claims (claims.md §3–4): the keeper parts with their rules, timings and bounds. */
export const ClaimsConfigSchema = Obj({
  keeper: Type.Optional(
    Obj({
      parts: Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.Union([Type.Literal("follows-you"), Type.Literal("stays-put")]), {
        maxProperties: 1024,
        description: "each keeper part and its rule, identical on every peer",
      }),
      renewEveryMs: Ms("how often this peer renews its open keeper claims (default 60000)"),
      aliveMs: Ms("how long a claim is alive after its last renewal (default 300000)"),
      settlingMs: Ms("how long a peer keeps a part before it may act (default 120000)"),
      unclosedMs: Ms("how long a lapsed unclosed stays-put claim still holds (default 86400000)", 30 * 86_400_000),
      othersHeardMs: Ms("how recently every other claimant must be heard for `sure` (default 120000)"),
    }),
  ),
  advisory: Type.Optional(Obj({ ttlMs: Ms("the lease of an advisory claim when a call names none (default 300000)") })),
  antiEntropyMs: Ms("how often this peer re-sends its own claim slots to every peer (default 30000)"),
  maxClaimsPerSlot: Type.Optional(Type.Integer({ minimum: 1, maximum: 4096, description: "most claims one peer's keeper or advisory slot carries (default 4096)" })),
});

/** The whole config file. */
export const PeerConfigSchema = Obj({
  version: Type.Literal(CONFIG_VERSION, { description: "config format version" }),
  identity: Obj({ keyFile: Type.String({ minLength: 1, description: "Ed25519 peer key (libp2p protobuf), mode 0600; relative to this file" }) }),
  p2p: Obj({
    listen: Type.Array(Multiaddr, { minItems: 1, maxItems: 16, description: "multiaddrs libp2p listens on" }),
    announce: Type.Optional(Type.Array(Multiaddr, { maxItems: 16, description: "multiaddrs other peers dial this one on (written into their rosters by init; shown by status)" })),
  }),
  roster: Type.Array(RosterEntrySchema, { minItems: 1, maxItems: 1024, description: "every peer of the cluster, this one included" }),
  mode: Type.Union([StaticModeSchema, GovernedModeSchema]),
  store: Obj({
    dir: Type.String({ minLength: 1, description: "directory of the stores (ledger.sqlite, and in governed mode the Raft log); relative to this file" }),
    raftLog: Type.Optional(
      Type.Union([Type.Literal("auto"), Type.Literal("wal"), Type.Literal("sqlite")], {
        description: 'governed mode: the Raft log store — "wal" (raft-wal/, segmented log files), "sqlite" (raft.sqlite), or "auto" (default): raft.sqlite if the store already holds one, else "wal"',
      }),
    ),
  }),
  api: Obj({
    listen: Type.String({
      minLength: 3,
      maxLength: 300,
      pattern: "^(\\[[0-9a-fA-F:.]+\\]|[^:\\[\\]]+):[0-9]{1,5}$",
      "x-expected": 'host:port, e.g. "127.0.0.1:7201" (port 0 picks a free one)',
    }),
    tokenFile: Type.String({ minLength: 1, description: "file holding the bearer token every API call must carry; relative to this file" }),
    tls: Type.Optional(
      Obj({
        keyFile: Type.String({ minLength: 1, description: "PEM private key" }),
        certFile: Type.String({ minLength: 1, description: "PEM certificate chain" }),
      }),
    ),
  }),
  node: Type.Optional(NodeTuningSchema),
  claims: Type.Optional(ClaimsConfigSchema),
  scheduler: Type.Optional(
    Obj({
      intervalMs: Type.Optional(Type.Integer({ minimum: 5, maximum: 600_000, description: "how often this peer schedules every parent and refreshes standing demand" })),
    }),
  ),
  limits: Type.Optional(
    Obj({
      maxBodyBytes: Type.Optional(Type.Integer({ minimum: 256, maximum: 16 * 1_048_576, description: "largest request body (413 above)" })),
      controlTimeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000, description: "default bound on one control call (propose + apply)" })),
      maxStandingDemands: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, description: "most edges with standing demand held at once" })),
      maxIdempotencyEntries: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: "reserve results remembered for Idempotency-Key retries" })),
      maxConnections: Type.Optional(Type.Integer({ minimum: 8, maximum: 1_000_000, description: "most API connections open at once (dashboards' sockets included); a connection past it is closed at once and counted" })),
      requestTimeoutMs: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 3_600_000, description: "bound on receiving one request (headers and body); a slower one is answered 408 and its connection closed" })),
      maxOpenReservations: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: "most reservations open on this peer at once; a reserve past it is refused (409 too-many-open) until some complete or are cancelled" })),
    }),
  ),
  log: Type.Optional(
    Obj({
      format: Type.Optional(Type.Union([Type.Literal("text"), Type.Literal("json")])),
      level: Type.Optional(Type.Union([Type.Literal("debug"), Type.Literal("info"), Type.Literal("warn"), Type.Literal("error")])),
    }),
  ),
});

/** A config file as written (before paths are resolved and defaults filled in). */
export type PeerConfigDocument = Static<typeof PeerConfigSchema>;
/** One roster entry as written. */
export type RosterEntryDocument = Static<typeof RosterEntrySchema>;
/** Static `mode` as written. */
export type StaticModeDocument = Static<typeof StaticModeSchema>;
/** Governed `mode` as written. */
export type GovernedModeDocument = Static<typeof GovernedModeSchema>;

/** The top level with `mode` checked only for its `kind`, so a mode error names the field inside it. */
export const PeerConfigOuterSchema = Obj({
  ...PeerConfigSchema.properties,
  mode: Type.Object({ kind: Type.Union([Type.Literal("static"), Type.Literal("governed")]) }, { additionalProperties: true }),
});
