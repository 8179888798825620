// A keyed mint or enroll must name its holder (replica), over HTTP on a two-peer governed cluster. Left out, it
// means "the peer that receives the call", so the same Idempotency-Key retried through the other peer was another
// act: answered 409 keyReuse with the advice "send a new key" — which, followed, minted twice (review-124 item 1).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { initCluster, loadConfig, silentLogger, startDaemon, type RunningDaemon } from "../src/index.ts";

let dir: string;
const daemons: RunningDaemon[] = [];
const clients: HeddleClient[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "heddle-keyed-default-"));
  const peers = await initCluster({ dir: join(dir, "c"), peers: 2, mode: "governed" });
  for (const p of peers) {
    const d = await startDaemon(loadConfig(p.config), { logger: silentLogger });
    daemons.push(d);
    clients.push(new HeddleClient({ url: d.url, token: d.token }));
  }
  for (const c of clients) {
    let writable = false;
    for (let i = 0; i < 600 && !writable; i++) {
      writable = ((await c.status()) as { control: { isWritable: boolean } }).control.isWritable;
      if (!writable) await new Promise((r) => setTimeout(r, 50));
    }
    if (!writable) throw new Error("a peer of the two-peer governed cluster was not writable after 600 status polls 50 ms apart");
  }
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const d of daemons) await d.close();
  rmSync(dir, { recursive: true, force: true });
});

const minted = async (c: HeddleClient): Promise<string> => ((await c.sync()) as { mintedTotal: string }).mintedTotal;

describe("keyed mint and enroll name their holder / replica", () => {
  it("a keyed mint without holder is 400 naming holder and this peer's id, and mints nothing; named, its retry through the other peer applies once", async () => {
    const [a, b] = clients as [HeddleClient, HeddleClient];
    const [da] = daemons as [RunningDaemon, RunningDaemon];
    const before = await minted(a);
    const bare = await a.raw("POST", "/v1/control/mint", { amount: 100 }, { idempotencyKey: "mint-retry-1" });
    expect(bare.status).toBe(400);
    expect(bare.body).toMatchObject({ error: "invalid-request", issues: [{ field: "holder", in: "body" }] });
    expect((bare.body as { message: string }).message).toContain(JSON.stringify(da.self));
    expect(await minted(a)).toBe(before);

    const first = await a.raw("POST", "/v1/control/mint", { amount: 100, holder: da.self }, { idempotencyKey: "mint-retry-1" });
    expect(first.status).toBe(200);
    const retry = await b.raw("POST", "/v1/control/mint", { amount: "100", holder: da.self }, { idempotencyKey: "mint-retry-1" });
    expect(retry.status).toBe(200);
    expect((retry.body as { index: number }).index).toBe((first.body as { index: number }).index);
    expect((retry.body as { mintId: string }).mintId).toBe((first.body as { mintId: string }).mintId);
    expect(await minted(b)).toBe((BigInt(before) + 100n).toString());
  });

  it("a keyed enroll without replica is 400 naming replica; named, its retry through the other peer is the same act", async () => {
    const [a, b] = clients as [HeddleClient, HeddleClient];
    const [da] = daemons as [RunningDaemon, RunningDaemon];
    const bare = await a.raw("POST", "/v1/control/enroll", {}, { idempotencyKey: "enroll-retry-1" });
    expect(bare.status).toBe(400);
    expect(bare.body).toMatchObject({ error: "invalid-request", issues: [{ field: "replica", in: "body" }] });
    // nothing was proposed under the key
    expect((await a.raw("GET", "/v1/control/outcome?idempotencyKey=enroll-retry-1")).status).toBe(404);

    const first = await a.raw("POST", "/v1/control/enroll", { replica: da.self }, { idempotencyKey: "enroll-retry-1" });
    expect(first.status).toBe(200);
    const retry = await b.raw("POST", "/v1/control/enroll", { replica: da.self }, { idempotencyKey: "enroll-retry-1" });
    expect(retry.status).toBe(200);
    expect((retry.body as { index: number }).index).toBe((first.body as { index: number }).index);
  });

  it("calls without a key still default to the receiving peer (each is a new act)", async () => {
    const [, b] = clients as [HeddleClient, HeddleClient];
    const [, db] = daemons as [RunningDaemon, RunningDaemon];
    const before = await minted(b);
    const m = await b.raw("POST", "/v1/control/mint", { amount: 7 });
    expect(m.status).toBe(200);
    expect(await minted(b)).toBe((BigInt(before) + 7n).toString());
    const view = (await b.controlView()) as { minted: Record<string, { holder: string; amount: string }> };
    expect(view.minted[(m.body as { mintId: string }).mintId]).toMatchObject({ holder: db.self, amount: "7" });
    expect((await b.raw("POST", "/v1/control/enroll", {})).status).toBe(200);
  });
});
