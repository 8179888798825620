import { edgeId } from "@heddle/node";
import type { DemoOptions } from "./options.ts";
import type { PeerReport } from "./protocol.ts";
import { GRANTS_PER_SCHEDULE, LANES, laneGroup, parents, QUANTUM, ROOT, TENANTS } from "./scenario.ts";

type Status = Extract<PeerReport, { type: "status" }>;

/** What the orchestrator knows of one peer. */
export interface PeerView {
  index: number;
  id: string;
  state: "starting" | "up" | "cut" | "killed";
  status: Status | null;
  restarts: number;
  restored: number;
}

/** One row of the fairness table: a child of `parent`. */
export interface ShareRow {
  parent: string;
  child: string;
  /** The edge generation carrying it (a governed reshape moves a child to a new one). */
  edge: string;
  weight: bigint;
  committed: bigint;
  /** Weighted fair share of the siblings' total, exact as num/den. */
  fairNum: bigint;
  fairDen: bigint;
  /** |committed − fair|, rounded up. */
  deviation: bigint;
}

function childrenOf(parent: string): string[] {
  return parent === ROOT ? [...TENANTS] : LANES.map((l) => laneGroup(parent, l));
}

function weightOf(o: DemoOptions, parent: string, child: string): bigint {
  if (parent === ROOT) return o.tenantWeights[TENANTS.indexOf(child as (typeof TENANTS)[number])]!;
  return o.laneWeights[LANES.findIndex((l) => laneGroup(parent, l) === child)]!;
}

/**
 * The edge generation that currently carries `parent → child` in a peer's view, and its weight: the live one
 * (ACTIVE or CLOSING), else the newest known. A governed reshape adds generations (`edgeId(p, c, 2)`); a static
 * run has one.
 */
export function currentEdge(s: Status, parent: string, child: string, o: DemoOptions): { id: string; weight: bigint; lifecycle: string } {
  const gens = Object.entries(s.records ?? {})
    .filter(([, r]) => r.parent === parent && r.child === child)
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const live = gens.filter(([, r]) => r.lifecycle === "ACTIVE" || r.lifecycle === "CLOSING");
  const pick = live[live.length - 1] ?? gens[gens.length - 1];
  if (pick === undefined) return { id: edgeId(parent, child), weight: weightOf(o, parent, child), lifecycle: "—" };
  const [num, den] = pick[1].weight.split("/");
  return { id: pick[0], weight: BigInt(num!) / BigInt(den ?? "1"), lifecycle: pick[1].lifecycle };
}

/** How a row names its child: with the edge generation when a reshape moved it past the first. */
function childLabel(r: ShareRow): string {
  const first = edgeId(r.parent, r.child);
  return r.edge === first ? r.child : `${r.child} (gen ${r.edge.slice(first.length + 1)})`;
}

/** Committed service of every child against its weighted share, from one peer's view. */
export function shareRows(s: Status, o: DemoOptions): ShareRow[] {
  const rows: ShareRow[] = [];
  for (const parent of parents()) {
    const kids = childrenOf(parent);
    const cur = kids.map((k) => currentEdge(s, parent, k, o));
    const c = cur.map((e) => BigInt(s.edges[e.id]?.committed ?? "0"));
    const w = cur.map((e) => e.weight);
    const T = c.reduce((a, b) => a + b, 0n);
    const W = w.reduce((a, b) => a + b, 0n);
    kids.forEach((k, i) => {
      // fair = w·T/W; deviation = ceil(|c·W − w·T| / W)
      const diff = c[i]! * W - w[i]! * T;
      const abs = diff < 0n ? -diff : diff;
      rows.push({ parent, child: k, edge: cur[i]!.id, weight: w[i]!, committed: c[i]!, fairNum: w[i]! * T, fairDen: W, deviation: W === 0n ? 0n : (abs + W - 1n) / W });
    });
  }
  return rows;
}

function pct(num: bigint, den: bigint): string {
  if (den === 0n) return "   —  ";
  return `${(Number((num * 10_000n) / den) / 100).toFixed(1).padStart(5)}%`;
}

function pad(s: string | number | bigint, n: number, right = false): string {
  const t = String(s);
  return right ? t.padStart(n) : t.padEnd(n);
}

/** The live screen (or, with `oneLine`, a compact progress line for logs). */
export function renderLive(peers: PeerView[], events: string[], elapsedS: number, o: DemoOptions, oneLine = false): string {
  const ref = peers.find((p) => p.state === "up" && p.status !== null)?.status ?? null;
  if (oneLine) {
    const parts = [`t=${elapsedS.toFixed(0)}s`];
    if (ref !== null) {
      for (const r of shareRows(ref, o)) {
        if (r.parent !== ROOT) parts.push(`${r.child}=${r.committed}`);
      }
    }
    parts.push(peers.map((p) => `p${p.index}:${p.state}`).join(","));
    return [...events, parts.join("  ")].join("\n");
  }
  const lines: string[] = [];
  const tw = ref === null ? o.tenantWeights : TENANTS.map((t) => currentEdge(ref, ROOT, t, o).weight);
  lines.push(`heddle demo${o.governed ? " --governed" : ""} — ${peers.length} peers, ${elapsedS.toFixed(1)} s of ${o.durationS} s, seed ${o.seed}, tenants ${tw.join(":")}, lanes ${o.laneWeights.join(":")}`);
  lines.push("");
  if (ref === null) lines.push("waiting for the first report…");
  else {
    lines.push(`committed service (issued − returned), as seen by peer ${ref.index}`);
    lines.push(`  ${pad("group", 24)}${pad("weight", 7, true)}${pad("committed", 11, true)}${pad("share", 8, true)}${pad("fair", 8, true)}${pad("deviation", 11, true)}`);
    const rows = shareRows(ref, o);
    for (const parent of parents()) {
      const sib = rows.filter((r) => r.parent === parent);
      const T = sib.reduce((a, r) => a + r.committed, 0n);
      const W = sib.reduce((a, r) => a + r.weight, 0n);
      lines.push(`  under ${parent}`);
      for (const r of sib) {
        lines.push(`    ${pad(childLabel(r), 22)}${pad(r.weight, 7, true)}${pad(r.committed, 11, true)}${pad(pct(r.committed, T), 8, true)}${pad(pct(r.weight, W), 8, true)}${pad(r.deviation, 11, true)}`);
      }
    }
  }
  lines.push("");
  lines.push(`  ${pad("peer", 6)}${pad("state", 9)}${pad("charged", 10, true)}${pad("items", 8, true)}${pad("ledger", 18, true)}  unreachable`);
  for (const p of peers) {
    const s = p.status;
    const state = p.state === "up" && p.restarts > 0 ? "restarted" : p.state;
    lines.push(
      `  ${pad(p.index, 6)}${pad(state, 9)}${pad(s?.charged ?? "—", 10, true)}${pad(s?.completions ?? "—", 8, true)}${pad(s?.digest ?? "—", 18, true)}  ${s === null ? "" : s.unreachable.map((u) => `p${peers.findIndex((q) => q.id === u)}`).join(" ")}`,
    );
  }
  lines.push("");
  lines.push(...events.slice(-8));
  return lines.join("\n");
}

/** One final check and whether it passed. */
export interface Check {
  what: string;
  ok: boolean;
  detail: string;
}

/**
 * The checks the demo's exit status rests on, over every peer's last report.
 *
 * The fairness check is node.md §16 A11's settled form, `observedDeviation ≤ H + N·g·q`: `H` the most
 * entitlement peer 0 ever saw steerable at that parent during the run (`peakSteerable`), `N` the roster and `g`
 * the quanta each peer grants per `schedule` call (A11 schedules one quantum at a time, `g = 1`). Not
 * `currentBound` (`steerable + q`): that is a single scheduler's bound; peers that read the same committed
 * service pick the same winners (EEVDF is deterministic), so up to `N·g` quanta can land on one child before
 * anyone hears of the others, and once the parent's holdings are spent nothing can even it out again.
 */
export function finalChecks(peers: PeerView[], converged: boolean, o: DemoOptions, peakSteerable: ReadonlyMap<string, bigint> = new Map()): Check[] {
  const checks: Check[] = [];
  checks.push({ what: "every peer converged to byte-identical ledgers", ok: converged, detail: [...new Set(peers.map((p) => p.status?.digest ?? "none"))].join(", ") });
  for (const p of peers) {
    const s = p.status;
    if (s === null) {
      checks.push({ what: `peer ${p.index} reported`, ok: false, detail: "no report" });
      continue;
    }
    const c = s.conservation;
    checks.push({ what: `peer ${p.index}: minted = Σ holdings + Σ leaf-spent`, ok: c.ok, detail: `${c.minted} = ${c.held} + ${c.leafSpent}` });
    checks.push({ what: `peer ${p.index}: validate() is empty, no negative holdings`, ok: s.conflicts.length === 0 && s.negativeHoldings === 0, detail: s.conflicts.join(", ") || "none" });
  }
  const ref = peers[0]?.status;
  if (ref) {
    const rows = shareRows(ref, o);
    const q = QUANTUM;
    for (const b of ref.bounds) {
      const worst = rows.filter((r) => r.parent === b.parent).reduce((m, r) => (r.deviation > m ? r.deviation : m), 0n);
      const steerableNow = BigInt(b.currentBound) - q;
      const peak = peakSteerable.get(b.parent) ?? 0n;
      const H = peak > steerableNow ? peak : steerableNow;
      const n = BigInt(b.roster);
      const g = BigInt(GRANTS_PER_SCHEDULE);
      const bound = H + n * g * q;
      checks.push({
        what: `children of ${b.parent} within the settled bound H + N·g·q of their weighted share`,
        ok: worst <= bound && BigInt(b.currentBound) <= BigInt(b.configuredWorstCase),
        detail: `worst deviation ${worst} ≤ ${H} + ${n}·${g}·${q} = ${bound} (H: peak steerable seen by peer 0; now: current bound ${b.currentBound}, configured worst case ${b.configuredWorstCase})`,
      });
    }
  }
  return checks;
}

/**
 * Governed mode's checks: every control act of the setup and of the reshape applied, and on every peer the old
 * tenant generations are RETIRED with nothing outstanding while the new ones are ACTIVE with the new weights, the
 * minted total is what the log minted, and the writer gate is open.
 */
export function governedChecks(peers: PeerView[], log: readonly { step: string; ok: boolean; detail: string }[], o: DemoOptions, supplyPerPeer: bigint): Check[] {
  const checks: Check[] = [];
  const failed = log.filter((x) => !x.ok);
  checks.push({ what: "every control act (mints, tree, reshape) applied through the log", ok: failed.length === 0 && log.length > 0, detail: failed.length === 0 ? `${log.length} acts` : failed.map((x) => `${x.step}: ${x.detail}`).join("; ") });
  const reshaped = log.some((x) => x.step === `activate ${edgeId(ROOT, TENANTS[1], 2)}` && x.ok);
  checks.push({ what: "the tenant weights changed midway by the reshape recipe", ok: reshaped, detail: reshaped ? `now ${o.reshapeWeights!.join(":")}` : "the reshape did not finish" });
  for (const p of peers) {
    const s = p.status;
    if (s === null) continue;
    const problems: string[] = [];
    for (const [i, t] of TENANTS.entries()) {
      const old = s.records[edgeId(ROOT, t)];
      const neu = s.records[edgeId(ROOT, t, 2)];
      if (old?.lifecycle !== "RETIRED") problems.push(`${edgeId(ROOT, t)} is ${old?.lifecycle ?? "unknown"}`);
      if ((s.edges[edgeId(ROOT, t)]?.outstanding ?? "0") !== "0") problems.push(`${edgeId(ROOT, t)} has ${s.edges[edgeId(ROOT, t)]!.outstanding} outstanding`);
      if (neu?.lifecycle !== "ACTIVE" || neu.weight !== `${o.reshapeWeights![i]}/1`) problems.push(`${edgeId(ROOT, t, 2)} is ${neu?.lifecycle ?? "unknown"} weight ${neu?.weight ?? "?"}`);
    }
    const minted = supplyPerPeer * BigInt(peers.length);
    if (s.conservation.minted !== minted.toString()) problems.push(`minted ${s.conservation.minted}, the log minted ${minted}`);
    if (!s.writable) problems.push("writer gate closed");
    checks.push({ what: `peer ${p.index}: old generations retired and drained, new ones active with the new weights`, ok: problems.length === 0, detail: problems.join("; ") || `control index ${s.controlApplied}` });
  }
  return checks;
}

/** The closing table. */
export function renderFinal(peers: PeerView[], events: string[], checks: Check[], o: DemoOptions): string {
  const lines: string[] = [];
  lines.push("═".repeat(96));
  lines.push("heddle demo — final report");
  lines.push("");
  lines.push(...events);
  const ref = peers[0]?.status;
  if (ref) {
    lines.push("");
    lines.push("share vs weight per group (converged ledger)");
    lines.push(`  ${pad("parent", 10)}${pad("child", 24)}${pad("weight", 7, true)}${pad("committed", 11, true)}${pad("share", 8, true)}${pad("fair", 8, true)}${pad("deviation", 11, true)}`);
    const rows = shareRows(ref, o);
    for (const r of rows) {
      const sib = rows.filter((x) => x.parent === r.parent);
      const child = childLabel(r);
      const T = sib.reduce((a, x) => a + x.committed, 0n);
      const W = sib.reduce((a, x) => a + x.weight, 0n);
      lines.push(`  ${pad(r.parent, 10)}${pad(child, 24)}${pad(r.weight, 7, true)}${pad(r.committed, 11, true)}${pad(pct(r.committed, T), 8, true)}${pad(pct(r.weight, W), 8, true)}${pad(r.deviation, 11, true)}`);
    }
    lines.push("");
    lines.push("bound metrics (peer 0)");
    lines.push(`  ${pad("parent", 10)}${pad("roster", 7, true)}${pad("configured", 13, true)}${pad("current", 10, true)}${pad("observed", 10, true)}  consistent`);
    for (const b of ref.bounds) {
      lines.push(`  ${pad(b.parent, 10)}${pad(b.roster, 7, true)}${pad(b.configuredWorstCase, 13, true)}${pad(b.currentBound, 10, true)}${pad(b.observedDeviation, 10, true)}  ${b.isConsistent ? "yes" : "NO"}`);
    }
  }
  lines.push("");
  lines.push("per peer");
  lines.push(`  ${pad("peer", 6)}${pad("restarts", 9, true)}${pad("charged*", 10, true)}${pad("items*", 8, true)}  frames rejected`);
  for (const p of peers) {
    const s = p.status;
    const rej = s === null ? "—" : Object.entries(s.framesRejected).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(", ") || "0";
    lines.push(`  ${pad(p.index, 6)}${pad(p.restarts, 9, true)}${pad(s?.charged ?? "—", 10, true)}${pad(s?.completions ?? "—", 8, true)}  ${rej}`);
  }
  lines.push("  * by the current process since it (re)started; the ledger's leaf-spent total covers every incarnation");
  lines.push("");
  lines.push("checks");
  for (const c of checks) lines.push(`  ${c.ok ? "✓" : "✗"} ${c.what}: ${c.detail}`);
  lines.push("");
  lines.push(checks.every((c) => c.ok) ? "demo passed" : "demo FAILED");
  return lines.join("\n");
}
