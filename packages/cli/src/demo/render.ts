import { edgeId } from "@heddle/node";
import type { DemoOptions } from "./options.ts";
import type { PeerReport } from "./protocol.ts";
import { LANES, laneGroup, parents, ROOT, TENANTS } from "./scenario.ts";

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

/** Committed service of every child against its weighted share, from one peer's view. */
export function shareRows(s: Status, o: DemoOptions): ShareRow[] {
  const rows: ShareRow[] = [];
  for (const parent of parents()) {
    const kids = childrenOf(parent);
    const c = kids.map((k) => BigInt(s.edges[edgeId(parent, k)]?.committed ?? "0"));
    const w = kids.map((k) => weightOf(o, parent, k));
    const T = c.reduce((a, b) => a + b, 0n);
    const W = w.reduce((a, b) => a + b, 0n);
    kids.forEach((k, i) => {
      // fair = w·T/W; deviation = ceil(|c·W − w·T| / W)
      const diff = c[i]! * W - w[i]! * T;
      const abs = diff < 0n ? -diff : diff;
      rows.push({ parent, child: k, weight: w[i]!, committed: c[i]!, fairNum: w[i]! * T, fairDen: W, deviation: (abs + W - 1n) / W });
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
  lines.push(`heddle demo — ${peers.length} peers, ${elapsedS.toFixed(1)} s of ${o.durationS} s, seed ${o.seed}, tenants ${o.tenantWeights.join(":")}, lanes ${o.laneWeights.join(":")}`);
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
        lines.push(`    ${pad(r.child, 22)}${pad(r.weight, 7, true)}${pad(r.committed, 11, true)}${pad(pct(r.committed, T), 8, true)}${pad(pct(r.weight, W), 8, true)}${pad(r.deviation, 11, true)}`);
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

/** The checks the demo's exit status rests on, over every peer's last report. */
export function finalChecks(peers: PeerView[], converged: boolean, o: DemoOptions): Check[] {
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
    for (const b of ref.bounds) {
      const worst = rows.filter((r) => r.parent === b.parent).reduce((m, r) => (r.deviation > m ? r.deviation : m), 0n);
      checks.push({
        what: `children of ${b.parent} within the reported bound of their weighted share`,
        ok: worst <= BigInt(b.currentBound) && b.isConsistent,
        detail: `worst deviation ${worst} ≤ current bound ${b.currentBound} (observed ${b.observedDeviation}, configured worst case ${b.configuredWorstCase})`,
      });
    }
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
      const T = sib.reduce((a, x) => a + x.committed, 0n);
      const W = sib.reduce((a, x) => a + x.weight, 0n);
      lines.push(`  ${pad(r.parent, 10)}${pad(r.child, 24)}${pad(r.weight, 7, true)}${pad(r.committed, 11, true)}${pad(pct(r.committed, T), 8, true)}${pad(pct(r.weight, W), 8, true)}${pad(r.deviation, 11, true)}`);
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
