// Issue 17: crash trials at volume. A governed cluster of daemons as OS processes — 3 voters and 2 learners —
// under client load (mints, reshapes, reservations, claims); in each trial one process, chosen at random, is
// SIGKILLed at a random moment and restarted from its store. A client retries every control call with its
// idempotency key (and every completion) until it gets an answer, as a real client would, so every call ends
// with a known outcome. After every trial, on every peer: conservation (minted = Σ holdings + Σ leaf-spent);
// minted total = the sum of every mint the clients made (nothing acknowledged lost, nothing applied twice);
// leaf-spent = the sum of every charge (idem); each claim key has at most one exclusive holder, and it is the
// holder the answers say; every reshaped edge acknowledged is active.
// HEDDLE_CRASH_TRIALS trials (default 20, the CI size; 0 skips); HEDDLE_SEED picks the kills; HEDDLE_CRASH_VERBOSE=1
// prints a line per kill, restart and trial. Each daemon's output goes to a log file; when a peer does not get
// ready the failure carries its diagnosis (log tail, CPU, its JS stack through the inspector) and the run's
// stores and logs are kept. That is how the trials' first bug was found: a voter whose outbound libp2p stream
// needed a drain a second time spun on an already-resolved `onDrain()` forever (packages/seam/src/drain.ts).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { seededRandom } from "@heddle/node";
import { initCluster } from "../src/index.ts";

const TRIALS = Number(process.env.HEDDLE_CRASH_TRIALS ?? 20);
const SEED = Number(process.env.HEDDLE_SEED ?? 1717);
const VERBOSE = process.env.HEDDLE_CRASH_VERBOSE !== undefined && process.env.HEDDLE_CRASH_VERBOSE !== "0";
/** HEDDLE_CRASH_KEEP=1 keeps the stores and logs of a passed run too (to profile restarts on a store with history). */
const KEEP = process.env.HEDDLE_CRASH_KEEP !== undefined && process.env.HEDDLE_CRASH_KEEP !== "0";
const MAIN = fileURLToPath(new URL("../../cli/src/main.ts", import.meta.url));
/** Node's compile cache for the daemons (keyed by file content, so sharing it across runs is safe). */
const COMPILE_CACHE = join(tmpdir(), "heddle-crash-trials-compile-cache");
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const say = (line: string) => {
  if (VERBOSE) process.stdout.write(`[crash ${new Date().toISOString().slice(11, 23)}] ${line}\n`);
};

interface Peer {
  readonly index: number;
  readonly config: string;
  readonly client: HeddleClient;
  /** This peer's daemon output, every incarnation appended (kept when the run fails). */
  readonly log: string;
  proc: ChildProcess | null;
  incarnation: number;
  id: string;
}

/** The last `n` lines of a peer's log. */
function tail(p: Peer, n = 60): string {
  try {
    return readFileSync(p.log, "utf8").split("\n").slice(-n).join("\n");
  } catch (e) {
    return `(no log: ${(e as Error).message})`;
  }
}

/**
 * Starts a peer's daemon, its stdout and stderr going straight to its log file (a pipe the harness had to drain
 * would make a busy harness stall the daemon's synchronous writes to it). Resolves once the process runs; the
 * callers wait for the API with a readiness condition.
 */
function spawnPeer(p: Peer, diagDir: string): void {
  p.incarnation++;
  appendFileSync(p.log, `\n===== peer ${p.index} incarnation ${p.incarnation} spawned ${new Date().toISOString()} =====\n`);
  const fd = openSync(p.log, "a");
  // --inspect-port=0: on a readiness timeout the harness opens the inspector (SIGUSR1, on a random port) and pauses
  // the daemon for its JS stack — that works even when the event loop never turns; a diagnostic report
  // (SIGUSR2) adds libuv's handles when the loop does turn
  const proc = spawn(process.execPath, ["--inspect-port=0", "--report-on-signal", "--report-signal=SIGUSR2", `--report-directory=${diagDir}`, MAIN, "start", "--config", p.config], {
    stdio: ["ignore", fd, fd],
    // a restart is mostly Node loading the CLI's TypeScript: cache the compiled modules across starts
    env: { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE },
  });
  closeSync(fd);
  p.proc = proc;
  const inc = p.incarnation;
  proc.on("exit", (code, sig) => {
    if (sig !== "SIGKILL" && p.incarnation === inc) {
      appendFileSync(p.log, `===== exited: code ${code} signal ${sig} =====\n`);
      if (p.proc === proc) p.proc = null;
    }
  });
}

const pidOf = (p: Peer): number | undefined => p.proc?.pid;

/** CPU seconds a process has used so far (Linux /proc), or null. */
function cpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks (USER_HZ = 100)
  } catch {
    return null;
  }
}

/** CPU seconds and state of each thread of a process (Linux /proc), by thread id. */
function threadCpu(pid: number): Map<string, { name: string; cpu: number; state: string }> {
  const out = new Map<string, { name: string; cpu: number; state: string }>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const raw = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = raw.slice(raw.indexOf("(") + 1, raw.lastIndexOf(")"));
      const f = raw.slice(raw.lastIndexOf(") ") + 2).split(" ");
      out.set(tid, { name, cpu: (Number(f[11]) + Number(f[12])) / 100, state: f[0]! });
    }
  } catch {
    // gone
  }
  return out;
}

/**
 * The JS stack of a running daemon, through its inspector: SIGUSR1 opens it (the daemon prints its ws:// URL to
 * its log), `Debugger.pause` stops the JS thread wherever it is — in a loop that never yields too.
 */
async function jsStackOf(p: Peer, pid: number): Promise<string> {
  const logBefore = readFileSync(p.log, "utf8").length;
  process.kill(pid, "SIGUSR1");
  let url: string | undefined;
  for (let i = 0; i < 40 && url === undefined; i++) {
    await sleep(250);
    url = /Debugger listening on (ws:\/\/\S+)/.exec(readFileSync(p.log, "utf8").slice(logBefore))?.[1];
  }
  if (url === undefined) return "(the inspector did not open within 10 s)";
  const ws = new WebSocket(url);
  try {
    return await new Promise<string>((resolve) => {
      const t = setTimeout(() => resolve("(the inspector opened but the JS thread did not pause within 20 s)"), 20_000);
      ws.onerror = () => resolve("(inspector connection failed)");
      ws.onopen = () => {
        ws.send(JSON.stringify({ id: 1, method: "Debugger.enable" }));
        ws.send(JSON.stringify({ id: 2, method: "Debugger.pause" }));
      };
      const scripts = new Map<string, string>();
      ws.onmessage = (ev) => {
        const m = JSON.parse(String(ev.data)) as { method?: string; params?: any };
        if (m.method === "Debugger.scriptParsed") scripts.set(m.params.scriptId, m.params.url);
        if (m.method === "Debugger.paused") {
          clearTimeout(t);
          const frames = (m.params.callFrames as { functionName: string; url: string; location: { scriptId: string; lineNumber: number; columnNumber: number } }[])
            .slice(0, 30)
            .map((f) => `${f.functionName || "(anonymous)"} ${(f.url || scripts.get(f.location.scriptId) || "?").replace(/^file:\/\/.*?\/packages\//, "packages/")}:${f.location.lineNumber + 1}:${f.location.columnNumber + 1}`);
          resolve(frames.join("\n  "));
        }
      };
    });
  } finally {
    ws.close();
  }
}

/** What a peer is doing when it does not get ready: its log tail, CPU use, and a diagnostic report's JS stack. */
async function diagnose(p: Peer, diagDir: string): Promise<string> {
  const pid = p.proc?.pid;
  const out = [`peer ${p.index} (incarnation ${p.incarnation}, pid ${pid ?? "none"}, exit ${p.proc?.exitCode ?? "-"})`];
  const c0 = cpuSeconds(pid);
  if (pid !== undefined && p.proc?.exitCode === null) {
    const before = new Set(readdirSync(diagDir));
    try {
      process.kill(pid, "SIGUSR2");
    } catch {
      // gone
    }
    const threads0 = threadCpu(pid);
    let report: string | undefined;
    const t0 = Date.now();
    // a report needs the JS thread to take an interrupt: give a starved (nice'd, loaded) process time to answer
    while (report === undefined && Date.now() - t0 < 20_000) {
      await sleep(500);
      report = readdirSync(diagDir).find((f) => !before.has(f) && f.includes(`.${pid}.`));
    }
    const secs = (Date.now() - t0) / 1000;
    const c1 = cpuSeconds(pid);
    out.push(`cpu: ${c0}s, then ${c1}s ${secs.toFixed(1)} s later (${c0 !== null && c1 !== null ? `${Math.round(((c1 - c0) / secs) * 100)} %` : "?"} of a core)`);
    const threads1 = threadCpu(pid);
    out.push(`threads (cpu s over the wait, state): ${[...threads1].map(([tid, t]) => `${t.name}[${tid}] +${(t.cpu - (threads0.get(tid)?.cpu ?? 0)).toFixed(2)} ${t.state}`).join(", ")}`);
    try {
      out.push(`rss: ${/VmRSS:\s*(.*)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "?"}`);
    } catch {
      // gone
    }
    try {
      // the main thread's native stack, when gdb is installed: says whether the JS thread is in SQLite, a syscall, GC…
      const bt = execFileSync("gdb", ["-p", String(pid), "-batch", "-ex", "bt 25"], { encoding: "utf8", timeout: 60_000, stdio: ["ignore", "pipe", "ignore"] });
      out.push(`main thread native stack (gdb):\n${bt.split("\n").filter((l) => /^#/.test(l)).join("\n")}`);
    } catch (e) {
      out.push(`no native stacks (${(e as Error).message.split("\n")[0]})`);
    }
    try {
      out.push(`js stack (inspector pause):\n  ${await jsStackOf(p, pid)}`);
    } catch (e) {
      out.push(`no js stack: ${(e as Error).message}`);
    }
    if (report === undefined) out.push("no diagnostic report (the process did not answer SIGUSR2)");
    else {
      const r = JSON.parse(readFileSync(join(diagDir, report), "utf8")) as { javascriptStack?: { message?: string; stack?: string[] }; libuv?: { type: string; is_active: boolean; localEndpoint?: unknown }[] };
      out.push(`report ${join(diagDir, report)}`);
      out.push(`js stack: ${r.javascriptStack?.message ?? ""}\n  ${(r.javascriptStack?.stack ?? []).slice(0, 25).join("\n  ")}`);
      const handles = new Map<string, number>();
      for (const h of r.libuv ?? []) if (h.is_active) handles.set(h.type, (handles.get(h.type) ?? 0) + 1);
      out.push(`active libuv handles: ${JSON.stringify(Object.fromEntries(handles))}`);
    }
  }
  out.push(`log ${p.log} (last lines):\n${tail(p)}`);
  return out.join("\n");
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
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what} (seed ${SEED}); last error: ${String(last)}`);
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
    const logDir = join(dir, "logs");
    mkdirSync(logDir);
    const peers: Peer[] = [];
    let passed = false;
    // Two streams: the kill schedule (victim, moment, downtime) is a function of the seed alone; the clients' draws
    // interleave with the timing of answers, so sharing one stream made the same seed kill different peers.
    const killRnd = seededRandom(SEED);
    const rnd = seededRandom(SEED ^ 0x5eed);
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
        const log = join(logDir, `peer-${p.index}.log`);
        peers.push({ index: p.index, config: p.config, client: new HeddleClient({ url: p.apiUrl, token, timeoutMs: 5_000 }), log, proc: null, incarnation: 0, id: p.id });
      }
      const status = async (p: Peer) => (await p.client.raw("GET", "/v1/status")).body as Status;
      /**
       * Waits until `cond` holds for peer `p`, up to `ms` (a bound, not a guess of how long it takes); on timeout
       * the error says what was awaited and carries the peer's diagnosis (log tail, CPU use, JS stack).
       */
      const waitFor = async (p: Peer, what: string, cond: (s: Status) => boolean, ms: number): Promise<number> => {
        const t = Date.now();
        try {
          await until(async () => {
            if (p.proc === null) throw new Error(`peer ${p.index} is not running (it exited)`);
            return cond(await status(p)) ? true : undefined;
          }, `peer ${p.index} ${what}`, ms);
        } catch (e) {
          throw new Error(`${(e as Error).message}\n${await diagnose(p, logDir)}`);
        }
        return Date.now() - t;
      };
      /** Started: the process runs its API (answers /v1/status as itself). */
      const start = async (p: Peer) => {
        spawnPeer(p, logDir);
        return waitFor(p, "answers its API", (s) => s.self === p.id, 180_000);
      };
      await Promise.all(peers.map((p) => start(p)));
      const live = () => peers.filter((p) => p.proc !== null);
      const writable = () => Promise.all(peers.map((p) => waitFor(p, "writable (enrolled, control log applied)", (s) => s.control?.isWritable === true, 120_000)));
      await writable();

      // What the clients know, from answers only.
      let minted = 0n;
      let charged = 0n;
      const activeEdges = new Set<string>();
      /** Edges the trials added and have not retired, oldest first; those being retired; those retired. */
      const trialEdges = new Set<string>();
      const retiring = new Set<string>();
      const retiredEdges = new Set<string>();
      const holderOf = new Map<string, string>();
      let opSeq = 0;
      let unknownReserves = 0;
      const counts = { mint: 0, reshape: 0, retire: 0, reserve: 0, complete: 0, take: 0, release: 0, retries: 0 };

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
      /**
       * An operator's mint. Mints are rare acts (supply is created now and then, not per request), and ledger.md §7.1
       * makes every patch of a holder re-publish each mint it holds: at 15 % of the clients' operations (≈ 50 mints
       * a trial) every peer held ≈ 900 mints by trial 90 and a trial took 14 s against 5.4 s at the start. So each
       * trial makes one mint, sent at a random moment up to the kill, often in flight when it lands.
       */
      const operatorMint = async () => {
        // about what a trial's reservations charge (≈ 650 units), so the leaf keeps capacity to reserve from
        const amount = BigInt(500 + Math.floor(rnd() * 1_000));
        // to a random live peer: crediting them all to one peer (as an earlier version did) grew its patches fastest
        const holders = live();
        const r = await control("/v1/control/mint", { amount: amount.toString(), holder: holders[Math.floor(rnd() * holders.length)]!.id });
        if (r.status !== 200) throw new Error(`mint refused: ${JSON.stringify(r.body)}`);
        minted += amount;
        counts.mint++;
      };

      /** One client operation, chosen at random. */
      const op = async (): Promise<void> => {
        const x = rnd();
        if (x < 0.005) {
          // Reshape as an operator does: add an edge, or take the oldest trial edge out (close, wait drained,
          // retire — governed.md §3.7's removal). Retiring keeps the live tree a few edges wide; adding only, as
          // this did, grew it by 15 edges a trial and every later trial paid for them (1,739 edges by trial 115).
          // Rare, as reshapes are (≈ 2–3 a trial): a retired edge stays in the ledger for good (ledger.md §5,
          // "history readable forever"), and at 5 % of the operations (26 a trial) the tree held 1,372 edges by
          // trial 51, with `/v1/tree` at 488 KB and each trial slower than the last.
          const oldest = [...trialEdges].find((e) => !retiring.has(e));
          if (oldest !== undefined && trialEdges.size - retiring.size >= 3) {
            retiring.add(oldest);
            const c = await control("/v1/control/close", { edge: oldest });
            if (c.status !== 200) throw new Error(`close refused: ${JSON.stringify(c.body)}`);
            activeEdges.delete(oldest);
            // nothing ever stands demand under a trial edge, so it is drained at once; notDrained (a local
            // view that has not yet applied the close) is retried, as §3.7 tells an operator to
            for (let attempt = 0; ; attempt++) {
              const r = await control("/v1/control/retire", { edge: oldest });
              if (r.status === 200) break;
              if (r.body?.conflict?.reason !== "notDrained" || attempt > 100) throw new Error(`retire refused: ${JSON.stringify(r.body)}`);
              await sleep(100);
            }
            trialEdges.delete(oldest);
            retiring.delete(oldest);
            retiredEdges.add(oldest);
            counts.retire++;
          } else {
            const edge = `root→t${trialNo}-${opSeq}`;
            const a = await control("/v1/control/prepare", { id: edge, parent: "root", child: edge.slice(5), weight: 1 + Math.floor(rnd() * 3) });
            if (a.status !== 200) throw new Error(`prepare refused: ${JSON.stringify(a.body)}`);
            const b = await control("/v1/control/activate", { edge });
            if (b.status !== 200) throw new Error(`activate refused: ${JSON.stringify(b.body)}`);
            activeEdges.add(edge);
            trialEdges.add(edge);
            counts.reshape++;
          }
        } else if (x < 0.2) await claimOp();
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
        }, `trial ${trial}: peers converge`, 90_000).catch(async (e: Error) => {
          const s = await Promise.all(peers.map((p) => status(p).then((x) => `peer ${p.index}: applied ${x.control?.appliedIndex} digest ${x.ledgerDigest}`, (err: Error) => `peer ${p.index}: ${err.message}`)));
          throw new Error(`${e.message}\n${s.join("\n")}`);
        });
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
          const lifecycle = new Map(tree.edges.map((e) => [e.id, e.lifecycle]));
          // a retired edge stays known (ledger.md §5): missing would mean its prepare was lost
          for (const e of retiredEdges) expect(lifecycle.get(e), `trial ${trial}: edge ${e} retired on peer ${p.index}`).toBe("RETIRED");
          for (const key of claimKeys) {
            const l = (await p.client.raw("GET", `/v1/claims?key=${encodeURIComponent(key)}`)).body as { holders: string[] };
            expect(l.holders.length, `trial ${trial}: ${key} holders on peer ${p.index}`).toBeLessThanOrEqual(1);
            expect(l.holders, `trial ${trial}: ${key} on peer ${p.index} (seed ${SEED})`).toEqual(holderOf.has(key) ? [holderOf.get(key)] : []);
          }
        }
      };

      const kills: string[] = [];
      const killsBy = { voter: 0, learner: 0 };
      const phases: string[] = [];
      const t0 = Date.now();
      for (let trial = 0; trial < TRIALS; trial++) {
        trialNo = trial;
        const victim = peers[Math.floor(killRnd() * peers.length)]!;
        const killAt = 100 + Math.floor(killRnd() * 900);
        let stop = false;
        const running = load(() => stop);
        const minting = sleep(Math.floor(rnd() * killAt)).then(operatorMint);
        minting.catch(() => {}); // awaited below; this only keeps an early failure from counting as unhandled
        await sleep(killAt);
        victim.proc!.kill("SIGKILL");
        victim.proc = null;
        const role = victim.index <= 3 ? "voter" : "learner";
        kills.push(`${trial}:${role}${victim.index}@${killAt}ms`);
        killsBy[role]++;
        say(`trial ${trial}: SIGKILL ${role} peer ${victim.index} (incarnation ${victim.incarnation}) ${killAt} ms into the load`);
        await sleep(200 + Math.floor(killRnd() * 300));
        const tStart = Date.now();
        await start(victim);
        const restartMs = Date.now() - tStart;
        const restartCpu = cpuSeconds(pidOf(victim)); // (through a call: TS still narrows victim.proc to the null set above)
        say(`trial ${trial}: peer ${victim.index} answers its API again after ${restartMs} ms (its CPU so far: ${restartCpu ?? "?"} s)`);
        await sleep(300);
        stop = true;
        await running;
        await minting;
        const tLoad = Date.now();
        await writable();
        // withdraw demand, so the schedulers stop moving holdings and the ledgers settle
        await Promise.all(peers.map((p) => until(async () => ((await p.client.raw("POST", "/v1/demand", { leaf: leafA, targetOutstanding: "0", maximumUsefulGrant: "0" })).status === 200 ? true : undefined), "demand withdrawn")));
        await check(trial);
        say(`trial ${trial} ok: killed peer ${victim.index} at ${killAt} ms, restart ${restartMs} ms, settle+check ${Date.now() - tLoad} ms; total ${Date.now() - t0} ms; kills ${JSON.stringify(killsBy)} ops ${JSON.stringify(counts)} minted=${minted} charged=${charged}`);
        phases.push(`${trial}:${restartMs}/${restartCpu ?? "?"}/${Date.now() - tLoad}`);
      }
      console.log(
        `crash-trials seed=${SEED} trials=${TRIALS} time=${Date.now() - t0}ms minted=${minted} charged=${charged} edges=${activeEdges.size} ` +
          `ops ${JSON.stringify(counts)} reserves-unanswered=${unknownReserves} kills-by-role ${JSON.stringify(killsBy)}\n  kills ${kills.join(" ")}\n  restart ms / restarted process CPU s / settle+check ms: ${phases.join(" ")}`,
      );
      // every kind of operation ran under the kills (the checks above would hold vacuously for one that never did)
      expect(counts.mint, `mints (seed ${SEED})`).toBe(TRIALS);
      for (const k of ["reshape", "retire", "take", "release", "complete"] as const) if (TRIALS >= 10) expect(counts[k], `${k} operations (seed ${SEED})`).toBeGreaterThan(0);
      passed = true;
    } finally {
      for (const p of peers) {
        p.proc?.kill("SIGKILL");
        p.client.close();
      }
      if (passed && !KEEP) rmSync(dir, { recursive: true, force: true });
      else if (passed) console.log(`crash-trials passed (seed ${SEED}): stores and daemon logs kept in ${dir} (HEDDLE_CRASH_KEEP)`);
      else console.log(`crash-trials failed (seed ${SEED}): stores and daemon logs kept in ${dir} (logs/peer-<i>.log)`);
    }
  }, 300_000 + TRIALS * 120_000); // a guard, not a figure: a restart under heavy load (load ≈ 25 on 2 cores) took 48 s here
});
