// Keeps entitlement flowing on this peer: holds the standing demand services advertised through the
// API, rolls it up the tree, re-advertises it before the node's demand TTL runs out (node.md §6: callers
// refresh, the node does not), and schedules the parents along its own demand top-down on a timer
// (node.md §7).
import type { AttachmentId, EntitlementLedger, GroupId, Lifecycle } from "@heddle/ledger";
import { DEMAND_NONE, type Demand } from "@heddle/policy";
import { DemandLimitError, type HeddleNode, type Timers } from "@heddle/node";
import { INT64_MAX } from "./schema.ts";

/** One edge's demand as a service set it. */
export interface StandingDemand {
  readonly edge: AttachmentId;
  readonly demand: Demand;
  /** When it lapses unless set again (ms on the daemon's clock). */
  readonly expiresAt: number;
}

/** Why a demand could not be stood. */
export type DemandRefusal =
  | { kind: "unknown-edge"; edge: AttachmentId }
  /** Only ACTIVE edges are scheduled (node.md §7 `policyEdges`): demand on a PREPARED or RETIRED edge would stand unserved (a CLOSING edge's follows its child, `#follow`). */
  | { kind: "not-active"; edge: AttachmentId; lifecycle: Lifecycle }
  | { kind: "too-many"; limit: number }
  /** The rolled-up demand (this edge and every edge above each standing one) would not fit this peer's demand slot. */
  | { kind: "board-full"; limit: "maxDemandEntries" | "maxFrameBytes"; value: number };

/**
 * How the periodic refresh of this peer's demand slot is going (`GET /v1/demand`'s `refresh`). While it fails,
 * nothing in the slot is re-sent, so every entry lapses on the peers `demandTtlMs` after it was last advertised.
 */
export interface DemandRefreshState {
  /** True while the latest refresh advertised everything wanted (or there was nothing to do). */
  readonly ok: boolean;
  /** When a refresh last succeeded (ms on the daemon's clock); null if none has yet. */
  readonly lastSuccessAt: number | null;
  /** The failure of the latest refresh and since when it has failed; null while `ok`. */
  readonly failing: DemandRefreshFailure | null;
}

/** Why the refresh fails: `board-full` (the rolled-up demand no longer fits the slot, e.g. after a reshape lengthened lineages) or `error`. */
export interface DemandRefreshFailure {
  readonly code: "board-full" | "error";
  /** For `board-full`: the slot limit it exceeds and that limit's value. */
  readonly limit?: "maxDemandEntries" | "maxFrameBytes";
  readonly value?: number;
  readonly message: string;
  /** First failure of this run of failures, and the latest (ms on the daemon's clock); how many in a row. */
  readonly since: number;
  readonly lastAt: number;
  readonly count: number;
  /** Edges whose wanted demand is not what the slot holds (new, changed, refresh due or to withdraw). */
  readonly unadvertised: number;
}

/** One entry of this peer's demand slot: what was advertised, when, and whether the peers still count it. */
export interface Advertisement {
  readonly edge: AttachmentId;
  readonly demand: Demand;
  readonly advertisedAt: number;
  /** `advertisedAt + demandTtlMs`: from then on the peers (and this node) no longer count it (node.md §6). */
  readonly lapsesAt: number;
  /** `now < lapsesAt`. */
  readonly live: boolean;
}

/** Options of {@link Scheduler}. */
export interface SchedulerOptions {
  readonly node: Pick<HeddleNode, "ledger" | "advertiseMany" | "schedule">;
  readonly root: GroupId;
  readonly timers: Timers;
  readonly intervalMs: number;
  readonly demandTtlMs: number;
  /** Most edges with standing demand at once. */
  readonly maxStanding: number;
  readonly onError?: (e: unknown) => void;
  /** Where standing demand is kept durable (the daemon's `daemon.sqlite`); absent: in memory only. */
  readonly memory?: { put(s: StandingDemand): void; drop(edge: AttachmentId): void };
}

/** Largest number of parents scheduled in one tick (a safety stop on a malformed tree). */
export const MAX_PARENTS_PER_TICK = 100_000;

/** The same failure (same message) is reported to `onError` at most once per this many ms. */
export const ERROR_REPORT_INTERVAL_MS = 60_000;

/** How long a failure stays listed in {@link Scheduler.failures} after it last happened. */
export const RECENT_FAILURE_WINDOW_MS = 120_000;

/** Most distinct failures listed at once (the oldest goes first). */
export const MAX_RECENT_FAILURES = 32;

function sat(a: bigint, b: bigint): bigint {
  const s = a + b;
  return s > INT64_MAX ? INT64_MAX : s;
}

/** See the file comment. */
export class Scheduler {
  readonly #o: SchedulerOptions;
  readonly #standing = new Map<AttachmentId, StandingDemand>();
  /** Where demand moved with a reshape (`#follow`): old edge → new; kept while demand stands at the end of the chain. */
  readonly #moved = new Map<AttachmentId, AttachmentId>();
  readonly #advertised = new Map<AttachmentId, { demand: Demand; at: number }>();
  #timer: unknown = null;
  #ticks = 0;
  #stopped = false;
  /** When each failure message was last reported, and how many were held back since. */
  readonly #reported = new Map<string, { at: number; held: number }>();
  /** The failures of recent rounds, by what failed: for `GET /v1/status`. */
  readonly #recent = new Map<string, { where: string; message: string; first: number; last: number; count: number }>();
  #lastRefreshOk: number | null = null;
  #refreshFailing: DemandRefreshFailure | null = null;
  /** Edges the last refresh wanted to change in the slot, refreshes aside (still unadvertised while it fails). */
  #pendingChanges = 0;

  constructor(o: SchedulerOptions) {
    this.#o = o;
  }

  /** Starts the periodic tick. */
  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    const loop = () => {
      this.#timer = null;
      if (this.#stopped) return;
      try {
        this.tick();
      } catch (e) {
        this.#report(e);
      }
      this.#timer = this.#o.timers.set(loop, this.#o.intervalMs);
    };
    this.#timer = this.#o.timers.set(loop, 0);
  }

  /** Stops the tick; standing demand is kept (and simply ages out on other peers). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) this.#o.timers.clear(this.#timer);
    this.#timer = null;
  }

  /**
   * Failures of the last {@link RECENT_FAILURE_WINDOW_MS}, newest last: what failed (`round`, `schedule(<parent>)`,
   * …), the error, when it first and last failed, and how often. Empty while every round succeeds.
   */
  failures(): { where: string; message: string; firstAt: number; lastAt: number; count: number }[] {
    const since = this.#o.timers.now() - RECENT_FAILURE_WINDOW_MS;
    for (const [k, r] of this.#recent) if (r.last < since) this.#recent.delete(k);
    return [...this.#recent.values()].sort((a, b) => a.last - b.last).map((r) => ({ where: r.where, message: r.message, firstAt: r.first, lastAt: r.last, count: r.count }));
  }

  /** How often a round runs (`scheduler.intervalMs`): a lease no longer than this may lapse before any round serves it. */
  get intervalMs(): number {
    return this.#o.intervalMs;
  }

  /** Ticks run so far. */
  get ticks(): number {
    return this.#ticks;
  }

  /**
   * Sets (or, with a zero target, removes) the standing demand on `edge` for `leaseMs`; it is rolled up
   * to every edge above and advertised at the next tick (run at once here).
   */
  setDemand(asked: AttachmentId, demand: Demand, leaseMs: number): { ok: true; standing: StandingDemand | null } | { ok: false; refusal: DemandRefusal } {
    const view = this.#o.node.ledger.get();
    if (view.record(asked) === null) return { ok: false, refusal: { kind: "unknown-edge", edge: asked } };
    // demand that moved with a reshape is still addressed by the edge it stood on: refreshed or withdrawn where it is
    const edge = this.#movedTo(asked);
    const withdraw = demand.targetOutstanding === 0n && demand.maximumUsefulGrant === 0n;
    // A withdrawal is taken whatever the edge's lifecycle: demand stood while it was ACTIVE must be removable. New
    // demand stands on an ACTIVE edge, or a CLOSING one — the child's live inbound edge while a reshape drains it
    // (governed.md §3.7), whose demand follows the child to its next generation once that is ACTIVE (#follow);
    // never on a PREPARED or RETIRED one, which nothing would ever serve.
    const lifecycle = view.lifecycle(edge);
    if (!withdraw && lifecycle !== null && lifecycle !== "ACTIVE" && lifecycle !== "CLOSING") return { ok: false, refusal: { kind: "not-active", edge, lifecycle } };
    if (withdraw) {
      this.#o.memory?.drop(edge);
      this.#standing.delete(edge);
      try {
        this.#refresh(view, this.#o.timers.now());
      } catch (e) {
        // The withdrawal stands; the next tick advertises it (or reports why it cannot).
        if (!(e instanceof DemandLimitError)) throw e;
        this.#refreshFailed(e);
        this.#report(e);
      }
      return { ok: true, standing: null };
    }
    if (!this.#standing.has(edge) && this.#standing.size >= this.#o.maxStanding) return { ok: false, refusal: { kind: "too-many", limit: this.#o.maxStanding } };
    const s: StandingDemand = { edge, demand, expiresAt: this.#o.timers.now() + leaseMs };
    const before = this.#standing.get(edge);
    // Durable before anyone acts on it: a failed write changes nothing and nothing is advertised.
    this.#o.memory?.put(s);
    this.#standing.set(edge, s);
    try {
      this.#refresh(view, this.#o.timers.now());
    } catch (e) {
      // Nothing was advertised (advertiseMany is all or nothing): put the standing set, and its durable
      // copy, back as they were.
      if (before === undefined) this.#standing.delete(edge);
      else this.#standing.set(edge, before);
      try {
        if (before === undefined) this.#o.memory?.drop(edge);
        else this.#o.memory?.put(before);
      } catch (undo) {
        // the next restart would stand the refused demand again until its lease ends; say so
        this.#report(undo, `forget refused demand on ${edge}`);
      }
      if (e instanceof DemandLimitError) return { ok: false, refusal: { kind: "board-full", limit: e.limit, value: e.value } };
      throw e;
    }
    return { ok: true, standing: s };
  }

  /**
   * Stands demand kept from an earlier run (the daemon's `daemon.sqlite`): what has not lapsed, up to
   * `maxStanding`, is advertised at the next tick; what has lapsed is dropped from the memory too.
   */
  restore(saved: readonly StandingDemand[]): void {
    const now = this.#o.timers.now();
    for (const s of saved) {
      if (s.expiresAt <= now || (!this.#standing.has(s.edge) && this.#standing.size >= this.#o.maxStanding)) {
        this.#o.memory?.drop(s.edge);
        continue;
      }
      this.#standing.set(s.edge, s);
    }
  }

  /** Every standing demand, ascending edge. */
  standing(): StandingDemand[] {
    return [...this.#standing.values()].sort((a, b) => (a.edge < b.edge ? -1 : a.edge > b.edge ? 1 : 0));
  }

  /** The demand this peer advertises per edge now (standing demand rolled up), lapsed entries left out: the peers no longer count them. */
  advertised(): ReadonlyMap<AttachmentId, Demand> {
    const now = this.#o.timers.now();
    return new Map([...this.#advertised].filter(([, a]) => now - a.at < this.#o.demandTtlMs).map(([e, a]) => [e, a.demand]));
  }

  /** Every entry of this peer's demand slot, ascending edge, with when it was advertised and whether it has lapsed. */
  advertisements(): Advertisement[] {
    const now = this.#o.timers.now();
    return [...this.#advertised]
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([edge, a]) => ({ edge, demand: a.demand, advertisedAt: a.at, lapsesAt: a.at + this.#o.demandTtlMs, live: now - a.at < this.#o.demandTtlMs }));
  }

  /** How the refresh of the demand slot is going: see {@link DemandRefreshState}. */
  refresh(): DemandRefreshState {
    return { ok: this.#refreshFailing === null, lastSuccessAt: this.#lastRefreshOk, failing: this.#refreshFailing };
  }

  /** Records a refresh that threw: the slot stays as it was, and ages. */
  #refreshFailed(e: unknown): void {
    const now = this.#o.timers.now();
    const prev = this.#refreshFailing;
    const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    const limit = e instanceof DemandLimitError ? { code: "board-full" as const, limit: e.limit, value: e.value } : { code: "error" as const };
    this.#refreshFailing = { ...limit, message, since: prev?.since ?? now, lastAt: now, count: (prev?.count ?? 0) + 1, unadvertised: this.#pendingChanges };
  }

  /** One round: drop lapsed demand, refresh advertisements, schedule the parents of wanted edges top-down. */
  tick(): void {
    this.#ticks++;
    const now = this.#o.timers.now();
    for (const [e, s] of this.#standing) {
      if (s.expiresAt > now) continue;
      this.#standing.delete(e);
      try {
        this.#o.memory?.drop(e);
      } catch (err) {
        this.#report(err, "forget lapsed demand"); // kept on disk: restore drops it as lapsed
      }
    }
    const view = this.#o.node.ledger.get();
    this.#follow(view);
    try {
      this.#refresh(view, now);
    } catch (e) {
      // A reshaped tree can lengthen the lineages and so the rolled-up slot; what was advertised before
      // stays (and ages out on the peers if not refreshed: GET /v1/demand says so). Scheduling goes on either way.
      this.#refreshFailed(e);
      this.#report(e);
    }
    this.#scheduleAll();
  }

  /**
   * Standing demand follows its child across a reshape (governed.md §3.7: prepare the new generation, close the old,
   * drain, retire, activate): demand on an edge that is no longer ACTIVE moves to the child's live inbound edge once
   * that is another, ACTIVE edge, keeping its demand and lease — or gives way to demand already standing there (set
   * since, by leaf). Until then it stays where it is (and lapses with its lease if the child never gets one). It was
   * left on the old generation: rolled up along the old parent's lineage and never served.
   */
  #follow(view: EntitlementLedger): void {
    // forget moves whose demand no longer stands (withdrawn or lapsed): the map stays as small as the standing set
    for (const [from] of this.#moved) if (!this.#standing.has(this.#movedTo(from))) this.#moved.delete(from);
    for (const [e, s] of [...this.#standing]) {
      const lc = view.lifecycle(e);
      if (lc === "ACTIVE" || lc === "PREPARED" || lc === null) continue;
      const rec = view.record(e);
      const to = rec === null ? null : inboundEdge(view, rec.child);
      if (to === null || to === e || view.lifecycle(to) !== "ACTIVE") continue;
      const there = this.#standing.get(to);
      const moved: StandingDemand = there ?? { edge: to, demand: s.demand, expiresAt: s.expiresAt };
      try {
        // durable first, as setDemand is: the moved demand, then the old one gone
        if (there === undefined) this.#o.memory?.put(moved);
        this.#o.memory?.drop(e);
      } catch (err) {
        this.#report(err, `move standing demand from ${e} to ${to}`);
        continue;
      }
      this.#standing.delete(e);
      this.#standing.set(to, moved);
      this.#moved.set(e, to);
    }
  }

  /** Where demand that stood on `edge` stands now: `edge` itself unless it moved with a reshape (`#follow`). */
  #movedTo(edge: AttachmentId): AttachmentId {
    let at = edge;
    for (let hops = 0; !this.#standing.has(at) && hops <= this.#moved.size; hops++) {
      const next = this.#moved.get(at);
      if (next === undefined) break;
      at = next;
    }
    return this.#standing.has(at) ? at : edge;
  }

  /** The edge standing demand for `child` is on (after a reshape it may be the old generation), or null. */
  standingFor(view: EntitlementLedger, child: GroupId): AttachmentId | null {
    for (const e of this.#standing.keys()) if (view.record(e)?.child === child) return e;
    return null;
  }

  /**
   * The demand per edge: for an edge, the larger of its own standing demand and the sum of the rolled-up
   * demand of the edges below it along each standing edge's current lineage. Then advertise what changed,
   * refresh what is older than a third of the TTL, and withdraw what is no longer wanted.
   */
  #refresh(view: EntitlementLedger, now: number): void {
    const own = new Map<AttachmentId, Demand>();
    const below = new Map<AttachmentId, Demand>();
    for (const s of this.#standing.values()) {
      own.set(s.edge, s.demand);
      const rec = view.record(s.edge);
      if (rec === null) continue;
      const lineage = view.lineageOf(rec.parent);
      if (lineage === null) continue;
      for (const up of lineage) {
        const b = below.get(up) ?? DEMAND_NONE;
        below.set(up, { targetOutstanding: sat(b.targetOutstanding, s.demand.targetOutstanding), maximumUsefulGrant: sat(b.maximumUsefulGrant, s.demand.maximumUsefulGrant) });
      }
    }
    const want = new Map<AttachmentId, Demand>();
    for (const e of new Set([...own.keys(), ...below.keys()])) {
      const a = own.get(e) ?? DEMAND_NONE;
      const b = below.get(e) ?? DEMAND_NONE;
      want.set(e, {
        targetOutstanding: a.targetOutstanding > b.targetOutstanding ? a.targetOutstanding : b.targetOutstanding,
        maximumUsefulGrant: a.maximumUsefulGrant > b.maximumUsefulGrant ? a.maximumUsefulGrant : b.maximumUsefulGrant,
      });
    }
    const refreshAfter = this.#o.demandTtlMs / 3;
    const changes: [AttachmentId, Demand][] = [];
    let differ = 0;
    for (const [e, d] of want) {
      const prev = this.#advertised.get(e);
      const same = prev !== undefined && prev.demand.targetOutstanding === d.targetOutstanding && prev.demand.maximumUsefulGrant === d.maximumUsefulGrant;
      if (same && now - prev.at < refreshAfter) continue;
      if (!same) differ++;
      changes.push([e, d]);
    }
    for (const e of this.#advertised.keys()) {
      if (want.has(e)) continue;
      differ++;
      changes.push([e, DEMAND_NONE]);
    }
    this.#pendingChanges = differ;
    if (changes.length > 0) {
      // One slot update for the whole round: all or nothing, and one frame instead of one per edge.
      this.#o.node.advertiseMany(changes);
      for (const [e, d] of changes) {
        if (want.has(e)) this.#advertised.set(e, { demand: d, at: now });
        else this.#advertised.delete(e);
      }
    }
    this.#pendingChanges = 0;
    this.#lastRefreshOk = now;
    this.#refreshFailing = null;
  }

  /**
   * `schedule(parent)` at every parent of an edge this peer wants (its standing demand and everything
   * above it), parents before their children. A peer delegates its own holdings (node.md §7), and the
   * demand it folds is every peer's: a peer with no demand of its own under `parent` would fill another
   * peer's demand into its own pocket at a leaf where it runs no work, and the demanding peer, seeing the
   * target met, would never be served. So a peer spends its holdings only toward what it wants itself.
   */
  #scheduleAll(): void {
    const view = this.#o.node.ledger.get();
    const depth = new Map<GroupId, number>();
    for (const e of this.#advertised.keys()) {
      const rec = view.record(e);
      if (rec === null || depth.has(rec.parent)) continue;
      const lineage = view.lineageOf(rec.parent);
      if (lineage === null) continue;
      depth.set(rec.parent, lineage.length);
    }
    const parents = [...depth].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (let i = 0; i < parents.length && i < MAX_PARENTS_PER_TICK; i++) {
      // one parent whose round throws (e.g. weights whose sums leave int64) must not starve the others
      try {
        this.#o.node.schedule(parents[i]![0]);
      } catch (e) {
        this.#report(e, `schedule(${parents[i]![0]})`);
      }
    }
  }

  /** Reports `e` to `onError`, each distinct failure at most once per {@link ERROR_REPORT_INTERVAL_MS}. */
  #report(e: unknown, where = ""): void {
    const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    const key = `${where}|${text}`;
    const now = this.#o.timers.now();
    const r = this.#recent.get(key);
    if (r !== undefined) {
      r.last = now;
      r.count++;
    } else {
      if (this.#recent.size >= MAX_RECENT_FAILURES) this.#recent.delete(this.#recent.keys().next().value!);
      this.#recent.set(key, { where: where === "" ? "round" : where, message: text, first: now, last: now, count: 1 });
    }
    const last = this.#reported.get(key);
    if (last !== undefined && now - last.at < ERROR_REPORT_INTERVAL_MS) {
      last.held++;
      return;
    }
    if (this.#reported.size >= 1_000) this.#reported.clear(); // a bound on distinct messages kept
    this.#reported.set(key, { at: now, held: 0 });
    const held = last?.held ?? 0;
    const err = where === "" && held === 0 ? e : new Error(`${where === "" ? "" : `${where}: `}${e instanceof Error ? e.message : String(e)}${held > 0 ? ` (and ${held} more times in the last ${Math.round((now - last!.at) / 1000)} s)` : ""}`, { cause: e });
    this.#o.onError?.(err);
  }
}

/** The live inbound edge of `leaf` on `view` (the last edge of its lineage), or `null`. */
export function inboundEdge(view: EntitlementLedger, leaf: GroupId): AttachmentId | null {
  const l = view.lineageOf(leaf);
  return l === null || l.length === 0 ? null : l[l.length - 1]!;
}

