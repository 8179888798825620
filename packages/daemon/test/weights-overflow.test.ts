// Children whose weights are too large for exact int64 arithmetic (policy.md §2.3 throws) make their
// parent's schedule round and bound metrics fail — and nothing more (found in review: the first failed
// round left a ledger transaction open, after which every read of the peer answered 500).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Weight } from "@heddle/ledger";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";

const W = "4611686018427387904"; // 2^62
let s: SoloDaemon;
beforeAll(async () => {
  // The config refuses such a genesis topology (mode.topology[i].weight); prepares racing from two governed peers can
  // still get there, which the runtime must survive — so the weights are set on the checked config.
  s = await soloDaemon({ supply: 1_000_000n, tree: "a=1,b=1,c=1,c>leaf=1" }, (c) =>
    c.mode.kind !== "static" ? c : { ...c, mode: { ...c.mode, topology: c.mode.topology.map((r) => (r.parent === "root" && r.child !== "c" ? { ...r, weight: Weight.of(BigInt(W), 1n) } : r)) } },
  );
  for (const leaf of ["a", "b", "leaf"]) expect((await s.client.raw("POST", "/v1/demand", { leaf, targetOutstanding: 100, maximumUsefulGrant: 10 })).status).toBe(200);
  await new Promise((r) => setTimeout(r, 600)); // several scheduler rounds, each failing at root
});
afterAll(() => s.close());

describe("a parent whose children's weights overflow", () => {
  it("every read still answers; its bounds say why they are unavailable; the metrics skip it", async () => {
    for (const path of ["/v1/status", "/v1/tree", "/v1/holdings", "/v1/demand", "/v1/reservations"]) expect((await s.client.raw("GET", path)).status, path).toBe(200);
    // the status says what keeps failing
    const st = (await s.client.status()) as { schedulerFailures: { where: string; message: string; count: number }[] };
    expect(st.schedulerFailures).toEqual([expect.objectContaining({ where: "schedule(root)", message: expect.stringMatching(/^LedgerOverflowError: /), count: expect.any(Number) })]);
    expect(st.schedulerFailures[0]!.count).toBeGreaterThan(1);
    const b = await s.client.raw("GET", "/v1/bounds");
    expect(b.status).toBe(200);
    const bounds = (b.body as { bounds: { parent: string; unavailable?: string }[] }).bounds;
    expect(bounds.find((x) => x.parent === "root")).toMatchObject({ unavailable: expect.stringMatching(/^LedgerOverflowError: .*reshape them with smaller weights$/) });
    expect(bounds.find((x) => x.parent === "c")).toMatchObject({ parent: "c", isConsistent: expect.any(Boolean) });
    const m = await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: `Bearer ${s.daemon.token}` } });
    expect(m.status).toBe(200);
    const text = await m.text();
    expect(text).toMatch(/heddle_\w+\{parent="c"\}/);
    expect(text).not.toMatch(/heddle_\w+\{parent="root"\}/);
    // the peer still reserves and completes (nothing is held at leaf: root cannot be scheduled)
    expect((await s.client.raw("POST", "/v1/reservations", { leaf: "leaf", maximumCost: 1 })).body).toMatchObject({ refusal: { kind: "insufficient" } });
  });
});

describe("a peer whose n·maxHoldingsPerPeer + quantum leaves int64 (the config refuses it; so does the node, for a config that skipped the check)", () => {
  it("startDaemon refuses it naming maxHoldingsPerPeer and the largest value it may take; peers enrolled past the roster get a saturated bound instead (node's bound-worst-case.test.ts)", async () => {
    let refused: unknown;
    try {
      const big = await soloDaemon({ supply: 1_000n, tree: "a=1,b=1" }, (c) => ({ ...c, node: { ...c.node, maxHoldingsPerPeer: 2n ** 63n - 1n } }));
      await big.close();
    } catch (e) {
      refused = e;
    }
    expect(refused, "the daemon started").toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/HeddleConfig\.maxHoldingsPerPeer is 9223372036854775807: with 1 roster peers.*set maxHoldingsPerPeer to at most 9223372036854775797$/);
  });
});
