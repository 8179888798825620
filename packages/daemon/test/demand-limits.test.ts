// A demand that would not fit this peer's demand slot is refused with a 409 naming the limit, and it
// leaves nothing behind: the standing set, the advertised slot and later demand calls are as before.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";

const LEAVES = 40;
const name = (i: number) => `tenant-${String(i).padStart(3, "0")}-${"w".repeat(100)}`;
let s: SoloDaemon;

beforeAll(async () => {
  const tree = Array.from({ length: LEAVES }, (_, i) => `${name(i)}=1`).join(",");
  // The smallest frame the config allows: 40 edges of ~110 characters do not fit one demand slot.
  s = await soloDaemon({ supply: 1_000_000n, tree }, (c) => ({ ...c, node: { ...c.node, maxFrameBytes: 4096 }, limits: { ...c.limits, maxBodyBytes: 4096 } }));
});
afterAll(() => s.close());

describe("POST /v1/demand past the demand slot's limits", () => {
  it("answers 409 naming the limit, stores nothing, and later demand calls still work", async () => {
    let refusedAt = -1;
    let refusal: { status: number; body: unknown } | null = null;
    for (let i = 0; i < LEAVES; i++) {
      const r = await s.client.raw("POST", "/v1/demand", { leaf: name(i), targetOutstanding: 10, maximumUsefulGrant: 5 });
      if (r.status !== 200) {
        refusedAt = i;
        refusal = r;
        break;
      }
    }
    expect(refusedAt).toBeGreaterThan(0);
    expect(refusal!.status).toBe(409);
    expect(refusal!.body).toMatchObject({ error: "refused", refusal: { kind: "board-full", limit: "maxFrameBytes", value: 4096 }, message: expect.stringContaining("nothing was stored") });
    const after = (await s.client.raw("GET", "/v1/demand")).body as { standing: { edge: string }[]; advertised: Record<string, unknown> };
    expect(after.standing).toHaveLength(refusedAt);
    expect(after.standing.some((d) => d.edge.includes(name(refusedAt)))).toBe(false);
    expect(Object.keys(after.advertised).some((e) => e.includes(name(refusedAt)))).toBe(false);
    // Changing a standing demand and withdrawing one still work (before the fix every later call was a 500).
    const change = await s.client.raw("POST", "/v1/demand", { leaf: name(0), targetOutstanding: 20, maximumUsefulGrant: 5 });
    expect(change.status).toBe(200);
    const withdraw = await s.client.raw("POST", "/v1/demand", { leaf: name(1), targetOutstanding: 0, maximumUsefulGrant: 0 });
    expect(withdraw.status).toBe(200);
    // … and with one withdrawn the refused one now fits.
    const retry = await s.client.raw("POST", "/v1/demand", { leaf: name(refusedAt), targetOutstanding: 10, maximumUsefulGrant: 5 });
    expect(retry.status).toBe(200);
    const final = (await s.client.raw("GET", "/v1/demand")).body as { standing: { edge: string; demand?: unknown }[] };
    expect(final.standing).toHaveLength(refusedAt);
  });
});
