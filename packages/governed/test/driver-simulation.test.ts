/**
 * Seeded simulation one level up from `simulation.test.ts`: the production driver (`raftNode`) runs unmodified
 * over the node package's `MemoryNetwork` (seeded drop, duplicate, delay, partitions) and `VirtualTimers`, with
 * simulated disks whose writes take virtual time and are lost when a node crashes mid-write — by default through
 * the production log store over a simulated directory, torn by the crash (`HEDDLE_RAFT_SIM_DISK=memory`: model only). Clients propose
 * keyed writes through any node (forwarding), retry on LeadershipLostError with the same key, read through
 * ReadIndex on leaders, and every history must be linearizable; every index must apply identically everywhere,
 * and the cluster must converge after healing. A failure names its seed; the seed reproduces the run.
 */
import { describe, expect, it } from "vitest";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { checkLinearizable, kvModel, raftChannelTransport, raftNode, sameEntry } from "../src/index.ts";
import type { KvInput, LogEntry, Operation, PersistedState, RaftNode, RaftStorage, StoredSnapshot } from "../src/index.ts";
import { KvMachine, kvCommand } from "./support/kv-machine.ts";
import { openSegmentedLog } from "../src/raft/wal-log.ts";
import type { SegmentedLog } from "../src/raft/wal-log.ts";
import { PowerCut, SimDirectory } from "./support/sim-directory.ts";

const SEEDS = Number(process.env.HEDDLE_RAFT_DRIVER_SEEDS ?? 24);
const RUN_MS = 8_000;
const SETTLE_MS = 5_000;
const yieldTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

interface Disk {
  term: number;
  votedFor: string | null;
  snapshot: StoredSnapshot | null;
  entries: LogEntry[];
}

class DiskCrashed extends Error {}

/** Disk mode: the production log store over a `SimDirectory` (default), or only the in-memory model. */
const DISK = process.env.HEDDLE_RAFT_SIM_DISK === "memory" ? "memory" : "wal";
const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");
function diskKey(d: Disk | PersistedState): string {
  const floor = d.snapshot?.lastIndex ?? 0;
  const s = d.snapshot;
  return JSON.stringify([d.term, d.votedFor, s === null ? null : [s.lastIndex, s.lastTerm, s.config, b64(s.state)],
    d.entries.filter((e) => e.index > floor).map((e) => [e.index, e.term, e.kind, e.key, e.stampedAt, e.config ?? null, b64(e.command)])]);
}

/** What the model disk steps do, on a copy. */
type Step = (d: Disk) => void;

/**
 * A storage incarnation over a shared disk: each write lands after a virtual delay, unless the node crashed. In
 * disk mode `wal` every write also goes through the log store (over `files`); a crash cuts the power in the middle
 * of the write in flight, and the next incarnation's `load` recovers the store, which must hold what the model
 * disk holds (or that plus the interrupted write, when all its bytes reached the disk).
 */
function simStorage(disk: Disk, files: { dir: SimDirectory } | null, timers: VirtualTimers, random: () => number, fail: (why: string) => void): RaftStorage & { crash(): void } {
  let alive = true;
  let log: SegmentedLog | null = null;
  let inFlight: { step: Step; call: (l: SegmentedLog) => void } | null = null;
  const later = (step: Step, call: (l: SegmentedLog) => void): Promise<void> =>
    new Promise((resolve, reject) => {
      inFlight = { step, call };
      timers.set(() => {
        if (!alive) return reject(new DiskCrashed("crashed"));
        inFlight = null;
        step(disk);
        if (log !== null) call(log);
        resolve();
      }, Math.floor(random() * 3));
    });
  let interrupted: Disk | null = null;
  return {
    crash() {
      alive = false;
      if (files === null || log === null) return;
      const pending = inFlight as { step: Step; call: (l: SegmentedLog) => void } | null;
      if (pending !== null) {
        const alt: Disk = { ...disk, entries: disk.entries.slice() };
        pending.step(alt);
        interrupted = alt;
        files.dir.cutPowerAfter(Math.floor(random() * (random() < 0.5 ? 64 : 4096)));
        try {
          pending.call(log);
        } catch (e) {
          if (!(e instanceof PowerCut)) throw e;
        }
        files.dir.cutPowerAfter(Infinity);
      }
      log.close();
      files.dir = files.dir.crash({ random });
      (files as { interrupted?: Disk | null }).interrupted = interrupted;
    },
    load: async (): Promise<PersistedState> => {
      if (files === null) return { term: disk.term, votedFor: disk.votedFor, snapshot: disk.snapshot, entries: disk.entries.slice() };
      log = openSegmentedLog(files.dir, { segmentBytes: 16 * 1024 });
      const got = log.load();
      const alt = (files as { interrupted?: Disk | null }).interrupted ?? null;
      if (diskKey(got) !== diskKey(disk) && (alt === null || diskKey(got) !== diskKey(alt))) fail(`the log store recovered a state that is not the model disk's`);
      disk.term = got.term;
      disk.votedFor = got.votedFor;
      disk.snapshot = got.snapshot;
      disk.entries = got.entries.slice();
      return got;
    },
    saveTermAndVote: (t, v) => later((d) => ((d.term = t), (d.votedFor = v)), (l) => l.saveTermAndVote(t, v)),
    append: (es) => later((d) => {
      const first = es[0];
      if (first !== undefined) d.entries = [...d.entries.filter((e) => e.index < first.index), ...es];
    }, (l) => l.append(es)),
    truncateFrom: (i) => later((d) => (d.entries = d.entries.filter((e) => e.index < i)), (l) => l.truncateFrom(i)),
    saveSnapshot: (s) => later((d) => (d.snapshot = s), (l) => l.saveSnapshot(s)),
    discardThrough: (i) => later((d) => (d.entries = d.entries.filter((e) => e.index > i)), (l) => l.discardThrough(i)),
    close: async () => {},
  };
}

interface Member {
  id: string;
  node: RaftNode;
  kv: KvMachine;
  storage: RaftStorage & { crash(): void };
  alive: boolean;
  incarnation: number;
}

async function runDriverSimulation(seed: number): Promise<{ ops: number; committed: number; installs: number }> {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(seed * 1000 + 1), faults: { dropRate: 0.03, duplicateRate: 0.03, delayMs: [1, 8] } });
  const fault = seededRandom(seed * 1000 + 2);
  const clientRnd = seededRandom(seed * 1000 + 3);
  const diskRnd = seededRandom(seed * 1000 + 4);
  const ids = ["n1", "n2", "n3"];
  const cluster = { voters: ids, learners: [] };
  const disks = new Map<string, Disk>(ids.map((id) => [id, { term: 0, votedFor: null, snapshot: null, entries: [] }]));
  const files = new Map(ids.map((id) => [id, DISK === "wal" ? { dir: new SimDirectory(`sim/${id}`) } : null]));
  const members = new Map<string, Member>();
  const appliedAt = new Map<number, LogEntry>();
  const failures: string[] = [];
  let installs = 0;
  const fail = (why: string): void => void failures.push(`driver simulation seed=${seed} t=${timers.now()}: ${why}`);

  const boot = (id: string, seam = net.join(id)): void => {
    const prev = members.get(id);
    const storage = simStorage(disks.get(id)!, files.get(id)!, timers, diskRnd, (why) => fail(`${id}: ${why}`));
    const node = raftNode({ cluster, transport: raftChannelTransport(seam), storage, timers, random: seededRandom(seed * 1000 + 10 + (prev?.incarnation ?? 0) * 7 + id.charCodeAt(1)) });
    const m: Member = { id, node, kv: new KvMachine(), storage, alive: true, incarnation: (prev?.incarnation ?? 0) + 1 };
    members.set(id, m);
    void (async () => {
      try {
        for await (const c of node.committedFrom(1)) {
          if (!m.alive) return;
          if (c.kind === "entry") {
            const ref = appliedAt.get(c.entry.index);
            if (ref === undefined) appliedAt.set(c.entry.index, c.entry);
            else if (!sameEntry(ref, c.entry)) fail(`${id} applied a different entry at ${c.entry.index}`);
          }
          if (c.kind === "install") installs++;
          m.kv.apply(c);
          // publish a snapshot every 25 applied indexes: compaction, InstallSnapshot and restart-from-snapshot run too
          if (m.kv.applied % 25 === 0) node.publishSnapshot({ throughIndex: m.kv.applied, state: m.kv.snapshot() });
        }
      } catch (e) {
        if (m.alive) fail(`${id} apply loop: ${(e as Error).message}`);
      }
    })();
  };
  for (const id of ids) boot(id);

  const crash = (m: Member): void => {
    if (!m.alive) return;
    m.alive = false;
    m.storage.crash();
    net.crash(m.id, "silent");
    void m.node.close();
  };

  // clients
  const history: Operation<KvInput, string>[] = [];
  let stop = false;
  let completed = 0;
  const clientLoop = async (client: number): Promise<void> => {
    for (let seq = 1; !stop; seq++) {
      await sleepVirtual(Math.floor(clientRnd() * 60));
      if (stop) return;
      const key = `k${Math.floor(clientRnd() * 2)}`;
      const r = clientRnd();
      const input: KvInput = r < 0.3 ? { op: "get", key } : { op: "append", key, value: `[${client}.${seq}]` };
      const op = { client, input, output: undefined as string | undefined, call: timers.now(), ret: Infinity };
      history.push(op);
      const deadline = timers.now() + 2_000;
      for (let attempt = 0; attempt < 5 && timers.now() < deadline && op.output === undefined; attempt++) {
        const live = [...members.values()].filter((m) => m.alive);
        const m = live[Math.floor(clientRnd() * live.length)];
        if (m === undefined) break;
        const inc = m.incarnation;
        const ac = new AbortController();
        const h = timers.set(() => ac.abort(), deadline - timers.now());
        try {
          if (input.op === "get" && m.node.role.get() === "leader" && clientRnd() < 0.5) {
            const ri = await m.node.readIndex();
            await untilVirtual(() => m.kv.applied >= ri || !m.alive || timers.now() >= deadline);
            if (m.alive && m.incarnation === inc && m.kv.applied >= ri) op.output = m.kv.data.get(key) ?? "";
          } else {
            const res = await m.node.propose(kvCommand(input), { client: `c${client}`, seq }, ac.signal);
            await untilVirtual(() => m.kv.applied >= res.index || !m.alive || timers.now() >= deadline);
            if (m.alive && m.incarnation === inc && m.kv.applied >= res.index) {
              const out = m.kv.outcome(`c${client}`, seq);
              if (out === undefined) fail(`c${client}/${seq} applied at ${res.index} without an outcome on ${m.id}`);
              op.output = out;
            }
          }
        } catch {
          await sleepVirtual(10);
        } finally {
          timers.clear(h);
        }
      }
      if (op.output !== undefined) {
        op.ret = timers.now();
        completed++;
      }
    }
  };
  const waiters: { due: number; resolve: () => void }[] = [];
  function sleepVirtual(ms: number): Promise<void> {
    return new Promise((resolve) => waiters.push({ due: timers.now() + ms, resolve }));
  }
  async function untilVirtual(cond: () => boolean): Promise<void> {
    while (!cond()) await sleepVirtual(1);
  }
  const clients = [0, 1, 2].map((c) => clientLoop(c));

  // faults
  let nextFault = 500;
  for (let t = 0; t < RUN_MS + SETTLE_MS; t++) {
    if (t === nextFault && t < RUN_MS) {
      nextFault += 400 + Math.floor(fault() * 1200);
      const r = fault();
      const live = [...members.values()].filter((m) => m.alive);
      if (r < 0.3) net.partition([[ids[Math.floor(fault() * 3)]!]], "silent");
      else if (r < 0.5) net.heal();
      else if (r < 0.75 && live.length === 3) crash(live[Math.floor(fault() * live.length)]!);
      else {
        for (const m of members.values()) if (!m.alive) boot(m.id, net.restart(m.id));
      }
    }
    if (t === RUN_MS) {
      stop = true;
      net.heal();
      for (const m of members.values()) if (!m.alive) boot(m.id, net.restart(m.id));
    }
    timers.advanceBy(1);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.due <= timers.now()) waiters.splice(i, 1)[0]!.resolve();
    }
    await yieldTurn();
  }
  stop = true;
  for (const w of waiters.splice(0)) w.resolve();
  await Promise.race([Promise.all(clients), yieldTurn()]);

  const lin = checkLinearizable(kvModel, history);
  if (!lin.ok) fail(`history not linearizable (${lin.reason})`);
  const live = [...members.values()];
  const top = Math.max(...live.map((m) => m.kv.applied));
  for (const m of live) if (m.kv.applied !== top || m.kv.stateText() !== live[0]!.kv.stateText()) fail(`${m.id} did not converge (${m.kv.applied} vs ${top})`);
  if (live.filter((m) => m.node.role.get() === "leader").length !== 1) fail("no single leader after settling");
  for (const m of live) await m.node.close();
  if (failures.length > 0) throw new Error(failures.join("\n"));
  return { ops: completed, committed: top, installs };
}

describe("driver-level seeded simulation (raftNode over MemoryNetwork, crashes losing in-flight writes)", () => {
  it(`keeps linearizability, identical application and convergence over ${SEEDS} seeds`, async () => {
    let ops = 0;
    let installs = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = await runDriverSimulation(seed);
      expect(r.committed, `seed ${seed} made progress`).toBeGreaterThan(20);
      if (process.env.HEDDLE_RAFT_VERBOSE) console.log(seed, r);
      ops += r.ops;
      installs += r.installs;
    }
    expect(ops).toBeGreaterThan(SEEDS * 20);
    expect(installs, "snapshot installs (restart from snapshot or InstallSnapshot)").toBeGreaterThan(0);
  }, 60_000 + SEEDS * 20_000);

  it("replays a seed exactly", async () => {
    const a = await runDriverSimulation(5);
    const b = await runDriverSimulation(5);
    expect(a).toEqual(b);
  }, 120_000);
});
