// Request generator of the API fuzzer: routes from the OpenAPI document, values from their JSON schemas,
// then one or more hostile mutations (wrong types, missing/extra fields, huge values, int64 bounds, bad
// JSON, wrong content types, bad tokens and Idempotency-Keys, unknown paths and methods, raw bytes).

/** A small seeded PRNG (mulberry32): the same seed gives the same requests. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

type Schema = {
  type?: string;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
};

/** One route of the OpenAPI document with what it takes. */
export interface Route {
  readonly method: string;
  readonly path: string;
  readonly body: Schema | null;
  readonly query: readonly { name: string; required: boolean; schema: Schema }[];
}

/** The routes of an OpenAPI 3 document. */
export function routesOf(doc: unknown): Route[] {
  const out: Route[] = [];
  const paths = (doc as { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema: Schema }> }; parameters?: { in: string; name: string; required?: boolean; schema: Schema }[] }>> }).paths;
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      out.push({
        method: method.toUpperCase(),
        path,
        body: op.requestBody?.content?.["application/json"]?.schema ?? null,
        query: (op.parameters ?? []).filter((p) => p.in === "query").map((p) => ({ name: p.name, required: p.required === true, schema: p.schema })),
      });
    }
  }
  return out;
}

/** A request to send: either through the HTTP client, or as raw bytes on a socket. */
export interface FuzzRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly raw?: string;
  /** What was done, for the failure message. */
  readonly what: string;
}

/** What the generator knows about the daemon under test. */
export interface FuzzContext {
  readonly token: string;
  readonly self: string;
  readonly root: string;
  /** Ids seen so far (groups, edges, reservations): valid-looking values hit deeper code. */
  readonly ids: Set<string>;
  readonly maxBodyBytes: number;
}

const INT64_MAX = "9223372036854775807";

/** Values of the wrong type or at the edges of every range. */
const HOSTILE: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  -0.0,
  1e308,
  -1e308,
  2 ** 53,
  2 ** 53 + 2,
  2 ** 63,
  Number.MAX_SAFE_INTEGER,
  "",
  " ",
  "x",
  "0",
  "-1",
  "01",
  "1e3",
  "0x10",
  " 1",
  "1 ",
  "+1",
  "١٢",
  INT64_MAX,
  "9223372036854775808",
  "-9223372036854775808",
  "18446744073709551616",
  "9".repeat(400),
  "1/0",
  "0/1",
  "3/2",
  `${INT64_MAX}/1`,
  "1/" + INT64_MAX,
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "🦆".repeat(100),
  "../../etc/passwd",
  "%00",
  "x".repeat(256),
  "x".repeat(257),
  "x".repeat(513),
  [],
  [1, 2, 3],
  {},
  { __proto__: { polluted: 1 } },
  JSON.parse('{"__proto__": {"polluted": 1}}'),
  { constructor: { prototype: { polluted: 1 } } },
];

function matches(pattern: string | undefined, v: string): boolean {
  return pattern === undefined || new RegExp(pattern, "u").test(v);
}

function genString(rng: Rng, s: Schema, ctx: FuzzContext): string {
  const candidates: string[] = [];
  if (s.pattern !== undefined) {
    candidates.push(String(1 + rng.int(1000)), String(1 + rng.int(50)), INT64_MAX, `${1 + rng.int(9)}/${1 + rng.int(9)}`, "1");
  } else {
    candidates.push(...ctx.ids, ctx.root, ctx.self, `g${rng.int(20)}`, `e${rng.int(20)}`, "x".repeat(s.maxLength ?? 8));
  }
  const ok = candidates.filter((c) => matches(s.pattern, c) && c.length >= (s.minLength ?? 0) && c.length <= (s.maxLength ?? Infinity));
  return ok.length > 0 ? rng.pick(ok) : "1";
}

/** A value that (mostly) fits `s`. */
export function gen(rng: Rng, s: Schema, ctx: FuzzContext, depth = 0): unknown {
  if (s.anyOf !== undefined) return gen(rng, rng.pick(s.anyOf), ctx, depth);
  switch (s.type) {
    case "object": {
      const o: Record<string, unknown> = {};
      for (const [k, p] of Object.entries(s.properties ?? {})) {
        if ((s.required ?? []).includes(k) || rng.chance(0.5)) o[k] = gen(rng, p, ctx, depth + 1);
      }
      return o;
    }
    case "string":
      return genString(rng, s, ctx);
    case "integer":
    case "number": {
      const min = s.minimum ?? 0;
      const max = Math.min(s.maximum ?? 1_000_000, min + 1_000_000);
      return rng.chance(0.1) ? (s.maximum ?? min) : min + rng.int(max - min + 1);
    }
    case "boolean":
      return rng.chance(0.5);
    case "array":
      return [];
    default:
      return null;
  }
}

function deepNest(n: number): string {
  return "[".repeat(n) + "]".repeat(n);
}

/** One request to `route`: a valid one with probability ~0.1, else mutated one or more ways. */
export function fuzzRequest(rng: Rng, route: Route, ctx: FuzzContext): FuzzRequest {
  let method = route.method;
  let path = route.path;
  const headers: Record<string, string> = { authorization: `Bearer ${ctx.token}` };
  const what: string[] = [`${route.method} ${route.path}`];
  let body: unknown = route.body !== null ? gen(rng, route.body, ctx) : undefined;
  let bodyText: string | undefined;
  const query = new URLSearchParams();
  for (const q of route.query) {
    if (q.required || rng.chance(0.5)) query.set(q.name, String(gen(rng, q.schema, ctx)));
  }
  if (route.path === "/v1/control/depart") {
    // A valid depart ends this peer's writes for the rest of the run; only hostile departs are sent.
    body = { extra: 1 };
    what.push("depart with an extra field");
  }

  const mutations = rng.chance(0.1) ? 0 : 1 + rng.int(3);
  for (let m = 0; m < mutations; m++) {
    const kind = rng.int(14);
    switch (kind) {
      case 0:
      case 1:
      case 2: {
        // A field of the wrong type or at a bound.
        if (body !== null && typeof body === "object" && !Array.isArray(body)) {
          const keys = Object.keys(route.body?.properties ?? {});
          const k = keys.length > 0 && rng.chance(0.8) ? rng.pick(keys) : `extra${rng.int(3)}`;
          const v = rng.pick(HOSTILE);
          (body as Record<string, unknown>)[k] = v;
          what.push(`body.${k} = ${JSON.stringify(v)?.slice(0, 60)}`);
        } else if (route.query.length > 0) {
          const q = rng.pick(route.query);
          const v = String(rng.pick(HOSTILE));
          query.set(q.name, v);
          what.push(`query ${q.name} = ${v.slice(0, 60)}`);
        }
        break;
      }
      case 3: {
        // A required field missing.
        if (body !== null && typeof body === "object" && !Array.isArray(body)) {
          const keys = Object.keys(body as object);
          if (keys.length > 0) {
            const k = rng.pick(keys);
            delete (body as Record<string, unknown>)[k];
            what.push(`body.${k} removed`);
          }
        }
        for (const q of route.query) {
          if (rng.chance(0.5)) {
            query.delete(q.name);
            what.push(`query ${q.name} removed`);
          }
        }
        break;
      }
      case 4: {
        // An extra field / query parameter, or a repeated one.
        if (body !== null && typeof body === "object" && !Array.isArray(body)) {
          (body as Record<string, unknown>)[rng.pick(["priority", "__proto__", "constructor", "x".repeat(100)])] = rng.pick(HOSTILE);
          what.push("extra body field");
        }
        if (rng.chance(0.5)) {
          const name = route.query.length > 0 && rng.chance(0.7) ? rng.pick(route.query).name : "unknown";
          query.append(name, "a");
          query.append(name, "b");
          what.push(`query ${name} twice`);
        }
        break;
      }
      case 5: {
        // The body is not an object.
        body = rng.pick<unknown>([[], [body], "text", 42, null, true, INT64_MAX]);
        what.push(`body = ${JSON.stringify(body)?.slice(0, 60)}`);
        break;
      }
      case 6: {
        // Not JSON at all, or JSON that hurts parsers.
        const valid = JSON.stringify(body ?? {});
        bodyText = rng.pick([
          valid.slice(0, Math.max(0, valid.length - 1 - rng.int(4))),
          valid + "garbage",
          valid.replace("}", ",}"),
          "{'leaf': 'a'}",
          "{\"a\":1,\"a\":2}",
          '{"__proto__":{"polluted":true}}',
          '{"constructor":{"prototype":{"polluted":true}}}',
          deepNest(5_000),
          '{"a":' + deepNest(3_000) + "}",
          "\u0000\u0001\u0002",
          "\ufeff" + valid,
          "NaN",
          "{\"amount\": 1e999999}",
          "{\"amount\": -0}",
          "",
        ]);
        what.push(`raw body ${JSON.stringify(bodyText.slice(0, 60))}`);
        break;
      }
      case 7: {
        // A huge body or a huge string inside (413 above limits.maxBodyBytes, 400 below).
        const n = rng.pick([ctx.maxBodyBytes - 40, ctx.maxBodyBytes + 1, ctx.maxBodyBytes * 4]);
        const keys = Object.keys(route.body?.properties ?? { leaf: {} });
        body = { ...(typeof body === "object" && body !== null ? body : {}), [rng.pick(keys)]: "y".repeat(Math.max(1, n)) };
        what.push(`huge field of ${n} bytes`);
        break;
      }
      case 8: {
        // A wrong content type.
        headers["content-type"] = rng.pick([
          "text/plain",
          "application/x-www-form-urlencoded",
          "multipart/form-data; boundary=x",
          "application/json; charset=utf-16",
          "application/json; charset=latin1",
          "application/xml",
          "application/octet-stream",
          "application/jsonx",
          "json",
          "",
        ]);
        what.push(`content-type ${JSON.stringify(headers["content-type"])}`);
        break;
      }
      case 9: {
        // A bad or missing token.
        const t = rng.pick([
          null,
          "",
          "Bearer",
          "Bearer ",
          `bearer ${ctx.token}`,
          `Bearer  ${ctx.token}`,
          `Bearer ${ctx.token} `,
          `Bearer ${ctx.token}x`,
          `Bearer ${ctx.token.slice(0, -1)}`,
          `Basic ${Buffer.from(`u:${ctx.token}`).toString("base64")}`,
          `Bearer ${"A".repeat(8_000)}`,
          `Bearer ${ctx.token.toUpperCase()}`,
        ]);
        if (t === null) delete headers.authorization;
        else headers.authorization = t;
        what.push(`authorization ${JSON.stringify(t)?.slice(0, 40)}`);
        break;
      }
      case 10: {
        // A bad Idempotency-Key (or a fine one, maybe reused with another body).
        const k = rng.pick(["", " ", "x".repeat(200), "x".repeat(201), "a b", "key\t1", "ключ", "k1", "k2", "k3", "%", "\"quoted\""]);
        headers["idempotency-key"] = k;
        what.push(`idempotency-key ${JSON.stringify(k).slice(0, 40)}`);
        break;
      }
      case 11: {
        // An unknown path or a method the route does not take.
        const p = rng.pick([
          `${path}/`,
          `${path}/extra`,
          `${path}%00`,
          `${path}/../../v1/status`,
          "/v1",
          "/v2/status",
          "/",
          `/v1/${"z".repeat(5_000)}`,
          `${path}?${"q=1&".repeat(500)}`,
          "/V1/STATUS",
          "/v1/reservations/%ZZ",
          "//v1//status",
        ]);
        path = p;
        if (rng.chance(0.5)) method = rng.pick(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]);
        what.push(`${method} ${p.slice(0, 60)}`);
        break;
      }
      case 12: {
        // Bytes no HTTP client would send.
        const target = `${route.path}`;
        const raw = rng.pick([
          `FOO ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\n\r\n`,
          `GET ${target} HTTP/9.9\r\nHost: x\r\n\r\n`,
          `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n{}`,
          `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
          `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
          `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{}`,
          `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\nIdempotency-Key: \u00ff\u00fe\r\n\r\n`,
          `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\nX-Long: ${"h".repeat(20_000)}\r\n\r\n`,
          `GET ${target}\u0000 HTTP/1.1\r\nHost: x\r\n\r\n`,
          "\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003",
          "GARBAGE\r\n\r\n",
          `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.token}\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n`,
        ]);
        what.push(`raw bytes ${JSON.stringify(raw.slice(0, 60))}`);
        return { method, path, headers, raw, what: what.join("; ") };
      }
      default: {
        // A numeric or string value at the int64 bounds in every amount-like field.
        if (body !== null && typeof body === "object" && !Array.isArray(body)) {
          for (const k of Object.keys(body as object)) {
            if (/amount|cost|target|grant|weight|lease/i.test(k)) (body as Record<string, unknown>)[k] = rng.pick<unknown>([INT64_MAX, "9223372036854775808", "0", 0, 2 ** 53, -1]);
          }
          what.push("amounts at bounds");
        }
      }
    }
  }
  if (bodyText === undefined && body !== undefined) bodyText = JSON.stringify(body);
  if (bodyText !== undefined && !("content-type" in headers)) headers["content-type"] = "application/json";
  if (headers["content-type"] === "") delete headers["content-type"];
  const qs = query.toString();
  if (qs !== "") path = `${path}${path.includes("?") ? "&" : "?"}${qs}`;
  return { method, path, headers, ...(bodyText !== undefined ? { body: bodyText } : {}), what: what.join("; ") };
}
