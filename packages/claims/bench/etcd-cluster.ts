/**
 * A 3-member etcd cluster for the claims benches (`network.ts`, `commit-floor.ts`): `etcd` from PATH, fsync on (its
 * default), every member on free loopback ports with its data directory in one temporary directory, and `stop()` to
 * take it all down again.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Etcd3 } from "etcd3";
import { freeListenPort } from "@heddle/seam";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface EtcdCluster {
  /** The client URL of the member that led when the cluster was found ready. */
  readonly leaderUrl: string;
  /** Each member's process, member e0 first (for a caller that must kill them on its own way out). */
  readonly procs: readonly ChildProcess[];
  /** Kills the members and removes the directory; never throws. */
  stop(): Promise<void>;
}

/**
 * Hooks for a caller that cleans up on its own ways out (a signal, `process.exit`) as well: told of the directory and of
 * each member's process as soon as they exist, before the cluster is ready.
 */
export interface EtcdClusterHooks {
  made?(dir: string): void;
  spawned?(proc: ChildProcess): void;
}

/** Starts the cluster and waits up to 30 s for a leader; on a failure, whatever was started is stopped before the error is thrown. */
export async function startEtcdCluster(prefix: string, hooks: EtcdClusterHooks = {}): Promise<EtcdCluster> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  hooks.made?.(dir);
  const procs: ChildProcess[] = [];
  const probes: Etcd3[] = [];
  const closeProbes = () => {
    for (const p of probes.splice(0)) p.close();
  };
  const stop = async (): Promise<void> => {
    closeProbes();
    for (const p of procs) p.kill("SIGKILL");
    await sleep(300);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const peerPorts: number[] = [];
    const clientPorts: number[] = [];
    const taken = new Set<number>();
    for (let i = 0; i < 3; i++) {
      // one set for the cluster: each pick is probed free, but none is bound until etcd starts
      peerPorts.push(await freeListenPort(taken));
      clientPorts.push(await freeListenPort(taken));
    }
    const initial = peerPorts.map((p, i) => `e${i}=http://127.0.0.1:${p}`).join(",");
    for (let i = 0; i < 3; i++) {
      procs.push(
        spawn("etcd", [
          "--name", `e${i}`, "--data-dir", join(dir, `e${i}`),
          "--listen-peer-urls", `http://127.0.0.1:${peerPorts[i]}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peerPorts[i]}`,
          "--listen-client-urls", `http://127.0.0.1:${clientPorts[i]}`, "--advertise-client-urls", `http://127.0.0.1:${clientPorts[i]}`,
          "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", "heddle-claims-bench",
          "--log-level", "error",
        ], { stdio: "ignore" }),
      );
      hooks.spawned?.(procs[i]!);
      probes.push(new Etcd3({ hosts: `http://127.0.0.1:${clientPorts[i]}` }));
    }
    let leaderUrl: string | null = null;
    for (let t = 0; t < 300 && leaderUrl === null; t++) {
      for (let i = 0; i < 3 && leaderUrl === null; i++) {
        try {
          const s = await probes[i]!.maintenance.status();
          if (s.leader !== "0" && s.header.member_id === s.leader) leaderUrl = `http://127.0.0.1:${clientPorts[i]}`;
        } catch {
          // not up yet
        }
      }
      if (leaderUrl === null) await sleep(100);
    }
    if (leaderUrl === null) throw new Error("etcd: no leader within 30 s (is another etcd using the ports, or the disk full?)");
    closeProbes();
    return { leaderUrl, procs, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
