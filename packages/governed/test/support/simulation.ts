/**
 * The deterministic simulation harness of governed.md §5.1: one process, one event queue, virtual time, every
 * random choice drawn from generators seeded by the run's seed. It drives N unmodified `RaftCore`s through the
 * driver contract (persist, then send, then apply, then advance) over a simulated network (drop, duplicate,
 * delay/reorder, frame budget, partitions and one-way cuts) and simulated disks that keep only writes that
 * completed before a crash (a crash mid-write keeps a random prefix of that write's steps). Per-node clocks
 * run at skewed rates. After every event the invariants of §5.2 are checked; at the end every client history
 * is checked linearizable and, when clocks were near-true, liveness and convergence are asserted.
 */
import { seededRandom } from "@heddle/seam";
import {
  checkLinearizable,
  kvModel,
  raftConfig,
  RaftCore,
  sameEntry,
} from "../../src/index.ts";
import type { ClusterConfig, KvInput, LogEntry, Message, Operation, RaftConfig, RaftTraceEvent, Ready } from "../../src/index.ts";
import { KvMachine, kvCommand } from "./kv-machine.ts";
import { emptyDisk, SimCluster } from "./sim-cluster.ts";
import type { SimDisk, SimPeer } from "./sim-cluster.ts";
import { SimNetwork } from "./sim-network.ts";

/** A fault profile: which kinds of trouble a run injects. */
export interface SimProfile {
  readonly voters: number;
  readonly joiner: boolean;
  readonly dropRate: number;
  readonly dupRate: number;
  readonly delayMs: readonly [number, number];
  readonly partitions: boolean;
  readonly crashes: boolean;
  readonly skew: boolean;
  readonly compactEvery: number;
  readonly maxMessageBytes: number;
  readonly snapshotChunkBytes: number;
  readonly clients: number;
  /** `maxEntriesPerMessage`: 1 lets a leader's older entries reach followers before its own no-op does. */
  readonly entriesPerMessage: number;
  /** Whether the fault plan also hands leadership over (R-T1–R-T3), sometimes followed by a restart. */
  readonly transfers: boolean;
}

/** Scenario families of §5.1; a seed picks one by `seed % families.length`. */
export const FAMILIES = [
  "steady",
  "partitions",
  "leader-crash-loop",
  "rolling-restarts",
  "lossy",
  "skewed-clocks",
  "membership",
  "snapshots-under-partitions",
  "figure-8",
  "transfers",
] as const;
export type Family = (typeof FAMILIES)[number];

/**
 * Deliberate storage faults, to show the harness catches what they break: `wipe-on-restart` restarts a node from
 * an empty store under its old id (forbidden by R-P5).
 */
export type Sabotage = "wipe-on-restart";

/**
 * Options of a run beyond its family. `mixedLimits`: each member runs its own `maxEntriesPerMessage` and
 * `maxMessageBytes` (from its own generator, so the rest of the run draws as without), and a frame longer than its
 * receiver's `maxMessageBytes` is dropped on arrival, as a seam drops a frame above its `maxFrameBytes`: n1 keeps the
 * family's limits, n2 takes one entry of at most 300 bytes, the others draw theirs.
 */
export interface SimOptions {
  readonly mixedLimits?: boolean;
}

/** Thrown when a run breaks an invariant; the message carries the seed and a trace dump. */
export class SimulationFailure extends Error {
  override readonly name = "SimulationFailure";
}

/**
 * Term of the disk entry at `index`. Entries above the floor are contiguous, but a crash between saving a
 * snapshot and discarding the prefix can leave older entries below it (R-P4), so look up from the tail.
 */
function diskTermAt(d: SimDisk, index: number): number | undefined {
  const n = d.entries.length;
  const last = d.entries[n - 1];
  if (last === undefined || index > last.index) return undefined;
  const e = d.entries[n - 1 - (last.index - index)];
  if (e !== undefined && e.index === index) return e.term;
  return d.entries.find((x) => x.index === index)?.term;
}

interface SimNode extends SimPeer {
  kv: KvMachine;
}

interface ClientOp {
  readonly client: number;
  readonly input: KvInput;
  output: string | undefined;
  readonly call: number;
  ret: number;
}

/** Where the Figure 8 schedule stands, and who plays which part. */
interface Figure8 {
  phase: "idle" | "minority" | "elect2" | "isolated2" | "elect3" | "strike" | "finale";
  since: number;
  l1: SimNode | null;
  f: SimNode | null;
  side: Set<string>;
  l2: SimNode | null;
  l3: SimNode | null;
  commitAtWin: number;
}

/** Summary of one run, for tests to assert on. */
export interface SimResult {
  readonly seed: number;
  readonly family: Family;
  readonly events: number;
  readonly committed: number;
  readonly completedOps: number;
  readonly unknownOps: number;
  readonly elections: number;
  readonly snapshotsInstalled: number;
  readonly membershipChanges: number;
  /** Transfers that succeeded (each checked: the target led a later term). */
  readonly transfersSucceeded: number;
  /** Transfers that ended otherwise, by refusal. */
  readonly transfersFailed: Readonly<Record<string, number>>;
  /** Figure 8 rounds that got as far as a third leader holding an earlier leader's uncommitted entries. */
  readonly figure8Rounds: number;
  /** R-M4: leader frames from outside the receiver's adopted voter set that it processed (it lagged). */
  readonly outsiderFramesHeard: number;
  /** R-M4: such frames dropped, each at its configuration's own term. */
  readonly outsiderFramesDropped: number;
  /** Uncommitted self-removals (config entries excluding their own leader) truncated by a later leader. */
  readonly selfRemovalsTruncated: number;
  /** AppendEntries refused as too-many-entries (a receiver's limit below its sender's). */
  readonly tooManyEntries: number;
  /** Frames dropped on arrival for being longer than their receiver's `maxMessageBytes` (`mixedLimits`). */
  readonly oversizeDropped: number;
}

const TICK_MS = 10;
const DURATION_MS = 20_000;
/** A fault is injected every FAULT_MIN_GAP_MS plus a random part of FAULT_GAP_SPREAD_MS. */
const FAULT_MIN_GAP_MS = 300;
const FAULT_GAP_SPREAD_MS = 1500;
const SETTLE_MS = 8_000;
const OP_TIMEOUT_MS = 3_000;
const STATE_SAMPLE = 16;
const THINK_MS = 120;

function profileFor(family: Family, r: () => number): SimProfile {
  const base: SimProfile = {
    voters: r() < 0.5 ? 3 : 5,
    joiner: false,
    dropRate: 0,
    dupRate: 0,
    delayMs: [1, 5],
    partitions: false,
    crashes: false,
    skew: false,
    compactEvery: 0,
    maxMessageBytes: 64 * 1024,
    snapshotChunkBytes: 16 * 1024,
    clients: 3,
    entriesPerMessage: 64,
    transfers: false,
  };
  switch (family) {
    case "steady":
      return { ...base, maxMessageBytes: r() < 0.5 ? 400 : base.maxMessageBytes };
    case "partitions":
      return { ...base, partitions: true, dropRate: 0.02 };
    case "leader-crash-loop":
    case "rolling-restarts":
      return { ...base, crashes: true, compactEvery: r() < 0.5 ? 25 : 0 };
    case "lossy":
      return { ...base, dropRate: 0.1 + r() * 0.2, dupRate: 0.1 + r() * 0.2, delayMs: [0, 30] };
    case "skewed-clocks":
      return { ...base, skew: true, partitions: r() < 0.5, crashes: r() < 0.5, dropRate: 0.02 };
    case "membership":
      return { ...base, voters: 3, joiner: true, partitions: r() < 0.5, crashes: r() < 0.5, compactEvery: 20, snapshotChunkBytes: 64 };
    case "snapshots-under-partitions":
      return { ...base, partitions: true, crashes: true, compactEvery: 10 + Math.floor(r() * 20), snapshotChunkBytes: 32 + Math.floor(r() * 200), maxMessageBytes: 600, dropRate: 0.05, dupRate: 0.05, delayMs: [0, 20] };
    case "figure-8":
      // Five voters and the scripted schedule of the Raft paper's Figure 8 (`Simulation.figure8Step`); one entry
      // per AppendEntries so a new leader's older entries reach a majority before its no-op does.
      return { ...base, voters: 5, entriesPerMessage: 1 };
    case "transfers":
      return { ...base, joiner: r() < 0.3, partitions: true, crashes: true, dropRate: 0.03, dupRate: 0.03, delayMs: [1, 10], compactEvery: r() < 0.3 ? 20 : 0, transfers: true };
  }
}

/** Runs one seeded simulation; throws `SimulationFailure` (naming the seed) on any violation. */
export function runSimulation(seed: number, familyOverride?: Family, sabotage?: Sabotage, options: SimOptions = {}): SimResult {
  const family: Family = familyOverride ?? FAMILIES[seed % FAMILIES.length]!;
  const sim = new Simulation(seed, family, sabotage, options);
  return sim.run();
}

class Simulation extends SimCluster<SimNode> {
  readonly seed: number;
  readonly family: Family;
  readonly profile: SimProfile;
  readonly cfg: RaftConfig;
  /** Members whose limits differ from `cfg` (`SimOptions.mixedLimits`). */
  readonly memberCfg = new Map<string, RaftConfig>();
  tooManyEntries = 0;
  oversizeDropped = 0;
  readonly clientRandom: () => number;
  readonly bootstrap: ClusterConfig;
  readonly traceRing: { t: number; node: string; ev: RaftTraceEvent | string }[] = [];
  // global invariant state
  readonly leaders = new Map<number, string>();
  readonly byIndexTerm = new Map<string, { prevTerm: number; entry: LogEntry }>();
  readonly committed = new Map<number, LogEntry>();
  maxCommitted = 0;
  readonly stateAt = new Map<number, string>();
  elections = 0;
  snapshotsInstalled = 0;
  membershipChanges = 0;
  // clients
  readonly history: ClientOp[] = [];
  completedOps = 0;
  unknownOps = 0;
  stopClients = false;
  membershipBusy = false;
  /** Set when the settle phase begins: scheduled faults that fire later do nothing. */
  faultsOver = false;
  transfersSucceeded = 0;
  readonly transfersFailed: Record<string, number> = {};
  nextOneShotClient = 1000;
  readonly f8: Figure8 = { phase: "idle", since: 0, l1: null, f: null, side: new Set(), l2: null, l3: null, commitAtWin: 0 };
  figure8Rounds = 0;

  readonly sabotage: Sabotage | undefined;
  /**
   * R-M4 (governed.md §4.8, amended) on every leader frame from outside the receiver's adopted voter set:
   * dropped exactly when its term equals the term of the entry (or snapshot) carrying that configuration.
   * `expectedDrops`/`seenDrops` count, per peer life, the drops the rule calls for and the drops the core made.
   */
  readonly rm4 = { outsiderFramesHeard: 0, outsiderFramesDropped: 0, selfRemovalsTruncated: 0 };
  readonly expectedDrops = new Map<string, number>();
  readonly seenDrops = new Map<string, number>();

  constructor(seed: number, family: Family, sabotage?: Sabotage, options: SimOptions = {}) {
    const pr = seededRandom(seed * 1000 + 1);
    const profile = profileFor(family, pr);
    super(new SimNetwork(profile, seededRandom(seed * 1000 + 2)), seededRandom(seed * 1000 + 3), { compacts: true, tickMs: TICK_MS });
    this.sabotage = sabotage;
    this.seed = seed;
    this.family = family;
    this.profile = profile;
    this.clientRandom = seededRandom(seed * 1000 + 4);
    this.cfg = raftConfig({
      maxMessageBytes: this.profile.maxMessageBytes,
      snapshotChunkBytes: this.profile.snapshotChunkBytes,
      maxEntriesPerMessage: this.profile.entriesPerMessage,
      maxInflightMessages: 8,
    });
    const voters: string[] = [];
    for (let i = 1; i <= this.profile.voters; i++) voters.push(`n${i}`);
    this.bootstrap = { voters, learners: [] };
    const ids = [...voters];
    if (this.profile.joiner) ids.push(`n${this.profile.voters + 1}`);
    if (options.mixedLimits === true) {
      const lr = seededRandom(seed * 1000 + 5);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(lr() * xs.length)]!;
      for (const id of ids.slice(1)) {
        const entries = id === "n2" ? 1 : pick([1, 2, 3, 5, 8, 16, this.profile.entriesPerMessage]);
        const bytes = id === "n2" ? 300 : pick([300, 400, 700, 2048, this.profile.maxMessageBytes]);
        this.memberCfg.set(id, raftConfig({ ...this.cfg, maxEntriesPerMessage: entries, maxMessageBytes: bytes }));
      }
    }
    ids.forEach((id, k) => {
      let rate = 1;
      let offset = 0;
      if (this.profile.skew) {
        rate = 0.5 + pr() * 1.5;
        offset = Math.floor(pr() * 10_000);
      } else {
        rate = 0.9 + pr() * 0.2;
        offset = Math.floor(pr() * 1000);
      }
      const random = seededRandom(seed * 1000 + 10 + k);
      this.addNode({
        id, alive: true, incarnation: 0, disk: emptyDisk(), rate, offset, writing: null, processScheduled: false,
        lastCommit: 0, waiters: [], attempts: new Set(), random,
        core: undefined as unknown as RaftCore, kv: new KvMachine(),
      });
    });
  }

  cfgOf(id: string): RaftConfig {
    return this.memberCfg.get(id) ?? this.cfg;
  }

  override fail(why: string): never {
    const dump = this.traceRing.slice(-80).map((r) => `${r.t} ${r.node} ${typeof r.ev === "string" ? r.ev : JSON.stringify(r.ev)}`).join("\n");
    throw new SimulationFailure(`raft simulation seed=${this.seed} family=${this.family} t=${this.now}: ${why}\n--- last trace ---\n${dump}\nreplay: runSimulation(${this.seed})`);
  }

  override trace(line: string, node = "", ev?: RaftTraceEvent): void {
    this.traceRing.push({ t: this.now, node, ev: ev ?? line });
    if (this.traceRing.length > 400) this.traceRing.splice(0, 200);
  }

  override buildCore(n: SimNode): RaftCore {
    // A joiner knows no voters until the log or a snapshot tells it (R-M4 exception).
    const joiner = !this.bootstrap.voters.includes(n.id);
    return new RaftCore({
      id: n.id,
      bootstrap: joiner ? { voters: [], learners: [] } : this.bootstrap,
      persisted: { term: n.disk.term, votedFor: n.disk.votedFor, snapshot: n.disk.snapshot, entries: n.disk.entries.slice() },
      config: this.cfgOf(n.id),
      random: n.random,
      now: this.localNow(n),
    });
  }

  // ------------------------------------------------------------------ node driver

  override finishReady(n: SimNode, rd: Ready): void {
    for (const env of rd.messages) this.send(n, env.to, env.message);
    for (const c of rd.committed) {
      if (c.kind === "install") {
        this.snapshotsInstalled++;
        n.kv.apply(c);
        const known = this.stateAt.get(c.snapshot.throughIndex);
        if (known !== undefined && known !== n.kv.stateText()) this.fail(`${n.id}: installed state at ${c.snapshot.throughIndex} differs from the state other nodes applied`);
        continue;
      }
      const index = c.kind === "entry" ? c.entry.index : c.index;
      const ref = this.committed.get(index);
      if (ref === undefined) this.fail(`${n.id}: applied ${index}, which no node has observed committed`);
      if (c.kind === "entry" && !sameEntry(ref, c.entry)) this.fail(`${n.id}: applied a different entry at ${index} (State Machine Safety)`);
      try {
        n.kv.apply(c);
      } catch (e) {
        this.fail(`${n.id}: ${(e as Error).message}`);
      }
      // Whole-state comparison at sampled indexes (and so after every install, at the next sample point).
      if (index % STATE_SAMPLE === 0) {
        const text = n.kv.stateText();
        const known = this.stateAt.get(index);
        if (known !== undefined && known !== text) this.fail(`${n.id}: state after applying ${index} differs from another node's (State Machine Safety)`);
        if (known === undefined) this.stateAt.set(index, text);
      }
    }
    this.answer(rd);
    n.core.advance(rd);
    this.checkNode(n);
    this.runWaiters(n);
    this.maybeCompact(n);
    if (n.core.hasReady()) this.poke(n);
  }

  override applied(n: SimNode): number {
    return n.kv.applied;
  }

  maybeCompact(n: SimNode): void {
    const every = this.profile.compactEvery;
    if (every <= 0) return;
    if (n.kv.applied - n.core.floor >= every && n.kv.applied === n.core.appliedIndex) {
      if (n.core.compact(n.kv.applied, n.kv.snapshot())) this.poke(n);
    }
  }

  override deliverFrame(target: SimNode, from: string, m: Message): void {
    const c = target.core;
    const leaderFrame = m.type === "append" || m.type === "snapshot" || m.type === "timeoutNow";
    if (!leaderFrame) return c.step(from, m);
    const outsider = c.config.voters.length > 0 && !c.config.voters.includes(from);
    const termBefore = c.term;
    const configTerm = c.configIndex > c.floor ? c.termAt(c.configIndex)! : c.snapshot?.config != null ? c.snapshot.lastTerm : 0;
    const cfgIndex = c.configIndex;
    const cfgEntry = cfgIndex > c.floor ? c.entryAt(cfgIndex) : undefined;
    c.step(from, m);
    if (outsider && m.term >= termBefore) {
      // at a higher term than ours the frame cannot be at the configuration's term (it is at most ours)
      if (m.term === termBefore && m.term === configTerm) {
        this.expectedDrops.set(target.id, (this.expectedDrops.get(target.id) ?? 0) + 1);
        this.rm4.outsiderFramesDropped++;
      } else {
        this.rm4.outsiderFramesHeard++; // a lagging member hearing a leader its configuration does not list
      }
    }
    // An uncommitted self-removal (a config entry whose voters exclude the leader of its term) truncated here.
    if (cfgEntry !== undefined && cfgEntry.kind === "config" && c.floor < cfgIndex) {
      const now = c.entryAt(cfgIndex);
      if (now === undefined || !sameEntry(now, cfgEntry)) {
        const author = this.leaders.get(cfgEntry.term);
        if (author !== undefined && !cfgEntry.config!.voters.includes(author)) {
          this.rm4.selfRemovalsTruncated++;
          this.trace(`${target.id} TRUNCATED ${author}'s self-removal at ${cfgIndex} (term ${cfgEntry.term})`);
        }
      }
    }
  }

  override process(n: SimNode): void {
    const readying = n.writing === null && n.core.hasReady();
    const expected = this.expectedDrops.get(n.id) ?? 0;
    super.process(n);
    // every step before this ready is in its trace: the drops made are exactly the drops R-M4 calls for
    if (readying && (this.seenDrops.get(n.id) ?? 0) !== expected) {
      this.fail(`${n.id}: dropped ${this.seenDrops.get(n.id) ?? 0} leader frames as from a non-voter, R-M4 calls for ${expected}`);
    }
  }

  override onTrace(n: SimNode, ev: RaftTraceEvent): void {
    this.trace("", n.id, ev);
    if (ev.type === "frameRefused" && ev.reason === "sender-not-voter") this.seenDrops.set(n.id, (this.seenDrops.get(n.id) ?? 0) + 1);
    if (ev.type === "frameRefused" && ev.reason === "too-many-entries") this.tooManyEntries++;
    if (ev.type === "frameRefused" && ev.reason === "truncate-committed") {
      this.fail(`${n.id}: was asked to truncate a committed entry`);
    }
    if (ev.type === "electionWon") this.elections++;
    if (ev.type === "electionWon" && this.family === "figure-8") this.figure8Won(n);
  }

  // ------------------------------------------------------------------ network

  /** Every emitted frame stays within its sender's budget. */
  override checkFrame(from: SimNode, message: Message, frame: Uint8Array): void {
    const budget = this.cfgOf(from.id).maxMessageBytes;
    if (frame.length > budget) this.fail(`${from.id}: emitted a ${frame.length}-byte ${message.type} frame over the ${budget}-byte budget`);
  }

  /** A frame longer than its receiver's own budget is dropped on arrival (only members with their own limits have one below the sender's). */
  override frameFits(target: SimNode, frame: Uint8Array): boolean {
    if (frame.length <= this.cfgOf(target.id).maxMessageBytes) return true;
    this.oversizeDropped++;
    return false;
  }

  // ------------------------------------------------------------------ invariants (§5.2)

  override checkNode(n: SimNode): void {
    const c = n.core;
    // Election Safety
    if (c.state === "leader") {
      const prior = this.leaders.get(c.term);
      if (prior !== undefined && prior !== n.id) this.fail(`two leaders in term ${c.term}: ${prior} and ${n.id} (Election Safety)`);
      if (prior === undefined) {
        this.leaders.set(c.term, n.id);
        // Leader Completeness: every entry observed committed is in the new leader's log.
        for (const [i, e] of this.committed) {
          if (i <= c.floor) continue;
          const mine = c.entryAt(i);
          if (mine === undefined || !sameEntry(mine, e)) this.fail(`${n.id} won term ${c.term} without committed entry ${i} (Leader Completeness)`);
        }
      }
    }
    // Log Matching, incrementally over entries changed since the last check.
    if (c.changedFrom !== Infinity) {
      for (let i = Math.max(c.changedFrom, c.floor + 1); i <= c.lastIndex; i++) {
        const e = c.entryAt(i)!;
        const prevTerm = c.termAt(i - 1)!;
        const k = `${i}:${e.term}`;
        const seen = this.byIndexTerm.get(k);
        if (seen === undefined) this.byIndexTerm.set(k, { prevTerm, entry: e });
        else if (seen.prevTerm !== prevTerm || !sameEntry(seen.entry, e)) this.fail(`${n.id}: entry ${k} differs from another log's (Log Matching)`);
      }
      c.changedFrom = Infinity;
    }
    // Commit monotonicity and the global committed record.
    if (c.commitIndex < n.lastCommit) this.fail(`${n.id}: commitIndex went back from ${n.lastCommit} to ${c.commitIndex}`);
    for (let i = Math.max(n.lastCommit + 1, c.floor + 1); i <= c.commitIndex; i++) {
      const e = c.entryAt(i)!;
      const ref = this.committed.get(i);
      if (ref === undefined) this.committed.set(i, e);
      else if (!sameEntry(ref, e)) this.fail(`${n.id}: committed a different entry at ${i} (a committed entry was lost)`);
      // Durability: an entry a leader commits sits on a majority of voter disks (R-P2, R-R4).
      if (c.state === "leader") this.checkDurable(i, e.term, c.config.voters);
    }
    if (c.commitIndex > this.maxCommitted) this.maxCommitted = c.commitIndex;
    n.lastCommit = c.commitIndex;
    if (this.family === "figure-8") this.figure8Strike(n);
  }

  checkDurable(index: number, term: number, voters: readonly string[]): void {
    let holders = 0;
    for (const v of voters) {
      const d = this.byId.get(v)?.disk;
      if (d === undefined) continue;
      if ((d.snapshot?.lastIndex ?? 0) >= index || diskTermAt(d, index) === term) holders++;
    }
    if (holders < Math.floor(voters.length / 2) + 1) this.fail(`committed entry ${index} is durable on only ${holders} of ${voters.length} voters`);
  }

  // ------------------------------------------------------------------ clients

  clientLoop(client: number, seq: number): void {
    if (this.stopClients) return;
    const wait = Math.floor(this.clientRandom() * THINK_MS);
    this.at(wait, () => {
      if (this.stopClients) return null;
      const r = this.clientRandom();
      // Six keys and frequent puts keep each key's history small enough for an exhaustive linearizability search
      // even with ops whose outcome stayed unknown (they may land anywhere after their call).
      const key = `k${Math.floor(this.clientRandom() * 6)}`;
      const input: KvInput = r < 0.35 ? { op: "get", key } : r < 0.65 ? { op: "append", key, value: `[${client}.${seq}]` } : { op: "put", key, value: `[${client}.${seq}]` };
      const op: ClientOp = { client, input, output: undefined, call: this.now, ret: Infinity };
      this.history.push(op);
      this.attempt(op, seq, 0, this.now + OP_TIMEOUT_MS, () => this.clientLoop(client, seq + 1));
      return null;
    });
  }

  pickNode(): SimNode | undefined {
    return this.pickLive(this.clientRandom);
  }

  attempt(op: ClientOp, seq: number, tries: number, deadline: number, next: () => void, pin?: SimNode): void {
    const n = pin !== undefined && pin.alive ? pin : this.pickNode();
    const giveUp = (): void => {
      if (op.ret === Infinity && op.output === undefined) this.unknownOps++;
      next();
    };
    if (n === undefined || tries >= 8 || this.now >= deadline) return giveUp();
    const id = this.nextRequestId++;
    const inc = n.incarnation;
    let settled = false;
    const settle = (output: string): void => {
      if (settled) return;
      settled = true;
      op.output = output;
      op.ret = this.now;
      this.completedOps++;
      next();
    };
    const retry = (): void => {
      if (settled) return;
      settled = true;
      this.at(5 + Math.floor(this.clientRandom() * 20), () => {
        this.attempt(op, seq, tries + 1, deadline, next);
        return null;
      });
    };
    n.attempts.add(retry);
    const useReadIndex = op.input.op === "get" && n.core.state === "leader" && this.clientRandom() < 0.5;
    this.requestHandlers.set(id, (o) => {
      if (!n.alive || n.incarnation !== inc) return;
      if (!o.ok) return o.refusal === "leadership-lost" || o.refusal === "not-leader" || o.refusal === "transferring" ? retry() : (settled = true, giveUp());
      n.waiters.push({
        index: o.index,
        fn: () => {
          if (!n.alive || n.incarnation !== inc) return;
          if (useReadIndex) return settle(n.kv.data.get(op.input.key) ?? "");
          const out = n.kv.outcome(`c${op.client}`, seq);
          if (out === undefined) this.fail(`client ${op.client} seq ${seq}: committed at ${o.index} but no outcome recorded on ${n.id}`);
          settle(out);
        },
      });
      this.runWaiters(n);
    });
    if (useReadIndex) n.core.readIndex(id);
    else n.core.propose(id, kvCommand(op.input), op.input.op === "get" ? { client: `c${op.client}`, seq } : { client: `c${op.client}`, seq });
    this.poke(n);
    this.at(deadline - this.now, () => {
      if (settled) return null;
      settled = true;
      this.requestHandlers.delete(id);
      if (n.alive && n.incarnation === inc) n.core.abort(id);
      giveUp();
      return null;
    });
  }

  // ------------------------------------------------------------------ faults

  override onRestart(n: SimNode): void {
    // the previous life's unreported trace died with it
    this.expectedDrops.delete(n.id);
    this.seenDrops.delete(n.id);
    if (this.sabotage === "wipe-on-restart") n.disk = emptyDisk();
    n.kv = new KvMachine();
  }

  override injectFault(): void {
    const r = this.faultRandom;
    const p = this.profile;
    const ids = this.nodes.map((n) => n.id);
    if (this.family === "figure-8") return this.figure8Step();
    if (p.transfers && r() < 0.5) return this.transferStep();
    if (p.joiner && r() < 0.5) return this.membershipStep();
    const choice = r();
    if (p.partitions && choice < 0.4) {
      this.trace(this.net.splitOrCut(r, ids, 0.25));
      return;
    }
    if (p.partitions && choice < 0.6) {
      this.net.heal();
      this.trace("HEAL");
      return;
    }
    if (p.crashes && choice < 0.85) {
      const live = this.nodes.filter((n) => n.alive);
      const dead = this.nodes.filter((n) => !n.alive);
      // power loss: every node at once, each losing whatever write it had in flight
      if (r() < 0.05) return this.powerLoss(500);
      if (dead.length > 0 && (r() < 0.5 || live.length <= 1)) {
        this.restart(dead[Math.floor(r() * dead.length)]!);
        return;
      }
      const leader = live.find((n) => n.core.state === "leader");
      const victim = this.family === "leader-crash-loop" && leader !== undefined ? leader : live[Math.floor(r() * live.length)];
      if (victim !== undefined) {
        this.crash(victim);
        if (this.family === "rolling-restarts" || r() < 0.5) {
          const back = 50 + Math.floor(r() * 800);
          this.at(back, () => {
            this.restart(victim);
            return victim.id;
          });
        }
      }
      return;
    }
    if (p.joiner) this.membershipStep();
  }

  /** Drives single-server changes: add the joiner as learner, promote it, demote/remove a voter, and so on. */
  membershipStep(): void {
    if (this.membershipBusy) return;
    const leader = this.nodes.find((n) => n.alive && n.core.state === "leader");
    if (leader === undefined) return;
    const cur = leader.core.config;
    const all = this.nodes.map((n) => n.id);
    const r = this.faultRandom;
    let target: ClusterConfig | null = null;
    const outside = all.filter((id) => !cur.voters.includes(id) && !cur.learners.includes(id));
    if (outside.length > 0 && r() < 0.5) target = { voters: cur.voters, learners: [...cur.learners, outside[0]!] };
    else if (cur.learners.length > 0 && cur.voters.length < 4) {
      const l = cur.learners[0]!;
      const pr = leader.core.progress.get(l);
      if (pr !== undefined && pr.match >= leader.core.commitIndex - 5) target = { voters: [...cur.voters, l], learners: cur.learners.filter((x) => x !== l) };
    } else if (cur.voters.length > 3) {
      // most removals are the leader's own (R-M3), so self-removals — committed or not — are common
      const v = r() < 0.75 ? leader.id : cur.voters[Math.floor(r() * cur.voters.length)]!;
      target = { voters: cur.voters.filter((x) => x !== v), learners: r() < 0.5 ? [...cur.learners, v] : cur.learners };
    }
    if (target === null) return;
    // R-M4's second regression: a leader that crashes right after appending its own removal, before the entry
    // commits, having sent it to only some members (one-way cuts to the others) and made it durable or not
    // (the crash cuts its write anywhere); a next leader without the entry must truncate it where it landed
    const selfCrash = !target.voters.includes(leader.id) && r() < 0.75;
    const cuts: string[] = [];
    if (selfCrash) {
      for (const id of all) if (id !== leader.id && r() < 0.5) cuts.push(`${leader.id}>${id}`);
      for (const c of cuts) this.net.cuts.add(c);
      const inc = leader.incarnation;
      this.trace(`${leader.id} SELF-REMOVAL CRASH, cut ${JSON.stringify(cuts)}`);
      this.at(Math.floor(r() * 4), () => {
        if (!leader.alive || leader.incarnation !== inc) return null;
        this.crash(leader);
        this.at(50 + Math.floor(this.faultRandom() * 800), () => {
          for (const c of cuts) this.net.cuts.delete(c);
          this.restart(leader);
          return leader.id;
        });
        return null;
      });
    }
    const id = this.nextRequestId++;
    this.membershipBusy = true;
    this.trace(`${leader.id} CHANGE ${JSON.stringify(target)}`);
    this.requestHandlers.set(id, (o) => {
      this.membershipBusy = false;
      if (o.ok) this.membershipChanges++;
    });
    leader.core.changeMembership(id, target);
    this.poke(leader);
    this.at(OP_TIMEOUT_MS, () => {
      this.membershipBusy = false;
      return null;
    });
  }

  /** One client op of its own (a fresh client id), sent first to `pin`; part of the checked history. */
  oneShotOp(pin: SimNode): void {
    const client = this.nextOneShotClient++;
    const input: KvInput = { op: "append", key: `k${Math.floor(this.clientRandom() * 6)}`, value: `[${client}.1]` };
    const op: ClientOp = { client, input, output: undefined, call: this.now, ret: Infinity };
    this.history.push(op);
    this.attempt(op, 1, 0, this.now + OP_TIMEOUT_MS, () => {}, pin);
  }

  // ------------------------------------------------------------------ leadership transfers (R-T1–R-T3)

  /**
   * Asks the leader to hand over — usually to another voter (perhaps partitioned, lagging or down), sometimes
   * to itself or to a learner or stranger. A success is checked against what happened: the target must have
   * led a later term. Half the successes are followed by restarting the old leader (a rolling restart).
   */
  transferStep(): void {
    const leader = this.nodes.find((n) => n.alive && n.core.state === "leader");
    if (leader === undefined) return;
    const r = this.faultRandom;
    const cfg = leader.core.config;
    const others = cfg.voters.filter((v) => v !== leader.id);
    const x = r();
    const target = x < 0.08 ? leader.id : x < 0.16 ? (cfg.learners[0] ?? "stranger") : others[Math.floor(r() * others.length)] ?? leader.id;
    const startTerm = leader.core.term;
    const inc = leader.incarnation;
    const id = this.nextRequestId++;
    this.trace(`${leader.id} TRANSFER to ${target} at term ${startTerm}`);
    this.requestHandlers.set(id, (o) => {
      if (!o.ok) {
        this.transfersFailed[o.refusal] = (this.transfersFailed[o.refusal] ?? 0) + 1;
        return;
      }
      this.transfersSucceeded++;
      if (target === leader.id) return;
      if (![...this.leaders].some(([t, l]) => t > startTerm && l === target)) {
        this.fail(`${leader.id}: transfer to ${target} reported success, but ${target} never led a term after ${startTerm}`);
      }
      if (!this.faultsOver && leader.alive && leader.incarnation === inc && r() < 0.5) {
        this.crash(leader);
        this.at(50 + Math.floor(r() * 400), () => {
          this.restart(leader);
          return leader.id;
        });
      }
    });
    leader.core.transferLeadership(id, target);
    this.poke(leader);
  }

  // ------------------------------------------------------------------ Figure 8 (Raft paper, §5.4.2)

  /**
   * The schedule of the Raft paper's Figure 8, driven as an adversary: (1) a leader L1 is cut off with one
   * follower F and appends entries only they hold, then crashes; (2) the other three elect L2, which is cut off
   * the moment it wins — its no-op at index i reaches only its own disk — and crashes; (3) healed, L1 or F wins
   * a later term (L3) and starts copying its older entries to the others; (4) at L3's first commit it is cut
   * off and crashed, and L2 is restarted together with the two nodes whose logs end in a term below L2's. A
   * leader that counts replicas of an older-term entry (no `log[N].term === currentTerm` check, R-R4) has by
   * then committed index i, L2 wins with its own entry there, and Leader Completeness fails. A correct leader's
   * first commit is its no-op on a majority, so two such nodes never exist and step (4) only heals.
   */
  figure8Step(): void {
    const f = this.f8;
    if (f.phase !== "idle") {
      if (this.now - f.since > 4000) this.figure8Reset();
      return;
    }
    const dead = this.nodes.filter((n) => !n.alive);
    if (dead.length > 0) {
      for (const n of dead) this.restart(n);
      return;
    }
    const l1 = this.nodes.find((n) => n.core.state === "leader" && n.core.termAt(n.core.commitIndex) === n.core.term);
    if (l1 === undefined) return;
    const r = this.faultRandom;
    const others = this.nodes.filter((n) => n !== l1);
    const fol = others[Math.floor(r() * others.length)]!;
    f.l1 = l1;
    f.f = fol;
    f.l2 = null;
    f.l3 = null;
    f.side = new Set(others.filter((n) => n !== fol).map((n) => n.id));
    this.net.group = new Map(this.nodes.map((n) => [n.id, f.side.has(n.id) ? 1 : 0]));
    f.phase = "minority";
    f.since = this.now;
    this.trace(`FIG8 ${l1.id} and ${fol.id} cut off from ${[...f.side].join(",")}`);
    const ops = 1 + Math.floor(r() * 3);
    for (let k = 0; k < ops; k++) this.oneShotOp(l1);
    this.at(30 + Math.floor(r() * 50), () => {
      if (this.faultsOver || f.phase !== "minority") return null;
      this.crash(l1);
      f.phase = "elect2";
      f.since = this.now;
      return null;
    });
  }

  figure8Won(n: SimNode): void {
    const f = this.f8;
    if (this.faultsOver) return;
    if (f.phase === "elect2" && f.side.has(n.id)) {
      // Cut L2 off before its no-op leaves (this runs before the ready's frames are sent).
      f.l2 = n;
      f.phase = "isolated2";
      f.since = this.now;
      this.net.group = new Map(this.nodes.map((x) => [x.id, x === n ? 1 : 0]));
      this.trace(`FIG8 ${n.id} won term ${n.core.term}; cut off`);
      const inc = n.incarnation;
      this.at(10 + Math.floor(this.faultRandom() * 10), () => {
        if (this.faultsOver) return null;
        if (n.alive && n.incarnation === inc) this.crash(n);
        this.net.heal();
        if (f.l1 !== null) this.restart(f.l1);
        if (f.phase === "isolated2") f.phase = "elect3";
        return null;
      });
      return;
    }
    if ((f.phase === "isolated2" || f.phase === "elect3") && (n === f.l1 || n === f.f)) {
      f.l3 = n;
      f.commitAtWin = n.core.commitIndex;
      f.phase = "strike";
      f.since = this.now;
      this.figure8Rounds++;
      this.trace(`FIG8 ${n.id} won term ${n.core.term} holding the uncommitted entries`);
    }
  }

  figure8Strike(n: SimNode): void {
    const f = this.f8;
    if (this.faultsOver || f.phase !== "strike" || n !== f.l3 || !n.alive || n.core.state !== "leader" || n.core.commitIndex <= f.commitAtWin) return;
    const l2 = f.l2;
    f.phase = "finale";
    f.since = this.now;
    // Cut L3 off at once: its frames still in flight are dropped on arrival.
    this.net.group = new Map(this.nodes.map((x) => [x.id, x === n ? 1 : 0]));
    this.trace(`FIG8 ${n.id} committed ${n.core.commitIndex}; cut off`);
    this.at(0, () => {
      if (this.faultsOver) return null;
      this.crash(n);
      const diskLastTerm = (d: SimDisk): number => d.entries[d.entries.length - 1]?.term ?? d.snapshot?.lastTerm ?? 0;
      const l2Last = l2 === null ? 0 : diskLastTerm(l2.disk);
      const behind = this.nodes.filter((x) => x.alive && x !== l2 && x !== n && x.core.termAt(x.core.lastIndex)! < l2Last);
      if (l2 !== null && behind.length >= 2) {
        const side = new Set([l2.id, behind[0]!.id, behind[1]!.id]);
        this.net.group = new Map(this.nodes.map((x) => [x.id, side.has(x.id) ? 1 : 0]));
        this.trace(`FIG8 ${l2.id} back with ${behind[0]!.id},${behind[1]!.id}`);
      } else this.net.heal();
      if (l2 !== null) this.restart(l2);
      this.at(1500, () => {
        if (!this.faultsOver) this.figure8Reset();
        return null;
      });
      return null;
    });
  }

  figure8Reset(): void {
    this.net.heal();
    for (const n of this.nodes) this.restart(n);
    this.f8.phase = "idle";
    this.f8.since = this.now;
  }

  // ------------------------------------------------------------------ run

  run(): SimResult {
    this.start();
    for (let c = 0; c < this.profile.clients; c++) this.clientLoop(c, 1);
    this.faultLoop(FAULT_MIN_GAP_MS, FAULT_GAP_SPREAD_MS, DURATION_MS);
    this.loopUntil(DURATION_MS);
    // Settle: heal, restart everyone, stop new client work, let the cluster converge.
    this.stopClients = true;
    this.faultsOver = true;
    this.settle();
    const nearTrue = this.nodes.every((n) => n.rate >= 0.9 && n.rate <= 1.1);
    this.loopUntil(DURATION_MS + SETTLE_MS);
    if (nearTrue) this.checkLiveness();
    const check = checkLinearizable(kvModel, this.history.map((o): Operation<KvInput, string> => ({ ...o })));
    if (!check.ok) this.fail(`client history is not linearizable (${check.reason}, partition ${check.partition})`);
    return {
      seed: this.seed,
      family: this.family,
      events: this.events,
      committed: this.maxCommitted,
      completedOps: this.completedOps,
      unknownOps: this.unknownOps,
      elections: this.elections,
      snapshotsInstalled: this.snapshotsInstalled,
      membershipChanges: this.membershipChanges,
      transfersSucceeded: this.transfersSucceeded,
      transfersFailed: this.transfersFailed,
      figure8Rounds: this.figure8Rounds,
      ...this.rm4,
      tooManyEntries: this.tooManyEntries,
      oversizeDropped: this.oversizeDropped,
    };
  }

  checkLiveness(): void {
    const leader = this.settledLeader("no leader after the settle period with near-true clocks (liveness)");
    const members = new Set([...leader.core.config.voters, ...leader.core.config.learners]);
    const text = leader.kv.stateText();
    for (const n of this.nodes) {
      if (!members.has(n.id)) continue;
      if (n.kv.applied !== leader.kv.applied || n.kv.stateText() !== text) {
        this.fail(`${n.id} did not converge: applied ${n.kv.applied} vs leader ${leader.id} ${leader.kv.applied}`);
      }
    }
  }
}
