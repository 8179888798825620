// `/metrics`: the peer in the Prometheus text format, through prom-client. Everything the node already
// counts is read at scrape time (collect callbacks), so a scrape costs the spend path nothing; the daemon
// itself only observes what nobody else measures: store commit latency, API requests, claims refused.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { GroupId } from "@heddle/ledger";
import { FRAME_REFUSALS } from "@heddle/governed";
import type { HeddleStore, StoreTx } from "@heddle/node";
import { treeOf } from "./api.ts";
import { boundsOf } from "./data-plane.ts";
import { peerState, type PeerReads } from "./peer-reads.ts";
import type { CallWireStats } from "./call-wire.ts";

/** Most edges exported per scrape; a larger tree is cut here (and `heddle_metrics_edges_omitted` says by how many). */
export const MAX_METRIC_EDGES = 10_000;

/** Buckets of the store commit histogram, in seconds (an fsync'ed SQLite commit is ~0.1–10 ms). */
export const COMMIT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** Buckets of the API latency histogram, in seconds. */
export const REQUEST_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 10];

const PEER_STATES = ["up", "cut off", "lost", "not connected"] as const;
const RAFT_ROLES = ["leader", "follower", "candidate", "learner"] as const;

function num(x: bigint | string | number | null | undefined): number {
  if (x === null || x === undefined) return 0;
  return typeof x === "number" ? x : Number(x);
}

/** Sets a counter to a cumulative value read elsewhere (the node's own counters). */
function setCounter<T extends string>(c: Counter<T>, labels: Partial<Record<T, string>>, value: number): void {
  c.inc(labels, Math.max(0, value));
}

/** The options of {@link DaemonMetrics}. */
export interface DaemonMetricsOptions {
  /** Also export prom-client's process metrics (CPU, memory, event-loop lag); default true. */
  readonly processMetrics?: boolean;
}

/**
 * One peer's Prometheus registry (its own, so several daemons in one process do not mix). Construct it,
 * then `attach(reads)` once the peer is running; `text()` renders a scrape.
 */
export class DaemonMetrics {
  readonly registry = new Registry();
  #reads: PeerReads | null = null;
  #leaderChanges = 0;
  readonly #off: (() => void)[] = [];
  readonly #commit: Histogram<"outcome">;
  readonly #requests: Counter<"route" | "method" | "status">;
  readonly #latency: Histogram<"route" | "method" | "status">;
  readonly #claimsRefused: Counter<"reason">;
  readonly #connectionsDropped: Counter;

  constructor(o: DaemonMetricsOptions = {}) {
    const registers = [this.registry];
    // Registered first: its collect reads the peer once per scrape and sets every gauge and counter below
    // (prom-client renders metrics in registration order, so they are all current when rendered).
    const self = this;
    new Gauge({
      name: "heddle_up",
      help: "1 while this peer runs (its collection reads the peer for every other heddle_ metric of the scrape)",
      registers,
      collect() {
        this.set(self.#reads === null ? 0 : 1);
        if (self.#reads !== null) self.#collect(self.#reads);
      },
    });
    if (o.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: "heddle_" });

    this.#commit = new Histogram({ name: "heddle_store_commit_seconds", help: "Store commit latency: one durable transaction of the node's mutation path (node.md §9.1)", labelNames: ["outcome"], buckets: COMMIT_BUCKETS, registers });
    this.#requests = new Counter({ name: "heddle_api_requests_total", help: "API requests by route pattern, method and status", labelNames: ["route", "method", "status"], registers });
    this.#latency = new Histogram({ name: "heddle_api_request_duration_seconds", help: "API request latency by route pattern, method and status", labelNames: ["route", "method", "status"], buckets: REQUEST_BUCKETS, registers });
    this.#connectionsDropped = new Counter({ name: "heddle_api_connections_dropped_total", help: "API connections closed on arrival because limits.maxConnections were open", registers });
    this.#claimsRefused = new Counter({ name: "heddle_claims_refused_total", help: "Claim takes refused through this peer's API, by the first blocking reason", labelNames: ["reason"], registers });

    const edgeLabels = ["edge", "parent", "child"] as const;
    const g = {
      edges: new Gauge({ name: "heddle_group_edges", help: "Edges known on this peer", registers }),
      omitted: new Gauge({ name: "heddle_metrics_edges_omitted", help: `Edges left out of this scrape (more than ${MAX_METRIC_EDGES})`, registers }),
      weight: new Gauge({ name: "heddle_group_weight", help: "Weight of each edge (child under parent)", labelNames: edgeLabels, registers }),
      fair: new Gauge({ name: "heddle_group_fair_share", help: "Weighted fair share of each ACTIVE child among its ACTIVE siblings (w/W)", labelNames: edgeLabels, registers }),
      committedShare: new Gauge({ name: "heddle_group_committed_share", help: "Share of committed service of each ACTIVE child among its ACTIVE siblings (c/C)", labelNames: edgeLabels, registers }),
      committed: new Gauge({ name: "heddle_group_committed_service", help: "Committed service of each edge (issued − returned), in units", labelNames: edgeLabels, registers }),
      spent: new Gauge({ name: "heddle_group_spent", help: "Spent through each edge, in units", labelNames: edgeLabels, registers }),
      holdings: new Gauge({ name: "heddle_group_holdings", help: "Holdings of each group on this peer, in units", labelNames: ["group"], registers }),
      configured: new Gauge({ name: "heddle_bound_configured_worst_case", help: "n·E + q per parent (node.md §11)", labelNames: ["parent"], registers }),
      current: new Gauge({ name: "heddle_bound_current", help: "Σ holdings at the parent + q (node.md §11)", labelNames: ["parent"], registers }),
      observed: new Gauge({ name: "heddle_bound_observed_deviation", help: "max |(w_i/W)·T − c_i| over demanding children, per parent (node.md §11)", labelNames: ["parent"], registers }),
      pending: new Gauge({ name: "heddle_replication_pending_deltas", help: "Own deltas not yet acknowledged by every peer", registers }),
      failed: new Gauge({ name: "heddle_node_failed", help: "1 once the node has failed closed (node.md §9.4)", registers }),
      open: new Gauge({ name: "heddle_reservations_open", help: "Open reservations on this peer", registers }),
      minted: new Gauge({ name: "heddle_ledger_minted", help: "Σ minted supply on this peer's view", registers }),
      leafSpent: new Gauge({ name: "heddle_ledger_leaf_spent", help: "Σ spent at leaves (the conservation identity's third term)", registers }),
      gossipSlots: new Gauge({ name: "heddle_claims_gossip_slots", help: "Keeper and advisory slots this peer holds (one per peer that wrote one), by mode", labelNames: ["mode"], registers }),
      demandSlots: new Gauge({ name: "heddle_demand_slots", help: "Demand board slots this peer holds (its own and one per peer whose demand it heard)", registers }),
      peers: new Gauge({ name: "heddle_peers", help: "Peers of the roster by state as seen from here (this peer excluded)", labelNames: ["state"], registers }),
    };
    const c = {
      rejected: new Counter({ name: "heddle_frames_rejected_total", help: "Inbound frames dropped whole, by reason (node.md §4.3)", labelNames: ["reason"], registers }),
      framesIn: new Counter({ name: "heddle_replication_frames_in_total", help: "Ledger replication frames received, by message kind", labelNames: ["kind"], registers }),
      framesOut: new Counter({ name: "heddle_replication_frames_out_total", help: "Ledger replication frames sent, by message kind", labelNames: ["kind"], registers }),
      bytesOut: new Counter({ name: "heddle_replication_bytes_out_total", help: "Ledger replication bytes sent", registers }),
      deltas: new Counter({ name: "heddle_replication_deltas_published_total", help: "Ledger deltas this peer published", registers }),
      commits: new Counter({ name: "heddle_store_commits_total", help: "Store commits of the node's mutation path", registers }),
      gossipFrames: new Counter({ name: "heddle_claims_gossip_frames_total", help: "Keeper and advisory claim frames on channel 5, by direction (in: accepted; rejected ones count in heddle_frames_rejected_total)", labelNames: ["direction"], registers }),
      gossipAntiEntropy: new Counter({ name: "heddle_claims_gossip_anti_entropy_rounds_total", help: "Rounds in which this peer re-sent its own claim slots to every peer", registers }),
      commitFailures: new Counter({ name: "heddle_store_commit_failures_total", help: "Store commits that failed (the node then fails closed)", registers }),
      nodeSubscriberErrors: new Counter({
        name: "heddle_node_subscriber_errors_total",
        help: "Errors thrown by subscribers of the node's ledger, events, partitionEvents and unreachable streams (this daemon's log, dashboard and peer notes), caught so the node went on; heddle_liveness_subscriber_errors_total is the partitionEvents/unreachable part. Non-zero: a bug in the daemon — that subscriber missed the event (a log line, a dashboard update); the log's 'node caught an internal error' line names the stream",
        registers,
      }),
      livenessSubscriberErrors: new Counter({
        name: "heddle_liveness_subscriber_errors_total",
        help: "Errors thrown by partitionEvents / unreachable subscribers, caught so liveness detection (pings, timeouts, recovered, lost) went on; also counted in heddle_node_subscriber_errors_total. Non-zero: a bug in the daemon — the last liveness event it shows for a peer (cut off or lost) may be stale",
        registers,
      }),
      replicationSubscriberErrors: new Counter({
        name: "heddle_replication_subscriber_errors_total",
        help: "Errors thrown by the node's own handler of a ledger replication event (a merged delta, an anti-entropy tick), caught so the later events were still handled and the replication timer re-armed. Non-zero: a bug in the node — report it with the log's 'node caught an internal error' line (where=replication)",
        registers,
      }),
      seamLost: new Counter({
        name: "heddle_seam_frames_lost_total",
        help: "Outbound frames the libp2p seam queued but never wrote, by reason: send-error (the stream's write threw as it closed under us; the rest of the queue went on a new stream) or discarded (still queued when the peer disconnected or the seam closed). Replication, liveness and Raft re-send what matters; a rise while peers stay up means connections are breaking — look at the network between the peers",
        labelNames: ["reason"],
        registers,
      }),
      seamUnheard: new Counter({
        name: "heddle_seam_frames_unheard_total",
        help: "Inbound frames for a channel this peer claimed but did not listen on yet, dropped unread (a few while a peer starts are expected: a governed peer's Raft channel listens once its member runs). A rise while the peer runs means a protocol stopped listening — a bug; report it",
        registers,
      }),
      seamFramesIn: new Counter({ name: "heddle_seam_frames_in_total", help: "Frames the libp2p seam read whole off its inbound streams, every channel (before the channel mux and the protocols judge them: their refusals count in heddle_frames_rejected_total)", registers }),
      seamFramesOut: new Counter({ name: "heddle_seam_frames_out_total", help: "Frames the libp2p seam wrote to its outbound streams, every channel", registers }),
      seamBytesOut: new Counter({ name: "heddle_seam_bytes_out_total", help: "Bytes the libp2p seam wrote to its outbound streams, length prefixes included", registers }),
      seamMalformed: new Counter({
        name: "heddle_seam_frames_malformed_total",
        help: "Inbound frames the libp2p seam dropped for their framing, by reason: oversize (a length prefix above the seam's frame limit; the stream was aborted before any body byte was kept), bad-prefix (a length prefix unfinished after 8 bytes; the stream was aborted), cut (the stream ended inside a frame; the partial frame was dropped). The sender passed the roster gate, so non-zero oversize or bad-prefix means a peer runs another node.maxFrameBytes (set the same on every peer), an incompatible build, or is hostile; a few cut frames while peers restart are expected, a steady rise means connections break mid-frame — look at the network between the peers",
        labelNames: ["reason"],
        registers,
      }),
      seamHandlerErrors: new Counter({
        name: "heddle_seam_handler_errors_total",
        help: "Inbound frames whose handler (the channel mux or a protocol above it) threw; the frame was lost, the stream went on. Non-zero: a bug — a protocol must reject and count bad input, never throw; report it with the heddle version and which channels the peers use",
        registers,
      }),
      seamBackpressure: new Counter({
        name: "heddle_seam_backpressure_total",
        help: "Sends the libp2p seam refused because the peer's queue already held maxQueuedFrames (1 024) unwritten frames; the frame was dropped (replication, liveness and Raft re-send what matters). Non-zero: a peer, or the network to it, takes frames slower than this peer sends them — check that peer's CPU and event-loop lag (heddle_nodejs_eventloop_lag_seconds) and the link between the two",
        registers,
      }),
      seamRefused: new Counter({
        name: "heddle_seam_connections_refused_total",
        help: "Connections (and streams) the libp2p seam's gater refused: a peer id outside the roster (or one the seam blocks, as the demo's partitions do). Non-zero: something not in this peer's roster dials it — a cluster peer missing from this roster (give every peer the same roster) or a stranger (firewall the listen port)",
        registers,
      }),
      seamDials: new Counter({ name: "heddle_seam_dials_total", help: "Dials the libp2p seam made to roster peers that were not connected (redialed with backoff while they stay unreachable)", registers }),
      seamDialFailures: new Counter({
        name: "heddle_seam_dial_failures_total",
        help: "Dials of roster peers that failed. A rise while heddle_peers shows a peer not connected: it is down or unreachable at its roster address — check it runs, its addrs in the roster, and the firewall between the two",
        registers,
      }),
      validateOverflows: new Counter({
        name: "heddle_node_validate_overflows_total",
        help: "Anti-entropy ticks whose conflict check (validate) of the merged view left int64, caught so replication went on; conflicts go unreported while it lasts. Non-zero: the merged view holds a value the join check should have refused — a bug in the node; report it with the log's 'node caught an internal error' line (where=validate)",
        registers,
      }),
      schedules: new Counter({ name: "heddle_schedule_runs_total", help: "Schedule rounds this peer ran (node.md §7), one parent each", registers }),
      grants: new Counter({ name: "heddle_schedule_grants_total", help: "Grants (delegations to a child) the schedule rounds made", registers }),
      grantedUnits: new Counter({ name: "heddle_schedule_granted_units_total", help: "Units the schedule rounds delegated to children", registers }),
      delegateRefusals: new Counter({
        name: "heddle_schedule_delegate_refusals_total",
        help: "Grants the scheduler decided but the ledger refused to delegate; that round stopped at the refusal and the next retries. Non-zero: the policy and the ledger disagree about a parent's holdings or an edge's state — a bug; report it with GET /v1/tree of the parent",
        registers,
      }),
      compactions: new Counter({ name: "heddle_store_compactions_total", help: "Times the store folded its patch rows into a new snapshot (node.compactAfterPatches / compactAfterPatchBytes)", registers }),
      demandFrames: new Counter({ name: "heddle_demand_frames_total", help: "Demand board frames (node.md §6), by direction (in: accepted; rejected ones count in heddle_frames_rejected_total; out: broadcasts of this peer's slot)", labelNames: ["direction"], registers }),
      livenessOut: new Counter({ name: "heddle_liveness_frames_out_total", help: "Liveness frames sent (node.md §10), by kind: ping, pong", labelNames: ["kind"], registers }),
    };
    this.#gauges = g;
    this.#counters = c;
  }

  readonly #gauges: Record<string, Gauge<string>>;
  readonly #counters: Record<string, Counter<string>>;

  /** Reads the peer once and sets every gauge and node counter (the scrape's first metric calls this). */
  #collect(r: PeerReads): void {
    const g = this.#gauges;
    const c = this.#counters;
    for (const x of Object.values(g)) x.reset();
    for (const x of Object.values(c)) x.reset();

    const v = r.data.ledger.get();
    const t = treeOf(v, r.data.self, r.root, r.data);
    g["edges"]!.set(t.edges.length);
    g["omitted"]!.set(Math.max(0, t.edges.length - MAX_METRIC_EDGES));
    for (const e of t.edges.slice(0, MAX_METRIC_EDGES)) {
      const l = { edge: e.id, parent: e.parent ?? "", child: e.child ?? "" };
      if (e.weight !== null) {
        const [n, d] = e.weight.split("/");
        g["weight"]!.set(l, Number(n) / Number(d ?? "1"));
      }
      if (e.weightShare !== null) g["fair"]!.set(l, e.weightShare);
      if (e.serviceShare !== null) g["committedShare"]!.set(l, e.serviceShare);
      g["committed"]!.set(l, num(e.committedService));
      g["spent"]!.set(l, num(e.spent));
    }
    for (const x of t.groups.slice(0, MAX_METRIC_EDGES)) g["holdings"]!.set({ group: x.group }, num(x.holdings));
    const parents = [...new Set<string>([...v.groups(), ...v.roots()])].filter((p) => v.childrenOf(GroupId(p)).length > 0);
    for (const p of parents.slice(0, MAX_METRIC_EDGES)) {
      const b = boundsOf(r.data, GroupId(p));
      if ("unavailable" in b) continue;
      g["configured"]!.set({ parent: p }, num(b.configuredWorstCase));
      g["current"]!.set({ parent: p }, num(b.currentBound));
      g["observed"]!.set({ parent: p }, num(b.observedDeviation));
    }
    g["minted"]!.set(num(v.mintedTotal()));
    g["leafSpent"]!.set(num(v.leafSpentTotal()));

    const m = r.data.metrics?.();
    if (m !== undefined) {
      for (const [reason, n] of Object.entries(m.framesRejected)) setCounter(c["rejected"]!, { reason }, n);
      const led = m.peer.ledger;
      for (const [kind, n] of Object.entries(led.framesIn)) setCounter(c["framesIn"]!, { kind }, n);
      for (const [kind, n] of Object.entries(led.framesOut)) setCounter(c["framesOut"]!, { kind }, n);
      setCounter(c["bytesOut"]!, {}, led.bytesOut);
      setCounter(c["deltas"]!, {}, m.deltasPublished);
      g["pending"]!.set(m.pendingDeltas);
      setCounter(c["commits"]!, {}, m.commits);
      setCounter(c["commitFailures"]!, {}, m.commitFailures);
      setCounter(c["nodeSubscriberErrors"]!, {}, m.subscriberErrors);
      setCounter(c["livenessSubscriberErrors"]!, {}, m.peer.liveness.subscriberErrors);
      setCounter(c["replicationSubscriberErrors"]!, {}, led.subscriberErrors);
      setCounter(c["validateOverflows"]!, {}, m.validateOverflows);
      setCounter(c["schedules"]!, {}, m.schedules);
      setCounter(c["grants"]!, {}, m.grants);
      setCounter(c["grantedUnits"]!, {}, num(m.grantedUnits));
      setCounter(c["delegateRefusals"]!, {}, m.delegateRefusals);
      setCounter(c["compactions"]!, {}, m.compactions);
      setCounter(c["demandFrames"]!, { direction: "in" }, m.peer.demand.framesIn);
      setCounter(c["demandFrames"]!, { direction: "out" }, m.peer.demand.framesOut);
      g["demandSlots"]!.set(m.peer.demand.slots);
      setCounter(c["livenessOut"]!, { kind: "ping" }, m.peer.liveness.pingsOut);
      setCounter(c["livenessOut"]!, { kind: "pong" }, m.peer.liveness.pongsOut);
      g["failed"]!.set(m.failed ? 1 : 0);
      g["open"]!.set(m.reservationsOpen);
      const cl = m.peer.claims;
      if (cl !== undefined) {
        setCounter(c["gossipFrames"]!, { direction: "in" }, cl.framesIn);
        setCounter(c["gossipFrames"]!, { direction: "out" }, cl.framesOut);
        setCounter(c["gossipAntiEntropy"]!, {}, cl.antiEntropyRounds);
        g["gossipSlots"]!.set({ mode: "keeper" }, cl.keeperSlots);
        g["gossipSlots"]!.set({ mode: "advisory" }, cl.advisorySlots);
      }
    }

    const tr = r.transport?.();
    if (tr !== undefined) {
      setCounter(c["seamLost"]!, { reason: "send-error" }, tr.sendErrors);
      setCounter(c["seamLost"]!, { reason: "discarded" }, tr.discarded);
      setCounter(c["seamUnheard"]!, {}, tr.unheard);
      setCounter(c["seamFramesIn"]!, {}, tr.framesIn);
      setCounter(c["seamFramesOut"]!, {}, tr.framesOut);
      setCounter(c["seamBytesOut"]!, {}, tr.bytesOut);
      setCounter(c["seamMalformed"]!, { reason: "oversize" }, tr.oversize);
      setCounter(c["seamMalformed"]!, { reason: "bad-prefix" }, tr.badPrefix);
      setCounter(c["seamMalformed"]!, { reason: "cut" }, tr.cutFrames);
      setCounter(c["seamHandlerErrors"]!, {}, tr.handlerErrors);
      setCounter(c["seamBackpressure"]!, {}, tr.backpressure);
      setCounter(c["seamRefused"]!, {}, tr.refused);
      setCounter(c["seamDials"]!, {}, tr.dials);
      setCounter(c["seamDialFailures"]!, {}, tr.dialFailures);
    }

    const counts = new Map<string, number>(PEER_STATES.map((s) => [s, 0]));
    const connected = r.connected();
    const unreachable = r.data.unreachable?.get() ?? new Set<string>();
    for (const p of r.roster) {
      const s = peerState(r, p.id, connected, unreachable);
      if (s !== "self") counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    for (const [state, n] of counts) g["peers"]!.set({ state }, n);

    if (r.raft !== null) {
      g["term"]!.set(r.raft.term.get());
      const ci = r.raft.commitIndex.get();
      g["commitIndex"]!.set(ci);
      const now = r.raft.role.get();
      for (const x of RAFT_ROLES) g["role"]!.set({ role: x }, x === now ? 1 : 0);
      setCounter(c["leaderChanges"]!, {}, this.#leaderChanges);
      const refused = r.raft.refusedFrames();
      for (const reason of FRAME_REFUSALS) setCounter(c["raftRefused"]!, { reason }, refused.get(reason) ?? 0);
      if (r.raft.subscriberErrors !== undefined) setCounter(c["raftSubscriberErrors"]!, {}, r.raft.subscriberErrors());
      if (r.control !== null) {
        const ai = r.control.controlView().appliedIndex;
        g["applied"]!.set(ai);
        g["lag"]!.set(Math.max(0, ci - ai));
        g["claimsHeld"]!.set(r.control.claims.view().open().length);
        const kr = r.control.controlView().keyRetention?.();
        if (kr !== undefined) g["idemSessions"]!.set(kr.sessions);
        const rp = r.control.claimsReadPath?.();
        if (rp !== undefined) {
          setCounter(c["claimsTakes"]!, { path: "refused-at-read" }, rp.refusedAtRead);
          setCounter(c["claimsTakes"]!, { path: "passed-after-read" }, rp.passedAfterRead);
          setCounter(c["claimsTakes"]!, { path: "proposed" }, rp.proposed);
          setCounter(c["claimsTakeWaits"]!, {}, rp.waitedForTake ?? 0);
        }
        const rw = r.control.retireWitnessCounts?.();
        if (rw !== undefined) {
          setCounter(c["retireWitness"]!, { witness: "slice-only" }, rw.sliceOnly);
          setCounter(c["retireWitness"]!, { witness: "omitted" }, rw.omitted);
          setCounter(c["retireWitness"]!, { witness: "unbalanced" }, rw.unbalanced);
        }
      }
    }
  }

  /** Starts reading `reads` (once the peer runs); a governed peer adds the Raft and claims metrics. */
  attach(reads: PeerReads): void {
    this.#reads = reads;
    if (reads.raft !== null) {
      const registers = [this.registry];
      Object.assign(this.#gauges, {
        term: new Gauge({ name: "heddle_raft_term", help: "Raft term this member last made durable", registers }),
        commitIndex: new Gauge({ name: "heddle_raft_commit_index", help: "Raft commit index on this member", registers }),
        applied: new Gauge({ name: "heddle_raft_applied_index", help: "Control-state applied index on this peer", registers }),
        lag: new Gauge({ name: "heddle_raft_apply_lag", help: "Committed but not yet applied entries (commit index − applied index)", registers }),
        role: new Gauge({ name: "heddle_raft_role", help: "1 for this member's current Raft role", labelNames: ["role"], registers }),
        claimsHeld: new Gauge({ name: "heddle_claims_held", help: "Claims held in the replicated claims table (local applied prefix)", registers }),
        idemSessions: new Gauge({ name: "heddle_idempotency_sessions", help: "Idempotency-Key sessions the control state remembers (outcomes within the last N control-log entries)", registers }),
      });
      this.#counters["raftRefused"] = new Counter({ name: "heddle_raft_frames_refused_total", help: "Raft frames (channel 4) this member refused, by reason (governed.md §4.12; not-member: a roster peer outside the Raft membership)", labelNames: ["reason"], registers });
      this.#counters["raftSubscriberErrors"] = new Counter({ name: "heddle_raft_subscriber_errors_total", help: "Errors thrown by subscribers of the Raft member's role, leader, commit index and membership (this daemon's status, metrics and control plane), caught so the member went on processing. Non-zero: a bug in the daemon — report it with the log's 'raft member caught an error' line", registers });
      this.#counters["retireWitness"] = new Counter({ name: "heddle_retire_witness_partial_total", help: "Retires this peer proposed without the full witness of governed.md §3.6, by what it carried: slice-only (its holders' mints were over MAX_RETIRE_WITNESS_BYTES), omitted (the slice itself was over it), unbalanced (every mint of its holders, which still does not balance alone: a holder funded by a transfer). Each still retired its edge; a peer that has not yet joined the draining deltas or the mints may report a transient violation until they arrive", labelNames: ["witness"], registers });
      this.#counters["leaderChanges"] = new Counter({ name: "heddle_raft_leader_changes_total", help: "Times this member saw the leader change (a new leader after another, or after none)", registers });
      this.#counters["claimsTakes"] = new Counter({
        name: "heddle_claims_takes_total",
        help: "Granted-mode takes through this peer's API by path: refused-at-read (answered by the leader at a confirmed read, no commit), passed-after-read (refused by the local table, free at the read, then proposed), proposed (every take sent to the log, passed-after-read included)",
        labelNames: ["path"],
        registers,
      });
      this.#counters["claimsTakeWaits"] = new Counter({ name: "heddle_claims_take_waits_total", help: "Times a take on the leader waited for another in-flight take of one of its keys before being judged", registers });
      let last = reads.raft.leader.get();
      this.#off.push(
        reads.raft.leader.subscribe((l) => {
          if (l !== null && l !== last) this.#leaderChanges++;
          if (l !== null) last = l;
        }),
      );
    }
  }

  /** Records one API request (route pattern, not the raw URL: bounded label values). */
  observeRequest(route: string, method: string, status: number, seconds: number): void {
    const l = { route, method, status: String(status) };
    this.#requests.inc(l);
    this.#latency.observe(l, seconds);
  }

  /** Records one store commit. */
  observeCommit(seconds: number, ok: boolean): void {
    this.#commit.observe({ outcome: ok ? "ok" : "failed" }, seconds);
  }

  /** Exports the call wire's figures (call-wire.ts) on this registry; once per registry. */
  watchCallWire(st: CallWireStats): void {
    const registers = [this.registry];
    new Gauge({ name: "heddle_api_wire_connections", help: "Call-wire connections open now (heddle-call/1 upgrades of the API port)", registers, collect() { this.set(st.connections); } });
    new Counter({ name: "heddle_api_wire_connections_total", help: "Call-wire connections accepted since start", registers, collect() { this.reset(); this.inc(st.connectionsTotal); } });
    new Counter({ name: "heddle_api_wire_calls_total", help: "Calls taken on the call wire (each is also counted in heddle_api_requests_total with method WIRE once answered)", registers, collect() { this.reset(); this.inc(st.calls); } });
    new Counter({
      name: "heddle_api_wire_refused_total",
      help: "Call-wire upgrades refused (unauthorized, bad-protocol, full) and calls refused (too-large, malformed, unknown-path: answered 413 / 400 / 404), by reason",
      labelNames: ["reason"],
      registers,
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(st.refused) as [string, number][]) this.inc({ reason }, n);
      },
    });
  }

  /** Records an API connection closed on arrival (limits.maxConnections). */
  connectionDropped(): void {
    this.#connectionsDropped.inc();
  }

  /** Records a refused claim take. */
  claimRefused(reason: string): void {
    this.#claimsRefused.inc({ reason });
  }

  /** Leader changes counted so far. */
  get leaderChanges(): number {
    return this.#leaderChanges;
  }

  /** One scrape in the Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** The content type of {@link text}. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops watching. */
  close(): void {
    for (const f of this.#off.splice(0)) f();
  }
}

/** `store` with every `commit` timed into `metrics` (a commit that throws is recorded as failed, then rethrown). */
export function timedStore(store: HeddleStore, metrics: DaemonMetrics): HeddleStore {
  return {
    get durable() {
      return store.durable;
    },
    boot: (self, genesis) => store.boot(self, genesis),
    commit(tx: StoreTx) {
      const t0 = performance.now();
      try {
        store.commit(tx);
      } catch (e) {
        metrics.observeCommit((performance.now() - t0) / 1000, false);
        throw e;
      }
      metrics.observeCommit((performance.now() - t0) / 1000, true);
    },
    compact: (state) => store.compact(state),
    close: () => store.close(),
  };
}
