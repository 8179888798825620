/**
 * A seeded simulation of the replicated claims table (claims.md §2 "Where the table runs", §5): N unmodified
 * `RaftCore`s, each folding its committed log into a `ClaimsReplica`, driven the way R's harness
 * (`simulation.ts`) drives them — persist, then send, then apply, then advance — over a network that drops,
 * duplicates, delays and reorders, with partitions (one of them strands the leader in a minority), one-way cuts,
 * crashes that keep only a prefix of the in-flight write, and restarts from the persisted state. Clients on
 * different peers propose takes of overlapping keys (exclusive and shared, capacities 1, 2, 3 and unlimited) with
 * leases, plus releases, renewals and scope releases. A fence client runs the stale-token scenario over and over.
 *
 * Checked while running: Election Safety, one committed entry per index, a replica applies only committed
 * entries, every replica decides the same outcome and reaches the same encoded state at each index, and no
 * replica's table ever has an exclusive holder beside another or more holders than capacity. Checked at the
 * end: every replica converged, and the committed log replayed from scratch into a fresh table agrees with an
 * independent reference of who holds what (no overlap, every refusal justified, every stale token rejected),
 * and every take acknowledged to a client is in that log with the outcome the client was told.
 */
import { seededRandom } from "@heddle/seam";
import type { ClaimMode, ClaimsOptions, TakeRequest } from "@heddle/claims";
import { raftConfig, RaftCore, sameEntry } from "../../src/index.ts";
import type { ClusterConfig, LogEntry, RaftConfig, RaftTraceEvent, Ready } from "../../src/index.ts";
import { ClaimsReplica, encodeClaimsEntry } from "./claims-replica.ts";
import type { AppliedClaims, ClaimsCommand } from "./claims-replica.ts";
import { emptyDisk, SimCluster } from "./sim-cluster.ts";
import type { SimPeer } from "./sim-cluster.ts";
import { SimNetwork } from "./sim-network.ts";

/** Deliberate faults, to show the checks catch what they break. */
export type ClaimsSabotage =
  /** Followers fold entries as soon as they are appended, before they commit. */
  | "apply-uncommitted"
  /** Replicas stamp commands with their own clock instead of the leader's `stampedAt`. */
  | "local-clock";

/** Thrown when a run breaks an invariant; the message names the seed that reproduces it. */
export class ClaimsSimulationFailure extends Error {
  override readonly name = "ClaimsSimulationFailure";
}

/** Summary of one run. */
export interface ClaimsSimResult {
  readonly seed: number;
  readonly voters: number;
  readonly committed: number;
  readonly ackedTakes: number;
  readonly grantedTakes: number;
  readonly refusedTakes: number;
  readonly fencePairs: number;
  readonly restarts: number;
  readonly minorityLeaders: number;
  readonly elections: number;
}

/** The claims options every replica is built with (identical on every peer). */
export const SIM_CLAIMS_OPTIONS: ClaimsOptions = { capacity: { "pool/x": 2, "pool/y": 3, rw: null } };
const CAPACITY = (key: string): number | null => {
  const cap = SIM_CLAIMS_OPTIONS.capacity?.[key];
  return cap === undefined ? 1 : cap;
};
const KEYS = ["mutex/a", "mutex/b", "pool/x", "pool/y", "rw"];

const TICK_MS = 10;
const DURATION_MS = 7_000;
/** A fault is injected every FAULT_MIN_GAP_MS plus a random part of FAULT_GAP_SPREAD_MS. */
const FAULT_MIN_GAP_MS = 200;
const FAULT_GAP_SPREAD_MS = 900;
const SETTLE_MS = 4_000;
const OP_TIMEOUT_MS = 2_000;
const THINK_MS = 100;
const FENCE_TTL_MS = 150;

interface SimNode extends SimPeer {
  machine: ClaimsReplica;
}

interface Ack {
  readonly client: string;
  readonly seq: number;
  readonly index: number;
  readonly text: string;
  readonly node: string;
  readonly op: ClaimsCommand["op"];
}

interface FencePair {
  readonly key: string;
  readonly t1: number;
  readonly t2: number;
}

/** Runs one seeded simulation; throws `ClaimsSimulationFailure` (naming the seed) on any violation. */
export function runClaimsSimulation(seed: number, sabotage?: ClaimsSabotage): ClaimsSimResult {
  return new ClaimsSimulation(seed, sabotage).run();
}

class ClaimsSimulation extends SimCluster<SimNode> {
  readonly seed: number;
  readonly sabotage: ClaimsSabotage | undefined;
  readonly voters: number;
  readonly cfg: RaftConfig;
  readonly clientRandom: () => number;
  readonly bootstrap: ClusterConfig;
  stopClients = false;
  readonly traceRing: string[] = [];
  // global records
  readonly leaders = new Map<number, string>();
  readonly committed = new Map<number, LogEntry>();
  maxCommitted = 0;
  readonly outcomeAt = new Map<number, string>();
  readonly stateAt = new Map<number, string>();
  readonly acks: Ack[] = [];
  readonly fencePairs: FencePair[] = [];
  readonly fenceAt = new Map<number, FencePair>();
  restarts = 0;
  minorityLeaders = 0;
  elections = 0;

  constructor(seed: number, sabotage?: ClaimsSabotage) {
    const pr = seededRandom(seed * 7919 + 1);
    const dropRate = pr() * 0.15;
    const dupRate = pr() * 0.15;
    const net = new SimNetwork({ dropRate, dupRate, delayMs: [0, 2 + Math.floor(pr() * 25)] }, seededRandom(seed * 7919 + 2));
    // the claims table never compacts: a snapshot or prefix discard on its disks is a failure
    super(net, seededRandom(seed * 7919 + 3), { compacts: false, tickMs: TICK_MS });
    this.seed = seed;
    this.sabotage = sabotage;
    this.voters = seed % 2 === 0 ? 3 : 5;
    this.clientRandom = seededRandom(seed * 7919 + 4);
    this.cfg = raftConfig({ maxEntriesPerMessage: 32, maxInflightMessages: 8 });
    const ids: string[] = [];
    for (let i = 1; i <= this.voters; i++) ids.push(`n${i}`);
    this.bootstrap = { voters: ids, learners: [] };
    ids.forEach((id, k) => {
      this.addNode({
        id,
        alive: true,
        incarnation: 0,
        core: undefined as unknown as RaftCore,
        machine: new ClaimsReplica(SIM_CLAIMS_OPTIONS),
        disk: emptyDisk(),
        // near-true rates, far-apart offsets: a new leader's clock is often behind the last one's stamps
        rate: 0.9 + pr() * 0.2,
        offset: Math.floor(pr() * 5_000),
        writing: null,
        processScheduled: false,
        lastCommit: 0,
        waiters: [],
        attempts: new Set(),
        random: seededRandom(seed * 7919 + 10 + k),
      });
    });
  }

  override fail(why: string): never {
    const dump = this.traceRing.slice(-60).join("\n");
    throw new ClaimsSimulationFailure(
      `claims-on-raft simulation seed=${this.seed} voters=${this.voters}${this.sabotage === undefined ? "" : ` sabotage=${this.sabotage}`} t=${this.now}: ${why}\n--- last trace ---\n${dump}\nreplay: runClaimsSimulation(${this.seed}${this.sabotage === undefined ? "" : `, "${this.sabotage}"`})`,
    );
  }

  override trace(line: string): void {
    this.traceRing.push(`${this.now} ${line}`);
    if (this.traceRing.length > 300) this.traceRing.splice(0, 150);
  }

  override buildCore(n: SimNode): RaftCore {
    return new RaftCore({
      id: n.id,
      bootstrap: this.bootstrap,
      persisted: { term: n.disk.term, votedFor: n.disk.votedFor, snapshot: null, entries: n.disk.entries.slice() },
      config: this.cfg,
      random: n.random,
      now: this.localNow(n),
    });
  }

  // ------------------------------------------------------------------ node driver

  override onTrace(n: SimNode, ev: RaftTraceEvent): void {
    if (ev.type === "electionWon") this.elections++;
    if (ev.type === "electionWon" || ev.type === "stepDown") this.trace(`${n.id} ${JSON.stringify(ev)}`);
  }

  override finishReady(n: SimNode, rd: Ready): void {
    for (const env of rd.messages) this.send(n, env.to, env.message);
    for (const c of rd.committed) {
      const index = c.kind === "entry" ? c.entry.index : c.kind === "internal" ? c.index : -1;
      if (this.sabotage === "apply-uncommitted" && index <= n.machine.applied) continue;
      const ref = this.committed.get(index);
      if (ref === undefined) this.fail(`${n.id}: applied ${index}, which no node has observed committed`);
      if (c.kind === "entry" && !sameEntry(ref, c.entry)) this.fail(`${n.id}: applied a different entry at ${index} (State Machine Safety)`);
      this.applyOn(n, c.kind === "entry" ? { kind: "entry", entry: c.entry } : { kind: "internal", index });
    }
    this.answer(rd);
    n.core.advance(rd);
    this.checkNode(n);
    if (this.sabotage === "apply-uncommitted" && n.core.state !== "leader") {
      // the fault under test: fold whatever the log holds, committed or not
      for (let i = n.machine.applied + 1; i <= n.core.lastIndex; i++) {
        const e = n.core.entryAt(i)!;
        this.applyOn(n, e.kind === "app" ? { kind: "entry", entry: e } : { kind: "internal", index: i });
      }
    }
    this.runWaiters(n);
    if (n.core.hasReady()) this.poke(n);
  }

  /** Folds one item into `n`'s machine and checks what it did against every other replica. */
  applyOn(n: SimNode, c: { kind: "entry"; entry: LogEntry } | { kind: "internal"; index: number }): void {
    let applied: AppliedClaims | null;
    try {
      if (this.sabotage === "local-clock" && c.kind === "entry") {
        applied = n.machine.apply({ kind: "entry", entry: { ...c.entry, stampedAt: this.localNow(n) } });
      } else applied = n.machine.apply(c);
    } catch (e) {
      this.fail(`${n.id}: ${(e as Error).message}`);
    }
    const index = n.machine.applied;
    if (applied !== null) {
      const known = this.outcomeAt.get(index);
      if (known === undefined) this.outcomeAt.set(index, applied.text);
      else if (known !== applied.text) this.fail(`${n.id}: decided ${applied.text} at ${index}, another replica decided ${known}`);
      const pair = this.fenceAt.get(index);
      if (pair !== undefined) this.checkFencePair(n.id, n.machine, pair);
    }
    const text = n.machine.stateText();
    const known = this.stateAt.get(index);
    if (known === undefined) this.stateAt.set(index, text);
    else if (known !== text) this.fail(`${n.id}: state after applying ${index} encodes differently from another replica's`);
    this.checkTable(n.id, n.machine);
  }

  /** No exclusive holder beside another, never more holders than capacity — on this replica, now. */
  checkTable(who: string, m: ClaimsReplica): void {
    const byKey = new Map<string, { exclusive: number; all: number }>();
    for (const h of m.table.open()) {
      const k = byKey.get(h.key) ?? { exclusive: 0, all: 0 };
      k.all++;
      if (h.mode === "exclusive") k.exclusive++;
      byKey.set(h.key, k);
    }
    for (const [key, k] of byKey) {
      const cap = CAPACITY(key);
      if (k.exclusive > 0 && k.all > 1) this.fail(`${who}: ${key} has an exclusive holder beside ${k.all - 1} other(s) at ${m.table.now}`);
      if (cap !== null && k.all > cap) this.fail(`${who}: ${key} has ${k.all} holders, capacity ${cap}, at ${m.table.now}`);
    }
  }

  checkFencePair(who: string, m: ClaimsReplica, p: FencePair): void {
    if (!(p.t2 > p.t1)) this.fail(`${who}: re-grant of ${p.key} carries token ${p.t2}, not above the stale ${p.t1}`);
    if (m.table.checkFence(p.key, p.t1)) this.fail(`${who}: stale token ${p.t1} on ${p.key} accepted after it lapsed and was re-granted as ${p.t2}`);
    if (!m.table.checkFence(p.key, p.t2)) this.fail(`${who}: current token ${p.t2} on ${p.key} rejected`);
  }

  override applied(n: SimNode): number {
    return n.machine.applied;
  }

  // ------------------------------------------------------------------ invariants on every step

  override checkNode(n: SimNode): void {
    const c = n.core;
    if (c.state === "leader") {
      const prior = this.leaders.get(c.term);
      if (prior !== undefined && prior !== n.id) this.fail(`two leaders in term ${c.term}: ${prior} and ${n.id}`);
      this.leaders.set(c.term, n.id);
    }
    if (c.commitIndex < n.lastCommit) this.fail(`${n.id}: commitIndex went back from ${n.lastCommit} to ${c.commitIndex}`);
    for (let i = n.lastCommit + 1; i <= c.commitIndex; i++) {
      const e = c.entryAt(i)!;
      const ref = this.committed.get(i);
      if (ref === undefined) this.committed.set(i, e);
      else if (!sameEntry(ref, e)) this.fail(`${n.id}: committed a different entry at ${i} (a committed entry was lost)`);
    }
    if (c.commitIndex > this.maxCommitted) this.maxCommitted = c.commitIndex;
    n.lastCommit = c.commitIndex;
  }

  // ------------------------------------------------------------------ clients

  pickNode(): SimNode | undefined {
    return this.pickLive(this.clientRandom);
  }

  randomCommand(client: number): ClaimsCommand {
    const r = this.clientRandom;
    const holder = `m${client}`;
    const x = r();
    if (x < 0.7) {
      const first = Math.floor(r() * KEYS.length);
      const count = r() < 0.3 ? 2 : 1;
      const resources: { key: string; mode: ClaimMode }[] = [];
      for (let i = 0; i < count; i++) resources.push({ key: KEYS[(first + i) % KEYS.length]!, mode: r() < 0.4 ? "exclusive" : "shared" });
      const request: { -readonly [K in keyof TakeRequest]: TakeRequest[K] } = { holder, resources };
      if (r() < 0.9) request.ttlMs = 50 + Math.floor(r() * 1_500);
      if (r() < 0.3) request.scope = `s${client}`;
      return { op: "take", request };
    }
    const key = KEYS[Math.floor(r() * KEYS.length)]!;
    if (x < 0.8) return { op: "release", holder, key };
    if (x < 0.9) return { op: "renew", holder, key };
    if (x < 0.95) return { op: "releaseAll", holder };
    return { op: "releaseScope", scope: `s${client}` };
  }

  clientLoop(client: number, seq: number): void {
    if (this.stopClients) return;
    this.at(Math.floor(this.clientRandom() * THINK_MS), () => {
      if (this.stopClients) return null;
      const cmd = this.randomCommand(client);
      this.submit(`c${client}`, seq, cmd, () => this.clientLoop(client, seq + 1));
      return null;
    });
  }

  /**
   * Proposes `cmd` under `(client, seq)` through a random live peer, retrying on other peers (same key) after a
   * lost leadership or a crash, until acknowledged or the deadline passes. `done` gets the acknowledged outcome
   * text, or `undefined` when the outcome stayed unknown.
   */
  submit(client: string, seq: number, cmd: ClaimsCommand, done: (text: string | undefined) => void): void {
    const deadline = this.now + OP_TIMEOUT_MS;
    const bytes = encodeClaimsEntry(cmd, { client, seq });
    const attempt = (tries: number): void => {
      const n = this.pickNode();
      if (n === undefined || tries >= 8 || this.now >= deadline) return done(undefined);
      const id = this.nextRequestId++;
      const inc = n.incarnation;
      let settled = false;
      const retry = (): void => {
        if (settled) return;
        settled = true;
        this.at(5 + Math.floor(this.clientRandom() * 20), () => {
          attempt(tries + 1);
          return null;
        });
      };
      n.attempts.add(retry);
      this.requestHandlers.set(id, (o) => {
        if (!n.alive || n.incarnation !== inc || settled) return;
        if (!o.ok) {
          if (o.refusal === "leadership-lost" || o.refusal === "not-leader") return retry();
          settled = true;
          n.attempts.delete(retry);
          return done(undefined);
        }
        n.waiters.push({
          index: o.index,
          fn: () => {
            if (!n.alive || n.incarnation !== inc || settled) return;
            settled = true;
            n.attempts.delete(retry);
            const text = n.machine.outcome(client, seq);
            if (text === undefined) this.fail(`${client} seq ${seq}: committed at ${o.index} but no outcome recorded on ${n.id}`);
            this.acks.push({ client, seq, index: o.index, text, node: n.id, op: cmd.op });
            done(text);
          },
        });
        this.runWaiters(n);
      });
      n.core.propose(id, bytes, { client, seq });
      this.poke(n);
      this.at(deadline - this.now, () => {
        if (settled) return null;
        settled = true;
        n.attempts.delete(retry);
        this.requestHandlers.delete(id);
        if (n.alive && n.incarnation === inc) n.core.abort(id);
        done(undefined);
        return null;
      });
    };
    attempt(0);
  }

  /**
   * The stale-token scenario, over and over: member A takes `fence/i` with a short lease (token t1); once A's
   * lease has lapsed in stamped time, member B takes it (token t2). Every replica, on applying B's grant, must
   * reject t1 and accept t2.
   */
  fenceLoop(round: number, seq: number): void {
    if (this.stopClients) return;
    const key = `fence/${round}`;
    const take = (holder: string, ttlMs: number): ClaimsCommand => ({ op: "take", request: { holder, resources: [{ key, mode: "exclusive" }], ttlMs } });
    this.submit("fence", seq, take(`a${round}`, FENCE_TTL_MS), (text) => {
      const t1 = grantedToken(text, key);
      if (t1 === undefined) return this.at(50, () => (this.fenceLoop(round + 1, seq + 1), null));
      let s = seq + 1;
      const tryB = (): void => {
        if (this.stopClients) return;
        this.submit("fence", s, take(`b${round}`, 10_000_000), (textB) => {
          s++;
          const t2 = grantedToken(textB, key);
          if (t2 === undefined) {
            this.at(FENCE_TTL_MS, () => (tryB(), null)); // A's lease may not have lapsed yet in stamped time
            return;
          }
          // tokens are log indexes: B's grant is entry t2 (even when a retry found it already granted)
          const pair: FencePair = { key, t1, t2 };
          this.fencePairs.push(pair);
          this.fenceAt.set(t2, pair);
          for (const n of this.nodes) if (n.alive && n.machine.applied >= t2) this.checkFencePair(n.id, n.machine, pair);
          this.at(50, () => (this.fenceLoop(round + 1, s), null));
        });
      };
      this.at(FENCE_TTL_MS, () => (tryB(), null));
    });
  }

  // ------------------------------------------------------------------ faults

  override onRestart(n: SimNode): void {
    this.restarts++;
    n.machine = new ClaimsReplica(SIM_CLAIMS_OPTIONS);
  }

  override injectFault(): void {
    const r = this.faultRandom;
    const ids = this.nodes.map((n) => n.id);
    const choice = r();
    const leader = this.nodes.find((n) => n.alive && n.core.state === "leader");
    if (choice < 0.15 && leader !== undefined) {
      // strand the leader in a minority: it keeps believing it leads until check-quorum, and may not grant
      const minority = new Set([leader.id]);
      const others = ids.filter((id) => id !== leader.id);
      while (minority.size < Math.floor(this.voters / 2)) minority.add(others[Math.floor(r() * others.length)]!);
      this.net.group = new Map(ids.map((id) => [id, minority.has(id) ? 1 : 0]));
      this.minorityLeaders++;
      this.trace(`MINORITY LEADER ${leader.id} with ${[...minority].join(",")}`);
      return;
    }
    if (choice < 0.35) {
      this.trace(this.net.splitOrCut(r, ids, 0.3));
      return;
    }
    if (choice < 0.55) {
      this.net.heal();
      this.trace("HEAL");
      return;
    }
    const live = this.nodes.filter((n) => n.alive);
    const dead = this.nodes.filter((n) => !n.alive);
    if (r() < 0.04) return this.powerLoss(400);
    if (dead.length > 0 && (r() < 0.5 || live.length <= 1)) return this.restart(dead[Math.floor(r() * dead.length)]!);
    const victim = leader !== undefined && r() < 0.5 ? leader : live[Math.floor(r() * live.length)];
    if (victim === undefined) return;
    this.crash(victim);
    if (r() < 0.6) this.at(50 + Math.floor(r() * 700), () => (this.restart(victim), victim.id));
  }

  // ------------------------------------------------------------------ run

  run(): ClaimsSimResult {
    this.start();
    for (let c = 0; c < 4; c++) this.clientLoop(c, 1);
    this.fenceLoop(0, 1);
    this.faultLoop(FAULT_MIN_GAP_MS, FAULT_GAP_SPREAD_MS, DURATION_MS);
    this.loopUntil(DURATION_MS);
    this.stopClients = true;
    this.settle();
    this.loopUntil(DURATION_MS + SETTLE_MS);
    this.checkConverged();
    const replay = this.replay();
    for (const n of this.nodes) if (n.machine.stateText() !== replay.stateText()) this.fail(`${n.id}: state differs from the replay of the committed log`);
    const takes = replay.takes;
    return {
      seed: this.seed,
      voters: this.voters,
      committed: this.maxCommitted,
      ackedTakes: this.acks.filter((a) => a.op === "take").length,
      grantedTakes: takes.granted,
      refusedTakes: takes.refused,
      fencePairs: this.fencePairs.length,
      restarts: this.restarts,
      minorityLeaders: this.minorityLeaders,
      elections: this.elections,
    };
  }

  checkConverged(): void {
    this.settledLeader("no leader after the settle period (liveness)");
    for (const n of this.nodes) {
      if (n.machine.applied !== this.maxCommitted) this.fail(`${n.id} applied ${n.machine.applied} of ${this.maxCommitted} committed after settling`);
    }
  }

  /** Replays the committed log from index 1 into a fresh table, checked against an independent reference. */
  replay(): ClaimsReplica & { takes: { granted: number; refused: number } } {
    const m = new ClaimsReplica(SIM_CLAIMS_OPTIONS);
    const ref = new ReferenceHolders((why) => this.fail(`replay: ${why}`));
    const takes = { granted: 0, refused: 0 };
    for (let i = 1; i <= this.maxCommitted; i++) {
      const e = this.committed.get(i);
      if (e === undefined) this.fail(`replay: committed log has a hole at ${i}`);
      const a = m.apply(e.kind === "app" ? { kind: "entry", entry: e } : { kind: "internal", index: i });
      if (a === null) continue;
      if (this.outcomeAt.get(i) !== a.text) this.fail(`replay: decided ${a.text} at ${i}, replicas decided ${String(this.outcomeAt.get(i))}`);
      if (!a.duplicate) {
        ref.step(m, a);
        if (a.result.op === "take") a.result.outcome.ok ? takes.granted++ : takes.refused++;
      }
      const pair = this.fenceAt.get(i);
      if (pair !== undefined) this.checkFencePair("replay", m, pair);
    }
    for (const ack of this.acks) {
      const e = this.committed.get(ack.index);
      if (e === undefined || e.key === null || e.key.client !== ack.client || e.key.seq !== ack.seq) {
        this.fail(`acknowledged ${ack.client}/${ack.seq} at ${ack.index} (via ${ack.node}) is not that entry of the committed log`);
      }
      if (m.outcome(ack.client, ack.seq) !== ack.text) this.fail(`acknowledged ${ack.client}/${ack.seq} as ${ack.text}; the log decided ${String(m.outcome(ack.client, ack.seq))}`);
    }
    return Object.assign(m, { takes });
  }
}

function grantedToken(text: string | undefined, key: string): number | undefined {
  if (text === undefined) return undefined;
  const r = JSON.parse(text) as { kind: string; claims?: { ok?: boolean; grants?: { key: string; token: number }[] } };
  if (r.kind !== "applied" || r.claims?.ok !== true) return undefined;
  const g = r.claims.grants?.find((x) => x.key === key);
  return g?.token;
}

interface RefClaim {
  readonly holder: string;
  readonly mode: ClaimMode;
  readonly token: number;
  readonly ttlMs: number | undefined;
  expiresAt: number | undefined;
  readonly scope: string | undefined;
}

/**
 * An independent account of who holds what, kept from the commands of the log and the time each was applied at:
 * written without the table's code, it says when a grant would overlap another, when a refusal was unjustified,
 * and which tokens are stale.
 */
class ReferenceHolders {
  readonly byKey = new Map<string, RefClaim[]>();
  readonly tokens = new Map<string, Set<number>>();
  readonly fail: (why: string) => never;

  constructor(fail: (why: string) => never) {
    this.fail = fail;
  }

  live(key: string, now: number): RefClaim[] {
    return (this.byKey.get(key) ?? []).filter((c) => c.expiresAt === undefined || now < c.expiresAt);
  }

  drop(pred: (key: string, c: RefClaim) => boolean, now: number): string[] {
    const gone: string[] = [];
    for (const [key, list] of this.byKey) {
      const keep = list.filter((c) => {
        if (!pred(key, c)) return true;
        if (c.expiresAt === undefined || now < c.expiresAt) gone.push(key);
        return false;
      });
      this.byKey.set(key, keep);
    }
    return gone.sort();
  }

  step(m: ClaimsReplica, a: AppliedClaims): void {
    const now = a.now;
    const c = a.command;
    const at = `entry ${a.entry.index} (now ${now})`;
    const touched = new Set<string>();
    if (c.op === "take" && a.result.op === "take") {
      const o = a.result.outcome;
      if (o.ok) {
        for (const g of o.grants) {
          touched.add(g.key);
          const others = this.live(g.key, now).filter((x) => x.holder !== c.request.holder);
          if (g.existing) {
            const own = this.live(g.key, now).find((x) => x.holder === c.request.holder);
            if (own === undefined || own.token !== g.token) this.fail(`${at}: ${g.key} re-taken as existing with token ${g.token}, reference holds ${JSON.stringify(own)}`);
            continue;
          }
          if (g.token !== a.entry.index) this.fail(`${at}: ${g.key} granted with token ${g.token}, not the entry's index`);
          const cap = CAPACITY(g.key);
          if (g.mode === "exclusive" && others.length > 0) this.fail(`${at}: ${c.request.holder} granted ${g.key} exclusively beside ${others.map((x) => x.holder).join(",")}`);
          if (others.some((x) => x.mode === "exclusive")) this.fail(`${at}: ${c.request.holder} granted ${g.key} beside exclusive holder`);
          if (cap !== null && others.length + 1 > cap) this.fail(`${at}: ${g.key} granted to ${others.length + 1} holders, capacity ${cap}`);
          const mode = c.request.resources.find((r) => r.key === g.key)!.mode;
          const list = (this.byKey.get(g.key) ?? []).filter((x) => x.holder !== c.request.holder);
          list.push({ holder: c.request.holder, mode, token: g.token, ttlMs: c.request.ttlMs, expiresAt: c.request.ttlMs === undefined ? undefined : now + c.request.ttlMs, scope: c.request.scope });
          this.byKey.set(g.key, list);
          const ts = this.tokens.get(g.key) ?? new Set();
          ts.add(g.token);
          this.tokens.set(g.key, ts);
        }
      } else {
        if (o.invalid !== undefined) this.fail(`${at}: a well-formed take was refused as invalid (${o.invalid})`);
        for (const b of o.blocked) {
          const mode = c.request.resources.find((r) => r.key === b.key)?.mode;
          const others = this.live(b.key, now).filter((x) => x.holder !== c.request.holder);
          const cap = CAPACITY(b.key);
          const justified = mode === "exclusive" ? others.length > 0 : others.some((x) => x.mode === "exclusive") || (cap !== null && others.length + 1 > cap);
          if (!justified) this.fail(`${at}: take of ${b.key} refused (${b.reason}) though the reference has room: ${JSON.stringify(others)}`);
        }
        if (o.blocked.length === 0) this.fail(`${at}: take refused without naming a blocked resource`);
      }
    } else if ((c.op === "release" || c.op === "renew") && (a.result.op === "release" || a.result.op === "renew")) {
      touched.add(c.key);
      const own = this.live(c.key, now).find((x) => x.holder === c.holder);
      if (a.result.held !== (own !== undefined)) this.fail(`${at}: ${c.op} of ${c.key} by ${c.holder} answered ${a.result.held}, reference says ${own !== undefined}`);
      if (c.op === "release") this.drop((key, x) => key === c.key && x.holder === c.holder, now);
      else if (own !== undefined && own.ttlMs !== undefined) own.expiresAt = now + own.ttlMs;
    } else if ((c.op === "releaseAll" || c.op === "releaseScope") && (a.result.op === "releaseAll" || a.result.op === "releaseScope")) {
      const gone = this.drop((_, x) => (c.op === "releaseAll" ? x.holder === c.holder : x.scope === c.scope), now);
      for (const k of gone) touched.add(k);
      const said = [...a.result.released].sort();
      if (JSON.stringify(said) !== JSON.stringify(gone)) this.fail(`${at}: ${c.op} released ${JSON.stringify(said)}, reference says ${JSON.stringify(gone)}`);
    } else this.fail(`${at}: result ${a.result.op} does not answer command ${c.op}`);
    // the whole table agrees with the reference on who holds what, and every token but the live ones is stale
    const open = m.table.open().map((h) => `${h.key}|${h.holder}|${h.mode}|${h.token}`).sort();
    const mine: string[] = [];
    for (const key of this.byKey.keys()) for (const x of this.live(key, now)) mine.push(`${key}|${x.holder}|${x.mode}|${x.token}`);
    mine.sort();
    if (JSON.stringify(open) !== JSON.stringify(mine)) this.fail(`${at}: table holds ${JSON.stringify(open)}, reference ${JSON.stringify(mine)}`);
    for (const key of touched) {
      const live = new Set(this.live(key, now).map((x) => x.token));
      for (const t of this.tokens.get(key) ?? []) {
        if (m.table.checkFence(key, t) !== live.has(t)) this.fail(`${at}: checkFence(${key}, ${t}) is ${!live.has(t)} but the token is ${live.has(t) ? "live" : "stale"}`);
      }
    }
  }
}
