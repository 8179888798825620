// The hand-driven replication core the replication-core-* and replication-driver-shell tests share: one genesis
// and one constructor, each file passing the timings it pins. Functions only — nothing is built while a test file loads (docs/mutation.md,
// "Build fixtures inside the test").
import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, ReplicaId, Weight } from "@heddle/ledger";
import { REPLICATION_DEFAULTS, type ReplicationConfig } from "../../src/replication/config.ts";
import { ReplicationCore, type ReplicationCoreOptions } from "../../src/replication/core.ts";

/** Genesis of `replicas` (each holding 1 000) with edge e1 (root → g1) prepared and activated; A and B unless told. */
export function genesis(replicas: readonly string[] = ["A", "B"]): EntitlementLedger {
  let g = EntitlementLedger.bootstrap(GroupId("root"), new Map(replicas.map((r) => [ReplicaId(r), 1_000n])), "heddle-static-genesis");
  const p = g.prepare({ id: AttachmentId("e1"), parent: GroupId("root"), child: GroupId("g1"), weight: Weight.of(1n) });
  if (!p.ok) throw new Error(p.refusal.kind);
  g = g.join(p.patch);
  const a = g.activate(AttachmentId("e1"));
  if (!a.ok) throw new Error(a.refusal.kind);
  return g.join(a.patch);
}

/**
 * The timings a hand-driven core runs on: the defaults with anti-entropy off (so a test sees the core's own
 * bookkeeping, not a repair), deltas sent unbatched, a resend after 200 ms and a full-state retry after 300 ms;
 * `over` sets what a file pins besides.
 */
export function handConfig(over: Partial<ReplicationConfig> = {}): ReplicationConfig {
  return { ...REPLICATION_DEFAULTS, resendRetryMs: 200, fullStateRetryMs: 300, deltaBatchMs: 0, antiEntropy: false, ...over };
}

/** Core "A", incarnation 1, clock at 0, at `genesis()` unless `over` says otherwise; `config` unless `over.config`. */
export function handCore(
  config: ReplicationConfig,
  over: Partial<ReplicationCoreOptions> = {},
): { core: ReplicationCore; replica: LedgerReplica; g: EntitlementLedger } {
  const g = over.genesis ?? genesis();
  const replica = over.replica ?? new LedgerReplica(g);
  const c = new ReplicationCore({ self: "A", incarnation: 1, replica, genesis: g, config, random: () => 0, now: 0, restarted: false, valueBudget: 1 << 20, ...over });
  return { core: c, replica, g };
}
