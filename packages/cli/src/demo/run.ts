import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { edgeId, loadOrCreatePeerKey, peerIdOf } from "@heddle/node";
import type { DemoOptions } from "./options.ts";
import type { ControlAct, PeerCommand, PeerReport } from "./protocol.ts";
import { demoTopology, GRANTS_PER_SCHEDULE, QUANTUM, ROOT, TENANTS } from "./scenario.ts";
import type { PeerConfig } from "./scenario.ts";
import { finalChecks, governedChecks, renderFinal, renderLive } from "./render.ts";
import type { PeerView } from "./render.ts";

type Status = Extract<PeerReport, { type: "status" }>;
type ControlReport = Extract<PeerReport, { type: "control" }>;

/** What happens when, as fractions of the run. */
export const TIMELINE = { cut: 0.3, reshape: 0.4, heal: 0.55, kill: 0.62, restart: 0.72 } as const;
/** Governed mode: the Raft voters are the first peers (the rest are learners). */
export const GOVERNED_VOTERS = 3;
/** Governed mode: longest wait for the midway reshape to finish draining, retiring and activating. */
export const RESHAPE_TIMEOUT_MS = 90_000;
/** Longest wait for every peer to converge after the run, before the report says it did not. */
export const SETTLE_TIMEOUT_MS = 45_000;

interface Peer {
  index: number;
  id: string;
  proc: ChildProcess | null;
  addrs: string[];
  state: "starting" | "up" | "cut" | "killed";
  last: Status | null;
  restarts: number;
  restored: number;
  log: string[];
}

const PEER_MAIN = fileURLToPath(new URL("./peer.ts", import.meta.url));

/** Runs the demo; resolves to the process exit code (0 iff every final check passed). */
export async function runDemo(o: DemoOptions, out: NodeJS.WriteStream = process.stdout): Promise<number> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "heddle-demo-"));
  mkdirSync(dir, { recursive: true });
  const keepDir = o.dir !== undefined;
  const ids: string[] = [];
  for (let i = 0; i < o.peers; i++) {
    mkdirSync(join(dir, `peer-${i}`), { recursive: true });
    ids.push(peerIdOf(await loadOrCreatePeerKey(join(dir, `peer-${i}`, "peer.key"))));
  }
  const durationMs = o.durationS * 1_000;
  const supplyPerPeer = 400n * BigInt(o.durationS) + 10_000n;
  const base: Omit<PeerConfig, "index"> = {
    dir,
    seed: o.seed,
    ids,
    tenantWeights: [o.tenantWeights[0].toString(), o.tenantWeights[1].toString()],
    laneWeights: [o.laneWeights[0].toString(), o.laneWeights[1].toString()],
    supplyPerPeer: supplyPerPeer.toString(),
    quantum: QUANTUM.toString(),
    grantsPerSchedule: GRANTS_PER_SCHEDULE,
    tickMs: 100,
    workersPerLane: 3,
    ...(o.governed ? { voters: ids.slice(0, GOVERNED_VOTERS) } : {}),
  };
  const dashboardToken = randomBytes(24).toString("base64url");
  let dashboardUrl: string | null = null;
  const peers: Peer[] = ids.map((id, index) => ({ index, id, proc: null, addrs: [], state: "starting", last: null, restarts: 0, restored: 0, log: [] }));
  const events: string[] = [];
  const started = Date.now();
  const note = (s: string) => events.push(`${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s  ${s}`);

  const send = (p: Peer, c: PeerCommand) => {
    if (p.proc?.stdin?.writable) p.proc.stdin.write(`${JSON.stringify(c)}\n`);
  };
  const rosterEntries = () => peers.map((p) => ({ id: p.id, addrs: p.addrs }));
  // governed mode: control acts run on a peer under durable keys; the edges whose holdings are being drained
  let nextRef = 1;
  const controlWaiters = new Map<number, (r: ControlReport) => void>();
  let drainEdges: string[] = [];

  const start = (p: Peer): Promise<void> =>
    new Promise((resolve, reject) => {
      const cfgPath = join(dir, `peer-${p.index}`, "config.json");
      const dashboard = p.index === 0 && o.dashboardPort !== null ? { dashboard: { port: o.dashboardPort, token: dashboardToken } } : {};
      writeFileSync(cfgPath, JSON.stringify({ ...base, index: p.index, ...dashboard } satisfies PeerConfig));
      const proc = spawn(process.execPath, [PEER_MAIN, cfgPath], { stdio: ["pipe", "pipe", "pipe"] });
      p.proc = proc;
      p.state = "starting";
      proc.stderr!.on("data", (d: Buffer) => {
        p.log.push(d.toString());
        if (p.log.length > 50) p.log.shift();
      });
      createInterface({ input: proc.stdout! }).on("line", (line) => {
        let r: PeerReport;
        try {
          r = JSON.parse(line) as PeerReport;
        } catch {
          return;
        }
        if (r.type === "listening") {
          p.addrs = r.addrs;
          p.restored = r.restoredReservations;
          p.state = "up";
          for (const q of peers) send(q, { cmd: "roster", entries: rosterEntries() });
          if (drainEdges.length > 0) send(p, { cmd: "drain-edges", edges: drainEdges });
          resolve();
        } else if (r.type === "status") p.last = r;
        else if (r.type === "control") {
          controlWaiters.get(r.ref)?.(r);
          controlWaiters.delete(r.ref);
        } else if (r.type === "dashboard") {
          dashboardUrl = r.url;
          out.write(`dashboard of peer 0 (open it in a browser): ${r.url}\n`);
        }
        else if (r.type === "error") {
          note(`peer ${p.index} failed: ${r.message.split("\n")[0]}`);
          reject(new Error(`peer ${p.index}: ${r.message}`));
        }
      });
      proc.on("exit", (code, signal) => {
        if (p.proc === proc) p.proc = null;
        if (p.state === "starting") reject(new Error(`peer ${p.index} exited before listening (${signal ?? code}): ${p.log.join("")}`));
      });
    });

  const stopAll = () => {
    for (const p of peers) p.proc?.kill("SIGKILL");
  };
  process.once("SIGINT", () => {
    stopAll();
    process.exit(130);
  });

  const control = (p: Peer, client: string, seq: number, act: ControlAct): Promise<ControlReport> =>
    new Promise((resolve) => {
      const ref = nextRef++;
      controlWaiters.set(ref, resolve);
      send(p, { cmd: "control", ref, key: { client, seq }, act });
    });
  const governedLog: { step: string; ok: boolean; detail: string }[] = [];
  const step = async (p: Peer, client: string, seq: number, act: ControlAct, what: string): Promise<ControlReport> => {
    const r = await control(p, client, seq, act);
    governedLog.push({ step: what, ok: r.ok, detail: r.detail });
    return r;
  };

  try {
    await Promise.all(peers.map(start));
    note(`${o.peers} peers up on 127.0.0.1 (libp2p: TCP + Noise + Yamux), stores in ${dir}`);
    if (o.governed) {
      // no genesis supply or tree: everything comes through the replicated log (governed.md G3)
      const p0 = peers[0]!;
      let seq = 0;
      for (const id of ids) await step(p0, "demo-setup", ++seq, { op: "mint", holder: id, amount: supplyPerPeer.toString() }, `mint ${supplyPerPeer} to peer ${ids.indexOf(id)}`);
      // prepare every edge, then activate the lanes before the tenants: no entitlement reaches a tenant before
      // both of its lanes are live, so the lanes compete from the same moment
      const records = demoTopology(o.tenantWeights, o.laneWeights);
      for (const r of records) await step(p0, "demo-setup", ++seq, { op: "prepare", id: r.id, parent: r.parent, child: r.child, weight: r.weight.num.toString() }, `prepare ${r.id}`);
      for (const r of [...records].sort((a, b) => Number(a.parent === ROOT) - Number(b.parent === ROOT))) await step(p0, "demo-setup", ++seq, { op: "activate", edge: r.id }, `activate ${r.id}`);
      const bad = governedLog.filter((x) => !x.ok);
      note(`governed: Raft voters peers 0–${GOVERNED_VOTERS - 1}, learners the rest; ${o.peers} × ${supplyPerPeer} minted and the tree prepared and activated through the log${bad.length > 0 ? ` — ${bad.length} act(s) FAILED` : ""}`);
    }
    const runStart = Date.now(); // the timeline starts once the peers are up (and, governed, the log set up)
    const cutPeer = peers[1]!;
    const killPeer = peers[2]!;
    const at = (f: number) => runStart + f * durationMs;
    const done = { cut: false, reshape: false, heal: false, kill: false, restart: false };
    let restarting: Promise<void> | null = null;
    let reshaping: Promise<void> | null = null;
    let reshaped = false;
    const reshape = async (): Promise<void> => {
      // the §3.7 recipe for a weight change, on both tenants at once: new generations, break-before-make
      const p0 = peers[0]!;
      const [wa, wb] = o.reshapeWeights!;
      note(`reshape: tenant weights ${o.tenantWeights.join(":")} → ${wa}:${wb} by the recipe (prepare, close, drain, retire, activate)`);
      const oldEdges = TENANTS.map((t) => edgeId(ROOT, t));
      const newEdges = TENANTS.map((t) => edgeId(ROOT, t, 2));
      let seq = 0;
      for (const [i, t] of TENANTS.entries()) await step(p0, "demo-reshape", ++seq, { op: "prepare", id: newEdges[i]!, parent: ROOT, child: t, weight: String(i === 0 ? wa : wb) }, `prepare ${newEdges[i]}`);
      for (const e of oldEdges) await step(p0, "demo-reshape", ++seq, { op: "close", edge: e }, `close ${e}`);
      drainEdges = oldEdges;
      for (const p of peers) send(p, { cmd: "drain-edges", edges: drainEdges });
      note("old generations closed: every peer spends what it holds under them down to zero");
      const deadline = Date.now() + RESHAPE_TIMEOUT_MS;
      for (const e of oldEdges) {
        for (;;) {
          const r = await control(p0, "demo-reshape", ++seq, { op: "retire", edge: e });
          if (r.ok || !r.detail.startsWith("notDrained") || Date.now() > deadline) {
            governedLog.push({ step: `retire ${e}`, ok: r.ok, detail: r.detail });
            break;
          }
          await new Promise((res) => setTimeout(res, 400)); // notDrained (refused locally): wait for gossip, retry
        }
      }
      for (const e of newEdges) await step(p0, "demo-reshape", ++seq, { op: "activate", edge: e }, `activate ${e}`);
      drainEdges = [];
      for (const p of peers) send(p, { cmd: "drain-edges", edges: [] });
      note(`old generations drained and retired, new ones activated: tenants now ${wa}:${wb}`);
      reshaped = true;
    };

    const view = (): PeerView[] => peers.map((p) => ({ index: p.index, id: p.id, state: p.state, status: p.last, restarts: p.restarts, restored: p.restored }));
    const draw = () => {
      const text = renderLive(view(), events, (Date.now() - runStart) / 1000, o) + (dashboardUrl !== null ? `\n\ndashboard of peer 0: ${dashboardUrl}` : "");
      if (o.live) out.write(`\x1b[H\x1b[2J${text}\n`);
    };
    if (o.live) out.write("\x1b[2J");
    let lastLine = 0;
    // H of node.md §16 A11, per parent: the most entitlement peer 0 saw steerable there (currentBound − q).
    const peakSteerable = new Map<string, bigint>();
    const notePeaks = () => {
      for (const b of peers[0]?.last?.bounds ?? []) {
        const s = BigInt(b.currentBound) - QUANTUM;
        if (s > (peakSteerable.get(b.parent) ?? 0n)) peakSteerable.set(b.parent, s);
      }
    };
    while (Date.now() < runStart + durationMs) {
      const now = Date.now();
      notePeaks();
      if (!done.cut && now >= at(TIMELINE.cut)) {
        done.cut = true;
        cutPeer.state = "cut";
        send(cutPeer, { cmd: "block", peers: peers.filter((p) => p !== cutPeer).map((p) => p.id) });
        for (const p of peers) if (p !== cutPeer) send(p, { cmd: "block", peers: [cutPeer.id] });
        note(`peer ${cutPeer.index} cut off from the others (its process keeps running and spending)`);
      }
      if (o.governed && !done.reshape && now >= at(TIMELINE.reshape)) {
        done.reshape = true;
        reshaping = reshape();
      }
      if (!done.heal && now >= at(TIMELINE.heal)) {
        done.heal = true;
        cutPeer.state = "up";
        for (const p of peers) send(p, { cmd: "block", peers: [] });
        note(`peer ${cutPeer.index} healed`);
      }
      if (!done.kill && now >= at(TIMELINE.kill)) {
        done.kill = true;
        killPeer.state = "killed";
        killPeer.proc?.kill("SIGKILL");
        note(`peer ${killPeer.index} killed with SIGKILL`);
      }
      if (!done.restart && now >= at(TIMELINE.restart)) {
        done.restart = true;
        killPeer.restarts++;
        restarting = start(killPeer).then(() => void note(`peer ${killPeer.index} restarted from its SQLite store (${killPeer.restored} open reservation(s) found and cancelled)`));
      }
      if (o.live) draw();
      else if (now - lastLine >= 5_000) {
        lastLine = now;
        out.write(`${renderLive(view(), events.splice(0), (now - runStart) / 1000, o, true)}\n`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    if (restarting !== null) await restarting;
    if (reshaping !== null) {
      if (!reshaped) note("waiting for the reshape to finish before work stops");
      await reshaping;
    }

    note("work stops; waiting for every peer to converge");
    for (const p of peers) send(p, { cmd: "drain" });
    const settleStart = Date.now();
    let converged = false;
    while (Date.now() - settleStart < SETTLE_TIMEOUT_MS) {
      await new Promise((r) => setTimeout(r, 500));
      if (o.live) draw();
      const ss = peers.map((p) => p.last);
      const fresh = ss.every((s) => s !== null && s.draining && s.inFlight === 0);
      if (fresh && new Set(ss.map((s) => s!.digest)).size === 1) {
        // Two consecutive identical reads: nothing was still in flight.
        await new Promise((r) => setTimeout(r, 1_000));
        if (new Set(peers.map((p) => p.last!.digest)).size === 1) {
          converged = true;
          break;
        }
      }
    }
    note(converged ? `converged in ${((Date.now() - settleStart) / 1000).toFixed(1)} s: every peer holds byte-identical ledgers` : "did NOT converge within the settle timeout");
    const final = view();
    const checks = finalChecks(final, converged, o, peakSteerable);
    if (o.governed) checks.push(...governedChecks(final, governedLog, o, supplyPerPeer));
    out.write(`\n${renderFinal(final, events, checks, o)}\n`);
    for (const p of peers) send(p, { cmd: "exit" });
    await new Promise((r) => setTimeout(r, 500));
    return checks.every((c) => c.ok) ? 0 : 1;
  } finally {
    stopAll();
    if (!keepDir) rmSync(dir, { recursive: true, force: true });
  }
}
