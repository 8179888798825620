// Real daemons as OS processes, driven only through the CLI and the HTTP API.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.ts";
import { eventually, heddle, heddleBackground, heddleJson, type Background } from "./support/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "heddle-e2e-"));
const cluster = join(dir, "cluster");
const cfg = (i: number) => join(cluster, `peer-${i}`, "heddle.json");
const background: Background[] = [];

afterAll(async () => {
  for (const b of background) if (b.proc.exitCode === null && b.proc.signalCode === null) b.proc.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Status with the peers table, over HTTP (polling through the CLI would start a process per poll). */
async function statusOf(i: number): Promise<any> {
  const [s, p] = await Promise.all([http(i, "GET", "/v1/status"), http(i, "GET", "/v1/peers")]);
  return { ...s.body, peers: p.body.peers };
}

/** A service's HTTP call, as curl would make it. */
async function http(i: number, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const conf = JSON.parse(readFileSync(cfg(i), "utf8"));
  const token = readFileSync(join(cluster, `peer-${i}`, "token"), "utf8").trim();
  const r = await fetch(`http://${conf.api.listen}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: await r.json() };
}

describe("a static three-peer cluster of daemons, end to end", () => {
  it("init → up → work → kill -9 and restart → converge → clean stop", async () => {
    // init
    const init = await heddle(["init", "--peers", "3", "--mode", "static", "--supply", "1000", "--tree", "tenant-a=3,tenant-b=1,tenant-a>batch=1", cluster]);
    expect(init.code, init.err).toBe(0);
    expect(init.out).toContain(`heddle up ${cluster}`);

    // up
    const up = heddleBackground(["up", cluster]);
    background.push(up);
    await up.waitFor(/3 peer\(s\) running/);

    // status: every peer sees the two others
    for (const i of [1, 2, 3]) {
      await eventually(async () => {
        const s = await statusOf(i);
        return s.peers.filter((p: any) => !p.self && p.connected).length === 2 ? true : undefined;
      }, 30_000, `peer-${i} connected to both others`);
    }
    const tree = await heddleJson(["tree", "--config", cfg(1)]);
    expect(tree.edges.map((e: any) => e.id).sort()).toEqual(["root→tenant-a", "root→tenant-b", "tenant-a→batch"]);

    // work from a client over HTTP, on peer 2: stand demand, then reserve and complete
    expect((await http(2, "POST", "/v1/demand", { leaf: "batch", targetOutstanding: "200", maximumUsefulGrant: "50" })).status).toBe(200);
    let charged = 0n;
    await eventually(async () => {
      const r = await http(2, "POST", "/v1/reservations", { leaf: "batch", maximumCost: "10" });
      if (r.status !== 201) return undefined;
      const c = await http(2, "POST", "/v1/reservations/complete", { id: r.body.id, actualCost: "6" });
      expect(c.body).toMatchObject({ charged: "6", outcome: "charged" });
      charged += 6n;
      return true;
    }, 20_000, "a reserve at batch on peer 2");
    // and from the CLI, for scripts
    const id = (await heddle(["reserve", "batch", "4", "--config", cfg(2)])).out.trim();
    expect(id).toMatch(/\/[0-9]+\/[0-9]+$/);
    expect((await heddle(["complete", id, "4", "--config", cfg(2)])).out).toBe("charged 4\n");
    charged += 4n;

    // kill -9 peer 2 and restart it from its store
    const pid2 = (await heddleJson(["status", "--config", cfg(2)])).pid as number;
    process.kill(pid2, "SIGKILL");
    await up.waitFor(/peer-2 exited \(SIGKILL\)/);
    const down = await heddle(["status", "--config", cfg(2)]);
    expect(down.code).toBe(EXIT.unreachable);
    await eventually(async () => {
      const s = await statusOf(1);
      return s.peers[1].connected === false ? true : undefined;
    }, 20_000, "peer-1 sees peer-2 gone");
    const restarted = heddleBackground(["start", "--config", cfg(2)]);
    background.push(restarted);
    await restarted.waitFor(/heddle peer started/);
    const s2 = await heddleJson(["status", "--config", cfg(2)]);
    expect(s2.epoch).toBe(2);
    expect(BigInt(s2.leafSpentTotal)).toBe(charged);
    await eventually(async () => {
      const s = await statusOf(1);
      const p2 = s.peers.find((p: any) => p.id === s2.self);
      return p2.connected && !p2.unreachable ? true : undefined;
    }, 30_000, "status on peer-1 shows peer-2 back");
    const human = await heddle(["status", "--config", cfg(1)]);
    expect(human.out).toContain("2 of 2 other peer(s) connected");

    // the dashboard's address (token in the fragment) opens the page; the token scrapes /metrics
    const dash = await heddle(["dashboard", "--config", cfg(1)]);
    expect(dash.code).toBe(0);
    const m = /^(https?:\/\/[^/]+)\/dashboard#token=(\S+)\n$/.exec(dash.out);
    expect(m).not.toBeNull();
    const page = await fetch(`${m![1]}/dashboard`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>heddle");
    const scrape = await fetch(`${m![1]}/metrics`, { headers: { authorization: `Bearer ${decodeURIComponent(m![2]!)}` } });
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(/^heddle_up 1$/m);

    // ledgers converge: withdraw the demand, then every peer holds byte-identical ledgers
    await http(2, "POST", "/v1/demand", { leaf: "batch", targetOutstanding: "0", maximumUsefulGrant: "0" });
    const digests = await eventually(async () => {
      const ds = await Promise.all([1, 2, 3].map((i) => statusOf(i)));
      return ds.every((d) => d.ledgerDigest === ds[0].ledgerDigest && d.conflicts.length === 0) ? ds : undefined;
    }, 60_000, "every peer's ledger digest equal");
    for (const d of digests) {
      expect(d.mintedTotal).toBe("3000");
      expect(BigInt(d.leafSpentTotal)).toBe(charged);
    }

    // a clean stop of the restarted peer, then of the whole cluster
    restarted.proc.kill("SIGTERM");
    expect(await restarted.exited).toBe(0);
    expect(restarted.lines.some((l) => /INFO  stopped/.test(l))).toBe(true);
    up.proc.kill("SIGINT");
    expect(await up.exited).toBe(0);
    expect(up.lines.filter((l) => /\] .*INFO  stopped/.test(l))).toHaveLength(2);
    const after = await heddle(["status", "--config", cfg(1)]);
    expect(after.code).toBe(EXIT.unreachable);
    expect(after.err).toMatch(/is the daemon running\?/);
    expect(after.err).toMatch(/heddle start --config/);
  });
});

describe("the CLI's errors", () => {
  it("wrong token → exit 5 and what to do; usage → exit 2; bad config → exit 8 naming the field; busy port → exit 9", async () => {
    const solo = join(dir, "solo");
    expect((await heddle(["init", "--peers", "1", "--mode", "static", solo])).code).toBe(0);
    const conf = join(solo, "peer-1", "heddle.json");
    const d = heddleBackground(["start", "--config", conf, "--log-format", "json"]);
    background.push(d);
    const started = JSON.parse(await d.waitFor(/"msg":"heddle peer started"/));
    expect(started).toMatchObject({ level: "info", mode: "static" });
    const url = started.api as string;

    const wrong = await heddle(["status", "--url", url, "--token", "wrong-token-wrong-token"]);
    expect(wrong.code).toBe(EXIT.unauthorized);
    expect(wrong.err).toMatch(/refused the token.*--config FILE/);
    const noTarget = await heddle(["status"], { env: { HEDDLE_CONFIG: "", HEDDLE_URL: "" } });
    expect(noTarget.code).toBe(EXIT.usage);
    expect((await heddle(["reserve", "batch", "--config", conf])).code).toBe(EXIT.usage);
    expect((await heddle(["frobnicate"])).code).toBe(EXIT.usage);
    expect((await heddle(["status", "--bogus"])).code).toBe(EXIT.usage);
    const refused = await heddle(["mint", "5", "--config", conf]);
    expect(refused.code).toBe(EXIT.refused);
    expect(refused.err).toMatch(/static mode/);

    // the same config again: its ports are taken by the running daemon — this very peer, which it says (not "another process")
    const busy = await heddle(["start", "--config", conf]);
    expect(busy.code).toBe(EXIT.startFailed);
    expect(busy.err).toMatch(new RegExp(`this peer \\(12D3\\w+\\) is already running: pid ${d.proc.pid}, API ${url.replace(/[.]/g, "\\.")}; stop it with kill ${d.proc.pid}`));
    expect(busy.err).not.toMatch(/another process/);

    const bad = join(dir, "bad.json");
    const doc = JSON.parse(readFileSync(conf, "utf8"));
    doc.api.listen = 7201;
    doc.store.path = "x";
    delete doc.identity;
    writeFileSync(bad, JSON.stringify(doc));
    const badRun = await heddle(["start", "--config", bad]);
    expect(badRun.code).toBe(EXIT.config);
    expect(badRun.err).toMatch(/identity: is missing/);
    expect(badRun.err).toMatch(/store\.path: is not a known key/);
    expect(badRun.err).toMatch(/api\.listen: has the wrong type/);

    d.proc.kill("SIGTERM");
    expect(await d.exited).toBe(0);
  });
});
