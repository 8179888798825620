// The server side of y-websocket for the dashboard, read-only. Browsers connect with the page's
// WebsocketProvider; the token is checked on the HTTP upgrade, before any frame is read. A browser's sync
// request (SyncStep1) is answered with what it lacks (SyncStep2); every later change goes out as the
// incremental Yjs update the writer produced, encoded once and sent to every viewer. Anything a browser
// sends beyond that — updates, awareness — is ignored and counted; frames that do not parse, or too many
// of them, close the connection. Written on `ws` with y-protocols' sync encoding rather than
// @y/websocket-server, whose connection handler applies every client update to the shared document.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import * as decoding from "lib0/decoding";
import * as encoding from "lib0/encoding";
import * as syncProtocol from "y-protocols/sync";
import type * as Y from "yjs";
import { WebSocketServer, type WebSocket } from "ws";

/** The subprotocol the page asks for; the token rides next to it as `bearer.<token>`. */
export const DASHBOARD_SUBPROTOCOL = "heddle.dashboard.v1";
/** Path of the dashboard's socket. */
export const DASHBOARD_SOCKET_PATH = "/dashboard/ws";

/** y-websocket's message types (the first varuint of every frame). */
const MESSAGE_SYNC = 0;
const MESSAGE_AWARENESS = 1;
const MESSAGE_AUTH = 2;
const MESSAGE_QUERY_AWARENESS = 3;

/** Limits of the dashboard socket. */
export interface DashboardSocketLimits {
  /** Viewers at once; the next upgrade is answered 503. */
  readonly maxConnections: number;
  /** Largest frame a browser may send (the socket closes with 1009 above it). */
  readonly maxMessageBytes: number;
  /** Frames a browser may send per window (then the socket closes with 1008). */
  readonly maxMessagesPerWindow: number;
  /** Sync requests (each costs an encode of the document) a browser may send per window. */
  readonly maxSyncRequestsPerWindow: number;
  readonly windowMs: number;
  /** Bytes queued to a viewer that does not read; above it the viewer is dropped (1013) instead of buffered. */
  readonly maxBufferedBytes: number;
  /** Ping period; a viewer that did not answer the previous ping is dropped. */
  readonly pingIntervalMs: number;
}

/** Defaults of {@link DashboardSocketLimits}. */
export const DASHBOARD_SOCKET_LIMITS: DashboardSocketLimits = {
  maxConnections: 256,
  maxMessageBytes: 64 * 1024,
  maxMessagesPerWindow: 120,
  maxSyncRequestsPerWindow: 10,
  windowMs: 10_000,
  maxBufferedBytes: 4 * 1024 * 1024,
  pingIntervalMs: 30_000,
};

/** Why a browser's frame was not taken. */
export type DashboardRefusal = "too-large" | "decode" | "unknown-type" | "too-many-messages" | "too-many-sync-requests" | "slow-consumer";

/** Counters of the socket server. */
export interface DashboardSocketStats {
  connections: number;
  connectionsTotal: number;
  upgradesRefused: { unauthorized: number; full: number; "bad-path": number };
  /** Bytes written to viewers (every frame, every viewer). */
  bytesSent: number;
  /** Incremental updates broadcast (each once, whatever the number of viewers). */
  updatesBroadcast: number;
  /** Bytes of those updates as encoded once (the Yjs update plus y-websocket's 2–4 byte header). */
  updateBytes: number;
  syncRequests: number;
  framesIn: number;
  ignored: { "client-update": number; awareness: number; other: number };
  refused: Record<DashboardRefusal, number>;
}

interface Viewer {
  readonly ws: WebSocket;
  alive: boolean;
  windowStart: number;
  messages: number;
  syncs: number;
}

function sameToken(given: string, token: Buffer): boolean {
  const g = Buffer.from(given, "utf8");
  return g.length === token.length && timingSafeEqual(g, token);
}

/** The bearer token of an upgrade: `Authorization: Bearer …`, or the `bearer.<token>` subprotocol a browser can send. */
function tokenOf(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (typeof h === "string" && h.startsWith("Bearer ")) return h.slice(7);
  const p = req.headers["sec-websocket-protocol"];
  if (typeof p !== "string") return null;
  for (const x of p.split(",")) {
    const t = x.trim();
    if (t.startsWith("bearer.")) return t.slice(7);
  }
  return null;
}

function refuseUpgrade(socket: Duplex, status: number, text: string, body: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/** Read-only y-websocket server side for one document. */
export class DashboardSockets {
  readonly #doc: Y.Doc;
  readonly #token: Buffer;
  readonly #limits: DashboardSocketLimits;
  readonly #wss: WebSocketServer;
  readonly #viewers = new Set<Viewer>();
  readonly #onViewers: (n: number) => void;
  readonly #now: () => number;
  readonly #pinger: ReturnType<typeof setInterval>;
  readonly #offUpdate: () => void;
  #closed = false;
  readonly stats: DashboardSocketStats = {
    connections: 0,
    connectionsTotal: 0,
    upgradesRefused: { unauthorized: 0, full: 0, "bad-path": 0 },
    bytesSent: 0,
    updatesBroadcast: 0,
    updateBytes: 0,
    syncRequests: 0,
    framesIn: 0,
    ignored: { "client-update": 0, awareness: 0, other: 0 },
    refused: { "too-large": 0, decode: 0, "unknown-type": 0, "too-many-messages": 0, "too-many-sync-requests": 0, "slow-consumer": 0 },
  };

  /**
   * Serves `doc` to viewers holding `token`. `onViewers(n)` is told the number of viewers whenever it
   * changes (the dashboard refreshes the document only while someone watches, and at once for the first).
   */
  constructor(o: { doc: Y.Doc; token: string; limits?: Partial<DashboardSocketLimits>; onViewers?: (n: number) => void; now?: () => number }) {
    this.#doc = o.doc;
    this.#token = Buffer.from(o.token, "utf8");
    this.#limits = { ...DASHBOARD_SOCKET_LIMITS, ...o.limits };
    this.#onViewers = o.onViewers ?? (() => {});
    this.#now = o.now ?? Date.now;
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.#limits.maxMessageBytes,
      perMessageDeflate: false,
      clientTracking: false,
      handleProtocols: (offered) => (offered.has(DASHBOARD_SUBPROTOCOL) ? DASHBOARD_SUBPROTOCOL : false),
    });
    const onUpdate = (update: Uint8Array) => this.#broadcast(update);
    this.#doc.on("update", onUpdate);
    this.#offUpdate = () => this.#doc.off("update", onUpdate);
    this.#pinger = setInterval(() => this.#ping(), this.#limits.pingIntervalMs);
    this.#pinger.unref();
  }

  /** Viewers connected now. */
  get viewers(): number {
    return this.#viewers.size;
  }

  /**
   * Takes an HTTP upgrade for {@link DASHBOARD_SOCKET_PATH}: the token first (401 without it, nothing read),
   * then the connection limit (503). Returns false for another path (the caller answers it).
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? "").split("?")[0];
    if (path !== DASHBOARD_SOCKET_PATH) return false;
    const token = tokenOf(req);
    if (token === null || !sameToken(token, this.#token)) {
      this.stats.upgradesRefused.unauthorized++;
      refuseUpgrade(socket, 401, "Unauthorized", "the dashboard socket needs the peer's API token (subprotocol bearer.<token>, or Authorization: Bearer <token>)\n");
      return true;
    }
    if (this.#closed || this.#viewers.size >= this.#limits.maxConnections) {
      this.stats.upgradesRefused.full++;
      refuseUpgrade(socket, 503, "Service Unavailable", `this peer serves at most ${this.#limits.maxConnections} dashboards at once; close one and retry\n`);
      return true;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws));
    return true;
  }

  #accept(ws: WebSocket): void {
    if (this.#closed) {
      ws.terminate();
      return;
    }
    const v: Viewer = { ws, alive: true, windowStart: this.#now(), messages: 0, syncs: 0 };
    this.#viewers.add(v);
    this.stats.connections = this.#viewers.size;
    this.stats.connectionsTotal++;
    ws.on("pong", () => {
      v.alive = true;
    });
    ws.on("message", (data, isBinary) => this.#onMessage(v, data as Buffer, isBinary));
    ws.on("error", (e: Error & { code?: string }) => {
      this.stats.refused[e.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH" ? "too-large" : "decode"]++;
      ws.terminate();
    });
    ws.on("close", () => {
      if (!this.#viewers.delete(v)) return;
      this.stats.connections = this.#viewers.size;
      this.#onViewers(this.#viewers.size);
    });
    this.#onViewers(this.#viewers.size);
  }

  #refuse(v: Viewer, why: DashboardRefusal, code: number, reason: string): void {
    this.stats.refused[why]++;
    v.ws.close(code, reason);
  }

  #onMessage(v: Viewer, data: Buffer, isBinary: boolean): void {
    this.stats.framesIn++;
    const now = this.#now();
    if (now - v.windowStart >= this.#limits.windowMs) {
      v.windowStart = now;
      v.messages = 0;
      v.syncs = 0;
    }
    if (++v.messages > this.#limits.maxMessagesPerWindow) return this.#refuse(v, "too-many-messages", 1008, "too many messages");
    if (!isBinary) return this.#refuse(v, "decode", 1003, "binary y-websocket frames only");
    let reply: Uint8Array | null = null;
    try {
      const decoder = decoding.createDecoder(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      const type = decoding.readVarUint(decoder);
      switch (type) {
        case MESSAGE_SYNC: {
          const step = decoding.readVarUint(decoder);
          if (step === syncProtocol.messageYjsSyncStep1) {
            if (++v.syncs > this.#limits.maxSyncRequestsPerWindow) return this.#refuse(v, "too-many-sync-requests", 1008, "too many sync requests");
            this.stats.syncRequests++;
            const encoder = encoding.createEncoder();
            encoding.writeVarUint(encoder, MESSAGE_SYNC);
            syncProtocol.readSyncStep1(decoder, encoder, this.#doc);
            reply = encoding.toUint8Array(encoder);
          } else if (step === syncProtocol.messageYjsSyncStep2 || step === syncProtocol.messageYjsUpdate) {
            // read-only: a browser's changes are never applied
            this.stats.ignored["client-update"]++;
          } else {
            return this.#refuse(v, "unknown-type", 1003, "unknown sync step");
          }
          break;
        }
        case MESSAGE_AWARENESS:
          this.stats.ignored.awareness++;
          break;
        case MESSAGE_QUERY_AWARENESS:
        case MESSAGE_AUTH:
          this.stats.ignored.other++;
          break;
        default:
          return this.#refuse(v, "unknown-type", 1003, "unknown message type");
      }
    } catch {
      return this.#refuse(v, "decode", 1007, "malformed frame");
    }
    if (reply !== null) this.#send(v, reply);
  }

  #send(v: Viewer, frame: Uint8Array): void {
    if (v.ws.readyState !== v.ws.OPEN) return;
    if (v.ws.bufferedAmount > this.#limits.maxBufferedBytes) {
      this.stats.refused["slow-consumer"]++;
      v.ws.terminate();
      return;
    }
    this.stats.bytesSent += frame.byteLength;
    v.ws.send(frame);
  }

  #broadcast(update: Uint8Array): void {
    if (this.#viewers.size === 0) return;
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MESSAGE_SYNC);
    syncProtocol.writeUpdate(encoder, update);
    const frame = encoding.toUint8Array(encoder);
    this.stats.updatesBroadcast++;
    this.stats.updateBytes += frame.byteLength;
    for (const v of this.#viewers) this.#send(v, frame);
  }

  #ping(): void {
    for (const v of this.#viewers) {
      if (!v.alive) {
        v.ws.terminate();
        continue;
      }
      v.alive = false;
      v.ws.ping();
    }
  }

  /** Closes every viewer (1001 going away) and stops. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#pinger);
    this.#offUpdate();
    for (const v of this.#viewers) v.ws.close(1001, "the peer is stopping");
    const left = [...this.#viewers];
    setTimeout(() => {
      for (const v of left) v.ws.terminate();
    }, 1_000).unref();
    this.#wss.close();
  }
}
