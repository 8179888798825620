// A typed client of the heddle daemon's HTTP API over node:http(s) with kept-alive connections.
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** An amount as the API takes it: a bigint, a safe integer, or a decimal string. */
export type AmountIn = bigint | number | string;

/** Options of {@link HeddleClient}. */
export interface HeddleClientOptions {
  /** The daemon's base URL, e.g. `http://127.0.0.1:7201`. */
  readonly url: string;
  /** The bearer token (the peer's api.tokenFile). */
  readonly token: string;
  /** Per-request bound in ms (default 30 000). */
  readonly timeoutMs?: number;
  /** Trusted CA certificate(s) (PEM) for a daemon with a self-signed TLS certificate. */
  readonly ca?: string | Buffer;
  /** Most sockets kept open to the daemon (default 64). */
  readonly maxSockets?: number;
  /** Largest response body read, in bytes (default {@link DEFAULT_MAX_RESPONSE_BYTES}); a longer one fails the call with {@link BadResponseError}. */
  readonly maxResponseBytes?: number;
}

/** Default of {@link HeddleClientOptions.maxResponseBytes}: 64 MiB, far above any answer of the API (a 10,000-edge tree is a few MiB). */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
/** The longest `Idempotency-Key` the daemon accepts (its `MAX_IDEMPOTENCY_KEY_LENGTH`). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;
/** The largest timer Node.js keeps (2^31 − 1 ms, about 24.8 days); a longer `timeoutMs` would fire at once. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** Per-call options. */
export interface CallOptions {
  /** Sent as `Idempotency-Key`: a retried call with the same key is applied once. */
  readonly idempotencyKey?: string;
}

/** The request a {@link DaemonUnreachableError} failed, and how far it got. */
export interface FailedRequest {
  readonly method: string;
  readonly path: string;
  /**
   * Whether the whole request had been written to the connection (or an answer had begun) when the call failed.
   * `false`: it never left (`ECONNREFUSED`, a name that does not resolve, a timeout while connecting) — the daemon
   * cannot have acted on it. `true`: the daemon may have acted on it (a timeout waiting for the answer, a reset, an
   * answer cut short): a write's outcome is unknown — retry it with the same idempotency key, or look it up.
   */
  readonly sent: boolean;
}

/**
 * The daemon could not be reached (not running, wrong address), or gave no whole answer in time. `request` says
 * whether the request had been sent: if so, the daemon may have acted on it (a write's outcome is unknown).
 */
export class DaemonUnreachableError extends Error {
  readonly url: string;
  readonly code: string;
  /** The request that failed, and whether it was sent; `null` when not said (an error made outside {@link HeddleClient.raw}). */
  readonly request: FailedRequest | null;

  constructor(url: string, code: string, message: string, request: FailedRequest | null = null) {
    super(message);
    this.name = "DaemonUnreachableError";
    this.url = url;
    this.code = code;
    this.request = request;
  }

  /** Whether the request had been sent when the call failed: the daemon may have acted on it. */
  get sent(): boolean {
    return this.request?.sent ?? false;
  }
}

/**
 * What answered was not the daemon's API as this client knows it: a 2xx body that is not JSON, or a body above
 * `maxResponseBytes`. A {@link DaemonUnreachableError} (code `EBADRESPONSE` or `ERESPONSETOOLARGE`), since the usual
 * cause is a URL that points at something else (a proxy's error page, another service).
 */
export class BadResponseError extends DaemonUnreachableError {
  constructor(url: string, code: "EBADRESPONSE" | "ERESPONSETOOLARGE", message: string, request: FailedRequest | null = null) {
    super(url, code, message, request);
    this.name = "BadResponseError";
  }
}

/** A bad option of {@link HeddleClient}'s constructor or a bad argument of a call, named. Thrown before anything is sent. */
export class ClientOptionError extends TypeError {
  /** The option or argument, e.g. `url`, `token`, `idempotencyKey`. */
  readonly option: string;

  constructor(option: string, message: string) {
    super(`${option}: ${message}`);
    this.name = "ClientOptionError";
    this.option = option;
  }
}

/** The body of every API error (see the daemon README). */
export interface ApiErrorBody {
  readonly error: string;
  readonly message: string;
  readonly issues?: readonly { field: string; in: string; problem: string }[];
  readonly refusal?: { kind: string; [k: string]: unknown };
  readonly conflict?: { reason: string; [k: string]: unknown };
  readonly key?: unknown;
  readonly index?: number | null;
  readonly [k: string]: unknown;
}

/** The daemon answered with a non-2xx status. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: ApiErrorBody;

  constructor(status: number, body: ApiErrorBody) {
    super(body.message ?? `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

/**
 * The daemon's base URL, checked as both clients take it: `url` without its trailing slashes, the parsed URL, and its
 * path prefix ("" for none: a daemon behind a proxy at `https://host/heddle` has "/heddle").
 * @throws {ClientOptionError} (`url`) for a string that is not an http(s) URL, or one with a query, fragment or credentials.
 */
export function daemonEndpoint(url: string): { url: string; base: URL; prefix: string } {
  const trimmed = url.replace(/\/+$/, "");
  let base: URL;
  try {
    base = new URL(trimmed);
  } catch {
    throw new ClientOptionError("url", `${JSON.stringify(url)} is not a URL; give the daemon's base URL, e.g. http://127.0.0.1:7201`);
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw new ClientOptionError("url", `${JSON.stringify(url)} is not an http:// or https:// URL; give the daemon's base URL, e.g. http://127.0.0.1:7201`);
  }
  if (base.search !== "" || base.hash !== "" || base.username !== "" || base.password !== "") {
    throw new ClientOptionError("url", `${JSON.stringify(url)} carries a query, fragment or credentials; give only scheme, host, port and (behind a proxy) a path prefix — the token goes in the token option`);
  }
  return { url: trimmed, base, prefix: base.pathname.replace(/\/+$/, "") };
}

function amount(v: AmountIn): string {
  return typeof v === "bigint" ? v.toString() : String(v);
}

/** What {@link HeddleClient.raw} resolves with. */
export interface RawAnswer {
  readonly status: number;
  /** The parsed JSON body; `null` for an empty one; `{error: "invalid-response", message}` for one that is not JSON. */
  readonly body: unknown;
  /** The body as text (e.g. `/metrics`). */
  readonly text: string;
  /** Whether the body was JSON (an empty body counts as JSON `null`). */
  readonly json: boolean;
}

/** See the file comment. Every method resolves with the parsed JSON body or rejects with {@link ApiError} / {@link DaemonUnreachableError}. */
export class HeddleClient {
  readonly url: string;
  readonly #base: URL;
  readonly #auth: string;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  /** The base URL's path without its trailing slash ("" for none): a daemon behind a proxy at `https://host/heddle`. */
  readonly #prefix: string;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;

  /** @throws {ClientOptionError} naming the bad option (no URL, one that is not http(s), an empty token, …) and where to find it. */
  constructor(o: HeddleClientOptions) {
    // Typically read from HEDDLE_URL / HEDDLE_TOKEN: an unset variable must say so, not fail inside the URL parser.
    if (typeof o.url !== "string") {
      throw new ClientOptionError("url", `give the daemon's http(s) base URL such as http://127.0.0.1:7201 (\`heddle env --config FILE\` prints it as HEDDLE_URL), got ${o.url === undefined ? "nothing" : `a ${typeof o.url}`}`);
    }
    if (typeof o.token !== "string" || o.token === "") {
      throw new ClientOptionError("token", `give the daemon's bearer token (the peer's api.tokenFile; \`heddle env --config FILE\` prints it as HEDDLE_TOKEN), got ${o.token === undefined ? "nothing" : o.token === "" ? "an empty string" : `a ${typeof o.token}`}`);
    }
    const at = daemonEndpoint(o.url);
    this.url = at.url;
    this.#base = at.base;
    this.#prefix = at.prefix;
    // A header value may not hold control characters; Node would throw a bare TypeError on the first call instead.
    if (!/^[\x21-\x7e]+$/.test(o.token)) {
      throw new ClientOptionError("token", "must be the peer's API token: visible ASCII, no spaces or line breaks (the contents of its api.tokenFile, trimmed)");
    }
    this.#auth = `Bearer ${o.token}`;
    this.#timeoutMs = o.timeoutMs ?? 30_000;
    if (!Number.isInteger(this.#timeoutMs) || this.#timeoutMs < 1 || this.#timeoutMs > MAX_TIMEOUT_MS) {
      throw new ClientOptionError("timeoutMs", `must be a whole number of milliseconds in 1 … ${MAX_TIMEOUT_MS}, got ${o.timeoutMs}`);
    }
    this.#maxResponseBytes = o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    if (!Number.isSafeInteger(this.#maxResponseBytes) || this.#maxResponseBytes < 1) {
      throw new ClientOptionError("maxResponseBytes", `must be a positive whole number of bytes, got ${o.maxResponseBytes}`);
    }
    const maxSockets = o.maxSockets ?? 64;
    if (!Number.isSafeInteger(maxSockets) || maxSockets < 1) throw new ClientOptionError("maxSockets", `must be a positive whole number, got ${o.maxSockets}`);
    const https = this.#base.protocol === "https:";
    const agentOpts = { keepAlive: true, maxSockets };
    this.#agent = https ? new HttpsAgent({ ...agentOpts, ...(o.ca !== undefined ? { ca: o.ca } : {}) }) : new HttpAgent(agentOpts);
    this.#request = (https ? httpsRequest : httpRequest) as typeof httpRequest;
  }

  /** Closes kept-alive sockets. */
  close(): void {
    this.#agent.destroy();
  }

  /**
   * One raw call: `path` starts with `/` (after the base URL's own path, if any); `body` is sent as JSON. Resolves
   * with status, parsed body and text; rejects only with {@link DaemonUnreachableError} (or its {@link BadResponseError}),
   * or {@link ClientOptionError} (`option` "request") when Node.js refuses to send what it was given.
   * Sends what it is given, a bad `idempotencyKey` too (for testing the daemon's checks). `timeoutMs` bounds the whole
   * call, connecting and reading the answer included.
   */
  raw(method: string, path: string, body?: unknown, opts: CallOptions & { headers?: Record<string, string>; rawBody?: string } = {}): Promise<RawAnswer> {
    const payload = opts.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
    const headers: Record<string, string> = { authorization: this.#auth, accept: "application/json", ...(opts.headers ?? {}) };
    if (payload !== undefined) {
      headers["content-type"] ??= "application/json";
      headers["content-length"] = String(Buffer.byteLength(payload));
    }
    // sent as given, so a test can send the daemon a key it must refuse; call() checks it first
    if (opts.idempotencyKey !== undefined) headers["idempotency-key"] = opts.idempotencyKey;
    return new Promise((resolve, reject) => {
      let settled = false;
      // Whether the whole request was handed to the connection (its 'finish'), or an answer began: from then on
      // the daemon may have acted on it, and a failure leaves a write's outcome unknown. Before, it never left.
      let written = false;
      const at = (): FailedRequest => ({ method, path, sent: written });
      const fail = (e: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        req.destroy();
        reject(e);
      };
      let req: ClientRequest;
      try {
        req = this.#request(
        { protocol: this.#base.protocol, hostname: this.#base.hostname.replace(/^\[|\]$/g, ""), port: this.#base.port, path: `${this.#prefix}${path}`, method, headers, agent: this.#agent },
        (res: IncomingMessage) => {
          written = true;
          const chunks: Buffer[] = [];
          let size = 0;
          const declared = Number(res.headers["content-length"]);
          if (Number.isFinite(declared) && declared > this.#maxResponseBytes) {
            return fail(new BadResponseError(this.url, "ERESPONSETOOLARGE", `${this.url} answered ${method} ${path} with ${declared} bytes, above maxResponseBytes (${this.#maxResponseBytes}); raise it, or check that the URL is the daemon's`, at()));
          }
          res.on("data", (c: Buffer) => {
            size += c.length;
            if (size > this.#maxResponseBytes) {
              return fail(new BadResponseError(this.url, "ERESPONSETOOLARGE", `${this.url} answered ${method} ${path} with more than maxResponseBytes (${this.#maxResponseBytes}); raise it, or check that the URL is the daemon's`, at()));
            }
            chunks.push(c);
          });
          res.on("end", () => {
            if (settled) return;
            settled = true;
            clearTimeout(deadline);
            const status = res.statusCode ?? 0;
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = null;
            let json = true;
            if (text.length > 0) {
              try {
                parsed = JSON.parse(text);
              } catch {
                json = false;
                parsed = { error: "invalid-response", message: text.slice(0, 500) };
              }
            }
            resolve({ status, body: parsed, text, json });
          });
          res.on("error", (e) => fail(new DaemonUnreachableError(this.url, "ERESPONSE", `the connection to ${this.url} broke: ${e.message}`, at())));
          res.on("close", () => {
            if (!res.complete) fail(new DaemonUnreachableError(this.url, "ERESPONSE", `the connection to ${this.url} broke before the answer to ${method} ${path} was complete`, at()));
          });
        },
        );
      } catch (e) {
        // Node refuses to send some requests outright (a header value with a line break, a path with spaces): a
        // bare TypeError from inside the executor would break raw()'s promise of DaemonUnreachableError only
        settled = true;
        return reject(new ClientOptionError("request", `Node.js refused to send ${method} ${JSON.stringify(path)}: ${(e as Error).message}`));
      }
      // One deadline for the whole call: an idle-socket timeout alone lets an answer that trickles in run forever.
      const deadline = setTimeout(
        () =>
          fail(
            new DaemonUnreachableError(
              this.url,
              "ETIMEDOUT",
              written ? `${this.url} did not answer ${method} ${path} within ${this.#timeoutMs} ms (the request was sent)` : `${this.url} did not accept ${method} ${path} within ${this.#timeoutMs} ms (nothing was sent)`,
              at(),
            ),
          ),
        this.#timeoutMs,
      );
      req.on("finish", () => {
        written = true;
      });
      req.on("error", (e: NodeJS.ErrnoException) => {
        const code = e.code ?? "EUNKNOWN";
        // a TLS port drops a plain-HTTP request unread, which looks like a hang-up here: name the likely cause
        const plainToTls = this.url.startsWith("http:") && (code === "ECONNRESET" || code === "HPE_INVALID_CONSTANT") ? " (if the daemon serves https — api.tls in its config — use an https:// URL: a TLS port closes a plain-HTTP connection without reading the request)" : "";
        const what =
          code === "ECONNREFUSED"
            ? `nothing is listening at ${this.url}: is the daemon running? (start it with: heddle start --config <file>)`
            : written
              ? `the connection to ${this.url} broke after ${method} ${path} was sent, before its answer: ${e.message}${plainToTls}`
              : `cannot reach ${this.url}: ${e.message}${plainToTls}`;
        fail(new DaemonUnreachableError(this.url, code, what, at()));
      });
      if (payload !== undefined) req.end(payload);
      else req.end();
    });
  }

  /** A call that resolves with the body on 2xx and rejects with {@link ApiError} otherwise. */
  async call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, opts: CallOptions = {}): Promise<T> {
    const k = opts.idempotencyKey;
    if (k !== undefined && (typeof k !== "string" || k.length === 0 || k.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(k))) {
      throw new ClientOptionError("idempotencyKey", `must be 1 … ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (e.g. a UUID), got ${JSON.stringify(k)}`);
    }
    const r = await this.raw(method, path, body, opts);
    if (r.status >= 200 && r.status < 300) {
      // a 2xx that is not JSON is no answer of the daemon's: resolving with a made-up body would pass it off as one
      if (!r.json) throw new BadResponseError(this.url, "EBADRESPONSE", `${this.url} answered ${method} ${path} with ${r.status} and a body that is not JSON (${JSON.stringify(r.text.slice(0, 80))}); is this URL the heddle daemon's API?`, { method, path, sent: true });
      return r.body as T;
    }
    const b = (r.body ?? { error: "http", message: `HTTP ${r.status}` }) as ApiErrorBody;
    throw new ApiError(r.status, b);
  }

  // ---- data plane ------------------------------------------------------------------------------
  status() { return this.call("GET", "/v1/status"); }
  tree() { return this.call("GET", "/v1/tree"); }
  peers() { return this.call("GET", "/v1/peers"); }
  holdings(group?: string) { return this.call("GET", `/v1/holdings${group === undefined ? "" : `?group=${encodeURIComponent(group)}`}`); }
  bounds(parent?: string) { return this.call("GET", `/v1/bounds${parent === undefined ? "" : `?parent=${encodeURIComponent(parent)}`}`); }
  edge(id: string) { return this.call("GET", `/v1/edge?id=${encodeURIComponent(id)}`); }
  reservations() { return this.call("GET", "/v1/reservations"); }
  reserve(leaf: string, maximumCost: AmountIn, opts: CallOptions = {}) {
    return this.call<{ id: string; leaf: string; maximumCost: string }>("POST", "/v1/reservations", { leaf, maximumCost: amount(maximumCost) }, opts);
  }
  complete(id: string, actualCost: AmountIn) {
    return this.call<{ id: string; charged: string; outcome: string }>("POST", "/v1/reservations/complete", { id, actualCost: amount(actualCost) });
  }
  cancel(id: string) { return this.call<{ id: string; charged: string; outcome: string }>("POST", "/v1/reservations/cancel", { id }); }
  /** `GET /v1/demand`: standing demand, this peer's advertisements (each `live` or lapsed on the peers) and `refresh` (whether re-advertising works, why not and since when). */
  demands() { return this.call("GET", "/v1/demand"); }
  demand(d: { edge?: string; leaf?: string; targetOutstanding: AmountIn; maximumUsefulGrant: AmountIn; leaseMs?: number }) {
    return this.call("POST", "/v1/demand", { ...d, targetOutstanding: amount(d.targetOutstanding), maximumUsefulGrant: amount(d.maximumUsefulGrant) });
  }

  // ---- control plane ---------------------------------------------------------------------------
  mint(amountIn: AmountIn, opts: CallOptions & { holder?: string } = {}) {
    return this.call("POST", "/v1/control/mint", { amount: amount(amountIn), ...(opts.holder !== undefined ? { holder: opts.holder } : {}) }, opts);
  }
  prepare(r: { id: string; parent: string; child: string; weight: number | string }, opts: CallOptions = {}) { return this.call("POST", "/v1/control/prepare", r, opts); }
  activate(edge: string, opts: CallOptions = {}) { return this.call("POST", "/v1/control/activate", { edge }, opts); }
  closeEdge(edge: string, opts: CallOptions = {}) { return this.call("POST", "/v1/control/close", { edge }, opts); }
  retire(edge: string, opts: CallOptions = {}) { return this.call("POST", "/v1/control/retire", { edge }, opts); }
  enroll(replica?: string, opts: CallOptions = {}) { return this.call("POST", "/v1/control/enroll", replica === undefined ? {} : { replica }, opts); }
  depart(opts: CallOptions = {}) { return this.call("POST", "/v1/control/depart", {}, opts); }
  sync() { return this.call("POST", "/v1/control/sync"); }
  roster() { return this.call("GET", "/v1/control/roster"); }
  controlView() { return this.call("GET", "/v1/control/view"); }
  outcome(q: { idempotencyKey: string } | { client: string; seq: number }) {
    const qs = "idempotencyKey" in q ? `idempotencyKey=${encodeURIComponent(q.idempotencyKey)}` : `client=${encodeURIComponent(q.client)}&seq=${q.seq}`;
    return this.call("GET", `/v1/control/outcome?${qs}`);
  }
  transferLeader(to: string) { return this.call("POST", "/v1/control/leader/transfer", { to }); }
  claimsTake(r: { holder: string; resources: { key: string; mode: "exclusive" | "shared" }[]; scope?: string; ttlMs?: number; label?: string }, opts: CallOptions = {}) {
    return this.call("POST", "/v1/claims/take", r, opts);
  }
  /**
   * Releases `holder`'s claim on `key`. With `opts.token` (the token `claimsTake` granted) only that grant ends: a
   * late retry cannot end a newer grant of the key, and the answer's `heldToken` names the grant that stayed.
   */
  claimsRelease(holder: string, key: string, opts: CallOptions & { readonly token?: number } = {}) {
    const { token, ...call } = opts;
    return this.call("POST", "/v1/claims/release", { holder, key, ...(token !== undefined ? { token } : {}) }, call);
  }
  claimsRenew(holder: string, key: string, opts: CallOptions = {}) { return this.call("POST", "/v1/claims/renew", { holder, key }, opts); }
  claimsReleaseAll(holder: string, opts: CallOptions = {}) { return this.call("POST", "/v1/claims/release-all", { holder }, opts); }
  /** Releases every granted claim taken with `scope` (whoever holds it). */
  claimsReleaseScope(scope: string, opts: CallOptions = {}) { return this.call("POST", "/v1/claims/release-scope", { scope }, opts); }
  claimsList(key?: string) { return this.call("GET", `/v1/claims${key === undefined ? "" : `?key=${encodeURIComponent(key)}`}`); }
  // ---- keeper and advisory claims (gossiped, claims.md §3–4; no log entry) ----
  keeper(part: string, renewal: { active?: boolean; take?: boolean; wroteUpTo?: number } = {}) { return this.call("POST", "/v1/claims/keeper", { part, ...renewal }); }
  keeperClose(part: string, wroteUpTo?: number) { return this.call("POST", "/v1/claims/keeper/close", { part, ...(wroteUpTo !== undefined ? { wroteUpTo } : {}) }); }
  keeperLook(part?: string) { return this.call("GET", `/v1/claims/keeper${part === undefined ? "" : `?part=${encodeURIComponent(part)}`}`); }
  advisory(item: string, ttlMs?: number) { return this.call("POST", "/v1/claims/advisory", { item, ...(ttlMs !== undefined ? { ttlMs } : {}) }); }
  advisoryDrop(item: string) { return this.call("POST", "/v1/claims/advisory/drop", { item }); }
  advisoryHolders(item?: string) { return this.call("GET", `/v1/claims/advisory${item === undefined ? "" : `?item=${encodeURIComponent(item)}`}`); }
  advisoryNext(candidates: string[]) { return this.call("POST", "/v1/claims/advisory/next", { candidates }); }
}
