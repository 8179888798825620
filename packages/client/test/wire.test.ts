// The call wire's frames (any chunking reads back the same frames; a length above the bound is caught at its prefix)
// and HeddleWire against small loopback upgrade servers that answer late, out of order, never, too much, or hang
// up: what reaches the caller is an answer under its own call's id or one of the documented errors, never a hang.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError, BadResponseError, CALL_WIRE_PROTOCOL, ClientOptionError, DaemonUnreachableError, FrameReader, FrameTooLargeError, HeddleWire, decodeAnswer, decodeCall, encodeAnswer, encodeCall } from "../src/index.ts";

describe("frames", () => {
  it("reads back every frame, in order, however the stream is cut", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ id: fc.nat({ max: 0xffffffff }), path: fc.stringMatching(/^\/[a-z/-]{0,40}$/), key: fc.option(fc.stringMatching(/^[\x21-\x7e]{1,60}$/), { nil: null }), body: fc.string({ maxLength: 300, unit: "grapheme" }) }), { maxLength: 20 }),
        fc.array(fc.nat({ max: 64 }), { minLength: 1, maxLength: 40 }),
        (calls, cuts) => {
          const stream = Buffer.concat(calls.map((c) => encodeCall(c.id, c.path, c.key, c.body)));
          const reader = new FrameReader(1 << 20);
          const got: unknown[] = [];
          let at = 0;
          let i = 0;
          while (at < stream.length) {
            const n = Math.min(stream.length - at, cuts[i++ % cuts.length]! + 1);
            reader.push(stream.subarray(at, at + n), (f) => {
              const { bodyBytes, ...c } = decodeCall(f) as { bodyBytes: number };
              expect(bodyBytes).toBe(Buffer.byteLength((c as { body: string }).body));
              got.push(c);
            });
            at += n;
          }
          expect(got).toEqual(calls);
          expect(reader.buffered).toBe(0);
        },
      ),
    );
  });

  it("round-trips answers, and refuses a length above the bound as soon as its prefix is read", () => {
    fc.assert(
      fc.property(fc.nat({ max: 0xffffffff }), fc.integer({ min: 100, max: 599 }), fc.string({ maxLength: 200, unit: "grapheme" }), (id, status, body) => {
        const b = encodeAnswer(id, status, body);
        expect(decodeAnswer(b.subarray(4))).toEqual({ id, status, body });
      }),
    );
    const reader = new FrameReader(100);
    const seen: Buffer[] = [];
    const ok = encodeAnswer(1, 200, "{}");
    const big = Buffer.alloc(4);
    big.writeUInt32BE(101);
    // the good frame before it is handed out; the oversized one throws on its 4 bytes, before any body arrives
    expect(() => reader.push(Buffer.concat([ok, big]), (f) => seen.push(f))).toThrow(FrameTooLargeError);
    expect(seen).toHaveLength(1);
    const split = new FrameReader(100);
    split.push(big.subarray(0, 2), () => {});
    expect(() => split.push(big.subarray(2), () => {})).toThrow(/101 bytes is above the limit of 100/);
  });

  it("skips a frame above the bound when told to (its id reported once, nothing of it buffered), reading the frames around it", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 10 }), fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 6 }), (big, cuts) => {
        const max = 256;
        const frames = big.map((b, i) => encodeCall(i + 1, "/p", null, b ? "x".repeat(1000 + i) : `{"i":${i}}`));
        const stream = Buffer.concat(frames);
        const reader = new FrameReader(max);
        const read: number[] = [];
        const skipped: number[] = [];
        let most = 0;
        for (let at = 0, i = 0; at < stream.length; i++) {
          const n = Math.min(stream.length - at, cuts[i % cuts.length]!);
          reader.push(stream.subarray(at, at + n), (f) => read.push(f.readUInt32BE(0)), (declared, id) => {
            expect(declared).toBeGreaterThan(max);
            skipped.push(id);
          });
          most = Math.max(most, reader.buffered);
          at += n;
        }
        expect(read).toEqual(big.flatMap((b, i) => (b ? [] : [i + 1])));
        expect(skipped).toEqual(big.flatMap((b, i) => (b ? [i + 1] : [])));
        expect(most).toBeLessThanOrEqual(max + 4);
      }),
    );
  });

  it("holds a trickled frame in one buffer of its size, and after a refused prefix refuses every later push", () => {
    const reader = new FrameReader(70_000);
    const f = encodeCall(5, "/p", null, "y".repeat(66_000));
    let got: Buffer | null = null;
    for (let i = 0; i < f.length; i++) reader.push(f.subarray(i, i + 1), (b) => (got = b));
    expect(got!.length).toBe(f.length - 4);
    expect(reader.buffered).toBe(0);
    const bad = new FrameReader(10);
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(11);
    expect(() => bad.push(prefix, () => {})).toThrow(FrameTooLargeError);
    expect(() => bad.push(encodeAnswer(1, 200, ""), () => {})).toThrow(FrameTooLargeError);
  });

  it("says what is wrong with a call frame too short for what it declares, with its id when it has one", () => {
    expect(decodeCall(Buffer.from([0, 0]))).toEqual({ id: null, problem: expect.stringMatching(/shorter than its id/) });
    expect(decodeCall(Buffer.from([0, 0, 0, 9, 50, 0]))).toEqual({ id: 9, problem: expect.stringMatching(/path of 50 bytes/) });
    expect(() => encodeCall(1, "/has space", null, "")).toThrow(/visible ASCII/);
    expect(() => encodeCall(1, "/x", "", "")).toThrow(/key must be 1/);
  });
});

/** A loopback server that upgrades /v1/wire and hands each connection's decoded calls to `onCall`. */
let server: Server | null = null;
/** Upgraded sockets: the server's close waits for them, and closeAllConnections() does not see them. */
const upgraded = new Set<Socket>();
afterEach(async () => {
  for (const s of upgraded) s.destroy();
  upgraded.clear();
  if (server !== null) {
    server.closeAllConnections();
    await new Promise((r) => server!.close(r));
    server = null;
  }
});

async function upgradeServer(onCall: (socket: Socket, call: { id: number; path: string; key: string | null; body: string }) => void, refuse?: { status: number; body: string }): Promise<string> {
  server = createServer((_req, res) => res.writeHead(404).end());
  server.on("upgrade", (req: IncomingMessage, socket: Socket) => {
    upgraded.add(socket);
    if (refuse !== undefined) {
      socket.end(`HTTP/1.1 ${refuse.status} No\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(refuse.body)}\r\nConnection: close\r\n\r\n${refuse.body}`);
      return;
    }
    expect(req.headers.upgrade).toBe(CALL_WIRE_PROTOCOL);
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${CALL_WIRE_PROTOCOL}\r\nConnection: Upgrade\r\n\r\n`);
    const reader = new FrameReader(1 << 20);
    socket.on("data", (b: Buffer) => reader.push(b, (f) => onCall(socket, decodeCall(f) as never)));
    socket.on("error", () => {});
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("HeddleWire", () => {
  it("matches answers to calls by id, whatever order they come in; sends the key and the body", async () => {
    const seen: { path: string; key: string | null; body: string }[] = [];
    const held: [Socket, number, string][] = [];
    const url = await upgradeServer((s, c) => {
      seen.push({ path: c.path, key: c.key, body: c.body });
      held.push([s, c.id, c.body]);
      if (held.length === 3) for (const [sock, id, body] of held.reverse()) sock.write(encodeAnswer(id, 200, JSON.stringify({ echo: JSON.parse(body) })));
    });
    const w = new HeddleWire({ url, token: "t" });
    const got = await Promise.all([w.raw("/a", { n: 1 }), w.raw("/b", { n: 2 }, { idempotencyKey: "k-2" }), w.call("/c", { n: 3 })]);
    expect(got).toEqual([{ status: 200, body: { echo: { n: 1 } } }, { status: 200, body: { echo: { n: 2 } } }, { echo: { n: 3 } }]);
    expect(seen.map((c) => c.key)).toEqual([null, "k-2", null]);
    w.close();
  });

  it("rejects a non-2xx answer with ApiError from call(), and an upgrade the server refuses with its status and body", async () => {
    const url = await upgradeServer((s, c) => s.write(encodeAnswer(c.id, 409, JSON.stringify({ error: "refused", message: "held" }))));
    const w = new HeddleWire({ url, token: "t" });
    await expect(w.call("/claims/take", {})).rejects.toMatchObject({ name: "ApiError", status: 409, body: { error: "refused" } });
    w.close();
    for (const s of upgraded) s.destroy();
    await new Promise((r) => server!.close(r));
    server = null;
    const url2 = await upgradeServer(() => {}, { status: 401, body: JSON.stringify({ error: "unauthorized", message: "wrong token" }) });
    const w2 = new HeddleWire({ url: url2, token: "t" });
    const e = await w2.raw("/x").catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    w2.close();
  });

  it("times out an unanswered call (sent: true) and still answers the next one", async () => {
    const url = await upgradeServer((s, c) => {
      if (c.path === "/answered") s.write(encodeAnswer(c.id, 200, "{}"));
    });
    const w = new HeddleWire({ url, token: "t", timeoutMs: 200 });
    const late = w.raw("/never").catch((e: unknown) => e);
    expect(await w.raw("/answered")).toEqual({ status: 200, body: {} });
    const e = await late;
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect(e).toMatchObject({ code: "ETIMEDOUT", sent: true });
    w.close();
  });

  it("fails the calls in flight when the daemon hangs up (sent: true), and connects again for the next call", async () => {
    let connections = 0;
    const url = await upgradeServer((s, c) => {
      if (c.path === "/hangup") s.destroy();
      else s.write(encodeAnswer(c.id, 200, JSON.stringify({ n: connections })));
    });
    server!.on("upgrade", () => connections++);
    const w = new HeddleWire({ url, token: "t" });
    const e = await w.raw("/hangup").catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect((e as DaemonUnreachableError).sent).toBe(true);
    expect(await w.raw("/fine")).toEqual({ status: 200, body: { n: 2 } });
    w.close();
    await expect(w.raw("/after-close")).rejects.toMatchObject({ code: "ECLOSED", sent: false });
  });

  it("ends the connection on an answer frame above maxAnswerBytes, and on one that is not JSON fails only that call", async () => {
    const url = await upgradeServer((s, c) => {
      if (c.path === "/big") s.write(encodeAnswer(c.id, 200, JSON.stringify({ pad: "x".repeat(500) })));
      else s.write(encodeAnswer(c.id, 200, "not json"));
    });
    const w = new HeddleWire({ url, token: "t", maxAnswerBytes: 256 });
    const notJson = await w.raw("/text").catch((x: unknown) => x);
    expect(notJson).toBeInstanceOf(BadResponseError);
    expect(notJson).toMatchObject({ code: "EBADRESPONSE" });
    const big = await w.raw("/big").catch((x: unknown) => x);
    expect(big).toBeInstanceOf(BadResponseError);
    expect(big).toMatchObject({ code: "ERESPONSETOOLARGE", sent: true });
    w.close();
  });

  it("close() while connecting rejects the call at once (nothing sent), not after the connect timeout", async () => {
    // a server that accepts the upgrade request and never answers it
    server = createServer(() => {});
    server.on("upgrade", (_req: IncomingMessage, socket: Socket) => upgraded.add(socket));
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const w = new HeddleWire({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: "t", timeoutMs: 60_000 });
    const call = w.raw("/x").catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    w.close();
    expect(await call).toMatchObject({ code: "ECLOSED", sent: false });
  });

  it("an answer under id 0 is the daemon speaking of the connection: every call on it fails, saying so", async () => {
    const url = await upgradeServer((s) => s.write(encodeAnswer(0, 503, JSON.stringify({ error: "unavailable", message: "going away" }))));
    const w = new HeddleWire({ url, token: "t" });
    const e = await w.raw("/x").catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DaemonUnreachableError);
    expect((e as Error).message).toMatch(/going away/);
    expect((e as DaemonUnreachableError).sent).toBe(true);
    w.close();
  });

  it("names a bad option or argument before anything is sent", async () => {
    expect(() => new HeddleWire({ url: "ftp://x", token: "t" })).toThrow(ClientOptionError);
    expect(() => new HeddleWire({ url: "http://127.0.0.1:1", token: "has space" })).toThrow(/token/);
    expect(() => new HeddleWire({ url: "http://127.0.0.1:1", token: "t", timeoutMs: 0 })).toThrow(/timeoutMs/);
    const w = new HeddleWire({ url: "http://127.0.0.1:1", token: "t" });
    await expect(w.call("/x", {}, { idempotencyKey: "has space" })).rejects.toMatchObject({ option: "idempotencyKey" });
    await expect(w.raw("/x")).rejects.toMatchObject({ code: "ECONNREFUSED", sent: false });
    w.close();
  });
});
