// A keyed reserve (`Idempotency-Key`) takes two commits: the reservation in the node's store (ledger.sqlite), then
// its answer in daemon.sqlite. A crash between them used to leave the key unrecorded, so the client's retry after
// the restart opened a second reservation. Here the daemon fails a keyed reserve at each point — before the
// reservation, between the two commits, after both — stops, starts again on the same store, and the retry must
// answer the one reservation there is. The failure is injected into the answer store (`wrapReserveMemory`): a throw
// there stops the request where a crash would, and what is on disk afterwards is what a crash leaves.
import { describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { silentLogger, startDaemon, type RunningDaemon } from "../src/index.ts";
import type { ReserveMemory } from "../src/reserve-memory.ts";
import { soloDaemon } from "./support/embedded.ts";

type CrashPoint = "before-reservation" | "between-commits" | "after-both";

/** Fails the next keyed reserve at `point` (once), as a crash there would stop it. */
function faulty(point: CrashPoint): (inner: ReserveMemory) => ReserveMemory {
  let armed = true;
  const crash = () => {
    armed = false;
    throw new Error(`simulated crash ${point}`);
  };
  return (inner) => ({
    get: (k) => {
      if (armed && point === "before-reservation") crash();
      return inner.get(k);
    },
    put: (k, a) => {
      if (armed && point === "between-commits") crash();
      inner.put(k, a);
      if (armed && point === "after-both") crash();
    },
  });
}

const openIds = async (c: HeddleClient) => ((await c.reservations()) as { reservations: { id: string }[] }).reservations.map((r) => r.id);

describe("keyed reserve across a crash at each point", () => {
  it("a retried keyed reserve never reserves twice, whatever the crash point", async () => {
    const s = await soloDaemon({ supply: 1_000_000n, tree: "a=1" });
    let d: RunningDaemon = s.daemon;
    let c: HeddleClient = s.client;
    const restart = async (wrap?: (inner: ReserveMemory) => ReserveMemory) => {
      c.close();
      await d.close();
      d = await startDaemon(s.config, { logger: silentLogger, ...(wrap !== undefined ? { wrapReserveMemory: wrap } : {}) });
      c = new HeddleClient({ url: d.url, token: d.token });
    };
    try {
      expect((await c.raw("POST", "/v1/demand", { leaf: "a", targetOutstanding: 100, maximumUsefulGrant: 100, leaseMs: 3_600_000 })).status).toBe(200);
      for (let i = 0; i < 400; i++) {
        const h = (await c.holdings("a")) as { groups: { available: string }[] };
        if (BigInt(h.groups[0]!.available) >= 50n) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      let open: string[] = [];
      for (const point of ["before-reservation", "between-commits", "after-both"] as const) {
        const key = `job-${point}`;
        await restart(faulty(point));
        await c.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 3 }, { idempotencyKey: key });
        const afterCrash = await openIds(c);
        // the failed attempt opened at most one reservation
        expect(afterCrash.length - open.length).toBeLessThanOrEqual(point === "before-reservation" ? 0 : 1);
        await restart();
        const retry = await c.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: "3" }, { idempotencyKey: key });
        expect(retry.status, `${point}: ${JSON.stringify(retry.body)}`).toBe(201);
        const now = await openIds(c);
        const added = now.filter((id) => !open.includes(id));
        expect(added, point).toEqual([(retry.body as { id: string }).id]);
        // and it stays one: another retry, and another restart, answer the same reservation
        expect((await c.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 3 }, { idempotencyKey: key })).body).toEqual(retry.body);
        await restart();
        expect((await c.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 3 }, { idempotencyKey: key })).body).toEqual(retry.body);
        // another amount under the key is still a reuse of the key
        expect((await c.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 4 }, { idempotencyKey: key })).status).toBe(409);
        expect(await openIds(c)).toEqual(now);
        open = now;
      }
    } finally {
      c.close();
      await d.close().catch(() => {});
      await s.close().catch(() => {});
    }
  });

  it("an answer whose write fails while the daemon runs is still what its retry gets, without a restart", async () => {
    const s = await soloDaemon({ supply: 1_000_000n, tree: "a=1" }, (cfg) => cfg, { wrapReserveMemory: faulty("between-commits") });
    try {
      expect((await s.client.raw("POST", "/v1/demand", { leaf: "a", targetOutstanding: 100, maximumUsefulGrant: 100, leaseMs: 3_600_000 })).status).toBe(200);
      for (let i = 0; i < 400; i++) {
        const h = (await s.client.holdings("a")) as { groups: { available: string }[] };
        if (BigInt(h.groups[0]!.available) >= 50n) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const first = await s.client.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 3 }, { idempotencyKey: "live" });
      const retry = await s.client.raw("POST", "/v1/reservations", { leaf: "a", maximumCost: 3 }, { idempotencyKey: "live" });
      expect(retry.status).toBe(201);
      const ids = await openIds(s.client);
      expect(ids).toEqual([(retry.body as { id: string }).id]);
      expect(first).toEqual(retry);
    } finally {
      await s.close();
    }
  });
});
