// The client against small loopback servers that answer the way a broken proxy, a hostile endpoint or a slow
// daemon would: what reaches the caller must be one of the documented errors, never a hang or a made-up body.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError, BadResponseError, ClientOptionError, DaemonUnreachableError, HeddleClient, MAX_IDEMPOTENCY_KEY_LENGTH } from "../src/index.ts";

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const servers: Server[] = [];
const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const clients: HeddleClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A loopback server running `handler`; resolves with its base URL. */
async function serve(handler: Handler): Promise<string> {
  const s = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handler(req, res, Buffer.concat(chunks).toString("utf8")));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

function client(url: string, extra: Partial<ConstructorParameters<typeof HeddleClient>[0]> = {}): HeddleClient {
  const c = new HeddleClient({ url, token: "t0ken", ...extra });
  clients.push(c);
  return c;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

describe("HeddleClient: options are checked before anything is sent", () => {
  it.each([
    ["url", { url: "127.0.0.1:7201" }],
    ["url", { url: "not a url" }],
    ["url", { url: "ftp://127.0.0.1:7201" }],
    ["url", { url: "http://127.0.0.1:7201/?token=x" }],
    ["url", { url: "http://user:pw@127.0.0.1:7201" }],
    ["token", { token: "" }],
    ["token", { token: "abc\r\nx-injected: 1" }],
    ["token", { token: "two words" }],
    ["timeoutMs", { timeoutMs: 0 }],
    ["timeoutMs", { timeoutMs: 2 ** 31 }],
    ["timeoutMs", { timeoutMs: 1.5 }],
    ["maxResponseBytes", { maxResponseBytes: 0 }],
    ["maxSockets", { maxSockets: -1 }],
  ])("a bad %s is a ClientOptionError naming it", (option, bad) => {
    const make = () => new HeddleClient({ url: "http://127.0.0.1:1", token: "t", ...bad });
    expect(make).toThrow(ClientOptionError);
    try {
      make();
    } catch (e) {
      expect((e as ClientOptionError).option).toBe(option);
      expect((e as Error).message.startsWith(`${option}: `)).toBe(true);
    }
  });

  it("a bad Idempotency-Key is refused before sending, naming the argument", async () => {
    let calls = 0;
    const url = await serve((_q, res) => {
      calls += 1;
      json(res, 201, {});
    });
    const c = client(url);
    for (const k of ["", "naïve", "has space", "x".repeat(MAX_IDEMPOTENCY_KEY_LENGTH + 1)]) {
      await expect(c.reserve("leaf", 1, { idempotencyKey: k })).rejects.toMatchObject({ name: "ClientOptionError", option: "idempotencyKey" });
    }
    expect(calls).toBe(0);
    await expect(c.reserve("leaf", 1, { idempotencyKey: "x".repeat(MAX_IDEMPOTENCY_KEY_LENGTH) })).resolves.toEqual({});
    expect(calls).toBe(1);
  });
});

describe("HeddleClient: requests", () => {
  it("raw() with a header Node will not send (a line break in it) rejects with ClientOptionError, nothing sent", async () => {
    let calls = 0;
    const url = await serve((_q, res) => {
      calls += 1;
      json(res, 200, {});
    });
    const e = await client(url).raw("POST", "/v1/reservations", { leaf: "x", maximumCost: 1 }, { idempotencyKey: "a\r\nx-injected: 1" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ClientOptionError);
    expect((e as ClientOptionError).option).toBe("request");
    expect(calls).toBe(0);
  });

  it("sends the bearer token, the JSON body, amounts as decimal strings and the Idempotency-Key", async () => {
    const seen: { method?: string; url?: string; auth?: string; key?: string; type?: string; body?: string }[] = [];
    const url = await serve((req, res, body) => {
      seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, key: req.headers["idempotency-key"] as string | undefined, type: req.headers["content-type"], body });
      json(res, 201, { id: "r1", leaf: "batch", maximumCost: "18446744073709551615" });
    });
    const r = await client(url).reserve("batch", 18446744073709551615n, { idempotencyKey: "job-42" });
    expect(r.maximumCost).toBe("18446744073709551615");
    expect(seen).toEqual([{ method: "POST", url: "/v1/reservations", auth: "Bearer t0ken", key: "job-42", type: "application/json", body: '{"leaf":"batch","maximumCost":"18446744073709551615"}' }]);
  });

  it("keeps the base URL's path: a daemon behind a proxy at /heddle is called at /heddle/v1/…", async () => {
    const paths: string[] = [];
    const url = await serve((req, res) => {
      paths.push(req.url!);
      json(res, 200, { ok: true });
    });
    await client(`${url}/heddle/`).status();
    await client(`${url}/heddle`).claimsList("a b");
    expect(paths).toEqual(["/heddle/v1/status", "/heddle/v1/claims?key=a%20b"]);
  });

  it("a non-2xx answer rejects with ApiError carrying the daemon's body; a non-JSON one with a readable stand-in", async () => {
    const url = await serve((req, res) => {
      if (req.url === "/v1/status") return json(res, 409, { error: "refused", message: "no", refusal: { kind: "insufficient" } });
      res.writeHead(502, { "content-type": "text/html" }).end("<html>bad gateway</html>");
    });
    const c = client(url);
    const e1 = await c.status().catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(ApiError);
    expect((e1 as ApiError).status).toBe(409);
    expect((e1 as ApiError).body.refusal?.kind).toBe("insufficient");
    const e2 = await c.tree().catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(ApiError);
    expect((e2 as ApiError).status).toBe(502);
    expect((e2 as ApiError).body).toEqual({ error: "invalid-response", message: "<html>bad gateway</html>" });
  });

  it("a 2xx answer that is not JSON is a BadResponseError, not a body made up for it", async () => {
    const url = await serve((_q, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>welcome to nginx</html>"));
    const e = await client(url).status().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BadResponseError);
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect((e as BadResponseError).code).toBe("EBADRESPONSE");
    expect((e as Error).message).toContain("not JSON");
    // raw() still hands such an answer over, as text (what /metrics answers)
    const r = await client(url).raw("GET", "/metrics");
    expect(r).toMatchObject({ status: 200, json: false, text: "<html>welcome to nginx</html>" });
  });

  it("an answer above maxResponseBytes is refused, whether its length is declared or streamed", async () => {
    const big = JSON.stringify({ pad: "x".repeat(10_000) });
    const url = await serve((req, res) => {
      if (req.url === "/v1/status") return res.writeHead(200, { "content-type": "application/json", "content-length": String(big.length) }).end(big);
      res.writeHead(200, { "content-type": "application/json" }); // chunked: no declared length
      res.write(big.slice(0, 5_000));
      setTimeout(() => res.end(big.slice(5_000)), 5);
    });
    const c = client(url, { maxResponseBytes: 4_096 });
    for (const call of [() => c.status(), () => c.tree()]) {
      const e = await call().catch((x: unknown) => x);
      expect(e).toBeInstanceOf(BadResponseError);
      expect((e as BadResponseError).code).toBe("ERESPONSETOOLARGE");
    }
    // and the same client still works for an answer within the bound
    await expect(client(url, { maxResponseBytes: 20_000 }).status()).resolves.toEqual({ pad: "x".repeat(10_000) });
  });

  it("timeoutMs bounds the whole call: an answer that trickles in forever still ends it", async () => {
    const timers: NodeJS.Timeout[] = [];
    const url = await serve((_q, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[");
      // a byte every 20 ms keeps the socket busy, so an idle timeout of 150 ms would never fire
      const t = setInterval(() => res.write(" "), 20);
      timers.push(t);
      res.on("close", () => clearInterval(t));
    });
    const e = await client(url, { timeoutMs: 150 }).status().catch((x: unknown) => x);
    for (const t of timers) clearInterval(t);
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect((e as DaemonUnreachableError).code).toBe("ETIMEDOUT");
    expect((e as Error).message).toContain("within 150 ms");
  });

  it("a connection cut mid-answer rejects with DaemonUnreachableError (ERESPONSE)", async () => {
    const url = await serve((_q, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"partial":');
      setTimeout(() => res.socket?.destroy(), 5);
    });
    const e = await client(url).status().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect((e as DaemonUnreachableError).code).toBe("ERESPONSE");
  });

  it("a write the daemon received but never answered (it hangs) is ETIMEDOUT with sent: its outcome is unknown", async () => {
    let received = "";
    // reads the whole request, then never answers
    const url = await serve((_q, _res, body) => void (received = body));
    const e = await client(url, { timeoutMs: 200 }).mint(5, { holder: "p1", idempotencyKey: "k1" }).catch((x: unknown) => x);
    expect(received).toBe(JSON.stringify({ amount: "5", holder: "p1" }));
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect(e).toMatchObject({ code: "ETIMEDOUT", sent: true, request: { method: "POST", path: "/v1/control/mint", sent: true } });
    expect((e as Error).message).toContain("the request was sent");
  });

  it("a write whose connection is reset after it was sent is DaemonUnreachableError with sent", async () => {
    const url = await serve((req) => req.socket.destroy());
    const e = await client(url).mint(5, { holder: "p1" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect(e).toMatchObject({ sent: true, request: { method: "POST", path: "/v1/control/mint" } });
    expect((e as Error).message).toContain("after POST /v1/control/mint was sent");
  });

  it.skipIf(!hasOpenssl)("an http:// URL at a daemon that serves https: the hang-up names the likely cause (use https://)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-client-tls-"));
    try {
      const key = join(dir, "key.pem");
      const cert = join(dir, "cert.pem");
      execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
      let requests = 0;
      const s = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_req, res) => {
        requests++;
        json(res, 200, {});
      });
      servers.push(s);
      await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
      const e = await client(`http://127.0.0.1:${(s.address() as AddressInfo).port}`).mint(5, { holder: "p1" }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(DaemonUnreachableError);
      expect((e as Error).message).toMatch(/if the daemon serves https — api\.tls in its config — use an https:\/\/ URL/);
      expect(requests).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an answer cut short, a 2xx that is not JSON and one above maxResponseBytes were all sent", async () => {
    const cut = await serve((_q, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"partial":');
      setTimeout(() => res.socket?.destroy(), 5);
    });
    expect(await client(cut).mint(1).catch((x: unknown) => x)).toMatchObject({ code: "ERESPONSE", sent: true });
    const html = await serve((_q, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>"));
    expect(await client(html).mint(1).catch((x: unknown) => x)).toMatchObject({ code: "EBADRESPONSE", sent: true });
    const big = await serve((_q, res) => json(res, 200, { pad: "x".repeat(1000) }));
    expect(await client(big, { maxResponseBytes: 100 }).mint(1).catch((x: unknown) => x)).toMatchObject({ code: "ERESPONSETOOLARGE", sent: true });
  });

  it("nothing listening: the request never left (sent false)", async () => {
    const url = await serve((_q, res) => json(res, 200, {}));
    const port = new URL(url).port;
    servers[0]!.close();
    await new Promise((r) => setTimeout(r, 10));
    const e = await client(`http://127.0.0.1:${port}`).mint(5).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "ECONNREFUSED", sent: false, request: { method: "POST", path: "/v1/control/mint", sent: false } });
  });

  it("nothing listening is DaemonUnreachableError ECONNREFUSED with what to do", async () => {
    const url = await serve((_q, res) => json(res, 200, {}));
    const port = new URL(url).port;
    servers[0]!.close();
    await new Promise((r) => setTimeout(r, 10));
    const e = await client(`http://127.0.0.1:${port}`).status().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect((e as DaemonUnreachableError).code).toBe("ECONNREFUSED");
    expect((e as Error).message).toContain("heddle start --config");
  });
});
