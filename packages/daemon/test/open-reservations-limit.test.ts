// limits.maxOpenReservations: a reserve past it is refused (409 too-many-open) without earmarking anything,
// and succeeds again once work completes — even retried under the same Idempotency-Key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";

let s: SoloDaemon;

beforeAll(async () => {
  s = await soloDaemon({ supply: 1_000_000n, tree: "a=1" }, (c) => ({ ...c, limits: { ...c.limits, maxOpenReservations: 3 } }));
  await s.client.demand({ leaf: "a", targetOutstanding: 100, maximumUsefulGrant: 100 });
  for (let i = 0; i < 200; i++) {
    const h = (await s.client.holdings("a")) as { groups: { available: string }[] };
    if (BigInt(h.groups[0]!.available) >= 10n) break;
    await new Promise((r) => setTimeout(r, 25));
  }
});
afterAll(() => s.close());

describe("limits.maxOpenReservations", () => {
  it("refuses the reserve past the limit, earmarks nothing, and accepts it again once one completes", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await s.client.reserve("a", 1)).id);
    const avail = async () => BigInt(((await s.client.holdings("a")) as { groups: { available: string }[] }).groups[0]!.available);
    const before = await avail();
    const over = await s.client.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 1 }, { idempotencyKey: "fourth" });
    expect(over.status).toBe(409);
    expect(over.body).toMatchObject({ error: "refused", refusal: { kind: "too-many-open", limit: 3 }, message: expect.stringContaining("limits.maxOpenReservations") });
    expect(((await s.client.reservations()) as { reservations: unknown[] }).reservations).toHaveLength(3);
    expect(await avail()).toBe(before);
    await s.client.complete(ids[0]!, 1);
    const retry = await s.client.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 1 }, { idempotencyKey: "fourth" });
    expect(retry.status).toBe(201);
    expect(((await s.client.reservations()) as { reservations: unknown[] }).reservations).toHaveLength(3);
  });
});
