// The daemon's call wire (`heddle-call/1`, @heddle/client's wire-frames.ts): the API's control and granted-claims
// calls multiplexed over one upgraded connection of the API's own port. The bearer token is checked on the upgrade,
// before a frame is read; each call is validated and answered exactly as its HTTP route answers it (the same status
// and body: `api.ts` hands the routes in). Bounded: a call above `limits.maxBodyBytes` is answered 413 and its bytes
// skipped unread; past `maxInFlight` calls unanswered, or an answer backlog the client does not read, the connection
// is not read until answers drain; a frame split across reads is gathered in one buffer of its declared size. A
// malformed call is answered 400 (or 404 for an unknown path) and counted; it never throws through.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Socket } from "node:net";
import { CALL_WIRE_PATH, CALL_WIRE_PROTOCOL, FrameReader, TurnWriter, decodeCall, encodeAnswer, type WireAnswer } from "@heddle/client";
import { sameToken } from "./bearer.ts";
import type { Logger } from "./log.ts";

/** One call's answer: the status and body its HTTP route answers (the client's `WireAnswer`, what it resolves with). */
export type { WireAnswer };

/** A route on the wire: the body's JSON text ("" for none) and the Idempotency-Key (null for none) to its answer. */
export type WireRoute = (bodyText: string, idempotencyKey: string | null) => Promise<WireAnswer>;

/** Most calls one connection may have unanswered; its socket is not read past it until answers go out. */
export const WIRE_MAX_IN_FLIGHT = 1024;
/** Bytes of answers queued on a connection past which its socket is not read until they drain (a client not reading). */
export const WIRE_MAX_UNSENT_BYTES = 8 * 1024 * 1024;
/** A call frame's bytes beyond its body: id, path and key with their lengths. */
export const WIRE_CALL_OVERHEAD_BYTES = 4 + 1 + 255 + 1 + 255;

export interface CallWireOptions {
  readonly token: string;
  /** The routes by path under `/v1` (e.g. `/claims/take`). */
  readonly routes: ReadonlyMap<string, WireRoute>;
  /** The largest body a call may carry (`limits.maxBodyBytes`); a frame above it plus the call's own fields ends the connection. */
  readonly maxBodyBytes: number;
  /** Connections at once (default: unbounded here; the API server's `maxConnections` bounds every connection before its upgrade). */
  readonly maxConnections?: number;
  readonly maxInFlight?: number;
  readonly logger: Logger;
  /** Called with each answered call (path, status, seconds), for the API's request metrics. */
  readonly observe?: (path: string, status: number, seconds: number) => void;
}

/** What the wire has seen, for `/metrics`. */
export interface CallWireStats {
  connections: number;
  connectionsTotal: number;
  calls: number;
  /** Upgrades refused and frames refused, by reason. */
  refused: { unauthorized: number; "bad-protocol": number; full: number; "too-large": number; malformed: number; "unknown-path": number };
}

interface Connection {
  readonly socket: Socket;
  inFlight: number;
  /** Calls read but not started: past `maxInFlight`, a chunk's further calls wait here (the socket is paused). */
  readonly queue: Buffer[];
  /** Every answer written in one turn leaves in one write. */
  readonly out: TurnWriter;
  paused: boolean;
  /** The client ended its side: nothing more is read; ours ends once every call read is answered. */
  ending: boolean;
  closed: boolean;
}

/** See the file comment. One per API server; `handleUpgrade` is its entry, `close()` ends every connection. */
export class CallWireServer {
  readonly stats: CallWireStats = { connections: 0, connectionsTotal: 0, calls: 0, refused: { unauthorized: 0, "bad-protocol": 0, full: 0, "too-large": 0, malformed: 0, "unknown-path": 0 } };
  readonly #o: CallWireOptions;
  readonly #token: Buffer;
  readonly #maxFrame: number;
  readonly #maxInFlight: number;
  readonly #conns = new Set<Connection>();
  #closed = false;

  constructor(o: CallWireOptions) {
    this.#o = o;
    this.#token = Buffer.from(o.token, "utf8");
    this.#maxFrame = o.maxBodyBytes + WIRE_CALL_OVERHEAD_BYTES;
    this.#maxInFlight = o.maxInFlight ?? WIRE_MAX_IN_FLIGHT;
  }

  /**
   * Takes an HTTP upgrade for {@link CALL_WIRE_PATH}: the token first (401, nothing read), then the protocol (400
   * unless `Upgrade: heddle-call/1`), then room (503). Returns false for another path.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? "").split("?")[0];
    if (path !== CALL_WIRE_PATH) return false;
    const auth = req.headers.authorization;
    if (auth === undefined || !/^bearer /i.test(auth) || !sameToken(auth.slice(7), this.#token)) {
      this.stats.refused.unauthorized++;
      refuse(socket, 401, "Unauthorized", { error: "unauthorized", message: "the call wire needs the peer's API token: send 'Authorization: Bearer <token>' on the upgrade (the token in the peer's api.tokenFile)" }, 'WWW-Authenticate: Bearer realm="heddle"\r\n');
      return true;
    }
    if (String(req.headers.upgrade ?? "").toLowerCase() !== CALL_WIRE_PROTOCOL) {
      this.stats.refused["bad-protocol"]++;
      refuse(socket, 400, "Bad Request", { error: "invalid-request", message: `GET ${CALL_WIRE_PATH} upgrades to ${CALL_WIRE_PROTOCOL} only: send 'Connection: Upgrade' and 'Upgrade: ${CALL_WIRE_PROTOCOL}' (got ${JSON.stringify(req.headers.upgrade ?? null)})`, issues: [{ field: "Upgrade", in: "header", problem: `must be ${CALL_WIRE_PROTOCOL}` }] });
      return true;
    }
    if (this.#closed || (this.#o.maxConnections !== undefined && this.#conns.size >= this.#o.maxConnections)) {
      this.stats.refused.full++;
      refuse(socket, 503, "Service Unavailable", { error: "unavailable", message: this.#closed ? "this daemon is stopping; connect to it again once it is back" : `this peer takes at most ${this.#o.maxConnections} call-wire connections at once; close one and retry` });
      return true;
    }
    const s = socket as Socket;
    s.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${CALL_WIRE_PROTOCOL}\r\nConnection: Upgrade\r\n\r\n`);
    s.setNoDelay?.(true);
    this.#accept(s, head);
    return true;
  }

  /** Ends every connection now (calls in flight are not answered: their clients see the connection close). Idempotent. */
  close(): void {
    this.#closed = true;
    for (const c of this.#conns) c.socket.destroy();
  }

  #accept(socket: Socket, head: Buffer): void {
    const c: Connection = { socket, inFlight: 0, queue: [], out: new TurnWriter(socket), paused: false, ending: false, closed: false };
    this.#conns.add(c);
    this.stats.connections = this.#conns.size;
    this.stats.connectionsTotal++;
    const reader = new FrameReader(this.#maxFrame);
    const onFrame = (f: Buffer) => this.#take(c, f);
    // a call above the frame bound is answered 413 under its id and its bytes are skipped unread, as HTTP answers a
    // body past limits.maxBodyBytes; the connection and the other calls on it go on
    const onOversized = (declared: number, id: number) => {
      this.stats.refused["too-large"]++;
      this.#answer(c, id, "(too-large)", performance.now(), { status: 413, body: tooLarge(`a call frame of ${declared} bytes`, this.#o.maxBodyBytes) });
    };
    const onData = (chunk: Buffer) => reader.push(chunk, onFrame, onOversized);
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
    // the API server's sockets are half-open: a client that ends its side still gets the answers to what it sent
    socket.on("end", () => {
      c.ending = true;
      this.#finishIfDone(c);
    });
    socket.on("close", () => {
      c.closed = true;
      c.queue.length = 0;
      this.#conns.delete(c);
      this.stats.connections = this.#conns.size;
    });
    socket.on("drain", () => this.#flow(c));
    if (head.length > 0) onData(head);
  }

  /** Ends our side once the client has ended its side and every call it sent is answered. */
  #finishIfDone(c: Connection): void {
    if (c.ending && !c.closed && c.inFlight === 0 && c.queue.length === 0) c.socket.end();
  }

  /** Reads the socket again once its calls and unsent answers are below their bounds; stops reading past them. */
  #flow(c: Connection): void {
    const over = c.queue.length > 0 || c.inFlight >= this.#maxInFlight || c.socket.writableLength > WIRE_MAX_UNSENT_BYTES;
    if (over && !c.paused) {
      c.paused = true;
      c.socket.pause();
    } else if (!over && c.paused) {
      c.paused = false;
      c.socket.resume();
    }
  }

  /** A frame read: started now, or queued while `maxInFlight` calls are unanswered (a hard bound). */
  #take(c: Connection, f: Buffer): void {
    if (c.closed) return;
    if (c.inFlight >= this.#maxInFlight || c.queue.length > 0) {
      c.queue.push(f);
      this.#flow(c);
      return;
    }
    this.#call(c, f);
  }

  #call(c: Connection, f: Buffer): void {
    const call = decodeCall(f);
    if (!("path" in call)) {
      this.stats.refused.malformed++;
      // a frame too short to carry an id is counted only: there is no call to answer
      if (call.id !== null) this.#answer(c, call.id, "(frame)", performance.now(), { status: 400, body: { error: "invalid-request", message: `invalid request frame: ${call.problem}`, issues: [{ field: "(frame)", in: "frame", problem: call.problem }] } });
      return;
    }
    const started = performance.now();
    if (call.bodyBytes > this.#o.maxBodyBytes) {
      this.stats.refused["too-large"]++;
      // labelled as the oversized frames are: the path is the client's own text until a route is found for it
      this.#answer(c, call.id, "(too-large)", started, { status: 413, body: tooLarge(`the body of ${call.bodyBytes} bytes`, this.#o.maxBodyBytes) });
      return;
    }
    const route = this.#o.routes.get(call.path);
    if (route === undefined) {
      this.stats.refused["unknown-path"]++;
      this.#answer(c, call.id, "(unknown)", started, {
        status: 404,
        body: { error: "not-found", message: `no call ${JSON.stringify(call.path)} on the call wire; it carries ${[...this.#o.routes.keys()].sort().join(", ")} (the HTTP routes' paths after /v1)` },
      });
      return;
    }
    c.inFlight++;
    this.stats.calls++;
    let answered: Promise<WireAnswer>;
    try {
      answered = route(call.body, call.key);
    } catch (e) {
      answered = Promise.reject(e);
    }
    answered
      .then(
        (a) => a,
        (e: unknown): WireAnswer => {
          this.#o.logger.error("call-wire call failed", { path: call.path, error: (e as Error)?.stack ?? String(e) });
          return { status: 500, body: { error: "internal", message: "the daemon failed on this call; see its log" } };
        },
      )
      .then((a) => {
        c.inFlight--;
        this.#answer(c, call.id, call.path, started, a);
        while (c.queue.length > 0 && c.inFlight < this.#maxInFlight && !c.closed) this.#call(c, c.queue.shift()!);
        this.#flow(c);
        this.#finishIfDone(c);
      });
  }

  #answer(c: Connection, id: number, path: string, started: number, a: WireAnswer): void {
    if (c.closed) return;
    this.#o.observe?.(path, a.status, (performance.now() - started) / 1000);
    c.out.write(encodeAnswer(id, a.status, JSON.stringify(a.body)));
    if (c.socket.writableLength > WIRE_MAX_UNSENT_BYTES) this.#flow(c);
  }

}

function tooLarge(what: string, limit: number): object {
  return { error: "body-too-large", message: `${what} is above this peer's limit of ${limit} bytes (limits.maxBodyBytes); nothing was done — send a smaller body`, limit };
}

function refuse(socket: Duplex, status: number, text: string, body: object, headers = ""): void {
  const json = JSON.stringify(body);
  socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\n${headers}Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`);
}

