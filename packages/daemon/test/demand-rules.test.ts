// What POST /v1/demand refuses before standing anything: a lease the next scheduler round would drop unserved, and
// an edge that is not ACTIVE (node.md §7 schedules only ACTIVE edges).
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

describe("POST /v1/demand: the edge's lifecycle", () => {
  it("refuses demand on a PREPARED or RETIRED edge (409 naming the edge and its lifecycle), stands nothing, and still takes a withdrawal; a CLOSING edge — the child's live inbound edge while a reshape drains it — takes demand", async () => {
    expect(await s.client.prepare({ id: "e-prep", parent: "root", child: "prep", weight: 1 })).toMatchObject({ kind: "applied" });
    expect(await s.client.prepare({ id: "e-ret", parent: "root", child: "ret", weight: 1 })).toMatchObject({ kind: "applied" });
    expect(await s.client.raw("POST", "/v1/control/retire", { edge: "e-ret" })).toMatchObject({ status: 200 });
    expect(await s.client.prepare({ id: "e-closing", parent: "root", child: "closing", weight: 1 })).toMatchObject({ kind: "applied" });
    expect(await s.client.activate("e-closing")).toMatchObject({ kind: "applied" });
    expect(await s.client.raw("POST", "/v1/control/close", { edge: "e-closing" })).toMatchObject({ status: 200 });
    const prepared = await s.client.raw("POST", "/v1/demand", { edge: "e-prep", targetOutstanding: 10, maximumUsefulGrant: 5 });
    expect(prepared.status).toBe(409);
    expect(prepared.body).toMatchObject({ error: "refused", refusal: { kind: "not-active", edge: "e-prep", lifecycle: "PREPARED" }, message: expect.stringMatching(/^edge e-prep is PREPARED: .*activate it first/) });
    const r = await s.client.raw("POST", "/v1/demand", { edge: "e-ret", targetOutstanding: 10, maximumUsefulGrant: 5, leaseMs: 86_400_000 });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ refusal: { kind: "not-active", edge: "e-ret", lifecycle: "RETIRED" }, message: expect.stringMatching(/^edge e-ret is RETIRED: .*give leaf rather than edge/) });
    expect(await standing()).toEqual([]);
    expect((await s.client.raw("POST", "/v1/demand", { edge: "e-ret", targetOutstanding: 0, maximumUsefulGrant: 0 })).status).toBe(200);
    // the demand follows the child to its next generation once that is ACTIVE (the scheduler's tests)
    expect((await s.client.raw("POST", "/v1/demand", { edge: "e-closing", targetOutstanding: 10, maximumUsefulGrant: 5 })).status).toBe(200);
    expect((await s.client.raw("POST", "/v1/demand", { edge: "e-closing", targetOutstanding: 0, maximumUsefulGrant: 0 })).status).toBe(200);
  });
});
