/**
 * The part the Raft simulations (`simulation.ts`, `claims-simulation.ts`) share: a cluster of unmodified
 * `RaftCore` peers driven through the driver contract (persist, then send, then apply, then advance) in virtual
 * time (`VirtualTimers`), over a `SimNetwork`, onto simulated disks that keep only completed writes — a crash
 * mid-write keeps a random prefix of that write's steps — with per-peer clocks at their own rate and offset.
 * Each simulation subclasses it with its state machine, its checks and its fault plan. Every random draw here
 * comes from the fault generator or the network's in a fixed order, so a seed still drives one run.
 *
 * Disks run on the production log store (`wal-log.ts`) over a `SimDirectory` unless `HEDDLE_RAFT_SIM_DISK=memory`:
 * every step made durable on the model disk is also written and synced to the peer's log store, a crash cuts the
 * power in the middle of the step being written (its bytes partly down, unsynced writes partly lost), and a
 * restart rebuilds the core from what the log store recovers — which must be the model disk, or the model disk
 * plus the interrupted step when all of its bytes happened to reach the disk. The cut positions come from their
 * own generator, so the run (network, faults, clients) is the same in both disk modes.
 */
import { seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";
import { decodeMessage, encodeMessage, RaftCore } from "../../src/index.ts";
import type { LogEntry, Message, Outcome, PersistedState, RaftTraceEvent, Ready, StoredSnapshot } from "../../src/index.ts";
import { openSegmentedLog } from "../../src/raft/wal-log.ts";
import type { SegmentedLog } from "../../src/raft/wal-log.ts";
import { PowerCut, SimDirectory } from "./sim-directory.ts";
import type { SimNetwork } from "./sim-network.ts";

/** Whether simulated disks run on the log store (`wal`, the default) or only on the in-memory model. */
export const SIM_DISK: "wal" | "memory" = process.env.HEDDLE_RAFT_SIM_DISK === "memory" ? "memory" : "wal";
/** What the log stores went through, over every simulation run in this process (the tests assert it is not nothing). */
export const logStoreStats = { recoveries: 0, writesCut: 0, callsCompletedBeforeCut: 0, tornTails: 0, interruptedStepKept: 0, segmentsRolled: 0 };
/** Segment size of the simulated log stores: small, so runs roll and compact segments. */
const SIM_SEGMENT_BYTES = 16 * 1024;

/** A peer's log store and the directory it writes. */
interface SimLogStore {
  dir: SimDirectory;
  log: SegmentedLog | null;
}

/** What a peer has made durable: only writes that completed before a crash. */
export interface SimDisk {
  term: number;
  votedFor: string | null;
  snapshot: StoredSnapshot | null;
  entries: LogEntry[];
}

function cloneDisk(d: SimDisk): SimDisk {
  return { term: d.term, votedFor: d.votedFor, snapshot: d.snapshot, entries: d.entries.slice() };
}

const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");

/** A canonical text of what a disk holds for a restart: entries above the snapshot only (R-P4). */
function diskKey(d: SimDisk | PersistedState): string {
  const floor = d.snapshot?.lastIndex ?? 0;
  const s = d.snapshot;
  return JSON.stringify([
    d.term,
    d.votedFor,
    s === null ? null : [s.lastIndex, s.lastTerm, s.config, b64(s.state)],
    d.entries.filter((e) => e.index > floor).map((e) => [e.index, e.term, e.kind, e.key, e.stampedAt, e.config ?? null, b64(e.command)]),
  ]);
}

function describeDisk(d: SimDisk | PersistedState): string {
  const floor = d.snapshot?.lastIndex ?? 0;
  const es = d.entries.filter((e) => e.index > floor);
  return `term ${d.term} vote ${d.votedFor} snapshot ${floor} entries ${es[0]?.index ?? "-"}…${es.at(-1)?.index ?? "-"} (${es.length})`;
}

/** A fresh, empty disk. */
export function emptyDisk(): SimDisk {
  return { term: 0, votedFor: null, snapshot: null, entries: [] };
}

/** One simulated peer: its core, disk, clock and the client work waiting on it. */
export interface SimPeer {
  readonly id: string;
  alive: boolean;
  /** Bumped by each crash, so events scheduled for an earlier life find themselves stale. */
  incarnation: number;
  core: RaftCore;
  disk: SimDisk;
  readonly rate: number;
  readonly offset: number;
  /** The ready whose writes are on their way to disk, if any. */
  writing: Ready | null;
  processScheduled: boolean;
  lastCommit: number;
  waiters: { index: number; fn: () => void }[];
  /** Client attempts in flight on this peer: a crash turns each into a retry elsewhere (same key). */
  attempts: Set<() => void>;
  readonly random: () => number;
}

/** A cluster of `SimPeer`s driven over virtual time; subclasses supply the machine, the checks and the faults. */
export abstract class SimCluster<N extends SimPeer> {
  readonly timers = new VirtualTimers();
  readonly net: SimNetwork;
  readonly faultRandom: () => number;
  readonly nodes: N[] = [];
  readonly byId = new Map<string, N>();
  /** Whether disks accept snapshots and prefix discards (a simulation that never compacts refuses them). */
  readonly compacts: boolean;
  /** Virtual milliseconds between ticks of a peer's true-rate clock. */
  readonly tickMs: number;
  events = 0;
  nextRequestId = 1;
  /** Who waits on the outcome of each request id proposed to a core. */
  readonly requestHandlers = new Map<number, (o: Outcome) => void>();
  /** Each peer's log store (disk mode `wal`). */
  readonly #stores = new Map<string, SimLogStore>();
  #crashes = 0;
  /** The model disk with the interrupted step applied, per crashed peer (a fully written step may survive). */
  readonly #interrupted = new Map<string, SimDisk>();

  constructor(net: SimNetwork, faultRandom: () => number, shape: { readonly compacts: boolean; readonly tickMs: number }) {
    this.net = net;
    this.faultRandom = faultRandom;
    this.compacts = shape.compacts;
    this.tickMs = shape.tickMs;
  }

  /** Throws the simulation's failure, naming the seed. */
  abstract fail(why: string): never;
  abstract trace(line: string): void;
  /** A core for `n` from what its disk holds. */
  abstract buildCore(n: N): RaftCore;
  /** Sees one trace event of a ready, before anything of the ready is acted on. */
  abstract onTrace(n: N, ev: RaftTraceEvent): void;
  /** Sends, applies and advances a ready whose writes are durable. */
  abstract finishReady(n: N, rd: Ready): void;
  /** The invariants checked on a peer after every event that touched it. */
  abstract checkNode(n: N): void;
  /** Resets what a restarted peer rebuilds from its disk (its state machine), before its core is rebuilt. */
  abstract onRestart(n: N): void;
  /** The highest index `n`'s state machine has applied. */
  abstract applied(n: N): number;
  /** One step of the simulation's fault plan. */
  abstract injectFault(): void;

  /** Adds a peer (its core built from its disk). */
  addNode(node: N): void {
    node.core = this.buildCore(node);
    this.nodes.push(node);
    this.byId.set(node.id, node);
  }

  get now(): number {
    return this.timers.now();
  }

  /** Schedules `fn` after `delay`; once it has run, the live peer whose id it returns is checked. */
  at(delay: number, fn: () => string | null): void {
    this.timers.set(() => {
      this.events++;
      const touched = fn();
      if (touched !== null) {
        const n = this.byId.get(touched)!;
        if (n.alive) this.checkNode(n);
      }
    }, Math.max(0, delay));
  }

  /** Runs every event due up to virtual time `t`. */
  loopUntil(t: number): void {
    this.timers.advanceBy(t - this.now);
  }

  /** `n`'s own clock reading now. */
  localNow(n: N): number {
    return Math.floor(n.offset + this.now * n.rate);
  }

  /** Schedules a peer's ready processing (the driver's "one event-loop turn"). */
  poke(n: N): void {
    if (n.processScheduled || n.writing !== null || !n.alive) return;
    n.processScheduled = true;
    const inc = n.incarnation;
    this.at(0, () => {
      if (!n.alive || n.incarnation !== inc) return null;
      n.processScheduled = false;
      this.process(n);
      return n.id;
    });
  }

  /** Takes a ready: early messages go out at once; writes reach disk after a random delay, then the rest. */
  process(n: N): void {
    if (n.writing !== null || !n.core.hasReady()) return;
    const rd = n.core.ready();
    for (const ev of rd.trace) this.onTrace(n, ev);
    for (const env of rd.earlyMessages) this.send(n, env.to, env.message);
    if (rd.hardState === null && rd.storage.length === 0) return this.finishReady(n, rd);
    n.writing = rd;
    const inc = n.incarnation;
    this.at(Math.floor(this.faultRandom() * 4), () => {
      if (!n.alive || n.incarnation !== inc) return null;
      this.persist(n, rd, Infinity);
      n.writing = null;
      this.finishReady(n, rd);
      return n.id;
    });
  }

  /**
   * Applies the first `limit` durable steps of a ready to the disk (hard state, then storage ops in order), and
   * writes them to the peer's log store. With `cut`, the power fails during the next step on the log store.
   */
  persist(n: N, rd: Ready, limit: number, cut: (() => number) | null = null): void {
    const store = this.#store(n);
    const before = cut !== null && store !== null ? cloneDisk(n.disk) : null;
    this.persistModel(n, rd, limit);
    if (store === null) return;
    const steps = this.#logSteps(rd);
    const log = store.log!;
    for (let k = 0; k < Math.min(limit, steps.length); k++) steps[k]!(log);
    if (cut !== null && limit < steps.length) {
      const real = n.disk;
      n.disk = before!;
      this.persistModel(n, rd, limit + 1);
      this.#interrupted.set(n.id, n.disk);
      n.disk = real;
      store.dir.cutPowerAfter(Math.floor(cut() * (cut() < 0.5 ? 64 : 4096)));
      try {
        steps[limit]!(log);
        logStoreStats.callsCompletedBeforeCut++;
      } catch (e) {
        if (!(e instanceof PowerCut)) throw e;
        logStoreStats.writesCut++;
      }
      store.dir.cutPowerAfter(Infinity);
    }
  }

  /** The steps of a ready as log-store calls, in the order the model applies them. */
  #logSteps(rd: Ready): ((log: SegmentedLog) => void)[] {
    const out: ((log: SegmentedLog) => void)[] = [];
    if (rd.hardState !== null) {
      const h = rd.hardState;
      out.push((log) => log.saveTermAndVote(h.term, h.votedFor));
    }
    for (const op of rd.storage) {
      switch (op.op) {
        case "snapshot":
          out.push((log) => log.saveSnapshot(op.snapshot));
          break;
        case "discardThrough":
          out.push((log) => log.discardThrough(op.index));
          break;
        case "truncateFrom":
          out.push((log) => log.truncateFrom(op.index));
          break;
        case "append":
          out.push((log) => log.append(op.entries));
          break;
      }
    }
    return out;
  }

  /** `n`'s log store, opened on first use; null in disk mode `memory`. */
  #store(n: N): SimLogStore | null {
    if (SIM_DISK !== "wal") return null;
    let s = this.#stores.get(n.id);
    if (s === undefined) {
      const dir = new SimDirectory(`sim/${n.id}`);
      s = { dir, log: openSegmentedLog(dir, { segmentBytes: SIM_SEGMENT_BYTES }) };
      this.#stores.set(n.id, s);
    }
    return s;
  }

  /** The model disk steps only. */
  persistModel(n: N, rd: Ready, limit: number): void {
    let steps = 0;
    if (rd.hardState !== null) {
      if (steps++ >= limit) return;
      n.disk.term = rd.hardState.term;
      n.disk.votedFor = rd.hardState.votedFor;
    }
    for (const op of rd.storage) {
      if (steps++ >= limit) return;
      const d = n.disk;
      if ((op.op === "snapshot" || op.op === "discardThrough") && !this.compacts) this.fail(`${n.id}: unexpected storage op ${op.op} (this simulation never compacts)`);
      switch (op.op) {
        case "snapshot":
          d.snapshot = op.snapshot;
          break;
        case "discardThrough":
          d.entries = d.entries.filter((e) => e.index > op.index);
          break;
        case "truncateFrom":
          d.entries = d.entries.filter((e) => e.index < op.index);
          break;
        case "append": {
          const first = op.entries[0];
          if (first === undefined) break;
          const tail = d.entries[d.entries.length - 1];
          if (tail !== undefined && tail.index >= first.index) d.entries = d.entries.filter((e) => e.index < first.index);
          const last = d.entries[d.entries.length - 1];
          const floor = d.snapshot?.lastIndex ?? 0;
          if ((last?.index ?? floor) + 1 !== first.index && first.index !== floor + 1) {
            this.fail(`${n.id}: disk append at ${first.index} leaves a gap after ${last?.index ?? floor}`);
          }
          d.entries.push(...op.entries);
          break;
        }
      }
    }
  }

  /** Hands each outcome of a ready to whoever waits on its request id (once). */
  answer(rd: Ready): void {
    for (const o of rd.outcomes) {
      const h = this.requestHandlers.get(o.id);
      if (h !== undefined) {
        this.requestHandlers.delete(o.id);
        h(o);
      }
    }
  }

  /** Re-arms `n`'s tick at its clock's rate, for as long as this life of `n` lasts. */
  tickLoop(n: N): void {
    const inc = n.incarnation;
    this.at(Math.max(1, Math.round(this.tickMs / n.rate)), () => {
      if (!n.alive || n.incarnation !== inc) return null;
      n.core.tick(this.localNow(n));
      this.poke(n);
      this.tickLoop(n);
      return n.id;
    });
  }

  /** Encodes `message` and hands it to the network; each copy that arrives is decoded and stepped into `to`. */
  send(from: N, to: string, message: Message): void {
    const frame = encodeMessage(message);
    this.checkFrame(from, message, frame);
    const target = this.byId.get(to);
    if (target === undefined) return;
    this.net.transmit(from.id, to, (delay) =>
      this.at(delay, () => {
        if (!target.alive || this.net.blocked(from.id, to) || !this.frameFits(target, frame)) return null;
        const m = decodeMessage(frame);
        if (m === null) this.fail(`frame from ${from.id} did not decode`);
        this.deliverFrame(target, from.id, m);
        this.poke(target);
        return target.id;
      }),
    );
  }

  /** Steps one arrived frame into `target`'s core; a simulation may look before and after. */
  deliverFrame(target: N, from: string, m: Message): void {
    target.core.step(from, m);
  }

  /** Whether `target`'s transport takes a frame this long (every frame by default). */
  frameFits(_target: N, _frame: Uint8Array): boolean {
    return true;
  }

  /** A check on every frame a peer emits (none by default). */
  checkFrame(_from: N, _message: Message, _frame: Uint8Array): void {}

  /** Crashes `n`: its in-flight write keeps a random prefix, its pending work is dropped, its clients retry. */
  crash(n: N): void {
    if (!n.alive) return;
    this.trace(`${n.id} CRASH`);
    const cut = seededRandom(this.events * 131 + ++this.#crashes);
    if (n.writing !== null) {
      const steps = (n.writing.hardState !== null ? 1 : 0) + n.writing.storage.length;
      this.persist(n, n.writing, Math.floor(this.faultRandom() * (steps + 1)), cut);
    }
    const store = this.#store(n);
    if (store !== null) {
      store.log!.close();
      store.log = null;
      store.dir = store.dir.crash({ random: cut });
    }
    n.alive = false;
    n.incarnation++;
    n.writing = null;
    n.processScheduled = false;
    n.waiters = [];
    const attempts = [...n.attempts];
    n.attempts.clear();
    for (const retry of attempts) retry();
  }

  /** Restarts a crashed `n` from its disk. */
  restart(n: N): void {
    if (n.alive) return;
    this.trace(`${n.id} RESTART`);
    n.alive = true;
    const store = this.#store(n);
    if (store !== null && store.log === null) {
      this.#recover(n, store);
      const disk = n.disk;
      this.onRestart(n);
      // a sabotage that wipes the model disk wipes the log store too
      if (n.disk !== disk) this.#stores.delete(n.id);
    } else this.onRestart(n);
    n.lastCommit = 0;
    n.core = this.buildCore(n);
    this.tickLoop(n);
    this.poke(n);
  }

  /**
   * Reopens `n`'s log store after a crash: what it recovers must be the model disk — or the model disk plus the
   * step the crash interrupted, when all of that step's bytes reached the disk — and becomes the disk the core is
   * rebuilt from.
   */
  #recover(n: N, store: SimLogStore): void {
    let log: SegmentedLog;
    try {
      log = openSegmentedLog(store.dir, { segmentBytes: SIM_SEGMENT_BYTES });
    } catch (e) {
      this.fail(`${n.id}: the log store refused to recover after a crash: ${(e as Error).message}`);
    }
    store.log = log;
    const got = log.load();
    const want = diskKey(n.disk);
    if (diskKey(got) !== want) {
      const interrupted = this.#interrupted.get(n.id);
      if (interrupted === undefined || diskKey(got) !== diskKey(interrupted)) {
        this.fail(`${n.id}: the log store recovered ${describeDisk(got)}, the model disk holds ${describeDisk(n.disk)}`);
      }
    }
    logStoreStats.recoveries++;
    if (log.tornTail !== null) logStoreStats.tornTails++;
    if (diskKey(got) !== want) logStoreStats.interruptedStepKept++;
    logStoreStats.segmentsRolled = Math.max(logStoreStats.segmentsRolled, log.segmentNames.length);
    this.#interrupted.delete(n.id);
    n.disk = { term: got.term, votedFor: got.votedFor, snapshot: got.snapshot, entries: got.entries.slice() };
  }

  /** Starts every peer's clock and its first ready processing. */
  start(): void {
    for (const n of this.nodes) {
      this.tickLoop(n);
      this.poke(n);
    }
  }

  /** Injects a fault every `minGapMs` plus a random part of `spreadMs`, until virtual time `untilMs`. */
  faultLoop(minGapMs: number, spreadMs: number, untilMs: number): void {
    this.at(minGapMs + Math.floor(this.faultRandom() * spreadMs), () => {
      if (this.now >= untilMs) return null;
      this.injectFault();
      this.faultLoop(minGapMs, spreadMs, untilMs);
      return null;
    });
  }

  /** Ends the faults: links heal and stop losing frames, every peer is restarted. */
  settle(): void {
    this.net.heal();
    this.net.settling = true;
    for (const n of this.nodes) this.restart(n);
    this.trace("SETTLE");
  }

  /**
   * The leader of the highest term once settled, which must have committed an entry of its term; `noLeader`
   * names the failure when there is none.
   */
  settledLeader(noLeader: string): N {
    const leaders = this.nodes.filter((n) => n.core.state === "leader");
    if (leaders.length === 0) this.fail(noLeader);
    const leader = leaders.reduce((a, b) => (a.core.term >= b.core.term ? a : b));
    if (leader.core.termAt(leader.core.commitIndex) !== leader.core.term) this.fail(`leader ${leader.id} has not committed an entry of its term after settling`);
    return leader;
  }

  /** A live peer picked with `r`, or none when all are down. */
  pickLive(r: () => number): N | undefined {
    const live = this.nodes.filter((n) => n.alive);
    return live[Math.floor(r() * live.length)];
  }

  /** Runs the waiters of `n` whose index its state machine has reached. */
  runWaiters(n: N): void {
    if (n.waiters.length === 0) return;
    const due = n.waiters.filter((w) => this.applied(n) >= w.index);
    n.waiters = n.waiters.filter((w) => this.applied(n) < w.index);
    for (const w of due) w.fn();
  }

  /** Power loss: every live peer crashes at once; all come back after 50 ms plus a random part of `spreadMs`. */
  powerLoss(spreadMs: number): void {
    this.trace("POWER LOSS");
    for (const n of this.nodes.filter((x) => x.alive)) this.crash(n);
    this.at(50 + Math.floor(this.faultRandom() * spreadMs), () => {
      for (const n of this.nodes) this.restart(n);
      return null;
    });
  }
}
