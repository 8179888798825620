/**
 * A literal, slow reference reading of ledger.md §5, §6 and §9 over decoded {@link Components}:
 * topology sets, the lineage walk, holdings, positions, summaries and `validate()`. Written from
 * the spec text only, with unbounded bigint (tests use it on states far from the I64 bounds), so
 * the implementation's derived reads can be compared with it on random states.
 */
import type { LedgerConflict, Lifecycle } from "../src/index.ts";
import { cmpFrac, COUNTER_FAMILIES } from "./components.ts";
import type { Components, Rec } from "./components.ts";

const asc = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

/** Thrown by a checked {@link Reference} where §2.1's checked arithmetic leaves I64. */
export class ReferenceOverflow extends Error {}

const I64_MAX = (1n << 63n) - 1n;
const I64_MIN = -(1n << 63n);

/** Reference reads over one state. */
export class Reference {
  readonly c: Components;
  /** When set, every +/− is checked against I64 in §2.1's order (left to right, ascending keys). */
  readonly checked: boolean;
  constructor(c: Components, checked = false) {
    this.c = c;
    this.checked = checked;
  }
  ck(x: bigint): bigint {
    if (this.checked && (x > I64_MAX || x < I64_MIN)) throw new ReferenceOverflow(String(x));
    return x;
  }

  R(e: string): Rec[] {
    return this.c.records.get(e) ?? [];
  }
  rec(e: string): Rec | undefined {
    const rs = this.R(e);
    return rs.length === 1 ? rs[0] : undefined;
  }
  lc(e: string): Lifecycle {
    return this.c.lifecycle.get(e) ?? "ACTIVE";
  }
  live(e: string): boolean {
    const l = this.lc(e);
    return l === "ACTIVE" || l === "CLOSING";
  }

  knownEdges(): string[] {
    const ks: string[] = [...this.c.records.keys(), ...this.c.lifecycle.keys(), ...this.c.gauges.keys()];
    for (const fam of COUNTER_FAMILIES) for (const k of this.c.counters[fam].keys()) ks.push(k.split("|")[0]!);
    return asc(ks);
  }
  inbound(g: string): string[] {
    return asc([...this.c.records].filter(([, rs]) => rs.some((r) => r[1] === g)).map(([e]) => e));
  }
  childEdges(g: string): string[] {
    return asc([...this.c.records].filter(([, rs]) => rs.some((r) => r[0] === g)).map(([e]) => e));
  }
  groups(): string[] {
    const gs: string[] = [];
    for (const rs of this.c.records.values()) for (const r of rs) gs.push(r[0], r[1]);
    return asc(gs);
  }
  roots(): string[] {
    return asc([...this.c.mints.values()].map((m) => m[0]));
  }
  replicas(): string[] {
    const rs: string[] = [...this.c.mints.values()].map((m) => m[1]);
    for (const fam of COUNTER_FAMILIES) for (const k of this.c.counters[fam].keys()) rs.push(k.split("|")[1]!);
    for (const k of this.c.transfers.keys()) {
      const [, d, x] = k.split("|");
      rs.push(d!, x!);
    }
    return asc(rs);
  }
  isLeaf(g: string): boolean {
    return this.childEdges(g).length === 0;
  }

  walk(g: string): { path: string[] | null; onCycle: boolean } {
    const path: string[] = [];
    const seen = new Set<string>();
    let cur = g;
    for (;;) {
      if (seen.has(cur)) return { path: null, onCycle: cur === g };
      seen.add(cur);
      const ins = this.inbound(cur);
      if (ins.length === 0) {
        // ⟨1.1⟩ a top group that is not a mint root is detached
        if (!this.roots().includes(cur)) return { path: null, onCycle: false };
        return { path, onCycle: false };
      }
      const liveIns = ins.filter((e) => this.live(e));
      if (liveIns.length !== 1) return { path: null, onCycle: false };
      const e = liveIns[0]!;
      const r = this.rec(e);
      if (r === undefined) return { path: null, onCycle: false };
      path.unshift(e);
      cur = r[0];
    }
  }

  slot(fam: (typeof COUNTER_FAMILIES)[number], e: string, r: string): bigint {
    return this.c.counters[fam].get(`${e}|${r}`) ?? 0n;
  }
  T(k: string, d: string, x: string): bigint {
    return this.c.transfers.get(`${k}|${d}|${x}`) ?? 0n;
  }
  /** Donors and recipients named under key `k`. */
  parties(k: string): { donors: string[]; recipients: string[] } {
    const donors: string[] = [];
    const recipients: string[] = [];
    for (const key of this.c.transfers.keys()) {
      const [kk, d, x] = key.split("|");
      if (kk === k) {
        donors.push(d!);
        recipients.push(x!);
      }
    }
    return { donors: asc(donors), recipients: asc(recipients) };
  }
  tnet(k: string, r: string): bigint {
    const { donors, recipients } = this.parties(k);
    let inflow = 0n;
    for (const d of donors) inflow = this.ck(inflow + this.T(k, d, r));
    let out = 0n;
    for (const x of recipients) out = this.ck(out + this.T(k, r, x));
    return this.ck(inflow - out);
  }
  netInflow(e: string, r: string): bigint {
    return this.ck(this.slot("issued", e, r) - this.slot("returned", e, r));
  }
  own(e: string, r: string): bigint {
    const a = this.ck(this.slot("issued", e, r) - this.slot("returned", e, r));
    return this.ck(this.ck(a - this.slot("leafSpent", e, r)) - this.slot("rollupSpent", e, r));
  }
  pos(e: string, r: string): bigint {
    return this.ck(this.own(e, r) + this.tnet(e, r));
  }

  holdings(g: string, r: string): bigint {
    const w = this.walk(g);
    if (w.path === null) return 0n;
    if (w.path.length === 0) {
      // g is the root (⟨1.1⟩: any other top group is detached and walked to null above)
      let h = 0n;
      for (const id of asc(this.c.mints.keys())) {
        const m = this.c.mints.get(id)!;
        if (m[0] === g && m[1] === r) h = this.ck(h + m[2]);
      }
      h = this.ck(h + this.tnet("", r));
      for (const c of this.childEdges(g)) h = this.ck(h - this.netInflow(c, r));
      return h;
    }
    let h = this.pos(w.path[w.path.length - 1]!, r);
    for (const c of this.childEdges(g)) h = this.ck(h - this.own(c, r));
    return h;
  }

  sum(fam: (typeof COUNTER_FAMILIES)[number], e: string): bigint {
    let s = 0n;
    for (const [k, v] of this.c.counters[fam]) if (k.split("|")[0] === e) s = this.ck(s + v);
    return s;
  }
  edge(e: string): { attachment: string; issued: bigint; returned: bigint; spent: bigint; outstanding: bigint; committedService: bigint } | null {
    if (!this.knownEdges().includes(e)) return null;
    const issued = this.sum("issued", e);
    const returned = this.sum("returned", e);
    const spent = this.ck(this.sum("leafSpent", e) + this.sum("rollupSpent", e));
    const committedService = this.ck(issued - returned);
    return { attachment: e, issued, returned, spent, outstanding: this.ck(committedService - spent), committedService };
  }
  mintedTotal(): bigint {
    let s = 0n;
    for (const m of this.c.mints.values()) s = this.ck(s + m[2]);
    return s;
  }
  leafSpentTotal(): bigint {
    let s = 0n;
    for (const v of this.c.counters.leafSpent.values()) s = this.ck(s + v);
    return s;
  }
  /** `grossVirtualService(e)` as an unreduced fraction `[num, den]`, or null. */
  gross(e: string): [bigint, bigint] | null {
    const r = this.rec(e);
    if (r === undefined) return null;
    const [, , wn, wd] = r;
    const iss = this.sum("issued", e);
    const g = this.c.gauges.get(e);
    if (g === undefined) return [iss * wd, wn];
    const [fn, fd, folded] = g;
    // fn/fd + (iss − folded)·wd/wn
    return [fn * wn + (iss - folded) * wd * fd, fd * wn];
  }

  validate(): LedgerConflict[] {
    const out: LedgerConflict[] = [];
    const known = this.knownEdges();
    const groups = this.groups();
    const reps = this.replicas();
    const any = out as unknown as Record<string, unknown>[];
    for (const e of known) {
      if (this.sum("leafSpent", e) + this.sum("rollupSpent", e) + this.sum("returned", e) > this.sum("issued", e)) {
        any.push({ kind: "PerEdgeSafety", edge: e });
      }
    }
    for (const g of groups) for (const r of reps) {
      if (this.holdings(g, r) < 0n) any.push({ kind: "PersistentNegativeHoldings", group: g, replica: r });
    }
    for (const e of asc(this.c.records.keys())) if (this.R(e).length > 1) any.push({ kind: "RecordDivergence", edge: e });
    for (const g of groups) if (this.inbound(g).filter((e) => this.live(e)).length >= 2) any.push({ kind: "DualActiveInbound", group: g });
    for (const e of known) if (this.lc(e) === "RETIRED" && this.edge(e)!.outstanding !== 0n) any.push({ kind: "ClosureViolation", edge: e });
    for (const g of groups) if (this.walk(g).onCycle) any.push({ kind: "LineageCycle", group: g });
    const ls = this.leafSpentTotal();
    const mt = this.mintedTotal();
    if (ls > mt) any.push({ kind: "ConservationViolation", leafSpentTotal: ls, mintedTotal: mt });
    const keys = asc([...this.c.transfers.keys()].map((k) => k.split("|")[0]!)).filter((k) => k !== "");
    for (const k of keys) {
      const { donors, recipients } = this.parties(k);
      const parties = asc([...donors, ...recipients]);
      if (!known.includes(k)) {
        if (parties.some((p) => this.tnet(k, p) !== 0n)) any.push({ kind: "OrphanedTransferPath", path: k });
        continue;
      }
      const r = this.rec(k);
      if (r === undefined) continue;
      const L = this.walk(r[1]).path;
      if (L === null) continue;
      const last = L[L.length - 1]!; // L is non-empty: k itself is an inbound record of the child
      if (last === k) continue;
      const kp = last;
      let covered = true;
      for (const [key, v] of this.c.transfers) {
        const [kk, d, x] = key.split("|");
        if (kk === k && v > this.T(kp, d!, x!)) covered = false;
      }
      if (covered) continue;
      if (parties.some((p) => this.tnet(k, p) !== 0n && this.pos(k, p) !== 0n)) any.push({ kind: "OrphanedTransferPath", path: k });
    }
    const roots = this.roots();
    if (roots.length > 1) any.push({ kind: "MultipleRoots", roots });
    return out;
  }
}

/** `a/b` reduced, as the `"num/den"` string `Rational.toString()` prints. */
export function fracString([n, d]: [bigint, bigint]): string {
  if (d < 0n) [n, d] = [-n, -d];
  let a = n < 0n ? -n : n;
  let b = d;
  while (b !== 0n) [a, b] = [b, a % b];
  const g = a === 0n ? 1n : a;
  return n === 0n ? "0/1" : `${n / g}/${d / g}`;
}

export { cmpFrac };

/** A mutator call with plain arguments, as the random check-order test generates them. */
export type Call =
  | { m: "mint"; id: string; root: string; holder: string; amount: bigint }
  | { m: "prepare"; id: string; parent: string; child: string; num: bigint; den: bigint }
  | { m: "activate" | "close" | "retire"; edge: string }
  | { m: "seat"; edge: string; front: [bigint, bigint] | number }
  | { m: "delegate" | "release"; replica: string; edge: string; amount: bigint }
  | { m: "transfer"; group: string; from: string; to: string; amount: bigint }
  | { m: "spend"; replica: string; group: string; amount: bigint }
  | { m: "chargeCaptured"; replica: string; path: string[]; amount: bigint };

const MAXI = (1n << 63n) - 1n;
const validId = (s: string): boolean => s.length > 0 && s.isWellFormed();
const inRange = (a: bigint, lo: bigint): boolean => a >= lo && a <= MAXI;

/**
 * The outcome §7's check tables give for `call` on this state: `"ok"`, `"ok-empty"` (a zero
 * cancel), or the refusal kind of the first failing check.
 */
export function expectedOutcome(ref: Reference, call: Call): string {
  const single = (e: string): string | null =>
    ref.R(e).length === 0 ? "UnknownEdge" : ref.R(e).length > 1 ? "DivergentRecord" : null;
  switch (call.m) {
    case "mint": {
      if (![call.id, call.root, call.holder].every(validId) || !inRange(call.amount, 0n)) return "InvalidArgument";
      const m = ref.c.mints.get(call.id);
      if (m !== undefined && !(m[0] === call.root && m[1] === call.holder && m[2] === call.amount)) return "MintIdInUse";
      const roots = ref.roots();
      if (!(roots.length === 0 || (roots.length === 1 && roots[0] === call.root))) return "ForeignRoot";
      if (ref.inbound(call.root).length > 0) return "NotARoot";
      return "ok";
    }
    case "prepare": {
      if (![call.id, call.parent, call.child].every(validId) || call.parent === call.child) return "InvalidArgument";
      if (ref.knownEdges().includes(call.id)) return "AlreadyKnown";
      if (ref.roots().includes(call.child)) return "ChildIsRoot";
      return "ok";
    }
    case "activate": {
      if (!validId(call.edge)) return "InvalidArgument"; // §7.0: an empty or malformed id
      const s = single(call.edge);
      if (s !== null) return s;
      const lc = ref.lc(call.edge);
      if (lc !== "PREPARED" && lc !== "ACTIVE") return "WrongLifecycle";
      const [parent, child] = ref.rec(call.edge)!;
      if (ref.inbound(child).some((e) => e !== call.edge && ref.live(e))) return "InboundAlreadyLive";
      let cur = parent;
      const seen = new Set<string>();
      for (;;) {
        if (cur === child) return "WouldCreateCycle";
        if (seen.has(cur)) break;
        seen.add(cur);
        const ins = ref.inbound(cur).filter((e) => ref.live(e));
        if (ins.length === 1 && ref.R(ins[0]!).length === 1) cur = ref.rec(ins[0]!)![0];
        else break;
      }
      return "ok";
    }
    case "close": {
      if (!validId(call.edge)) return "InvalidArgument"; // §7.0: an empty or malformed id
      const s = single(call.edge);
      if (s !== null) return s;
      const lc = ref.lc(call.edge);
      return lc === "ACTIVE" || lc === "CLOSING" ? "ok" : "WrongLifecycle"; // ⟨1.1⟩ PREPARED refused
    }
    case "retire": {
      if (!validId(call.edge)) return "InvalidArgument"; // §7.0: an empty or malformed id
      const s = single(call.edge);
      if (s !== null) return s;
      if (ref.lc(call.edge) !== "CLOSING" && ref.lc(call.edge) !== "PREPARED") return "WrongLifecycle"; // ⟨1.1⟩ PREPARED abandons
      if (ref.replicas().some((r) => ref.pos(call.edge, r) !== 0n)) return "NotDrained";
      return "ok";
    }
    case "seat": {
      if (typeof call.front === "number" || !validId(call.edge)) return "InvalidArgument";
      const s = single(call.edge);
      if (s !== null) return s;
      return ref.c.gauges.has(call.edge) ? "AlreadySeated" : "ok";
    }
    case "delegate": {
      if (![call.replica, call.edge].every(validId) || !inRange(call.amount, 1n)) return "InvalidArgument";
      const s = single(call.edge);
      if (s !== null) return s;
      if (ref.lc(call.edge) !== "ACTIVE") return "WrongLifecycle";
      const [parent, child] = ref.rec(call.edge)!;
      if (ref.walk(child).path === null) return "ChildQuarantined";
      if (ref.walk(parent).path === null) return "Quarantined";
      return call.amount > ref.holdings(parent, call.replica) ? "InsufficientHoldings" : "ok";
    }
    case "release": {
      if (![call.replica, call.edge].every(validId) || !inRange(call.amount, 1n)) return "InvalidArgument";
      const s = single(call.edge);
      if (s !== null) return s;
      const child = ref.rec(call.edge)![1];
      const L = ref.walk(child).path;
      if (L === null) return "Quarantined";
      if (L[L.length - 1] !== call.edge) return "NotLiveInbound";
      return call.amount > ref.holdings(child, call.replica) ? "InsufficientHoldings" : "ok";
    }
    case "transfer": {
      if (![call.group, call.from, call.to].every(validId) || call.from === call.to || !inRange(call.amount, 1n)) {
        return "InvalidArgument";
      }
      if (ref.walk(call.group).path === null) return "Quarantined";
      return call.amount > ref.holdings(call.group, call.from) ? "InsufficientHoldings" : "ok";
    }
    case "spend": {
      if (![call.replica, call.group].every(validId) || !inRange(call.amount, 0n)) return "InvalidArgument";
      if (!ref.isLeaf(call.group)) return "NotALeaf";
      if (call.amount === 0n) return "ok-empty";
      const L = ref.walk(call.group).path;
      if (L === null) return "Quarantined";
      if (L.length === 0) return "RootHasNoEdge";
      return call.amount > ref.holdings(call.group, call.replica) ? "InsufficientHoldings" : "ok";
    }
    case "chargeCaptured": {
      if (!validId(call.replica) || !call.path.every(validId) || !inRange(call.amount, 0n)) return "InvalidArgument";
      if (call.amount === 0n) return "ok-empty";
      if (call.path.length === 0) return "EmptyPath";
      if (new Set(call.path).size !== call.path.length) return "MalformedPath";
      if (call.path.some((e) => ref.R(e).length === 0)) return "MalformedPath";
      if (!ref.R(call.path[0]!).some((x) => ref.roots().includes(x[0]))) return "MalformedPath"; // ⟨1.1⟩ starts at the root
      for (let i = 0; i + 1 < call.path.length; i++) {
        const a = ref.R(call.path[i]!);
        const b = ref.R(call.path[i + 1]!);
        if (!a.some((x) => b.some((y) => x[1] === y[0]))) return "MalformedPath";
      }
      return "ok";
    }
  }
}

/** A patch under construction: every slot joined by max, records by union. */
class PatchSpec {
  records: Record<string, [string, string, bigint, bigint][]> = {};
  mints: Record<string, [string, string, bigint]> = {};
  counters: Record<(typeof COUNTER_FAMILIES)[number], Record<string, Record<string, bigint>>> = {
    issued: {}, returned: {}, leafSpent: {}, rollupSpent: {},
  };
  transfers: Record<string, Record<string, Record<string, bigint>>> = {};
  lifecycle: Record<string, Lifecycle> = {};
  gauges: Record<string, [bigint, bigint, bigint]> = {};

  slot(fam: (typeof COUNTER_FAMILIES)[number], e: string, r: string, v: bigint): void {
    if (v <= 0n) return;
    const m = (this.counters[fam][e] ??= {});
    m[r] = (m[r] ?? 0n) > v ? m[r]! : v;
  }
  transfer(k: string, d: string, x: string, v: bigint): void {
    if (v <= 0n) return;
    const m = ((this.transfers[k] ??= {})[d] ??= {});
    m[x] = (m[x] ?? 0n) > v ? m[x]! : v;
  }
  spec(): import("./arbitraries.ts").StateSpec {
    return {
      records: this.records,
      mints: this.mints,
      issued: this.counters.issued,
      returned: this.counters.returned,
      leafSpent: this.counters.leafSpent,
      rollupSpent: this.counters.rollupSpent,
      transfers: this.transfers,
      lifecycle: this.lifecycle,
      gauges: this.gauges,
    };
  }
}

/** §7.1 witness(actor, path), added into `p`. */
function witness(ref: Reference, p: PatchSpec, actor: string, path: readonly string[]): void {
  const gaugeFor = new Set<string>();
  for (const e of path) {
    for (const fam of COUNTER_FAMILIES) p.slot(fam, e, actor, ref.slot(fam, e, actor));
    if (ref.slot("issued", e, actor) > 0n) gaugeFor.add(e);
  }
  const mintsOf = (h: string): void => {
    for (const [id, m] of ref.c.mints) if (m[1] === h) p.mints[id] = [m[0], m[1], m[2]];
  };
  mintsOf(actor);
  for (let j = 0; j <= path.length; j++) {
    const k = j === 0 ? "" : path[j - 1]!;
    const rows = [...ref.c.transfers].filter(([key]) => key.split("|")[0] === k);
    if (rows.length === 0) continue;
    for (const [key, v] of rows) {
      const [, d, x] = key.split("|") as [string, string, string];
      if (d === actor) p.transfer(k, d, x, v);
    }
    for (const [key, v] of rows) {
      const [, d, x] = key.split("|") as [string, string, string];
      if (d === actor || x !== actor || v <= 0n) continue;
      p.transfer(k, d, x, v);
      mintsOf(d);
      for (let i = 1; i <= j; i++) {
        const e = path[i - 1]!;
        p.slot("issued", e, d, ref.slot("issued", e, d));
        p.slot("returned", e, d, ref.slot("returned", e, d));
        if (ref.slot("issued", e, d) > 0n) gaugeFor.add(e);
      }
    }
  }
  for (const e of gaugeFor) {
    const g = ref.c.gauges.get(e);
    if (g !== undefined) p.gauges[e] = [g[0], g[1], g[2]];
  }
}

/**
 * The patch §7 prescribes for a call that succeeds (not a zero cancel), as a state description:
 * the mutation's own slots at their new absolute values ⊔ its witness (§7.1) or drain witness.
 */
export function expectedPatch(ref: Reference, call: Call): import("./arbitraries.ts").StateSpec {
  const p = new PatchSpec();
  switch (call.m) {
    case "mint":
      p.mints[call.id] = [call.root, call.holder, call.amount];
      break;
    case "prepare":
      p.records[call.id] = [[call.parent, call.child, call.num, call.den]];
      p.lifecycle[call.id] = "PREPARED";
      break;
    case "activate":
      p.lifecycle[call.edge] = "ACTIVE";
      break;
    case "close":
      p.lifecycle[call.edge] = "CLOSING";
      break;
    case "retire": {
      p.lifecycle[call.edge] = "RETIRED";
      const writers = new Set<string>();
      for (const fam of COUNTER_FAMILIES) {
        for (const [k, v] of ref.c.counters[fam]) {
          const [e, r] = k.split("|") as [string, string];
          if (e === call.edge) {
            p.slot(fam, e, r, v);
            if (v > 0n) writers.add(r);
          }
        }
      }
      // ⟨1.1⟩ the drain witness carries every mint held by a writer on the edge
      for (const [id, m] of ref.c.mints) if (writers.has(m[1])) p.mints[id] = [m[0], m[1], m[2]];
      const g = ref.c.gauges.get(call.edge);
      if (g !== undefined) p.gauges[call.edge] = [g[0], g[1], g[2]];
      break;
    }
    case "seat": {
      const [, , wn, wd] = ref.rec(call.edge)!;
      const obs = ref.sum("issued", call.edge);
      const [fn, fd] = call.front as [bigint, bigint];
      p.gauges[call.edge] = fn * wn >= obs * wd * fd ? [fn, fd, obs] : [obs * wd, wn, obs];
      break;
    }
    case "delegate": {
      const [parent, , wn, wd] = ref.rec(call.edge)!;
      const e = call.edge;
      const r = call.replica;
      p.slot("issued", e, r, ref.slot("issued", e, r) + call.amount);
      for (const fam of ["returned", "leafSpent", "rollupSpent"] as const) p.slot(fam, e, r, ref.slot(fam, e, r));
      const after = ref.sum("issued", e) + call.amount;
      const g = ref.c.gauges.get(e);
      // read(g, after, w) = g.floor + (after − g.folded)·wd/wn, or after·wd/wn without a gauge
      p.gauges[e] = g === undefined ? [after * wd, wn, after] : [g[0] * wn + (after - g[2]) * wd * g[1], g[1] * wn, after];
      witness(ref, p, r, ref.walk(parent).path!);
      break;
    }
    case "release": {
      const child = ref.rec(call.edge)![1];
      p.slot("returned", call.edge, call.replica, ref.slot("returned", call.edge, call.replica) + call.amount);
      witness(ref, p, call.replica, ref.walk(child).path!);
      break;
    }
    case "transfer": {
      const L = ref.walk(call.group).path!;
      const k = L.length === 0 ? "" : L[L.length - 1]!;
      p.transfer(k, call.from, call.to, ref.T(k, call.from, call.to) + call.amount);
      witness(ref, p, call.from, L);
      break;
    }
    case "spend":
    case "chargeCaptured": {
      const path = call.m === "spend" ? ref.walk(call.group).path! : call.path;
      const last = path[path.length - 1]!;
      p.slot("leafSpent", last, call.replica, ref.slot("leafSpent", last, call.replica) + call.amount);
      for (const e of path.slice(0, -1)) p.slot("rollupSpent", e, call.replica, ref.slot("rollupSpent", e, call.replica) + call.amount);
      witness(ref, p, call.replica, path);
      break;
    }
  }
  return p.spec();
}
