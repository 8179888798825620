// The call wire on a daemon that serves HTTPS (api.tls): HeddleWire upgrades over TLS with the daemon's CA, and a
// client that does not trust the certificate gets no connection (a DaemonUnreachableError, nothing sent).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DaemonUnreachableError, HeddleClient, HeddleWire } from "@heddle/client";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";
import { hasOpenssl } from "./support/openssl.ts";


let s: SoloDaemon;
let dir: string;
let cert: string;

beforeAll(async () => {
  if (!hasOpenssl) return;
  dir = mkdtempSync(join(tmpdir(), "heddle-wire-tls-"));
  const key = join(dir, "key.pem");
  cert = join(dir, "cert.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  s = await soloDaemon({}, (c) => ({ ...c, api: { ...c.api, tls: { keyFile: key, certFile: cert } } }));
});
afterAll(async () => {
  await s?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

it.skipIf(!hasOpenssl)("upgrades over TLS and answers as the HTTPS routes do; an untrusted certificate is refused before anything is sent", async () => {
  expect(s.daemon.url).toMatch(/^https:/);
  const ca = readFileSync(cert);
  const w = new HeddleWire({ url: s.daemon.url, token: s.daemon.token, ca });
  const https = new HeddleClient({ url: s.daemon.url, token: s.daemon.token, ca });
  try {
    const body = { holder: "x", resources: [{ key: "k", mode: "exclusive" }] };
    const viaWire = await w.raw("/claims/take", body);
    const viaHttps = await https.raw("POST", "/v1/claims/take", body);
    // a static peer: granted claims answer 409 static-mode, on both
    expect(viaWire.status).toBe(409);
    expect(viaWire.body).toEqual(viaHttps.body);
  } finally {
    w.close();
    https.close();
  }
  const untrusting = new HeddleWire({ url: s.daemon.url, token: s.daemon.token });
  const e = await untrusting.raw("/claims/take", {}).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(DaemonUnreachableError);
  expect((e as DaemonUnreachableError).sent).toBe(false);
  untrusting.close();
});
