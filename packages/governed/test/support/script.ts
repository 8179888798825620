/**
 * Interaction scripts for the pure Raft core (etcd-raft style): a handful of cores, in-memory disks, and
 * explicit message delivery. Tests decide exactly which messages arrive, in which order, and when time moves.
 */
import { seededRandom } from "@heddle/seam";
import { decodeMessage, encodeMessage, raftConfig, RaftCore } from "../../src/index.ts";
import type { ClusterConfig, Envelope, LogEntry, Outcome, PersistedState, RaftConfig, RaftTraceEvent, Ready, StoredSnapshot } from "../../src/index.ts";
import { KvMachine } from "./kv-machine.ts";

/** A simulated disk: what survived the last completed writes. */
export interface ScriptDisk {
  term: number;
  votedFor: string | null;
  snapshot: StoredSnapshot | null;
  entries: LogEntry[];
}

/** A message in flight, with its sender. */
export interface InFlight {
  readonly from: string;
  readonly to: string;
  readonly message: Envelope["message"];
}

/** Applies the first `limit` steps of a ready's durable work to a disk. */
export function persistReady(d: ScriptDisk, rd: Ready, limit = Infinity): void {
  let steps = 0;
  if (rd.hardState !== null) {
    if (steps++ >= limit) return;
    d.term = rd.hardState.term;
    d.votedFor = rd.hardState.votedFor;
  }
  for (const op of rd.storage) {
    if (steps++ >= limit) return;
    if (op.op === "snapshot") d.snapshot = op.snapshot;
    else if (op.op === "discardThrough") d.entries = d.entries.filter((e) => e.index > op.index);
    else if (op.op === "truncateFrom") d.entries = d.entries.filter((e) => e.index < op.index);
    else {
      const first = op.entries[0];
      if (first !== undefined) d.entries = [...d.entries.filter((e) => e.index < first.index), ...op.entries];
    }
  }
}

/** A scripted cluster. */
export class Script {
  readonly cfg: RaftConfig;
  readonly cores = new Map<string, RaftCore>();
  readonly disks = new Map<string, ScriptDisk>();
  readonly kvs = new Map<string, KvMachine>();
  readonly outcomes = new Map<number, Outcome>();
  readonly traces = new Map<string, RaftTraceEvent[]>();
  readonly bootstrap: ClusterConfig;
  inflight: InFlight[] = [];
  /** Every frame size emitted, for budget assertions. */
  readonly frameSizes: number[] = [];
  now = 0;
  nextId = 1;
  /** A member's own configuration, where it differs from the cluster's `cfg` (takes effect at its next `start`). */
  readonly nodeConfig = new Map<string, RaftConfig>();

  constructor(voters: readonly string[], config: Partial<RaftConfig> = {}, extra: readonly string[] = []) {
    this.cfg = raftConfig(config);
    this.bootstrap = { voters: [...voters], learners: [] };
    for (const id of [...voters, ...extra]) {
      this.disks.set(id, { term: 0, votedFor: null, snapshot: null, entries: [] });
      this.start(id, voters.includes(id) ? this.bootstrap : { voters: [], learners: [] });
    }
  }

  /** (Re)starts `id` from its disk, replacing any running core. */
  start(id: string, bootstrap: ClusterConfig = this.bootstrap, persisted?: PersistedState): RaftCore {
    const d = this.disks.get(id)!;
    const p = persisted ?? { term: d.term, votedFor: d.votedFor, snapshot: d.snapshot, entries: d.entries.slice() };
    if (persisted !== undefined) {
      d.term = p.term;
      d.votedFor = p.votedFor;
      d.snapshot = p.snapshot;
      d.entries = p.entries.slice();
    }
    const core = new RaftCore({ id, bootstrap, persisted: p, config: this.nodeConfig.get(id) ?? this.cfg, random: seededRandom(id.charCodeAt(id.length - 1)), now: this.now });
    this.cores.set(id, core);
    this.kvs.set(id, new KvMachine());
    this.traces.set(id, []);
    this.inflight = this.inflight.filter((m) => m.to !== id && m.from !== id);
    return core;
  }

  core(id: string): RaftCore {
    return this.cores.get(id)!;
  }

  /** Runs one ready/advance cycle on `id`: persist, queue messages, apply. Returns the ready. */
  flush(id: string): Ready {
    const c = this.core(id);
    const rd = c.ready();
    persistReady(this.disks.get(id)!, rd);
    for (const env of [...rd.earlyMessages, ...rd.messages]) {
      const frame = encodeMessage(env.message);
      this.frameSizes.push(frame.length);
      this.inflight.push({ from: id, to: env.to, message: decodeMessage(frame)! });
    }
    for (const item of rd.committed) this.kvs.get(id)!.apply(item);
    for (const o of rd.outcomes) this.outcomes.set(o.id, o);
    this.traces.get(id)!.push(...rd.trace);
    c.advance(rd);
    return rd;
  }

  flushAll(): void {
    for (const id of this.cores.keys()) this.flush(id);
  }

  /** Delivers queued messages matching `pick` (all by default), in order; the rest stay queued. */
  deliver(pick: (m: InFlight) => boolean = () => true): number {
    const now = this.inflight.filter(pick);
    this.inflight = this.inflight.filter((m) => !pick(m));
    for (const m of now) {
      const c = this.cores.get(m.to);
      if (c !== undefined) c.step(m.from, m.message);
    }
    return now.length;
  }

  /** Flushes and delivers until nothing moves; messages failing `allow` are dropped. */
  stabilize(allow: (m: InFlight) => boolean = () => true, maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      this.flushAll();
      this.inflight = this.inflight.filter(allow);
      if (this.inflight.length === 0 && ![...this.cores.values()].some((c) => c.hasReady())) return;
      this.deliver();
    }
    throw new Error("Script.stabilize did not settle");
  }

  /** Advances every core's clock by `ms` in `step`-ms ticks, stabilizing after each tick. */
  advance(ms: number, allow: (m: InFlight) => boolean = () => true, step = 10, only?: readonly string[]): void {
    for (let t = 0; t < ms; t += step) {
      this.now += step;
      for (const [id, c] of this.cores) if (only === undefined || only.includes(id)) c.tick(this.now);
      this.stabilize(allow);
    }
  }

  /** Ticks only `id` until it times out and campaigns, then stabilizes. */
  elect(id: string, allow: (m: InFlight) => boolean = () => true): void {
    const c = this.core(id);
    for (let i = 0; i < 1000 && c.state !== "leader"; i++) {
      this.now += 10;
      c.tick(this.now);
      this.stabilize(allow);
    }
    if (c.state !== "leader") throw new Error(`${id} did not become leader`);
  }

  propose(id: string, command: Uint8Array, key: { client: string; seq: number } | null = null): number {
    const rid = this.nextId++;
    this.core(id).propose(rid, command, key);
    return rid;
  }

  leader(): RaftCore | undefined {
    return [...this.cores.values()].find((c) => c.state === "leader");
  }
}

/** A cut between two groups: messages between them are dropped. */
export function isolate(group: readonly string[]): (m: InFlight) => boolean {
  return (m) => group.includes(m.from) === group.includes(m.to);
}

/**
 * A Script of a, b, c in which a leads and has started a leadership transfer to b (request id 1); its
 * TimeoutNow was flushed and then dropped, so nothing was delivered since.
 */
export function transferringToB(): { s: Script; a: RaftCore; term: number } {
  const s = new Script(["a", "b", "c"]);
  s.elect("a");
  const a = s.core("a");
  const term = a.term;
  a.transferLeadership(1, "b");
  s.flush("a");
  s.inflight = [];
  return { s, a, term };
}
