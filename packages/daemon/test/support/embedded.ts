// Starts daemons in-process on ephemeral ports for tests.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HeddleClient } from "@heddle/client";
import { initCluster, loadConfig, silentLogger, startDaemon, type DaemonConfig, type InitOptions, type RunningDaemon, type StartDaemonOptions } from "../../src/index.ts";

/** `config` with its API and libp2p on port 0 (the OS picks free ports). */
export function onEphemeralPorts(c: DaemonConfig): DaemonConfig {
  return { ...c, api: { ...c.api, port: 0 }, listen: c.listen.map((a) => a.replace(/\/tcp\/[0-9]+/, "/tcp/0")) };
}

/** A one-peer static cluster in a temp folder, running in-process; `close()` stops it and removes the folder. */
export async function soloDaemon(init: Partial<InitOptions> = {}, patch: (c: DaemonConfig) => DaemonConfig = (c) => c, start: Omit<StartDaemonOptions, "logger"> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "heddle-daemon-test-"));
  const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "static", ...init });
  const config = patch(onEphemeralPorts(loadConfig(peer!.config)));
  const daemon: RunningDaemon = await startDaemon(config, { logger: silentLogger, ...start });
  const client = new HeddleClient({ url: daemon.url, token: daemon.token });
  return {
    dir,
    peer: peer!,
    config,
    daemon,
    client,
    async close() {
      client.close();
      await daemon.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
