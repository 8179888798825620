/**
 * The control plane's seeded simulation (governed.md §5.1–5.2, §5.4 C14; issue 11 acceptance): 3 voters and 2
 * learners, each a production `GovernedHeddleNode` over `MemoryNetwork` with drops, duplicates and delays,
 * partitions (a learner cut off among them), crashes that lose in-flight Raft writes, and restarts from the stores
 * (each restart a new incarnation that enrolls itself again). Operators issue mints, reshapes — overlapping
 * generations of one child included, conflicting on purpose — enrolls, departs, claims and `sync()`s, through random
 * peers, retrying on `OutcomeUnknownError` with the same key. The data plane runs alongside (advertise, schedule,
 * reserve, complete). `ControlState` snapshots are published every few entries, so restarts and lagging learners
 * catch up by InstallSnapshot. One operator keys every act the way the daemon maps an `Idempotency-Key` (its own
 * `idem:` client, seq 1, ackFloor 0), and the `idem:` retention window is a few dozen entries, so sessions are
 * forgotten while snapshots are taken and installed, and a retry can outlive its key's window.
 *
 * Checked on every apply of every peer: a peer that applied index `i` holds a `ControlState` equal to every other
 * peer's at `i`, and every index carries the same entry everywhere. Checked at the end: every peer applied the same
 * prefix and holds byte-identical ledgers; `mintedTotal()` equals the sum of the acknowledged mints exactly (every
 * unknown outcome is resolved by a keyed retry or a read first); the committed log replayed into the independent
 * reference model decides every entry as the peers did (C14); the history is linearizable (§5.2: outcomes equal the
 * model's, real-time order respected by index order, one decision per key — a second only for an `idem:` key whose
 * first was forgotten before it —, sync views include every act resolved
 * before them; and the Porcupine-style checker over mints and `sync` reads of the total); no two granted claims
 * overlap at any index.
 */
import { createHash } from "node:crypto";
import { seededRandom } from "@heddle/node";
import { checkLinearizable, OutcomeUnknownError } from "../../src/index.ts";
import type { CallOptions, Committed, ControlOutcome, ControlState, LogEntry, Model, Operation, ProposalKey, RaftNode } from "../../src/index.ts";
import { canonicalJson } from "../../src/control/canonical-json.ts";
import { outcomeJson } from "../../src/index.ts";
import { ControlModel } from "./control-model.ts";
import { e, g, GovernedCluster, r, rec } from "./governed-cluster.ts";
import type { GovPeer } from "./governed-cluster.ts";

/** Thrown on a violated check; the message names the seed (`HEDDLE_SEED` replays it). */
export class ControlSimulationFailure extends Error {
  override readonly name = "ControlSimulationFailure";
}

/** Summary of one run (equal for equal seeds: the run is deterministic). */
export interface ControlSimResult {
  readonly seed: number;
  readonly applied: number;
  readonly commands: number;
  readonly acked: number;
  readonly conflicts: number;
  readonly unknownRetried: number;
  readonly mintedTotal: string;
  readonly crashes: number;
  readonly installs: number;
  readonly syncs: number;
  readonly grants: number;
  readonly dataPlaneGrants: number;
  /** `idem:` keys the idempotency operator used, and how many sessions the leader still holds at the end. */
  readonly idemKeys: number;
  readonly idemHeld: number;
  /** `idem:` keys decided a second time because a retry came after their first outcome was forgotten. */
  readonly idemRedecided: number;
}

export interface ControlSimOptions {
  /** Virtual ms of operator traffic and faults (the settle phase follows). */
  readonly runMs?: number;
  /** Operators issuing commands concurrently. */
  readonly operators?: number;
}

const VOTERS = ["n1", "n2", "n3"];
const LEARNERS = ["l1", "l2"];
const ALL = [...VOTERS, ...LEARNERS];
const CHILDREN = ["c1", "c2", "c3", "m"];
const PARENTS = ["root", "c1", "c2", "m"];
const CLAIM_KEYS = ["mutex/a", "mutex/b", "pool"];
const CLAIMS = { capacity: { pool: 2 } };
const HUNGRY = { targetOutstanding: 200n, maximumUsefulGrant: 50n };

interface Op {
  readonly client: string;
  readonly what: string;
  readonly call: number;
  ret: number;
  key: ProposalKey | null;
  outcome: ControlOutcome | null;
  mint: bigint;
  retried: boolean;
}

interface SyncRead {
  readonly call: number;
  readonly ret: number;
  readonly appliedIndex: number;
  readonly minted: bigint;
}

type Cmd = { what: string; run: (p: GovPeer, o: CallOptions) => Promise<ControlOutcome>; mint: bigint };

const DEBUG = process.env.HEDDLE_SIM_DEBUG === "1";
const sha = (s: string): string => createHash("sha1").update(s).digest("hex");

class Sim {
  readonly seed: number;
  readonly c: GovernedCluster;
  readonly rnd: () => number;
  readonly faultRnd: () => number;
  readonly runMs: number;
  readonly operators: number;
  readonly stateAt = new Map<number, { hash: string; by: string }>();
  readonly entryAt = new Map<number, LogEntry | "internal">();
  readonly ops: Op[] = [];
  readonly syncs: SyncRead[] = [];
  readonly failures: string[] = [];
  stop = false;
  crashes = 0;
  installs = 0;
  dataPlaneGrants = 0;
  unknownRetried = 0;
  commands = 0;
  readonly idempotencyWindow: number;
  idemKeys = 0;
  idemRedecided = 0;

  constructor(seed: number, o: ControlSimOptions) {
    this.seed = seed;
    this.runMs = o.runMs ?? 3_000;
    this.operators = o.operators ?? 4;
    const pr = seededRandom(seed * 104_729 + 11);
    this.rnd = seededRandom(seed * 104_729 + 12);
    this.faultRnd = seededRandom(seed * 104_729 + 13);
    const faults = { dropRate: pr() * 0.06, duplicateRate: pr() * 0.06, delayMs: [1, 2 + Math.floor(pr() * 10)] as const };
    this.c = new GovernedCluster({
      seed,
      voters: VOTERS,
      learners: LEARNERS,
      faults,
      claims: CLAIMS,
      snapshotEvery: 8 + Math.floor(pr() * 24),
      // half the seeds a window of 1–4 entries, so a keyed retry can outlive it; the others 5–44
      idempotencyWindow: (this.idempotencyWindow = this.rnd() < 0.5 ? 1 + Math.floor(this.rnd() * 4) : 5 + Math.floor(this.rnd() * 40)),
      raft: { electionTimeoutMinMs: 100, electionTimeoutMaxMs: 200, heartbeatMs: 20, snapshotChunkBytes: 2_048 },
      wrapRaft: (id, raft) => this.observe(id, raft),
    });
  }

  fail(why: string): void {
    this.failures.push(`control simulation seed=${this.seed} t=${this.c.timers.now()}: ${why}`);
  }

  /** Wraps a peer's Raft node so every applied item is checked: equal entries, equal states at equal indexes. */
  observe(id: string, raft: RaftNode): RaftNode {
    const boot = this.c?.peers.get(id)?.boots ?? 1;
    const sim = this;
    const committedFrom = (from: number): AsyncIterable<Committed> => ({
      [Symbol.asyncIterator](): AsyncIterator<Committed> {
        const inner = raft.committedFrom(from)[Symbol.asyncIterator]();
        let last: Committed | null = null;
        return {
          async next(): Promise<IteratorResult<Committed>> {
            if (last !== null) sim.applied(id, boot, last);
            const r = await inner.next();
            last = r.done ? null : r.value;
            return r;
          },
          async return(): Promise<IteratorResult<Committed>> {
            last = null;
            return inner.return?.() ?? { done: true, value: undefined };
          },
        };
      },
    });
    return new Proxy(raft, {
      get: (t, k) => {
        if (k === "committedFrom") return committedFrom;
        const v: unknown = Reflect.get(t, k, t);
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  }

  /** The previous item `last` has been applied by peer `id` (the loop asks for the next one only after a step). */
  applied(id: string, boot: number, item: Committed): void {
    const p = this.c.peers.get(id);
    if (p === undefined || !p.alive || p.boots !== boot) return;
    const st = p.gov.controlView() as ControlState;
    if (st.halted !== null) return this.fail(`${id} halted: ${st.halted.message}`);
    const index = st.appliedIndex;
    if (item.kind === "install") this.installs++;
    else {
      const at = item.kind === "entry" ? item.entry.index : item.index;
      if (at !== index) return this.fail(`${id} applied ${at} but reports ${index}`);
      const seen = this.entryAt.get(at);
      const mine = item.kind === "entry" ? item.entry : "internal";
      if (seen === undefined) this.entryAt.set(at, mine);
      else if (seen === "internal" || mine === "internal" ? seen !== mine : !sameBytes(seen, mine)) this.fail(`${id} applied another entry at ${at} (State Machine Safety)`);
    }
    const hash = sha(st.stateText());
    const known = this.stateAt.get(index);
    if (known === undefined) this.stateAt.set(index, { hash, by: id });
    else if (known.hash !== hash) this.fail(`${id} holds a ControlState at ${index} unequal to ${known.by}'s (control determinism)`);
    // no two granted claims overlap, on this peer, now
    const holders = new Map<string, { exclusive: number; all: number }>();
    for (const h of st.claims.open()) {
      const k = holders.get(h.key) ?? { exclusive: 0, all: 0 };
      k.all++;
      if (h.mode === "exclusive") k.exclusive++;
      holders.set(h.key, k);
    }
    for (const [key, k] of holders) {
      const cap = key === "pool" ? 2 : 1;
      if ((k.exclusive > 0 && k.all > 1) || k.all > cap) this.fail(`${id} at ${index}: claims on ${key} overlap (${k.all} holders, ${k.exclusive} exclusive)`);
    }
  }

  sleep(ms: number): Promise<void> {
    return new Promise((res) => this.c.timers.set(res, Math.max(0, ms)));
  }

  livePeer(): GovPeer | undefined {
    const live = this.c.live();
    return live.length === 0 ? undefined : live[Math.floor(this.rnd() * live.length)];
  }

  // ------------------------------------------------------------------------------------------- operators

  randomCommand(): Cmd {
    const x = this.rnd();
    const pick = <T>(a: readonly T[]): T => a[Math.floor(this.rnd() * a.length)]!;
    const gen = (): string => `${pick(CHILDREN)}-g${Math.floor(this.rnd() * 4)}`;
    if (x < 0.18) {
      const amount = BigInt(1 + Math.floor(this.rnd() * 100));
      const holder = pick(ALL);
      return { what: `mint(${holder}, ${amount})`, mint: amount, run: (p, o) => p.gov.mint(r(holder), amount, o) };
    }
    if (x < 0.36) {
      // records of one id are derived from the id, so most re-prepares agree; a few differ on purpose
      const id = gen();
      const [child] = id.split("-g") as [string];
      const parent = this.rnd() < 0.85 ? PARENTS[(id.length + id.charCodeAt(id.length - 1)) % PARENTS.length]! : pick(PARENTS);
      const w = this.rnd() < 0.9 ? 1n : 2n;
      return { what: `prepare(${id}: ${parent}→${child})`, mint: 0n, run: (p, o) => p.gov.prepare(rec(id, parent, child, w), o) };
    }
    if (x < 0.48) {
      const id = gen();
      return { what: `activate(${id})`, mint: 0n, run: (p, o) => p.gov.activate(e(id), o) };
    }
    if (x < 0.56) {
      const id = gen();
      return { what: `close(${id})`, mint: 0n, run: (p, o) => p.gov.close(e(id), o) };
    }
    if (x < 0.64) {
      const id = gen();
      return { what: `retire(${id})`, mint: 0n, run: (p, o) => p.gov.retire(e(id), o) };
    }
    if (x < 0.70) {
      const who = pick(ALL);
      return { what: `enroll(${who})`, mint: 0n, run: (p, o) => p.gov.enroll(r(who), o) };
    }
    if (x < 0.73) return { what: "depart()", mint: 0n, run: (p, o) => p.gov.depart(o) };
    const holder = `h${Math.floor(this.rnd() * 3)}`;
    const key = pick(CLAIM_KEYS);
    if (x < 0.90) {
      const mode = key === "pool" && this.rnd() < 0.7 ? ("shared" as const) : ("exclusive" as const);
      const ttlMs = 50 + Math.floor(this.rnd() * 800);
      return { what: `take(${holder}, ${key})`, mint: 0n, run: (p, o) => p.gov.claims.take({ holder, resources: [{ key, mode }], ttlMs }, o) };
    }
    if (x < 0.96) return { what: `release(${holder}, ${key})`, mint: 0n, run: (p, o) => p.gov.claims.release(holder, key, o) };
    return { what: `renew(${holder}, ${key})`, mint: 0n, run: (p, o) => p.gov.claims.renew(holder, key, o) };
  }

  /**
   * A durable-key operator (client `op${n}`): each act under the next seq, retried with that key on any live peer
   * until its outcome is known; ackFloor = the lowest seq still unknown.
   */
  async durableOperator(n: number, idem = false): Promise<void> {
    const client = idem ? `op${n}-idem` : `op${n}`;
    for (let seq = 1; !this.stop; seq++) {
      await this.sleep(Math.floor(this.rnd() * 40));
      if (this.stop) return;
      if (this.rnd() < 0.08) {
        await this.syncRead();
        continue;
      }
      const cmd = this.randomCommand();
      this.commands++;
      const key = idem ? { client: `idem:seed${this.seed}-${++this.idemKeys}`, seq: 1 } : { client, seq };
      const op: Op = { client, what: cmd.what, call: this.c.timers.now(), ret: Infinity, key, outcome: null, mint: cmd.mint, retried: false };
      this.ops.push(op);
      this.commandsByOp.set(op, cmd);
      await this.untilKnown(op, cmd, seq);
    }
  }

  async untilKnown(op: Op, cmd: Cmd, seq: number, forever = false): Promise<void> {
    for (let attempt = 0; (forever || !this.stop) && op.outcome === null; attempt++) {
      const p = this.livePeer();
      if (p === undefined) {
        await this.sleep(20);
        continue;
      }
      try {
        const idemKey = op.key!.client.startsWith("idem:");
        const out = await cmd.run(p, { key: op.key!, ackFloor: idemKey ? 0 : seq, timeoutMs: 600 + Math.floor(this.rnd() * 900) });
        op.outcome = out;
        op.ret = this.c.timers.now();
      } catch (err) {
        if (attempt > 0) op.retried = true;
        if (err instanceof OutcomeUnknownError || (err as Error).name === "NodeShutdownError") {
          this.unknownRetried++;
          await this.sleep(10 + Math.floor(this.rnd() * 40));
          continue;
        }
        this.fail(`${op.client} ${op.what}: unexpected ${(err as Error).name}: ${(err as Error).message}`);
        return;
      }
    }
  }

  /** An auto-key operator on one peer at a time: an unknown outcome is retried with its key while that process lives. */
  async autoOperator(): Promise<void> {
    while (!this.stop) {
      await this.sleep(Math.floor(this.rnd() * 50));
      const p = this.livePeer();
      if (p === undefined || this.stop) continue;
      const cmd = this.randomCommand();
      this.commands++;
      const boot = p.boots;
      const op: Op = { client: `auto@${p.id}#${boot}`, what: cmd.what, call: this.c.timers.now(), ret: Infinity, key: null, outcome: null, mint: cmd.mint, retried: false };
      this.ops.push(op);
      let opts: CallOptions = { timeoutMs: 800 };
      for (let attempt = 0; attempt < 6 && op.outcome === null && p.alive && p.boots === boot; attempt++) {
        try {
          op.outcome = await cmd.run(p, opts);
          op.ret = this.c.timers.now();
          op.key = op.outcome.key;
        } catch (err) {
          if (err instanceof OutcomeUnknownError && err.key !== null) {
            op.key = err.key;
            op.retried = true;
            this.unknownRetried++;
            opts = { key: err.key, timeoutMs: 800 };
            continue;
          }
          if ((err as Error).name === "NodeShutdownError") {
            op.key = (err as { key?: ProposalKey | null }).key ?? op.key;
            break;
          }
          if ((err as Error).name === "IncarnationReusedError") this.fail(`incarnation tripwire fired on ${p.id}: ${(err as Error).message}`);
          else this.fail(`${op.what} on ${p.id}: unexpected ${(err as Error).name}: ${(err as Error).message}`);
          return;
        }
      }
    }
  }

  async syncRead(): Promise<void> {
    const p = this.livePeer();
    if (p === undefined) return;
    const call = this.c.timers.now();
    try {
      const v = await p.gov.sync({ timeoutMs: 1_500 });
      this.syncs.push({ call, ret: this.c.timers.now(), appliedIndex: v.appliedIndex, minted: v.mintedTotal() });
    } catch (err) {
      if (!(err instanceof OutcomeUnknownError) && (err as Error).name !== "NodeShutdownError") this.fail(`sync on ${p.id}: ${(err as Error).name}: ${(err as Error).message}`);
    }
  }

  /** Every (re)started peer enrolls itself (writer gate, §3.9), retrying while it lives. */
  async enrollSelf(p: GovPeer): Promise<void> {
    const boot = p.boots;
    let opts: CallOptions = { timeoutMs: 1_000 };
    while (p.alive && p.boots === boot) {
      try {
        await p.gov.enroll(r(p.id), opts);
        return;
      } catch (err) {
        if (err instanceof OutcomeUnknownError && err.key !== null) opts = { key: err.key, timeoutMs: 1_000 };
        else return;
        await this.sleep(20);
      }
    }
  }

  /** The data plane: advertise demand on live edges, schedule, reserve and complete at leaves. */
  dataPlaneTick(): void {
    for (const p of this.c.live()) {
      if (!p.gov.isWritable || this.rnd() < 0.5) continue;
      const l = p.gov.ledger.get();
      for (const child of ["c1", "c2"]) for (const edge of l.childrenOf(g("root"))) if (l.record(edge.attachment)?.child === child) p.gov.advertise(edge.attachment, HUNGRY);
      this.dataPlaneGrants += p.gov.schedule(g("root")).grants.length;
      for (const leaf of ["c1", "c2"]) {
        if (!l.isLeaf(g(leaf))) continue;
        const res = p.gov.reserve(g(leaf), 3n);
        if (res.ok) p.gov.complete(res.id, BigInt(Math.floor(this.rnd() * 4)));
      }
    }
  }

  // ------------------------------------------------------------------------------------------- faults

  fault(): void {
    const x = this.faultRnd();
    const live = this.c.live();
    const dead = [...this.c.peers.values()].filter((p) => !p.alive);
    if (x < 0.2) {
      const a = ALL.filter(() => this.faultRnd() < 0.4);
      this.c.net.partition([a], "silent");
    } else if (x < 0.32) {
      this.c.net.partition([[LEARNERS[Math.floor(this.faultRnd() * 2)]!]], "silent"); // a learner cut off
    } else if (x < 0.5) {
      this.c.net.heal();
    } else if (x < 0.75 && live.length >= 4) {
      const v = live[Math.floor(this.faultRnd() * live.length)]!;
      this.crashes++;
      this.c.crash(v.id);
    } else if (dead.length > 0) {
      const p = this.c.restart(dead[Math.floor(this.faultRnd() * dead.length)]!.id);
      void this.enrollSelf(p);
    }
  }

  // ------------------------------------------------------------------------------------------- run

  async run(): Promise<ControlSimResult> {
    const c = this.c;
    const wall = Date.now();
    if (DEBUG) console.log("electing");
    await c.elect();
    if (DEBUG) console.log("elected");
    for (const p of c.live()) void this.enrollSelf(p);
    const workers: Promise<void>[] = [];
    for (let n = 1; n < this.operators; n++) workers.push(this.durableOperator(n, n === 1));
    workers.push(this.autoOperator());
    let nextFault = 300;
    for (let t = 0; t < this.runMs; t++) {
      if (t === nextFault) {
        this.fault();
        nextFault += 150 + Math.floor(this.faultRnd() * 600);
      }
      if (t % 25 === 0) this.dataPlaneTick();
      if (DEBUG && t % 100 === 0) console.log(`t=${t} wall=${Date.now() - wall} ops=${this.ops.length} applied=${c.live().map((p) => `${p.id}:${p.gov.controlView().appliedIndex}`).join(",")} mem=${Math.round(process.memoryUsage().heapUsed / 1e6)}MB`);
      await c.run(1);
      if (this.failures.length > 0) break;
    }
    // settle: heal, stop faults and new work, restart the dead, let every call finish
    this.stop = true;
    c.net.heal();
    c.net.setFaults("*", "*", { dropRate: 0, duplicateRate: 0, delayMs: [1, 3] });
    for (const p of [...c.peers.values()]) if (!p.alive) void this.enrollSelf(c.restart(p.id));
    const done = Promise.all(workers);
    let finished = false;
    void done.then(() => (finished = true));
    for (let t = 0; t < 30_000 && !finished; t++) await c.run(1);
    if (!finished) this.fail("operators did not finish within 30 s of healing");
    if (DEBUG) console.log(`workers done t=${c.timers.now()} wall=${Date.now() - wall}`);
    // resolve every outcome still unknown: durable keys by a keyed retry, auto keys by reading the applied prefix
    for (const op of this.ops.filter((o) => o.outcome === null && o.client.startsWith("op"))) {
      const cmdAgain = this.replayCommand(op);
      if (cmdAgain !== null) {
        const p = this.untilKnown(op, cmdAgain, op.key!.seq, true);
        let ok = false;
        void p.then(() => (ok = true));
        for (let t = 0; t < 20_000 && !ok; t++) await c.run(1);
      }
    }
    if (DEBUG) console.log(`unknowns resolved t=${c.timers.now()} wall=${Date.now() - wall}`);
    const leader = await c.elect(10_000);
    const view = await c.settle(leader.gov.sync({ timeoutMs: 10_000 }), 15_000);
    const atLeast = view.appliedIndex;
    const level = (): number | null => {
      const xs = new Set(c.live().map((p) => p.gov.controlView().appliedIndex));
      return xs.size === 1 ? [...xs][0]! : null;
    };
    await c.until(() => c.allApplied(atLeast) && level() !== null, 20_000, "every peer applying one final prefix").catch((err: Error) => this.fail(err.message));
    const top = level() ?? atLeast;
    for (const op of this.ops.filter((o) => o.outcome === null && o.key !== null)) {
      const o = leader.gov.controlView().outcomeOf(op.key!);
      if (typeof o !== "string") op.outcome = o; // resolved by reading (ret stays ∞: never acknowledged in time)
    }
    // every peer's ledger converges: run anti-entropy rounds until byte-identical
    await c.until(() => c.ledgersConverged(), 30_000, "ledger convergence").catch((err: Error) => this.fail(err.message));
    if (DEBUG) console.log(`converged t=${c.timers.now()} wall=${Date.now() - wall}`);
    await c.until(() => level() !== null, 20_000, "one final prefix after convergence").catch((err: Error) => this.fail(err.message));
    this.finalChecks(level() ?? top);
    if (DEBUG) console.log(`checked wall=${Date.now() - wall}`);
    await c.shutdown();
    if (this.failures.length > 0) throw new ControlSimulationFailure(`${this.failures.slice(0, 5).join("\n")}\nreplay: HEDDLE_SEED=${this.seed} HEDDLE_CONTROL_SEEDS=1`);
    const st = leader.gov.controlView() as ControlState;
    return {
      seed: this.seed,
      applied: top,
      commands: this.commands,
      acked: this.ops.filter((o) => o.ret !== Infinity).length,
      conflicts: this.ops.filter((o) => o.outcome?.kind === "conflict").length,
      unknownRetried: this.unknownRetried,
      mintedTotal: st.mintedTotal().toString(),
      crashes: this.crashes,
      installs: this.installs,
      syncs: this.syncs.length,
      grants: this.ops.filter((o) => o.outcome?.kind === "applied" && typeof o.outcome.claims === "object" && (o.outcome.claims as { ok?: boolean }).ok === true).length,
      dataPlaneGrants: this.dataPlaneGrants,
      idemKeys: this.idemKeys,
      idemHeld: st.keyRetention().sessions,
      idemRedecided: this.idemRedecided,
    };
  }

  /** The command an op stands for, to retry it under its key (same command, same digest). */
  replayCommand(op: Op): Cmd | null {
    return this.commandsByOp.get(op) ?? null;
  }

  readonly commandsByOp = new Map<Op, Cmd>();

  finalChecks(top: number): void {
    const c = this.c;
    const live = c.live();
    // equal states at the final index
    const texts = new Set(live.map((p) => sha((p.gov.controlView() as ControlState).stateText())));
    if (texts.size !== 1) {
      this.fail(`peers at ${top} hold ${texts.size} different ControlStates`);
      if (DEBUG) for (const p of live) console.log(p.id, (p.gov.controlView() as ControlState).stateText());
    }
    // replay the committed log into the reference model (C14)
    const model = new ControlModel("root", CLAIMS, this.idempotencyWindow);
    const decidedAt = new Map<string, number>();
    const modelAt = new Map<number, ControlOutcome>();
    for (let i = 1; i <= top; i++) {
      const en = this.entryAt.get(i);
      if (en === undefined) return this.fail(`no peer was seen applying index ${i}`);
      if (en === "internal") {
        model.applyInternal(i);
        continue;
      }
      const out = model.applyEntry(en);
      if (out !== null) modelAt.set(i, out);
      if (out !== null && out.index === i && en.key !== null) {
        const k = `${en.key.client}/${en.key.seq}`;
        if (out.kind === "applied" || (out.conflict.reason !== "stale" && out.conflict.reason !== "keyReuse")) {
          // an idem: key is decided again only once its first outcome was forgotten (index ≤ i − 1 − window)
          const forgotten = en.key.client.startsWith("idem:") && decidedAt.get(k)! <= i - 1 - this.idempotencyWindow;
          if (decidedAt.has(k) && !forgotten) this.fail(`key ${k} decided twice, at ${decidedAt.get(k)} and ${i}`);
          if (decidedAt.has(k)) this.idemRedecided++;
          decidedAt.set(k, i);
        }
      }
    }
    const st = live[0]!.gov.controlView() as ControlState;
    if (st.mintedTotal() !== model.total) this.fail(`mintedTotal ${st.mintedTotal()} but the model replays ${model.total}`);
    for (const p of live) if (p.gov.ledger.get().mintedTotal() !== model.total) this.fail(`${p.id}'s ledger mints ${p.gov.ledger.get().mintedTotal()}, the log ${model.total}`);
    for (const [client, s] of model.sessions) {
      for (const [seq, rec0] of s.out) {
        const mine = st.outcomeOf({ client, seq });
        if (typeof mine === "string" || canonicalJson(outcomeJson(mine)) !== canonicalJson(outcomeJson(rec0.outcome))) this.fail(`outcome of ${client}/${seq}: peers recorded ${JSON.stringify(typeof mine === "string" ? mine : outcomeJson(mine))}, the model ${JSON.stringify(outcomeJson(rec0.outcome))}`);
      }
    }
    for (let i = 0; i <= top; i++) {
      const want = model.enrolledAt(i).join(",");
      if ([...st.roster.enrolledAt(i)].sort().join(",") !== want) this.fail(`enrolledAt(${i}) differs from the model`);
    }
    // the sum of acknowledged (or finally resolved) mints is exactly the minted total
    let acked = 0n;
    const mintKeys = new Set<string>();
    for (const op of this.ops) {
      if (op.mint === 0n || op.outcome === null) continue;
      if (op.outcome.kind === "applied") {
        const k = `${op.outcome.key.client}/${op.outcome.key.seq}`;
        if (!mintKeys.has(k)) acked += op.mint;
        mintKeys.add(k);
      }
    }
    const unresolved = this.ops.filter((o) => o.mint > 0n && o.outcome === null && o.key !== null);
    for (const op of unresolved) if (st.outcomeOf(op.key!) !== "unknown") this.fail(`an unresolved mint ${op.key!.client}/${op.key!.seq} has an outcome`);
    if (acked !== st.mintedTotal()) this.fail(`acknowledged mints sum to ${acked}, mintedTotal() is ${st.mintedTotal()}`);
    // linearizability (§5.2): (a) every acknowledged outcome is the model's; (b) real time respects index order
    const acks = this.ops.filter((o) => o.outcome !== null && o.ret !== Infinity);
    for (const op of acks) {
      const out = op.outcome!;
      if (out.index === null) continue; // refused locally (notDrained): never proposed
      const want = modelAt.get(out.index);
      if (want === undefined || canonicalJson(outcomeJson(want)) !== canonicalJson(outcomeJson(out))) this.fail(`${op.client} ${op.what}: told ${JSON.stringify(outcomeJson(out))}, the log decides ${want === undefined ? "nothing" : JSON.stringify(outcomeJson(want))}`);
    }
    const byRet = [...acks].filter((o) => o.outcome!.index !== null).sort((a, b) => a.ret - b.ret);
    const byCall = [...acks].filter((o) => o.outcome!.index !== null).sort((a, b) => a.call - b.call);
    let maxIndexResolved = 0;
    let j = 0;
    for (const b of byCall) {
      while (j < byRet.length && byRet[j]!.ret < b.call) maxIndexResolved = Math.max(maxIndexResolved, byRet[j++]!.outcome!.index!);
      if (b.outcome!.index! <= maxIndexResolved) this.fail(`${b.client} ${b.what} began after an act at ${maxIndexResolved} resolved, yet took effect at ${b.outcome!.index}`);
    }
    // (d) a sync view includes every act resolved before the sync began
    for (const s of this.syncs) {
      const before = acks.filter((o) => o.ret < s.call && o.outcome!.index !== null).reduce((m, o) => Math.max(m, o.outcome!.index!), 0);
      if (s.appliedIndex < before) this.fail(`a sync begun at ${s.call} saw index ${s.appliedIndex}, below ${before} resolved before it`);
    }
    // the Porcupine-style checker over the mint total: mints add, sync reads observe the total
    const history: Operation<{ kind: "mint"; amount: bigint } | { kind: "read" }, bigint>[] = [];
    for (const op of this.ops) {
      if (op.mint === 0n) continue;
      const took = op.outcome?.kind === "applied" ? op.mint : op.outcome === null ? null : 0n;
      if (took === 0n) continue; // refused: no effect
      history.push({ client: 0, input: { kind: "mint", amount: op.mint }, output: took ?? undefined, call: op.call, ret: op.ret });
    }
    for (const s of this.syncs) history.push({ client: 1, input: { kind: "read" }, output: s.minted, call: s.call, ret: s.ret });
    const counter: Model<bigint, { kind: "mint"; amount: bigint } | { kind: "read" }, bigint> = {
      init: () => 0n,
      step: (st0, input, output) => (input.kind === "mint" ? { ok: true, next: st0 + input.amount } : { ok: output === undefined || output === st0, next: st0 }),
      hash: (st0) => st0.toString(),
    };
    const lin = checkLinearizable(counter, history);
    if (!lin.ok) this.fail(`the mint/sync history is not linearizable (${lin.reason})`);
  }
}

function sameBytes(a: LogEntry, b: LogEntry): boolean {
  if (a.command.length !== b.command.length || a.term !== b.term || a.stampedAt !== b.stampedAt) return false;
  for (let i = 0; i < a.command.length; i++) if (a.command[i] !== b.command[i]) return false;
  return true;
}

/** Runs one seeded simulation; throws `ControlSimulationFailure` naming the seed on any violation. */
export async function runControlSimulation(seed: number, o: ControlSimOptions = {}): Promise<ControlSimResult> {
  return new Sim(seed, o).run();
}

