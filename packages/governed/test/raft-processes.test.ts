/**
 * Real processes over real libp2p on 127.0.0.1 with the segmented log store (and once with SQLite): 3- and
 * 5-voter clusters elect, commit (control commands on stdin, client writes over TCP as the benchmark makes
 * them), lose their leader to SIGKILL, re-elect, keep every acknowledged write, take the killed member back from
 * its store, and a new learner catches up by snapshot.
 */
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { loadOrCreatePeerKey, peerIdOf } from "@heddle/seam";
import { kvTcpClient } from "./support/kv-wire.ts";

const script = join(import.meta.dirname, "fixtures", "raft-process.ts");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Reply = Record<string, unknown> & { req?: number };

class Member {
  readonly child: ChildProcessWithoutNullStreams;
  readonly index: number;
  id = "";
  addr = "";
  kvPort = 0;
  stderr = "";
  #req = 0;
  readonly #waiting = new Map<number, (r: Reply) => void>();
  #ready: Promise<void>;

  constructor(dir: string, index: number, ids: string[], voters: string[], env: Record<string, string>) {
    this.index = index;
    this.child = spawn(process.execPath, [script, dir, String(index), JSON.stringify(ids), JSON.stringify(voters)], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
    this.child.stderr.on("data", (d) => (this.stderr += String(d)));
    let onReady: () => void = () => {};
    this.#ready = new Promise((r) => (onReady = r));
    createInterface({ input: this.child.stdout }).on("line", (l) => {
      const m = JSON.parse(l) as Reply;
      if (m.ev === "ready") {
        this.id = m.id as string;
        this.addr = m.addr as string;
        this.kvPort = m.kvPort as number;
        onReady();
      } else if (m.req !== undefined) {
        this.#waiting.get(m.req)?.(m);
        this.#waiting.delete(m.req);
      }
    });
  }

  async ready(): Promise<void> {
    await Promise.race([this.#ready, sleep(30_000).then(() => { throw new Error(`member ${this.index} did not start: ${this.stderr.slice(-2000)}`); })]);
  }

  ask(cmd: Record<string, unknown>, ms = 10_000): Promise<Reply> {
    const req = ++this.#req;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.#waiting.delete(req);
        reject(new Error(`member ${this.index}: no answer to ${JSON.stringify(cmd)}; stderr: ${this.stderr.slice(-1000)}`));
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

async function scenario(voterCount: number, env: Record<string, string> = {}): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "heddle-raft-procs-"));
  const ids: string[] = [];
  for (let i = 0; i <= voterCount; i++) ids.push(peerIdOf(await loadOrCreatePeerKey(join(dir, `n${i}.key`))));
  const voters = ids.slice(0, voterCount);
  const joinerId = ids[voterCount]!;
  const members = new Map<number, Member>();
  const introduce = (): void => {
    for (const a of members.values()) for (const b of members.values()) if (a !== b) a.tell({ cmd: "addr", id: b.id, addr: b.addr });
  };
  const start = async (i: number): Promise<void> => {
    const m = new Member(dir, i, ids, voters, env);
    await m.ready();
    expect(m.id).toBe(ids[i]);
    members.set(i, m);
    introduce();
  };
  const leader = async (exclude: number | null = null, ms = 20_000): Promise<Member> => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const live = [...members.values()].filter((m) => m.index !== exclude);
      const st = await Promise.all(live.map((m) => m.ask({ cmd: "status" })));
      const leaders = st.filter((s) => s.role === "leader");
      if (leaders.length === 1) return live[st.indexOf(leaders[0]!)]!;
      await sleep(100);
    }
    throw new Error("no single leader");
  };
  const acked = new Set<string>();
  let seq = 0;
  const write = async (via: Member[], value: string): Promise<void> => {
    const key = { client: "test", seq: ++seq };
    for (let attempt = 0; attempt < 10; attempt++) {
      const m = via[attempt % via.length]!;
      const r = await m.ask({ cmd: "propose", key, value }, 10_000);
      if (r.ok === true) {
        acked.add(value);
        return;
      }
      await sleep(150);
    }
    throw new Error(`write ${value} never acknowledged`);
  };
  try {
    for (let i = 0; i < voterCount; i++) await start(i);
    const first = await leader();
    const all = (): Member[] => [...members.values()];
    for (let i = 0; i < 20; i++) await write([all()[i % voterCount]!], `a${i};`);
    // client writes over TCP, pipelined on one connection, as the benchmark drives the leader
    const client = await kvTcpClient(first.kvPort);
    await Promise.all(Array.from({ length: 50 }, (_, i) => client.put(`tcp${i}`, new TextEncoder().encode(`v${i}`))));
    await client.close();
    // SIGKILL the leader; the rest re-elect and keep taking writes (through any member, forwarding included)
    first.child.kill("SIGKILL");
    members.delete(first.index);
    const second = await leader(first.index);
    expect(second.index).not.toBe(first.index);
    const survivors = all();
    for (let i = 0; i < 15; i++) await write([survivors[i % survivors.length]!], `b${i};`);
    // the killed member comes back from its store under the same id
    await start(first.index);
    for (const m of all()) await m.ask({ cmd: "snapshot" });
    // a new learner joins and catches up by InstallSnapshot
    await start(voterCount);
    for (let attempt = 0; ; attempt++) {
      const l = await leader();
      const r = await l.ask({ cmd: "change", target: { voters, learners: [joinerId] } }, 10_000);
      if (r.ok === true) break;
      if (attempt > 10) throw new Error(`membership change failed: ${JSON.stringify(r)}`);
      await sleep(200);
    }
    for (let i = 0; i < 5; i++) await write(all(), `c${i};`);
    const end = Date.now() + 30_000;
    let dumps: Reply[] = [];
    for (;;) {
      const st = await Promise.all(all().map((m) => m.ask({ cmd: "status" })));
      const top = Math.max(...st.map((s) => s.commit as number));
      if (st.every((s) => s.applied === top)) {
        dumps = await Promise.all(all().map((m) => m.ask({ cmd: "dump" })));
        if (dumps.every((d) => d.state === dumps[0]!.state)) {
          const joiner = st.find((s) => s.id === joinerId)!;
          expect(joiner.installs as number).toBeGreaterThanOrEqual(1);
          break;
        }
      }
      if (Date.now() > end) throw new Error(`no convergence: ${JSON.stringify(st)}`);
      await sleep(200);
    }
    expect(dumps[0]!.state as string).toContain("tcp49");
    const log = (dumps[0]!.log as string).split(";").filter((x) => x !== "");
    for (const v of acked) expect(log.filter((x) => `${x};` === v), `acknowledged ${v}`).toHaveLength(1);
    expect(new Set(log).size).toBe(log.length); // exactly once, even for retried writes
  } finally {
    for (const m of members.values()) m.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("Raft over real libp2p between separate OS processes (segmented log store; SQLite once)", () => {
  it("3 voters: elect, commit, SIGKILL the leader, re-elect, keep every acknowledged write; a learner catches up by snapshot", async () => {
    await scenario(3);
  }, 120_000);

  it("5 voters: the same", async () => {
    await scenario(5);
  }, 120_000);

  it("3 voters on SQLite (synchronous=FULL): the same", async () => {
    await scenario(3, { HEDDLE_RAFT_STORE: "sqlite" });
  }, 120_000);
});
