// The dashboard's y-websocket server side, driven by a client speaking y-websocket's frames: the token comes
// first, browsers get what they lack and then incremental updates, and nothing they send changes the document.
import { createServer, type Server } from "node:http";
import * as decoding from "lib0/decoding";
import * as encoding from "lib0/encoding";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import * as syncProtocol from "y-protocols/sync";
import * as Y from "yjs";
import { DASHBOARD_SOCKET_PATH, DASHBOARD_SUBPROTOCOL, DashboardSockets, type DashboardSocketLimits } from "../src/dashboard-socket.ts";

const TOKEN = "a-token-long-enough-for-the-daemon";
let server: Server;
let doc: Y.Doc;
let sockets: DashboardSockets;
let url: string;
const viewerCounts: number[] = [];

async function serve(limits: Partial<DashboardSocketLimits> = {}) {
  doc = new Y.Doc();
  doc.getMap("node").set("self", "peer-1");
  sockets = new DashboardSockets({ doc, token: TOKEN, limits, onViewers: (n) => viewerCounts.push(n) });
  server = createServer((_req, res) => res.writeHead(404).end());
  server.on("upgrade", (req, socket, head) => {
    if (!sockets.handleUpgrade(req, socket, head)) socket.end("HTTP/1.1 404 Not Found\r\n\r\n");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `ws://127.0.0.1:${(server.address() as { port: number }).port}`;
}

beforeEach(() => serve());
afterEach(async () => {
  sockets.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  viewerCounts.length = 0;
});

/** A viewer: a y-websocket client's frames over `ws`, applying what it receives to its own document. */
class Viewer {
  readonly doc = new Y.Doc();
  readonly ws: WebSocket;
  readonly frames: Uint8Array[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;
  synced = false;

  constructor(protocols: string[] = [DASHBOARD_SUBPROTOCOL, `bearer.${TOKEN}`], path = DASHBOARD_SOCKET_PATH) {
    this.ws = new WebSocket(`${url}${path}`, protocols);
    this.ws.binaryType = "nodebuffer";
    this.opened = new Promise((ok, fail) => {
      this.ws.once("open", () => ok());
      this.ws.once("unexpected-response", (_req, res) => fail(new Error(`HTTP ${res.statusCode}`)));
      this.ws.once("error", fail);
    });
    this.closed = new Promise((ok) => this.ws.once("close", (code, reason) => ok({ code, reason: reason.toString() })));
    this.ws.on("message", (data: Buffer) => {
      const frame = new Uint8Array(data);
      this.frames.push(frame);
      const d = decoding.createDecoder(frame);
      expect(decoding.readVarUint(d)).toBe(0);
      const type = syncProtocol.readSyncMessage(d, encoding.createEncoder(), this.doc, "server");
      if (type === syncProtocol.messageYjsSyncStep2) this.synced = true;
    });
  }

  send(frame: Uint8Array): void {
    this.ws.send(frame);
  }

  syncStep1(): void {
    const e = encoding.createEncoder();
    encoding.writeVarUint(e, 0);
    syncProtocol.writeSyncStep1(e, this.doc);
    this.send(encoding.toUint8Array(e));
  }
}

const until = async (f: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!f()) throw new Error(`timed out waiting for ${what}`);
};

describe("the dashboard socket", () => {
  it("refuses an upgrade without the token or with a wrong one (401, nothing read), and another path (404)", async () => {
    await expect(new Viewer([DASHBOARD_SUBPROTOCOL]).opened).rejects.toThrow("HTTP 401");
    await expect(new Viewer([DASHBOARD_SUBPROTOCOL, "bearer.wrong-token-of-some-length"]).opened).rejects.toThrow("HTTP 401");
    await expect(new Viewer([DASHBOARD_SUBPROTOCOL, `bearer.${TOKEN}`], "/elsewhere").opened).rejects.toThrow("HTTP 404");
    expect(sockets.stats.upgradesRefused.unauthorized).toBe(2);
    expect(sockets.viewers).toBe(0);
    // a server-side client may use the Authorization header instead of the subprotocol
    const h = new WebSocket(`${url}${DASHBOARD_SOCKET_PATH}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    await new Promise<void>((ok, fail) => (h.once("open", () => ok()), h.once("error", fail)));
    h.close();
  });

  it("answers a sync request with the document, then sends each change as one incremental update", async () => {
    const v = new Viewer();
    await v.opened;
    expect(v.ws.protocol).toBe(DASHBOARD_SUBPROTOCOL); // the token is never echoed back
    v.syncStep1();
    await until(() => v.synced, "sync");
    expect(v.doc.getMap("node").toJSON()).toEqual({ self: "peer-1" });
    const full = Y.encodeStateAsUpdate(doc).byteLength;
    const before = v.frames.length;
    doc.getMap("node").set("spent", "12345");
    await until(() => v.frames.length === before + 1, "the update");
    expect(v.doc.getMap("node").get("spent")).toBe("12345");
    // the update carries the change alone: the next one is not bigger for a bigger document
    doc.transact(() => {
      for (let i = 0; i < 200; i++) doc.getMap("filler").set(`k${i}`, `value ${i}`);
    });
    await until(() => v.doc.getMap("filler").size === 200, "filler");
    const n = v.frames.length;
    doc.getMap("node").set("spent", "12346");
    await until(() => v.frames.length === n + 1, "the second update");
    expect(v.frames[n]!.byteLength).toBeLessThan(full + 16);
    expect(v.frames[n]!.byteLength).toBeLessThan(Y.encodeStateAsUpdate(doc).byteLength / 20);
    expect(v.doc.toJSON()).toEqual(doc.toJSON());
    expect(sockets.stats.updatesBroadcast).toBe(3);
  });

  it("is read-only: a viewer's updates and awareness are ignored and counted; the connection stays", async () => {
    const v = new Viewer();
    await v.opened;
    v.syncStep1();
    await until(() => v.synced, "sync");
    const evil = new Y.Doc();
    evil.getMap("node").set("self", "evil");
    for (const step of [syncProtocol.messageYjsSyncStep2, syncProtocol.messageYjsUpdate]) {
      const e = encoding.createEncoder();
      encoding.writeVarUint(e, 0);
      encoding.writeVarUint(e, step);
      encoding.writeVarUint8Array(e, Y.encodeStateAsUpdate(evil));
      v.send(encoding.toUint8Array(e));
    }
    const aw = encoding.createEncoder();
    encoding.writeVarUint(aw, 1);
    encoding.writeVarUint8Array(aw, new Uint8Array([0]));
    v.send(encoding.toUint8Array(aw));
    await until(() => sockets.stats.ignored["client-update"] === 2 && sockets.stats.ignored.awareness === 1, "the frames");
    expect(doc.getMap("node").get("self")).toBe("peer-1");
    expect(v.ws.readyState).toBe(WebSocket.OPEN);
  });

  it("closes on a frame that does not parse, an unknown type, a text frame, and one above the size limit", async () => {
    const cases: [string | Uint8Array, number, string][] = [
      [new Uint8Array([0, 0, 0xff]), 1007, "decode"],
      [new Uint8Array([9]), 1003, "unknown-type"],
      ["hello", 1003, "decode"],
      [new Uint8Array(64 * 1024 + 1), 1009, "too-large"],
    ];
    for (const [frame, code, reason] of cases) {
      const v = new Viewer();
      await v.opened;
      const before = sockets.stats.refused[reason as "decode"];
      v.ws.send(frame);
      expect((await v.closed).code).toBe(code);
      expect(sockets.stats.refused[reason as "decode"]).toBe(before + 1);
    }
    expect(doc.getMap("node").toJSON()).toEqual({ self: "peer-1" });
  });

  it("bounds viewers, frames and sync requests per window", async () => {
    sockets.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await serve({ maxConnections: 2, maxSyncRequestsPerWindow: 3, maxMessagesPerWindow: 20, windowMs: 60_000 });
    const v1 = new Viewer();
    const v2 = new Viewer();
    await Promise.all([v1.opened, v2.opened]);
    await expect(new Viewer().opened).rejects.toThrow("HTTP 503");
    expect(sockets.stats.upgradesRefused.full).toBe(1);
    for (let i = 0; i < 4; i++) v1.syncStep1();
    expect((await v1.closed).code).toBe(1008);
    expect(sockets.stats.refused["too-many-sync-requests"]).toBe(1);
    expect(sockets.stats.syncRequests).toBe(3);
    const aw = encoding.createEncoder();
    encoding.writeVarUint(aw, 3);
    for (let i = 0; i < 21; i++) v2.send(encoding.toUint8Array(aw));
    expect((await v2.closed).code).toBe(1008);
    expect(sockets.stats.refused["too-many-messages"]).toBe(1);
    await until(() => sockets.viewers === 0, "the viewers to leave");
    expect(viewerCounts.at(-1)).toBe(0);
  });
});
