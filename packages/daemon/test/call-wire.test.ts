// The call wire (heddle-call/1) on a one-voter governed peer: the token is checked on the upgrade; every call is
// answered as its HTTP route answers it (status and body), keys included; bad frames are answered 400 / 404 and
// counted, an oversized frame ends the connection; many calls in flight on one connection are all answered; a
// daemon with a wire connection open stops.
import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError, CALL_WIRE_PROTOCOL, DaemonUnreachableError, FrameReader, HeddleWire, decodeAnswer, encodeCall } from "@heddle/client";
import WebSocket from "ws";
import { DASHBOARD_SOCKET_PATH, DASHBOARD_SUBPROTOCOL } from "../src/dashboard-socket.ts";
import { governedSoloDaemon, soloDaemon, type SoloDaemon } from "./support/embedded.ts";
import { parsePrometheus } from "./support/prometheus.ts";

let s: SoloDaemon;
let w: HeddleWire;

beforeAll(async () => {
  s = await governedSoloDaemon();
  w = new HeddleWire({ url: s.daemon.url, token: s.daemon.token });
});
afterAll(async () => {
  w.close();
  await s.close();
});

const take = (holder: string, key: string) => ({ holder, resources: [{ key, mode: "exclusive" as const }] });
/** An answer without the fields that differ between two calls of one act (its index, key, read index, judgement time). */
const shape = (b: unknown) => {
  const { index: _i, key: _k, readIndex: _r, judgedAt: _j, message, ...rest } = b as Record<string, unknown>;
  return { ...rest, message: typeof message === "string" ? message.replace(/\d+/g, "N") : message };
};

/** Opens a raw upgraded socket (for frames the client would never send); resolves with it and the bytes after the 101. */
function rawWire(token = s.daemon.token): Promise<{ status: number; socket: import("node:net").Socket; rest: Buffer; text: string }> {
  const u = new URL(s.daemon.url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname);
    let got = Buffer.alloc(0);
    const onData = (b: Buffer) => {
      got = Buffer.concat([got, b]);
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = got.subarray(0, end).toString("latin1");
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]);
      if (status !== 101) {
        sock.on("end", () => resolve({ status, socket: sock, rest: Buffer.alloc(0), text: got.toString("utf8") }));
        sock.resume();
        return;
      }
      sock.off("data", onData);
      resolve({ status, socket: sock, rest: got.subarray(end + 4), text: head });
    };
    sock.on("data", onData);
    sock.on("error", reject);
    sock.write(`GET /v1/wire HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: ${CALL_WIRE_PROTOCOL}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  });
}

/** Reads answer frames off a raw wire socket until `n` have come. */
function answers(sock: import("node:net").Socket, rest: Buffer, n: number): Promise<{ id: number; status: number; body: unknown }[]> {
  const out: { id: number; status: number; body: unknown }[] = [];
  const reader = new FrameReader(1 << 20);
  return new Promise((resolve, reject) => {
    const push = (b: Buffer) => {
      reader.push(b, (f) => {
        const a = decodeAnswer(f)!;
        out.push({ id: a.id, status: a.status, body: JSON.parse(a.body) });
      });
      if (out.length >= n) resolve(out);
    };
    sock.on("data", push);
    sock.on("error", reject);
    sock.on("close", () => (out.length >= n ? resolve(out) : reject(new Error(`closed after ${out.length} of ${n} answers`))));
    if (rest.length > 0) push(rest);
  });
}

describe("call wire: the same answers as the HTTP routes", () => {
  it("grants, refuses naming the holder (at a confirmed read, nothing committed), releases — as HTTP does", async () => {
    const granted = (await w.claimsTake(take("alice", "w/deploy"))) as { mode: string; claims: { grants: { token: number }[] } };
    expect(granted).toMatchObject({ mode: "granted", claims: { ok: true } });
    const viaWire = await w.raw("/claims/take", take("bob", "w/deploy"));
    const viaHttp = await s.client.raw("POST", "/v1/claims/take", take("bob", "w/deploy"));
    expect(viaWire.status).toBe(409);
    expect(viaHttp.status).toBe(409);
    expect(viaWire.body).toMatchObject({ error: "refused", committed: false, refusal: { blocked: [{ key: "w/deploy", holders: ["alice"] }] } });
    expect(shape(viaWire.body)).toEqual(shape(viaHttp.body));
    await expect(w.claimsTake(take("bob", "w/deploy"))).rejects.toBeInstanceOf(ApiError);
    const released = await w.claimsRelease("alice", "w/deploy", { token: granted.claims.grants[0]!.token });
    expect(released).toMatchObject({ kind: "applied", claims: true });
    expect(await w.claimsTake(take("bob", "w/deploy"))).toMatchObject({ claims: { ok: true } });
  });

  it("names the field of a body its schema refuses, as HTTP does (400, issues)", async () => {
    const bad = { holder: "", resources: [{ key: "k", mode: "sideways" }] };
    const viaWire = await w.raw("/claims/take", bad);
    const viaHttp = await s.client.raw("POST", "/v1/claims/take", bad);
    expect(viaWire.status).toBe(400);
    expect(viaWire.body).toEqual(viaHttp.body);
    const empty = await w.raw("/claims/take");
    expect(empty.status).toBe(400);
    expect(empty.body).toMatchObject({ issues: [{ field: "(body)", in: "body" }] });
  });

  it("applies a keyed call once: a retry with the same key answers the first outcome", async () => {
    const first = (await w.raw("/claims/take", take("carol", "w/keyed"), { idempotencyKey: "carol-w-1" })) as { status: number; body: { index: number } };
    const again = (await w.raw("/claims/take", take("carol", "w/keyed"), { idempotencyKey: "carol-w-1" })) as { status: number; body: { index: number } };
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body.index).toBe(first.body.index);
    // the same key through HTTP is the same act
    const http = await s.client.raw("POST", "/v1/claims/take", take("carol", "w/keyed"), { idempotencyKey: "carol-w-1" });
    expect((http.body as { index: number }).index).toBe(first.body.index);
  });

  it("answers every one of many calls in flight on one connection, each under its own id", async () => {
    const n = 300;
    const got = await Promise.all(Array.from({ length: n }, (_, i) => w.raw("/claims/take", take(`h${i}`, `w/many/${i % 7}`))));
    // seven keys: one holder each is granted (through the log) or holds from before; every other take is refused naming one
    for (const [i, r] of got.entries()) {
      if (r.status === 200) continue;
      expect(r.status, `call ${i}`).toBe(409);
      expect((r.body as { refusal: { blocked: { key: string }[] } }).refusal.blocked[0]!.key).toBe(`w/many/${i % 7}`);
    }
    expect(got.filter((r) => r.status === 200).length).toBe(7);
  });
});

describe("call wire: the upgrade and the frames are checked", () => {
  it("refuses an upgrade without the token (401, nothing read) and one to another protocol (400 naming Upgrade)", async () => {
    const noToken = await rawWire("wrong-token");
    expect(noToken.status).toBe(401);
    expect(noToken.text).toMatch(/api\.tokenFile/);
    const bad = new HeddleWire({ url: s.daemon.url, token: "wrong-token" });
    await expect(bad.raw("/claims/take", take("x", "y"))).rejects.toMatchObject({ status: 401, body: { error: "unauthorized" } });
    bad.close();
    const u = new URL(s.daemon.url);
    const text = await new Promise<string>((resolve) => {
      const sock = connect(Number(u.port), u.hostname);
      let t = "";
      sock.on("data", (b) => (t += b.toString()));
      sock.on("close", () => resolve(t));
      sock.write(`GET /v1/wire HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nAuthorization: Bearer ${s.daemon.token}\r\n\r\n`);
    });
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    expect(text).toMatch(/"field":"Upgrade"/);
  });

  it("answers a malformed frame 400, an unknown path 404 and bad JSON 400 naming (body) — and keeps the connection", async () => {
    const { socket, rest } = await rawWire();
    // id 7, a path length running past the frame
    const malformed = Buffer.from([0, 0, 0, 6, 0, 0, 0, 7, 200, 0]);
    socket.write(Buffer.concat([malformed, encodeCall(8, "/claims/nope", null, "{}"), encodeCall(9, "/claims/take", null, "{not json"), encodeCall(10, "/claims/take", null, JSON.stringify(take("dave", "w/after")))]));
    const got = await answers(socket, rest, 4);
    const by = new Map(got.map((a) => [a.id, a]));
    expect(by.get(7)).toMatchObject({ status: 400, body: { issues: [{ in: "frame" }] } });
    expect(by.get(8)).toMatchObject({ status: 404, body: { error: "not-found" } });
    expect((by.get(8)!.body as { message: string }).message).toMatch(/\/claims\/take/);
    expect(by.get(9)).toMatchObject({ status: 400, body: { issues: [{ field: "(body)" }] } });
    expect(by.get(10)).toMatchObject({ status: 200 });
    socket.destroy();
    const m = parsePrometheus(await (await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: `Bearer ${s.daemon.token}` } })).text());
    expect(m.one("heddle_api_wire_refused_total", { reason: "malformed" })).toBeGreaterThanOrEqual(1);
    expect(m.one("heddle_api_wire_refused_total", { reason: "unknown-path" })).toBeGreaterThanOrEqual(1);
    expect(m.one("heddle_api_wire_refused_total", { reason: "unauthorized" })).toBeGreaterThanOrEqual(1);
    expect(m.one("heddle_api_requests_total", { route: "/v1/claims/take", method: "WIRE", status: "200" })).toBeGreaterThanOrEqual(1);
  });

  it("answers every framed call exactly once under its id, whatever the frames hold and however they are cut (property)", async () => {
    const body = fc.oneof(
      fc.constant(""),
      fc.string({ maxLength: 40 }),
      fc.json({ maxDepth: 2 }),
      fc.record({ holder: fc.string({ maxLength: 8 }), resources: fc.array(fc.record({ key: fc.string({ maxLength: 6 }), mode: fc.constantFrom("exclusive", "shared", "x") }), { maxLength: 2 }) }).map((b) => JSON.stringify(b)),
      fc.record({ holder: fc.string({ maxLength: 8 }), key: fc.string({ maxLength: 6 }) }).map((b) => JSON.stringify(b)),
    );
    const call = fc.record({
      path: fc.constantFrom("/claims/take", "/claims/release", "/claims/renew", "/control/activate", "/nope", ""),
      key: fc.option(fc.stringMatching(/^[\x21-\x7e]{1,20}$/), { nil: null }),
      body,
    });
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 8 }), async (calls, cuts) => {
        const { socket, rest } = await rawWire();
        try {
          const stream = Buffer.concat(calls.map((c, i) => encodeCall(i + 1, c.path, c.key, c.body)));
          const done = answers(socket, rest, calls.length);
          let at = 0;
          for (let i = 0; at < stream.length; i++) {
            const n = Math.min(stream.length - at, cuts[i % cuts.length]!);
            socket.write(stream.subarray(at, at + n));
            at += n;
          }
          const got = await done;
          expect(got.map((a) => a.id).sort((a, b) => a - b)).toEqual(calls.map((_, i) => i + 1));
          for (const a of got) expect([200, 400, 404, 409, 503]).toContain(a.status);
        } finally {
          socket.destroy();
        }
      }),
      { numRuns: 25 },
    );
    // and the daemon still answers
    expect((await w.raw("/claims/take", take("after-fuzz", "w/fuzz"))).status).toBe(200);
  });

  it("answers a call above limits.maxBodyBytes 413 under its id, skips its bytes unread, and goes on with the others", async () => {
    const { socket, rest } = await rawWire();
    const done = answers(socket, rest, 3);
    const huge = encodeCall(21, "/claims/take", null, JSON.stringify(take("h".repeat(70_000), "w/huge")));
    // a client-chosen path on a refused call must not become a metrics label
    const justOver = encodeCall(22, "/zz-any-path-at-all", null, " ".repeat(65_537));
    // the huge one trickles in: what the daemon holds of it stays bounded (it is skipped, not gathered)
    for (let at = 0; at < huge.length; at += 4096) socket.write(huge.subarray(at, at + 4096));
    socket.write(Buffer.concat([justOver, encodeCall(23, "/claims/take", null, JSON.stringify(take("small", "w/after-huge")))]));
    const by = new Map((await done).map((a) => [a.id, a]));
    expect(by.get(21)).toMatchObject({ status: 413, body: { error: "body-too-large", limit: 65_536 } });
    expect(by.get(22)).toMatchObject({ status: 413, body: { error: "body-too-large" } });
    expect(by.get(23)).toMatchObject({ status: 200 });
    // as HTTP answers the same body
    expect((await s.client.raw("POST", "/v1/claims/take", take("h".repeat(70_000), "w/huge"))).status).toBe(413);
    socket.destroy();
    const m = parsePrometheus(await (await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: `Bearer ${s.daemon.token}` } })).text());
    expect(m.one("heddle_api_wire_refused_total", { reason: "too-large" })).toBeGreaterThanOrEqual(2);
    expect(m.all("heddle_api_requests_total").filter((x) => x.labels["method"] === "WIRE").map((x) => x.labels["route"])).not.toContain("/v1/zz-any-path-at-all");
    expect(m.all("heddle_api_requests_total").filter((x) => x.labels["route"]?.includes("zz-any-path"))).toEqual([]);
  });

  it("answers what a client sent before ending its side, then ends ours", async () => {
    const { socket, rest } = await rawWire();
    const done = answers(socket, rest, 2);
    socket.end(Buffer.concat([encodeCall(31, "/claims/take", null, JSON.stringify(take("half", "w/half-1"))), encodeCall(32, "/claims/take", null, JSON.stringify(take("half", "w/half-2")))]));
    const got = await done;
    expect(got.map((a) => [a.id, a.status]).sort()).toEqual([
      [31, 200],
      [32, 200],
    ]);
    await new Promise<void>((r) => (socket.readableEnded ? r() : socket.on("end", () => r())));
  });

  it("answers every call of one write that carries more than maxInFlight (1,024) calls", async () => {
    const { socket, rest } = await rawWire();
    const n = 1024 + 600;
    const done = answers(socket, rest, n);
    // one write of 1,624 calls: past 1,024 unanswered, the rest wait unread — then every one is answered
    socket.write(Buffer.concat(Array.from({ length: n }, (_, i) => encodeCall(1000 + i, "/claims/release", null, JSON.stringify({ holder: "nobody", key: `w/inflight/${i}` })))));
    const got = await done;
    expect(new Set(got.map((a) => a.id)).size).toBe(n);
    expect(got.every((a) => a.status === 200)).toBe(true);
    socket.destroy();
  }, 60_000);

  it("answers 409 static-mode on a static peer, as its HTTP routes do", async () => {
    const st = await soloDaemon();
    const sw = new HeddleWire({ url: st.daemon.url, token: st.daemon.token });
    try {
      const a = await sw.raw("/claims/take", take("x", "y"));
      const h = await st.client.raw("POST", "/v1/claims/take", take("x", "y"));
      expect(a.status).toBe(409);
      expect(a.body).toEqual(h.body);
    } finally {
      sw.close();
      await st.close();
    }
  });
});

describe("call wire: stopping", () => {
  it("a daemon with a dashboard viewer connected stops (the viewer's socket is closed before the server)", async () => {
    const g = await governedSoloDaemon();
    const viewer = new WebSocket(`${g.daemon.url.replace(/^http/, "ws")}${DASHBOARD_SOCKET_PATH}`, [DASHBOARD_SUBPROTOCOL, `bearer.${g.daemon.token}`]);
    await new Promise<void>((ok, fail) => {
      viewer.once("open", () => ok());
      viewer.once("error", fail);
    });
    const closed = new Promise<void>((r) => viewer.once("close", () => r()));
    await g.close();
    await closed;
  });

  it("a daemon with a wire connection open stops; the client's next call then fails as unreachable", async () => {
    const g = await governedSoloDaemon();
    const gw = new HeddleWire({ url: g.daemon.url, token: g.daemon.token });
    expect((await gw.raw("/claims/take", take("e", "stop/k"))).status).toBe(200);
    await g.close();
    const after = await gw.raw("/claims/take", take("f", "stop/k")).then(
      () => null,
      (e: unknown) => e,
    );
    expect(after).toBeInstanceOf(DaemonUnreachableError);
    gw.close();
  });
});
