import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { DatabaseSync } from "node:sqlite";
import { generateKeyPairSync } from "node:crypto";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, DaemonStartError, initCluster, loadConfig, silentLogger, startDaemon, type InitPeer } from "../src/index.ts";
import { onEphemeralPorts } from "./support/embedded.ts";
import { hasOpenssl } from "./support/openssl.ts";

let dir: string;
let a: InitPeer[];
let b: InitPeer[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "heddle-start-"));
  a = await initCluster({ dir: join(dir, "a"), peers: 2, mode: "static" });
  b = await initCluster({ dir: join(dir, "b"), peers: 1, mode: "static", supply: 5n });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function startError(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("the daemon started");
}

describe("startDaemon refuses what it cannot run, saying what to fix", () => {
  it("a busy API port", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const c = onEphemeralPorts(loadConfig(a[0]!.config));
      const e = await startError(startDaemon({ ...c, api: { ...c.api, port } }, { logger: silentLogger }));
      expect(e).toBeInstanceOf(DaemonStartError);
      expect((e as DaemonStartError).reason).toBe("api-port");
      expect(e.message).toMatch(new RegExp(`api.listen 127.0.0.1:${port}: the address is in use`));
      // the peer id, for the CLI to ask that port's API whether it is this peer already running
      expect((e as DaemonStartError).self).toBe(a[0]!.id);
      // Everything started before the API was stopped again: the same peer starts on a free port.
      const d = await startDaemon(c, { logger: silentLogger });
      await d.close();
    } finally {
      blocker.close();
    }
  });

  it("a store of another cluster", async () => {
    const other = onEphemeralPorts(loadConfig(b[0]!.config));
    const d = await startDaemon(other, { logger: silentLogger });
    await d.close();
    const mine = onEphemeralPorts(loadConfig(a[1]!.config));
    const e = await startError(startDaemon({ ...mine, storeDir: other.storeDir }, { logger: silentLogger }));
    expect(e).toBeInstanceOf(DaemonStartError);
    expect((e as DaemonStartError).reason).toBe("store");
    expect(e.message).toMatch(/belongs to another cluster or peer/);
  });

  it("a store the node refuses to serve from is a store problem, not a config one", async () => {
    const [p] = await initCluster({ dir: join(dir, "boot-ceiling"), peers: 1, mode: "static" });
    const c = onEphemeralPorts(loadConfig(p!.config));
    const d = await startDaemon(c, { logger: silentLogger });
    await d.close();
    // the boot counter at its ceiling: the next boot would leave the demand clock's epoch range (node.md §9)
    const db = new DatabaseSync(join(c.storeDir, "ledger.sqlite"));
    db.exec(`UPDATE meta SET boot = ${2 ** 31 - 1}`);
    db.close();
    const e = await startError(startDaemon(c, { logger: silentLogger }));
    expect(e).toBeInstanceOf(DaemonStartError);
    expect((e as DaemonStartError).reason).toBe("store");
    expect(e.message).toMatch(/ledger\.sqlite cannot be served from: boot counter 2147483648 is outside/);
    expect(e.message).not.toMatch(/genesis/);
  });

  it("a key that is not in the roster, a missing key, a short token", async () => {
    const c = onEphemeralPorts(loadConfig(a[0]!.config));
    const foreign = await startError(startDaemon({ ...c, keyFile: join(b[0]!.dir, "peer.key") }, { logger: silentLogger }));
    expect(foreign).toBeInstanceOf(ConfigError);
    expect((foreign as ConfigError).issues).toEqual([{ field: "identity.keyFile", problem: expect.stringMatching(/not in the roster/) }]);
    const missing = await startError(startDaemon({ ...c, keyFile: join(dir, "nope.key") }, { logger: silentLogger }));
    expect(missing).toMatchObject({ reason: "key", message: expect.stringMatching(/does not exist; heddle init creates/) });
    const short = join(dir, "short-token");
    writeFileSync(short, "abc\n");
    const tok = await startError(startDaemon({ ...c, api: { ...c.api, tokenFile: short } }, { logger: silentLogger }));
    expect(tok).toMatchObject({ reason: "token", message: expect.stringMatching(/at least 16 visible ASCII characters/) });
    // at least 16 code units, but not visible ASCII: no HTTP client could send it as the daemon reads it
    writeFileSync(short, "pässwörd-pässwörd-pässwörd\n");
    const latin = await startError(startDaemon({ ...c, api: { ...c.api, tokenFile: short } }, { logger: silentLogger }));
    expect(latin).toMatchObject({ reason: "token", message: expect.stringMatching(/visible ASCII/) });
    unlinkSync(short);
    const noTok = await startError(startDaemon({ ...c, api: { ...c.api, tokenFile: short } }, { logger: silentLogger }));
    expect(noTok).toMatchObject({ reason: "token", message: expect.stringMatching(/cannot be read/) });
  });

  it("TLS files that are not a PEM key and certificate: a DaemonStartError 'tls' naming both keys, before anything starts", async () => {
    const c = onEphemeralPorts(loadConfig(a[0]!.config));
    const junkKey = join(dir, "junk-key.pem");
    const junkCert = join(dir, "junk-cert.pem");
    writeFileSync(junkKey, "not a pem\n");
    writeFileSync(junkCert, "not a pem\n");
    // Before: startDaemon rejected with a plain Error ("PEM routines::no start line") from the HTTPS server, which
    // `heddle start` reports as an internal error.
    const e = await startError(startDaemon({ ...c, api: { ...c.api, tls: { keyFile: junkKey, certFile: junkCert } } }, { logger: silentLogger }));
    expect(e.name).toBe("DaemonStartError");
    expect(e).toBeInstanceOf(DaemonStartError);
    expect((e as DaemonStartError).reason).toBe("tls");
    expect(e.message).toMatch(/^api\.tls\.keyFile .*junk-key\.pem \/ api\.tls\.certFile .*junk-cert\.pem: not a usable PEM private key and certificate chain \(.*\); point them at/);
    // a real key with a certificate that is not one is refused the same way
    const realKey = join(dir, "real-key.pem");
    writeFileSync(realKey, generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }));
    const half = await startError(startDaemon({ ...c, api: { ...c.api, tls: { keyFile: realKey, certFile: junkCert } } }, { logger: silentLogger }));
    expect(half).toMatchObject({ name: "DaemonStartError", reason: "tls" });
    // nothing was left running: the same peer starts
    const d = await startDaemon(c, { logger: silentLogger });
    await d.close();
  });

  it.skipIf(!hasOpenssl)("a real TLS key and certificate serve HTTPS; a certificate of another key is refused as 'tls'", async () => {
    const c = onEphemeralPorts(loadConfig(a[0]!.config));
    const key = join(dir, "tls-key.pem");
    const cert = join(dir, "tls-cert.pem");
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
    const d = await startDaemon({ ...c, api: { ...c.api, tls: { keyFile: key, certFile: cert } } }, { logger: silentLogger });
    expect(d.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    await d.close();
    const otherKey = join(dir, "other-key.pem");
    writeFileSync(otherKey, generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }));
    const e = await startError(startDaemon({ ...c, api: { ...c.api, tls: { keyFile: otherKey, certFile: cert } } }, { logger: silentLogger }));
    expect(e).toMatchObject({ name: "DaemonStartError", reason: "tls" });
  });
});

describe("clean shutdown", () => {
  it("closes the API and the store; the same store restarts with the next epoch", async () => {
    const c = onEphemeralPorts(loadConfig(a[0]!.config));
    const d1 = await startDaemon(c, { logger: silentLogger });
    const s1 = (await (await fetch(`${d1.url}/v1/status`, { headers: { authorization: `Bearer ${d1.token}` } })).json()) as { epoch: number };
    await d1.close();
    await expect(fetch(`${d1.url}/v1/status`)).rejects.toThrow();
    const d2 = await startDaemon(c, { logger: silentLogger });
    const s2 = (await (await fetch(`${d2.url}/v1/status`, { headers: { authorization: `Bearer ${d2.token}` } })).json()) as { epoch: number };
    expect(s2.epoch).toBe(s1.epoch + 1);
    await d2.close();
  });
});
