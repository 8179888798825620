// What the daemon must not lose on a restart (found in review: both lived in memory only): standing demand
// set through the API comes back until its lease ends, and a reserve retried under its Idempotency-Key after
// the restart gets the first answer instead of a second reservation.
import { describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { silentLogger, startDaemon } from "../src/index.ts";
import { soloDaemon } from "./support/embedded.ts";

describe("daemon state across a restart (daemon.sqlite)", () => {
  it("restores standing demand until its lease ends and replays keyed reserve answers", async () => {
    const s = await soloDaemon({ supply: 1_000_000n, tree: "a=1,b=1" });
    const leaf = "a";
    try {
      expect((await s.client.raw("POST", "/v1/demand", { leaf, targetOutstanding: 100, maximumUsefulGrant: 10, leaseMs: 3_600_000 })).status).toBe(200);
      expect((await s.client.raw("POST", "/v1/demand", { leaf: "b", targetOutstanding: 5, maximumUsefulGrant: 5, leaseMs: 150 })).status).toBe(200);
      for (let i = 0; i < 200; i++) {
        const h = (await s.client.holdings(leaf)) as { groups: { available: string }[] };
        if (BigInt(h.groups[0]!.available) >= 10n) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const first = await s.client.reserve(leaf, 5, { idempotencyKey: "job-1" });
      const refused = await s.client.raw("POST", "/v1/reservations", { leaf: "nowhere", maximumCost: 1 }, { idempotencyKey: "job-2" });
      expect(refused.status).toBe(409);
      s.client.close();
      await s.daemon.close();
      // b's lease (150 ms: a lease must outlast one scheduler interval, init's 100 ms) ends while the daemon is down
      await new Promise((r) => setTimeout(r, 200));

      const d2 = await startDaemon(s.config, { logger: silentLogger });
      const c = new HeddleClient({ url: d2.url, token: d2.token });
      try {
        const demand = (await c.raw("GET", "/v1/demand")).body as { standing: { edge: string; demand: { targetOutstanding: string } }[] };
        // a's demand is back; b's 150 ms lease lapsed before the restart and is not
        expect(demand.standing.map((d) => d.edge)).toEqual(["root→a"]);
        expect(demand.standing[0]!.demand.targetOutstanding).toBe("100");
        const retry = await c.raw("POST", "/v1/reservations", { leaf, maximumCost: 5 }, { idempotencyKey: "job-1" });
        expect(retry.status).toBe(201);
        expect(retry.body).toMatchObject({ id: first.id });
        expect(((await c.reservations()) as { reservations: { id: string }[] }).reservations.map((r) => r.id)).toEqual([first.id]);
        const again = await c.raw("POST", "/v1/reservations", { leaf: "nowhere", maximumCost: 1 }, { idempotencyKey: "job-2" });
        expect(again).toEqual(refused);
        const reuse = await c.raw("POST", "/v1/reservations", { leaf, maximumCost: 6 }, { idempotencyKey: "job-1" });
        expect(reuse.status).toBe(409);
        // a withdrawal is durable too
        expect((await c.raw("POST", "/v1/demand", { leaf, targetOutstanding: 0, maximumUsefulGrant: 0 })).status).toBe(200);
      } finally {
        c.close();
        await d2.close();
      }
      const d3 = await startDaemon(s.config, { logger: silentLogger });
      const c3 = new HeddleClient({ url: d3.url, token: d3.token });
      try {
        expect(((await c3.raw("GET", "/v1/demand")).body as { standing: unknown[] }).standing).toEqual([]);
      } finally {
        c3.close();
        await d3.close();
      }
    } finally {
      await s.close().catch(() => {});
    }
  });
});

describe("DaemonState (daemon.sqlite) itself", () => {
  it("keeps the newest keepReserveKeys keyed answers and refuses to open for another peer or cluster", async () => {
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { DaemonState, DaemonStateError } = await import("../src/daemon-state.ts");
    const dir = mkdtempSync(join(tmpdir(), "heddle-daemon-state-"));
    try {
      const path = join(dir, "daemon.sqlite");
      const owner = { peer: "p1", genesis: "0123456789abcdef" };
      const st = new DaemonState(path, 2, owner);
      const m = st.reserveMemory();
      for (const k of ["k1", "k2", "k3"]) m.put(k, { body: `["a","${k}"]`, status: 201, payload: { id: k } });
      expect(m.get("k1")).toBeUndefined();
      expect(m.get("k2")).toEqual({ body: '["a","k2"]', status: 201, payload: { id: "k2" } });
      expect(m.get("k3")?.payload).toEqual({ id: "k3" });
      m.put("k2", { body: '["a","k2"]', status: 201, payload: { id: "k2" } }); // a replayed put keeps its place
      expect(m.get("k2")).toBeDefined();
      expect(m.get("k3")).toBeDefined();
      st.close();
      for (const other of [{ peer: "p2", genesis: owner.genesis }, { peer: "p1", genesis: "fedcba9876543210" }]) {
        expect(() => new DaemonState(path, 2, other)).toThrow(DaemonStateError);
      }
      const again = new DaemonState(path, 2, owner);
      expect(again.reserveMemory().get("k3")?.payload).toEqual({ id: "k3" });
      again.close();

      // a file from before answers were kept under their key's tag: its raw keys are rewritten once, at open
      const { DatabaseSync } = await import("node:sqlite");
      const { reserveTagOf } = await import("../src/reserve-memory.ts");
      const oldPath = join(dir, "old.sqlite");
      const db = new DatabaseSync(oldPath);
      db.exec(`CREATE TABLE reserve_keys (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, body TEXT NOT NULL, status INTEGER NOT NULL, payload TEXT NOT NULL) STRICT;
        CREATE TABLE owner (k TEXT PRIMARY KEY NOT NULL, v TEXT NOT NULL) STRICT;`);
      db.prepare("INSERT INTO owner (k, v) VALUES ('peer', ?), ('genesis', ?)").run(owner.peer, owner.genesis);
      db.prepare("INSERT INTO reserve_keys (key, body, status, payload) VALUES ('job-7', '[\"a\",\"5\"]', 201, '{\"id\":\"r7\"}')").run();
      db.close();
      for (let open = 0; open < 2; open++) {
        const migrated = new DaemonState(oldPath, 2, owner);
        expect(migrated.reserveMemory().get(reserveTagOf("job-7"))).toEqual({ body: '["a","5"]', status: 201, payload: { id: "r7" } });
        expect(migrated.reserveMemory().get("job-7")).toBeUndefined();
        migrated.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
