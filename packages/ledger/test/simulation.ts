/**
 * A seeded simulation of replicas running the ledger honestly (ledger.md §12 "honest runs"):
 * each replica acts only as itself, threads its own patches into its own view, and applies only
 * `ok` patches. Views are either one shared view (every replica sees every patch at once) or one
 * view per replica with random partial, duplicated and reordered delivery and full-state
 * exchanges. After every call the simulation checks what the spec promises for that kind of run
 * and throws (with the step) when a promise breaks; the caller's property reports the seed.
 */
import { expect } from "vitest";
import { components } from "./components.ts";
import { EntitlementLedger, GroupId, AttachmentId, LedgerReplica, MintId, ReplicaId, Rational, Weight } from "../src/index.ts";

/** A small, fast PRNG (mulberry32); the whole run is a function of its seed. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** What a run does and which promises it checks. */
export interface SimConfig {
  /** Number of replicas (the first is also the topology and mint authority). */
  readonly replicas: number;
  /** One shared view (true) or one view per replica with gossip (false). */
  readonly shared: boolean;
  /** Whether replicas transfer to each other. */
  readonly transfers: boolean;
  /** Whether groups are reparented (shared: whole recipe at once; per-view: distributed). */
  readonly reparents: boolean;
  /** Number of random steps. */
  readonly steps: number;
  /**
   * Per-view mode only: only the authority starts with the base. The bootstrap mints and the
   * base topology are published patches like any other, delivered to the other replicas in random
   * subsets and orders, so replicas act on views that lack mints, records or lifecycles (I-21).
   */
  readonly partialStart?: boolean;
  /**
   * Per-view mode only: every replica also runs as a mutable {@link LedgerReplica} that receives
   * the same deliveries; every call must give the same outcome and patch on both, and the two
   * must hold the same state.
   */
  readonly mirror?: boolean;
}

/** One published patch with the view it was computed from. */
export interface Published {
  readonly by: number;
  readonly what: string;
  readonly patch: EntitlementLedger;
  readonly base: EntitlementLedger;
  /** Bit set of the published patches already contained in `base` (its causal past). */
  readonly deps: bigint;
}

type Result = ReturnType<EntitlementLedger["spend"]>;
/** Either shape of a ledger: mutators and reads are the same on both. */
type Ledger = EntitlementLedger | LedgerReplica;

const ROOT = GroupId("root");

/** §6.4's four preconditions, read through the public surface. */
export function conservationApplies(v: EntitlementLedger): boolean {
  const known = v.knownEdges();
  if (known.some((e) => v.record(e) === null)) return false;
  const all = [...new Set([...v.groups(), ...v.roots()])];
  if (all.some((g) => v.lineageOf(g) === null)) return false;
  for (const e of known) {
    const lc = v.lifecycle(e);
    if ((lc === "PREPARED" || lc === "RETIRED") && v.edge(e)!.outstanding !== 0n) return false;
  }
  const roots = v.roots();
  if (roots.length > 1) return false;
  if (roots.length === 1 && v.lineageOf(roots[0]!)!.length !== 0) return false;
  return true;
}

/** `[mintedTotal, Σ_{G*×R*} holdings + leafSpentTotal]`. */
export function conservationSides(v: EntitlementLedger): [bigint, bigint] {
  let sum = v.leafSpentTotal();
  const all = [...new Set([...v.groups(), ...v.roots()])];
  for (const g of all) for (const r of v.replicas()) sum += v.holdings(g, r);
  return [v.mintedTotal(), sum];
}

/** The topology (records, lifecycle) and mints of `v`, nothing else. */
export function topologyAndMints(v: EntitlementLedger): EntitlementLedger {
  const o = JSON.parse(v.encode()) as Record<string, unknown>;
  const keep: Record<string, unknown> = { format: o.format };
  for (const k of ["records", "mints", "lifecycle"]) if (o[k] !== undefined) keep[k] = o[k];
  return EntitlementLedger.decode(JSON.stringify(keep));
}

/** What a successful mutation should do to holdings and totals, per the intended semantics. */
interface Effect {
  readonly moves?: readonly (readonly [GroupId, ReplicaId, bigint])[];
  readonly leaf?: bigint;
  readonly minted?: bigint;
}

/** A pending distributed reshape (per-view mode): `old` into `child` is being replaced by `next`. */
interface Reshape {
  readonly old: AttachmentId;
  readonly next: AttachmentId;
  readonly child: GroupId;
  done: boolean;
}

/** The simulation. */
export class Simulation {
  readonly cfg: SimConfig;
  readonly rand: () => number;
  readonly reps: ReplicaId[];
  views: EntitlementLedger[];
  /** Per view, its mutable twin (when `cfg.mirror`). */
  readonly mirrors: LedgerReplica[] = [];
  /** Per view, the bit set of published patches it contains. */
  has: bigint[];
  readonly log: Published[] = [];
  /**
   * Shared mode: a tiny reference model of the intended economics — holdings per (group, replica)
   * moved by each operation's effect (delegate moves parent→child, release child→parent, transfer
   * between pockets, spend removes at the leaf, mint adds at the root, reparent moves nothing).
   */
  readonly model = new Map<string, bigint>();
  modelLeaf = 0n;
  modelMinted = 0n;
  readonly reshapes: Reshape[] = [];
  /** Counters of what happened, so tests can require that runs are not vacuous. */
  readonly stats = {
    ok: 0, refused: 0, reparents: 0, reparentsUndone: 0, newChildren: 0, transfers: 0, spends: 0,
    conservationChecks: 0, deliveries: 0, exchanges: 0, retires: 0, holdingsPreserved: 0, internalReparents: 0,
    preparedAbandoned: 0, detachedRefusals: 0,
  };
  step = 0;
  private serial = 0;

  constructor(cfg: SimConfig, seed: number) {
    this.cfg = cfg;
    this.rand = prng(seed);
    this.reps = Array.from({ length: cfg.replicas }, (_, i) => ReplicaId(`r${i + 1}`));
    const partial = cfg.partialStart === true && !cfg.shared;
    let s = EntitlementLedger.EMPTY;
    // with a partial start the base is published by the authority, patch by patch
    const setup = (what: string, patch: EntitlementLedger): void => {
      if (partial) this.log.push({ by: 0, what, patch, base: s, deps: (1n << BigInt(this.log.length)) - 1n });
      s = s.join(patch);
    };
    setup("bootstrap", EntitlementLedger.bootstrap(ROOT, new Map(this.reps.map((r, i) => [r, BigInt(300 + 100 * i)] as const)), "genesis"));
    const link = (id: string, p: string, c: string, w: Weight): void => {
      setup(`prepare(${id})`, okPatch(s.prepare({ id: AttachmentId(id), parent: GroupId(p), child: GroupId(c), weight: w })));
      setup(`activate(${id})`, okPatch(s.activate(AttachmentId(id))));
      setup(`seat(${id})`, okPatch(s.seat(AttachmentId(id), Rational.ZERO)));
    };
    link("ea", "root", "a", Weight.of(2n));
    link("eb", "root", "b", Weight.ONE);
    link("ea1", "a", "a1", Weight.of(1n, 3n));
    this.views = cfg.shared ? [s] : this.reps.map((_, i) => (partial && i > 0 ? EntitlementLedger.EMPTY : s));
    const all = (1n << BigInt(this.log.length)) - 1n;
    this.has = this.views.map((_, i) => (i === 0 ? all : 0n));
    if (cfg.mirror === true && !cfg.shared) for (const v of this.views) this.mirrors.push(new LedgerReplica(v));
    this.reps.forEach((r, i) => this.model.set(`${ROOT}|${r}`, BigInt(300 + 100 * i)));
    this.modelMinted = s.mintedTotal();
  }

  private slot(i: number): number {
    return this.cfg.shared ? 0 : i;
  }

  /**
   * True when view `i` contains the causal past of every patch it contains — i.e. it is a join
   * of replica states and not a partial delivery. §6.4 promises conservation only for such
   * views ("on arbitrary partial deliveries it can be transiently off").
   */
  causallyClosed(i: number): boolean {
    const has = this.has[this.slot(i)]!;
    for (let k = 0; k < this.log.length; k++) {
      if (((has >> BigInt(k)) & 1n) === 1n && (this.log[k]!.deps & ~has) !== 0n) return false;
    }
    return true;
  }

  /** The base every run starts from. */
  static base(cfg: SimConfig): EntitlementLedger {
    return new Simulation(cfg, 0).views[0]!;
  }

  n(k: number): number {
    return k <= 0 ? 0 : this.rand() % k;
  }
  pick<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[this.n(xs.length)];
  }
  /** Mostly (4 in 5) one of the `good` candidates when there are any, else any candidate. */
  prefer<T>(xs: readonly T[], good: (x: T) => boolean): T | undefined {
    const g = xs.filter(good);
    return g.length > 0 && this.n(5) !== 0 ? this.pick(g) : this.pick(xs);
  }
  viewOf(i: number): EntitlementLedger {
    return this.cfg.shared ? this.views[0]! : this.views[i]!;
  }
  private setView(i: number, v: EntitlementLedger): void {
    if (this.cfg.shared) this.views[0] = v;
    else this.views[i] = v;
  }

  /** An amount for a debit against holdings `h`: mostly within, sometimes exactly `h`, sometimes `h + 1`. */
  amount(h: bigint): bigint {
    const c = this.n(10);
    if (c === 0) return h + 1n;
    if (c === 1 || h <= 1n) return h < 1n ? 1n : h;
    return 1n + BigInt(this.n(Number(h < 1000n ? h : 1000n)));
  }

  /**
   * Runs one mutator on replica `i`'s view: checks I-5 (receiver untouched), joins an `ok` patch
   * into the view, logs it, and observes the new view.
   */
  call(i: number, what: string, f: (v: Ledger) => Result, on: EntitlementLedger = this.viewOf(i)): Result {
    const before = on.encode();
    const r = f(on);
    expect(on.encode(), `I-5 receiver changed by ${what}`).toBe(before);
    const twin = this.mirrors[i];
    if (twin !== undefined && on === this.views[i]) {
      // the mutable replica applies its own ok patch; the caller commits the same patch to the view
      const m = f(twin);
      expect(m.ok ? "ok" : m.refusal.kind, `step ${this.step} (${what}): LedgerReplica outcome`).toBe(r.ok ? "ok" : r.refusal.kind);
      if (m.ok && r.ok) expect(m.patch.encode(), `step ${this.step} (${what}): LedgerReplica patch`).toBe(r.patch.encode());
      if (!m.ok && !r.ok) expect(m.refusal.detail).toEqual(r.refusal.detail);
    }
    if (!r.ok && r.refusal.kind === "Quarantined") this.stats.detachedRefusals++;
    if (r.ok) this.stats.ok++;
    else this.stats.refused++;
    return r;
  }

  /** Publishes an `ok` patch computed from replica `i`'s current view. */
  commit(i: number, what: string, r: Result, effect: Effect = {}): boolean {
    if (!r.ok) return false;
    for (const [g, rep, d] of effect.moves ?? []) this.model.set(`${g}|${rep}`, (this.model.get(`${g}|${rep}`) ?? 0n) + d);
    this.modelLeaf += effect.leaf ?? 0n;
    this.modelMinted += effect.minted ?? 0n;
    const base = this.viewOf(i);
    const deps = this.has[this.slot(i)]!;
    this.log.push({ by: i, what, patch: r.patch, base, deps });
    this.has[this.slot(i)] = deps | (1n << BigInt(this.log.length - 1));
    this.setView(i, base.join(r.patch));
    this.observe(i, what);
    return true;
  }

  /** Helper: call and commit. */
  act(i: number, what: string, f: (v: Ledger) => Result, effect: Effect = {}): Result {
    const r = this.call(i, what, f);
    this.commit(i, what, r, effect);
    return r;
  }

  /** Groups of a view that are named by records or are roots. */
  allGroups(v: EntitlementLedger): GroupId[] {
    return [...new Set([...v.groups(), ...v.roots()])].sort();
  }
  /** Live child edges of `g` (ACTIVE or CLOSING, single record). */
  children(v: EntitlementLedger, g: GroupId): AttachmentId[] {
    return v.knownEdges().filter((e) => {
      const lc = v.lifecycle(e);
      return v.record(e)?.parent === g && (lc === "ACTIVE" || lc === "CLOSING");
    });
  }
  subtree(v: EntitlementLedger, g: GroupId): GroupId[] {
    const out: GroupId[] = [];
    const visit = (x: GroupId): void => {
      for (const e of this.children(v, x)) {
        const c = v.record(e)!.child;
        if (!out.includes(c) && c !== g) {
          visit(c);
          out.push(c); // post-order: deepest first
        }
      }
    };
    visit(g);
    return out;
  }

  /**
   * Checks on view `i` after it changed: the safety statement (§6.5) for honest runs, "no
   * negative holdings without a report", and conservation (§6.4) when its preconditions hold.
   */
  observe(i: number, what: string): void {
    if (this.cfg.partialStart === true) this.probeDetached(i, what);
    const v = this.viewOf(i);
    const selves = this.cfg.shared ? this.reps : [this.reps[i]!];
    const topologyRaces = this.cfg.reparents && !this.cfg.shared;
    const groups = this.allGroups(v);
    const reps = v.replicas();
    let negative = false;
    let sum = 0n;
    // §9 scans groups() — groups named by a record — for PersistentNegativeHoldings: a root that no record in
    // the view names yet (mints delivered before any topology, I-21) can read negative unreported, until its
    // releases' credits arrive. Only the groups a report can name are held to "negative ⇒ reported".
    const reportable = new Set(v.groups());
    for (const g of groups) {
      for (const r of reps) {
        const h = v.holdings(g, r);
        sum += h;
        if (h < 0n) {
          if (reportable.has(g)) negative = true;
          if (selves.includes(r) && !topologyRaces) {
            throw new Error(`step ${this.step} (${what}): holdings(${g}, ${r}) = ${h} < 0 in its own view (I-6/§6.5)`);
          }
        }
        if (this.cfg.shared && h !== (this.model.get(`${g}|${r}`) ?? 0n) && v.lineageOf(g) !== null) {
          // compared only outside a reshape window (a quarantined group reads 0 by design)
          expect(h, `step ${this.step} (${what}): holdings(${g}, ${r}) vs the reference model`).toBe(this.model.get(`${g}|${r}`) ?? 0n);
        }
      }
    }
    if (negative) expect(v.validate().length, `step ${this.step} (${what}): negative holdings with an empty report`).toBeGreaterThan(0);
    if (this.cfg.shared) {
      expect(v.leafSpentTotal(), `step ${this.step} (${what}): leafSpentTotal vs model`).toBe(this.modelLeaf);
      expect(v.mintedTotal(), `step ${this.step} (${what}): mintedTotal vs model`).toBe(this.modelMinted);
    }
    if (this.causallyClosed(i) && conservationApplies(v)) {
      this.stats.conservationChecks++;
      expect(sum + v.leafSpentTotal(), `step ${this.step} (${what}): conservation (I-7) on view ${i}`).toBe(v.mintedTotal());
    }
  }

  /**
   * ⟨1.1⟩ §5.2/§6.2 on view `i`: every detached group (its walk ends at a top group that is not a
   * mint root — a parent's record or the root's mints have not arrived) has no lineage, reads 0
   * for every replica, and refuses every mutator that needs its lineage; the mutable twin agrees.
   */
  probeDetached(i: number, what: string): void {
    const v = this.viewOf(i);
    const twin = this.mirrors[i];
    const r = this.reps[i]!;
    const other = this.reps[(i + 1) % this.reps.length]!;
    const at = `step ${this.step} (${what}) on r${i + 1}`;
    for (const g of this.allGroups(v)) {
      if (!detached(v, g)) continue;
      expect(v.lineageOf(g), `${at}: lineageOf(${g}) of a detached group`).toBeNull();
      for (const x of v.replicas()) expect(v.holdings(g, x), `${at}: holdings(${g}, ${x}) of a detached group`).toBe(0n);
      const calls: [string, (x: Ledger) => Result, string][] = [
        [`transfer(${g})`, (x) => x.transfer(g, r, other, 1n), "Quarantined"],
        [`spend(${g})`, (x) => x.spend(r, g, 1n), v.isLeaf(g) ? "Quarantined" : "NotALeaf"],
      ];
      for (const e of v.knownEdges()) {
        const rec = v.record(e);
        if (rec === null || rec.child !== g) continue;
        calls.push([`release(${e})`, (x) => x.release(r, e, 1n), "Quarantined"]);
        if (v.lifecycle(e) === "ACTIVE") calls.push([`delegate(${e})`, (x) => x.delegate(r, e, 1n), "ChildQuarantined"]);
      }
      for (const [name, f, want] of calls) {
        for (const on of twin === undefined ? [v] : [v, twin]) {
          const res = f(on);
          expect(res.ok ? "ok" : res.refusal.kind, `${at}: ${name} below a detached lineage`).toBe(want);
        }
        this.stats.detachedRefusals++;
      }
    }
  }

  // ---- operations ------------------------------------------------------------------------

  opDelegate(i: number): void {
    const v = this.viewOf(i);
    const r = this.reps[i]!;
    const edges = v.knownEdges().filter((e) => v.lifecycle(e) === "ACTIVE" && v.record(e) !== null);
    const e = this.prefer(
      edges.filter((x) => v.lineageOf(v.record(x)!.child) !== null),
      (x) => v.holdings(v.record(x)!.parent, r) > 0n,
    );
    if (e === undefined) return;
    const h = v.holdings(v.record(e)!.parent, r);
    const a = this.amount(h);
    const res = this.call(i, `delegate(${r}, ${e}, ${a})`, (x) => x.delegate(r, e, a));
    this.checkDebit(res, a, h, "delegate");
    const rec = v.record(e)!;
    this.commit(i, `delegate(${r}, ${e}, ${a})`, res, { moves: [[rec.parent, r, -a], [rec.child, r, a]] });
  }

  opRelease(i: number): void {
    const v = this.viewOf(i);
    const r = this.reps[i]!;
    const g = this.prefer(this.allGroups(v).filter((x) => (v.lineageOf(x)?.length ?? 0) > 0), (x) => v.holdings(x, r) > 0n);
    if (g === undefined) return;
    const e = v.lineageOf(g)!.at(-1)!;
    const h = v.holdings(g, r);
    const a = this.amount(h);
    const res = this.call(i, `release(${r}, ${e}, ${a})`, (x) => x.release(r, e, a));
    this.checkDebit(res, a, h, "release");
    this.commit(i, `release(${r}, ${e}, ${a})`, res, { moves: [[g, r, -a], [v.record(e)!.parent, r, a]] });
  }

  opTransfer(i: number): void {
    const v = this.viewOf(i);
    const r = this.reps[i]!;
    const g = this.prefer(this.allGroups(v).filter((x) => v.lineageOf(x) !== null), (x) => v.holdings(x, r) > 0n);
    const to = this.pick(this.reps.filter((x) => x !== r));
    if (g === undefined || to === undefined) return;
    const h = v.holdings(g, r);
    const a = this.amount(h);
    const res = this.call(i, `transfer(${g}, ${r}, ${to}, ${a})`, (x) => x.transfer(g, r, to, a));
    this.checkDebit(res, a, h, "transfer");
    if (this.commit(i, `transfer(${g}, ${r}, ${to}, ${a})`, res, { moves: [[g, r, -a], [g, to, a]] })) this.stats.transfers++;
  }

  opSpend(i: number): void {
    const v = this.viewOf(i);
    const r = this.reps[i]!;
    const g = this.prefer(this.allGroups(v).filter((x) => v.isLeaf(x) && (v.lineageOf(x)?.length ?? 0) > 0), (x) => v.holdings(x, r) > 0n);
    if (g === undefined) return;
    const h = v.holdings(g, r);
    const a = this.n(8) === 0 ? 0n : this.amount(h);
    const res = this.call(i, `spend(${r}, ${g}, ${a})`, (x) => x.spend(r, g, a));
    if (a === 0n) {
      expect(res.ok && res.patch.equals(EntitlementLedger.EMPTY)).toBe(true);
      return;
    }
    this.checkDebit(res, a, h, "spend");
    if (this.commit(i, `spend(${r}, ${g}, ${a})`, res, { moves: [[g, r, -a]], leaf: a })) this.stats.spends++;
  }

  /** A completion charged to the captured lineage, within the holdings it earmarked. */
  opCharge(i: number): void {
    const v = this.viewOf(i);
    const r = this.reps[i]!;
    const g = this.pick(this.allGroups(v).filter((x) => v.isLeaf(x) && (v.lineageOf(x)?.length ?? 0) > 0));
    if (g === undefined) return;
    const h = v.holdings(g, r);
    if (h <= 0n) return;
    const path = v.lineageOf(g)!;
    const a = BigInt(this.n(Number(h < 1000n ? h : 1000n) + 1));
    const res = this.call(i, `chargeCaptured(${r}, ${path.join("/")}, ${a})`, (x) => x.chargeCaptured(r, path, a));
    expect(res.ok).toBe(true);
    if (this.commit(i, `chargeCaptured(${r}, ${g}, ${a})`, res, { moves: [[g, r, -a]], leaf: a })) this.stats.spends++;
  }

  /** The authority mints a new act to a random replica. */
  opMint(): void {
    const to = this.pick(this.reps)!;
    const id = MintId(`mint-${++this.serial}`);
    const a = BigInt(this.n(200));
    const res = this.act(0, `mint(${id}, ${to}, ${a})`, (x) => x.mint(id, ROOT, to, a), { moves: [[ROOT, to, a]], minted: a });
    expect(res.ok).toBe(true);
  }

  /** The authority creates a new child under any healthy group (leaves included), then seats it. */
  opNewChild(): void {
    const v = this.viewOf(0);
    const p = this.pick(this.allGroups(v).filter((g) => v.lineageOf(g) !== null));
    if (p === undefined) return;
    const k = ++this.serial;
    const id = AttachmentId(`n${k}`);
    const child = GroupId(`N${k}`);
    const w = this.pick([Weight.ONE, Weight.of(3n), Weight.of(2n, 5n)])!;
    // drawn once, outside the calls: a mutable twin (cfg.mirror) runs each call a second time
    const front = Rational.of(BigInt(this.n(20)), BigInt(1 + this.n(3)));
    const steps: [string, (x: Ledger) => Result][] = [
      [`prepare(${id}: ${p}→${child})`, (x) => x.prepare({ id, parent: p, child, weight: w })],
      [`activate(${id})`, (x) => x.activate(id)],
      [`seat(${id})`, (x) => x.seat(id, front)],
    ];
    for (const [what, f] of steps) expect(this.act(0, what, f).ok, what).toBe(true);
    this.stats.newChildren++;
  }

  /**
   * Shared view only: the whole reparent recipe of §8 (prepare, close, drain per replica,
   * retire, activate, seat) computed on a scratch copy and committed only if it completes. Pins
   * I-18: every holding just after `activate(new)` equals its value just before `retire(old)`.
   */
  opReparentShared(): void {
    const v0 = this.viewOf(0);
    const c = this.pick(this.allGroups(v0).filter((g) => (v0.lineageOf(g)?.length ?? 0) > 0));
    if (c === undefined) return;
    const old = v0.lineageOf(c)!.at(-1)!;
    const below = this.subtree(v0, c);
    const parents = this.allGroups(v0).filter((g) => g !== c && !below.includes(g) && v0.lineageOf(g) !== null);
    const p = this.pick(parents);
    if (p === undefined) return;
    const next = AttachmentId(`p${++this.serial}`);
    const w = this.pick([Weight.ONE, Weight.of(2n), Weight.of(1n, 2n)])!;
    const savedLog = this.log.length;
    const savedView = this.views[0]!;
    const savedHas = this.has[0]!;
    const savedStats = { ...this.stats };
    const steps = (what: string, i: number, f: (x: Ledger) => Result, effect: Effect = {}): boolean =>
      this.commit(i, what, this.call(i, what, f), effect);
    const savedModel = new Map(this.model);
    const undo = (): void => {
      this.log.length = savedLog;
      this.views[0] = savedView;
      this.has[0] = savedHas;
      this.model.clear();
      for (const [k, x] of savedModel) this.model.set(k, x);
      Object.assign(this.stats, savedStats);
      this.stats.reparentsUndone++;
    };
    expect(steps(`prepare(${next}: ${p}→${c})`, 0, (x) => x.prepare({ id: next, parent: p, child: c, weight: w }))).toBe(true);
    if (this.n(4) === 0) {
      this.abandon(next);
      return;
    }
    expect(steps(`close(${old})`, 0, (x) => x.close(old))).toBe(true);
    // drain: every replica releases everything it holds below c up to c, deepest first
    for (const g of below) {
      for (let i = 0; i < this.reps.length; i++) {
        const v = this.viewOf(i);
        const lin = v.lineageOf(g);
        if (lin === null || lin.length === 0) continue;
        const h = v.holdings(g, this.reps[i]!);
        const up = v.record(lin.at(-1)!)!.parent;
        const r = this.reps[i]!;
        if (h > 0n) expect(steps(`drain release ${g}`, i, (x) => x.release(r, lin.at(-1)!, h), { moves: [[g, r, -h], [up, r, h]] })).toBe(true);
      }
    }
    // at c: hand positive positions to negative ones, then release what remains positive
    const pos = (i: number): bigint => this.viewOf(0).edgePosition(old, this.reps[i]!);
    const held = (i: number): bigint => this.viewOf(0).holdings(c, this.reps[i]!);
    for (let d = 0; d < this.reps.length; d++) {
      for (let x = 0; x < this.reps.length; x++) {
        if (d === x || pos(d) <= 0n || pos(x) >= 0n || held(d) <= 0n) continue;
        const a = [pos(d), -pos(x), held(d)].reduce((m, y) => (y < m ? y : m));
        const [rd, rx] = [this.reps[d]!, this.reps[x]!];
        expect(steps(`drain transfer ${c}`, d, (y) => y.transfer(c, rd, rx, a), { moves: [[c, rd, -a], [c, rx, a]] })).toBe(true);
      }
    }
    for (let i = 0; i < this.reps.length; i++) {
      const a = pos(i) < held(i) ? pos(i) : held(i);
      const r = this.reps[i]!;
      const up = this.viewOf(0).record(old)!.parent;
      if (a > 0n) expect(steps(`drain release ${c}`, i, (x) => x.release(r, old, a), { moves: [[c, r, -a], [up, r, a]] })).toBe(true);
    }
    const v = this.viewOf(0);
    const drained = v.replicas().every((r) => v.edgePosition(old, r) === 0n);
    if (!drained) {
      const res = this.call(0, `retire(${old})`, (x) => x.retire(old));
      expect(res.ok ? "ok" : res.refusal.kind).toBe("NotDrained");
      undo();
      return;
    }
    const snapshot = this.holdingsTable(v);
    expect(steps(`retire(${old})`, 0, (x) => x.retire(old)), `retire(${old})`).toBe(true);
    expect(this.viewOf(0).lineageOf(c)).toBeNull(); // reshape window
    expect(steps(`activate(${next})`, 0, (x) => x.activate(next))).toBe(true);
    expect(this.holdingsTable(this.viewOf(0)), `I-18 reparent of ${c} from ${old} to ${next}`).toEqual(snapshot);
    this.stats.holdingsPreserved++;
    const front = Rational.of(BigInt(this.n(30)));
    expect(steps(`seat(${next})`, 0, (x) => x.seat(next, front))).toBe(true);
    this.stats.reparents++;
    if (below.length > 0) this.stats.internalReparents++;
  }

  /** Per-view mode: the authority starts a reshape (prepare next, close old). */
  opStartReshape(): void {
    const v = this.viewOf(0);
    const c = this.pick(this.allGroups(v).filter((g) => (v.lineageOf(g)?.length ?? 0) > 0));
    if (c === undefined) return;
    const old = v.lineageOf(c)!.at(-1)!;
    if (v.lifecycle(old) !== "ACTIVE") return;
    const below = this.subtree(v, c);
    const p = this.pick(this.allGroups(v).filter((g) => g !== c && !below.includes(g) && v.lineageOf(g) !== null));
    if (p === undefined) return;
    const next = AttachmentId(`p${++this.serial}`);
    expect(this.act(0, `prepare(${next})`, (x) => x.prepare({ id: next, parent: p, child: c, weight: Weight.ONE })).ok).toBe(true);
    if (this.n(4) === 0) {
      this.abandon(next);
      return;
    }
    expect(this.act(0, `close(${old})`, (x) => x.close(old)).ok).toBe(true);
    this.reshapes.push({ old, next, child: c, done: false });
  }

  /**
   * The authority calls off a reshape it prepared (⟨1.1⟩ §8 "abandon a prepared edge"): `close`
   * refuses the PREPARED edge — only `activate` makes an edge live — and `retire` takes it
   * straight from PREPARED with an empty drain witness.
   */
  abandon(next: AttachmentId): void {
    const closed = this.call(0, `close(${next})`, (x) => x.close(next));
    expect(closed.ok ? "ok" : closed.refusal.kind, `close(${next}) of a PREPARED edge`).toBe("WrongLifecycle");
    const res = this.act(0, `retire(${next}) from PREPARED`, (x) => x.retire(next));
    expect(res.ok, `retire(${next}) from PREPARED`).toBe(true);
    if (res.ok) expect(components(res.patch).lifecycle.get(next)).toBe("RETIRED");
    this.stats.preparedAbandoned++;
  }

  /** Per-view mode: a replica that sees a CLOSING edge drains its own holdings through it. */
  opDrain(i: number): void {
    const v = this.viewOf(i);
    const r = this.reps[i]!;
    const rs = this.pick(this.reshapes.filter((x) => !x.done && v.lifecycle(x.old) === "CLOSING"));
    if (rs === undefined) return;
    for (const g of [...this.subtree(v, rs.child), rs.child]) {
      const w = this.viewOf(i);
      const lin = w.lineageOf(g);
      if (lin === null || lin.length === 0) continue;
      const h = w.holdings(g, r);
      const up = w.record(lin.at(-1)!)!.parent;
      if (h > 0n) this.act(i, `drain release(${r}, ${lin.at(-1)}, ${h})`, (x) => x.release(r, lin.at(-1)!, h), { moves: [[g, r, -h], [up, r, h]] });
    }
  }

  /** Per-view mode: the authority retires and replaces when its view shows the old edge drained. */
  opFinishReshape(): void {
    const rs = this.pick(this.reshapes.filter((x) => !x.done));
    if (rs === undefined) return;
    const res = this.act(0, `retire(${rs.old})`, (x) => x.retire(rs.old));
    if (!res.ok) return;
    this.stats.retires++;
    rs.done = true;
    this.act(0, `activate(${rs.next})`, (x) => x.activate(rs.next));
    this.act(0, `seat(${rs.next})`, (x) => x.seat(rs.next, Rational.ZERO));
  }

  /** Per-view mode: deliver one published patch (any, again or out of order) to a replica. */
  opDeliver(): void {
    if (this.log.length === 0) return;
    const k = this.n(this.log.length);
    const p = this.log[k]!;
    const to = this.n(this.reps.length);
    this.views[to] = this.views[to]!.join(p.patch);
    this.mirrors[to]?.apply(p.patch);
    this.has[to] = this.has[to]! | (1n << BigInt(k));
    this.stats.deliveries++;
    this.observe(to, `deliver ${p.what} to r${to + 1}`);
  }

  /** Per-view mode: a full-state exchange (receiver joins sender's whole view). */
  opExchange(): void {
    const a = this.n(this.reps.length);
    const b = this.n(this.reps.length);
    this.views[a] = this.views[a]!.join(this.views[b]!);
    this.mirrors[a]?.apply(this.views[b]!);
    this.has[a] = this.has[a]! | this.has[b]!;
    this.stats.exchanges++;
    this.observe(a, `exchange r${b + 1} → r${a + 1}`);
  }

  /** I-8 in random runs: `h + 1` refuses `InsufficientHoldings`; within `h` succeeds (when nothing else is wrong). */
  checkDebit(res: Result, a: bigint, h: bigint, what: string): void {
    if (a > h) {
      expect(res.ok, `${what} of ${a} > holdings ${h} succeeded`).toBe(false);
      if (!res.ok && this.cfg.shared) expect(res.refusal.kind).toBe("InsufficientHoldings");
    } else if (this.cfg.shared) {
      expect(res.ok ? "ok" : res.refusal.kind, `${what} of ${a} ≤ holdings ${h}`).toBe("ok");
    }
  }

  holdingsTable(v: EntitlementLedger): Record<string, string> {
    const t: Record<string, string> = {};
    for (const g of this.allGroups(v)) for (const r of this.reps) t[`${g}|${r}`] = v.holdings(g, r).toString();
    return t;
  }

  /** One random step. */
  stepOnce(): void {
    this.step++;
    const i = this.n(this.reps.length);
    const c = this.n(100);
    const { shared, transfers, reparents } = this.cfg;
    if (!shared && c < 30) {
      if (c < 24) this.opDeliver();
      else this.opExchange();
      return;
    }
    const k = this.n(100);
    if (k < 24) this.opDelegate(i);
    else if (k < 33) this.opRelease(i);
    else if (k < 45) (transfers ? this.opTransfer(i) : this.opDelegate(i));
    else if (k < 66) this.opSpend(i);
    else if (k < 72) this.opCharge(i);
    else if (k < 76) this.opMint();
    else if (k < 82) this.opNewChild();
    else if (!reparents) this.opDelegate(i);
    else if (shared) (this.n(3) === 0 ? this.opReparentShared() : this.opSpend(i));
    else if (k < 85) this.opStartReshape();
    else if (k < 95) this.opDrain(i);
    else this.opFinishReshape();
  }

  /** Runs the configured number of steps. */
  run(): this {
    for (let s = 0; s < this.cfg.steps; s++) this.stepOnce();
    return this;
  }

  /** Delivers every published patch to every replica, each in its own random order. */
  deliverAll(): void {
    for (let i = 0; i < this.views.length; i++) {
      const order = this.log.map((p, k) => [this.rand(), k] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      let v = this.views[i]!;
      for (const [, k] of order) {
        v = v.join(this.log[k]!.patch);
        this.mirrors[i]?.apply(this.log[k]!.patch);
      }
      this.views[i] = v;
      this.has[i] = (1n << BigInt(this.log.length)) - 1n;
    }
  }
}

/**
 * True when the lineage walk of `g` (§5.2), read through the public surface, ends at a top group
 * that is not a mint root (⟨1.1⟩ detached), rather than at the root or at a fork, a group with no
 * live inbound, a divergent record or a cycle.
 */
export function detached(v: EntitlementLedger, g: GroupId): boolean {
  const roots = v.roots();
  const seen = new Set<GroupId>();
  let cur = g;
  for (;;) {
    if (seen.has(cur)) return false;
    seen.add(cur);
    const ins = v.knownEdges().filter((e) => v.records(e).some((x) => x.child === cur));
    if (ins.length === 0) return !roots.includes(cur);
    const live = ins.filter((e) => v.lifecycle(e) === "ACTIVE" || v.lifecycle(e) === "CLOSING");
    if (live.length !== 1) return false;
    const rec = v.record(live[0]!);
    if (rec === null) return false;
    cur = rec.parent;
  }
}

function okPatch(r: Result): EntitlementLedger {
  if (!r.ok) throw new Error(`setup refused: ${r.refusal.kind}`);
  return r.patch;
}
