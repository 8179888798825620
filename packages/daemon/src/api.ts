// The daemon's HTTP API (JSON over HTTP/1.1, fastify). Every call carries the bearer token; bodies are
// size-limited and checked against the schemas of api-schemas.ts (400 naming the field); spec refusals and
// conflicts come back as 409 carrying the spec's object; `Idempotency-Key` maps to a ProposalKey.
import { createHash } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import swagger from "@fastify/swagger";
import { Type, type TSchema } from "@sinclair/typebox";
import { AttachmentId, GroupId, MAX as MAX_AMOUNT, ReplicaId } from "@heddle/ledger";
import type { AttachmentRecord, EntitlementLedger } from "@heddle/ledger";
import { fnv1a64, reservationTagOf } from "@heddle/node";
import { CLAIM_GUARANTEES } from "@heddle/claims";
import { registerGossipClaims } from "./gossip-claims-api.ts";
import * as S from "./api-schemas.ts";
import type { CallOptions, ClaimsOutcome, ControlPlane, ProposalKey } from "./control-plane.ts";
import { CONTROL_ERRORS, controlHaltOf } from "./control-plane.ts";
import { boundsOf, type DataPlane } from "./data-plane.ts";
import { bearerHook } from "./bearer.ts";
import { answerUpgrades, type LiveDashboard } from "./dashboard.ts";
import { CallWireServer, type WireAnswer, type WireRoute } from "./call-wire.ts";
import type { Logger } from "./log.ts";
import type { DaemonMetrics } from "./metrics.ts";
import { inboundEdge, type Scheduler } from "./scheduler.ts";
import { memoryReserveMemory, reserveTagOf, type ReserveMemory } from "./reserve-memory.ts";
import { amountOf, checker, type FieldIssue } from "./schema.ts";
import { fractionText, toWire } from "./wire.ts";
import { weightSumProblem } from "./weight-sum.ts";
import { jsonKeyProblem } from "./json-body.ts";
import { Weight } from "@heddle/ledger";

/** The API's version prefix. */
export const API_PREFIX = "/v1";
/** Longest accepted `Idempotency-Key` header. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/** Everything the API serves from. */
export interface ApiContext {
  readonly data: DataPlane;
  readonly control: ControlPlane | null;
  readonly scheduler: Scheduler;
  readonly mode: "static" | "governed";
  readonly root: GroupId;
  readonly token: string;
  readonly logger: Logger;
  readonly limits: { maxBodyBytes: number; controlTimeoutMs: number; maxIdempotencyEntries: number; maxOpenReservations?: number; maxConnections?: number; requestTimeoutMs?: number };
  /** Where keyed reserve answers are kept (durable in the daemon); absent: in memory, `limits.maxIdempotencyEntries` of them. */
  readonly reserveMemory?: ReserveMemory;
  readonly demandTtlMs: number;
  /** `node.maxHoldingsPerPeer` and `node.quantum`: GET /v1/bounds names them when a parent's bounds leave int64. */
  readonly tuning?: { readonly maxHoldingsPerPeer: bigint; readonly quantum: bigint };
  readonly tls: { key: Buffer; cert: Buffer } | null;
  /** Every peer of the cluster with its configured addresses. */
  readonly roster: readonly { id: string; addrs: readonly string[] }[];
  /** Peers connected now. */
  connected(): ReadonlySet<string>;
  /** This peer's libp2p addresses. */
  addrs(): string[];
  /** The last liveness event seen per peer. */
  lastLiveness(): ReadonlyMap<string, { kind: string; at: number; reason?: string }>;
  readonly startedAt: number;
  /** Where `/metrics` reads from and API requests are counted; no `/metrics` route without it. */
  readonly metrics?: DaemonMetrics;
  /** The live dashboard (page, modules, socket); none without it. */
  readonly dashboard?: LiveDashboard;
}

/** A request part that failed its schema. */
class RequestInvalid extends Error {
  readonly statusCode = 400;
  readonly part: string;
  readonly issues: FieldIssue[];

  constructor(part: string, issues: FieldIssue[]) {
    super(issues.map((i) => `${i.field}: ${i.problem}`).join("; "));
    this.part = part;
    this.issues = issues;
  }
}

const PART_NAMES: Record<string, string> = { body: "body", querystring: "query", params: "path", headers: "header", frame: "frame" };

/** Where an answer goes: a fastify reply, or a call-wire answer (call-wire.ts) — the same status and body either way. */
interface AnswerSink {
  code(status: number): { send(body: unknown): unknown };
}

function sendInvalid(reply: AnswerSink, part: string, issues: FieldIssue[]) {
  const where = PART_NAMES[part] ?? part;
  const list = issues.map((i) => ({ field: i.field === "(document)" ? `(${where})` : i.field, in: where, problem: i.problem }));
  return reply.code(400).send({
    error: "invalid-request",
    message: `invalid request ${where}: ${list.map((i) => `${i.field} ${i.problem}`).join("; ")}`,
    issues: list,
  });
}

/** The client prefix of `Idempotency-Key` sessions (the governed package's `IDEMPOTENCY_CLIENT_PREFIX`, not imported here to keep the API's imports light). */
const IDEMPOTENCY_CLIENT_PREFIX = "idem:";

/** The ProposalKey an `Idempotency-Key` header value maps to: the same on every peer and after restarts. */
export function proposalKeyOf(idempotencyKey: string): ProposalKey {
  return { client: `${IDEMPOTENCY_CLIENT_PREFIX}${createHash("sha256").update(idempotencyKey, "utf8").digest("hex").slice(0, 32)}`, seq: 1 };
}

function idempotencyKey(req: FastifyRequest): string | null | FieldIssue {
  const h = req.headers["idempotency-key"];
  if (h === undefined) return null;
  const v = Array.isArray(h) ? h[0]! : h;
  if (v.length === 0 || v.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(v)) {
    return { field: "Idempotency-Key", problem: `must be 1 … ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters` };
  }
  return v;
}

/**
 * Why a keyed mint (enroll) must name its holder (replica): left out, it is the peer that receives the call, so the
 * same Idempotency-Key sent through another peer would be another act — answered 409 keyReuse, or read as "a new
 * act takes a new key", a second mint. Named, a retry through any peer means the same act and applies at most once.
 */
function defaultUnderKey(verb: "mint" | "enroll", field: "holder" | "replica", self: string): string {
  return (
    `${verb}: ${field} is missing, and this call carries an Idempotency-Key: name the ${field} (this peer's id is ${JSON.stringify(self)}) ` +
    `so that a retry under the key through any peer is the same ${verb} — left out it means whichever peer receives the call, so a retry through another peer would be another ${verb}`
  );
}

/** A route's schema as the OpenAPI document reads it. */
interface DocumentedSchema {
  readonly hide?: boolean;
  readonly body?: unknown;
  readonly querystring?: unknown;
  readonly headers?: unknown;
  readonly response?: Readonly<Record<string, unknown>>;
  readonly [k: string]: unknown;
}

/**
 * Statuses a route answers beyond what its schema lists, by "METHOD url" (the handlers' own 404s, 409s, 503s and 504s);
 * `test/fuzz-api.test.ts` checks that every status the fuzzer sees is in the document.
 */
const ROUTE_STATUSES: Readonly<Record<string, readonly number[]>> = (() => {
  const v = API_PREFIX;
  const control = [409, 503, 504]; // a refusal or conflict, or static mode; unavailable or halted; outcome unknown
  const gossip = [400, 409, 501]; // a bad part or item; a named limit; no keeper or advisory claims on this node
  const out: Record<string, readonly number[]> = {
    [`POST ${v}/reservations/cancel`]: [409, 503],
    [`POST ${v}/demand`]: [409],
    [`GET ${v}/edge`]: [404],
    [`GET ${v}/bounds`]: [404],
    [`GET ${v}/claims`]: [409],
    [`POST ${v}/control/sync`]: control,
    [`GET ${v}/control/roster`]: [409],
    [`GET ${v}/control/view`]: [409],
    [`GET ${v}/control/outcome`]: [404, 409],
    [`POST ${v}/control/leader/transfer`]: control,
  };
  for (const verb of ["mint", "prepare", "activate", "close", "retire", "enroll", "depart"]) out[`POST ${v}/control/${verb}`] = control;
  for (const verb of ["take", "release", "renew", "release-all", "release-scope"]) out[`POST ${v}/claims/${verb}`] = control;
  for (const r of ["POST /claims/keeper", "POST /claims/keeper/close", "GET /claims/keeper", "POST /claims/advisory", "POST /claims/advisory/drop", "GET /claims/advisory", "POST /claims/advisory/next"]) {
    const [method, path] = r.split(" ");
    out[`${method} ${v}${path}`] = gossip;
  }
  return out;
})();

const ERROR_STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "`invalid-request`: the body, query or a header is not what the schema says; `issues` names each field",
  401: "`unauthorized`: no `Authorization: Bearer <token>`, or another token",
  404: "`not-found`: nothing by that name (the field is named)",
  408: "the request did not arrive within `limits.requestTimeoutMs`",
  409: "`refused`, `conflict` or `static-mode`: the act was refused, nothing changed (see the route)",
  413: "`body-too-large`: the body is above `limits.maxBodyBytes`",
  501: "`unavailable`: this peer's node has no keeper or advisory claims",
  415: "the body is not sent as `Content-Type: application/json`",
  503: "`unavailable` or a `closed` refusal: this peer cannot take the call now (retrying later is safe)",
  504: "`outcome-unknown`: the act may still commit; retry with the `key` in the body (or the same `Idempotency-Key`)",
};

/**
 * The OpenAPI view of a route's schema (documentation only: validation uses the route's own): every route answers
 * 401 and 408, one with a body 400, 413 and 415, one with a query 400; the routes of `ROUTE_STATUSES` their own; and
 * a keyed route (`keyed`) lists its `Idempotency-Key` header.
 */
function documented(schema: DocumentedSchema | undefined, route: string, keyed: ReadonlySet<string>): DocumentedSchema | undefined {
  if (schema === undefined || schema.hide === true) return schema;
  const response: Record<string, unknown> = { ...(schema.response ?? {}) };
  const add = (code: number): void => {
    if (response[String(code)] === undefined) response[String(code)] = { ...S.ErrorBody, description: ERROR_STATUS_TEXT[code] };
  };
  // a route without a response schema answers 200 with what the README says (the document's default, kept)
  if (!Object.keys(response).some((c) => c.startsWith("2"))) response["200"] = { description: "Default Response" };
  add(401);
  add(408);
  // any POST may carry a body (one whose schema takes none is still parsed): not JSON, too large, malformed
  if (schema.body !== undefined || route.startsWith("POST ")) for (const c of [400, 413, 415]) add(c);
  if (schema.querystring !== undefined) add(400);
  for (const c of ROUTE_STATUSES[route] ?? []) add(c);
  if (!keyed.has(route)) return { ...schema, response };
  const header = Type.Object({
    "idempotency-key": Type.Optional(
      Type.String({ minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, pattern: "^[\\x21-\\x7e]+$", description: "the same key on a retry applies the call once (see the daemon README's idempotency section); visible ASCII" }),
    ),
  });
  return { ...schema, response, headers: header };
}

function sortIds(ids: Iterable<string>): string[] {
  return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The weight of a `prepare` body; out of range is a `RangeError` whose message names the field (see {@link argumentField}). */
function parseWeight(w: number | string): Weight {
  try {
    if (typeof w === "number") return Weight.of(BigInt(w), 1n);
    const [n, d] = w.split("/");
    return Weight.of(BigInt(n!), BigInt(d ?? "1"));
  } catch (e) {
    if (e instanceof RangeError) throw new RangeError(`prepare: weight must have both parts in 1 … 2^63 − 1, got ${w}`);
    throw e;
  }
}

/** The group tree on `view` with weights, counters and shares (what `GET /v1/tree` returns). */
export function treeOf(view: EntitlementLedger, self: ReplicaId, root: GroupId, data: DataPlane) {
  const replicas = view.replicas();
  const edges = view.knownEdges().map((id) => {
    const rec = view.record(id);
    const s = view.edge(id);
    return {
      id,
      parent: rec?.parent ?? null,
      child: rec?.child ?? null,
      weight: rec === null ? null : fractionText(rec.weight),
      lifecycle: view.lifecycle(id),
      issued: (s?.issued ?? 0n).toString(),
      returned: (s?.returned ?? 0n).toString(),
      spent: (s?.spent ?? 0n).toString(),
      outstanding: (s?.outstanding ?? 0n).toString(),
      committedService: (s?.committedService ?? 0n).toString(),
      weightShare: null as number | null,
      serviceShare: null as number | null,
    };
  });
  // Shares among the ACTIVE children of each parent: weight share w/W and service share c/C.
  const byParent = new Map<string, typeof edges>();
  for (const e of edges) {
    if (e.lifecycle !== "ACTIVE" || e.parent === null) continue;
    const list = byParent.get(e.parent) ?? [];
    list.push(e);
    byParent.set(e.parent, list);
  }
  for (const list of byParent.values()) {
    let W = 0;
    let C = 0n;
    for (const e of list) {
      const rec = view.record(AttachmentId(e.id))!;
      W += Number(rec.weight.num) / Number(rec.weight.den);
      C += BigInt(e.committedService);
    }
    for (const e of list) {
      const rec = view.record(AttachmentId(e.id))!;
      e.weightShare = W > 0 ? Number(rec.weight.num) / Number(rec.weight.den) / W : null;
      e.serviceShare = C > 0n ? Number(BigInt(e.committedService)) / Number(C) : null;
    }
  }
  const groups = sortIds(new Set<string>([...view.groups(), ...view.roots(), root])).map((g) => {
    const gid = GroupId(g);
    let total = 0n;
    const perReplica: Record<string, string> = {};
    for (const r of replicas) {
      const h = view.holdings(gid, r);
      if (h !== 0n) perReplica[r] = h.toString();
      total += h;
    }
    const lineage = view.lineageOf(gid);
    return {
      group: g,
      inbound: lineage === null ? null : lineage.length === 0 ? null : lineage[lineage.length - 1]!,
      detached: lineage === null,
      isLeaf: view.isLeaf(gid),
      holdings: view.holdings(gid, self).toString(),
      holdingsTotal: total.toString(),
      holdingsByReplica: perReplica,
      earmarked: data.earmarked === undefined ? null : data.earmarked(gid).toString(),
    };
  });
  return { root, self, edges, groups };
}

/** A route part's validator, as fastify calls it (and the call wire, for a body). */
function validatorOf(schema: TSchema, httpPart: string): (data: unknown) => { value: unknown; error?: undefined } | { error: RequestInvalid; value?: undefined } {
  const c = checker(schema);
  // a body whose fields are all optional may be left out altogether (e.g. POST /v1/control/enroll)
  const optionalBody = httpPart === "body" && (schema as { type?: unknown }).type === "object" && ((schema as { required?: unknown[] }).required?.length ?? 0) === 0;
  return (data: unknown) => {
    if (optionalBody && (data === null || data === undefined)) return { value: {} };
    if (httpPart === "body" && (data === null || data === undefined)) {
      return { error: new RequestInvalid("body", [{ field: "(document)", problem: "is empty: send a JSON object with this route's fields (GET /openapi.json lists them)" }]) };
    }
    const r = c.check(data);
    return r.ok ? { value: data } : { error: new RequestInvalid(httpPart, r.issues) };
  };
}

/** Builds (does not start) the API server. */
export async function buildApi(ctx: ApiContext): Promise<FastifyInstance> {
  const requestTimeoutMs = ctx.limits.requestTimeoutMs ?? 30_000;
  const checkEveryMs = Math.min(30_000, Math.max(250, Math.floor(requestTimeoutMs / 4)));
  const app = Fastify({
    logger: false,
    bodyLimit: ctx.limits.maxBodyBytes,
    // Node checks request and header deadlines every connectionsCheckingInterval (30 s by default): check often
    // enough that a bound of a few seconds holds to within a quarter of itself
    ...(ctx.tls !== null ? { https: { key: ctx.tls.key, cert: ctx.tls.cert, connectionsCheckingInterval: checkEveryMs } } : { http: { connectionsCheckingInterval: checkEveryMs } }),
    forceCloseConnections: "idle",
    keepAliveTimeout: 65_000,
    return503OnClosing: true,
    // fastify's default (0) switches off Node's own bound, so a client trickling a body held its request open for good
    requestTimeout: requestTimeoutMs,
  });
  // Node's bound on the headers alone must not exceed the bound on the whole request
  app.server.headersTimeout = Math.min(60_000, requestTimeoutMs);
  if (ctx.limits.maxConnections !== undefined) {
    // without a cap, idle or half-open connections (no token needed to open one) could use up the process's file
    // descriptors, which its stores and peer connections need too
    app.server.maxConnections = ctx.limits.maxConnections;
    app.server.on("drop", () => ctx.metrics?.connectionDropped());
  }
  app.setValidatorCompiler(({ schema, httpPart }) => validatorOf(schema as TSchema, httpPart ?? "body"));
  // One body parser for every route: JSON only — any other Content-Type (or a body without one) is 415 saying to send
  // JSON; an empty body is no body (a route whose fields are all optional takes it as {}, the validator above); a
  // key given twice, or one that would reach a prototype, is 400 naming it (json-body.ts).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === "") return done(null, undefined);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      return done(Object.assign(e as Error, { statusCode: 400 }), undefined);
    }
    const bad = jsonKeyProblem(text);
    if (bad !== null) return done(new RequestInvalid("body", [bad]), undefined);
    done(null, value);
  });
  // Response schemas document; they do not filter. Plain JSON keeps what the handler built.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // Routes that take an `Idempotency-Key` header ("METHOD url"): it is checked by hand (`idempotencyKey`), so the
  // document gets it from here, as it gets the error statuses every route shares (`documented`)
  const keyedRoutes = new Set<string>();
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "heddle daemon API", version: "1", description: "Data plane and control plane of one heddle peer. Every call needs `Authorization: Bearer <token>`." },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
    transform: ({ schema, url, route }) => ({ schema: documented(schema as DocumentedSchema | undefined, `${String(route.method)} ${url}`, keyedRoutes) as never, url }),
  });

  app.addHook("onRequest", bearerHook(ctx.token, (path, method) => ctx.dashboard?.isPublic(path, method) ?? false));
  if (ctx.metrics !== undefined) {
    const metrics = ctx.metrics;
    app.addHook("onResponse", async (req, reply) => {
      metrics.observeRequest(req.routeOptions.url ?? "(unmatched)", req.method, reply.statusCode, reply.elapsedTime / 1000);
    });
  }

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string; validationContext?: string }, req, reply) => {
    if (err instanceof RequestInvalid) return sendInvalid(reply, err.part, err.issues);
    if (err.statusCode === 413 || err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return reply.code(413).send({ error: "body-too-large", message: `the request body exceeds the limit of ${ctx.limits.maxBodyBytes} bytes (limits.maxBodyBytes)` });
    }
    if (err.statusCode === 415) {
      return reply.code(415).send({ error: "invalid-request", message: "send the body as JSON with 'Content-Type: application/json'" });
    }
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(400).send({ error: "invalid-request", message: `the request body is not valid JSON: ${err.message}`, issues: [{ field: "(body)", in: "body", problem: err.message }] });
    }
    ctx.logger.error("request failed", { method: req.method, url: req.url, error: err.stack ?? err.message });
    return reply.code(500).send({ error: "internal", message: "the daemon failed on this request; see its log" });
  });

  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: "not-found", message: `no route ${req.method} ${req.url.split("?")[0]}; GET /openapi.json lists every route` }),
  );

  const d = ctx.data;
  const view = () => d.ledger.get();

  // ---- reserve idempotency: remembered results, bounded (durable when the daemon gives a store) --
  // A keyed reserve commits its reservation in the node's store with the key's tag in its id, then records its
  // answer here under the same tag. A crash between the two leaves a tagged reservation without an answer: it is
  // answered now, from the node's open reservations, before the API serves — so its retry replays it instead of
  // reserving again. An answer whose write fails while the daemon runs is kept in memory (`unrecorded`) for the same
  // reason; a restart rebuilds it from the node again.
  const remembered = ctx.reserveMemory ?? memoryReserveMemory(ctx.limits.maxIdempotencyEntries);
  const unrecorded = memoryReserveMemory(ctx.limits.maxIdempotencyEntries);
  const recall = (tag: string) => unrecorded.get(tag) ?? remembered.get(tag);
  const remember = (tag: string, body: string, status: number, payload: unknown) => {
    try {
      remembered.put(tag, { body, status, payload });
    } catch (e) {
      unrecorded.put(tag, { body, status, payload });
      ctx.logger.error("a keyed reserve's answer could not be recorded; it is kept in memory until a restart rebuilds it from the node's reservations", { error: (e as Error).message });
    }
  };
  const reserveBodyText = (leaf: string, maximumCost: bigint) => JSON.stringify([leaf, maximumCost.toString()]);
  let answered = 0;
  for (const row of d.openReservations?.() ?? []) {
    const tag = reservationTagOf(row.id);
    if (tag === null || remembered.get(tag) !== undefined) continue;
    remember(tag, reserveBodyText(row.leaf, row.maximumCost), 201, { id: row.id, leaf: row.leaf, maximumCost: row.maximumCost.toString() });
    answered++;
  }
  if (answered > 0) ctx.logger.info("keyed reservations committed before a crash, answered now so that their retries replay them", { reservations: answered });

  const tags = (t: string) => ({ tags: [t] });

  // ---- data plane ------------------------------------------------------------------------------
  keyedRoutes.add(`POST ${API_PREFIX}/reservations`);
  app.post(`${API_PREFIX}/reservations`, { schema: { ...tags("data"), summary: "Reserve work at a leaf (earmarks maximumCost)", body: S.ReserveBody, response: { 201: S.ReserveOk, 400: S.ErrorBody, 409: S.ErrorBody, 503: S.ErrorBody } } }, async (req, reply) => {
    const b = req.body as { leaf: string; maximumCost: string | number };
    const ik = idempotencyKey(req);
    if (ik !== null && typeof ik !== "string") return sendInvalid(reply, "headers", [ik]);
    const max = amountOf(b.maximumCost);
    if (max === null) return sendInvalid(reply, "body", [{ field: "maximumCost", problem: "is above 2^63 − 1" }]);
    // What the request asks for, not how it was spelled: a retry with its keys in another order or the
    // amount as "10" instead of 10 is the same request.
    const bodyText = reserveBodyText(b.leaf, max);
    const tag = ik === null ? null : reserveTagOf(ik);
    if (tag !== null) {
      const prev = recall(tag);
      if (prev !== undefined) {
        if (prev.body !== bodyText) return reply.code(409).send({ error: "conflict", message: "this Idempotency-Key was used with another leaf or maximumCost; use a new key for a new request", conflict: { reason: "keyReuse", idempotencyKey: ik } });
        return reply.code(prev.status as 201).send(prev.payload as never);
      }
    }
    const cap = ctx.limits.maxOpenReservations;
    if (cap !== undefined && d.openReservationCount !== undefined && d.openReservationCount() >= cap) {
      // not remembered under the key: a retry once some work has finished may succeed
      return reply.code(409).send({
        error: "refused",
        message: `${cap} reservations are open on this peer (limits.maxOpenReservations); complete or cancel some, or raise the limit`,
        refusal: { kind: "too-many-open", limit: cap },
      });
    }
    const r = tag === null ? d.reserve(GroupId(b.leaf), max) : d.reserve(GroupId(b.leaf), max, { tag });
    let status: number;
    let payload: unknown;
    if (r.ok) {
      status = 201;
      payload = { id: r.id, leaf: b.leaf, maximumCost: max.toString() };
    } else {
      status = r.refusal.kind === "closed" ? 503 : 409;
      // a leaf no edge names is most likely a typo: say so rather than "no live path to the root"
      const unknown = r.refusal.kind === "no-lineage" && !knownGroup(view(), b.leaf);
      const message = unknown ? `there is no group ${JSON.stringify(b.leaf)} on this peer's view; check the name (GET /v1/tree, heddle tree, lists the groups)` : refusalMessage(r.refusal);
      payload = { error: "refused", message, refusal: toWire(r.refusal) };
    }
    if (tag !== null && status !== 503) remember(tag, bodyText, status, payload);
    return reply.code(status as 201).send(payload as never);
  });

  /**
   * A reservation id starts with the peer that made it (node.md §1, `${self}/${epoch}/${n}`): only that peer can
   * complete or cancel it. Sent anywhere else it is `no-such-reservation` (node.md §8) and stays open there, holding
   * its earmark — so the answer names that peer (one of the roster: a made-up prefix names nobody).
   */
  const settled = (id: string, charged: bigint, outcome: "charged" | "no-such-reservation") => {
    const by = id.slice(0, Math.max(0, id.indexOf("/")));
    const another = by !== String(d.self) && ctx.roster.some((p) => p.id === by);
    return { id, charged: charged.toString(), outcome, ...(outcome === "no-such-reservation" && another ? { reservedBy: by } : {}) };
  };
  const finish = (id: string, cost: bigint, reply: FastifyReply) => {
    const r = cost === 0n ? d.cancel(id) : d.complete(id, cost);
    if (r.ok) return reply.code(200).send(settled(id, r.charged, r.outcome));
    const status = r.refusal.kind === "closed" ? 503 : 409;
    return reply.code(status).send({ error: "refused", message: refusalMessage(r.refusal), refusal: toWire(r.refusal) });
  };
  app.post(`${API_PREFIX}/reservations/complete`, { schema: { ...tags("data"), summary: "Complete a reservation, charging actualCost exactly once", body: S.CompleteBody, response: { 200: S.CompleteOk, 400: S.ErrorBody, 409: S.ErrorBody, 503: S.ErrorBody } } }, async (req, reply) => {
    const b = req.body as { id: string; actualCost: string | number };
    const cost = amountOf(b.actualCost);
    if (cost === null) return sendInvalid(reply, "body", [{ field: "actualCost", problem: "is above 2^63 − 1" }]);
    if (cost === 0n) {
      const r = d.complete(b.id, 0n);
      if (r.ok) return reply.code(200).send(settled(b.id, 0n, r.outcome));
      return reply.code(r.refusal.kind === "closed" ? 503 : 409).send({ error: "refused", message: refusalMessage(r.refusal), refusal: toWire(r.refusal) });
    }
    return finish(b.id, cost, reply);
  });
  app.post(`${API_PREFIX}/reservations/cancel`, { schema: { ...tags("data"), summary: "Cancel a reservation (charges nothing)", body: S.CancelBody, response: { 200: S.CompleteOk, 409: S.ErrorBody, 503: S.ErrorBody } } }, async (req, reply) => {
    return finish((req.body as { id: string }).id, 0n, reply);
  });
  app.get(`${API_PREFIX}/reservations`, { schema: { ...tags("data"), summary: "This peer's open reservations" } }, async () => {
    const rows = d.openReservations?.() ?? [];
    return { reservations: rows.map((r) => toWire(r)) };
  });

  app.post(`${API_PREFIX}/demand`, { schema: { ...tags("data"), summary: "Stand demand on an edge (rolled up the tree, refreshed until its lease ends)", body: S.DemandBody, response: { 200: S.DemandSetOk, 400: S.ErrorBody, 409: S.ErrorBody } } }, async (req, reply) => {
    const b = req.body as { edge?: string; leaf?: string; targetOutstanding: string | number; maximumUsefulGrant: string | number; leaseMs?: number };
    if ((b.edge === undefined) === (b.leaf === undefined)) {
      return sendInvalid(reply, "body", [{ field: b.edge === undefined ? "edge" : "leaf", problem: "give exactly one of edge and leaf" }]);
    }
    const target = amountOf(b.targetOutstanding);
    const maxGrant = amountOf(b.maximumUsefulGrant);
    if (target === null || maxGrant === null) return sendInvalid(reply, "body", [{ field: target === null ? "targetOutstanding" : "maximumUsefulGrant", problem: "is above 2^63 − 1" }]);
    const withdraw = target === 0n && maxGrant === 0n;
    let edge: AttachmentId;
    if (b.edge !== undefined) edge = AttachmentId(b.edge);
    else {
      // a withdrawal by leaf finds the leaf's standing demand even between a reshape's retire and activate, when
      // the leaf has no live inbound edge
      const e = inboundEdge(view(), GroupId(b.leaf!)) ?? (withdraw ? ctx.scheduler.standingFor(view(), GroupId(b.leaf!)) : null);
      if (e === null) return reply.code(409).send({ error: "refused", message: `group ${b.leaf} has no live inbound edge on this peer's view`, refusal: { kind: "no-lineage", leaf: b.leaf } });
      edge = e;
    }
    if (!withdraw && b.leaseMs !== undefined && b.leaseMs <= ctx.scheduler.intervalMs) {
      // the next round (at most scheduler.intervalMs away) would drop it before scheduling anything for it
      return sendInvalid(reply, "body", [{ field: "leaseMs", problem: `is ${b.leaseMs}, not above scheduler.intervalMs (${ctx.scheduler.intervalMs}): the demand would lapse before the next scheduler round served it; give a longer lease (or none: node.demandTtlMs, ${ctx.demandTtlMs}) and set the demand again before it ends` }]);
    }
    const r = ctx.scheduler.setDemand(edge, { targetOutstanding: target, maximumUsefulGrant: maxGrant }, b.leaseMs ?? ctx.demandTtlMs);
    if (!r.ok) {
      const f = r.refusal;
      const message =
        f.kind === "unknown-edge" ? `edge ${edge} is not known on this peer`
        : f.kind === "not-active" ?
          f.lifecycle === "PREPARED" ? `edge ${edge} is PREPARED: only ACTIVE edges are scheduled (node.md §7), so the demand would stand unserved; activate it first (POST /v1/control/activate, heddle activate) and stand the demand then`
          : `edge ${edge} is ${f.lifecycle}: it is never scheduled again, so the demand would stand unserved; stand it on the child's live inbound edge instead (give leaf rather than edge)`
        : f.kind === "too-many" ? `too many standing demands (limit ${f.limit}, limits.maxStandingDemands); withdraw one (targetOutstanding 0) or raise the limit`
        : `this demand and the edges above every standing demand would not fit this peer's demand slot (${f.limit} ${f.value}); nothing was stored — withdraw some standing demand first`;
      return reply.code(409).send({ error: "refused", message, refusal: toWire(r.refusal) });
    }
    // the edge the demand stands on: after a reshape, the asked edge's next generation (Scheduler#follow)
    return { edge: r.standing?.edge ?? edge, standing: r.standing === null ? null : toWire(r.standing), refresh: toWire(ctx.scheduler.refresh()) };
  });
  app.get(`${API_PREFIX}/demand`, { schema: { ...tags("data"), summary: "Standing demand, what this peer advertises per edge (live or lapsed on the peers) and how its periodic refresh is going", response: { 200: S.DemandView } } }, async () => ({
    standing: ctx.scheduler.standing().map((s) => toWire(s)),
    advertised: toWire(ctx.scheduler.advertised()),
    advertisements: toWire(ctx.scheduler.advertisements()),
    refresh: toWire(ctx.scheduler.refresh()),
  }));

  app.get(`${API_PREFIX}/holdings`, { schema: { ...tags("data"), summary: "Holdings per group and replica", querystring: S.HoldingsQuery } }, async (req) => {
    const q = req.query as { group?: string };
    const v = view();
    const groups = q.group !== undefined ? [q.group] : sortIds(new Set<string>([...v.groups(), ...v.roots()]));
    return {
      self: d.self,
      groups: groups.map((g) => {
        const gid = GroupId(g);
        const byReplica: Record<string, string> = {};
        for (const r of v.replicas()) {
          const h = v.holdings(gid, r);
          if (h !== 0n) byReplica[r] = h.toString();
        }
        return {
          group: g,
          holdings: v.holdings(gid, d.self).toString(),
          available: d.available === undefined ? null : d.available(gid).toString(),
          earmarked: d.earmarked === undefined ? null : d.earmarked(gid).toString(),
          byReplica,
        };
      }),
    };
  });

  app.get(`${API_PREFIX}/tree`, { schema: { ...tags("data"), summary: "The group tree: edges with weights, counters and shares; groups with holdings" } }, async () => treeOf(view(), d.self, ctx.root, d));

  app.get(`${API_PREFIX}/edge`, { schema: { ...tags("data"), summary: "One edge: record, lifecycle, counters and per-replica positions (the drain gate)", querystring: S.EdgeQuery } }, async (req, reply) => {
    const id = AttachmentId((req.query as { id: string }).id);
    const v = view();
    const rec = v.record(id);
    if (rec === null) return reply.code(404).send({ error: "not-found", message: `edge ${id} is not known on this peer` });
    const positions: Record<string, string> = {};
    for (const r of v.replicas()) {
      const p = v.edgePosition(id, r);
      if (p !== 0n) positions[r] = p.toString();
    }
    return { id, record: toWire(rec), lifecycle: v.lifecycle(id), summary: toWire(v.edge(id)), positions, drained: Object.keys(positions).length === 0 };
  });

  app.get(`${API_PREFIX}/bounds`, { schema: { ...tags("data"), summary: "Bound metrics (node.md §11) per parent", querystring: S.BoundsQuery } }, async (req, reply) => {
    const q = req.query as { parent?: string };
    const v = view();
    if (q.parent !== undefined && !knownGroup(v, q.parent)) {
      // bounds of a group nobody names would be made up (a parent of no children): say it is not there
      return reply.code(404).send({ error: "not-found", message: `there is no group ${JSON.stringify(q.parent)} on this peer's view; GET /v1/tree (heddle tree) lists the groups`, issues: [{ field: "parent", in: "query", problem: "no such group" }] });
    }
    const parents = q.parent !== undefined ? [q.parent] : sortIds(new Set<string>([...v.groups(), ...v.roots()])).filter((g) => v.childrenOf(GroupId(g)).length > 0);
    const tuning = ctx.tuning === undefined ? undefined : { ...ctx.tuning, roster: ctx.roster };
    return { bounds: parents.map((p) => toWire(boundsOf(d, GroupId(p), tuning))) };
  });

  app.get(`${API_PREFIX}/peers`, { schema: { ...tags("data"), summary: "The roster with connection and liveness state" } }, async () => {
    const connected = ctx.connected();
    const unreachable = d.unreachable?.get() ?? new Set<string>();
    const live = ctx.lastLiveness();
    return {
      self: d.self,
      addrs: ctx.addrs(),
      peers: ctx.roster.map((p) => ({
        id: p.id,
        self: p.id === d.self,
        addrs: p.addrs,
        connected: p.id === d.self ? true : connected.has(p.id),
        unreachable: unreachable.has(p.id as ReplicaId),
        lastLiveness: toWire(live.get(p.id) ?? null),
      })),
    };
  });

  app.get(`${API_PREFIX}/status`, { schema: { ...tags("data"), summary: "This peer at a glance" } }, async () => {
    const v = view();
    const m = d.metrics?.();
    const connected = ctx.connected();
    const unreachable = d.unreachable?.get() ?? new Set<string>();
    return {
      self: d.self,
      mode: ctx.mode,
      root: ctx.root,
      genesisDigest: d.genesisDigest ?? null,
      epoch: d.epoch ?? null,
      pid: process.pid,
      uptimeMs: Date.now() - ctx.startedAt,
      ledgerDigest: fnv1a64(new TextEncoder().encode(v.encode())),
      mintedTotal: v.mintedTotal().toString(),
      leafSpentTotal: v.leafSpentTotal().toString(),
      conflicts: v.validate().map((c) => toWire(c)),
      peers: {
        roster: ctx.roster.length,
        connected: sortIds([...connected].filter((p) => p !== d.self)),
        unreachable: sortIds(unreachable),
      },
      reservationsOpen: m?.reservationsOpen ?? null,
      failed: m?.failed ?? false,
      framesRejected: m === undefined ? null : Object.values(m.framesRejected).reduce((a, b) => a + b, 0),
      schedulerTicks: ctx.scheduler.ticks,
      schedulerFailures: ctx.scheduler.failures().map((f) => ({ ...f, firstAt: new Date(f.firstAt).toISOString(), lastAt: new Date(f.lastAt).toISOString() })),
      control:
        ctx.control === null
          ? null
          : (() => {
              const c = ctx.control;
              const cv = c.controlView();
              return { ...toWire(c.raft()) as object, appliedIndex: cv.appliedIndex, isWritable: c.isWritable, enrolled: sortIds(cv.roster.enrolled), mintedTotal: cv.mintedTotal().toString(), halted: c.halted?.() ?? null };
            })(),
    };
  });

  // ---- control plane ---------------------------------------------------------------------------
  const GRANTED = { mode: "granted", guarantee: CLAIM_GUARANTEES.granted };
  const STATIC_MODE = {
    error: "static-mode",
    message:
      "this peer runs in static mode: its supply and topology are fixed by the genesis in its config; mint, reshape, enroll, depart and granted claims need a governed cluster (mode.kind = \"governed\", e.g. heddle init --mode governed); keeper and advisory claims work here",
  };

  const control = (req: FastifyRequest, reply: FastifyReply, act: (cp: ControlPlane, opts: CallOptions) => Promise<ClaimsOutcome>, extra: object = {}) =>
    controlAnswer(idempotencyKey(req), "headers", reply, act, extra);
  /** A control call's answer to `reply`; `ik` is its Idempotency-Key (null: none), checked here, and `ikPart` where it came from. */
  const controlAnswer = async (ik: string | null | FieldIssue, ikPart: string, reply: AnswerSink, act: (cp: ControlPlane, opts: CallOptions) => Promise<ClaimsOutcome>, extra: object = {}) => {
    const cp = ctx.control;
    if (cp === null) return reply.code(409).send(STATIC_MODE);
    if (ik !== null && typeof ik !== "string") return sendInvalid(reply, ikPart, [ik]);
    const opts: CallOptions = { timeoutMs: ctx.limits.controlTimeoutMs };
    if (ik !== null) opts.key = proposalKeyOf(ik);
    let o: ClaimsOutcome;
    try {
      o = await act(cp, opts);
    } catch (e) {
      return sendControlError(reply, e, ctx.logger, ctx.control);
    }
    // Refusals count alike whether the log answered them or the leader did at a confirmed read.
    const claims = o.kind === "applied" || o.kind === "refused-at-read" ? (o.claims as { ok?: boolean; blocked?: { reason?: string }[]; invalid?: string } | undefined) : undefined;
    if (claims !== undefined && claims !== null && claims.ok === false) ctx.metrics?.claimRefused(claims.invalid !== undefined ? "invalid" : (claims.blocked?.[0]?.reason ?? "unknown"));
    return sendOutcome(reply, o, extra, { idempotencyKey: ik, mintedTotal: () => cp.controlView().mintedTotal().toString() });
  };

  // The call wire (call-wire.ts) carries every route below: the same check of the body and the key, the same act,
  // the same status and body as the HTTP route.
  const wireRoutes = new Map<string, WireRoute>();
  const cpost = (path: string, summary: string, body: TSchema, act: (cp: ControlPlane, b: never, opts: CallOptions) => Promise<ClaimsOutcome>): void => {
    const validate = validatorOf(body, "body");
    const extra = path.startsWith("/claims") ? GRANTED : {};
    wireRoutes.set(path, (text, key) =>
      new Promise<WireAnswer>((resolve, reject) => {
        const sink: AnswerSink = { code: (status) => ({ send: (b: unknown) => resolve({ status, body: b }) }) };
        const parsed = wireBody(text);
        if ("issue" in parsed) return void sendInvalid(sink, "body", [parsed.issue]);
        const v = validate(parsed.value);
        if (v.error !== undefined) return void sendInvalid(sink, "body", v.error.issues);
        // a throw while answering (HTTP's error handler would answer 500) reaches the wire, which answers 500 too
        controlAnswer(wireKey(key), "frame", sink, (cp, opts) => act(cp, v.value as never, opts), extra).catch(reject);
      }),
    );
    keyedRoutes.add(`POST ${API_PREFIX}${path}`);
    app.post(`${API_PREFIX}${path}`, { schema: { ...tags(path.startsWith("/claims") ? "claims" : "control"), summary, body, response: { 200: S.AppliedOk, 409: S.ErrorBody } } }, (req, reply) =>
      // granted claims say which guarantee they give, as the keeper and advisory answers do
      control(req, reply, (cp, opts) => act(cp, req.body as never, opts), path.startsWith("/claims") ? GRANTED : {}),
    );
  };

  cpost("/control/mint", "Create supply at the root for a holder (one log entry)", S.MintBody, (cp, b: { holder?: string; amount: string | number }, opts) => {
    const amount = amountOf(b.amount);
    if (amount === null) throw new RangeError("mint: amount is above 2^63 − 1");
    if (b.holder === undefined && opts.key !== undefined) throw new RangeError(defaultUnderKey("mint", "holder", d.self));
    return cp.mint(ReplicaId(b.holder ?? d.self), amount, opts);
  });
  cpost("/control/prepare", "Prepare a new edge (a new generation); 400 naming child when the child is the parent or the root; refused 409 naming weight when its parent's children's weights would sum past 2^63 − 1", S.PrepareBody, (cp, b: { id: string; parent: string; child: string; weight: number | string }, opts) => {
    // the control log would refuse these (governed.md §3.4: invalidRecord selfLoop / rootAsChild, as the ledger's
    // prepare does) — after committing an entry for nothing, and with a 409 that reads like a race: refuse them here
    if (b.child === b.parent) throw new RangeError(`prepare: child is ${JSON.stringify(b.child)}, the same group as parent: an edge joins a parent to another group; name the child group to attach under ${JSON.stringify(b.parent)}`);
    if (b.child === ctx.root) throw new RangeError(`prepare: child is ${JSON.stringify(b.child)}, the root (mode.root): the root has no parent; attach another group below it (parent ${JSON.stringify(ctx.root)}, child the new group)`);
    const record: AttachmentRecord = { id: AttachmentId(b.id), parent: GroupId(b.parent), child: GroupId(b.child), weight: parseWeight(b.weight) };
    const problem = weightSumProblem(view(), record);
    if (problem !== null) throw new WeightSumRefused(record, problem.message);
    return cp.prepare(record, opts);
  });
  cpost("/control/activate", "Activate a prepared edge", S.EdgeBody, (cp, b: { edge: string }, opts) => cp.activate(AttachmentId(b.edge), opts));
  cpost("/control/close", "Close an active edge (it drains)", S.EdgeBody, (cp, b: { edge: string }, opts) => cp.close(AttachmentId(b.edge), opts));
  cpost("/control/retire", "Retire a drained (or unused prepared) edge", S.EdgeBody, (cp, b: { edge: string }, opts) => cp.retire(AttachmentId(b.edge), opts));
  cpost("/control/enroll", "Enroll a replica as a ledger writer (a peer of this cluster's roster)", S.EnrollBody, (cp, b: { replica?: string }, opts) => {
    if (b.replica === undefined && opts.key !== undefined) throw new RangeError(defaultUnderKey("enroll", "replica", d.self));
    const replica = b.replica ?? d.self;
    // an id off the roster can never connect (peers accept roster members only), so enrolling it would only add a
    // writer that never writes — and a typo stays on the control roster for good (found by a new user's walkthrough)
    if (!ctx.roster.some((p) => p.id === replica)) {
      throw new RangeError(`enroll: replica is ${JSON.stringify(replica)}, not a peer of this cluster's roster (the config's roster[]); add it to every peer's config first, or check the id (heddle peers lists them)`);
    }
    return cp.enroll(ReplicaId(replica), opts);
  });
  cpost("/control/depart", "Depart this peer (it promises to write no more ledger slots)", S.EmptyBody, (cp, _b, opts) => cp.depart(opts));
  cpost("/claims/take", "Take claims, all or nothing (granted mode)", S.TakeBody, (cp, b: Parameters<ControlPlane["claims"]["take"]>[0], opts) => cp.claims.take(b, opts));
  cpost("/claims/release", "Release one claim (with token: only the grant stamped with it)", S.ReleaseBody, (cp, b: { holder: string; key: string; token?: number }, opts) =>
    cp.claims.release(b.holder, b.key, b.token === undefined ? opts : { ...opts, token: b.token }),
  );
  cpost("/claims/renew", "Renew a lease", S.HolderKeyBody, (cp, b: { holder: string; key: string }, opts) => cp.claims.renew(b.holder, b.key, opts));
  cpost("/claims/release-all", "Release everything a holder holds", S.HolderBody, (cp, b: { holder: string }, opts) => cp.claims.releaseAll(b.holder, opts));
  cpost("/claims/release-scope", "Release every claim of a scope", S.ScopeBody, (cp, b: { scope: string }, opts) => cp.claims.releaseScope(b.scope, opts));

  app.get(`${API_PREFIX}/claims`, { schema: { ...tags("control"), summary: "Open claims (local applied prefix)", querystring: S.ClaimsQuery } }, async (req, reply) => {
    const cp = ctx.control;
    if (cp === null) return reply.code(409).send(STATIC_MODE);
    const q = req.query as { key?: string };
    const v = cp.claims.view();
    // leases judged as the next take would judge them (claims.md §2 rule 9 lets a read pass `now`): the table's own
    // clock stands still between claims commands, and a lapsed lease would be listed as held for as long
    const now = cp.claims.judgeTime?.();
    if (q.key !== undefined) return { ...GRANTED, judgedAt: now ?? null, key: q.key, holders: toWire(v.holders(q.key, now)), owner: v.owner(q.key, now) ?? null };
    return { ...GRANTED, judgedAt: now ?? null, open: toWire(v.open(now)) };
  });

  registerGossipClaims(app, API_PREFIX, d.gossipClaims, sendInvalid);

  app.post(`${API_PREFIX}/control/sync`, { schema: { ...tags("control"), summary: "A linearizable read of the control state" } }, async (_req, reply) => {
    const cp = ctx.control;
    if (cp === null) return reply.code(409).send(STATIC_MODE);
    try {
      const v = await cp.sync({ timeoutMs: ctx.limits.controlTimeoutMs });
      return { appliedIndex: v.appliedIndex, mintedTotal: v.mintedTotal().toString(), enrolled: sortIds(v.roster.enrolled) };
    } catch (e) {
      return sendControlError(reply, e, ctx.logger, ctx.control);
    }
  });
  app.get(`${API_PREFIX}/control/roster`, { schema: { ...tags("control"), summary: "The enrolled roster (local applied prefix)" } }, async (_req, reply) => {
    const cp = ctx.control;
    if (cp === null) return reply.code(409).send(STATIC_MODE);
    const r = cp.roster();
    return { appliedIndex: r.appliedIndex, enrolled: sortIds(r.enrolled), raft: toWire(cp.raft()) };
  });
  app.get(`${API_PREFIX}/control/view`, { schema: { ...tags("control"), summary: "The control state: mints and edge lifecycles (local applied prefix)" } }, async (_req, reply) => {
    const cp = ctx.control;
    if (cp === null) return reply.code(409).send(STATIC_MODE);
    const cv = cp.controlView();
    const v = view();
    const edges = v.knownEdges().flatMap((e) => {
      const rec = cv.record(e);
      return rec === undefined ? [] : [{ id: e, record: toWire(rec), lifecycle: cv.lifecycle(e) ?? null }];
    });
    return { appliedIndex: cv.appliedIndex, mintedTotal: cv.mintedTotal().toString(), minted: toWire(cv.minted()), edges };
  });
  app.get(`${API_PREFIX}/control/outcome`, { schema: { ...tags("control"), summary: "The outcome of an earlier act, by ProposalKey or Idempotency-Key (an Idempotency-Key is remembered for the last 10 000 control-log entries)", querystring: S.OutcomeQuery } }, async (req, reply) => {
    const cp = ctx.control;
    if (cp === null) return reply.code(409).send(STATIC_MODE);
    const q = req.query as { client?: string; seq?: string; idempotencyKey?: string };
    let key: ProposalKey;
    if (q.idempotencyKey !== undefined) key = proposalKeyOf(q.idempotencyKey);
    else if (q.client !== undefined && q.seq !== undefined) {
      const seq = Number(q.seq);
      if (!Number.isSafeInteger(seq)) return sendInvalid(reply, "querystring", [{ field: "seq", problem: `is above ${Number.MAX_SAFE_INTEGER} (2^53 − 1), the largest ProposalKey.seq` }]);
      key = { client: q.client, seq };
    }
    else if (q.client !== undefined) return sendInvalid(reply, "querystring", [{ field: "seq", problem: "is missing: give seq with client (or an idempotencyKey alone)" }]);
    else if (q.seq !== undefined) return sendInvalid(reply, "querystring", [{ field: "client", problem: "is missing: give client with seq (or an idempotencyKey alone)" }]);
    else return sendInvalid(reply, "querystring", [{ field: "idempotencyKey", problem: "give idempotencyKey, or client and seq" }]);
    const cv = cp.controlView();
    const o = cv.outcomeOf(key);
    const kr = cv.keyRetention?.();
    if (o === "unknown" && q.idempotencyKey !== undefined && kr !== undefined) {
      // an Idempotency-Key is remembered for the last N entries only, and nothing of a forgotten one is kept:
      // "never used" and "forgotten" look alike once anything was forgotten, so say which it can be
      const retention = { entries: kr.entries, forgottenThrough: kr.forgottenThrough, appliedIndex: cv.appliedIndex };
      const message =
        kr.forgottenThrough === 0
          ? "no act was applied under this Idempotency-Key on this peer's applied prefix"
          : `no outcome recorded under this Idempotency-Key in the last ${kr.entries} control-log entries: it was never used, or used at an index ≤ ${kr.forgottenThrough} and forgotten; a call with it now is a new act`;
      return reply.code(404).send({ error: "not-found", message, key, retention });
    }
    if (o === "unknown" || o === "pruned") return reply.code(404).send({ error: "not-found", message: `no recorded outcome for this key (${o})`, key });
    return { key, outcome: toWire(o) };
  });
  app.post(`${API_PREFIX}/control/leader/transfer`, { schema: { ...tags("control"), summary: "Hand Raft leadership to another voter", body: S.TransferBody } }, async (req, reply) => {
    const cp = ctx.control;
    if (cp === null) return reply.code(409).send(STATIC_MODE);
    const to = (req.body as { to: string }).to;
    try {
      await cp.transferLeadership(to, { timeoutMs: ctx.limits.controlTimeoutMs });
      return { leader: cp.raft().leader };
    } catch (e) {
      return sendControlError(reply, e, ctx.logger, ctx.control);
    }
  });

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  if (ctx.metrics !== undefined) {
    const metrics = ctx.metrics;
    app.get("/metrics", { schema: { hide: true } }, async (_req, reply) => reply.type(metrics.contentType).send(await metrics.text()));
  }
  ctx.dashboard?.register(app);
  const wire = new CallWireServer({
    token: ctx.token,
    routes: wireRoutes,
    maxBodyBytes: ctx.limits.maxBodyBytes,
    logger: ctx.logger,
    ...(ctx.metrics !== undefined ? { observe: observeWire(ctx.metrics) } : {}),
  });
  ctx.metrics?.watchCallWire(wire.stats);
  answerUpgrades(app, [(req, socket, head) => wire.handleUpgrade(req, socket, head), ...(ctx.dashboard !== undefined ? [ctx.dashboard.handleUpgrade.bind(ctx.dashboard)] : [])]);
  // before the server closes: it waits for every connection, an upgraded one too
  app.addHook("preClose", async () => wire.close());
  return app;
}

/** The API's request metrics for a call on the wire: the HTTP route's pattern, method `WIRE`. */
function observeWire(m: DaemonMetrics): (path: string, status: number, seconds: number) => void {
  const routes = new Map<string, string>();
  return (path, status, seconds) => {
    let r = routes.get(path);
    if (r === undefined) {
      r = path.startsWith("/") && !path.startsWith("(") ? `${API_PREFIX}${path}` : path;
      if (routes.size < 64) routes.set(path, r);
    }
    m.observeRequest(r, "WIRE", status, seconds);
  };
}

/** A call's body text as its route's validator takes it: "" is no body; not JSON, or a repeated or prototype key, is the issue. */
function wireBody(text: string): { value: unknown } | { issue: FieldIssue } {
  if (text.trim() === "") return { value: undefined };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { issue: { field: "(body)", problem: `is not valid JSON: ${(e as Error).message}` } };
  }
  const bad = jsonKeyProblem(text);
  return bad !== null ? { issue: bad } : { value };
}

/** A call frame's Idempotency-Key, checked as the header is: null for none, the issue naming it when it is bad. */
function wireKey(key: string | null): string | null | FieldIssue {
  if (key === null) return null;
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) return { field: "idempotencyKey", problem: `must be 1 … ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters` };
  return key;
}

/** Whether `g` is a group of the view: the root of a mint, or the parent or child of some edge. */
function knownGroup(v: ReturnType<ApiContext["data"]["ledger"]["get"]>, g: string): boolean {
  return v.roots().includes(GroupId(g)) || v.groups().includes(GroupId(g));
}

function refusalMessage(r: { kind: string }): string {
  switch (r.kind) {
    case "insufficient":
      return "this peer does not hold enough entitlement at that leaf right now; stand demand for it (POST /v1/demand) and retry after a schedule round";
    case "not-a-leaf":
      return "work is reserved at leaf groups only";
    case "no-lineage":
      return "the group has no live path to the root on this peer's view (quarantined, detached or mid-reshape)";
    case "root-leaf":
      return "the root has no edge to charge; reserve at a group below it";
    case "invalid-cost":
      return "maximumCost must be a positive amount";
    case "not-writable":
      return "this peer is not an enrolled writer (governed mode: it enrolls itself at start; after a depart, enroll it again with heddle enroll)";
    case "cost-out-of-range":
      return "actualCost must lie between 0 and the reservation's maximumCost";
    case "closed":
      return "this peer has failed closed or is shutting down; restart it";
    default:
      return `refused: ${r.kind}`;
  }
}

function conflictMessage(c: { reason: string; [k: string]: unknown }, at: ConflictContext): string {
  switch (c.reason) {
    case "dualInbound":
      return `conflict dualInbound: ${String(c["child"])} already has a live inbound edge, ${String(c["incumbent"])}; retire it first (heddle reshape does the whole recipe)`;
    case "notDrained":
      return `conflict notDrained: ${String(c["edge"])} still has outstanding entitlement; wait for it to drain, then retry`;
    case "keyReuse":
      return keyReuseMessage(c, at);
    case "unknownEdge":
      return `conflict unknownEdge: no edge ${String(c["edge"])} in the control log; prepare it first`;
    case "recordMismatch": {
      const e = toWire(c["existing"]) as { parent?: string; child?: string; weight?: string };
      return `conflict recordMismatch: edge ${String(c["edge"])} is already prepared as ${e.parent} → ${e.child} (weight ${e.weight}), and an edge id names one record for good; prepare the new record under a new edge id (heddle reshape picks one), or use ${String(c["edge"])} as it is`;
    }
    case "invalidRecord":
      return c["detail"] === "rootAsChild"
        ? `conflict invalidRecord (rootAsChild): edge ${String(c["edge"])} names the root as its child, and the root has no parent; attach another group below the root`
        : `conflict invalidRecord (${String(c["detail"])}): edge ${String(c["edge"])} joins a group to itself; name another group as its child`;
    case "wouldCycle":
      return `conflict wouldCycle: activating ${String(c["edge"])} would close a cycle through ${(c["path"] as unknown[] | undefined)?.map(String).join(", ") ?? "its parent's lineage"} (its child is an ancestor of its parent); attach the child under a group that is not below it, or move that group first (heddle reshape)`;
    case "lifecycleRegression":
      return `conflict lifecycleRegression: ${String(c["edge"])} is ${String(c["current"])}, and an edge's lifecycle only moves forward (PREPARED → ACTIVE → CLOSING → RETIRED), never back to ${String(c["requested"])}; to attach its child again, prepare a new edge id and activate it (heddle reshape CHILD --parent P does the whole recipe)`;
    case "notClosing":
      return `conflict notClosing: ${String(c["edge"])} is ${String(c["current"])}; close it first (heddle close ${String(c["edge"])}), wait for it to drain, then retire it — or let heddle reshape do the recipe`;
    case "notActive":
      return `conflict notActive: ${String(c["edge"])} is ${String(c["current"])} and was never activated, so there is nothing to close; activate it (heddle activate ${String(c["edge"])}), or retire it to abandon it (heddle retire ${String(c["edge"])})`;
    case "notSelf":
      return `conflict notSelf: a peer departs only itself, and ${String(c["proposer"])} proposed the depart of ${String(c["replica"])}; send the depart to ${String(c["replica"])}'s own API (heddle depart --config its heddle.json)`;
    case "overflow": {
      const total = at.mintedTotal();
      const room = total === null ? null : (MAX_AMOUNT - BigInt(total)).toString();
      return `conflict overflow: this mint would take the cluster's minted total (${total ?? "see GET /v1/control/view"}) past 2^63 − 1, the ledger's largest amount; nothing was minted${room === null ? "" : `. At most ${room} more can be minted`}: mint less (GET /v1/control/view shows mintedTotal)`;
    }
    case "stale":
      return `conflict stale: this key's seq is below what its client already acknowledged, so the call is a late duplicate of an act answered before; nothing was applied now. See what that act did with ${outcomeLookup(c, at)} before acting again`;
    default:
      return `conflict ${c.reason}`;
  }
}

/** Where the outcome recorded under a conflict's key is read: by the call's Idempotency-Key, else by its ProposalKey. */
function outcomeLookup(c: { [k: string]: unknown }, at: ConflictContext): string {
  const k = c["key"] as { client?: unknown; seq?: unknown } | undefined;
  if (at.idempotencyKey !== null) return `GET /v1/control/outcome?idempotencyKey=${encodeURIComponent(at.idempotencyKey)} (heddle outcome --idempotency-key ${at.idempotencyKey})`;
  if (typeof k?.client === "string" && typeof k.seq === "number") return `GET /v1/control/outcome?client=${encodeURIComponent(k.client)}&seq=${k.seq} (heddle outcome --client ${k.client} --seq ${k.seq})`;
  return "GET /v1/control/outcome";
}

/**
 * keyReuse: the key already names another act (another verb, or other arguments), and that act may well have applied.
 * "Send a new key" would be wrong advice for a retry that merely differs (a mint whose holder defaulted on another
 * peer was one): look up what the key did first; only an act that is truly new takes a new key.
 */
function keyReuseMessage(c: { [k: string]: unknown }, at: ConflictContext): string {
  const lookup = outcomeLookup(c, at);
  return (
    "conflict keyReuse: this key was already used for another act (another verb, or other arguments), which may have applied; nothing was applied now. " +
    `See what the key did with ${lookup} before sending anything else: if that act is the one you meant, it is done (send it again exactly as first sent); only a truly new act takes a new key`
  );
}

/** A refused take in words, naming whom to ask (claims.md rule 3): "the claim was refused: deploy is held by alice". */
function blockedText(refusal: unknown): string {
  const r = refusal as { blocked?: { key: string; reason: string; holders?: readonly string[] }[]; invalid?: string };
  if (r.invalid !== undefined) return `the claim was refused: ${r.invalid}`;
  const parts = (r.blocked ?? []).map((b) => (b.holders !== undefined && b.holders.length > 0 ? `${b.key} is ${b.reason} by ${b.holders.join(", ")}` : `${b.key}: ${b.reason}`));
  return `the claim was refused (blocked): ${parts.join("; ")}; see refusal.blocked`;
}

/** What a conflict's message may name beyond the conflict itself: the call's own Idempotency-Key (null: sent without one), the minted total. */
interface ConflictContext {
  readonly idempotencyKey: string | null;
  /** The control state's minted total (decimal), for an overflow's room; null when it cannot be read. */
  readonly mintedTotal: () => string | null;
}

function sendOutcome(reply: AnswerSink, o: ClaimsOutcome, extra: object, at: ConflictContext) {
  if (o.kind === "conflict") {
    return reply.code(409).send({ error: "conflict", message: conflictMessage(o.conflict, at), conflict: toWire(o.conflict), index: o.index, key: o.key, ...extra });
  }
  if (o.kind === "refused-at-read") {
    return reply.code(409).send({
      ...extra,
      error: "refused",
      message: `${blockedText(o.claims)} (answered by the leader at a confirmed read; nothing was committed)`,
      refusal: { kind: "blocked", ...(toWire(o.claims) as object) },
      committed: false,
      readIndex: o.readIndex,
      judgedAt: o.judgedAt,
      index: null,
      key: null,
    });
  }
  const claims = o.claims as { ok?: boolean } | undefined;
  if (claims !== undefined && claims !== null && typeof claims === "object" && claims.ok === false) {
    return reply.code(409).send({ error: "refused", message: blockedText(claims), refusal: { kind: "blocked", ...(toWire(claims) as object) }, committed: true, index: o.index, key: o.key, ...extra });
  }
  return reply.code(200).send({ ...(toWire(o) as object), ...extra });
}

/**
 * The body field an argument error of the control plane is about: its messages read "<verb>: [request.]<field> must …"
 * (or "is …", "repeats …"), e.g. "claims.take: request.resources[0].key must not be empty" → `resources[0].key`.
 * A message of any other shape names no field: "(body)".
 */
export function argumentField(message: string): string {
  const m = /^[A-Za-z.]+: (?:request\.)?([A-Za-z]\w*(?:\[\d+\])?(?:\.[A-Za-z]\w*)?) (?:must|is|repeats) /.exec(message);
  return m?.[1] ?? "(body)";
}

/**
 * The 504 body of a control call whose outcome is unknown. A keyed call is retried with its key; an unkeyed
 * one (an `auto:` key the caller cannot send back) is told to look its outcome up first, since a plain retry
 * may apply the act twice.
 */
export function outcomeUnknownAnswer(key: unknown, cause?: unknown): { error: "outcome-unknown"; message: string; key: unknown; cause?: string } {
  const k = key as { client?: unknown; seq?: unknown } | null | undefined;
  const keyed = typeof k?.client === "string" && k.client.startsWith(IDEMPOTENCY_CLIENT_PREFIX);
  const lookup = typeof k?.client === "string" && typeof k.seq === "number" ? `GET /v1/control/outcome?client=${encodeURIComponent(k.client)}&seq=${k.seq}` : "GET /v1/control/outcome";
  return {
    error: "outcome-unknown",
    message: keyed
      ? "the act was proposed but did not apply in time; it may still commit. Retry with the same Idempotency-Key to apply it at most once"
      : `the act was proposed but did not apply in time; it may still commit. This call had no Idempotency-Key, so a plain retry may apply it twice: check ${lookup} first, and send an Idempotency-Key to make retries safe`,
    key: toWire(key ?? null),
    // what the control log said, when it said something (e.g. etcd refusing the peer's user on the prefix): a
    // retry will not help until the operator fixes that
    ...(cause instanceof Error ? { cause: `${cause.name}: ${cause.message}` } : {}),
  };
}

/** A prepare the API refuses before proposing it: see weight-sum.ts. */
class WeightSumRefused extends Error {
  override readonly name = "WeightSumRefused";
  readonly record: AttachmentRecord;

  constructor(record: AttachmentRecord, message: string) {
    super(message);
    this.record = record;
  }
}

function sendControlError(reply: AnswerSink, e: unknown, logger: Logger, control: ControlPlane | null) {
  const err = e as Error & { key?: unknown };
  if (err instanceof WeightSumRefused) {
    return reply.code(409).send({
      error: "refused",
      message: err.message,
      refusal: { kind: "weight-sum-overflow", field: "weight", parent: err.record.parent, weight: fractionText(err.record.weight), limit: "9223372036854775807" },
      issues: [{ field: "weight", in: "body", problem: err.message }],
      committed: false,
      index: null,
      key: null,
    });
  }
  if (err instanceof RangeError || err instanceof TypeError) {
    return reply.code(400).send({ error: "invalid-request", message: err.message, issues: [{ field: argumentField(err.message), in: "body", problem: err.message }] });
  }
  switch (err?.name) {
    case "NotLeaderHereError":
      return reply.code(409).send({ error: "refused", message: err.message, refusal: { kind: "not-leader", leader: (err as { leader?: string | null }).leader ?? null } });
    case "LeadershipTransferError":
      return reply.code(409).send({ error: "refused", message: err.message, refusal: { kind: "transfer-failed", reason: (err as { reason?: string }).reason ?? null } });
    case CONTROL_ERRORS.outcomeUnknown:
      return reply.code(504).send(outcomeUnknownAnswer(err.key, (err as { cause?: unknown }).cause));
    case CONTROL_ERRORS.notProposed:
      // a definite "not applied": the call's time ran out (or it aborted) before anything was proposed
      return reply.code(503).send({ error: "unavailable", message: err.message, committed: false, index: null, key: null });
    case CONTROL_ERRORS.shutdown: {
      // the Raft member stopped on a failed log write: say so, and what to do, rather than "the node closed"
      const failed = control?.raft().log?.failed ?? null;
      if (failed !== null) {
        return reply.code(503).send({ error: "unavailable", message: `${err.name}: the Raft log store failed (${failed}); this peer's Raft member has stopped (failed closed). Restart it once the disk is writable` });
      }
      return reply.code(503).send({ error: "unavailable", message: `${err.name}: ${err.message}` });
    }
    case CONTROL_ERRORS.halted:
      return reply.code(503).send({ error: "unavailable", message: `${err.name}: ${controlHaltOf(err).message}` });
    case "EtcdLogCorruptError":
      // etcd answered, but a value under the control log's prefix is malformed (the message says which and how to
      // fix it): nothing was appended, and no act can be until an operator fixes it
      return reply.code(503).send({ error: "unavailable", message: `${err.name}: ${err.message}`, committed: false, index: null, key: null });
    case CONTROL_ERRORS.incarnationReused:
      return reply.code(503).send({ error: "unavailable", message: `${err.name}: ${err.message}` });
    default:
      logger.error("control call failed", { error: err?.stack ?? String(e) });
      return reply.code(500).send({ error: "internal", message: `the control call failed: ${err?.message ?? String(e)}` });
  }
}
