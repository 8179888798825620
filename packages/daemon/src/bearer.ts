// The bearer-token check every HTTP route of a peer runs first (API, /metrics), as a fastify onRequest hook.
// Paths a caller declares public (the dashboard's static page and modules, which hold no data) pass.
import { timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";

/** True iff `given` is `token` (constant time in the token's length). */
export function sameToken(given: string, token: Buffer): boolean {
  const g = Buffer.from(given, "utf8");
  return g.length === token.length && timingSafeEqual(g, token);
}

/** A fastify onRequest hook answering 401 (with what to do) unless the request carries `Bearer <token>`. */
export function bearerHook(tokenText: string, isPublic: (path: string, method: string) => boolean = () => false) {
  const token = Buffer.from(tokenText, "utf8");
  return async (req: FastifyRequest, reply: FastifyReply) => {
    if (isPublic(req.url.split("?")[0]!, req.method)) return;
    const h = req.headers.authorization;
    // the scheme is case-insensitive (RFC 9110 §11.1): "bearer" and "BEARER" are "Bearer"
    if (h === undefined || !/^bearer /i.test(h) || !sameToken(h.slice(7), token)) {
      reply.header("www-authenticate", 'Bearer realm="heddle"');
      return reply.code(401).send({
        error: "unauthorized",
        message:
          h === undefined
            ? "this API needs a bearer token: send 'Authorization: Bearer <token>' with the token from the peer's api.tokenFile"
            : "the bearer token is wrong: use the token in this peer's api.tokenFile (each peer has its own)",
      });
    }
  };
}
