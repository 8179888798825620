// Keeper and advisory claims over HTTP between two static daemons (libp2p on loopback, ephemeral ports): the answers
// name their mode and guarantee, the peers agree after gossip, bad requests are 400s naming the field, writes past
// a named limit are 409s naming it, and the config's claims section is checked field by field.
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { parsePrometheus } from "./support/prometheus.ts";
import { ConfigError, initCluster, loadConfig, silentLogger, startDaemon, type DaemonConfig, type RunningDaemon } from "../src/index.ts";

let dir: string;
let a: RunningDaemon;
let b: RunningDaemon;
let ca: HeddleClient;
let cb: HeddleClient;
let configFile: string;

const CLAIMS: DaemonConfig["claims"] = {
  keeperRules: { invoices: "stays-put", reminders: "follows-you" },
  keeperTimings: { renewEveryMs: 200, aliveMs: 2_000, settlingMs: 600, othersHeardMs: 1_000 },
  antiEntropyMs: 200,
  maxClaimsPerSlot: 4,
};

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const end = Date.now() + 15_000;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "heddle-gossip-claims-"));
  const peers = await initCluster({ dir: join(dir, "c"), peers: 2, mode: "static" });
  configFile = peers[0]!.config;
  const fast = (c: DaemonConfig): DaemonConfig => ({ ...c, api: { ...c.api, port: 0 }, listen: c.listen.map((x) => x.replace(/\/tcp\/[0-9]+/, "/tcp/0")), claims: CLAIMS });
  a = await startDaemon(fast(loadConfig(peers[0]!.config)), { logger: silentLogger });
  const cfgB = fast(loadConfig(peers[1]!.config));
  b = await startDaemon({ ...cfgB, roster: cfgB.roster.map((p) => (p.id === a.self ? { ...p, addrs: [...a.p2pAddrs] } : p)) }, { logger: silentLogger });
  ca = new HeddleClient({ url: a.url, token: a.token });
  cb = new HeddleClient({ url: b.url, token: b.token });
  await until("connected", () => ca.raw("GET", "/v1/peers"), (r) => (r.body as { peers: { connected: boolean }[] }).peers.every((p) => p.connected));
});

afterAll(async () => {
  ca?.close();
  cb?.close();
  await b?.close();
  await a?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("HTTP API: keeper and advisory claims", () => {
  it("keeper: the peers agree on one keeper, and only it may act once settled", async () => {
    const mine = await ca.raw("POST", "/v1/claims/keeper", { part: "invoices", take: true });
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ mode: "keeper", part: "invoices", rule: "stays-put", keeper: a.self, keeps: true, mayAct: false, settled: false });
    expect((mine.body as { guarantee: string }).guarantee).toMatch(/lease by one peer with settling/);
    expect((await cb.raw("POST", "/v1/claims/keeper", { part: "invoices" })).status).toBe(200);
    const seenByB = await until("b sees a keep invoices", () => cb.raw("GET", "/v1/claims/keeper?part=invoices"), (r) => (r.body as { keeper: string }).keeper === a.self);
    expect(seenByB.body).toMatchObject({ keeps: false, mayAct: false });
    const settled = await until("a settles", () => ca.raw("GET", "/v1/claims/keeper?part=invoices"), (r) => (r.body as { mayAct: boolean }).mayAct);
    expect(settled.body).toMatchObject({ keeper: a.self, unheard: [] });
    // sure once a has also heard b for settlingMs (b claimed just after a took the part)
    const sure = await until("a is sure", () => ca.raw("GET", "/v1/claims/keeper?part=invoices"), (r) => (r.body as { sure: boolean }).sure);
    expect(sure.body).toMatchObject({ keeper: a.self, mayAct: true, unheard: [] });
    // every configured part at once
    const all = await cb.raw("GET", "/v1/claims/keeper");
    expect((all.body as { parts: { part: string }[] }).parts.map((p) => p.part)).toEqual(["invoices", "reminders"]);
    // a closes: b takes over (and must settle in turn); a's wroteUpTo is reported
    const closed = await ca.raw("POST", "/v1/claims/keeper/close", { part: "invoices", wroteUpTo: 17 });
    expect(closed.body).toMatchObject({ keeper: b.self, keeps: false });
    const moved = await until("b keeps invoices", () => cb.raw("GET", "/v1/claims/keeper?part=invoices"), (r) => (r.body as { keeper: string; closed: unknown[] }).keeper === b.self && (r.body as { closed: unknown[] }).closed.length === 1);
    expect((moved.body as { closed: unknown[] }).closed).toEqual([{ peer: a.self, closedAt: expect.any(Number), wroteUpTo: 17 }]);
  });

  it("advisory: the earliest claimant holds the item on both peers, the loser sees its duplicate", async () => {
    const first = await cb.raw("POST", "/v1/claims/advisory", { item: "job-7", ttlMs: 60_000 });
    expect(first.body).toMatchObject({ mode: "advisory", item: "job-7", holder: b.self, mine: true });
    expect((first.body as { guarantee: string }).guarantee).toMatch(/best effort/);
    await new Promise((r) => setTimeout(r, 5));
    await ca.raw("POST", "/v1/claims/advisory", { item: "job-7", ttlMs: 60_000 });
    const seen = await until("a sees b hold job-7", () => ca.raw("GET", "/v1/claims/advisory?item=job-7"), (r) => (r.body as { holder: string }).holder === b.self);
    expect(seen.body).toMatchObject({ mine: false, own: { item: "job-7", peer: a.self }, duplicates: [{ item: "job-7", winner: b.self, loser: a.self }] });
    const list = await until("b lists the duplicate", () => cb.raw("GET", "/v1/claims/advisory"), (r) => (r.body as { duplicates: unknown[] }).duplicates.length === 1);
    expect(list.body).toMatchObject({ mode: "advisory", holders: [{ item: "job-7", holder: b.self }], duplicates: [{ item: "job-7", winner: b.self, loser: a.self }] });
    const next = await ca.raw("POST", "/v1/claims/advisory/next", { candidates: ["job-7", "job-8", "job-9"] });
    expect(next.body).toMatchObject({ mode: "advisory" });
    expect((next.body as { order: string[] }).order.slice().sort()).toEqual(["job-7", "job-8", "job-9"]);
    expect((next.body as { first: string }).first).not.toBe("job-7");
    const dropped = await cb.raw("POST", "/v1/claims/advisory/drop", { item: "job-7" });
    expect(dropped.body).toMatchObject({ dropped: true });
    await until("a holds job-7 after b dropped it", () => ca.raw("GET", "/v1/claims/advisory?item=job-7"), (r) => (r.body as { holder: string }).holder === a.self);
    // the gossip shows in /metrics: both peers' slots held here, frames both ways
    const scrape = parsePrometheus(await (await fetch(`${a.url}/metrics`, { headers: { authorization: `Bearer ${a.token}` } })).text());
    expect(scrape.one("heddle_claims_gossip_slots", { mode: "advisory" })).toBe(2);
    expect(scrape.one("heddle_claims_gossip_slots", { mode: "keeper" })).toBe(2);
    expect(scrape.one("heddle_claims_gossip_frames_total", { direction: "in" })).toBeGreaterThan(0);
    expect(scrape.one("heddle_claims_gossip_frames_total", { direction: "out" })).toBeGreaterThan(0);
  });

  it("bad requests are 400s naming the field; writes past a limit are 409s naming it", async () => {
    const unknown = await ca.raw("POST", "/v1/claims/keeper", { part: "payroll" });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: "invalid-request", issues: [{ field: "part", in: "body" }] });
    expect((unknown.body as { message: string }).message).toMatch(/configured: invoices, reminders/);
    const unknownQuery = await ca.raw("GET", "/v1/claims/keeper?part=payroll");
    expect(unknownQuery.body).toMatchObject({ issues: [{ field: "part", in: "query" }] });
    const badTtl = await ca.raw("POST", "/v1/claims/advisory", { item: "x", ttlMs: 0 });
    expect(badTtl.status).toBe(400);
    expect((badTtl.body as { issues: { field: string }[] }).issues[0]!.field).toBe("ttlMs");
    const extra = await ca.raw("POST", "/v1/claims/advisory", { item: "x", holder: "me" });
    expect(extra.status).toBe(400);
    for (const item of ["l1", "l2", "l3"]) expect((await ca.raw("POST", "/v1/claims/advisory", { item })).status).toBe(200);
    const full = await ca.raw("POST", "/v1/claims/advisory", { item: "l4" });
    expect(full.status).toBe(409);
    expect(full.body).toMatchObject({ error: "refused", refusal: { kind: "limit", limit: "maxClaimsPerSlot" } });
    // granted claims need a governed cluster, and say so
    const granted = await ca.raw("POST", "/v1/claims/take", { holder: "h", resources: [{ key: "k", mode: "exclusive" }] });
    expect(granted.body).toMatchObject({ error: "static-mode", message: expect.stringMatching(/granted claims need a governed cluster.*keeper and advisory claims work here/) });
  });

  it("the config's claims section is checked field by field", () => {
    const doc = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
    const write = (claims: unknown) => {
      const f = join(dir, "c", "bad-claims.json");
      writeFileSync(f, JSON.stringify({ ...doc, identity: { keyFile: join(dir, "c", "peer-1", "peer.key") }, claims }));
      return f;
    };
    const problem = (claims: unknown): string[] => {
      try {
        loadConfig(write(claims));
        return [];
      } catch (e) {
        if (!(e instanceof ConfigError)) throw e;
        return e.issues.map((i) => i.field);
      }
    };
    expect(problem({ keeper: { parts: { invoices: "nearest" } } })[0]).toMatch(/^claims\.keeper\.parts/);
    expect(problem({ antiEntropyMs: 200_000 })).toEqual(["claims.antiEntropyMs"]);
    expect(problem({ keeper: { parts: {}, renewEveryMs: 10_000, aliveMs: 5_000 } })).toEqual(["claims.keeper.renewEveryMs"]);
    expect(problem({ keeper: { parts: {}, settlingMs: 1 } })).toEqual(["claims.keeper.settlingMs"]);
    expect(problem({ keeper: { parts: {}, renewEveryMs: 1_000, aliveMs: 1_500 } })).toEqual(["claims.keeper.aliveMs"]);
    expect(loadConfig(write({ keeper: { parts: { invoices: "stays-put" } }, advisory: { ttlMs: 1_000 } })).claims).toMatchObject({ keeperRules: { invoices: "stays-put" }, advisoryTtlMs: 1_000 });
  });
});
