/**
 * Governed peers as separate OS processes (`fixtures/governed-process.ts`) over libp2p on 127.0.0.1 with SQLite:
 * start, introduce (each learns the others' listen addresses), ask and tell over JSON lines, SIGKILL and restart from
 * the same directory. Used by the process test and by the benchmark.
 */
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { loadOrCreatePeerKey, peerIdOf } from "@heddle/node";

const script = join(import.meta.dirname, "..", "fixtures", "governed-process.ts");
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export type Reply = Record<string, unknown> & { req?: number };

/** One governed peer process. */
export class GovProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly index: number;
  id = "";
  addr = "";
  stderr = "";
  enrolled = false;
  #req = 0;
  readonly #waiting = new Map<number, (r: Reply) => void>();
  readonly #ready: Promise<void>;

  constructor(dir: string, index: number, ids: string[], voters: string[], learners: string[], snapshotEvery: number) {
    this.index = index;
    this.child = spawn(process.execPath, [script, dir, String(index), JSON.stringify(ids), JSON.stringify(voters), JSON.stringify(learners), String(snapshotEvery)], { stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr.on("data", (d) => (this.stderr += String(d)));
    let onReady: () => void = () => {};
    this.#ready = new Promise((r) => (onReady = r));
    createInterface({ input: this.child.stdout }).on("line", (l) => {
      const m = JSON.parse(l) as Reply;
      if (m.ev === "ready") {
        this.id = m.id as string;
        this.addr = m.addr as string;
        onReady();
      } else if (m.ev === "enrolled") this.enrolled = true;
      else if (m.req !== undefined) {
        this.#waiting.get(m.req)?.(m);
        this.#waiting.delete(m.req);
      }
    });
  }

  async ready(): Promise<void> {
    await Promise.race([
      this.#ready,
      sleep(60_000).then(() => {
        throw new Error(`process ${this.index} did not start: ${this.stderr.slice(-2000)}`);
      }),
    ]);
  }

  ask(cmd: Record<string, unknown>, ms = 30_000): Promise<Reply> {
    const req = ++this.#req;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.#waiting.delete(req);
        reject(new Error(`process ${this.index}: no answer to ${JSON.stringify(cmd)}; stderr: ${this.stderr.slice(-1000)}`));
      }, ms);
      this.#waiting.set(req, (r) => {
        clearTimeout(t);
        resolve(r);
      });
      this.child.stdin.write(JSON.stringify({ ...cmd, req }) + "\n");
    });
  }

  tell(cmd: Record<string, unknown>): void {
    this.child.stdin.write(JSON.stringify(cmd) + "\n");
  }
}

/** A cluster of governed peer processes in `dir`: the first `voters` indexes vote, the next `learners` learn. */
export class GovProcessCluster {
  readonly dir: string;
  readonly ids: string[] = [];
  readonly voters: string[] = [];
  readonly learners: string[] = [];
  readonly members = new Map<number, GovProcess>();
  readonly snapshotEvery: number;

  private constructor(dir: string, snapshotEvery: number) {
    this.dir = dir;
    this.snapshotEvery = snapshotEvery;
  }

  static async create(dir: string, voters: number, learners: number, snapshotEvery = 4096): Promise<GovProcessCluster> {
    const c = new GovProcessCluster(dir, snapshotEvery);
    for (let i = 0; i < voters + learners; i++) c.ids.push(peerIdOf(await loadOrCreatePeerKey(join(dir, `n${i}.key`))));
    c.voters.push(...c.ids.slice(0, voters));
    c.learners.push(...c.ids.slice(voters));
    return c;
  }

  /** Starts process `i` (again, after a kill: same key, same stores) and introduces everyone to everyone. */
  async start(i: number): Promise<GovProcess> {
    const m = new GovProcess(this.dir, i, this.ids, this.voters, this.learners, this.snapshotEvery);
    await m.ready();
    if (m.id !== this.ids[i]) throw new Error(`process ${i} runs as ${m.id}, expected ${this.ids[i]}`);
    this.members.set(i, m);
    for (const a of this.members.values()) for (const b of this.members.values()) if (a !== b) a.tell({ cmd: "addr", id: b.id, addr: b.addr });
    return m;
  }

  kill(i: number): void {
    this.members.get(i)?.child.kill("SIGKILL");
    this.members.delete(i);
  }

  all(): GovProcess[] {
    return [...this.members.values()];
  }

  byId(id: string): GovProcess | undefined {
    return this.all().find((m) => m.id === id);
  }

  /** The one live process that leads (polling statuses), within `ms`. */
  async leader(ms = 30_000): Promise<GovProcess> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const live = this.all();
      const st = await Promise.all(live.map((m) => m.ask({ cmd: "status" })));
      const leaders = st.filter((s) => s.role === "leader");
      if (leaders.length === 1) return live[st.indexOf(leaders[0]!)]!;
      await sleep(100);
    }
    throw new Error("no single leader");
  }

  async enrolled(ms = 30_000): Promise<void> {
    const end = Date.now() + ms;
    while (!this.all().every((m) => m.enrolled)) {
      if (Date.now() > end) throw new Error(`not every process enrolled itself: ${this.all().filter((m) => !m.enrolled).map((m) => m.index)}`);
      await sleep(50);
    }
  }

  stopAll(): void {
    for (const m of this.members.values()) m.child.kill("SIGKILL");
    this.members.clear();
  }
}
