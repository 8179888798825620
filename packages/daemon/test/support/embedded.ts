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

/** What `soloDaemon` (and `governedSoloDaemon`) hand back: the folder, the peer, its config, the running daemon and a client on it. */
export type SoloDaemon = Awaited<ReturnType<typeof soloDaemon>>;

/** What `governedSoloDaemon` may vary: the config (after the ports go ephemeral) and the start options. */
export interface GovernedSoloOptions {
  /** Edits the peer's config before it starts, as `soloDaemon`'s `patch`. */
  readonly config?: (c: DaemonConfig) => DaemonConfig;
  /** Passed to `startDaemon` (e.g. `{ idempotencyWindow }`); the logger stays silent. */
  readonly start?: Omit<StartDaemonOptions, "logger">;
}

/**
 * A one-peer governed cluster (a single-voter control plane) in a temp folder, running in-process, returned
 * once `/v1/status` says `control.isWritable`: even a lone voter has to elect itself and apply its own enrol
 * before the writer gate opens (governed.md §3.9), and the tests' first writes assume it is open. Polls every
 * 50 ms, 300 times at most, and throws (after closing the daemon) if the gate never opened, rather than hand
 * over a peer whose first write fails for a reason the test does not name. `close()` stops the daemon and
 * removes the folder, as for `soloDaemon`.
 */
export async function governedSoloDaemon(options: GovernedSoloOptions = {}): Promise<SoloDaemon> {
  const s = await soloDaemon({ mode: "governed" }, options.config, options.start);
  for (let i = 0; i < 300; i++) {
    const st = (await s.client.status()) as { control: { isWritable: boolean } };
    if (st.control.isWritable) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  await s.close();
  throw new Error("the one-voter governed daemon was not writable after 300 status polls 50 ms apart");
}
