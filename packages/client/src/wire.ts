// A client of the daemon's call wire (`heddle-call/1`, wire-frames.ts): the control and granted-claims calls of the
// HTTP API, multiplexed over one kept connection — many calls in flight at once, answered in any order. Each answer is
// what the same HTTP call answers (status and JSON body). For services that take and release claims at a high rate:
// a call costs both ends a fraction of an HTTP request's CPU.
import type { Socket } from "node:net";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { ApiError, BadResponseError, ClientOptionError, DaemonUnreachableError, MAX_IDEMPOTENCY_KEY_LENGTH, daemonEndpoint, type ApiErrorBody, type CallOptions } from "./client.ts";
import { CALL_WIRE_PATH, CALL_WIRE_PROTOCOL, FrameReader, FrameTooLargeError, TurnWriter, decodeAnswer, encodeCall } from "./wire-frames.ts";

/** Options of {@link HeddleWire}. */
export interface HeddleWireOptions {
  /** The daemon's base URL, as for `HeddleClient` (e.g. `http://127.0.0.1:7201`); the wire is upgraded from it. */
  readonly url: string;
  /** The bearer token (the peer's api.tokenFile). */
  readonly token: string;
  /** Bound in ms on opening the connection, and then on each call (default 30 000). */
  readonly timeoutMs?: number;
  /** Trusted CA certificate(s) (PEM) for a daemon with a self-signed TLS certificate. */
  readonly ca?: string | Buffer;
  /** Largest answer frame read, in bytes (default {@link DEFAULT_MAX_WIRE_ANSWER_BYTES}); a longer one ends the connection. */
  readonly maxAnswerBytes?: number;
}

/** Default of {@link HeddleWireOptions.maxAnswerBytes}: 64 MiB, as `HeddleClient`'s `maxResponseBytes`. */
export const DEFAULT_MAX_WIRE_ANSWER_BYTES = 64 * 1024 * 1024;
const MAX_TIMEOUT_MS = 2_147_483_647;

/** What {@link HeddleWire.raw} resolves with: the status and body the same HTTP call answers. */
export interface WireAnswer {
  readonly status: number;
  readonly body: unknown;
}

interface Pending {
  readonly path: string;
  readonly deadline: number;
  resolve(a: WireAnswer): void;
  reject(e: Error): void;
}

/** One upgraded connection and the calls in flight on it. */
interface Conn {
  readonly socket: Socket;
  readonly pending: Map<number, Pending>;
  /** Ids in the order sent: their deadlines are in the same order (one timeout for every call). */
  readonly order: number[];
  head: number;
  /** Every call written in one turn leaves in one write. */
  readonly out: TurnWriter;
  broken: Error | null;
}

/**
 * See the file comment. Connects on the first call and again on the call after a connection broke; `close()` ends it.
 * A call resolves with the answer's body on 2xx and rejects with `ApiError` otherwise, or with
 * `DaemonUnreachableError` (whose `sent` says whether the daemon may have acted on the call) when no answer came.
 */
export class HeddleWire {
  readonly url: string;
  readonly #base: URL;
  readonly #auth: string;
  readonly #timeoutMs: number;
  readonly #ca: string | Buffer | undefined;
  readonly #maxAnswer: number;
  readonly #prefix: string;
  #conn: Conn | null = null;
  #connecting: Promise<Conn> | null = null;
  /** The upgrade request in flight, so that `close()` can abort it. */
  #upgrading: { abort(e: Error): void } | null = null;
  #nextId = 1;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  /** @throws {ClientOptionError} naming a bad option (as `HeddleClient`'s constructor does). */
  constructor(o: HeddleWireOptions) {
    if (typeof o.url !== "string") throw new ClientOptionError("url", `give the daemon's http(s) base URL such as http://127.0.0.1:7201, got ${o.url === undefined ? "nothing" : `a ${typeof o.url}`}`);
    if (typeof o.token !== "string" || !/^[\x21-\x7e]+$/.test(o.token)) throw new ClientOptionError("token", "must be the peer's API token: visible ASCII, no spaces or line breaks (the contents of its api.tokenFile, trimmed)");
    const at = daemonEndpoint(o.url);
    this.url = at.url;
    this.#base = at.base;
    this.#prefix = at.prefix;
    this.#auth = `Bearer ${o.token}`;
    this.#timeoutMs = o.timeoutMs ?? 30_000;
    if (!Number.isInteger(this.#timeoutMs) || this.#timeoutMs < 1 || this.#timeoutMs > MAX_TIMEOUT_MS) throw new ClientOptionError("timeoutMs", `must be a whole number of milliseconds in 1 … ${MAX_TIMEOUT_MS}, got ${o.timeoutMs}`);
    this.#maxAnswer = o.maxAnswerBytes ?? DEFAULT_MAX_WIRE_ANSWER_BYTES;
    if (!Number.isSafeInteger(this.#maxAnswer) || this.#maxAnswer < 64 || this.#maxAnswer > 0xffffffff) throw new ClientOptionError("maxAnswerBytes", `must be a whole number of bytes in 64 … 2^32 − 1, got ${o.maxAnswerBytes}`);
    this.#ca = o.ca;
  }

  /** Calls in flight now. */
  get inFlight(): number {
    return this.#conn?.pending.size ?? 0;
  }

  /** Ends the connection; calls in flight reject (`sent: true`), later calls reject at once. */
  close(): void {
    this.#closed = true;
    this.#upgrading?.abort(new DaemonUnreachableError(this.url, "ECLOSED", `the call wire to ${this.url} was closed by this client while it was connecting; nothing was sent`, { method: "WIRE", path: CALL_WIRE_PATH, sent: false }));
    if (this.#conn !== null) this.#break(this.#conn, new DaemonUnreachableError(this.url, "ECLOSED", `the call wire to ${this.url} was closed by this client while the call was in flight; its outcome is unknown`, null));
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /**
   * One call: `path` is the HTTP route after `/v1` (e.g. `/claims/take`), `body` is sent as JSON. Resolves with the
   * status and body the daemon answers, whatever the status; rejects only with `DaemonUnreachableError`, or with
   * `ClientOptionError` before anything is sent for a path or key that cannot be framed.
   */
  raw(path: string, body?: unknown, opts: CallOptions = {}): Promise<WireAnswer> {
    let frameBody: string;
    try {
      frameBody = body === undefined ? "" : JSON.stringify(body);
    } catch (e) {
      return Promise.reject(new ClientOptionError("body", `cannot be sent as JSON: ${(e as Error).message}`));
    }
    const key = opts.idempotencyKey ?? null;
    const conn = this.#conn;
    if (conn !== null && conn.broken === null) return this.#send(conn, path, key, frameBody);
    return this.#connect().then((c) => this.#send(c, path, key, frameBody));
  }

  /** A call that resolves with the body on 2xx and rejects with `ApiError` otherwise (as `HeddleClient.call`). */
  async call<T = Record<string, unknown>>(path: string, body?: unknown, opts: CallOptions = {}): Promise<T> {
    const k = opts.idempotencyKey;
    if (k !== undefined && (typeof k !== "string" || k.length === 0 || k.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(k))) {
      throw new ClientOptionError("idempotencyKey", `must be 1 … ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (e.g. a UUID), got ${JSON.stringify(k)}`);
    }
    const r = await this.raw(path, body, opts);
    if (r.status >= 200 && r.status < 300) return r.body as T;
    throw new ApiError(r.status, (r.body ?? { error: "http", message: `status ${r.status}` }) as ApiErrorBody);
  }

  // ---- granted claims and control acts: the same bodies and answers as HeddleClient's --------------------------
  claimsTake(r: { holder: string; resources: { key: string; mode: "exclusive" | "shared" }[]; scope?: string; ttlMs?: number; label?: string }, opts: CallOptions = {}) {
    return this.call("/claims/take", r, opts);
  }
  claimsRelease(holder: string, key: string, opts: CallOptions & { readonly token?: number } = {}) {
    const { token, ...call } = opts;
    return this.call("/claims/release", { holder, key, ...(token !== undefined ? { token } : {}) }, call);
  }
  claimsRenew(holder: string, key: string, opts: CallOptions = {}) { return this.call("/claims/renew", { holder, key }, opts); }
  claimsReleaseAll(holder: string, opts: CallOptions = {}) { return this.call("/claims/release-all", { holder }, opts); }
  claimsReleaseScope(scope: string, opts: CallOptions = {}) { return this.call("/claims/release-scope", { scope }, opts); }
  mint(amount: bigint | number | string, opts: CallOptions & { holder?: string } = {}) {
    return this.call("/control/mint", { amount: typeof amount === "bigint" ? amount.toString() : String(amount), ...(opts.holder !== undefined ? { holder: opts.holder } : {}) }, opts);
  }

  #send(c: Conn, path: string, key: string | null, body: string): Promise<WireAnswer> {
    let id = this.#nextId;
    // ids wrap at 2^32; one still in flight after four billion calls is skipped, and 0 is the connection's own
    while (id === 0 || c.pending.has(id)) id = (id + 1) >>> 0;
    this.#nextId = (id + 1) >>> 0;
    let frame: Buffer;
    try {
      frame = encodeCall(id, path, key, body);
    } catch (e) {
      return Promise.reject(new ClientOptionError(/^key/.test((e as Error).message) ? "idempotencyKey" : "path", (e as Error).message));
    }
    return new Promise<WireAnswer>((resolve, reject) => {
      c.pending.set(id, { path, deadline: Date.now() + this.#timeoutMs, resolve, reject });
      c.order.push(id);
      if (this.#timer === null) this.#arm(c);
      c.out.write(frame);
    });
  }

  /** Times out the oldest calls: one timer, at the oldest call's deadline. */
  #arm(c: Conn): void {
    while (c.head < c.order.length && !c.pending.has(c.order[c.head]!)) c.head++;
    if (c.head > 1024 && c.head * 2 > c.order.length) {
      c.order.splice(0, c.head);
      c.head = 0;
    }
    if (c.head >= c.order.length) {
      this.#timer = null;
      return;
    }
    const p = c.pending.get(c.order[c.head]!)!;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      const now = Date.now();
      while (c.head < c.order.length) {
        const id = c.order[c.head]!;
        const q = c.pending.get(id);
        if (q !== undefined) {
          if (q.deadline > now) break;
          c.pending.delete(id);
          q.reject(new DaemonUnreachableError(this.url, "ETIMEDOUT", `${this.url} did not answer ${q.path} on the call wire within ${this.#timeoutMs} ms (the call was sent; its outcome is unknown)`, { method: "WIRE", path: q.path, sent: true }));
        }
        c.head++;
      }
      if (c.broken === null) this.#arm(c);
    }, Math.max(0, p.deadline - Date.now()));
    this.#timer.unref();
  }

  #break(c: Conn, e: Error): void {
    if (c.broken !== null) return;
    c.broken = e;
    if (this.#conn === c) this.#conn = null;
    c.socket.destroy();
    for (const [, p] of c.pending) {
      p.reject(
        e instanceof DaemonUnreachableError
          ? new (e instanceof BadResponseError ? BadResponseError : DaemonUnreachableError)(e.url, e.code as never, e.message, { method: "WIRE", path: p.path, sent: true })
          : e,
      );
    }
    c.pending.clear();
    c.order.length = 0;
    c.head = 0;
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  #connect(): Promise<Conn> {
    if (this.#closed) return Promise.reject(new DaemonUnreachableError(this.url, "ECLOSED", `this call wire to ${this.url} was closed; make a new HeddleWire`, { method: "WIRE", path: CALL_WIRE_PATH, sent: false }));
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  #open(): Promise<Conn> {
    const https = this.#base.protocol === "https:";
    const request = (https ? httpsRequest : httpRequest) as typeof httpRequest;
    const path = `${this.#prefix}${CALL_WIRE_PATH}`;
    const at = { method: "GET", path: CALL_WIRE_PATH, sent: false };
    return new Promise<Conn>((resolve, reject) => {
      let settled = false;
      const fail = (e: Error) => {
        if (settled) return;
        settled = true;
        this.#upgrading = null;
        clearTimeout(deadline);
        req.destroy();
        reject(e);
      };
      const req = request({
        protocol: this.#base.protocol,
        hostname: this.#base.hostname.replace(/^\[|\]$/g, ""),
        port: this.#base.port,
        path,
        method: "GET",
        agent: false,
        headers: { connection: "Upgrade", upgrade: CALL_WIRE_PROTOCOL, authorization: this.#auth },
        ...(https && this.#ca !== undefined ? { ca: this.#ca } : {}),
      });
      const deadline = setTimeout(() => fail(new DaemonUnreachableError(this.url, "ETIMEDOUT", `${this.url} did not accept the call wire within ${this.#timeoutMs} ms`, at)), this.#timeoutMs);
      deadline.unref();
      this.#upgrading = { abort: fail };
      req.on("error", (e: NodeJS.ErrnoException) => {
        const code = e.code ?? "EUNKNOWN";
        fail(new DaemonUnreachableError(this.url, code, code === "ECONNREFUSED" ? `nothing is listening at ${this.url}: is the daemon running?` : `cannot open the call wire to ${this.url}: ${e.message}`, at));
      });
      req.on("response", (res: IncomingMessage) => {
        // no upgrade: an error answer (401 wrong token, 404 a daemon without the wire, 503 full) — read and say it
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (b: Buffer) => {
          size += b.length;
          if (size <= 65_536) chunks.push(b);
        });
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: ApiErrorBody;
          try {
            body = JSON.parse(text) as ApiErrorBody;
          } catch {
            body = { error: "http", message: text.trim() === "" ? `the daemon answered the call wire's upgrade with status ${res.statusCode}` : text.trim().slice(0, 500) };
          }
          if (settled) return;
          settled = true;
          this.#upgrading = null;
          clearTimeout(deadline);
          reject(new ApiError(res.statusCode ?? 0, body));
        });
      });
      req.on("upgrade", (res: IncomingMessage, socket: Socket, head: Buffer) => {
        if (settled) return void socket.destroy();
        if (String(res.headers.upgrade ?? "").toLowerCase() !== CALL_WIRE_PROTOCOL) {
          socket.destroy();
          return fail(new BadResponseError(this.url, "EBADRESPONSE", `${this.url} upgraded to ${JSON.stringify(res.headers.upgrade)}, not ${CALL_WIRE_PROTOCOL}; is this URL the heddle daemon's API?`, at));
        }
        settled = true;
        this.#upgrading = null;
        clearTimeout(deadline);
        socket.setNoDelay(true);
        const c: Conn = { socket, pending: new Map(), order: [], head: 0, out: new TurnWriter(socket), broken: null };
        const reader = new FrameReader(this.#maxAnswer);
        const onData = (chunk: Buffer) => {
          try {
            reader.push(chunk, (f) => {
              const a = decodeAnswer(f);
              if (a === null) throw new BadResponseError(this.url, "EBADRESPONSE", `${this.url} sent an answer frame of ${f.length} bytes, shorter than its fixed part`);
              if (a.id === 0) {
                // no call has id 0: the daemon speaks of the connection itself, which it is about to close
                let message = a.body;
                try {
                  message = (JSON.parse(a.body) as { message?: string }).message ?? a.body;
                } catch {
                  // said as sent
                }
                throw new DaemonUnreachableError(this.url, "ECONNRESET", `the daemon is closing the call wire to ${this.url} (status ${a.status}): ${message}; calls in flight may have been applied`);
              }
              const p = c.pending.get(a.id);
              if (p === undefined) return; // timed out already
              c.pending.delete(a.id);
              let body: unknown = null;
              if (a.body.length > 0) {
                try {
                  body = JSON.parse(a.body);
                } catch {
                  return p.reject(new BadResponseError(this.url, "EBADRESPONSE", `${this.url} answered ${p.path} on the call wire with a body that is not JSON (${JSON.stringify(a.body.slice(0, 80))})`, { method: "WIRE", path: p.path, sent: true }));
                }
              }
              p.resolve({ status: a.status, body });
            });
          } catch (e) {
            const err =
              e instanceof FrameTooLargeError
                ? new BadResponseError(this.url, "ERESPONSETOOLARGE", `${this.url} sent an answer frame of ${e.declared} bytes, above maxAnswerBytes (${e.limit}); raise it, or check that the URL is the daemon's`)
                : (e as Error);
            this.#break(c, err);
          }
        };
        if (head.length > 0) onData(head);
        socket.on("data", onData);
        socket.on("error", (e: NodeJS.ErrnoException) => this.#break(c, new DaemonUnreachableError(this.url, e.code ?? "ECONNRESET", `the call wire to ${this.url} broke: ${e.message}; calls in flight may have been applied`)));
        socket.on("end", () => this.#break(c, new DaemonUnreachableError(this.url, "ECONNRESET", `the call wire to ${this.url} was ended by the daemon (it stopped or restarted?); calls in flight may have been applied — retry them with their idempotency keys`)));
        socket.on("close", () => this.#break(c, new DaemonUnreachableError(this.url, "ECONNRESET", `the call wire to ${this.url} closed (the daemon stopped or restarted?); calls in flight may have been applied — retry them with their idempotency keys`)));
        if (this.#closed) {
          this.#break(c, new DaemonUnreachableError(this.url, "ECLOSED", `the call wire to ${this.url} was closed by this client`));
          return reject(c.broken!);
        }
        this.#conn = c;
        resolve(c);
      });
      req.end();
    });
  }
}
