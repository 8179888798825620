// A write the daemon may have acted on exits 6 (outcome unknown), never 4 ("cannot reach the daemon, start it"):
// against loopback servers that take the whole request and then hang, or reset the connection. Exit 4 stays for a
// request that never left (nothing listening), and for a read. Review-124 item 2: `heddle mint 5
// --idempotency-key K1 --timeout 2` on a peer without quorum, and a kill -9 mid-mint, both exited 4.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.ts";
import { run } from "./support/fake-daemon.ts";

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A loopback server that reads each whole request, records it, then runs `then` (which never answers). */
async function serve(then: (req: IncomingMessage, res: ServerResponse) => void, seen: string[] = []): Promise<string> {
  const s = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      seen.push(`${req.method} ${req.url}`);
      then(req, res);
    });
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}
const hang = () => {};
const reset = (req: IncomingMessage) => req.socket.destroy();

const at = (url: string, argv: string[]) => run([...argv, "--url", url, "--token", "t", "--timeout", "0.3"]);

describe("a write already sent whose answer is lost exits 6", () => {
  it("keyed mint that times out: exit 6, retry with the same key or heddle outcome", async () => {
    const seen: string[] = [];
    const url = await serve(hang, seen);
    const r = await at(url, ["mint", "5", "--holder", "p1", "--idempotency-key", "K1"]);
    expect(seen).toEqual(["POST /v1/control/mint"]);
    expect(r.code, r.err).toBe(EXIT.unknown);
    expect(r.err).toContain("its outcome is unknown");
    expect(r.err).toContain("Retry with the same --idempotency-key K1: it applies at most once; or see what it did: heddle outcome --idempotency-key K1");
    expect(r.err).not.toContain("cannot reach the daemon");
  });

  it("a keyed mint whose holder the CLI filled in says which id it named, so a retry through another peer can name it too (review)", async () => {
    const s = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        if (req.url === "/v1/status") res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ self: "12D3KooWthisPeer" }));
      });
    });
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
    const r = await at(`http://127.0.0.1:${(s.address() as AddressInfo).port}`, ["mint", "5", "--idempotency-key", "K3"]);
    expect(r.code, r.err).toBe(EXIT.unknown);
    expect(r.err).toContain("it named this peer, 12D3KooWthisPeer, for --holder; a retry through another peer must pass --holder 12D3KooWthisPeer to be the same act");
  });

  it("a reset after the request was sent (the peer killed mid-call): exit 6; --json says outcome-unknown on stdout", async () => {
    const url = await serve(reset);
    const r = await at(url, ["mint", "5", "--holder", "p1", "--idempotency-key=K2", "--json"]);
    expect(r.code, r.err).toBe(EXIT.unknown);
    expect(JSON.parse(r.out)).toMatchObject({ error: "outcome-unknown", method: "POST", path: "/v1/control/mint" });
    expect(r.err).toContain("heddle outcome --idempotency-key K2");
  });

  it("without a key it says a plain retry may apply twice and where to look; a reserve's key is retried, not looked up", async () => {
    const url = await serve(hang);
    const bare = await at(url, ["mint", "5"]);
    expect(bare.code, bare.err).toBe(EXIT.unknown);
    expect(bare.err).toContain("sent without --idempotency-key, so a plain retry may apply it twice: look first (heddle sync: its mintedTotal)");
    const reserve = await at(url, ["reserve", "leaf-a", "10", "--idempotency-key", "job-1"]);
    expect(reserve.code, reserve.err).toBe(EXIT.unknown);
    expect(reserve.err).toContain("Retry with the same --idempotency-key job-1: it applies at most once");
    expect(reserve.err).not.toContain("heddle outcome");
  });
});

describe("exit 4 stays for what never left, and for reads", () => {
  it("nothing listening: exit 4, start it", async () => {
    const url = await serve(hang);
    servers[0]!.closeAllConnections();
    await new Promise((r) => servers.splice(0)[0]!.close(r));
    const r = await at(url, ["mint", "5", "--holder", "p1", "--idempotency-key", "K3"]);
    expect(r.code, r.err).toBe(EXIT.unreachable);
    expect(r.err).toContain("cannot reach the daemon");
  });

  it("a read that gets no answer: exit 4 (nothing to apply twice)", async () => {
    const url = await serve(hang);
    const r = await at(url, ["tree"]);
    expect(r.code, r.err).toBe(EXIT.unreachable);
    // it is running (it took the request): "start it" would be wrong advice
    expect(r.err).toContain("it took the request but gave no whole answer");
    expect(r.err).not.toContain("start it");
  });
});
