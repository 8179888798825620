// Governed mode with the control log on etcd (issue 18): `mode.etcd` in the config file (errors name the key), a
// clear start error when etcd does not answer, and a daemon whose control plane runs on a real etcd.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { etcdControlLog } from "@heddle/governed";
import { ConfigError, DaemonStartError, initCluster, parseConfig, silentLogger, startDaemon, loadConfig, type InitPeer } from "../src/index.ts";
import { EtcdCluster, freePort } from "../../governed/test/support/etcd-cluster.ts";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";
import type { GovernedMode } from "../src/index.ts";

let dir: string;
let peers: InitPeer[];
let base: Record<string, any>;
let etcd: EtcdCluster;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "heddle-etcd-mode-"));
  peers = await initCluster({ dir: join(dir, "c"), peers: 3, mode: "governed", basePort: 21_000 });
  base = JSON.parse(readFileSync(peers[0]!.config, "utf8"));
  etcd = await EtcdCluster.start(1);
}, 60_000);
afterAll(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function issuesOf(doc: unknown): { field: string; problem: string }[] {
  try {
    parseConfig(doc, join(dir, "x.json"));
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return [...(e as ConfigError).issues];
  }
  throw new Error("the config was accepted");
}

const withEtcd = (etcdBlock: unknown, voters?: string[]): unknown => {
  const d = structuredClone(base);
  d.mode.etcd = etcdBlock;
  if (voters !== undefined) d.mode.voters = voters;
  return d;
};


/** The daemon's status once its control plane is writable (or the last one seen, after 15 s). */
async function writableStatus(s: SoloDaemon): Promise<any> {
  let st: any;
  for (let i = 0; i < 300; i++) {
    st = await s.client.status();
    if (st.control.isWritable) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return st;
}
describe("config: mode.etcd", () => {
  it("resolves endpoints, prefix, TLS files (relative to the config file) and auth; voters may then be empty", () => {
    const c = parseConfig(
      withEtcd({ endpoints: ["https://10.0.0.1:2379", "https://10.0.0.2:2379"], prefix: "prod/heddle/", tls: { caFile: "ca.pem", certFile: "/etc/c.pem", keyFile: "k.pem" }, auth: { username: "heddle", passwordFile: "pw" } }, []),
      join(dir, "x.json"),
    );
    const m = c.mode as GovernedMode;
    expect(m.etcd).toEqual({
      endpoints: ["https://10.0.0.1:2379", "https://10.0.0.2:2379"],
      prefix: "prod/heddle/",
      tls: { caFile: join(dir, "ca.pem"), certFile: "/etc/c.pem", keyFile: join(dir, "k.pem") },
      auth: { username: "heddle", passwordFile: join(dir, "pw") },
    });
  });

  it("resolves the call and attempt deadlines; an attempt deadline above the call's is named (an attempt never outlives its call)", () => {
    const m = parseConfig(withEtcd({ endpoints: ["http://a:1"], callTimeoutMs: 4_000, attemptTimeoutMs: 800, unavailableAfterMs: 2_000 }, []), join(dir, "x.json")).mode as GovernedMode;
    expect(m.etcd).toEqual({ endpoints: ["http://a:1"], callTimeoutMs: 4_000, attemptTimeoutMs: 800, unavailableAfterMs: 2_000 });
    expect(issuesOf(withEtcd({ endpoints: ["http://a:1"], attemptTimeoutMs: 6_000 }))).toEqual([
      { field: "mode.etcd.attemptTimeoutMs", problem: "is above callTimeoutMs (5000): an attempt never outlives its call — lower it, or raise callTimeoutMs" },
    ]);
  });

  it("names the key of every mistake", () => {
    expect(issuesOf(withEtcd({ endpoints: ["10.0.0.1:2379"] }))[0]!.field).toBe("mode.etcd.endpoints[0]");
    expect(issuesOf(withEtcd({ endpoints: [] }))[0]!.field).toBe("mode.etcd.endpoints");
    expect(issuesOf(withEtcd({ endpoints: ["http://a:1"], tls: { caFile: "ca", certFile: "c" } }))).toEqual([{ field: "mode.etcd.tls.keyFile", problem: "is missing: a client certificate needs both certFile and keyFile" }]);
    expect(issuesOf(withEtcd({ endpoints: ["http://a:1"], auth: { username: "u" } }))[0]!.field).toBe("mode.etcd.auth.passwordFile");
    expect(issuesOf(withEtcd({ endpoints: ["http://a:1"], color: "blue" }))[0]!.field).toMatch(/^mode\.etcd/);
    const d = structuredClone(base);
    d.mode.voters = [];
    expect(issuesOf(d)).toEqual([{ field: "mode.voters", problem: "is empty: name at least one Raft voter, or set mode.etcd to keep the control log on etcd" }]);
  });
});

describe("daemon: governed mode on etcd", () => {
  it("refuses to start when etcd does not answer, naming mode.etcd.endpoints", async () => {
    const port = await freePort(); // nothing listens there
    const config = loadConfig(peers[0]!.config);
    const patched = { ...config, mode: { ...(config.mode as GovernedMode), etcd: { endpoints: [`http://127.0.0.1:${port}`], callTimeoutMs: 500 } }, api: { ...config.api, port: 0 }, listen: ["/ip4/127.0.0.1/tcp/0"] };
    let err: unknown;
    try {
      const d = await startDaemon(patched, { logger: silentLogger });
      await d.close();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DaemonStartError);
    expect((err as DaemonStartError).reason).toBe("etcd");
    expect((err as Error).message).toMatch(/mode\.etcd\.endpoints: etcd at http:\/\/127\.0\.0\.1:\d+ did not answer/);
  }, 30_000);

  it("runs its control plane on etcd: enrolls, mints over HTTP, and the entries are etcd keys under the prefix", async () => {
    const prefix = `daemon-test/${process.pid}/`;
    const s = await soloDaemon({ mode: "governed" }, (c) => ({ ...c, mode: { ...(c.mode as GovernedMode), etcd: { endpoints: etcd.endpoints, prefix } } }));
    try {
      const st: any = await writableStatus(s);
      expect(st.control).toMatchObject({ isWritable: true, role: "etcd", voters: [] });
      const a = (await s.client.mint(1000, { holder: s.daemon.self, idempotencyKey: "etcd-supply-1" })) as { kind: string; index: number };
      expect(a.kind).toBe("applied");
      const again = (await s.client.mint(1000, { holder: s.daemon.self, idempotencyKey: "etcd-supply-1" })) as { kind: string; index: number };
      expect(again).toEqual(a);
      // a leader transfer is etcd's to make: a named refusal, not a 500 (before: a plain Error, answered 500 "internal")
      const transfer = await s.client.raw("POST", "/v1/control/leader/transfer", { to: s.daemon.self });
      expect(transfer).toMatchObject({
        status: 409,
        body: { error: "refused", message: expect.stringMatching(/mode\.etcd.*etcdctl move-leader/), refusal: { kind: "transfer-failed", reason: "etcd" } },
      });
      // another reader of the same prefix sees the entry at that index
      const probe = etcdControlLog({ id: "probe", endpoints: etcd.endpoints, prefix });
      try {
        expect(await probe.readIndex()).toBeGreaterThanOrEqual(a.index);
        for await (const item of probe.committedFrom(a.index)) {
          expect(item.kind === "entry" && item.entry.index === a.index && item.entry.key?.client.length).toBeTruthy();
          break;
        }
      } finally {
        await probe.close();
      }
    } finally {
      await s.close();
    }
  }, 60_000);
  /** Writes `value` at `key` through etcd's JSON gateway (an operator's `etcdctl put`, or another tool's write). */
  async function etcdPut(key: string, value: string): Promise<void> {
    const b64 = (x: string) => Buffer.from(x, "utf8").toString("base64");
    const r = await fetch(`${etcd.endpoints[0]}/v3/kv/put`, { method: "POST", body: JSON.stringify({ key: b64(key), value: b64(value) }) });
    expect(r.status).toBe(200);
  }

  it("shows the etcd log in status (head and the peer that stamped it); a malformed head is answered 503 naming it, not 504 outcome-unknown", async () => {
    const prefix = `daemon-head/${process.pid}/`;
    const s = await soloDaemon({ mode: "governed" }, (c) => ({ ...c, mode: { ...(c.mode as GovernedMode), etcd: { endpoints: etcd.endpoints, prefix } } }));
    try {
      let st: any = await writableStatus(s);
      const a = (await s.client.mint(1000, { holder: s.daemon.self, idempotencyKey: "etcd-head-1" })) as { kind: string; index: number };
      expect(a.kind).toBe("applied");
      st = await s.client.status();
      expect(st.control.etcd).toMatchObject({ available: true, head: { index: a.index, stampedBy: s.daemon.self }, corrupt: null, clockAhead: null, maxClockAheadMs: 60_000 });
      await etcdPut(`${prefix}head`, "not json");
      const r = await s.client.raw("POST", "/v1/control/mint", { amount: "5", holder: s.daemon.self }, { headers: { "idempotency-key": "etcd-head-2" } });
      expect(r).toMatchObject({ status: 503, body: { error: "unavailable", committed: false, message: expect.stringMatching(/^EtcdLogCorruptError: daemon-head\/\d+\/head at mod revision \d+ is not a head this log writes \(not JSON/) } });
      st = await s.client.status();
      expect(st.control.etcd.corrupt).toMatch(/is not a head this log writes/);
    } finally {
      await s.close();
    }
  }, 60_000);

  it("refuses to start on a malformed head under the prefix, naming mode.etcd.prefix (etcd answered)", async () => {
    const prefix = `daemon-badhead/${process.pid}/`;
    await etcdPut(`${prefix}head`, JSON.stringify({ index: 1, stamp: "soon" }));
    const config = loadConfig(peers[0]!.config);
    const patched = { ...config, mode: { ...(config.mode as GovernedMode), etcd: { endpoints: etcd.endpoints, prefix } }, api: { ...config.api, port: 0 }, listen: ["/ip4/127.0.0.1/tcp/0"] };
    const err = await startDaemon(patched, { logger: silentLogger }).then(async (d) => (await d.close(), null), (e: Error) => e);
    expect(err).toBeInstanceOf(DaemonStartError);
    expect(err?.message).toMatch(/^mode\.etcd\.prefix: etcd answered, but daemon-badhead\/\d+\/head at mod revision \d+ is not a head this log writes \(stamp "soon" is not a number of milliseconds/);
  }, 30_000);
});
