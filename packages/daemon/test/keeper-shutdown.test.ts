// A keeper or advisory write that reaches the API while this peer's node is shutting down is refused as the peer
// being unavailable (503, nothing changed, retrying against a running peer is safe), not as a bad part or item (400).
// The API is built in-process over a static node on MemoryNetwork; the node's shutdown is begun directly, which
// closes its claims layer at once (before its first await), so every write issued after it lands in the window.
import { describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { heddleStatic, memoryStore, MemoryNetwork, seededRandom } from "@heddle/node";
import { VirtualTimers } from "@heddle/node/testing";
import { buildApi, Scheduler, silentLogger } from "../src/index.ts";

const TOKEN = "keeper-shutdown-test-token-0123456789";

async function harness() {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(29) });
  const node = heddleStatic({
    seam: net.join("a"),
    self: ReplicaId("a"),
    root: GroupId("root"),
    supply: new Map([[ReplicaId("a"), 100n]]),
    topology: [],
    config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers, random: seededRandom(30), store: memoryStore(), claims: { keeperRules: { invoices: "stays-put" } } },
  });
  const scheduler = new Scheduler({ node, root: GroupId("root"), timers, intervalMs: 1_000, demandTtlMs: 10_000, maxStanding: 8 });
  const app = await buildApi({
    data: node, control: null, scheduler, mode: "static", root: GroupId("root"), token: TOKEN, logger: silentLogger,
    limits: { maxBodyBytes: 1 << 20, controlTimeoutMs: 5_000, maxIdempotencyEntries: 16 },
    demandTtlMs: 10_000, tls: null, roster: [{ id: "a", addrs: [] }], connected: () => new Set(), addrs: () => [], lastLiveness: () => new Map(), startedAt: 0,
  });
  timers.advanceBy(1);
  return { node, app, timers };
}

function post(app: FastifyInstance, url: string, payload: object) {
  return app.inject({ method: "POST", url, headers: { authorization: `Bearer ${TOKEN}` }, payload }).then((r) => ({ url, status: r.statusCode, body: r.json() as Record<string, unknown> }));
}

describe("claims writes while the node shuts down", () => {
  it("answer 503 unavailable saying a running peer may be retried, not 400 naming the part or item", async () => {
    const { node, app } = await harness();
    try {
      const first = await post(app, "/v1/claims/keeper", { part: "invoices", take: true });
      expect(first.status).toBe(200);
      const stopping = node.shutdown();
      // issued after shutdown began (its claims layer is closed now, and stays closed until and after it resolves)
      const writes = await Promise.all([
        post(app, "/v1/claims/keeper", { part: "invoices", take: true }),
        post(app, "/v1/claims/keeper/close", { part: "invoices", wroteUpTo: 3 }),
        post(app, "/v1/claims/advisory", { item: "job-1" }),
      ]);
      await stopping;
      for (const w of writes) {
        expect({ url: w.url, status: w.status, error: w.body["error"] }).toEqual({ url: w.url, status: 503, error: "unavailable" });
        expect(w.body).toMatchObject({ refusal: { kind: "closed" }, message: expect.stringMatching(/shutting down.*retrying .*running peer is safe/i) });
        expect(w.body["issues"]).toBeUndefined();
      }
      // the shutdown's own close of the claim is what the peers were sent, not the refused writes' (no wroteUpTo)
      const own = node.gossipClaims.slots().keeper.get(ReplicaId("a"))!.claims;
      expect(own).toEqual([expect.objectContaining({ part: "invoices", closedAt: expect.any(Number) })]);
      expect(own[0]!.wroteUpTo).toBeUndefined();
      expect((await post(app, "/v1/claims/advisory/drop", { item: "job-1" })).body).toMatchObject({ dropped: false });
    } finally {
      await app.close();
      await node.shutdown();
    }
  });
});
