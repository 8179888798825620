// A stays-put part stays with its keeper across that keeper's restart (claims.md §3 stays-put: the live claim with
// the latest takenAt, else the oldest live claim). The node persists its own keeper slot with each write and
// continues it after a restart — same claimedAt and takenAt — instead of writing a fresh claim (claimedAt = now, no
// takenAt) under the new epoch that replaced the old one everywhere and handed the part to another peer.
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { memoryStore, sqliteStore, type HeddleStore } from "../src/index.ts";
import { failingStore } from "../src/testing.ts";
import { Cluster } from "./node-sim.ts";

const TIMINGS = { renewEveryMs: 1_000, aliveMs: 5_000, settlingMs: 2_000, unclosedMs: 60_000, othersHeardMs: 2_000 };
const CLAIMS = { keeperRules: { invoices: "stays-put" }, keeperTimings: TIMINGS, antiEntropyMs: 500, tickMs: 100 } as const;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** a takes "invoices" on purpose; b and c claim it later; all agree on a. `frozen` makes a's store refuse commits. */
function takenByA(store: (id: string) => HeddleStore): { c: Cluster; frozen: { on: boolean }; takenAt: number } {
  const frozen = { on: false };
  const c = new Cluster({
    seed: 7,
    supply: { a: 100n, b: 100n, c: 100n },
    config: { claims: CLAIMS },
    wrapStore: (id) => (id === "a" ? failingStore(store(id), () => frozen.on) : store(id)),
  });
  const takenAt = c.n("a").gossipClaims.keeper("invoices", { take: true }).claim!.takenAt!;
  c.timers.advanceBy(1_000);
  c.n("b").gossipClaims.keeper("invoices");
  c.n("c").gossipClaims.keeper("invoices");
  c.timers.advanceBy(TIMINGS.settlingMs + 1_000);
  for (const id of ["a", "b", "c"]) expect(c.n(id).gossipClaims.look("invoices").keeper).toBe("a");
  expect(c.n("a").gossipClaims.look("invoices").mayAct).toBe(true);
  return { c, frozen, takenAt };
}

function expectKeptByA(c: Cluster, takenAt: number): void {
  for (const id of ["a", "b", "c"]) {
    const v = c.n(id).gossipClaims.look("invoices");
    expect({ id, keeper: v.keeper, takenAt: v.claim?.takenAt }).toEqual({ id, keeper: "a", takenAt });
  }
  expect(c.n("a").gossipClaims.look("invoices").mayAct).toBe(true);
  expect(c.n("b").gossipClaims.look("invoices").mayAct).toBe(false);
}

describe("a stays-put part across its keeper's restart (claims.md §3)", () => {
  it("a crash (its claim left open): the restarted node renews the same claim by itself, and keeps the part", () => {
    const { c, frozen, takenAt } = takenByA(() => memoryStore());
    // a hard crash: nothing more reaches a's disk (its shutdown cannot close the claim there)
    frozen.on = true;
    c.crash("a");
    frozen.on = false;
    c.timers.advanceBy(2_000);
    c.restart("a");
    // the app has not asked again; the claim is the old one, renewed under the new epoch, and the others hold it
    c.timers.advanceBy(TIMINGS.settlingMs + 2 * CLAIMS.antiEntropyMs);
    expect(c.n("a").gossipClaims.slots().keeper.get("a")!.version >= 2n ** 32n * 2n).toBe(true);
    expectKeptByA(c, takenAt);
    // well past UNCLOSED of the pre-crash renewals, it is still a's: its claim has been renewed all along
    c.timers.advanceBy(2 * TIMINGS.unclosedMs);
    expectKeptByA(c, takenAt);
  });

  it("a clean quit and restart: the app's renewal reopens the claim keeping its takenAt (sqlite store)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-keeper-restart-"));
    dirs.push(dir);
    const stores = new Map<string, HeddleStore>();
    const { c, takenAt } = takenByA((id) => {
      const s = id === "a" ? sqliteStore(join(dir, "a.sqlite")) : memoryStore();
      stores.set(id, s);
      return s;
    });
    c.crash("a"); // the simulation's crash shuts the node down: it closes its claims, committed to its store
    await c.stopped("a"); // the old process is gone (its store, and the file's lock, closed) before a new one opens it
    c.timers.advanceBy(2_000);
    // a new process opens the same file
    const p = c.peers.get("a")!;
    p.store = sqliteStore(join(dir, "a.sqlite"));
    c.restart("a");
    const renewed = c.n("a").gossipClaims.keeper("invoices"); // what the app does at start-up
    expect(renewed.claim).toMatchObject({ takenAt });
    c.timers.advanceBy(TIMINGS.settlingMs + 2 * CLAIMS.antiEntropyMs);
    expectKeptByA(c, takenAt);
    for (const s of [p.store, ...stores.values()]) s.close();
  });

  it("a store that refuses the write refuses the keeper write too: nothing changes, nothing is sent", () => {
    const { c, frozen } = takenByA(() => memoryStore());
    const before = c.n("a").gossipClaims.slots().keeper.get("a");
    frozen.on = true;
    expect(() => c.n("a").gossipClaims.keeper("invoices", { wroteUpTo: 5 })).toThrow(/store refused to persist this peer's keeper slot/);
    expect(c.n("a").gossipClaims.slots().keeper.get("a")).toBe(before);
  });
});

describe("a restored claim on a part the config no longer lists (claims.md §3 Close)", () => {
  const rules = (keeperRules: Record<string, "stays-put" | "follows-you">) => ({ claims: { ...CLAIMS, keeperRules } });
  const BOTH = rules({ reminders: "stays-put", invoices: "stays-put" });
  const WITHOUT_REMINDERS = rules({ invoices: "stays-put" });

  /** a takes "reminders" (stays-put: an unclosed lapsed claim holds it for UNCLOSED), b claims it too; then a crashes hard. */
  async function crashedKeeper(seed: number) {
    const frozen = { on: false };
    const c = new Cluster({ seed, supply: { a: 100n, b: 100n }, config: BOTH, wrapStore: (_, s) => failingStore(s, () => frozen.on) });
    c.n("a").gossipClaims.keeper("reminders", { take: true });
    c.timers.advanceBy(1_000);
    c.n("b").gossipClaims.keeper("reminders");
    c.timers.advanceBy(TIMINGS.settlingMs + 1_000);
    expect(c.n("b").gossipClaims.look("reminders").keeper).toBe("a");
    // a hard crash: its shutdown cannot close the claim on disk, so the store keeps it open
    frozen.on = true;
    c.crash("a");
    await c.stopped("a").catch(() => undefined);
    const a = (id: string) => c.n(id).gossipClaims.slots().keeper.get("a")?.claims.find((x) => x.part === "reminders");
    return { c, frozen, a };
  }

  it("the restarted node closes it at boot and sends the close: the others stop waiting out UNCLOSED at once", async () => {
    const { c, frozen, a } = await crashedKeeper(3);
    frozen.on = false;
    const crashedAt = c.timers.now();
    // the operator drops the part from a's config and restarts it (b still lists it)
    c.restart("a", WITHOUT_REMINDERS);
    expect(a("a")?.closedAt).toBe(Math.floor(c.timers.now()));
    expect(c.n("a").gossipClaims.closedAtBoot).toEqual(["reminders"]);
    expect(c.n("a").gossipClaims.counters().unconfiguredClosed).toBe(1);
    // far inside aliveMs and unclosedMs of a's last renewal: without the close b would keep waiting for a
    c.timers.advanceBy(2 * CLAIMS.antiEntropyMs);
    expect(c.timers.now() - crashedAt).toBeLessThan(TIMINGS.aliveMs);
    expect(a("b")?.closedAt).toBe(a("a")!.closedAt);
    const seen = c.n("b").gossipClaims.look("reminders");
    expect({ keeper: seen.keeper, closed: seen.closed.map((x) => x.peer) }).toEqual({ keeper: "b", closed: ["a"] });
    // the close was persisted: the next boot restores it closed and closes nothing more
    c.crash("a");
    await c.stopped("a");
    c.restart("a", WITHOUT_REMINDERS);
    expect(a("a")?.closedAt).toBeTypeOf("number");
    expect({ closedAtBoot: c.n("a").gossipClaims.closedAtBoot, count: c.n("a").gossipClaims.counters().unconfiguredClosed }).toEqual({ closedAtBoot: [], count: 0 });
    await c.n("a").shutdown();
  });

  it("a store that refuses the boot close leaves it open (the node failed closed); shutdown still closes it without a rule and resolves", async () => {
    const { c, frozen, a } = await crashedKeeper(4);
    c.restart("a", WITHOUT_REMINDERS); // still frozen: the boot close is refused
    c.timers.advanceBy(1_000); // a and b meet again
    expect(a("b")!.closedAt).toBeUndefined(); // nothing refused was sent
    expect(c.n("a").metrics().failed).toBe(true);
    expect(a("a")).toMatchObject({ peer: "a" });
    expect(a("a")!.closedAt).toBeUndefined();
    expect(c.n("a").gossipClaims.closedAtBoot).toEqual([]);
    frozen.on = false;
    await expect(c.n("a").shutdown()).resolves.toBeUndefined();
    // the quit closed it in memory and sent it (best effort), though the failed node persists nothing
    c.timers.advanceBy(1_000);
    expect(a("b")?.closedAt).toBeTypeOf("number");
  });
});
