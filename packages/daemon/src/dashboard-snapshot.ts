// What the dashboard shows of one peer, as plain values: a pure read of the peer, taken off the spend path
// (by the throttled refresh of `LiveDashboard`). Every entity is a flat record of scalars, so the Yjs
// writer can touch exactly the fields that changed.
import { AttachmentId, GroupId, type EntitlementLedger } from "@heddle/ledger";
import { treeOf } from "./api.ts";
import { boundsOf } from "./data-plane.ts";
import { peerState, type PeerReads } from "./peer-reads.ts";
import { toWire } from "./wire.ts";

/** One field value in the dashboard document. */
export type Scalar = string | number | boolean | null;
/** One entity: field → value. */
export type Fields = Record<string, Scalar>;

/** Most entities per section (edges, groups, bounds, peers, claims); beyond it the section is cut and says so. */
export const MAX_DASHBOARD_ENTITIES = 2_000;
/** Shares are written rounded to this many decimals: finer changes are invisible and would only churn updates. */
export const SHARE_DECIMALS = 4;

/** The whole dashboard of one peer at one moment. */
export interface DashboardSnapshot {
  /** This peer at a glance. */
  readonly node: Fields;
  /**
   * Per edge (id): parent, child, weight, lifecycle; `fairShare` w/W and `committedShare` c/C among the ACTIVE
   * siblings (as `GET /v1/tree` and `/metrics` report them); `demanding` now; `fairShareDemanding` w/W and
   * `committedShareDemanding` c/T among the siblings demanding now (node.md §11's D, what the tone grades) with
   * `demandingSiblings` = |D|; the bar's `tone`; counters.
   */
  readonly edges: ReadonlyMap<string, Fields>;
  /** Per group: holdings here and in total, earmarked, leaf or not, inbound edge. */
  readonly groups: ReadonlyMap<string, Fields>;
  /** Per parent: the bound triple of node.md §11. */
  readonly bounds: ReadonlyMap<string, Fields>;
  /** Per roster peer: state (self, up, cut off, lost, not connected) and its last liveness event. */
  readonly peers: ReadonlyMap<string, Fields>;
  /** Frames rejected so far, by reason (node.md §4.3). */
  readonly rejected: Fields;
  /** Governed: Raft role, leader, term, commit and applied index; empty on a static peer. */
  readonly raft: Fields;
  /** Governed: every claim held, keyed `key␀holder`. */
  readonly claims: ReadonlyMap<string, Fields>;
}

/** How the dashboard draws an edge's bar: its share of committed service against its fair share. */
export type ShareTone = "ok" | "warn" | "bad" | "idle";
/** Most distance (in share, 0 … 1) between committed and fair share drawn `ok`; up to {@link SHARE_WARN} is `warn`, beyond `bad`. */
export const SHARE_OK = 0.02;
export const SHARE_WARN = 0.1;

/**
 * The tone of an edge's bar from the two shares it is graded by. A child that demands nothing now (`demanding`
 * false: its folded live demand has no `targetOutstanding`, node.md §11's D) is `idle` whatever its share: it is
 * not being treated unfairly, it wants nothing — its siblings' service is the scheduler working, not an alarm.
 * So is one without both shares. `demanding` null (this peer cannot read demand) grades by the shares alone.
 * The shares must be taken over the siblings the child is measured against: {@link dashboardSnapshot} passes
 * those among the demanding siblings (D), as `observedDeviation` measures — so `|c/T − w/W|` here is that
 * child's term of the deviation divided by `T`.
 */
export function shareTone(fairShare: number | null, committedShare: number | null, demanding: boolean | null): ShareTone {
  if (demanding === false || fairShare === null || committedShare === null) return "idle";
  const off = Math.abs(committedShare - fairShare);
  return off <= SHARE_OK ? "ok" : off <= SHARE_WARN ? "warn" : "bad";
}

/** A demanding child's shares among its parent's demanding ACTIVE children (node.md §11's D). */
export interface DemandShares {
  /** `w_i / W`, `W = Σ w` over D. */
  readonly fair: number;
  /** `c_i / T`, `T = Σ c` over D; null when `T = 0` (nothing committed to D: no deviation to show). */
  readonly committed: number | null;
  /** `|D|` at this child's parent, the child included. */
  readonly siblings: number;
}

/**
 * The shares of every child in D, per edge id: for each parent, its ACTIVE children whose `demanding(edge)` is
 * true, their weight share and committed-service share among themselves — the quantities `boundMetrics`'
 * `observedDeviation` compares (`max |(w_i/W)·T − c_i|`), here as fractions of `T` for drawing. Edges not in
 * any D are absent. Floating point, like the ACTIVE shares of `GET /v1/tree`: these only draw and grade a bar.
 */
export function demandShares(
  view: EntitlementLedger,
  edges: readonly { readonly id: string; readonly parent: string | null; readonly lifecycle: string | null; readonly committedService: string }[],
  demanding: (edge: string) => boolean,
): Map<string, DemandShares> {
  const byParent = new Map<string, { id: string; w: number; c: bigint }[]>();
  for (const e of edges) {
    if (e.lifecycle !== "ACTIVE" || e.parent === null || !demanding(e.id)) continue;
    const rec = view.record(AttachmentId(e.id));
    if (rec === null) continue;
    const list = byParent.get(e.parent) ?? [];
    list.push({ id: e.id, w: Number(rec.weight.num) / Number(rec.weight.den), c: BigInt(e.committedService) });
    byParent.set(e.parent, list);
  }
  const out = new Map<string, DemandShares>();
  for (const list of byParent.values()) {
    let W = 0;
    let T = 0n;
    for (const x of list) {
      W += x.w;
      T += x.c;
    }
    for (const x of list) out.set(x.id, { fair: x.w / W, committed: T > 0n ? Number(x.c) / Number(T) : null, siblings: list.length });
  }
  return out;
}

function round(x: number | null): number | null {
  if (x === null) return null;
  const f = 10 ** SHARE_DECIMALS;
  return Math.round(x * f) / f;
}

function cut<T>(xs: readonly T[]): { items: readonly T[]; omitted: number } {
  return xs.length <= MAX_DASHBOARD_ENTITIES ? { items: xs, omitted: 0 } : { items: xs.slice(0, MAX_DASHBOARD_ENTITIES), omitted: xs.length - MAX_DASHBOARD_ENTITIES };
}

/** Parents on `view`: groups with at least one child edge, sorted. */
export function parentsOf(view: EntitlementLedger): string[] {
  return [...new Set<string>([...view.groups(), ...view.roots()])].filter((g) => view.childrenOf(GroupId(g)).length > 0).sort();
}

/**
 * Reads `reads` into a {@link DashboardSnapshot}. `now` is the daemon's clock (the page uses it to show
 * lease time left and event ages without trusting the browser's clock).
 */
export function dashboardSnapshot(reads: PeerReads, now: number): DashboardSnapshot {
  const d = reads.data;
  const view = d.ledger.get();
  const tree = treeOf(view, d.self, reads.root, d);
  const m = d.metrics?.();

  const edges = new Map<string, Fields>();
  // only ACTIVE children have shares; their demand as the scheduler and the bound metrics read it (null: unreadable)
  const demandOf = new Map<string, boolean | null>();
  for (const e of tree.edges) {
    if (e.lifecycle === "ACTIVE") demandOf.set(e.id, d.demand === undefined ? null : d.demand(AttachmentId(e.id)).targetOutstanding > 0n);
  }
  // over every edge, before the section is cut: a sibling left out of the document still counts in its parent's D
  const amongDemanding = demandShares(view, tree.edges, (id) => demandOf.get(id) === true);
  const ce = cut(tree.edges);
  for (const e of ce.items) {
    const fairShare = round(e.weightShare);
    const committedShare = round(e.serviceShare);
    const demanding = demandOf.get(e.id) ?? null;
    const inD = amongDemanding.get(e.id);
    const fairShareDemanding = round(inD?.fair ?? null);
    const committedShareDemanding = round(inD?.committed ?? null);
    edges.set(e.id, {
      parent: e.parent,
      child: e.child,
      weight: e.weight,
      lifecycle: e.lifecycle,
      fairShare,
      committedShare,
      demanding,
      fairShareDemanding,
      committedShareDemanding,
      demandingSiblings: inD?.siblings ?? null,
      // graded among the demanding siblings, as observedDeviation measures; where demand is unreadable, among the ACTIVE ones
      tone: demanding === null ? shareTone(fairShare, committedShare, null) : shareTone(fairShareDemanding, committedShareDemanding, demanding),
      committed: e.committedService,
      spent: e.spent,
      outstanding: e.outstanding,
    });
  }
  const groups = new Map<string, Fields>();
  const cg = cut(tree.groups);
  for (const g of cg.items) {
    groups.set(g.group, { holdings: g.holdings, holdingsTotal: g.holdingsTotal, earmarked: g.earmarked, isLeaf: g.isLeaf, inbound: g.inbound, detached: g.detached });
  }
  const bounds = new Map<string, Fields>();
  const cb = cut(parentsOf(view));
  for (const p of cb.items) {
    const b = boundsOf(d, GroupId(p));
    if ("unavailable" in b) continue;
    bounds.set(p, {
      roster: b.roster,
      configured: b.configuredWorstCase.toString(),
      current: b.currentBound.toString(),
      observed: b.observedDeviation.toString(),
      consistent: b.isConsistent,
    });
  }
  const peers = new Map<string, Fields>();
  const connected = reads.connected();
  const unreachable = d.unreachable?.get() ?? new Set<string>();
  const live = reads.lastLiveness();
  for (const p of cut(reads.roster).items) {
    const last = live.get(p.id);
    peers.set(p.id, {
      state: peerState(reads, p.id, connected, unreachable),
      lastEvent: last?.kind ?? null,
      lastEventAt: last?.at ?? null,
      reason: last?.reason ?? null,
    });
  }
  const rejected: Fields = {};
  let rejectedTotal = 0;
  if (m !== undefined) {
    for (const [reason, n] of Object.entries(m.framesRejected)) {
      rejected[reason] = n;
      rejectedTotal += n;
    }
  }

  const raft: Fields = {};
  const claims = new Map<string, Fields>();
  if (reads.raft !== null) {
    const ms = reads.raft.membership.get();
    Object.assign(raft, {
      role: reads.raft.role.get(),
      leader: reads.raft.leader.get(),
      term: reads.raft.term.get(),
      commitIndex: reads.raft.commitIndex.get(),
      voters: [...ms.voters].sort().join(","),
      learners: [...ms.learners].sort().join(","),
    });
  }
  if (reads.control !== null) {
    const cv = reads.control.controlView();
    raft["appliedIndex"] = cv.appliedIndex;
    raft["writable"] = reads.control.isWritable;
    raft["enrolled"] = cv.roster.enrolled.size;
    const open = reads.control.claims.view().open() as readonly { key: string; holder: string; mode?: string; token?: number; since?: number; expiresAt?: number; scope?: string; label?: string }[];
    for (const h of cut(open).items) {
      claims.set(`${h.key}\u0000${h.holder}`, {
        key: h.key,
        holder: h.holder,
        mode: h.mode ?? null,
        token: h.token ?? null,
        since: h.since ?? null,
        expiresAt: h.expiresAt ?? null,
        scope: h.scope ?? null,
        label: h.label ?? null,
      });
    }
  }

  const node: Fields = {
    self: d.self,
    mode: reads.mode,
    root: reads.root,
    epoch: d.epoch ?? null,
    genesisDigest: d.genesisDigest ?? null,
    mintedTotal: view.mintedTotal().toString(),
    leafSpentTotal: view.leafSpentTotal().toString(),
    reservationsOpen: m?.reservationsOpen ?? null,
    failed: m?.failed ?? false,
    framesRejected: rejectedTotal,
    omitted: ce.omitted + cg.omitted + cb.omitted,
    clock: now,
  };
  return { node, edges, groups, bounds, peers, rejected, raft, claims };
}

/** A conflict of `validate()` as one line (the kind and its subject). */
export function conflictText(c: { kind: string }): string {
  const rest = Object.entries(toWire(c) as Record<string, unknown>)
    .filter(([k]) => k !== "kind")
    .map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(",") : String(v)}`)
    .join(", ");
  return rest === "" ? c.kind : `${c.kind} (${rest})`;
}
