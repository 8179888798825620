// Issue 17: crash trials at volume. A governed cluster of daemons as OS processes — 3 voters and 2 learners —
// under client load (mints, reshapes, reservations, claims); in each trial one process, chosen at random, is
// SIGKILLed at a random moment and restarted from its store. A client retries every control call with its
// idempotency key (and every completion) until it gets an answer, as a real client would, so every call ends
// with a known outcome. After every trial, on every peer: conservation (minted = Σ holdings + Σ leaf-spent);
// minted total = the sum of every mint the clients made (nothing acknowledged lost, nothing applied twice);
// leaf-spent = the sum of every charge (idem); each claim key has at most one exclusive holder, and it is the
// holder the answers say; every reshaped edge acknowledged is active.
// HEDDLE_CRASH_TRIALS trials (20 when set to 20); HEDDLE_SEED picks the kills.
// NOT in CI yet: on a quiet machine (2026-12-01 08:03 UTC, load ≈ 3) the 20-trial run with seed 1717 failed after
// 162 s — a restarted peer 3 (a learner) did not answer its API within 5 s and never became writable. Undiagnosed
// (harness or daemon restart); until it is, the test runs only when HEDDLE_CRASH_TRIALS is set.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { seededRandom } from "@heddle/node";
import { initCluster } from "../src/index.ts";

const TRIALS = Number(process.env.HEDDLE_CRASH_TRIALS ?? 0);
const SEED = Number(process.env.HEDDLE_SEED ?? 1717);
const MAIN = fileURLToPath(new URL("../../cli/src/main.ts", import.meta.url));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Peer {
  readonly index: number;
  readonly config: string;
  readonly client: HeddleClient;
  proc: ChildProcess | null;
  id: string;
}

function startProcess(p: Peer): Promise<void> {
  const proc = spawn(process.execPath, [MAIN, "start", "--config", p.config], { stdio: ["ignore", "pipe", "pipe"] });
  p.proc = proc;
  let out = "";
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`peer ${p.index} did not start: ${out.slice(-2000)}`)), 180_000);
    for (const s of [proc.stdout!, proc.stderr!]) {
      createInterface({ input: s }).on("line", (l) => {
        out += l + "\n";
        if (l.includes("heddle peer started")) {
          clearTimeout(t);
          resolve();
        }
      });
    }
    proc.on("exit", (code, sig) => {
      if (sig !== "SIGKILL") reject(new Error(`peer ${p.index} exited ${code}: ${out.slice(-2000)}`));
    });
  });
}

async function until<T>(f: () => Promise<T | undefined>, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out: ${what} (seed ${SEED}); last error: ${String(last)}`);
    await sleep(100);
  }
}

interface Status {
  self: string;
  ledgerDigest: string;
  mintedTotal: string;
  leafSpentTotal: string;
  failed: boolean;
  control: { isWritable: boolean; appliedIndex: number } | null;
}

describe.skipIf(TRIALS === 0)("crash trials: 3 voters + 2 learners as daemons, SIGKILL under load (issue 17)", () => {
  it(`${TRIALS} trials: conservation on every peer, no acknowledged mint, charge or claim lost, no mint applied twice, no overlapping grants`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-crash-trials-"));
    const peers: Peer[] = [];
    const rnd = seededRandom(SEED);
    try {
      const init = await initCluster({ dir: join(dir, "c"), peers: 5, mode: "governed" });
      const ids = init.map((p) => p.id);
      // 3 voters, 2 learners (init would make all five vote)
      for (const p of init) {
        const c = JSON.parse(readFileSync(p.config, "utf8"));
        c.mode.voters = ids.slice(0, 3);
        c.mode.learners = ids.slice(3);
        writeFileSync(p.config, JSON.stringify(c, null, 2));
      }
      for (const p of init) {
        const token = readFileSync(join(p.dir, "token"), "utf8").trim();
        peers.push({ index: p.index, config: p.config, client: new HeddleClient({ url: p.apiUrl, token, timeoutMs: 5_000 }), proc: null, id: p.id });
      }
      await Promise.all(peers.map((p) => startProcess(p)));
      const live = () => peers.filter((p) => p.proc !== null);
      const status = async (p: Peer) => (await p.client.raw("GET", "/v1/status")).body as Status;
      const writable = () => Promise.all(peers.map((p) => until(async () => ((await status(p)).control?.isWritable ? true : undefined), `peer ${p.index} writable`)));
      await writable();

      // What the clients know, from answers only.
      let minted = 0n;
      let charged = 0n;
      const activeEdges = new Set<string>();
      const holderOf = new Map<string, string>();
      let opSeq = 0;
      let unknownReserves = 0;
      const counts = { mint: 0, reshape: 0, reserve: 0, complete: 0, take: 0, release: 0, retries: 0 };

      /** A control call, retried with its idempotency key on any live peer until it is answered. */
      const control = async (path: string, body: unknown): Promise<{ status: number; body: any }> => {
        const key = `op-${SEED}-${++opSeq}`;
        for (let attempt = 0; ; attempt++) {
          const ps = live();
          const p = ps[Math.floor(rnd() * ps.length)]!;
          try {
            const r = await p.client.raw("POST", path, body, { headers: { "idempotency-key": key } });
            if (r.status < 500 && r.status !== 503) return r;
          } catch {
            // connection refused or reset: the call may or may not have been applied; the key makes the retry safe
          }
          counts.retries++;
          if (attempt > 600) throw new Error(`${path} never answered`);
          await sleep(100);
        }
      };

      const leafA = "a";
      {
        const prep = await control("/v1/control/prepare", { id: "root→a", parent: "root", child: leafA, weight: 1 });
        expect(prep.status, JSON.stringify(prep.body)).toBe(200);
        expect((await control("/v1/control/activate", { edge: "root→a" })).status).toBe(200);
        activeEdges.add("root→a");
        for (const p of peers) {
          const m = await control("/v1/control/mint", { amount: "1000", holder: p.id });
          expect(m.status, JSON.stringify(m.body)).toBe(200);
          minted += 1000n;
        }
      }

      /** One peer's work at leaf a: stand demand, reserve, complete (retrying the completion until answered). */
      const work = async (p: Peer) => {
        try {
          await p.client.raw("POST", "/v1/demand", { leaf: leafA, targetOutstanding: "200", maximumUsefulGrant: "50", leaseMs: 1_000 });
          const r = await p.client.raw("POST", "/v1/reservations", { leaf: leafA, maximumCost: "5" });
          if (r.status !== 201) return;
          counts.reserve++;
          const id = (r.body as { id: string }).id;
          const cost = BigInt(1 + Math.floor(rnd() * 5));
          for (let attempt = 0; ; attempt++) {
            try {
              const c = await p.client.raw("POST", "/v1/reservations/complete", { id, actualCost: cost.toString() });
              if (c.status === 200) {
                const b = c.body as { charged: string; outcome: string };
                // a retry after an unanswered completion finds it done: the first one charged
                charged += b.outcome === "charged" ? BigInt(b.charged) : attempt > 0 ? cost : 0n;
                counts.complete++;
                return;
              }
            } catch {
              // the peer died with the completion in flight: ask it again once it is back
            }
            if (attempt > 600) throw new Error(`completion of ${id} never answered`);
            await sleep(100);
          }
        } catch {
          unknownReserves++;
        }
      };

      const claimKeys = ["deploy", "invoices", "backup"];
      const holders = ["h0", "h1", "h2"];
      const busyKeys = new Set<string>();
      const claimOp = async () => {
        const key = claimKeys[Math.floor(rnd() * claimKeys.length)]!;
        if (busyKeys.has(key)) return;
        busyKeys.add(key);
        try {
          const cur = holderOf.get(key);
          if (cur !== undefined && rnd() < 0.6) {
            const r = await control("/v1/claims/release", { holder: cur, key });
            if (r.status === 200) holderOf.delete(key);
            counts.release++;
          } else {
            const h = holders[Math.floor(rnd() * holders.length)]!;
            const r = await control("/v1/claims/take", { holder: h, resources: [{ key, mode: "exclusive" }], ttlMs: 3_600_000 });
            if (r.status === 200 && r.body?.claims?.ok === true) holderOf.set(key, h);
            counts.take++;
          }
        } finally {
          busyKeys.delete(key);
        }
      };

      let trialNo = 0;
      /** One client operation, chosen at random. */
      const op = async (): Promise<void> => {
        const x = rnd();
        if (x < 0.15) {
          const amount = BigInt(1 + Math.floor(rnd() * 100));
          const r = await control("/v1/control/mint", { amount: amount.toString(), holder: live()[0]!.id });
          if (r.status !== 200) throw new Error(`mint refused: ${JSON.stringify(r.body)}`);
          minted += amount;
          counts.mint++;
        } else if (x < 0.2) {
          const edge = `root→t${trialNo}-${opSeq}`;
          const a = await control("/v1/control/prepare", { id: edge, parent: "root", child: edge.slice(5), weight: 1 + Math.floor(rnd() * 3) });
          if (a.status !== 200) throw new Error(`prepare refused: ${JSON.stringify(a.body)}`);
          const b = await control("/v1/control/activate", { edge });
          if (b.status !== 200) throw new Error(`activate refused: ${JSON.stringify(b.body)}`);
          activeEdges.add(edge);
          counts.reshape++;
        } else if (x < 0.35) await claimOp();
        else {
          const ps = live();
          await work(ps[Math.floor(rnd() * ps.length)]!);
        }
      };

      /** CLIENTS concurrent clients, each running one operation after another until told to stop. */
      const CLIENTS = 6;
      const load = async (stop: () => boolean) => {
        await Promise.all(
          Array.from({ length: CLIENTS }, async () => {
            while (!stop()) await op();
          }),
        );
      };

      const check = async (trial: number) => {
        // converge: every peer applied the same control prefix and holds the same ledger
        const sts = await until(async () => {
          const s = await Promise.all(peers.map(status));
          const same = s.every((x) => x.ledgerDigest === s[0]!.ledgerDigest && x.control?.appliedIndex === s[0]!.control?.appliedIndex);
          return same ? s : undefined;
        }, `trial ${trial}: peers converge`, 90_000);
        for (const s of sts) {
          expect(s.failed, `trial ${trial}: ${s.self} failed closed`).toBe(false);
          expect(BigInt(s.mintedTotal), `trial ${trial}: minted on ${s.self} (seed ${SEED})`).toBe(minted);
          expect(BigInt(s.leafSpentTotal), `trial ${trial}: leaf-spent on ${s.self} (seed ${SEED})`).toBe(charged);
        }
        for (const p of peers) {
          const tree = (await p.client.raw("GET", "/v1/tree")).body as { groups: { holdingsTotal: string }[]; edges: { id: string; lifecycle: string }[] };
          const held = tree.groups.reduce((a, g) => a + BigInt(g.holdingsTotal), 0n);
          expect(minted, `trial ${trial}: conservation on peer ${p.index} (seed ${SEED})`).toBe(held + charged);
          const active = new Set(tree.edges.filter((e) => e.lifecycle === "ACTIVE").map((e) => e.id));
          for (const e of activeEdges) expect(active.has(e), `trial ${trial}: edge ${e} active on peer ${p.index}`).toBe(true);
          for (const key of claimKeys) {
            const l = (await p.client.raw("GET", `/v1/claims?key=${encodeURIComponent(key)}`)).body as { holders: string[] };
            expect(l.holders.length, `trial ${trial}: ${key} holders on peer ${p.index}`).toBeLessThanOrEqual(1);
            expect(l.holders, `trial ${trial}: ${key} on peer ${p.index} (seed ${SEED})`).toEqual(holderOf.has(key) ? [holderOf.get(key)] : []);
          }
        }
      };

      const kills: string[] = [];
      const phases: string[] = [];
      const t0 = Date.now();
      for (let trial = 0; trial < TRIALS; trial++) {
        trialNo = trial;
        const victim = peers[Math.floor(rnd() * peers.length)]!;
        const killAt = 100 + Math.floor(rnd() * 900);
        let stop = false;
        const running = load(() => stop);
        await sleep(killAt);
        victim.proc!.kill("SIGKILL");
        victim.proc = null;
        kills.push(`${trial}:${victim.index <= 3 ? "voter" : "learner"}${victim.index}@${killAt}ms`);
        await sleep(200 + Math.floor(rnd() * 300));
        const tStart = Date.now();
        await startProcess(victim);
        const restartMs = Date.now() - tStart;
        await sleep(300);
        stop = true;
        await running;
        const tLoad = Date.now();
        await writable();
        // withdraw demand, so the schedulers stop moving holdings and the ledgers settle
        await Promise.all(peers.map((p) => until(async () => ((await p.client.raw("POST", "/v1/demand", { leaf: leafA, targetOutstanding: "0", maximumUsefulGrant: "0" })).status === 200 ? true : undefined), "demand withdrawn")));
        await check(trial);
        if (process.env.HEDDLE_CRASH_VERBOSE) console.log(`trial ${trial} ok: killed peer ${victim.index} at ${killAt} ms, restart ${restartMs} ms`);
        phases.push(`${trial}:${restartMs}/${Date.now() - tLoad}`);
      }
      console.log(
        `crash-trials seed=${SEED} trials=${TRIALS} time=${Date.now() - t0}ms minted=${minted} charged=${charged} edges=${activeEdges.size} ` +
          `ops ${JSON.stringify(counts)} reserves-unanswered=${unknownReserves}\n  kills ${kills.join(" ")}\n  restart/settle ms ${phases.join(" ")}`,
      );
    } finally {
      for (const p of peers) {
        p.proc?.kill("SIGKILL");
        p.client.close();
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }, Math.max(300_000, TRIALS * 120_000)); // a guard, not a figure: a restart under heavy load took 50 s here
});
