import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { loadOrCreatePeerKey, peerIdOf } from "../src/index.ts";

const script = join(import.meta.dirname, "fixtures", "libp2p-peer-process.ts");

/** A peer process and a queue of its stdout lines. */
class PeerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly #lines: string[] = [];
  readonly #waiters: (() => void)[] = [];
  stderr = "";

  constructor(dir: string, index: number, ids: string[]) {
    this.child = spawn(process.execPath, [script, dir, String(index), JSON.stringify(ids)], { stdio: ["pipe", "pipe", "pipe"] });
    createInterface({ input: this.child.stdout }).on("line", (l) => {
      this.#lines.push(l);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.child.stderr.on("data", (d) => (this.stderr += String(d)));
  }

  send(line: string): void {
    this.child.stdin.write(line + "\n");
  }

  async next(prefix: string, ms = 30_000): Promise<string> {
    const end = Date.now() + ms;
    for (;;) {
      const i = this.#lines.findIndex((l) => l.startsWith(prefix));
      if (i >= 0) return this.#lines.splice(i, 1)[0]!;
      if (Date.now() > end) throw new Error(`timed out waiting for "${prefix}"; stderr: ${this.stderr.slice(-2000)}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
}

describe("replication over real libp2p between separate OS processes", () => {
  it("3 peer processes converge after concurrent mutations and after one is stopped and restarted", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-procs-"));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(peerIdOf(await loadOrCreatePeerKey(join(dir, `peer-${i}.key`))));
    const procs: PeerProcess[] = [];
    const addrs: string[] = [];
    const start = async (i: number) => {
      const p = new PeerProcess(dir, i, ids);
      const ready = (await p.next("ready")).split(" ");
      expect(ready[1]).toBe(ids[i]);
      addrs[i] = ready[2]!;
      procs[i] = p;
    };
    const introduce = () => {
      for (let i = 0; i < procs.length; i++) for (let j = 0; j < procs.length; j++) if (i !== j) procs[i]!.send(`addr ${ids[j]} ${addrs[j]}`);
    };
    const digests = async () => {
      for (const p of procs) p.send("digest");
      return Promise.all(procs.map(async (p) => (await p.next("digest")).split(" ")));
    };
    const converge = async (what: string) => {
      const end = Date.now() + 60_000;
      for (;;) {
        const ds = await digests();
        if (ds.every((d) => d[2] === ds[0]![2] && d[3] === "0" && d[4] === "2")) return ds[0]![2]!;
        if (Date.now() > end) throw new Error(`${what}: no convergence: ${JSON.stringify(ds)}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    try {
      for (let i = 0; i < 3; i++) await start(i);
      introduce();
      for (const p of procs) p.send("mutate 40");
      await Promise.all(procs.map((p) => p.next("mutated")));
      const first = await converge("after concurrent mutations");

      procs[2]!.send("stop");
      await procs[2]!.next("stopped");
      for (const p of procs.slice(0, 2)) p.send("mutate 20");
      await Promise.all(procs.slice(0, 2).map((p) => p.next("mutated")));
      await start(2);
      introduce();
      procs[2]!.send("mutate 10");
      await procs[2]!.next("mutated");
      const second = await converge("after restart");
      expect(second).not.toBe(first);
    } finally {
      for (const p of procs) p?.child.kill();
    }
  });
});
