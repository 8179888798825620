// The live dashboard of one peer: a Yjs document kept equal to the peer's state, synced read-only to
// browsers over y-websocket, plus the page that shows it. The spend path's whole share of the work is a
// flag: a ledger change marks the document stale, and a timer refreshes it at most every `minIntervalMs`
// — and only while someone watches — off the path that reserves and completes.
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import { Counter, Gauge } from "prom-client";
import type { EventStream, PartitionEvent } from "@heddle/node";
import { bearerHook } from "./bearer.ts";
import { browserModules, dashboardPage, DASHBOARD_PAGE_DIR, MODULES_PREFIX, PAGE_FILES, type BrowserModules } from "./dashboard-assets.ts";
import { DashboardDoc, MAX_DASHBOARD_EVENTS, type DashboardEvent } from "./dashboard-doc.ts";
import { conflictText, dashboardSnapshot } from "./dashboard-snapshot.ts";
import { DashboardSockets, type DashboardSocketLimits } from "./dashboard-socket.ts";
import { silentLogger, type Logger } from "./log.ts";
import type { DaemonMetrics } from "./metrics.ts";
import type { PeerReads } from "./peer-reads.ts";

/** Timing defaults of {@link LiveDashboard}. */
export const DASHBOARD_DEFAULTS = {
  /** Shortest time between two refreshes of the document: ledger changes within it coalesce into one update. */
  minIntervalMs: 250,
  /** Period of the refresh of what has no watch (peers, Raft, claims, counters) and of the event scan. */
  refreshMs: 1_000,
  /** Granularity of the `node.clock` field (the page's reference for lease time left and event ages). */
  clockMs: 5_000,
} as const;

/** Options of {@link LiveDashboard}. */
export interface LiveDashboardOptions {
  readonly reads: PeerReads;
  /** The bearer token viewers must present on the socket. */
  readonly token: string;
  /** Liveness transitions, noted as events. */
  readonly partitionEvents?: EventStream<PartitionEvent>;
  readonly logger?: Logger;
  readonly minIntervalMs?: number;
  readonly refreshMs?: number;
  readonly limits?: Partial<DashboardSocketLimits>;
  /** Adds the dashboard's own metrics (viewers, bytes, refusals) to this registry. */
  readonly metrics?: DaemonMetrics;
}

let modulesOnce: BrowserModules | null = null;
function modules(): BrowserModules {
  modulesOnce ??= browserModules();
  return modulesOnce;
}

function short(id: string): string {
  return id.length > 12 ? `…${id.slice(-8)}` : id;
}

/** One peer's live dashboard. Construct, `register(app)` on the peer's HTTP server, `close()` to stop. */
export class LiveDashboard {
  readonly doc = new DashboardDoc();
  readonly sockets: DashboardSockets;
  readonly #reads: PeerReads;
  readonly #logger: Logger;
  readonly #minIntervalMs: number;
  readonly #refreshMs: number;
  readonly #off: (() => void)[] = [];
  readonly #events: { seq: number; event: DashboardEvent }[] = [];
  #seq = 0;
  #dirty = true;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #lastFlush = 0;
  #refresher: ReturnType<typeof setInterval>;
  #rejectedSeen: Record<string, number> | null = null;
  #conflictsSeen: Set<string> | null = null;
  #closed = false;
  #failures = 0;
  #viewersBefore = 0;
  /** Refreshes of the document so far, the time they took (ms, wall clock on the event loop), and the CPU time
   * of the daemon's main thread they and the once-a-second conflict scan took (ms; unlike the wall clock, not
   * inflated when the machine is busy). */
  flushes = 0;
  flushMs = 0;
  flushCpuMs = 0;

  constructor(o: LiveDashboardOptions) {
    this.#reads = o.reads;
    this.#logger = o.logger ?? silentLogger;
    this.#minIntervalMs = o.minIntervalMs ?? DASHBOARD_DEFAULTS.minIntervalMs;
    this.#refreshMs = o.refreshMs ?? DASHBOARD_DEFAULTS.refreshMs;
    this.sockets = new DashboardSockets({
      doc: this.doc.doc,
      token: o.token,
      ...(o.limits !== undefined ? { limits: o.limits } : {}),
      onViewers: (n) => {
        // a new first viewer gets a current document before its sync request is answered
        if (n > 0 && (this.#dirty || this.#viewersBefore === 0)) this.flush();
        this.#viewersBefore = n;
      },
    });
    this.#off.push(this.#reads.data.ledger.subscribe(() => this.markDirty()));
    if (o.partitionEvents !== undefined) {
      this.#off.push(o.partitionEvents.subscribe((e) => this.#note("liveness", `peer ${short(e.peer)} ${e.kind}${e.reason !== undefined ? ` (${e.reason})` : ""}`)));
    }
    const raft = this.#reads.raft;
    if (raft !== null) {
      this.#off.push(raft.leader.subscribe((l) => this.#note("leader", l === null ? "no Raft leader" : `Raft leader is now ${short(l)}`)));
      this.#off.push(raft.role.subscribe(() => this.markDirty()));
      this.#off.push(raft.commitIndex.subscribe(() => this.markDirty()));
    }
    this.#refresher = setInterval(() => this.#refresh(), this.#refreshMs);
    this.#refresher.unref();
    if (o.metrics !== undefined) this.#registerMetrics(o.metrics);
  }

  /** The document is stale: refresh it within `minIntervalMs` if anyone watches. O(1); called on the spend path. */
  markDirty(): void {
    this.#dirty = true;
    if (this.#timer !== null || this.#closed || this.sockets.viewers === 0) return;
    const wait = Math.max(0, this.#lastFlush + this.#minIntervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.flush();
    }, wait);
    this.#timer.unref();
  }

  /** Refreshes the document now (one Yjs transaction holding only what changed). */
  flush(): void {
    if (this.#closed) return;
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    this.#dirty = false;
    this.#lastFlush = Date.now();
    const t0 = performance.now();
    const c0 = process.threadCpuUsage();
    try {
      const now = Date.now();
      this.doc.write(dashboardSnapshot(this.#reads, now - (now % DASHBOARD_DEFAULTS.clockMs)));
      this.doc.writeEvents(this.#events);
      this.flushes++;
      this.flushMs += performance.now() - t0;
      const c = process.threadCpuUsage(c0);
      this.flushCpuMs += (c.user + c.system) / 1000;
    } catch (e) {
      // a read failing (a node shutting down) must not take the daemon with it; say so, a few times
      if (this.#failures++ < 5) this.#logger.warn("dashboard refresh failed", { error: (e as Error).message });
    }
  }

  #note(kind: DashboardEvent["kind"], text: string): void {
    this.#events.push({ seq: ++this.#seq, event: { at: Date.now(), kind, text } });
    if (this.#events.length > MAX_DASHBOARD_EVENTS) this.#events.splice(0, this.#events.length - MAX_DASHBOARD_EVENTS);
    this.markDirty();
  }

  /** Every `refreshMs`: new rejected frames (always), conflicts and everything without a watch (while watched). */
  #refresh(): void {
    if (this.#closed) return;
    try {
      const m = this.#reads.data.metrics?.();
      if (m !== undefined) {
        const now = m.framesRejected as Record<string, number>;
        if (this.#rejectedSeen !== null) {
          for (const [reason, n] of Object.entries(now)) {
            const d = n - (this.#rejectedSeen[reason] ?? 0);
            if (d > 0) this.#note("rejected", `${d} frame${d === 1 ? "" : "s"} rejected: ${reason}`);
          }
        }
        this.#rejectedSeen = { ...now };
      }
      if (this.sockets.viewers === 0) return;
      const c0 = process.threadCpuUsage();
      const conflicts = new Set(this.#reads.data.ledger.get().validate().map(conflictText));
      const seen = this.#conflictsSeen ?? new Set<string>();
      for (const c of conflicts) if (!seen.has(c)) this.#note("conflict", c);
      for (const c of seen) if (!conflicts.has(c)) this.#note("conflict-cleared", c);
      this.#conflictsSeen = conflicts;
      const c = process.threadCpuUsage(c0);
      this.flushCpuMs += (c.user + c.system) / 1000;
      this.markDirty();
    } catch (e) {
      if (this.#failures++ < 5) this.#logger.warn("dashboard refresh failed", { error: (e as Error).message });
    }
  }

  #registerMetrics(m: DaemonMetrics): void {
    const registers = [m.registry];
    const st = this.sockets.stats;
    new Gauge({ name: "heddle_dashboard_viewers", help: "Dashboards connected now", registers, collect() { this.set(st.connections); } });
    new Counter({ name: "heddle_dashboard_bytes_sent_total", help: "Bytes sent to dashboards (every frame, every viewer)", registers, collect() { this.reset(); this.inc(st.bytesSent); } });
    const self = this;
    new Counter({ name: "heddle_dashboard_refresh_seconds_total", help: "Time spent refreshing the dashboard document (snapshot, diff, encode, send to every viewer)", registers, collect() { this.reset(); this.inc(self.flushMs / 1000); } });
    new Counter({ name: "heddle_dashboard_refresh_cpu_seconds_total", help: "CPU time of the daemon's main thread spent on the dashboard: refreshing the document and the once-a-second conflict scan while watched", registers, collect() { this.reset(); this.inc(self.flushCpuMs / 1000); } });
    new Counter({ name: "heddle_dashboard_updates_total", help: "Incremental Yjs updates broadcast to dashboards", registers, collect() { this.reset(); this.inc(st.updatesBroadcast); } });
    new Counter({
      name: "heddle_dashboard_refused_total",
      help: "Dashboard connections and frames refused, by reason",
      labelNames: ["reason"],
      registers,
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries({ ...st.upgradesRefused, ...st.refused })) this.inc({ reason }, n);
      },
    });
  }

  /** True for the dashboard's static paths (page, its files, the browser modules): they need no token. */
  isPublic(path: string, method: string): boolean {
    if (method !== "GET" && method !== "HEAD") return false;
    return path === "/dashboard" || path === "/dashboard/" || path in PAGE_FILES || path.startsWith(MODULES_PREFIX);
  }

  /** Adds the page, its files, the browser modules and the socket to `app`. */
  register(app: FastifyInstance): void {
    const page = () => dashboardPage(modules());
    const sendPage = async (_req: unknown, reply: import("fastify").FastifyReply) => {
      const p = page();
      return reply
        .header("content-security-policy", p.csp)
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer")
        .header("cache-control", "no-cache")
        .type("text/html; charset=utf-8")
        .send(p.html);
    };
    app.get("/dashboard", { schema: { hide: true } }, sendPage);
    app.get("/dashboard/", { schema: { hide: true } }, sendPage);
    for (const [path, f] of Object.entries(PAGE_FILES)) {
      app.get(path, { schema: { hide: true } }, async (_req, reply) =>
        reply.header("x-content-type-options", "nosniff").header("cache-control", "no-cache").type(f.type).send(readFileSync(join(DASHBOARD_PAGE_DIR, f.file))),
      );
    }
    const cache = new Map<string, Buffer>();
    app.get(`${MODULES_PREFIX}*`, { schema: { hide: true } }, async (req, reply) => {
      const path = req.url.split("?")[0]!;
      const file = modules().files.get(path);
      if (file === undefined) return reply.code(404).send({ error: "not-found", message: `no dashboard module ${path}` });
      let body = cache.get(path);
      if (body === undefined) {
        body = readFileSync(file);
        cache.set(path, body);
      }
      return reply
        .header("x-content-type-options", "nosniff")
        .header("cache-control", "public, max-age=31536000, immutable")
        .type("text/javascript; charset=utf-8")
        .send(body);
    });
    // the socket's upgrades come through the server's one upgrade listener (`answerUpgrades`), which the API shares;
    // closed before the server closes, which waits for every connection — a viewer's upgraded socket too
    app.addHook("preClose", async () => {
      this.close();
    });
  }

  /** Takes an HTTP upgrade for the dashboard's socket; false for another path (see {@link answerUpgrades}). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    return this.sockets.handleUpgrade(req, socket, head);
  }

  /** Stops refreshing and closes every viewer. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    clearInterval(this.#refresher);
    for (const f of this.#off.splice(0)) f();
    this.sockets.close();
    this.doc.destroy();
  }
}

/** A running stand-alone dashboard server (what `heddle demo` runs for its peer 0). */
export interface DashboardServer {
  /** The page's URL, token included in the fragment (never sent to the server by browsers). */
  readonly url: string;
  readonly dashboard: LiveDashboard;
  close(): Promise<void>;
}

/**
 * Serves the dashboard and `/metrics` of a peer that has no API server of its own (an embedded node):
 * the same page, socket and token rule as the daemon's, on `host:port` (port 0 picks a free one).
 */
export async function serveDashboard(o: LiveDashboardOptions & { host: string; port: number }): Promise<DashboardServer> {
  const dashboard = new LiveDashboard(o);
  const app = Fastify({ logger: false, forceCloseConnections: true });
  app.addHook("onRequest", bearerHook(o.token, (path, method) => dashboard.isPublic(path, method)));
  if (o.metrics !== undefined) {
    const metrics = o.metrics;
    app.get("/metrics", async (_req, reply) => reply.type(metrics.contentType).send(await metrics.text()));
  }
  dashboard.register(app);
  answerUpgrades(app, [(req, socket, head) => dashboard.handleUpgrade(req, socket, head)]);
  try {
    await app.listen({ host: o.host, port: o.port });
  } catch (e) {
    dashboard.close();
    throw e;
  }
  const addr = app.server.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : o.port;
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  return {
    url: `http://${host}:${port}/dashboard#token=${encodeURIComponent(o.token)}`,
    dashboard,
    close: () => app.close(),
  };
}

/** An upgrade handler: takes the upgrade and returns true, or returns false for a path it does not serve. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/**
 * The server's one `upgrade` listener: each handler in turn (the call wire, the dashboard's socket); an upgrade none
 * takes is answered 404. One listener, since every listener of Node's `upgrade` event gets every upgrade.
 */
export function answerUpgrades(app: FastifyInstance, handlers: readonly UpgradeHandler[]): void {
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    for (const h of handlers) if (h(req, socket, head)) return;
    const body = JSON.stringify({ error: "not-found", message: `no upgrade at ${(req.url ?? "").split("?")[0]}; the API upgrades /v1/wire (heddle-call/1) and the dashboard's socket` });
    socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  };
  app.server.on("upgrade", onUpgrade);
  app.addHook("onClose", async () => {
    app.server.off("upgrade", onUpgrade);
  });
}
