// Keeper and advisory claims between 3 OS processes over real libp2p on loopback (ephemeral ports, temp dirs): they
// converge on one keeper per part and one holder per item; a killed peer's claims lapse for follows-you, the
// others go on, and the restarted peer (a new epoch) converges with them again.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { loadOrCreatePeerKey, peerIdOf } from "../src/index.ts";

const script = join(import.meta.dirname, "fixtures", "claims-peer-process.ts");

interface PeerState {
  peers: number;
  invoices: { keeper: string | null; mayAct: boolean; sure: boolean };
  reminders: { keeper: string | null; mayAct: boolean; sure: boolean };
  holders: [string, string][];
  duplicates: [string, string][];
  slots: string;
  rejected: number;
}

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

  async ask(cmd: string, reply: string): Promise<unknown> {
    this.send(cmd);
    const line = await this.next(`${reply} `);
    return JSON.parse(line.slice(reply.length + 1));
  }
}

describe("keeper and advisory claims over libp2p between 3 OS processes", () => {
  it("converge, survive a killed peer, and take the restarted peer back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-claims-procs-"));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(peerIdOf(await loadOrCreatePeerKey(join(dir, `peer-${i}.key`))));
    const procs: PeerProcess[] = [];
    const addrs: string[] = [];
    const epochs: number[] = [];
    const t0 = Date.now();
    const start = async (i: number) => {
      const p = new PeerProcess(dir, i, ids);
      const ready = (await p.next("ready")).split(" ");
      expect(ready[1]).toBe(ids[i]);
      addrs[i] = ready[2]!;
      epochs[i] = Number(ready[3]);
      procs[i] = p;
    };
    const introduce = () => {
      for (let i = 0; i < procs.length; i++) for (let j = 0; j < procs.length; j++) if (i !== j) procs[i]!.send(`addr ${ids[j]} ${addrs[j]}`);
    };
    const states = async (which: number[]) => Promise.all(which.map((i) => procs[i]!.ask("state", "state") as Promise<PeerState>));
    /** Polls until `ok` holds on every listed peer's state and all hold the same slots; returns the states. */
    const until = async (what: string, which: number[], ok: (s: PeerState) => boolean) => {
      const end = Date.now() + 30_000;
      for (;;) {
        const ss = await states(which);
        if (ss.every((s) => ok(s) && s.slots === ss[0]!.slots)) {
          if (process.env.HEDDLE_TRACE) console.log(what, Date.now() - t0);
          return ss;
        }
        if (Date.now() > end) throw new Error(`${what}: no convergence: ${JSON.stringify(ss, null, 1).slice(0, 3000)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    try {
      await Promise.all([0, 1, 2].map((i) => start(i)));
      introduce();
      await until("connected", [0, 1, 2], (s) => s.peers === 2);
      // all three claim both parts; peer 0 takes invoices on purpose; all three claim job-1, peer 1 first
      await procs[1]!.ask("advisory job-1 60000", "advisory");
      await new Promise((r) => setTimeout(r, 20));
      for (const i of [0, 2]) await procs[i]!.ask("advisory job-1 60000", "advisory");
      // reminders (follows-you) goes to the latest active claim: peer 0's, made last; invoices (stays-put) to the one
      // taken on purpose: peer 0's too — so the two rules part ways when peer 0 dies
      for (const i of [1, 2, 0]) {
        await procs[i]!.ask("keeper reminders", "keeper");
        await new Promise((r) => setTimeout(r, 20));
      }
      await procs[0]!.ask("keeper invoices take", "keeper");
      for (const i of [1, 2]) await procs[i]!.ask("keeper invoices", "keeper");
      const first = await until("first claims", [0, 1, 2], (s) => s.invoices.keeper === ids[0] && s.reminders.keeper === ids[0] && s.holders.length === 1);
      for (const s of first) {
        expect(s.invoices.keeper).toBe(ids[0]);
        expect(s.holders).toEqual([["job-1", ids[1]]]);
        expect(s.duplicates.map((d) => d[1]).sort()).toEqual([ids[0], ids[2]].sort());
        expect(s.reminders.keeper).toBe(ids[0]);
        expect(s.rejected).toBe(0);
      }
      // the keeper of invoices settles and is the only one that may act
      const settled = await until("settled", [0, 1, 2], (s) => s.invoices.keeper === ids[0]);
      await new Promise((r) => setTimeout(r, 1_200));
      const acting = (await states([0, 1, 2])).map((s) => s.invoices.mayAct);
      expect(acting).toEqual([true, false, false]);
      void settled;

      // kill peer 0 (no close): stays-put keeps it as keeper of invoices for UNCLOSED; follows-you moves on after ALIVE
      procs[0]!.child.kill("SIGKILL");
      // follows-you: once peer 0 is silent past ALIVE (3 s here), the survivors agree on one of themselves
      const moved = await until("follows-you moved on", [1, 2], (s) => s.reminders.keeper !== ids[0] && s.reminders.keeper !== null);
      expect(new Set(moved.map((s) => s.reminders.keeper)).size).toBe(1);
      expect([ids[1], ids[2]]).toContain(moved[0]!.reminders.keeper);
      // stays-put: by then peer 0 is still the keeper of invoices for both (until UNCLOSED, 60 s), and neither acts
      expect(moved.map((s) => s.invoices.keeper)).toEqual([ids[0], ids[0]]);
      expect(moved.map((s) => s.invoices.mayAct)).toEqual([false, false]);
      // an operator moves it by hand
      await procs[1]!.ask("keeper invoices take", "keeper");
      const after = await until("after the kill", [1, 2], (s) => s.invoices.keeper === ids[1]);
      expect(after.map((s) => s.invoices.keeper)).toEqual([ids[1], ids[1]]);

      // restart peer 0: a new epoch; once it writes again, all three hold the same slots
      await start(0);
      expect(epochs[0]).toBeGreaterThan(1);
      introduce();
      await procs[0]!.ask("keeper reminders", "keeper");
      await procs[0]!.ask("advisory job-2 60000", "advisory");
      const back = await until("after the restart", [0, 1, 2], (s) => s.invoices.keeper === ids[1] && s.holders.length === 2);
      for (const s of back) {
        expect(s.holders).toEqual([["job-1", ids[1]], ["job-2", ids[0]]]);
        expect(s.rejected).toBe(0);
      }
    } finally {
      for (const p of procs) p?.child.kill();
    }
  }, 90_000);
});
