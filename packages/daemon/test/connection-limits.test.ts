// limits.maxConnections and limits.requestTimeoutMs: a client needs no token to open a connection or to start
// sending a request, so without these bounds idle connections could use up the daemon's file descriptors and a
// body sent a byte at a time held its request open for good (fastify switches Node's own request bound off).
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";

let s: SoloDaemon;
const MAX = 8;

beforeAll(async () => {
  s = await soloDaemon({}, (c) => ({ ...c, limits: { ...c.limits, maxConnections: MAX, requestTimeoutMs: 1_000 } }));
});
afterAll(async () => {
  await s?.close();
});

function open(): Promise<Socket> {
  const { hostname, port } = new URL(s.daemon.url);
  return new Promise((resolve, reject) => {
    const c = connect({ host: hostname, port: Number(port) }, () => resolve(c));
    c.on("error", reject);
  });
}

/** Everything the server sends on `c` until it closes the connection. */
function untilClosed(c: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    c.on("data", (d: Buffer) => (text += d.toString("latin1")));
    c.on("error", () => {});
    c.on("close", () => resolve(text));
  });
}

describe("API connection limits", () => {
  it("a connection past limits.maxConnections is closed on arrival and counted; the others keep working", async () => {
    s.client.close(); // the shared client's kept-alive sockets would count too
    const held: Socket[] = [];
    for (let i = 0; i < MAX; i++) held.push(await open());
    const extra = await open(); // the kernel accepts it; the server closes it at once
    expect(await untilClosed(extra)).toBe("");
    // one of the held connections still serves a request
    const answer = untilClosed(held[0]!);
    held[0]!.end(`GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.daemon.token}\r\nConnection: close\r\n\r\n`);
    expect(await answer).toMatch(/^HTTP\/1\.1 200 /);
    for (const c of held.slice(1)) c.destroy();
    // once connections are free again, the drop shows in /metrics
    const c = new HeddleClient({ url: s.daemon.url, token: s.daemon.token });
    try {
      let metrics = "";
      // the destroyed sockets close on the server's side a moment later
      for (let i = 0; i < 100 && !/heddle_api_connections_dropped_total 1\b/.test(metrics); i++) {
        await new Promise((r) => setTimeout(r, 20));
        metrics = (await c.raw("GET", "/metrics")).text;
      }
      expect(metrics).toMatch(/heddle_api_connections_dropped_total 1\b/);
    } finally {
      c.close();
    }
  });

  it("a request whose body does not arrive within limits.requestTimeoutMs is answered 408 and its connection closed", async () => {
    const c = await open();
    const answer = untilClosed(c);
    // the headers promise 100 bytes; one arrives, then nothing
    c.write(`POST /v1/reservations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.daemon.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("headers that never finish are cut off too", async () => {
    const c = await open();
    const answer = untilClosed(c);
    c.write("GET /v1/status HTTP/1.1\r\nHost: x\r\n"); // no blank line: the headers never end
    expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
  });
});
