/**
 * A 3-voter governed heddle cluster of daemon processes for the claims benches (`network.ts`, `anatomy.ts`): made
 * with the CLI (`heddle init --peers 3 --mode governed` + `heddle up --detach`) in a temporary directory, a client
 * per peer, and `stop()` to take it all down again.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { HeddleClient } from "@heddle/client";

const CLI_MAIN = fileURLToPath(new URL("../../cli/src/main.ts", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface BenchCluster {
  /** A client of each peer, peer 1 first. */
  readonly peers: readonly HeddleClient[];
  /** Each peer's API token, in the same order. */
  readonly tokens: readonly string[];
  /** Each peer's daemon process id, in the same order. */
  readonly pids: readonly number[];
  /** The peer whose Raft member leads with all three enrolled; waits up to 60 s. */
  findLeader(): Promise<HeddleClient>;
  /** Closes the clients, stops the daemons and removes the directory; says so, rather than throwing, if `down` fails. */
  stop(): void;
}

/** Starts the cluster; on a failure to start, whatever was started is stopped before the error is thrown. */
export function startBenchCluster(prefix: string): BenchCluster {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const cluster = join(dir, "cluster");
  const cli = (args: string[]) => execFileSync(process.execPath, [CLI_MAIN, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const peers: HeddleClient[] = [];
  const tokens: string[] = [];
  const stop = (): void => {
    for (const c of peers) c.close();
    try {
      cli(["down", cluster]);
    } catch (e) {
      console.log(`heddle down failed: ${(e as Error).message}`);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    cli(["init", "--peers", "3", "--mode", "governed", cluster]);
    cli(["up", "--detach", cluster]);
    for (const i of [1, 2, 3]) {
      const conf = JSON.parse(readFileSync(join(cluster, `peer-${i}`, "heddle.json"), "utf8")) as { api: { listen: string } };
      tokens.push(readFileSync(join(cluster, `peer-${i}`, "token"), "utf8").trim());
      peers.push(new HeddleClient({ url: `http://${conf.api.listen}`, token: tokens[tokens.length - 1]!, maxSockets: 128 }));
    }
    const pids = [1, 2, 3].map((i) => Number(readFileSync(join(cluster, `peer-${i}`, "daemon.pid"), "utf8").trim()));
    const findLeader = async (): Promise<HeddleClient> => {
      for (let t = 0; t < 600; t++) {
        for (const p of peers) {
          try {
            const r = (await p.roster()) as { enrolled: string[]; raft: { role: string } };
            if (r.raft.role === "leader" && r.enrolled.length === 3) return p;
          } catch {
            // not up yet
          }
        }
        await sleep(100);
      }
      throw new Error("heddle: no leader with all three peers enrolled within 60 s");
    };
    return { peers, tokens, pids, findLeader, stop };
  } catch (e) {
    stop();
    throw e;
  }
}
