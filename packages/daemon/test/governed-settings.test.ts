// A governed peer whose decision-affecting config (mode.root, mode.claims.*) differs from what its control log fixed
// halts its control plane instead of re-deciding the log under other settings, and says which config key to fix: in
// GET /v1/status (control.halted), in one error log line, and in the 503 a control call gets.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { initCluster, loadConfig, silentLogger, startDaemon, type DaemonConfig, type Logger, type RunningDaemon } from "../src/index.ts";
import { onEphemeralPorts } from "./support/embedded.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function running(config: DaemonConfig, logger: Logger = silentLogger): Promise<{ daemon: RunningDaemon; client: HeddleClient; stop(): Promise<void> }> {
  const daemon = await startDaemon(config, { logger });
  const client = new HeddleClient({ url: daemon.url, token: daemon.token });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    client.close();
    await daemon.close();
  };
  cleanups.push(stop);
  return { daemon, client, stop };
}

type Status = { control: { isWritable: boolean; halted: { index: number; message: string; settings: { setting: string; configKey: string }[] } | null } };

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within 300 polls 50 ms apart`);
}

const take = (client: HeddleClient, holder: string) => client.raw("POST", "/v1/claims/take", { holder, resources: [{ key: "pool", mode: "shared" }] });

describe("governed daemon: the control log fixes its decision-affecting settings", () => {
  it("restarted without its mode.claims.capacity line, a peer halts and names mode.claims.capacity in status, the log and a call's 503", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-settings-test-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "governed" });
    const base = onEphemeralPorts(loadConfig(peer!.config));
    const mode = base.mode as Extract<DaemonConfig["mode"], { kind: "governed" }>;
    const withCapacity = { ...base, mode: { ...mode, claims: { capacity: { pool: 2 } } } } as DaemonConfig;

    const first = await running(withCapacity);
    await until("writable", async () => ((await first.client.status()) as Status).control.isWritable || undefined);
    for (const holder of ["w1", "w2"]) expect((await take(first.client, holder)).body).toMatchObject({ kind: "applied", claims: { ok: true } });
    expect(((await first.client.status()) as Status).control.halted).toBeNull();
    await first.stop();

    const errors: string[] = [];
    const logger: Logger = { ...silentLogger, error: (msg) => void errors.push(msg) };
    const second = await running({ ...withCapacity, mode }, logger); // the capacity line lost
    const halted = await until("halted", async () => ((await second.client.status()) as Status).control.halted ?? undefined);
    expect(halted.settings).toEqual([{ setting: "claims.capacity", configKey: "mode.claims.capacity" }]);
    expect(halted.message).toMatch(/mode\.claims\.capacity — the log's is 1 key \(sha256 [0-9a-f]{32}\), this member's is empty/);
    expect(halted.message).toContain("set mode.claims.capacity to the cluster's value");
    expect(errors.filter((m) => m.includes("mode.claims.capacity"))).toHaveLength(1);
    const status = (await second.client.status()) as Status;
    expect(status.control.isWritable).toBe(false);
    // it answers no claim from a state decided under its own settings
    const refused = await take(second.client, "w3");
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: "unavailable", message: expect.stringContaining("mode.claims.capacity") });
    await second.stop();

    // with the line back, it replays and runs on: the third shared take is refused by capacity 2, as on the cluster
    const third = await running(withCapacity);
    await until("writable", async () => ((await third.client.status()) as Status).control.isWritable || undefined);
    expect(((await third.client.status()) as Status).control.halted).toBeNull();
    expect((await take(third.client, "w3")).body).toMatchObject({ error: "refused", refusal: { kind: "blocked", blocked: [{ key: "pool", reason: "capacity", capacity: 2, holders: ["w1", "w2"] }] } });
  }, 60_000);
});
