// `GET /v1/demand` and `heddle demand` while the periodic refresh of the demand slot keeps failing: a reshape that
// lengthens a lineage makes the rolled-up demand too large for the slot. What was advertised before stays in the
// slot but is no longer re-sent, so it lapses on the peers; the answer used to list it as advertised all the same.
// Now it says the refresh fails (why, since when, the last success) and marks each lapsed entry.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governedSoloDaemon, type SoloDaemon } from "../../daemon/test/support/embedded.ts";
import { EXIT } from "../src/exit-codes.ts";
import { heddleOn } from "./support/cli.ts";

/** Edge ids of one length, so every entry of the slot takes the same bytes. */
const edge = (kind: string, i: number) => `${kind}${String(i).padStart(3, "0")}-${"w".repeat(100)}`;
const TTL_MS = 1_500;

interface DemandView {
  standing: { edge: string }[];
  advertised: Record<string, unknown>;
  advertisements: { edge: string; advertisedAt: number; lapsesAt: number; live: boolean }[];
  refresh: { ok: boolean; lastSuccessAt: number | null; failing: null | { code: string; limit?: string; value?: number; since: number; lastAt: number; count: number; unadvertised: number } };
}

let s: SoloDaemon;
beforeAll(async () => {
  // the smallest frame the config allows, so some 30 of these edges fill the slot; a short TTL so entries lapse soon
  s = await governedSoloDaemon({ config: (c) => ({ ...c, node: { ...c.node, maxFrameBytes: 4096, demandTtlMs: TTL_MS }, limits: { ...c.limits, maxBodyBytes: 4096 } }) });
});
afterAll(() => s.close());

const view = async () => (await s.client.raw("GET", "/v1/demand")).body as DemandView;
async function until(what: string, ok: (v: DemandView) => boolean): Promise<DemandView> {
  for (let i = 0; i < 400; i++) {
    const v = await view();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`GET /v1/demand never showed ${what}: ${JSON.stringify(await view())}`);
}

describe("demand refresh failing", () => {
  it("GET /v1/demand and heddle demand say the refresh fails, since when and why, and mark lapsed entries", async () => {
    const c = s.client;
    const demand = { targetOutstanding: 10, maximumUsefulGrant: 5, leaseMs: 3_600_000 };
    await c.mint(1_000); // the root is a root (lineages reach it) once it holds supply
    // fill the slot with one-entry demands (edges under the root) until one does not fit
    let full = -1;
    for (let i = 0; i < 80 && full < 0; i++) {
      await c.prepare({ id: edge("f", i), parent: "root", child: `g${i}`, weight: 1 });
      await c.activate(edge("f", i));
      if ((await c.raw("POST", "/v1/demand", { edge: edge("f", i), ...demand })).status !== 200) full = i;
    }
    expect(full).toBeGreaterThan(1);
    // one slot entry free: a demand on p→c, whose parent p is not attached yet, rolls up to nothing above it
    expect((await c.raw("POST", "/v1/demand", { edge: edge("f", 0), targetOutstanding: 0, maximumUsefulGrant: 0 })).status).toBe(200);
    await c.prepare({ id: edge("q", 0), parent: "root", child: "q", weight: 1 });
    await c.prepare({ id: edge("p", 0), parent: "q", child: "p", weight: 1 });
    await c.prepare({ id: edge("c", 0), parent: "p", child: "c", weight: 1 });
    await c.activate(edge("c", 0)); // demand stands only on an ACTIVE edge
    const set = await c.raw("POST", "/v1/demand", { edge: edge("c", 0), ...demand });
    expect(set.status).toBe(200);
    expect((set.body as { refresh: DemandView["refresh"] }).refresh).toMatchObject({ ok: true, failing: null });
    const before = await view();
    expect(before.refresh.ok).toBe(true);
    expect(before.advertisements.every((a) => a.live)).toBe(true);

    // attaching p (under q) lengthens c's lineage: the roll-up now needs root→q and q→p as well, two entries more
    // than the slot holds
    await c.activate(edge("q", 0));
    await c.activate(edge("p", 0));
    const failing = await until("a failing refresh", (v) => !v.refresh.ok && v.refresh.failing!.unadvertised === 2);
    expect(failing.refresh.failing).toMatchObject({ code: "board-full", limit: "maxFrameBytes", value: 4096, unadvertised: 2 });
    expect(failing.refresh.lastSuccessAt).not.toBeNull();
    expect(failing.refresh.failing!.since).toBeGreaterThanOrEqual(failing.refresh.lastSuccessAt!);
    expect(failing.advertisements.some((a) => a.edge === edge("p", 0))).toBe(false);

    // nothing is re-sent while it fails: every entry lapses on the peers and is marked so, and left out of `advertised`
    const lapsed = await until("lapsed entries", (v) => v.advertisements.length > 0 && v.advertisements.every((a) => !a.live));
    expect(lapsed.refresh.ok).toBe(false);
    expect(lapsed.refresh.failing!.since).toBe(failing.refresh.failing!.since);
    expect(lapsed.refresh.failing!.count).toBeGreaterThan(failing.refresh.failing!.count);
    for (const a of lapsed.advertisements) expect(a.lapsesAt).toBe(a.advertisedAt + TTL_MS);
    expect(lapsed.advertised).toEqual({});
    expect(lapsed.standing.map((d) => d.edge)).toContain(edge("c", 0));

    const shown = await heddleOn(s.daemon, ["demand"]);
    expect(shown.code, shown.err).toBe(EXIT.ok);
    expect(shown.out).toMatch(/^refresh {3}FAILING since \S+ \(\d+× in a row, last success \S+\): the rolled-up demand no longer fits this peer's demand slot \(maxFrameBytes 4096;/m);
    expect(shown.out).toContain(`${edge("c", 0)}`);
    expect(shown.out).toMatch(/LAPSED \(peers no longer count it\)/);
    expect(shown.out).not.toMatch(/ live$/m);
    // a withdrawal that is not enough: the answer says the refresh still fails
    const less = await heddleOn(s.daemon, ["demand", "--edge", edge("f", 1), "0"]);
    expect(less.code, less.err).toBe(EXIT.ok);
    expect(less.out).toMatch(/^demand on f001-w+ withdrawn\nrefresh {3}FAILING since .*: 3 edge\(s\) not advertised as wanted/);

    // withdraw another: the roll-up fits again, everything is advertised anew
    expect((await c.raw("POST", "/v1/demand", { edge: edge("f", 2), targetOutstanding: 0, maximumUsefulGrant: 0 })).status).toBe(200);
    const healed = await until("a working refresh", (v) => v.refresh.ok);
    expect(healed.refresh.failing).toBeNull();
    expect(healed.refresh.lastSuccessAt).toBeGreaterThan(lapsed.refresh.failing!.lastAt);
    expect(healed.advertisements.every((a) => a.live)).toBe(true);
    expect(healed.advertisements.map((a) => a.edge)).toEqual(expect.arrayContaining([edge("q", 0), edge("p", 0), edge("c", 0)]));
    expect((await heddleOn(s.daemon, ["demand"])).out).toMatch(/^refresh {3}ok \(last /m);
  });
});
