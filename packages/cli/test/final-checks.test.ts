import { edgeId } from "@heddle/node";
import { describe, expect, it } from "vitest";
import type { DemoOptions } from "../src/demo/options.ts";
import { finalChecks } from "../src/demo/render.ts";
import type { PeerView } from "../src/demo/render.ts";

const o: DemoOptions = {
  peers: 3,
  durationS: 20,
  seed: 1,
  tenantWeights: [2n, 1n],
  laneWeights: [1n, 1n],
  dir: undefined,
  live: false,
  governed: false,
  reshapeWeights: undefined,
  dashboardPort: null,
};

/** Peer 0's last report with tenant-a's two lanes at the given committed service, roster 3, nothing steerable now. */
function peer0(interactive: bigint, batch: bigint): PeerView[] {
  const edge = (committed: bigint) => ({ committed: committed.toString(), spent: "0", issued: committed.toString(), outstanding: "0" });
  return [
    {
      index: 0,
      id: "p0",
      state: "up",
      restarts: 0,
      restored: 0,
      status: {
        type: "status",
        index: 0,
        id: "p0",
        digest: "d",
        edges: { [edgeId("tenant-a", "tenant-a/interactive")]: edge(interactive), [edgeId("tenant-a", "tenant-a/batch")]: edge(batch) },
        records: {},
        writable: true,
        controlApplied: 0,
        bounds: [{ parent: "tenant-a", roster: 3, configuredWorstCase: "44420", currentBound: "20", observedDeviation: "0", isConsistent: false }],
        conservation: { minted: "0", held: "0", leafSpent: "0", ok: true },
        conflicts: [],
        negativeHoldings: 0,
        framesRejected: {},
        unreachable: [],
        blocked: false,
        charged: "0",
        completions: 0,
        inFlight: 0,
        draining: true,
        failed: false,
      },
    },
  ];
}

const fairness = (peers: PeerView[], peak: bigint) => finalChecks(peers, true, o, new Map([["tenant-a", peak]])).find((c) => c.what.includes("children of tenant-a"))!;

describe("the demo's fairness check (node.md §16 A11, settled form H + N·g·q)", () => {
  it("accepts three peers granting the same winners at once (deviation 50 > current bound 20, ≤ 0 + 3·2·20)", () => {
    // CI run of 2026-12-01: tenant-b lanes at 2140 and 2240 after a cut, a SIGKILL and a restart.
    const c = fairness(peer0(2140n, 2240n), 0n);
    expect(c.ok).toBe(true);
    expect(c.detail).toContain("worst deviation 50 ≤ 0 + 3·2·20 = 120");
  });
  it("refuses drift beyond N·g quanta over the steerable peak", () => {
    const c = fairness(peer0(4100n, 4380n), 0n);
    expect(c.ok).toBe(false);
    expect(c.detail).toContain("worst deviation 140");
  });
  it("widens by the peak steerable entitlement peer 0 saw during the run", () => {
    expect(fairness(peer0(4100n, 4380n), 20n).ok).toBe(true);
    expect(fairness(peer0(4100n, 4380n), 19n).ok).toBe(false);
  });
});
