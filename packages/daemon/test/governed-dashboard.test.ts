// The dashboard and /metrics of a governed peer (a one-voter cluster, in-process): the Raft member's role,
// term, commit and applied index, and the claims held and refused — in the scrape against the peer's own
// reads through its API, and on the page in headless Chromium, following a claim taken and released live
// (screenshot in .ci-results/dashboard-governed.png).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./support/browser.ts";
import { governedSoloDaemon, type SoloDaemon } from "./support/embedded.ts";
import { parsePrometheus, type Scrape } from "./support/prometheus.ts";

const ARTIFACTS = fileURLToPath(new URL("../../../.ci-results/", import.meta.url));
let s: SoloDaemon;
let browser: Browser;

interface RaftRead {
  role: string;
  leader: string | null;
  commitIndex: number;
  voters: string[];
}

async function scrape(): Promise<Scrape> {
  const r = await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: `Bearer ${s.daemon.token}` } });
  expect(r.status).toBe(200);
  return parsePrometheus(await r.text());
}

/** The Raft member and the applied index as the API reports them, read until two reads agree (nothing in flight). */
async function settled(): Promise<{ raft: RaftRead; appliedIndex: number }> {
  let last = "";
  for (let i = 0; i < 100; i++) {
    await s.client.sync();
    const r = (await s.client.roster()) as { raft: RaftRead; appliedIndex: number };
    const now = JSON.stringify(r);
    if (now === last) return { raft: r.raft, appliedIndex: r.appliedIndex };
    last = now;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error("the Raft member kept moving");
}

beforeAll(async () => {
  s = await governedSoloDaemon();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe("a governed peer's /metrics and dashboard", () => {
  it("exports the Raft member and the claims as the peer reports them", async () => {
    const taken = (await s.client.claimsTake({ holder: "alice", resources: [{ key: "deploy", mode: "exclusive" }] })) as { claims: { ok: boolean } };
    expect(taken.claims.ok).toBe(true);
    const refused = await s.client.raw("POST", "/v1/claims/take", { holder: "bob", resources: [{ key: "deploy", mode: "exclusive" }] });
    expect(refused.status).toBe(409);

    const { raft, appliedIndex } = await settled();
    const m = await scrape();
    expect(raft.role).toBe("leader");
    expect(m.one("heddle_raft_role", { role: "leader" })).toBe(1);
    for (const role of ["follower", "candidate", "learner"]) expect(m.one("heddle_raft_role", { role })).toBe(0);
    expect(m.one("heddle_raft_commit_index")).toBe(raft.commitIndex);
    expect(m.one("heddle_raft_applied_index")).toBe(appliedIndex);
    expect(m.one("heddle_raft_apply_lag")).toBe(raft.commitIndex - appliedIndex);
    // a leader acts in a term it made durable: at least 1
    expect(m.one("heddle_raft_term")).toBeGreaterThanOrEqual(1);
    expect(m.types.get("heddle_raft_leader_changes_total")).toBe("counter");
    expect(m.types.get("heddle_raft_subscriber_errors_total")).toBe("counter");
    expect(m.one("heddle_raft_subscriber_errors_total")).toBe(0);
    // no retire proposed here: every kind of partial witness at 0, each present (the governed peer wires its counts)
    expect(m.types.get("heddle_retire_witness_partial_total")).toBe("counter");
    for (const witness of ["slice-only", "omitted", "unbalanced"]) expect(m.one("heddle_retire_witness_partial_total", { witness })).toBe(0);

    const open = ((await s.client.claimsList()) as { open: unknown[] }).open;
    expect(open.length).toBe(1);
    expect(m.one("heddle_claims_held")).toBe(open.length);
    const refusals = m.all("heddle_claims_refused_total");
    expect(refusals.reduce((a, x) => a + x.value, 0)).toBe(1);
    expect(refusals[0]!.labels["reason"]).toBeTruthy();

    // the transport's loss counters read the seam the node and the Raft member share (one mux per seam)
    expect(m.all("heddle_seam_frames_lost_total").map((x) => x.labels["reason"]).sort()).toEqual(["discarded", "send-error"]);
    expect(m.types.get("heddle_seam_frames_unheard_total")).toBe("counter");
    expect(m.one("heddle_liveness_subscriber_errors_total")).toBe(0);

    // a governed peer's API counts its control routes too
    expect(m.one("heddle_api_requests_total", { route: "/v1/claims/take", method: "POST", status: "409" })).toBe(1);
  });

  it("shows the Raft member and the claims on the page, and follows a claim released without a reload", async () => {
    const page: Page = await browser.newPage({ viewport: { width: 1366, height: 860 } });
    const errors: string[] = [];
    page.on("console", (x) => {
      if (x.type() === "error") errors.push(x.text());
    });
    try {
      await page.goto(`${s.daemon.url}/dashboard#token=${encodeURIComponent(s.daemon.token)}`);
      await page.waitForSelector('body[data-synced="true"]', { timeout: 15_000 });
      await page.evaluate(() => ((globalThis as unknown as { heddleMark: number }).heddleMark = 7));
      expect(await page.locator("#mode").textContent()).toBe("governed");

      const field = (f: string) => page.locator(`#raft [data-field="${f}"]`).first().textContent();
      const { raft, appliedIndex } = await settled();
      const m = await scrape();
      await expect.poll(() => field("role")).toBe(raft.role);
      await expect.poll(() => field("term")).toBe(String(m.one("heddle_raft_term")));
      await expect.poll(() => field("commitIndex")).toBe(String(raft.commitIndex));
      await expect.poll(() => field("appliedIndex")).toBe(String(appliedIndex));

      // the claim the first test took: holder and fencing token as the API reports them
      const open = ((await s.client.claimsList()) as { open: { key: string; holder: string; token: number }[] }).open;
      expect(open.length).toBe(1);
      expect(open[0]).toMatchObject({ key: "deploy", holder: "alice" });
      const row = page.locator('#claims [data-claim="deploy"]');
      await expect.poll(() => row.count()).toBe(1);
      expect(await row.textContent()).toContain("alice");
      expect(await row.locator('[data-field="token"]').textContent()).toBe(String(open[0]!.token));
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, "dashboard-governed.png"), fullPage: true });

      // released through the API: the row goes, the commit index moves on, no reload
      expect(await s.client.claimsRelease("alice", "deploy")).toMatchObject({ claims: true });
      await expect.poll(() => row.count(), { timeout: 5_000 }).toBe(0);
      const after = await settled();
      expect(after.raft.commitIndex).toBeGreaterThan(raft.commitIndex);
      await expect.poll(() => field("commitIndex"), { timeout: 5_000 }).toBe(String(after.raft.commitIndex));
      expect(await page.evaluate(() => (globalThis as unknown as { heddleMark?: number }).heddleMark)).toBe(7);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
