// `heddle claims …` for the keeper and advisory modes against two static daemons (in-process, ephemeral ports):
// human tables say the mode's guarantee, --json prints the API's answer, and the exit codes are the documented ones.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initCluster, loadConfig, silentLogger, startDaemon, type DaemonConfig, type RunningDaemon } from "@heddle/daemon";
import { EXIT } from "../src/exit-codes.ts";
import { heddleOn } from "./support/cli.ts";

let dir: string;
let a: RunningDaemon;
let b: RunningDaemon;

const heddle = (argv: string[], on: RunningDaemon) => heddleOn(on, argv);

/**
 * Polls `f` until it holds. A call that fails (a CLI call answering nothing on a loaded machine, so its JSON does
 * not parse) counts as "not yet"; the last such error is reported if time runs out.
 */
async function until(what: string, f: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 15_000;
  let last: unknown = null;
  for (;;) {
    try {
      if (await f()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`${what}: timed out${last === null ? "" : ` (last error: ${String(last)})`}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "heddle-cli-claims-"));
  const peers = await initCluster({ dir: join(dir, "c"), peers: 2, mode: "static" });
  const claims: DaemonConfig["claims"] = {
    keeperRules: { invoices: "stays-put" },
    keeperTimings: { renewEveryMs: 200, aliveMs: 2_000, settlingMs: 500, othersHeardMs: 1_000 },
    antiEntropyMs: 200,
  };
  const fast = (c: DaemonConfig): DaemonConfig => ({ ...c, api: { ...c.api, port: 0 }, listen: c.listen.map((x) => x.replace(/\/tcp\/[0-9]+/, "/tcp/0")), claims });
  a = await startDaemon(fast(loadConfig(peers[0]!.config)), { logger: silentLogger });
  const cb = fast(loadConfig(peers[1]!.config));
  b = await startDaemon({ ...cb, roster: cb.roster.map((p) => (p.id === a.self ? { ...p, addrs: [...a.p2pAddrs] } : p)) }, { logger: silentLogger });
});

afterAll(async () => {
  await b?.close();
  await a?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("heddle claims: keeper and advisory", () => {
  it("keeper: a table with the guarantee, --check exits 10 until this peer may act", async () => {
    const first = await heddle(["claims", "keeper", "invoices", "--take", "--check"], a);
    expect(first.code).toBe(EXIT.notYours); // it keeps the part but has not settled yet
    expect(first.out).toMatch(/^part\s+rule\s+keeper\s+here\s+settled\s+may act/m);
    expect(first.out).toMatch(/invoices\s+stays-put\s+\S+\s+yes\s+no\s+no/);
    expect(first.out).toMatch(/keeper mode: a lease by one peer with settling/);
    await until("a may act", async () => (await heddle(["claims", "look", "invoices", "--check"], a)).code === EXIT.ok);
    await until("b sees a", async () => (JSON.parse((await heddle(["claims", "look", "invoices", "--json"], b)).out) as { keeper: string }).keeper === a.self);
    const all = JSON.parse((await heddle(["claims", "look", "--json"], b)).out) as { mode: string; parts: { part: string; keeps: boolean }[] };
    expect(all).toMatchObject({ mode: "keeper", parts: [{ part: "invoices", keeps: false }] });
    expect((await heddle(["claims", "look", "invoices", "--check"], b)).code).toBe(EXIT.notYours);
    const closed = await heddle(["claims", "close", "invoices", "--wrote-up-to", "12", "--json"], a);
    expect(closed.code).toBe(EXIT.ok);
    expect(JSON.parse(closed.out)).toMatchObject({ mode: "keeper", keeps: false, closed: [{ peer: a.self, wroteUpTo: 12 }] });
  });

  it("advisory: the earliest claimant wins; the loser exits 10 and sees the duplicate", async () => {
    const won = await heddle(["claims", "advisory", "job-1", "--ttl", "60000"], a);
    expect(won.code).toBe(EXIT.ok);
    expect(won.out).toMatch(/advisory mode: best effort/);
    await until("b sees job-1 held", async () => (JSON.parse((await heddle(["claims", "holders", "job-1", "--json"], b)).out) as { holder: string | null }).holder === a.self);
    const lost = await heddle(["claims", "advisory", "job-1", "--json"], b);
    expect(lost.code).toBe(EXIT.notYours);
    expect(JSON.parse(lost.out)).toMatchObject({ mode: "advisory", holder: a.self, mine: false, duplicates: [{ loser: b.self }] });
    const next = await heddle(["claims", "next", "job-1", "job-2", "--json"], b);
    expect(JSON.parse(next.out)).toMatchObject({ first: "job-2" });
    expect((await heddle(["claims", "drop", "job-1"], b)).out).toMatch(/dropped job-1/);
  });

  it("usage mistakes exit 2, unknown parts exit 7 naming the field", async () => {
    expect((await heddle(["claims", "keeper"], a)).code).toBe(EXIT.usage);
    expect((await heddle(["claims", "advisory", "x", "--ttl", "soon"], a)).code).toBe(EXIT.usage);
    const bad = await heddle(["claims", "keeper", "payroll"], a);
    expect(bad.code).toBe(EXIT.invalid);
    expect(bad.err).toMatch(/part .*no keeper part "payroll".*configured: invoices/);
  });
});
