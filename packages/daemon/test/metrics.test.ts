import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
