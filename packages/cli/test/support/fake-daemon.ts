// A stand-in for the daemon's HTTP API: records every request and answers what the test says, so a test can check
// what the CLI sends (headers, bodies) and how it reads an answer, without starting a peer.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { main } from "../../src/main.ts";

/** One request the fake daemon received. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the fake answers a request with: status and JSON body. */
export type Answer = (req: Seen) => { status: number; body: unknown };

export interface FakeDaemon {
  readonly url: string;
  readonly seen: Seen[];
  /** Replaces the answer function (default: 200 `{}`). */
  answer: Answer;
  close(): Promise<void>;
}

export async function fakeDaemon(): Promise<FakeDaemon> {
  const seen: Seen[] = [];
  const f = { answer: (() => ({ status: 200, body: {} })) as Answer };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const s: Seen = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      seen.push(s);
      const a = f.answer(s);
      res.writeHead(a.status, { "content-type": "application/json" }).end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(f, {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  });
}

/** `heddle ...argv` in-process, its output collected. */
export async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, { out: (x) => void (out += x), err: (x) => void (err += x), tty: false });
  return { code, out, err };
}
