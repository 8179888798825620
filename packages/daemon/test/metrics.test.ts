import { EntitlementLedger, GroupId, ReplicaId } from "@heddle/ledger";
import { ChannelTag, muxSeam, WatchCell, type Libp2pSeam, type NodeMetrics } from "@heddle/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DataPlane } from "../src/data-plane.ts";
import { DaemonMetrics } from "../src/metrics.ts";
import { transportCountersOf, type PeerReads, type TransportCounters } from "../src/peer-reads.ts";
import { parsePrometheus, type Scrape } from "./support/prometheus.ts";
import { soloDaemon } from "./support/embedded.ts";

let s: Awaited<ReturnType<typeof soloDaemon>>;
const PAIRS = 25;

/** Waits until the ledger digest stops changing (the scheduler has nothing more to delegate). */
async function quiet(): Promise<void> {
  let last = "";
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const d = ((await s.client.status()) as { ledgerDigest: string }).ledgerDigest;
    if (d === last) return;
    last = d;
  }
}

async function scrape(): Promise<{ status: number; type: string | null; text: string }> {
  const r = await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: `Bearer ${s.daemon.token}` } });
  return { status: r.status, type: r.headers.get("content-type"), text: await r.text() };
}

beforeAll(async () => {
  s = await soloDaemon({ supply: 1_000_000n, tree: "tenant-a=3,tenant-b=1,tenant-a>batch=1,tenant-a>interactive=2" });
  for (const leaf of ["batch", "interactive", "tenant-b"]) await s.client.demand({ leaf, targetOutstanding: 500, maximumUsefulGrant: 100 });
  for (let i = 0; i < 200; i++) {
    const h = (await s.client.holdings("batch")) as { groups: { available: string }[] };
    if (BigInt(h.groups[0]!.available) >= 100n) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  for (const leaf of ["batch", "interactive", "tenant-b"]) await s.client.demand({ leaf, targetOutstanding: 0, maximumUsefulGrant: 0 });
  await quiet();
  for (let i = 0; i < PAIRS; i++) {
    const r = await s.client.reserve("batch", 3);
    await s.client.complete(r.id, 2);
  }
  await quiet();
});
afterAll(() => s.close());

describe("/metrics", () => {
  it("needs the token", async () => {
    const r = await fetch(`${s.daemon.url}/metrics`);
    expect(r.status).toBe(401);
    const w = await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: "Bearer not-the-token-at-all" } });
    expect(w.status).toBe(401);
  });

  it("is the Prometheus text format, and every value matches what the node itself reports", async () => {
    const r = await scrape();
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const m: Scrape = parsePrometheus(r.text);
    expect(m.one("heddle_up")).toBe(1);

    // the tree: weights, fair and committed shares, service — against GET /v1/tree
    const tree = (await s.client.tree()) as { edges: { id: string; parent: string; child: string; weight: string; lifecycle: string; weightShare: number | null; serviceShare: number | null; committedService: string; spent: string }[]; groups: { group: string; holdings: string }[] };
    expect(tree.edges.length).toBe(4);
    expect(m.one("heddle_group_edges")).toBe(tree.edges.length);
    for (const e of tree.edges) {
      const l = { edge: e.id, parent: e.parent, child: e.child };
      const [n, d] = e.weight.split("/");
      expect(m.one("heddle_group_weight", l)).toBe(Number(n) / Number(d ?? "1"));
      expect(m.one("heddle_group_fair_share", l)).toBeCloseTo(e.weightShare!, 12);
      if (e.serviceShare !== null) expect(m.one("heddle_group_committed_share", l)).toBeCloseTo(e.serviceShare, 12);
      expect(m.one("heddle_group_committed_service", l)).toBe(Number(e.committedService));
      expect(m.one("heddle_group_spent", l)).toBe(Number(e.spent));
    }
    expect(tree.edges.some((e) => Number(e.spent) === 2 * PAIRS)).toBe(true);
    for (const g of tree.groups) expect(m.one("heddle_group_holdings", { group: g.group })).toBe(Number(g.holdings));

    // the bound triple — against GET /v1/bounds
    const bounds = (await s.client.bounds()) as { bounds: { parent: string; configuredWorstCase: string; currentBound: string; observedDeviation: string }[] };
    expect(bounds.bounds.length).toBe(2);
    for (const b of bounds.bounds) {
      expect(m.one("heddle_bound_configured_worst_case", { parent: b.parent })).toBe(Number(b.configuredWorstCase));
      expect(m.one("heddle_bound_current", { parent: b.parent })).toBe(Number(b.currentBound));
      expect(m.one("heddle_bound_observed_deviation", { parent: b.parent })).toBe(Number(b.observedDeviation));
    }

    // totals and counters — against GET /v1/status
    const st = (await s.client.status()) as { mintedTotal: string; leafSpentTotal: string; framesRejected: number; reservationsOpen: number };
    expect(m.one("heddle_ledger_minted")).toBe(Number(st.mintedTotal));
    expect(m.one("heddle_ledger_leaf_spent")).toBe(Number(st.leafSpentTotal));
    expect(m.one("heddle_reservations_open")).toBe(st.reservationsOpen);
    const rejected = m.all("heddle_frames_rejected_total");
    expect(rejected.length).toBe(9); // every reason of node.md §4.3, zeros included
    expect(rejected.reduce((a, x) => a + x.value, 0)).toBe(st.framesRejected);
    expect(m.types.get("heddle_frames_rejected_total")).toBe("counter");

    // store commits: the histogram's count is the node's own commit counter
    const commits = m.one("heddle_store_commits_total");
    expect(commits).toBeGreaterThan(2 * PAIRS - 1);
    expect(m.one("heddle_store_commit_seconds_count", { outcome: "ok" })).toBe(commits);
    expect(m.types.get("heddle_store_commit_seconds")).toBe("histogram");
    expect(m.one("heddle_store_commit_seconds_bucket", { outcome: "ok", le: "+Inf" })).toBe(commits);

    // API requests by route and status: exactly the pairs this test made
    expect(m.one("heddle_api_requests_total", { route: "/v1/reservations", method: "POST", status: "201" })).toBe(PAIRS);
    expect(m.one("heddle_api_requests_total", { route: "/v1/reservations/complete", method: "POST", status: "200" })).toBe(PAIRS);
    expect(m.one("heddle_api_request_duration_seconds_count", { route: "/v1/reservations", method: "POST", status: "201" })).toBe(PAIRS);
    expect(m.one("heddle_api_requests_total", { route: "/metrics", method: "GET", status: "401" })).toBeGreaterThanOrEqual(2);

    // what the node caught and the transport lost or refused: nothing on a solo peer, but every family is there
    // as a counter, the seam's labelled ones with every reason (so the daemon handed the metrics its seam)
    for (const name of [
      "heddle_node_subscriber_errors_total",
      "heddle_liveness_subscriber_errors_total",
      "heddle_replication_subscriber_errors_total",
      "heddle_node_validate_overflows_total",
      "heddle_schedule_delegate_refusals_total",
      "heddle_seam_frames_unheard_total",
      "heddle_seam_handler_errors_total",
      "heddle_seam_backpressure_total",
      "heddle_seam_connections_refused_total",
      "heddle_seam_dial_failures_total",
    ]) {
      expect(m.types.get(name), name).toBe("counter");
      expect(m.one(name), name).toBe(0);
    }
    expect(m.types.get("heddle_seam_frames_lost_total")).toBe("counter");
    expect(m.all("heddle_seam_frames_lost_total").map((x) => [x.labels["reason"], x.value]).sort()).toEqual([["discarded", 0], ["send-error", 0]]);
    expect(m.all("heddle_seam_frames_malformed_total").map((x) => [x.labels["reason"], x.value]).sort()).toEqual([["bad-prefix", 0], ["cut", 0], ["oversize", 0]]);
    // the schedule delegated the holdings the leaves were given above: at least one grant, of at least 100 units
    expect(m.one("heddle_schedule_runs_total")).toBeGreaterThan(0);
    expect(m.one("heddle_schedule_grants_total")).toBeGreaterThan(0);
    expect(m.one("heddle_schedule_granted_units_total")).toBeGreaterThanOrEqual(100);

    // a solo static peer: no other peer, no Raft
    expect(m.one("heddle_peers", { state: "up" })).toBe(0);
    expect(m.all("heddle_raft_term")).toEqual([]);
    expect(m.one("heddle_dashboard_viewers")).toBe(0);
    // the process metrics, under the same prefix (the bench reads the daemon's CPU time from here)
    expect(m.types.get("heddle_process_cpu_seconds_total")).toBe("counter");
    expect(m.one("heddle_process_cpu_seconds_total")).toBeGreaterThan(0);
  });

  it("counts a refused reservation by its status, and the unmatched route as one label", async () => {
    const before = parsePrometheus((await scrape()).text);
    const refused = await s.client.raw("POST", "/v1/reservations", { leaf: "batch", maximumCost: "999999999" });
    expect(refused.status).toBe(409);
    await s.client.raw("GET", "/v1/nowhere/123");
    await s.client.raw("GET", "/v1/nowhere/456");
    const after = parsePrometheus((await scrape()).text);
    const c409 = (x: Scrape) => x.all("heddle_api_requests_total").find((v) => v.labels["route"] === "/v1/reservations" && v.labels["status"] === "409")?.value ?? 0;
    expect(c409(after) - c409(before)).toBe(1);
    expect(after.one("heddle_api_requests_total", { route: "(unmatched)", method: "GET", status: "404" })).toBe(2);
  });
});

/** What the stand-in peer below reports: its node's counters (caught errors, schedule, store, boards) and its transport's. */
interface Reported extends TransportCounters {
  node: number;
  liveness: number;
  replication: number;
  validateOverflows: number;
  schedules: number;
  grants: number;
  grantedUnits: number;
  delegateRefusals: number;
  compactions: number;
  demandIn: number;
  demandOut: number;
  demandSlots: number;
  pingsOut: number;
  pongsOut: number;
}

/** Each exported sample (family, labels, type) and the reported value it must equal. */
const FOLLOWS: readonly (readonly [family: string, labels: Record<string, string>, type: "counter" | "gauge", source: keyof Reported])[] = [
  ["heddle_node_subscriber_errors_total", {}, "counter", "node"],
  ["heddle_liveness_subscriber_errors_total", {}, "counter", "liveness"],
  ["heddle_replication_subscriber_errors_total", {}, "counter", "replication"],
  ["heddle_node_validate_overflows_total", {}, "counter", "validateOverflows"],
  ["heddle_schedule_runs_total", {}, "counter", "schedules"],
  ["heddle_schedule_grants_total", {}, "counter", "grants"],
  ["heddle_schedule_granted_units_total", {}, "counter", "grantedUnits"],
  ["heddle_schedule_delegate_refusals_total", {}, "counter", "delegateRefusals"],
  ["heddle_store_compactions_total", {}, "counter", "compactions"],
  ["heddle_demand_frames_total", { direction: "in" }, "counter", "demandIn"],
  ["heddle_demand_frames_total", { direction: "out" }, "counter", "demandOut"],
  ["heddle_demand_slots", {}, "gauge", "demandSlots"],
  ["heddle_liveness_frames_out_total", { kind: "ping" }, "counter", "pingsOut"],
  ["heddle_liveness_frames_out_total", { kind: "pong" }, "counter", "pongsOut"],
  ["heddle_seam_frames_in_total", {}, "counter", "framesIn"],
  ["heddle_seam_frames_out_total", {}, "counter", "framesOut"],
  ["heddle_seam_bytes_out_total", {}, "counter", "bytesOut"],
  ["heddle_seam_frames_malformed_total", { reason: "oversize" }, "counter", "oversize"],
  ["heddle_seam_frames_malformed_total", { reason: "bad-prefix" }, "counter", "badPrefix"],
  ["heddle_seam_frames_malformed_total", { reason: "cut" }, "counter", "cutFrames"],
  ["heddle_seam_handler_errors_total", {}, "counter", "handlerErrors"],
  ["heddle_seam_backpressure_total", {}, "counter", "backpressure"],
  ["heddle_seam_frames_lost_total", { reason: "send-error" }, "counter", "sendErrors"],
  ["heddle_seam_frames_lost_total", { reason: "discarded" }, "counter", "discarded"],
  ["heddle_seam_connections_refused_total", {}, "counter", "refused"],
  ["heddle_seam_dials_total", {}, "counter", "dials"],
  ["heddle_seam_dial_failures_total", {}, "counter", "dialFailures"],
  ["heddle_seam_frames_unheard_total", {}, "counter", "unheard"],
];

const TRANSPORT_FIELDS = ["framesIn", "framesOut", "bytesOut", "oversize", "badPrefix", "cutFrames", "handlerErrors", "backpressure", "sendErrors", "discarded", "refused", "dials", "dialFailures", "unheard"] as const satisfies readonly (keyof TransportCounters)[];

/** Every reported value distinct from every other, and from those of every other `round`. */
function reportedAt(round: number): Reported {
  const fields = [...new Set(FOLLOWS.map(([, , , f]) => f))];
  return Object.fromEntries(fields.map((f, i) => [f, 1 + round * 1_000 + i * 7])) as unknown as Reported;
}

/** A static peer with no edges whose node and transport report `r` as it stands at each scrape. */
function readsReporting(r: Reported): PeerReads {
  const self = ReplicaId("peer-1");
  const metrics = (): NodeMetrics => {
    const ledger = { framesIn: {}, framesOut: {}, bytesOut: 0, deltasPublished: 0, pendingDeltas: 0, subscriberErrors: r.replication };
    return {
      peer: {
        ledger,
        framesRejected: {},
        demand: { framesIn: r.demandIn, framesOut: r.demandOut, slots: r.demandSlots },
        liveness: { pingsOut: r.pingsOut, pongsOut: r.pongsOut, subscriberErrors: r.liveness },
      },
      framesRejected: {},
      failed: false,
      deltasPublished: 0,
      pendingDeltas: 0,
      schedules: r.schedules,
      grants: r.grants,
      grantedUnits: BigInt(r.grantedUnits),
      delegateRefusals: r.delegateRefusals,
      reservationsOpen: 0,
      commits: 0,
      commitFailures: 0,
      compactions: r.compactions,
      validateOverflows: r.validateOverflows,
      subscriberErrors: r.node,
    } as unknown as NodeMetrics; // the scrape reads only these members
  };
  const data: Partial<DataPlane> = { self, ledger: new WatchCell(EntitlementLedger.bootstrap(GroupId("root"), new Map([[self, 100n]]), "metrics-test")), metrics };
  return {
    data: data as DataPlane,
    mode: "static",
    root: GroupId("root"),
    roster: [{ id: self, addrs: [] }],
    connected: () => new Set(),
    lastLiveness: () => new Map(),
    control: null,
    raft: null,
    transport: () => Object.fromEntries(TRANSPORT_FIELDS.map((f) => [f, r[f]])) as unknown as TransportCounters,
  };
}

describe("/metrics: the node's and the transport's own counters", () => {
  it("exports each at the value its owner reports, scrape after scrape", async () => {
    const reported = reportedAt(0);
    const metrics = new DaemonMetrics({ processMetrics: false });
    metrics.attach(readsReporting(reported));
    // every value distinct (a sample read from the wrong owner or field fails), each round's below the sum of
    // both (a counter that accumulates across scrapes instead of following its owner fails)
    for (const round of [1, 2]) {
      const now = reportedAt(round);
      Object.assign(reported, now);
      const m = parsePrometheus(await metrics.text());
      for (const [family, labels, type, source] of FOLLOWS) {
        expect(m.types.get(family), family).toBe(type);
        expect(m.one(family, labels), `${family} ${JSON.stringify(labels)}`).toBe(now[source]);
      }
    }
    // and a labelled family has exactly the label values the table checks (none unread, none stray)
    const m = parsePrometheus(await metrics.text());
    for (const family of new Set(FOLLOWS.filter(([, l]) => Object.keys(l).length > 0).map(([f]) => f))) {
      const want = FOLLOWS.filter(([f]) => f === family).map(([, l]) => JSON.stringify(l)).sort();
      expect(m.all(family).map((x) => JSON.stringify(x.labels)).sort(), family).toEqual(want);
    }
    metrics.close();
  });

  it("has no labelled seam samples, and the seam's plain counters at 0, for a peer that does not read its transport (an embedder's)", async () => {
    const { transport: _, ...reads } = readsReporting(reportedAt(3));
    const metrics = new DaemonMetrics({ processMetrics: false });
    metrics.attach(reads);
    const m = parsePrometheus(await metrics.text());
    expect(m.all("heddle_seam_frames_lost_total")).toEqual([]);
    expect(m.all("heddle_seam_frames_malformed_total")).toEqual([]);
    expect(m.one("heddle_seam_dial_failures_total")).toBe(0);
    expect(m.one("heddle_node_subscriber_errors_total")).toBe(reportedAt(3).node);
    metrics.close();
  });
});

describe("transportCountersOf", () => {
  it("reads each counter of the seam from its own field, and unheard from the seam's mux", () => {
    const values = Object.fromEntries(TRANSPORT_FIELDS.filter((f) => f !== "unheard").map((f, i) => [f, 11 + 13 * i]));
    let deliver: ((from: string, frame: Uint8Array) => void) | null = null;
    const seam = {
      self: "peer-1",
      maxFrameBytes: 1_024,
      peers: new WatchCell<ReadonlySet<string>>(new Set()),
      onFrame(fn: (from: string, frame: Uint8Array) => void) {
        deliver = fn;
        return () => {};
      },
      counters: () => ({ ...values }),
    } as unknown as Libp2pSeam; // transportCountersOf reads only counters(); the mux subscribes onFrame
    const read = transportCountersOf(seam);
    muxSeam(seam).channel(ChannelTag.demand); // claimed, nobody listening yet
    for (let i = 0; i < 3; i++) deliver!("peer-2", Uint8Array.of(ChannelTag.demand, 0));
    expect(read()).toEqual({ ...values, unheard: 3 });
  });
});
