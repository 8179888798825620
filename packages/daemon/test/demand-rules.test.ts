// What POST /v1/demand refuses before standing anything: a lease the next scheduler round would drop unserved.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governedSoloDaemon, type SoloDaemon } from "./support/embedded.ts";

const INTERVAL_MS = 500;
let s: SoloDaemon;

beforeAll(async () => {
  s = await governedSoloDaemon({ config: (c) => ({ ...c, schedulerIntervalMs: INTERVAL_MS }) });
  expect(await s.client.prepare({ id: "e-live", parent: "root", child: "live", weight: 1 })).toMatchObject({ kind: "applied" });
  expect(await s.client.activate("e-live")).toMatchObject({ kind: "applied" });
});
afterAll(() => s.close());

const standing = async () => ((await s.client.raw("GET", "/v1/demand")).body as { standing: unknown[] }).standing;

describe("POST /v1/demand: the lease", () => {
  it("refuses a leaseMs not above scheduler.intervalMs (400 naming leaseMs), stands nothing, and takes one just above it", async () => {
    const short = await s.client.raw("POST", "/v1/demand", { edge: "e-live", targetOutstanding: 10, maximumUsefulGrant: 5, leaseMs: INTERVAL_MS });
    expect(short.status).toBe(400);
    expect(short.body).toMatchObject({ error: "invalid-request", issues: [{ field: "leaseMs", in: "body", problem: expect.stringContaining(`not above scheduler.intervalMs (${INTERVAL_MS})`) }] });
    expect(await standing()).toEqual([]);
    const ok = await s.client.raw("POST", "/v1/demand", { edge: "e-live", targetOutstanding: 10, maximumUsefulGrant: 5, leaseMs: INTERVAL_MS + 1 });
    expect(ok.status).toBe(200);
    // a withdrawal names no lease worth checking
    const off = await s.client.raw("POST", "/v1/demand", { edge: "e-live", targetOutstanding: 0, maximumUsefulGrant: 0, leaseMs: 100 });
    expect(off.status).toBe(200);
    expect(await standing()).toEqual([]);
  });
});
