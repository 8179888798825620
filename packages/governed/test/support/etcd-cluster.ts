/**
 * A real etcd cluster for tests and benches (issue 18): `size` members of Debian's `etcd` (etcd-server 3.4) on free
 * loopback ports with a temporary data directory, each member killable (SIGKILL) and restartable on its data, plus
 * a TCP proxy per heddle member in front of etcd so a test can cut that member's connections (its watch and its
 * calls) and let it reconnect; a member can also be frozen (SIGSTOP: alive, connections open, silent) and thawed.
 * `etcdAvailable()` says whether the binary is installed.
 */
import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Etcd3 } from "etcd3";
import { freeListenPort } from "@heddle/seam";
import type { Committed, EtcdControlLog } from "../../src/index.ts";

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The first `n` entries `log` yields from index `from` on. */
export async function take(log: EtcdControlLog, from: number, n: number): Promise<Committed[]> {
  const out: Committed[] = [];
  for await (const c of log.committedFrom(from)) {
    out.push(c);
    if (out.length === n) break;
  }
  return out;
}

/** The etcd binary, if installed (`.ci/run` installs etcd-server when missing). */
export function etcdBinary(): string | null {
  for (const bin of ["/usr/bin/etcd", "etcd"]) {
    try {
      execFileSync(bin, ["--version"], { stdio: "ignore" });
      return bin;
    } catch {
      // next
    }
  }
  return null;
}

/**
 * A loopback port free now, for a process we start next (etcd binds it itself): `freeListenPort`, which picks it
 * outside the ephemeral range — a port from `listen(0)` is free again the moment we close it, and under a parallel
 * test run another test's outgoing connection or `listen(0)` can take it before etcd binds it (an etcd member then
 * exits at start, which is how a CI run once failed). `EtcdCluster` also checks every member stays up.
 */
export function freePort(): Promise<number> {
  return freeListenPort();
}

/** A loopback TCP proxy to `target` whose connections a test can cut, and which can refuse new ones for a while. */
export class CutProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #refusing = false;
  port = 0;
  cuts = 0;

  private constructor(target: () => number) {
    this.#server = createServer((client) => {
      if (this.#refusing) return void client.destroy();
      const upstream = createConnection({ host: "127.0.0.1", port: target() });
      this.#sockets.add(client);
      this.#sockets.add(upstream);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
      };
      client.on("error", drop).on("close", drop);
      upstream.on("error", drop).on("close", drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  static async start(target: () => number): Promise<CutProxy> {
    const p = new CutProxy(target);
    await new Promise<void>((resolve) => p.#server.listen(0, "127.0.0.1", resolve));
    p.port = (p.#server.address() as { port: number }).port;
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Destroys every open connection; with `refuseMs`, new ones are refused for that long. */
  cut(refuseMs = 0): void {
    this.cuts++;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    if (refuseMs > 0) {
      this.#refusing = true;
      setTimeout(() => (this.#refusing = false), refuseMs).unref();
    }
  }

  /** Refuses (and cuts) until `resume()`. */
  hold(): void {
    this.#refusing = true;
    this.cut();
  }

  resume(): void {
    this.#refusing = false;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

interface Member {
  readonly name: string;
  readonly peerPort: number;
  readonly clientPort: number;
  proc: ChildProcess | null;
  /** Started and not killed on purpose: if its process is gone, it died. */
  wanted: boolean;
  /** The tail of its stderr, for the error when it dies. */
  stderr: string;
}

/** `size` etcd members on loopback. */
export class EtcdCluster {
  readonly dir: string;
  readonly members: Member[];
  readonly #bin: string;
  readonly #token: string;
  readonly #extraArgs: readonly string[];

  private constructor(bin: string, dir: string, members: Member[], extraArgs: readonly string[]) {
    this.#bin = bin;
    this.#extraArgs = extraArgs;
    this.dir = dir;
    this.members = members;
    this.#token = `heddle-test-${process.pid}-${Date.now()}`;
  }

  /**
   * Starts `size` fresh members (each also given `extraArgs`, e.g. `["--max-request-bytes", "65536"]`); a member
   * that dies at start (a port taken meanwhile) means fresh ports, up to 3 tries.
   */
  static async start(size = 3, extraArgs: readonly string[] = []): Promise<EtcdCluster> {
    const bin = etcdBinary();
    if (bin === null) throw new Error("etcd is not installed (apt-get install etcd-server)");
    for (let attempt = 1; ; attempt++) {
      const dir = mkdtempSync(join(tmpdir(), "heddle-etcd-"));
      const members: Member[] = [];
      for (let i = 0; i < size; i++) members.push({ name: `e${i}`, peerPort: await freePort(), clientPort: await freePort(), proc: null, wanted: false, stderr: "" });
      const c = new EtcdCluster(bin, dir, members, extraArgs);
      for (let i = 0; i < size; i++) c.startMember(i);
      try {
        await c.ready();
        return c;
      } catch (e) {
        await c.stop();
        if (attempt >= 3) throw e;
      }
    }
  }

  get endpoints(): string[] {
    return this.members.map((m) => `http://127.0.0.1:${m.clientPort}`);
  }

  /** Starts (or restarts, on its data) member `i`. */
  startMember(i: number): void {
    const m = this.members[i]!;
    if (m.proc !== null) return;
    m.wanted = true;
    m.stderr = "";
    const initial = this.members.map((x) => `${x.name}=http://127.0.0.1:${x.peerPort}`).join(",");
    // prettier-ignore
    m.proc = spawn(this.#bin, [
      "--name", m.name, "--data-dir", join(this.dir, m.name),
      "--listen-peer-urls", `http://127.0.0.1:${m.peerPort}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${m.peerPort}`,
      "--listen-client-urls", `http://127.0.0.1:${m.clientPort}`, "--advertise-client-urls", `http://127.0.0.1:${m.clientPort}`,
      "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", this.#token,
      "--logger", "zap", "--log-level", "error", "--heartbeat-interval", "50", "--election-timeout", "500",
      ...this.#extraArgs,
    ], { stdio: ["ignore", "ignore", "pipe"] });
    const proc = m.proc;
    proc.stderr?.setEncoding("utf8").on("data", (d: string) => (m.stderr = (m.stderr + d).slice(-2_000)));
    proc.on("exit", () => {
      if (m.proc === proc) m.proc = null;
    });
  }

  /** SIGKILLs member `i` and waits for it to exit. */
  async kill(i: number): Promise<void> {
    const p = this.members[i]!.proc;
    this.members[i]!.wanted = false;
    if (p === null) return;
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    p.kill("SIGKILL");
    await exited;
    this.members[i]!.proc = null;
  }

  /** SIGSTOPs member `i`: its process and connections stay, but it answers nothing until `thaw(i)`. */
  freeze(i: number): void {
    this.members[i]!.proc?.kill("SIGSTOP");
  }

  /** SIGCONTs member `i` after `freeze(i)`. */
  thaw(i: number): void {
    this.members[i]!.proc?.kill("SIGCONT");
  }

  /** Index of the member that currently leads, or null. */
  async leader(): Promise<number | null> {
    for (let i = 0; i < this.members.length; i++) {
      if (this.members[i]!.proc === null) continue;
      const c = new Etcd3({ hosts: this.endpoints[i]!, dialTimeout: 500 });
      try {
        const s = await c.maintenance.status({ deadline: new Date(Date.now() + 500) });
        if (s.leader !== "0" && s.leader === s.header.member_id) return i;
      } catch {
        // down or starting
      } finally {
        c.close();
      }
    }
    return null;
  }

  /** Waits until every running member answers a linearizable read. */
  /** Throws if a member that should run has died (a port taken, a crash), with the tail of its stderr. */
  alive(): void {
    for (let i = 0; i < this.members.length; i++) {
      const m = this.members[i]!;
      if (m.wanted && m.proc === null) throw new Error(`etcd member ${i} exited (client port ${m.clientPort}, peer port ${m.peerPort}): ${m.stderr.trim() || "no stderr"}`);
    }
  }

  /** Waits until every running member answers a linearizable read; throws if a member that should run has died. */
  async ready(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (let i = 0; i < this.members.length; i++) {
      this.alive();
      if (this.members[i]!.proc === null) continue;
      const c = new Etcd3({ hosts: this.endpoints[i]!, dialTimeout: 500 });
      try {
        for (;;) {
          try {
            await c.kv.range({ key: Buffer.from("heddle-probe") }, { deadline: new Date(Date.now() + 1_000) });
            break;
          } catch (e) {
            this.alive();
            if (Date.now() > until) throw new Error(`etcd member ${i} not ready: ${(e as Error).message}`);
            await sleep(100);
          }
        }
      } finally {
        c.close();
      }
    }
    this.alive();
  }

  async stop(): Promise<void> {
    for (let i = 0; i < this.members.length; i++) await this.kill(i);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
