// Granted claims over HTTP on a one-voter governed peer: a take the applied table refuses is answered by the
// leader at a confirmed read (no entry appended, the refusal names the holder); a take with an Idempotency-Key
// goes through the log; a take whose blocker's lease has lapsed on the leader's clock is granted through the log.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { soloDaemon } from "./support/embedded.ts";

let s: Awaited<ReturnType<typeof soloDaemon>>;

const commitIndex = async (): Promise<number> => ((await s.client.roster()) as { raft: { commitIndex: number } }).raft.commitIndex;
const take = (holder: string, key: string, extra: Record<string, unknown> = {}, idempotencyKey?: string) =>
  s.client.raw("POST", "/v1/claims/take", { holder, resources: [{ key, mode: "exclusive" }], ...extra }, idempotencyKey === undefined ? {} : { headers: { "idempotency-key": idempotencyKey } });

beforeAll(async () => {
  s = await soloDaemon({ mode: "governed" });
  for (let i = 0; i < 300; i++) {
    const st = (await s.client.status()) as { control: { isWritable: boolean } };
    if (st.control.isWritable) break;
    await new Promise((r) => setTimeout(r, 50));
  }
});
afterAll(() => s.close());

describe("HTTP API: claims refusals without a commit", () => {
  it("refuses at a confirmed read, naming the holder, and appends nothing", async () => {
    const granted = await take("alice", "deploy");
    expect(granted.status).toBe(200);
    const grantIndex = (granted.body as { index: number }).index;
    const before = await commitIndex();
    expect(before).toBeGreaterThanOrEqual(grantIndex);
    for (let i = 0; i < 20; i++) {
      const r = await take(`bob-${i}`, "deploy");
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ error: "refused", committed: false, index: null, refusal: { kind: "blocked", ok: false, blocked: [{ key: "deploy", reason: "held", holders: ["alice"] }] } });
      expect((r.body as { readIndex: number }).readIndex).toBeGreaterThanOrEqual(grantIndex);
    }
    expect(await commitIndex()).toBe(before);
    // the holder itself is granted (idempotent re-take, claims.md rule 1) through the log, same token
    const again = await take("alice", "deploy");
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ claims: { ok: true, grants: [{ key: "deploy", existing: true }] } });
  });

  it("sends a take with an Idempotency-Key through the log (its recorded outcome is what a retry answers)", async () => {
    const before = await commitIndex();
    const r = await take("carol", "deploy", {}, "carol-deploy-1");
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ committed: true, refusal: { blocked: [{ holders: ["alice"] }] } });
    expect((r.body as { index: number }).index).toBeGreaterThan(before);
  });

  it("judges leases on the leader's clock: once the holder's lease lapsed, the next take is granted through the log", async () => {
    const a = await take("erin", "lease", { ttlMs: 300 });
    expect(a.status).toBe(200);
    const tokenA = (a.body as { claims: { grants: { token: number }[] } }).claims.grants[0]!.token;
    const early = await take("frank", "lease");
    expect(early.body).toMatchObject({ committed: false, refusal: { blocked: [{ holders: ["erin"] }] } });
    await new Promise((r) => setTimeout(r, 400));
    const late = await take("frank", "lease");
    expect(late.status).toBe(200);
    const tokenB = (late.body as { claims: { grants: { token: number }[] } }).claims.grants[0]!.token;
    expect(tokenB).toBeGreaterThan(tokenA);
  });
});
