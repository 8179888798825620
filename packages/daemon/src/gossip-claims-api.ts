// Keeper and advisory claims on the HTTP API (claims.md §3–4), next to the granted routes of api.ts. They are served
// by this peer's node from the slots it has heard (channel 5 gossip): no log entry, no leader, and they work on a
// static peer and on a minority side of a partition. Every answer carries `mode` and `guarantee`.
import type { FastifyInstance, FastifyReply } from "fastify";
import { Type } from "@sinclair/typebox";
import { CLAIM_GUARANTEES } from "@heddle/claims";
import type { AdvisoryAnswer, GossipClaims, KeeperAnswer } from "@heddle/node";
import { Id, Obj } from "./schema.ts";

const Part = Id("a keeper part named in the config's claims.keeper.parts", 1024);
const Item = Id("the item claimed", 1024);
const Time = (description: string) => Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description }));

/** `POST /v1/claims/keeper` */
export const KeeperBody = Obj({
  part: Part,
  active: Type.Optional(Type.Boolean({ description: "the person is at this peer now (follows-you parts follow them)" })),
  take: Type.Optional(Type.Boolean({ description: "take the part here on purpose (stays-put parts stay with the latest take)" })),
  wroteUpTo: Time("how far this peer has written its records"),
});
/** `POST /v1/claims/keeper/close` */
export const KeeperCloseBody = Obj({ part: Part, wroteUpTo: Time("how far this peer wrote its records before it stopped") });
/** Query of `GET /v1/claims/keeper` */
export const KeeperQuery = Obj({ part: Type.Optional(Part) });
/** `POST /v1/claims/advisory` */
export const AdvisoryBody = Obj({
  item: Item,
  ttlMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 604_800_000, description: "the claim's lease (default: the config's claims.advisory.ttlMs)" })),
});
/** `POST /v1/claims/advisory/drop` */
export const AdvisoryDropBody = Obj({ item: Item });
/** Query of `GET /v1/claims/advisory` */
export const AdvisoryQuery = Obj({ item: Type.Optional(Item) });
/** `POST /v1/claims/advisory/next` */
export const AdvisoryNextBody = Obj({ candidates: Type.Array(Item, { minItems: 1, maxItems: 4096, description: "the tied work to choose from" }) });

/** A keeper answer as JSON: every field present (`null` where nothing holds). */
export function keeperWire(a: KeeperAnswer) {
  return {
    mode: a.mode,
    guarantee: a.guarantee,
    part: a.part,
    rule: a.rule,
    keeper: a.keeper ?? null,
    keeperSince: a.keeperSince ?? null,
    settled: a.settled,
    keeps: a.keeps,
    mayAct: a.mayAct,
    sure: a.sure,
    unheard: a.unheard,
    closed: a.closed.map((c) => ({ peer: c.peer, closedAt: c.closedAt, wroteUpTo: c.wroteUpTo ?? null })),
    claim: a.claim ?? null,
    at: a.at,
  };
}

/** An advisory answer as JSON. */
export function advisoryWire(a: AdvisoryAnswer) {
  return {
    mode: a.mode,
    guarantee: a.guarantee,
    item: a.item,
    holder: a.holder ?? null,
    claim: a.claim ?? null,
    mine: a.mine,
    own: a.own ?? null,
    duplicates: a.duplicates.map((d) => ({ item: d.item, winner: d.winner.peer, loser: d.loser.peer, loserClaimedAt: d.loser.claimedAt })),
    at: a.at,
  };
}

type Send = (reply: FastifyReply, part: string, issues: { field: string; problem: string }[]) => unknown;

/**
 * Registers the keeper and advisory routes under `prefix`. `claims` is this peer's node surface (absent on a data
 * plane that has none: the routes then answer 501). A bad part or item is a 400 naming the field; a write past a
 * named limit is a 409 `refused` naming the limit; a keeper write the store refused (the node failed closed) is a 503
 * `refused` of kind `closed`, like every write on a failed-closed peer; a keeper or advisory write on a node that is
 * shutting down is a 503 `unavailable` (refusal kind `closed`): nothing changed, and a running peer may take it.
 */
export function registerGossipClaims(app: FastifyInstance, prefix: string, claims: GossipClaims | undefined, sendInvalid: Send): void {
  const tags = { tags: ["claims"] };
  const call = (reply: FastifyReply, field: string, act: (c: GossipClaims) => unknown, where = "body") => {
    if (claims === undefined) return reply.code(501).send({ error: "unavailable", message: "this peer's node has no keeper or advisory claims" });
    try {
      return reply.code(200).send(act(claims));
    } catch (e) {
      const err = e as Error & { limit?: string };
      if (err.name === "ClaimsLimitError") {
        return reply.code(409).send({ error: "refused", message: `${err.message}`, refusal: { kind: "limit", limit: err.limit ?? null } });
      }
      if (err.name === "ClaimsPersistError") {
        // the node's store refused the keeper write: the node has failed closed, as for a reservation (api.ts)
        return reply.code(503).send({ error: "refused", message: `this peer has failed closed (its store refused the keeper write; the log says store commit failed); restart it once the store is writable. Nothing changed`, refusal: { kind: "closed" } });
      }
      if (err.name === "ClaimsClosedError") {
        // the node is shutting down (its claims layer closes first): the write is fine, this peer just cannot take it
        return reply.code(503).send({ error: "unavailable", message: `this peer is shutting down (its node has closed its keeper and advisory claims); nothing changed. Retrying the write against a running peer is safe`, refusal: { kind: "closed" } });
      }
      if (err instanceof RangeError || err instanceof TypeError) return sendInvalid(reply, where, [{ field, problem: err.message }]);
      throw e;
    }
  };
  const parts = () => [...(claims?.parts.keys() ?? [])].sort();

  app.post(`${prefix}/claims/keeper`, { schema: { ...tags, summary: "Claim or renew this peer's keeper claim on a part (keeper mode); says who keeps it", body: KeeperBody } }, async (req, reply) => {
    const b = req.body as { part: string; active?: boolean; take?: boolean; wroteUpTo?: number };
    return call(reply, "part", (c) =>
      keeperWire(c.keeper(b.part, { ...(b.active === true ? { active: Date.now() } : {}), ...(b.take === true ? { take: true } : {}), ...(b.wroteUpTo !== undefined ? { wroteUpTo: b.wroteUpTo } : {}) })),
    );
  });
  app.post(`${prefix}/claims/keeper/close`, { schema: { ...tags, summary: "Close this peer's keeper claim on a part (keeper mode)", body: KeeperCloseBody } }, async (req, reply) => {
    const b = req.body as { part: string; wroteUpTo?: number };
    return call(reply, "part", (c) => keeperWire(c.closeKeeper(b.part, b.wroteUpTo)));
  });
  app.get(`${prefix}/claims/keeper`, { schema: { ...tags, summary: "Who keeps a part (or every configured part), without claiming (keeper mode)", querystring: KeeperQuery } }, async (req, reply) => {
    const q = req.query as { part?: string };
    if (q.part !== undefined) return call(reply, "part", (c) => keeperWire(c.look(q.part!)), "querystring");
    return call(reply, "part", (c) => ({ mode: "keeper", guarantee: CLAIM_GUARANTEES.keeper, parts: parts().map((p) => keeperWire(c.look(p))) }));
  });
  app.post(`${prefix}/claims/advisory`, { schema: { ...tags, summary: "Claim an item (advisory mode: no exclusion; the earliest claimant wins)", body: AdvisoryBody } }, async (req, reply) => {
    const b = req.body as { item: string; ttlMs?: number };
    return call(reply, "item", (c) => advisoryWire(c.advisory(b.item, b.ttlMs)));
  });
  app.post(`${prefix}/claims/advisory/drop`, { schema: { ...tags, summary: "Give up this peer's advisory claim on an item", body: AdvisoryDropBody } }, async (req, reply) => {
    const b = req.body as { item: string };
    return call(reply, "item", (c) => ({ mode: "advisory", guarantee: CLAIM_GUARANTEES.advisory, item: b.item, dropped: c.dropAdvisory(b.item) }));
  });
  app.get(`${prefix}/claims/advisory`, { schema: { ...tags, summary: "Who holds an item (or every held item) and the duplicates (advisory mode)", querystring: AdvisoryQuery } }, async (req, reply) => {
    const q = req.query as { item?: string };
    if (q.item !== undefined) return call(reply, "item", (c) => advisoryWire(c.holder(q.item!)), "querystring");
    return call(reply, "item", (c) => ({
      mode: "advisory",
      guarantee: CLAIM_GUARANTEES.advisory,
      holders: c.holders().map((h) => ({ item: h.item, holder: h.peer, claimedAt: h.claimedAt, expiresAt: h.expiresAt })),
      duplicates: c.duplicates().map((d) => ({ item: d.item, winner: d.winner.peer, loser: d.loser.peer, loserClaimedAt: d.loser.claimedAt })),
    }));
  });
  app.post(`${prefix}/claims/advisory/next`, { schema: { ...tags, summary: "This peer's order of tied work, and the first item nobody else holds (advisory mode)", body: AdvisoryNextBody } }, async (req, reply) => {
    const b = req.body as { candidates: string[] };
    return call(reply, "candidates", (c) => {
      const n = c.next(b.candidates);
      return { mode: "advisory", guarantee: CLAIM_GUARANTEES.advisory, order: n.order, first: n.first ?? null };
    });
  });
}
