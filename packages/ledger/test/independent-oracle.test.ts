/**
 * An independent reading of ledger.md (core v1.1) and policy.md §2, written from the spec over the
 * canonical encoding: an oracle for the derived reads and `validate()`, the outcome and patch of every
 * mutator, and `LedgerReplica` held to the immutable value call by call. Each test quotes the section
 * it pins.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EntitlementLedger, LedgerOverflowError, LedgerReplica, Rational, Weight } from "../src/index.ts";
import type { AttachmentId } from "../src/index.ts";
import { E, G, ledgerArb, M, ok, params, R } from "./arbitraries.ts";

const F = '"format":"heddle-ledger/1"';
const decode = (t: string): EntitlementLedger => EntitlementLedger.decode(t);

/** Every whole-state read that depends on the derived topology index, as comparable text. */
function topologyReads(x: EntitlementLedger | LedgerReplica): string {
  const groups = x.groups();
  const replicas = x.replicas();
  const probeGroups = [...groups, ...x.roots(), "nowhere"];
  const out: unknown[] = [groups, x.roots(), replicas, x.knownEdges()];
  for (const g of probeGroups) {
    const gid = G(g);
    out.push([g, x.lineageOf(gid), x.isLeaf(gid), x.childrenOf(gid).map((s) => s.attachment)]);
    for (const r of replicas) {
      let h: string;
      try {
        h = x.holdings(gid, r).toString();
      } catch (e) {
        h = (e as Error).name;
      }
      out.push([g, r, h]);
    }
  }
  let v: string;
  try {
    v = JSON.stringify(x.validate(), (_k, val: unknown) => (typeof val === "bigint" ? val.toString() : val));
  } catch (e) {
    v = (e as Error).name;
  }
  out.push(v);
  return JSON.stringify(out);
}

describe("LedgerReplica keeps its TopologyIndex equal to a freshly built one", () => {
  it("§4.3/I-20 folding random states into a LedgerReplica gives the same reads as the immutable join", () => {
    fc.assert(
      fc.property(fc.array(ledgerArb, { minLength: 1, maxLength: 4 }), (xs) => {
        const rep = new LedgerReplica(xs[0]!);
        let imm = xs[0]!;
        for (const x of xs.slice(1)) {
          rep.apply(x);
          // build both operands' indexes first, so join's index-reuse path is exercised
          imm.replicas();
          x.replicas();
          imm = imm.join(x);
        }
        expect(rep.encode()).toBe(imm.encode());
        // a value decoded from text has a freshly built index
        const fresh = topologyReads(decode(imm.encode()));
        expect(topologyReads(rep)).toBe(fresh);
        expect(topologyReads(imm)).toBe(fresh);
      }),
      params(200),
    );
  });
});

const GROUPS = ["root", "a", "b", "c", "d"] as const;
const REPS = ["p", "q", "s"] as const;
const gArb = fc.constantFrom(...GROUPS);
const rArb = fc.constantFrom(...REPS);
const eArb = fc.constantFrom("e0", "e1", "e2", "e3", "e4", "e5");
const amtArb = fc.bigInt({ min: 0n, max: 40n });
type Op =
  | ["prepare", string, string, string, bigint]
  | ["activate" | "close" | "retire", string]
  | ["seat", string, bigint]
  | ["delegate" | "release", string, string, bigint]
  | ["transfer", string, string, string, bigint]
  | ["spend", string, string, bigint]
  | ["capture", string, string]
  | ["charge", string, bigint, number]
  | ["mint", string, string, bigint];
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.tuple(fc.constant("prepare" as const), eArb, gArb, gArb, fc.bigInt({ min: 1n, max: 3n })),
  fc.tuple(fc.constantFrom("activate" as const, "close" as const, "retire" as const), eArb),
  fc.tuple(fc.constant("seat" as const), eArb, fc.bigInt({ min: -5n, max: 50n })),
  fc.tuple(fc.constantFrom("delegate" as const, "release" as const), rArb, eArb, amtArb),
  fc.tuple(fc.constant("transfer" as const), gArb, rArb, rArb, amtArb),
  fc.tuple(fc.constant("spend" as const), rArb, gArb, amtArb),
  fc.tuple(fc.constant("capture" as const), rArb, gArb),
  // the last element drops that many leading edges of the captured path: 1 is a mid-tree charge (⟨1.1⟩ MalformedPath)
  fc.tuple(fc.constant("charge" as const), rArb, amtArb, fc.constantFrom(0, 0, 1)),
  fc.tuple(fc.constant("mint" as const), fc.constantFrom("m1", "m2"), rArb, fc.bigInt({ min: 0n, max: 100n })),
);

describe("LedgerReplica mutators agree with the immutable value (§4.4 threading, §7)", () => {
  it("§7/§4.4 random mutator sequences: same ok/refusal kind, same patch, same state, same reads", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 80, size: "max" }), (ops) => {
        let imm = EntitlementLedger.bootstrap(G("root"), new Map([[R("p"), 100n], [R("q"), 60n]]), "genesis");
        // base tree root→a (e0), a→b (e1), root→c (e2), all ACTIVE; ops may reshape it
        for (const [e, par, ch] of [["e0", "root", "a"], ["e1", "a", "b"], ["e2", "root", "c"]] as const) {
          imm = imm.join(ok(imm.prepare({ id: E(e), parent: G(par), child: G(ch), weight: Weight.ONE })));
          imm = imm.join(ok(imm.activate(E(e))));
        }
        const rep = new LedgerReplica(imm);
        let captured: { replica: string; path: AttachmentId[] } | undefined;
        for (const op of ops) {
          type Mut = (x: EntitlementLedger | LedgerReplica) => ReturnType<EntitlementLedger["spend"]>;
          let call: Mut;
          switch (op[0]) {
            case "prepare":
              call = (x) => x.prepare({ id: E(op[1]), parent: G(op[2]), child: G(op[3]), weight: Weight.of(op[4]) });
              break;
            case "activate":
              call = (x) => x.activate(E(op[1]));
              break;
            case "close":
              call = (x) => x.close(E(op[1]));
              break;
            case "retire":
              call = (x) => x.retire(E(op[1]));
              break;
            case "seat":
              call = (x) => x.seat(E(op[1]), Rational.of(op[2], 2n));
              break;
            case "delegate":
              call = (x) => x.delegate(R(op[1]), E(op[2]), op[3]);
              break;
            case "release":
              call = (x) => x.release(R(op[1]), E(op[2]), op[3]);
              break;
            case "transfer":
              call = (x) => x.transfer(G(op[1]), R(op[2]), R(op[3]), op[4]);
              break;
            case "spend":
              call = (x) => x.spend(R(op[1]), G(op[2]), op[3]);
              break;
            case "capture": {
              const path = imm.lineageOf(G(op[2]));
              if (path !== null && path.length > 0) captured = { replica: op[1], path };
              continue;
            }
            case "charge": {
              const c = captured;
              if (c === undefined) continue;
              const path = c.path.slice(op[3]);
              call = (x) => x.chargeCaptured(R(c.replica), path, op[2]);
              break;
            }
            case "mint":
              call = (x) => x.mint(M(op[1]), G("root"), R(op[2]), op[3]);
              break;
          }
          const before = imm.encode();
          const want = expectedOutcome(imm, op, captured?.path.slice(op[0] === "charge" ? op[3] : 0));
          const a = call(imm);
          expect(a.ok ? "ok" : a.refusal.kind, `outcome of ${show(op)}`).toBe(want);
          const b = call(rep);
          expect(b.ok).toBe(a.ok);
          if (a.ok && b.ok) {
            expect(b.patch.encode()).toBe(a.patch.encode());
            const exp = expectedPatch(imm, op[0] === "charge" ? ["charge", op[2]] : op, captured && { replica: captured.replica, path: captured.path.slice(op[0] === "charge" ? op[3] : 0) });
            expect(a.patch.encode(), `patch of ${show(op)}`).toBe(exp.encode());
            imm = imm.join(a.patch);
          } else if (!a.ok && !b.ok) {
            expect(b.refusal.kind).toBe(a.refusal.kind);
            expect(b.refusal.detail).toEqual(a.refusal.detail);
            expect(imm.encode()).toBe(before);
          }
          expect(rep.encode()).toBe(imm.encode());
        }
        const fresh = topologyReads(decode(imm.encode()));
        expect(topologyReads(rep)).toBe(fresh);
        expect(topologyReads(imm)).toBe(fresh);
        compareWithOracle(imm);
      }),
      params(150),
    );
  });
});

describe("§3.8 the gauge join is total (README 'Deviations')", () => {
  // floor (2^62)/1 joined with floor 1/2: a checked compare's cross product 2^62 × 2 leaves I64
  // (§3.4). This used to make the whole join throw — pinned here as intended — but whether a
  // checked compare throws depends on which operands meet first (2^40 vs 1/2^40 throws, 2 vs
  // either does not), so the join was not associative and replicas that merged the same frames in
  // different orders split for good. The join only picks an operand, so it now compares exactly.
  const base = `{${F},"issued":[["e",[["alice","1"]]]],"gauges":[["e",["${1n << 62n}","1","0"]]]}`;
  const patch = `{${F},"issued":[["e",[["alice","7"]]]],"gauges":[["e",["1","2","0"]]]}`;
  const want = `{${F},"issued":[["e",[["alice","7"]]]],"gauges":[["e",["${1n << 62n}","1","0"]]]}`;

  it("§3.8 the immutable join keeps the larger floor in either order and leaves its operands unchanged", () => {
    const a = decode(base);
    const b = decode(patch);
    expect(a.join(b).encode()).toBe(want);
    expect(b.join(a).encode()).toBe(want);
    expect(a.encode()).toBe(decode(base).encode());
    expect(b.encode()).toBe(decode(patch).encode());
  });
});

describe("§11 read contract", () => {
  it("§11 reads throw TypeError for non-string ids; unknown ids are not errors (edge → null, holdings → 0n, edgePosition → 0n)", () => {
    const x = EntitlementLedger.bootstrap(G("root"), new Map([[R("p"), 10n]]), "n");
    const bad = 7 as unknown as string;
    const reads: [string, () => unknown][] = [
      ["holdings group", () => x.holdings(G(bad), R("p"))],
      ["holdings replica", () => x.holdings(G("root"), R(bad))],
      ["edge", () => x.edge(E(bad))],
      ["childrenOf", () => x.childrenOf(G(bad))],
      ["record", () => x.record(E(bad))],
      ["lifecycle", () => x.lifecycle(E(bad))],
      ["lineageOf", () => x.lineageOf(G(bad))],
      ["isLeaf", () => x.isLeaf(G(bad))],
      ["edgePosition", () => x.edgePosition(E(bad), R("p"))],
      ["gauge", () => x.gauge(E(bad))],
      ["baseIssuance", () => x.baseIssuance(E(bad))],
      ["grossVirtualService", () => x.grossVirtualService(E(bad))],
      ["virtualService", () => x.virtualService(E(bad))],
      ["projectEdge", () => x.projectEdge(E(bad))],
    ];
    for (const [name, f] of reads) expect(f, name).toThrow(TypeError);
    const ghost = "ghost" as AttachmentId;
    expect(x.edge(ghost)).toBeNull();
    expect(x.record(ghost)).toBeNull();
    expect(x.lifecycle(ghost)).toBeNull();
    expect(x.gauge(ghost)).toBeNull();
    expect(x.grossVirtualService(ghost)).toBeNull();
    expect(x.virtualService(ghost)).toBeNull();
    expect(x.baseIssuance(ghost)).toBe(0n);
    expect(x.edgePosition(ghost, R("p"))).toBe(0n);
    expect(x.holdings(G("nowhere"), R("p"))).toBe(0n);
    expect(x.holdings(G("root"), R("nobody"))).toBe(0n);
    expect(x.holdings(G("root"), R("p"))).toBe(10n);
    expect(x.lineageOf(G("nowhere"))).toBeNull(); // ⟨1.1⟩ a group named nowhere is a detached top group
    expect(x.isLeaf(G("nowhere"))).toBe(true);
    expect(x.childrenOf(G("nowhere"))).toEqual([]);
    expect(x.projectEdge(ghost).equals(EntitlementLedger.EMPTY)).toBe(true);
  });
});



// ---------------------------------------------------------------------------------------------
// An independent oracle for §5–§6 and §9, written from the spec over the canonical encoding.
// ---------------------------------------------------------------------------------------------

const MAXI = (1n << 63n) - 1n;
const MINI = -(1n << 63n);
class Overflow extends Error {}
const ck = (x: bigint): bigint => {
  if (x > MAXI || x < MINI) throw new Overflow();
  return x;
};
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface Oracle {
  records: Map<string, [string, string][]>;
  mints: Map<string, [string, string, bigint]>;
  c: Record<"issued" | "returned" | "leafSpent" | "rollupSpent", Map<string, Map<string, bigint>>>;
  t: Map<string, Map<string, Map<string, bigint>>>;
  life: Map<string, string>;
  gauges: Map<string, unknown>;
}

function oracleOf(x: EntitlementLedger): Oracle {
  const o = JSON.parse(x.encode()) as Record<string, [string, unknown][]>;
  const m2 = (v: unknown): Map<string, bigint> => new Map((v as [string, string][]).map(([k, n]) => [k, BigInt(n)]));
  const c = { issued: new Map(), returned: new Map(), leafSpent: new Map(), rollupSpent: new Map() } as Oracle["c"];
  for (const f of ["issued", "returned", "leafSpent", "rollupSpent"] as const) {
    for (const [e, slots] of o[f] ?? []) c[f].set(e, m2(slots));
  }
  return {
    records: new Map((o.records ?? []).map(([e, rs]) => [e, (rs as string[][]).map((r) => [r[0]!, r[1]!] as [string, string])])),
    mints: new Map((o.mints ?? []).map(([id, v]) => { const [r, h, a] = v as string[]; return [id, [r!, h!, BigInt(a!)]]; })),
    c,
    t: new Map((o.transfers ?? []).map(([k, rows]) => [k, new Map((rows as [string, unknown][]).map(([d, row]) => [d, m2(row)]))])),
    life: new Map((o.lifecycle ?? []) as [string, string][]),
    gauges: new Map((o.gauges ?? []) as [string, unknown][]),
  };
}

function oracleReads(O: Oracle) {
  const lc = (e: string): string => O.life.get(e) ?? "ACTIVE";
  const live = (e: string): boolean => lc(e) === "ACTIVE" || lc(e) === "CLOSING";
  const rec = (e: string): [string, string] | undefined => { const r = O.records.get(e); return r && r.length === 1 ? r[0] : undefined; };
  const ids = [...O.records.keys()].sort(cmp);
  const inbound = (g: string): string[] => ids.filter((e) => O.records.get(e)!.some((r) => r[1] === g));
  const childEdges = (g: string): string[] => ids.filter((e) => O.records.get(e)!.some((r) => r[0] === g));
  const groupsSet = new Set<string>();
  for (const rs of O.records.values()) for (const [p, ch] of rs) { groupsSet.add(p); groupsSet.add(ch); }
  const groups = [...groupsSet].sort(cmp);
  const roots = [...new Set([...O.mints.values()].map((m) => m[0]))].sort(cmp);
  const repSet = new Set<string>();
  for (const m of O.mints.values()) repSet.add(m[1]);
  for (const f of Object.values(O.c)) for (const slots of f.values()) for (const r of slots.keys()) repSet.add(r);
  for (const rows of O.t.values()) for (const [d, row] of rows) { repSet.add(d); for (const x of row.keys()) repSet.add(x); }
  const replicas = [...repSet].sort(cmp);
  const known = new Set<string>([...O.records.keys(), ...O.life.keys(), ...O.gauges.keys(), ...Object.values(O.c).flatMap((f) => [...f.keys()])]);
  const walk = (g: string): { path: string[] | null; onCycle: boolean } => {
    const path: string[] = [];
    const seen = new Set<string>();
    let cur = g;
    for (;;) {
      if (seen.has(cur)) return { path: null, onCycle: cur === g };
      seen.add(cur);
      const ins = inbound(cur);
      if (ins.length === 0) return roots.includes(cur) ? { path, onCycle: false } : { path: null, onCycle: false }; // ⟨1.1⟩ detached
      const li = ins.filter(live);
      if (li.length !== 1) return { path: null, onCycle: false };
      const r = rec(li[0]!);
      if (r === undefined) return { path: null, onCycle: false };
      path.unshift(li[0]!);
      cur = r[0];
    }
  };
  const sl = (f: keyof Oracle["c"], e: string, r: string): bigint => O.c[f].get(e)?.get(r) ?? 0n;
  const T = (k: string, d: string, x: string): bigint => O.t.get(k)?.get(d)?.get(x) ?? 0n;
  const netInflow = (e: string, r: string): bigint => ck(sl("issued", e, r) - sl("returned", e, r));
  const own = (e: string, r: string): bigint => ck(ck(ck(sl("issued", e, r) - sl("returned", e, r)) - sl("leafSpent", e, r)) - sl("rollupSpent", e, r));
  const tnet = (k: string, r: string): bigint => {
    const rows = O.t.get(k);
    if (!rows) return 0n;
    let inflow = 0n;
    for (const d of [...rows.keys()].sort(cmp)) inflow = ck(inflow + T(k, d, r));
    let out = 0n;
    for (const x of [...(rows.get(r)?.keys() ?? [])].sort(cmp)) out = ck(out + T(k, r, x));
    return ck(inflow - out);
  };
  const pos = (e: string, r: string): bigint => ck(own(e, r) + tnet(e, r));
  const holdings = (g: string, r: string): bigint => {
    const w = walk(g);
    if (w.path === null) return 0n;
    if (w.path.length === 0) {
      let h = 0n; // g is the root: the walk of any other top group is null
      for (const id of [...O.mints.keys()].sort(cmp)) {
        const m = O.mints.get(id)!;
        if (m[0] === g && m[1] === r) h = ck(h + m[2]);
      }
      h = ck(h + tnet("", r));
      for (const c of childEdges(g)) h = ck(h - netInflow(c, r));
      return h;
    }
    let h = pos(w.path[w.path.length - 1]!, r);
    for (const c of childEdges(g)) h = ck(h - own(c, r));
    return h;
  };
  const total = (f: keyof Oracle["c"], e: string): bigint => {
    let t = 0n;
    for (const r of [...(O.c[f].get(e)?.keys() ?? [])].sort(cmp)) t = ck(t + sl(f, e, r));
    return t;
  };
  const validate = (): unknown[] => {
    const out: unknown[] = [];
    const edges = [...known].sort(cmp);
    for (const e of edges) {
      if (ck(ck(total("leafSpent", e) + total("rollupSpent", e)) + total("returned", e)) > total("issued", e)) out.push({ kind: "PerEdgeSafety", edge: e });
    }
    for (const g of groups) for (const r of replicas) if (holdings(g, r) < 0n) out.push({ kind: "PersistentNegativeHoldings", group: g, replica: r });
    for (const e of edges) if ((O.records.get(e)?.length ?? 0) > 1) out.push({ kind: "RecordDivergence", edge: e });
    for (const g of groups) if (inbound(g).filter(live).length >= 2) out.push({ kind: "DualActiveInbound", group: g });
    for (const e of edges) {
      const out_ = ck(ck(total("issued", e) - total("returned", e)) - ck(total("leafSpent", e) + total("rollupSpent", e)));
      if (lc(e) === "RETIRED" && out_ !== 0n) out.push({ kind: "ClosureViolation", edge: e });
    }
    for (const g of groups) if (walk(g).onCycle) out.push({ kind: "LineageCycle", group: g });
    let lst = 0n;
    for (const e of [...O.c.leafSpent.keys()].sort(cmp)) lst = ck(lst + total("leafSpent", e));
    let mt = 0n;
    for (const id of [...O.mints.keys()].sort(cmp)) mt = ck(mt + O.mints.get(id)![2]);
    if (lst > mt) out.push({ kind: "ConservationViolation", leafSpentTotal: lst, mintedTotal: mt });
    for (const k of [...O.t.keys()].sort(cmp)) {
      if (k === "") continue;
      const rows = O.t.get(k)!;
      const parties = new Set<string>();
      for (const [d, row] of rows) { parties.add(d); for (const x of row.keys()) parties.add(x); }
      const ps = [...parties].sort(cmp);
      let fire: boolean;
      if (!known.has(k)) fire = ps.some((p) => tnet(k, p) !== 0n);
      else {
        const r = rec(k);
        if (r === undefined) continue;
        const L = walk(r[1]).path;
        if (L === null) continue;
        if (L[L.length - 1] === k) continue;
        const k2 = L[L.length - 1]!;
        let covered = true;
        for (const [d, row] of rows) for (const [x, v] of row) if (v > T(k2, d, x)) covered = false;
        if (covered) continue;
        fire = ps.some((p) => tnet(k, p) !== 0n && pos(k, p) !== 0n);
      }
      if (fire) out.push({ kind: "OrphanedTransferPath", path: k });
    }
    if (roots.length > 1) out.push({ kind: "MultipleRoots", roots });
    return out;
  };
  return { groups, roots, replicas, walk, holdings, pos, validate, known, lc, live, rec, inbound, childEdges };
}

const safe = <T>(f: () => T): T | string => {
  try {
    return f();
  } catch (e) {
    if (e instanceof Overflow || e instanceof LedgerOverflowError) return "overflow";
    throw e;
  }
};
const show = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x));

function compareWithOracle(x: EntitlementLedger): void {
  const o = oracleReads(oracleOf(x));
  expect(x.groups()).toEqual(o.groups);
  expect(x.roots()).toEqual(o.roots);
  expect(x.replicas()).toEqual(o.replicas);
  expect(x.knownEdges()).toEqual([...o.known].sort(cmp));
  for (const g of [...o.groups, ...o.roots, "nowhere"]) {
    expect(x.lineageOf(G(g))).toEqual(o.walk(g).path);
    for (const r of [...o.replicas, "stranger"]) {
      expect(show(safe(() => x.holdings(G(g), R(r))))).toBe(show(safe(() => o.holdings(g, r))));
    }
  }
  for (const e of [...o.known, "ghost"]) {
    for (const r of o.replicas) expect(show(safe(() => x.edgePosition(E(e), R(r))))).toBe(show(safe(() => o.pos(e, r))));
    expect(x.lifecycle(E(e))).toBe(o.known.has(e) ? o.lc(e) : null);
  }
  expect(show(safe(() => x.validate()))).toBe(show(safe(() => o.validate())));
  // §6.3 summaries and totals, §6.6 gauge reads
  const O = oracleOf(x);
  const full = JSON.parse(x.encode()) as Record<string, [string, unknown][]>;
  const weight = new Map<string, Weight>();
  for (const [e, rs] of full.records ?? []) {
    const list = rs as string[][];
    if (list.length === 1) weight.set(e, Weight.of(BigInt(list[0]![2]!), BigInt(list[0]![3]!)));
  }
  const tot = (f: keyof Oracle["c"], e: string): bigint => {
    let t = 0n;
    for (const v of O.c[f].get(e)?.values() ?? []) t = ck(t + v);
    return t;
  };
  const summary = (e: string) => {
    const issued = tot("issued", e);
    const returned = tot("returned", e);
    const spent = ck(tot("leafSpent", e) + tot("rollupSpent", e));
    return { attachment: e, issued, returned, spent, outstanding: ck(ck(issued - returned) - spent), committedService: ck(issued - returned) };
  };
  const gross = (e: string): Rational | null => {
    const w = weight.get(e);
    if (w === undefined) return null;
    const g = O.gauges.get(e) as string[] | undefined;
    const iss = tot("issued", e);
    if (g === undefined) return Rational.perWeight(iss, w);
    return Rational.of(BigInt(g[0]!), BigInt(g[1]!)).add(Rational.perWeight(ck(iss - BigInt(g[2]!)), w));
  };
  for (const e of [...o.known, "ghost"]) {
    expect(show(safe(() => x.edge(E(e))))).toBe(show(safe(() => (o.known.has(e) ? summary(e) : null))));
    expect(show(safe(() => x.baseIssuance(E(e))))).toBe(show(safe(() => tot("issued", e))));
    expect(show(safe(() => x.grossVirtualService(E(e))?.toString() ?? null))).toBe(show(safe(() => gross(e)?.toString() ?? null)));
    expect(show(safe(() => x.virtualService(E(e))?.toString() ?? null))).toBe(
      show(safe(() => { const g = gross(e); return g === null ? null : g.sub(Rational.perWeight(tot("returned", e), weight.get(e)!)).toString(); })),
    );
  }
  for (const g of [...o.groups, "nowhere"]) {
    const kids = o.childEdges(g).filter((e) => o.lc(e) === "ACTIVE");
    expect(show(safe(() => x.childrenOf(G(g))))).toBe(show(safe(() => kids.map(summary))));
  }
  const minted = (): bigint => {
    let t = 0n;
    for (const m of O.mints.values()) t = ck(t + m[2]);
    return t;
  };
  expect(show(safe(() => x.mintedTotal()))).toBe(show(safe(minted)));
}

describe("independent oracle for §5.2 walk, §6.1–6.2 holdings/positions and §9 validate", () => {
  it("§5–§6, §9 random states (divergence, every lifecycle, transfers under every key): reads and report equal the oracle", () => {
    fc.assert(fc.property(ledgerArb, (x) => compareWithOracle(x)), params(300));
  });

  it("§2.1 checked arithmetic near MAX: holdings, positions and validate() throw exactly where the oracle does", () => {
    const big = fc.constantFrom(0n, 1n, 2n, MAXI - 1n, MAXI, MAXI / 2n, MAXI / 2n + 1n);
    const counter = fc.dictionary(fc.constantFrom("e1", "e2"), fc.dictionary(fc.constantFrom("r1", "r2"), big, { maxKeys: 2 }), { maxKeys: 2 });
    const arb = fc
      .record({
        issued: counter,
        returned: counter,
        leafSpent: counter,
        rollupSpent: counter,
        transfers: fc.dictionary(fc.constantFrom("", "e1", "e2"), fc.dictionary(fc.constantFrom("r1", "r2"), fc.dictionary(fc.constantFrom("r1", "r2"), big, { maxKeys: 2 }), { maxKeys: 2 }), { maxKeys: 2 }),
        mints: fc.dictionary(fc.constantFrom("m1", "m2"), fc.tuple(fc.constant("g"), fc.constantFrom("r1", "r2"), big), { maxKeys: 2 }),
        weights: fc.tuple(fc.constantFrom<[bigint, bigint]>([1n, 1n], [MAXI, 1n], [1n, MAXI], [3n, 2n], [2n, 3n]), fc.constantFrom<[bigint, bigint]>([1n, 1n], [MAXI, 1n], [1n, MAXI], [3n, 2n])),
        gauges: fc.dictionary(
          fc.constantFrom("e1", "e2"),
          fc.tuple(fc.constantFrom(0n, 1n, -1n, MAXI, -MAXI, MAXI / 2n), fc.constantFrom(1n, 2n, 3n, MAXI), big),
          { maxKeys: 2 },
        ),
      })
      .map((sp) => {
        const enc = (c: Record<string, Record<string, bigint>>) =>
          Object.entries(c).map(([k, v]) => [k, Object.entries(v).map(([r, n]) => [r, n.toString()])]);
        const o: Record<string, unknown> = { format: "heddle-ledger/1" };
        const [w1, w2] = sp.weights;
        o.records = [["e1", [["g", "h", `${w1[0]}`, `${w1[1]}`]]], ["e2", [["h", "k", `${w2[0]}`, `${w2[1]}`]]]];
        o.gauges = Object.entries(sp.gauges).map(([e, [n, d, f]]) => [e, [`${n}`, `${d}`, `${f}`]]);
        o.mints = Object.entries(sp.mints).map(([id, [r, h, a]]) => [id, [r, h, a.toString()]]);
        for (const f of ["issued", "returned", "leafSpent", "rollupSpent"] as const) o[f] = enc(sp[f]);
        o.transfers = Object.entries(sp.transfers).map(([k, rows]) => [k, enc(rows)]);
        return decode(JSON.stringify(o));
      });
    fc.assert(fc.property(arb, (x) => compareWithOracle(x)), params(300));
  });
});

/**
 * The patch §7 prescribes for a successful mutation on `view`, built from the spec's text over the
 * canonical encoding (own slots at absolute values ⊔ witness §7.1 / drain witness / checkpoint).
 */
function expectedPatch(view: EntitlementLedger, op: readonly unknown[], captured?: { replica: string; path: string[] }): EntitlementLedger {
  const O = oracleOf(view);
  const rd = oracleReads(O);
  const full = JSON.parse(view.encode()) as Record<string, [string, unknown][]>;
  const weights = new Map<string, [bigint, bigint]>();
  for (const [e, rs] of full.records ?? []) {
    const r = (rs as string[][])[0]!;
    if ((rs as unknown[]).length === 1) weights.set(e, [BigInt(r[2]!), BigInt(r[3]!)]);
  }
  const gaugeOf = (e: string): { floor: Rational; folded: bigint } | undefined => {
    const g = O.gauges.get(e) as string[] | undefined;
    return g && { floor: Rational.of(BigInt(g[0]!), BigInt(g[1]!)), folded: BigInt(g[2]!) };
  };
  const cnt = { issued: new Map(), returned: new Map(), leafSpent: new Map(), rollupSpent: new Map() } as Record<
    "issued" | "returned" | "leafSpent" | "rollupSpent",
    Map<string, Map<string, bigint>>
  >;
  const tr = new Map<string, Map<string, Map<string, bigint>>>();
  const mints = new Map<string, [string, string, bigint]>();
  const gauges = new Map<string, { floor: Rational; folded: bigint }>();
  const life = new Map<string, string>();
  const recs = new Map<string, string[]>();
  const put = (f: keyof typeof cnt, e: string, r: string, v: bigint): void => {
    if (v <= 0n) return;
    if (!cnt[f].has(e)) cnt[f].set(e, new Map());
    const m = cnt[f].get(e)!;
    if ((m.get(r) ?? 0n) < v) m.set(r, v);
  };
  const putT = (k: string, d: string, x: string, v: bigint): void => {
    if (v <= 0n) return;
    if (!tr.has(k)) tr.set(k, new Map());
    const rows = tr.get(k)!;
    if (!rows.has(d)) rows.set(d, new Map());
    const row = rows.get(d)!;
    if ((row.get(x) ?? 0n) < v) row.set(x, v);
  };
  const putG = (e: string, g: { floor: Rational; folded: bigint }): void => {
    const cur = gauges.get(e);
    // §3.8 join, floors compared by exact cross products (README "Deviations": the join never throws)
    const floor = cur === undefined || g.floor.num * cur.floor.den > cur.floor.num * g.floor.den ? g.floor : cur.floor;
    gauges.set(e, cur === undefined ? g : { floor, folded: cur.folded > g.folded ? cur.folded : g.folded });
  };
  const sl = (f: keyof typeof cnt, e: string, r: string): bigint => O.c[f].get(e)?.get(r) ?? 0n;
  const T = (k: string, d: string, x: string): bigint => O.t.get(k)?.get(d)?.get(x) ?? 0n;
  const mintsOf = (h: string): void => {
    for (const [id, m] of O.mints) if (m[1] === h) mints.set(id, m);
  };
  const witness = (actor: string, path: readonly string[]): void => {
    const iss = new Set<string>();
    for (const e of path) {
      if (sl("issued", e, actor) > 0n) iss.add(e);
      for (const f of ["issued", "returned", "leafSpent", "rollupSpent"] as const) put(f, e, actor, sl(f, e, actor));
    }
    mintsOf(actor);
    for (let j = 0; j <= path.length; j++) {
      const K = j === 0 ? "" : path[j - 1]!;
      const rows = O.t.get(K);
      if (!rows) continue;
      for (const [x, v] of rows.get(actor) ?? []) putT(K, actor, x, v);
      for (const d of rows.keys()) {
        if (d === actor) continue;
        const x = T(K, d, actor);
        if (x <= 0n) continue;
        putT(K, d, actor, x);
        mintsOf(d);
        for (let i = 1; i <= j; i++) {
          const e = path[i - 1]!;
          if (sl("issued", e, d) > 0n) iss.add(e);
          put("issued", e, d, sl("issued", e, d));
          put("returned", e, d, sl("returned", e, d));
        }
      }
    }
    for (const e of iss) {
      const g = gaugeOf(e);
      if (g) putG(e, g);
    }
  };
  const recOf = (e: string): [string, string] => O.records.get(e)![0]!;
  const baseIss = (e: string): bigint => [...(O.c.issued.get(e)?.values() ?? [])].reduce((a, b) => a + b, 0n);
  const per = (u: bigint, e: string): Rational => Rational.perWeight(u, Weight.of(...weights.get(e)!));
  const charge = (r: string, path: readonly string[], a: bigint): void => {
    const k = path.length - 1;
    put("leafSpent", path[k]!, r, sl("leafSpent", path[k]!, r) + a);
    for (let i = 0; i < k; i++) put("rollupSpent", path[i]!, r, sl("rollupSpent", path[i]!, r) + a);
    witness(r, path);
  };
  switch (op[0]) {
    case "prepare":
      recs.set(op[1] as string, [op[2] as string, op[3] as string, (op[4] as bigint).toString(), "1"]);
      life.set(op[1] as string, "PREPARED");
      break;
    case "activate":
      life.set(op[1] as string, "ACTIVE");
      break;
    case "close":
      life.set(op[1] as string, "CLOSING");
      break;
    case "retire": {
      const e = op[1] as string;
      life.set(e, "RETIRED");
      const writers = new Set<string>();
      for (const f of ["issued", "returned", "leafSpent", "rollupSpent"] as const) {
        for (const [r, v] of O.c[f].get(e) ?? []) {
          put(f, e, r, v);
          writers.add(r);
        }
      }
      for (const w of writers) mintsOf(w);
      const g = gaugeOf(e);
      if (g) putG(e, g);
      break;
    }
    case "seat": {
      const e = op[1] as string;
      const obs = baseIss(e);
      putG(e, { floor: Rational.max(Rational.of(op[2] as bigint, 2n), per(obs, e)), folded: obs });
      break;
    }
    case "delegate": {
      const [, r, e, a] = op as [string, string, string, bigint];
      put("issued", e, r, sl("issued", e, r) + a);
      for (const f of ["returned", "leafSpent", "rollupSpent"] as const) put(f, e, r, sl(f, e, r));
      const after = baseIss(e) + a;
      const g = gaugeOf(e);
      putG(e, { floor: g === undefined ? per(after, e) : g.floor.add(per(after - g.folded, e)), folded: after });
      witness(r, rd.walk(recOf(e)[0]).path!);
      break;
    }
    case "release": {
      const [, r, e, a] = op as [string, string, string, bigint];
      put("returned", e, r, sl("returned", e, r) + a);
      witness(r, rd.walk(recOf(e)[1]).path!);
      break;
    }
    case "transfer": {
      const [, g, from, to, a] = op as [string, string, string, string, bigint];
      const path = rd.walk(g).path!;
      const k = path.length === 0 ? "" : path[path.length - 1]!;
      putT(k, from, to, T(k, from, to) + a);
      witness(from, path);
      break;
    }
    case "spend": {
      const [, r, g, a] = op as [string, string, string, bigint];
      if (a > 0n) charge(r, rd.walk(g).path!, a);
      break;
    }
    case "charge":
      if ((op[1] as bigint) > 0n) charge(captured!.replica, captured!.path, op[1] as bigint);
      break;
    case "mint":
      mints.set(op[1] as string, ["root", op[2] as string, op[3] as bigint]);
      break;
  }
  const o: Record<string, unknown> = { format: "heddle-ledger/1" };
  o.records = [...recs].map(([e, r]) => [e, [r]]);
  o.mints = [...mints].map(([id, [r, h, a]]) => [id, [r, h, a.toString()]]);
  for (const f of ["issued", "returned", "leafSpent", "rollupSpent"] as const) {
    o[f] = [...cnt[f]].map(([e, m]) => [e, [...m].map(([r, v]) => [r, v.toString()])]);
  }
  o.transfers = [...tr].map(([k, rows]) => [k, [...rows].map(([d, row]) => [d, [...row].map(([x, v]) => [x, v.toString()])])]);
  o.lifecycle = [...life];
  o.gauges = [...gauges].map(([e, g]) => [e, [g.floor.num.toString(), g.floor.den.toString(), g.folded.toString()]]);
  return decode(JSON.stringify(o));
}

/** The outcome §7 prescribes for `op` on `view`: "ok" or the refusal kind, checks in the listed order. */
function expectedOutcome(view: EntitlementLedger, op: readonly unknown[], chargePath?: readonly string[]): string {
  const O = oracleOf(view);
  const o = oracleReads(O);
  const single = (e: string): string | undefined => {
    const n = O.records.get(e)?.length ?? 0;
    return n === 0 ? "UnknownEdge" : n > 1 ? "DivergentRecord" : undefined;
  };
  switch (op[0]) {
    case "prepare": {
      const [, id, p, c] = op as [string, string, string, string];
      if (p === c) return "InvalidArgument";
      if (o.known.has(id)) return "AlreadyKnown";
      if (o.roots.includes(c)) return "ChildIsRoot";
      return "ok";
    }
    case "activate": {
      const e = op[1] as string;
      const bad = single(e);
      if (bad) return bad;
      if (o.lc(e) !== "PREPARED" && o.lc(e) !== "ACTIVE") return "WrongLifecycle";
      const [p, c] = o.rec(e)!;
      if (o.inbound(c).some((x) => x !== e && o.live(x))) return "InboundAlreadyLive";
      const seen = new Set<string>();
      let cur = p;
      for (;;) {
        if (cur === c) return "WouldCreateCycle";
        if (seen.has(cur)) break;
        seen.add(cur);
        const li = o.inbound(cur).filter(o.live);
        if (li.length !== 1 || o.rec(li[0]!) === undefined) break;
        cur = o.rec(li[0]!)![0];
      }
      return "ok";
    }
    case "close": {
      const e = op[1] as string;
      return single(e) ?? (o.live(e) ? "ok" : "WrongLifecycle");
    }
    case "retire": {
      const e = op[1] as string;
      const bad = single(e);
      if (bad) return bad;
      if (o.lc(e) !== "CLOSING" && o.lc(e) !== "PREPARED") return "WrongLifecycle";
      return o.replicas.some((r) => o.pos(e, r) !== 0n) ? "NotDrained" : "ok";
    }
    case "seat": {
      const e = op[1] as string;
      return single(e) ?? (O.gauges.has(e) ? "AlreadySeated" : "ok");
    }
    case "delegate": {
      const [, r, e, a] = op as [string, string, string, bigint];
      if (a < 1n) return "InvalidArgument";
      const bad = single(e);
      if (bad) return bad;
      if (o.lc(e) !== "ACTIVE") return "WrongLifecycle";
      const [p, c] = o.rec(e)!;
      if (o.walk(c).path === null) return "ChildQuarantined";
      if (o.walk(p).path === null) return "Quarantined";
      return a > o.holdings(p, r) ? "InsufficientHoldings" : "ok";
    }
    case "release": {
      const [, r, e, a] = op as [string, string, string, bigint];
      if (a < 1n) return "InvalidArgument";
      const bad = single(e);
      if (bad) return bad;
      const c = o.rec(e)![1];
      const L = o.walk(c).path;
      if (L === null) return "Quarantined";
      if (L[L.length - 1] !== e) return "NotLiveInbound";
      return a > o.holdings(c, r) ? "InsufficientHoldings" : "ok";
    }
    case "transfer": {
      const [, g, from, to, a] = op as [string, string, string, string, bigint];
      if (from === to || a < 1n) return "InvalidArgument";
      if (o.walk(g).path === null) return "Quarantined";
      return a > o.holdings(g, from) ? "InsufficientHoldings" : "ok";
    }
    case "spend": {
      const [, r, g, a] = op as [string, string, string, bigint];
      if (o.childEdges(g).length > 0) return "NotALeaf";
      if (a === 0n) return "ok";
      const L = o.walk(g).path;
      if (L === null) return "Quarantined";
      if (L.length === 0) return "RootHasNoEdge";
      return a > o.holdings(g, r) ? "InsufficientHoldings" : "ok";
    }
    case "charge": {
      if ((op[2] as bigint) === 0n) return "ok";
      if (chargePath!.length === 0) return "EmptyPath";
      // ⟨1.1⟩ a captured path starts at the root (lineageOf only captures such paths)
      return O.records.get(chargePath![0]!)!.some(([p]) => o.roots.includes(p)) ? "ok" : "MalformedPath";
    }
    case "mint": {
      const [, id, h, a] = op as [string, string, string, bigint];
      const cur = O.mints.get(id);
      if (cur !== undefined && (cur[0] !== "root" || cur[1] !== h || cur[2] !== a)) return "MintIdInUse";
      if (!(o.roots.length === 0 || (o.roots.length === 1 && o.roots[0] === "root"))) return "ForeignRoot";
      return o.inbound("root").length > 0 ? "NotARoot" : "ok";
    }
  }
  throw new Error(`unknown op ${String(op[0])}`);
}

describe("§7.1 witness guarantee and §6.5 local safety in honest runs without transfers", () => {
  it("I-16/I-6 every ok patch alone on EMPTY and on topology+mints validates clean; holdings never negative; final report empty", () => {
    const honestOp = opArb.filter((op) => op[0] !== "transfer" && op[0] !== "capture" && op[0] !== "charge");
    fc.assert(
      fc.property(fc.array(honestOp, { minLength: 1, maxLength: 80, size: "max" }), (ops) => {
        let v = EntitlementLedger.bootstrap(G("root"), new Map([[R("p"), 100n], [R("q"), 60n]]), "genesis");
        for (const [e, par, ch] of [["e0", "root", "a"], ["e1", "a", "b"], ["e2", "root", "c"]] as const) {
          v = v.join(ok(v.prepare({ id: E(e), parent: G(par), child: G(ch), weight: Weight.ONE })));
          v = v.join(ok(v.activate(E(e))));
        }
        for (const op of ops) {
          let res: ReturnType<EntitlementLedger["spend"]>;
          switch (op[0]) {
            case "prepare":
              res = v.prepare({ id: E(op[1]), parent: G(op[2]), child: G(op[3]), weight: Weight.of(op[4]) });
              break;
            case "activate":
              res = v.activate(E(op[1]));
              break;
            case "close":
              res = v.close(E(op[1])); // ⟨1.1⟩ refused on PREPARED, so no honest close forks or loops
              break;
            case "retire":
              res = v.retire(E(op[1]));
              break;
            case "seat":
              res = v.seat(E(op[1]), Rational.of(op[2], 2n));
              break;
            case "delegate":
              res = v.delegate(R(op[1]), E(op[2]), op[3]);
              break;
            case "release":
              res = v.release(R(op[1]), E(op[2]), op[3]);
              break;
            case "spend":
              res = v.spend(R(op[1]), G(op[2]), op[3]);
              break;
            case "mint":
              res = v.mint(M(op[1]), G("root"), R(op[2]), op[3]);
              break;
            default:
              continue;
          }
          if (!res.ok) continue;
          const o = JSON.parse(v.encode()) as Record<string, unknown>;
          const base = decode(JSON.stringify({ format: o.format, records: o.records ?? [], mints: o.mints ?? [], lifecycle: o.lifecycle ?? [] }));
          expect(EntitlementLedger.EMPTY.join(res.patch).validate(), `patch of ${show(op)} on EMPTY`).toEqual([]);
          expect(base.join(res.patch).validate(), `patch of ${show(op)} on topology+mints`).toEqual([]);
          v = v.join(res.patch);
          for (const g of v.groups()) for (const r of v.replicas()) expect(v.holdings(g, r)).toBeGreaterThanOrEqual(0n);
        }
        expect(v.validate()).toEqual([]);
      }),
      params(150),
    );
  });
});

describe("Rational against policy.md §2.2 written out literally", () => {
  it("policy §2.2 of/add/sub/mul/div/compare/max/ceil agree with a literal checked-64-bit oracle, including where they throw", () => {
    const gcdO = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcdO(b, a % b));
    const ofO = (n: bigint, d: bigint): [bigint, bigint] => {
      if (d === 0n) throw new RangeError("div0");
      if (d < 0n) {
        n = ck(-n);
        d = ck(-d);
      }
      if (n === 0n) return [0n, 1n];
      const g = gcdO(ck(n < 0n ? -n : n), d);
      return [n / g, d / g];
    };
    const part = fc.oneof(
      fc.bigInt({ min: -20n, max: 20n }),
      fc.constantFrom(MAXI, MAXI - 1n, -MAXI, MINI, 1n << 62n, -(1n << 62n), 3037000493n, 3037000499n, 3037000507n),
    );
    const run = (f: () => unknown): string => {
      try {
        const v = f();
        return v instanceof Rational ? `${v.num}/${v.den}` : Array.isArray(v) ? `${v[0]}/${v[1]}` : String(v);
      } catch (e) {
        if (e instanceof Overflow || e instanceof LedgerOverflowError) return "overflow";
        if (e instanceof RangeError && (e.message === "div0" || e.name === "DivisionByZeroError")) return "div0";
        throw e;
      }
    };
    fc.assert(
      fc.property(part, part, part, part, (an, ad, bn, bd) => {
        expect(run(() => Rational.of(an, ad))).toBe(run(() => ofO(an, ad)));
        let A: [bigint, bigint], B: [bigint, bigint];
        try {
          A = ofO(an, ad);
          B = ofO(bn, bd);
        } catch {
          return;
        }
        const a = Rational.of(...A);
        const b = Rational.of(...B);
        const [p, q] = A;
        const [r, t] = B;
        expect(run(() => a.add(b))).toBe(run(() => ofO(ck(ck(p * t) + ck(r * q)), ck(q * t))));
        expect(run(() => a.sub(b))).toBe(run(() => ofO(ck(ck(p * t) - ck(r * q)), ck(q * t))));
        expect(run(() => a.mul(b))).toBe(run(() => ofO(ck(p * r), ck(q * t))));
        expect(run(() => a.div(b))).toBe(run(() => { if (r === 0n) throw new RangeError("div0"); return ofO(ck(p * t), ck(q * r)); }));
        const cmpO = (): number => { const l = ck(p * t); const m = ck(r * q); return l < m ? -1 : l > m ? 1 : 0; };
        expect(run(() => a.compare(b))).toBe(run(cmpO));
        expect(run(() => Rational.max(a, b))).toBe(run(() => (cmpO() >= 0 ? A : B)));
        const fl = p / q;
        expect(a.ceil()).toBe(p > 0n && fl * q !== p ? fl + 1n : fl);
        expect(a.equals(Rational.of(...A))).toBe(true);
        expect(a.toString()).toBe(`${p}/${q}`);
      }),
      params(2000),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Single behaviours the spec fixes, each once found wrong in review.
// ---------------------------------------------------------------------------------------------

import { DivisionByZeroError, MAX } from "../src/index.ts";
import { refused } from "./arbitraries.ts";

describe("LedgerReplica index (§5.1)", () => {
  it("§5.1 replicas() = mint holders ∪ slot owners ∪ transfer parties: a mint replaced by the per-key max (§4.1, §9 'the larger wins') no longer names its old holder", () => {
    const a = decode(`{${F},"mints":[["m",["root","alice","5"]]]}`);
    const b = decode(`{${F},"mints":[["m",["root","bob","5"]]]}`);
    const joined = a.join(b);
    expect(joined.replicas()).toEqual([R("bob")]);
    const rep = new LedgerReplica(a).apply(b);
    expect(rep.encode()).toBe(joined.encode());
    expect(rep.replicas()).toEqual(joined.replicas());
  });
});

describe("§2.3 LedgerOverflowError leaves LedgerReplica untouched", () => {
  // floor (2^62)/1 joined with floor 1/2: a checked compare's cross product 2^62 × 2 leaves I64
  // (§3.4). Applying this patch used to throw (pinned here as intended); the gauge join now compares
  // floors exactly, because a join that throws in some merge orders only splits replicas for good
  // (README "Deviations"). The replica's apply must agree with the immutable join.
  const base = `{${F},"issued":[["e",[["alice","1"]]]],"gauges":[["e",["${1n << 62n}","1","0"]]]}`;
  const patch = `{${F},"issued":[["e",[["alice","7"]]]],"gauges":[["e",["1","2","0"]]]}`;

  it("§3.8 LedgerReplica.apply of a patch whose floors a checked compare cannot order joins like the immutable join", () => {
    const rep = new LedgerReplica(decode(base));
    rep.apply(decode(patch));
    expect(rep.encode()).toBe(decode(base).join(decode(patch)).encode());
    expect(rep.encode()).toBe(`{${F},"issued":[["e",[["alice","7"]]]],"gauges":[["e",["${1n << 62n}","1","0"]]]}`);
  });

  it("§2.3/§7.6 a LedgerReplica delegate that throws LedgerOverflowError leaves the replica unchanged (no issued bump without its checkpoint)", () => {
    // weight 2/1 so a grant of 1 advances the floor by 1/2; floor MAX/3: the checkpoint
    // MAX/3 + 1/2 = (MAX×2 + 1×3)/6 leaves I64 at MAX×2 (§2.1), so the mutator itself throws.
    // (Before the gauge join compared exactly, this test used floor n/3 with 6n > MAX ≥ 2n + 3,
    // where only the join of the checkpoint threw; that join now succeeds.)
    const text =
      `{${F},"records":[["e",[["root","c","2","1"]]]],"mints":[["m",["root","alice","10"]]],` +
      `"lifecycle":[["e","ACTIVE"]],"gauges":[["e",["${MAX}","3","0"]]]}`;
    const view = decode(text);
    expect(() => view.delegate(R("alice"), E("e"), 1n)).toThrow(LedgerOverflowError);
    const rep = new LedgerReplica(view);
    const before = rep.encode();
    expect(() => rep.delegate(R("alice"), E("e"), 1n)).toThrow(LedgerOverflowError);
    expect(rep.encode()).toBe(before);
  });

  it("§3.8/§7.6 a checkpoint the old checked join could not order with the seated floor now lands: floor n/3 → (2n+3)/6", () => {
    const n = (MAX / 4n) | 1n;
    const text =
      `{${F},"records":[["e",[["root","c","2","1"]]]],"mints":[["m",["root","alice","10"]]],` +
      `"lifecycle":[["e","ACTIVE"]],"gauges":[["e",["${n}","3","0"]]]}`;
    const view = decode(text);
    const joined = view.join(ok(view.delegate(R("alice"), E("e"), 1n)));
    expect(joined.gauge(E("e"))!.floor.toString()).toBe(`${2n * n + 3n}/6`);
    const rep = new LedgerReplica(view);
    rep.delegate(R("alice"), E("e"), 1n);
    expect(rep.encode()).toBe(joined.encode());
  });
});

describe("Rational (ledger.md §3.4, policy.md §2.2)", () => {
  it("policy §2.2 Rational.of: 'd = 0 → DivisionByZeroError' is the first check, whatever n is", () => {
    expect(() => Rational.of(1n << 63n, 0n)).toThrow(DivisionByZeroError);
    expect(() => Rational.of(-(1n << 64n), 0n)).toThrow(DivisionByZeroError);
  });
});

describe("§7.0/§7.10 chargeCaptured argument validation", () => {
  it("§7.0 'InvalidArgument covers … an empty or malformed id': a captured path with a hole is InvalidArgument, not MalformedPath", () => {
    const view = decode(`{${F},"records":[["e1",[["root","a","1","1"]]]],"lifecycle":[["e1","ACTIVE"]]}`);
    // eslint-disable-next-line no-sparse-arrays
    const holey = [, E("e1")] as unknown as AttachmentId[];
    expect(refused(view.chargeCaptured(R("alice"), holey, 1n)).kind).toBe("InvalidArgument");
  });
});

describe("§10 decode repairs", () => {
  it("§10 'zero counter slots and empty inner lists → dropped': an empty record list is dropped like any other empty inner list", () => {
    const x = decode(`{${F},"records":[["e1",[]],["e2",[["p","q","1","1"]]]]}`);
    expect(x.encode()).toBe(`{${F},"records":[["e2",[["p","q","1","1"]]]]}`);
  });
});
