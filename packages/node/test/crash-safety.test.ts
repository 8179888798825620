import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { MemoryNetwork, heddleStatic, seededRandom, sqliteStore, type HeddleNode } from "../src/index.ts";
import { VirtualTimers } from "../src/testing.ts";
import { CRASH_SUPPLY, CRASH_TOPOLOGY, crashCost } from "./fixtures/crash-cost.ts";
import { conservation } from "./node-sim.ts";

const KILLS = Number(process.env.HEDDLE_KILLS ?? 20);
const SEED = Number(process.env.HEDDLE_SEED ?? 20261129);
const script = join(import.meta.dirname, "fixtures", "crash-peer-process.ts");

interface Seen {
  res: Map<string, { peer: string; max: bigint }>;
  acked: Map<string, bigint>;
  opened: Set<string>;
}

/** Runs the peer process until `READY`, lets it work for `ms`, then SIGKILLs it; collects its lines. */
async function runOnce(dir: string, seed: number, ms: number, seen: Seen): Promise<void> {
  const child = spawn(process.execPath, [script, dir, String(seed)], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += String(d)));
  const exited = new Promise<number | null>((res) => child.on("exit", (code) => res(code)));
  let ready!: () => void;
  const isReady = new Promise<void>((res) => (ready = res));
  const lines = createInterface({ input: child.stdout });
  const closed = new Promise<void>((r) => lines.once("close", () => r()));
  lines.on("line", (l) => {
    const [kind, peer, id, amount] = l.split(" ");
    if (kind === "READY") ready();
    else if (kind === "OPEN") seen.opened.add(id!);
    else if (kind === "RES") seen.res.set(id!, { peer: peer!, max: BigInt(amount!) });
    else if (kind === "ACK") seen.acked.set(id!, BigInt(amount!));
  });
  const timeout = setTimeout(() => child.kill("SIGKILL"), 60_000);
  await Promise.race([isReady, exited]);
  await new Promise((r) => setTimeout(r, ms));
  child.kill("SIGKILL");
  const code = await exited;
  clearTimeout(timeout);
  await closed;
  if (code !== null && stderr.length > 0) throw new Error(`peer process exited ${code} before the kill: ${stderr.slice(-2000)}`);
  expect(stderr).toBe("");
}

describe("crash safety with real processes (SIGKILL, restart from SQLite)", () => {
  it(`${KILLS} SIGKILLs at seeded random moments: conservation, nothing spent twice, no acknowledged completion lost`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-crash-"));
    const rnd = seededRandom(SEED);
    const seen: Seen = { res: new Map(), acked: new Map(), opened: new Set() };
    try {
      for (let k = 0; k < KILLS; k++) await runOnce(dir, SEED + k, 30 + Math.floor(rnd() * 400), seen);
      // Final restart from the stores, in-process, on a healed network: list what is still open, settle.
      const timers = new VirtualTimers();
      const net = new MemoryNetwork({ timers, random: seededRandom(SEED + 1) });
      const nodes: HeddleNode[] = ["a", "b"].map((id, k) =>
        heddleStatic({
          seam: net.join(id), self: ReplicaId(id), root: GroupId("root"), supply: CRASH_SUPPLY, topology: CRASH_TOPOLOGY,
          config: { policy: { quantum: 50n }, maxHoldingsPerPeer: 1_000_000n, timers, random: seededRandom(k), store: sqliteStore(join(dir, `${id}.db`)), antiEntropyIntervalMs: 50 },
        }),
      );
      for (const n of nodes) for (const row of n.openReservations()) seen.opened.add(row.id);
      for (let t = 0; t < 400 && nodes[0]!.ledger.get().encode() !== nodes[1]!.ledger.get().encode(); t++) timers.advanceBy(50);
      const [la, lb] = nodes.map((n) => n.ledger.get());
      expect(la!.equals(lb!)).toBe(true);
      for (const l of [la!, lb!]) {
        const k = conservation(l);
        expect(k.negative).toEqual([]);
        expect(k.minted).toBe(k.held + k.leafSpent);
        expect(l.validate()).toEqual([]);
      }
      // An acknowledged completion is never found open again (it was not lost).
      for (const id of seen.acked.keys()) expect(seen.opened.has(id)).toBe(false);
      // Every reservation announced and never found open was completed exactly once with crashCost;
      // open ones were cancelled (charge 0). Reservations the kill hid before `RES` were found open.
      let expected = 0n;
      let ackedSum = 0n;
      for (const [id, { max }] of seen.res) if (!seen.opened.has(id)) expected += crashCost(id, max);
      for (const [id, c] of seen.acked) {
        expect(c).toBe(crashCost(id, seen.res.get(id)!.max));
        ackedSum += c;
      }
      expect(la!.leafSpentTotal()).toBe(expected);
      expect(ackedSum <= expected).toBe(true);
      expect(seen.acked.size).toBeGreaterThan(KILLS);
      console.log(`crash safety: ${KILLS} kills, ${seen.acked.size} acknowledged completions, ${seen.res.size - seen.acked.size - [...seen.res.keys()].filter((id) => seen.opened.has(id)).length} committed but unacknowledged, ${seen.opened.size} found open and cancelled, leaf-spent ${expected}`);
      for (const n of nodes) await n.shutdown();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000 + KILLS * 5_000);
});
