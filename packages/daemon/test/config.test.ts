import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RAFT_CONFIG, raftConfig } from "@heddle/governed";
import { ConfigError, initCluster, loadConfig, parseConfig, silentLogger, startDaemon, type GovernedMode, type InitPeer } from "../src/index.ts";
import { addressIssues } from "../src/config-addresses.ts";
import { RAFT_TIMING_DEFAULTS, raftConfigOf, raftTimingIssues } from "../src/config.ts";
import { ephemeralPortRange } from "../../seam/src/ports.ts";

let dir: string;
let peers: InitPeer[];
let base: Record<string, any>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "heddle-config-"));
  peers = await initCluster({ dir: join(dir, "c"), peers: 3, mode: "static", basePort: 20_000 });
  base = JSON.parse(readFileSync(peers[0]!.config, "utf8"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function issuesOf(doc: unknown): { field: string; problem: string }[] {
  try {
    parseConfig(doc, join(dir, "x.json"));
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return [...(e as ConfigError).issues];
  }
  throw new Error("the config was accepted");
}

function edit(f: (d: any) => void): unknown {
  const d = structuredClone(base);
  f(d);
  return d;
}

describe("config file", () => {
  it("accepts what init writes, resolving paths against the file and filling defaults", () => {
    const c = loadConfig(peers[1]!.config);
    expect(c.keyFile).toBe(join(peers[1]!.dir, "peer.key"));
    expect(c.api).toMatchObject({ host: "127.0.0.1", port: 20_102, tokenFile: join(peers[1]!.dir, "token"), tls: null });
    expect(c.mode.kind).toBe("static");
    if (c.mode.kind === "static") {
      expect([...c.mode.supply.values()]).toEqual([1000n, 1000n, 1000n]);
      expect(c.mode.topology.map((t) => t.id)).toEqual(["root→tenant-a", "root→tenant-b"]);
    }
    expect(c.limits.maxBodyBytes).toBe(65_536);
    expect(c.roster.map((p) => p.id)).toEqual(peers.map((p) => p.id));
  });

  it("names a field of the wrong type, with what it wanted and what it got", () => {
    const issues = issuesOf(edit((d) => (d.api.listen = 7201)));
    expect(issues).toEqual([{ field: "api.listen", problem: expect.stringMatching(/wrong type: expected host:port.*got the integer 7201/) }]);
    const nested = issuesOf(edit((d) => (d.roster[1].addrs = "x")));
    expect(nested.map((i) => i.field)).toEqual(["roster[1].addrs"]);
  });

  it("names an unknown key, and lists the known ones", () => {
    const issues = issuesOf(edit((d) => (d.api.tokenfile = "token")));
    expect(issues).toEqual([{ field: "api.tokenfile", problem: expect.stringMatching(/not a known key.*tokenFile/) }]);
    expect(issuesOf(edit((d) => (d.colour = "blue"))).map((i) => i.field)).toEqual(["colour"]);
  });

  it("takes store.raftLog auto|wal|sqlite (default auto) and names the key when it is anything else", () => {
    expect(loadConfig(peers[0]!.config).raftLog).toBe("auto");
    expect(parseConfig(edit((d) => (d.store.raftLog = "wal")), join(dir, "x.json")).raftLog).toBe("wal");
    const issues = issuesOf(edit((d) => (d.store.raftLog = "rocksdb")));
    expect(issues.map((i) => i.field)).toEqual(["store.raftLog"]);
  });

  it("names a missing field", () => {
    expect(issuesOf(edit((d) => delete d.store))).toEqual([{ field: "store", problem: "is missing (required)" }]);
    expect(issuesOf(edit((d) => delete d.identity.keyFile))).toEqual([{ field: "identity.keyFile", problem: "is missing (required)" }]);
  });

  it("checks the mode against its own kind, naming fields inside it", () => {
    expect(issuesOf(edit((d) => (d.mode.kind = "federated"))).map((i) => i.field)).toEqual(["mode.kind"]);
    expect(issuesOf(edit((d) => (d.mode.topology[0].weight = "0")))).toEqual([{ field: "mode.topology[0].weight", problem: expect.stringMatching(/positive weight/) }]);
    expect(issuesOf(edit((d) => (d.mode.voters = [])))).toEqual([{ field: "mode.voters", problem: expect.stringMatching(/not a known key/) }]);
    const missingSupply = issuesOf(edit((d) => delete d.mode.supply[peers[2]!.id]));
    expect(missingSupply).toEqual([{ field: `mode.supply.${peers[2]!.id}`, problem: expect.stringMatching(/every roster peer needs a supply/) }]);
    const governed = issuesOf(edit((d) => (d.mode = { kind: "governed", root: "root", voters: ["nobody"], learners: [] })));
    expect(governed).toEqual([{ field: "mode.voters[0]", problem: "names nobody, which is not in the roster" }]);
  });

  it("takes governed mode's granted-claims options (mode.claims), naming the field of a bad one", () => {
    const gov = (claims: unknown) => edit((d) => (d.mode = { kind: "governed", root: "root", voters: [peers[0]!.id], learners: [], claims }));
    const c = parseConfig(gov({ capacity: { doc: null, pool: 3 }, roster: ["doc", "pool", "lock"], maxPerHolder: 2 }), join(dir, "x.json"));
    expect(c.mode.kind === "governed" && c.mode.claims).toEqual({ capacity: { doc: null, pool: 3 }, roster: ["doc", "pool", "lock"], maxPerHolder: 2 });
    expect(parseConfig(gov(undefined), join(dir, "x.json")).mode).not.toHaveProperty("claims");
    expect(issuesOf(gov({ capacity: { pool: 0 } }))).toEqual([{ field: "mode.claims.capacity.pool", problem: expect.stringMatching(/≥ 1|at least 1|minimum/i) }]);
    expect(issuesOf(gov({ maxPerHolder: 1.5 })).map((i) => i.field)).toEqual(["mode.claims.maxPerHolder"]);
    expect(issuesOf(gov({ capacity: { pool: 2 }, roster: ["doc"] }))).toEqual([{ field: "mode.claims.capacity", problem: 'capacity names "pool", which is not on the roster' }]);
    expect(issuesOf(gov({ roster: ["a", " a"] }))).toEqual([{ field: "mode.claims.roster", problem: 'roster lists "a" twice' }]);
    expect(issuesOf(gov({ shards: 3 })).map((i) => i.field)).toEqual(["mode.claims.shards"]);
  });

  it("refuses an API beyond loopback without TLS, naming api.tls", () => {
    const issues = issuesOf(edit((d) => (d.api.listen = "0.0.0.0:7201")));
    expect(issues).toEqual([{ field: "api.tls", problem: expect.stringMatching(/beyond loopback, which requires TLS/) }]);
    expect(() => parseConfig(edit((d) => ((d.api.listen = "0.0.0.0:7201"), (d.api.tls = { keyFile: "k.pem", certFile: "c.pem" }))))).not.toThrow();
  });

  it("reports several problems at once, and cross-field rules", () => {
    const issues = issuesOf(
      edit((d) => {
        d.version = 2;
        d.node = { heartbeatIntervalMs: 5000, heartbeatTimeoutMs: 4000 };
      }),
    );
    expect(issues.map((i) => i.field)).toEqual(["version"]);
    expect(issuesOf(edit((d) => (d.node = { heartbeatIntervalMs: 5000, heartbeatTimeoutMs: 4000 })))).toEqual([
      { field: "node.heartbeatTimeoutMs", problem: "must exceed node.heartbeatIntervalMs (5000)" },
    ]);
    expect(issuesOf(edit((d) => d.roster.push(d.roster[0]))).map((i) => i.field)).toEqual(["roster[3].id"]);
  });

  it("refuses a scheduler.intervalMs above node.demandTtlMs / 6, which could not refresh demand every demandTtlMs / 2 (node.md §6)", () => {
    const at = (ttl: number | undefined, interval: number) =>
      edit((d) => {
        if (ttl !== undefined) d.node = { ...(d.node ?? {}), demandTtlMs: ttl };
        d.scheduler = { intervalMs: interval };
      });
    expect(issuesOf(at(1_000, 3_000))).toEqual([{ field: "scheduler.intervalMs", problem: expect.stringMatching(/^is 3000, above node\.demandTtlMs \/ 6 \(166 with node\.demandTtlMs 1000\).*lower scheduler\.intervalMs or raise node\.demandTtlMs$/) }]);
    expect(issuesOf(at(1_200, 201)).map((i) => i.field)).toEqual(["scheduler.intervalMs"]);
    expect(parseConfig(at(1_200, 200), join(dir, "x.json")).schedulerIntervalMs).toBe(200); // exactly TTL / 6
    // against the default TTL (30 000) too
    expect(issuesOf(at(undefined, 5_001))[0]).toMatchObject({ field: "scheduler.intervalMs", problem: expect.stringContaining("5000 with node.demandTtlMs 30000") });
    expect(parseConfig(at(undefined, 5_000), join(dir, "x.json")).node.demandTtlMs).toBe(30_000);
  });

  it("refuses node.maxHoldingsPerPeer and node.quantum whose bound n·E + q (node.md §11, n the roster) leaves int64, naming the key", () => {
    const MAX = 2n ** 63n - 1n;
    const node = (E: bigint, q: bigint) => edit((d) => (d.node = { ...(d.node ?? {}), maxHoldingsPerPeer: E.toString(), quantum: q.toString() }));
    // three roster peers: E ≤ (2^63 − 1 − q) / 3
    const limit = (MAX - 10n) / 3n;
    expect(issuesOf(node(limit + 1n, 10n))).toEqual([{ field: "node.maxHoldingsPerPeer", problem: expect.stringContaining(`set it to at most ${limit}`) }]);
    expect(parseConfig(node(limit, 10n), join(dir, "x.json")).node.maxHoldingsPerPeer).toBe(limit);
    expect(issuesOf(node(MAX, MAX))).toEqual([{ field: "node.quantum", problem: expect.stringContaining(`set it to at most ${MAX - 3n}`) }]);
  });

  it("refuses roster ids that are not peer ids and addresses that are not multiaddrs, naming each (at start: reading a config loads no libp2p)", async () => {
    const good = parseConfig(edit(() => {}), join(dir, "x.json"));
    expect(addressIssues(good)).toEqual([]);
    const issues = addressIssues({
      roster: good.roster.map((p, i) => (i === 1 ? { ...p, id: "peer-2" } : i === 2 ? { ...p, addrs: ["/ip4/127.0.0.1/tcp/7103", "/ip4/999.1.1.1/tcp/7103"] } : p)),
      listen: ["/foo/1"],
      announce: ["/ip4/127.0.0.1/tcp"],
    });
    expect(issues).toEqual([
      { field: "roster[1].id", problem: expect.stringMatching(/^is not a libp2p peer id .*12D3KooW/) },
      { field: "roster[2].addrs[1]", problem: expect.stringMatching(/^is not a valid multiaddr \(Invalid IPv4 address "999\.1\.1\.1"\)/) },
      { field: "p2p.listen[0]", problem: expect.stringMatching(/^is not a valid multiaddr/) },
      { field: "p2p.announce[0]", problem: expect.stringMatching(/^is not a valid multiaddr/) },
    ]);
    // startDaemon refuses such a config file before it opens or listens on anything, naming the key
    const file = join(dir, "bad-announce.json");
    writeFileSync(file, JSON.stringify(edit((d) => (d.p2p.announce = ["/ip4/127.0.0.1/tcp"]))));
    const err = await startDaemon(file, { logger: silentLogger }).then(
      (d) => d.close().then(() => null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([{ field: "p2p.announce[0]", problem: expect.stringMatching(/^is not a valid multiaddr/) }]);
  });

  it("refuses a genesis topology whose weights under one parent sum past int64, naming the entry that tips it over", () => {
    const P62 = (2n ** 62n).toString();
    const topo = (weights: string[]) =>
      edit((d) => (d.mode.topology = weights.map((w, i) => ({ id: `root→g${i}`, parent: "root", child: `g${i}`, weight: w }))));
    expect(issuesOf(topo([P62, "1", P62]))).toEqual([
      { field: "mode.topology[2].weight", problem: expect.stringMatching(/^genesis edge root→g2: weight 4611686018427387904 would make the weights of root's children \(this edge and 2 other .*\) sum past 2\^63 − 1.*choose a smaller weight/) },
    ]);
    // the same sum one below the limit is fine; so are large weights under different parents
    expect(parseConfig(topo([P62, (2n ** 62n - 1n).toString()]), join(dir, "x.json")).mode.kind).toBe("static");
    const split = edit((d) => (d.mode.topology = [{ id: "root→a", parent: "root", child: "a", weight: P62 }, { id: "root→b", parent: "root", child: "b", weight: 1 }, { id: "a→x", parent: "a", child: "x", weight: P62 }, { id: "b→y", parent: "b", child: "y", weight: P62 }]));
    expect(parseConfig(split, join(dir, "x.json")).mode.kind).toBe("static");
    // the schema's largest topology, 10,000 siblings: checked once per parent (review: the check was cubic, minutes
    // per config read at this size), and the one that tips it over still found, in the file's order
    const many = Array.from({ length: 10_000 }, () => "1");
    expect(parseConfig(topo(many), join(dir, "x.json")).mode.kind).toBe("static");
    many[7_777] = (2n ** 63n - 1n).toString();
    expect(issuesOf(topo(many))).toEqual([{ field: "mode.topology[7777].weight", problem: expect.stringMatching(/^genesis edge root→g7777: /) }]);
  });

  it("checks mode.raft against the Raft member's timing rules, naming the key to change", () => {
    const gov = (raft: unknown) => edit((d) => (d.mode = { kind: "governed", root: "root", voters: [peers[0]!.id], learners: [], raft }));
    // the reviewer's example: a heartbeat of 5 ms is not above Raft's 5 ms commit notice
    expect(issuesOf(gov({ heartbeatIntervalMs: 5, electionTimeoutMinMs: 40, electionTimeoutMaxMs: 80 }))).toEqual([
      { field: "mode.raft.heartbeatIntervalMs", problem: expect.stringMatching(/must exceed 5, the Raft member's commit-notice period/) },
    ]);
    expect(issuesOf(gov({ electionTimeoutMinMs: 80, electionTimeoutMaxMs: 80 }))).toEqual([
      { field: "mode.raft.electionTimeoutMaxMs", problem: expect.stringMatching(/must exceed mode\.raft\.electionTimeoutMinMs \(80\)/) },
    ]);
    expect(issuesOf(gov({ electionTimeoutMinMs: 400 })).map((i) => [i.field, i.problem])).toEqual([
      ["mode.raft.electionTimeoutMinMs", expect.stringMatching(/below mode\.raft\.electionTimeoutMaxMs \(300, the default\)/)],
    ]);
    expect(issuesOf(gov({ heartbeatIntervalMs: 200 }))).toEqual([
      { field: "mode.raft.heartbeatIntervalMs", problem: expect.stringMatching(/below mode\.raft\.electionTimeoutMinMs \(150, the default\)/) },
    ]);
    expect(issuesOf(gov({ electionTimeoutMinMs: 40, electionTimeoutMaxMs: 80 }))).toEqual([
      { field: "mode.raft.electionTimeoutMinMs", problem: expect.stringMatching(/must exceed mode\.raft\.heartbeatIntervalMs \(50, the default\)/) },
    ]);
    // several at once
    expect(issuesOf(gov({ heartbeatIntervalMs: 90, electionTimeoutMinMs: 80, electionTimeoutMaxMs: 60 })).map((i) => i.field)).toEqual(["mode.raft.electionTimeoutMaxMs", "mode.raft.heartbeatIntervalMs"]);
    // on etcd the embedded Raft does not run, so its timings are not checked
    expect(() => parseConfig(edit((d) => (d.mode = { kind: "governed", root: "root", voters: [], learners: [], raft: { heartbeatIntervalMs: 500 }, etcd: { endpoints: ["http://127.0.0.1:2379"] } })), join(dir, "x.json"))).not.toThrow();
  });

  it("hands mode.raft to the Raft member under its names: heartbeatIntervalMs is Raft's heartbeatMs", () => {
    expect(RAFT_TIMING_DEFAULTS).toEqual({
      electionTimeoutMinMs: DEFAULT_RAFT_CONFIG.electionTimeoutMinMs,
      electionTimeoutMaxMs: DEFAULT_RAFT_CONFIG.electionTimeoutMaxMs,
      heartbeatMs: DEFAULT_RAFT_CONFIG.heartbeatMs,
      commitNoticeMs: DEFAULT_RAFT_CONFIG.commitNoticeMs,
    });
    const c = parseConfig(edit((d) => (d.mode = { kind: "governed", root: "root", voters: [peers[0]!.id], learners: [], raft: { heartbeatIntervalMs: 20, electionTimeoutMinMs: 40, electionTimeoutMaxMs: 80 } })), join(dir, "x.json"));
    const raft = raftConfigOf((c.mode as GovernedMode).raft);
    expect(raft).toEqual({ heartbeatMs: 20, electionTimeoutMinMs: 40, electionTimeoutMaxMs: 80 });
    // the snapshot limit passes under its own name; below 1 MiB the config is refused naming the key
    const big = parseConfig(edit((d) => (d.mode = { kind: "governed", root: "root", voters: [peers[0]!.id], learners: [], raft: { snapshotMaxBytes: 256 * 1024 * 1024 } })), join(dir, "x.json"));
    expect(raftConfig(raftConfigOf((big.mode as GovernedMode).raft)).snapshotMaxBytes).toBe(256 * 1024 * 1024);
    expect(() => parseConfig(edit((d) => (d.mode = { kind: "governed", root: "root", voters: [peers[0]!.id], learners: [], raft: { snapshotMaxBytes: 1000 } })), join(dir, "x.json"))).toThrow(/mode\.raft\.snapshotMaxBytes/);
    expect(raftConfig(raft)).toMatchObject({ heartbeatMs: 20, electionTimeoutMinMs: 40, electionTimeoutMaxMs: 80 });
    // what the config check accepts, the Raft member accepts, and what it refuses, the Raft member refuses
    for (const heartbeatIntervalMs of [1, 5, 6, 39, 40, 41, undefined]) {
      for (const electionTimeoutMinMs of [10, 40, 299, 300, undefined]) {
        for (const electionTimeoutMaxMs of [40, 41, 300, undefined]) {
          const r = { ...(heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs } : {}), ...(electionTimeoutMinMs !== undefined ? { electionTimeoutMinMs } : {}), ...(electionTimeoutMaxMs !== undefined ? { electionTimeoutMaxMs } : {}) };
          let raftOk = true;
          try {
            raftConfig(raftConfigOf(r));
          } catch {
            raftOk = false;
          }
          expect(raftTimingIssues(r).length === 0, JSON.stringify(r)).toBe(raftOk);
        }
      }
    }
  });

  it("says so when the file is not JSON or cannot be read", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, "{ version: 1 ");
    expect(() => loadConfig(bad)).toThrow(/not valid JSON/);
    expect(() => loadConfig(join(dir, "absent.json"))).toThrow(/does not exist; heddle init DIR writes one per peer/);
    expect(() => loadConfig(dir)).toThrow(/cannot be read/); // a folder, not a file
  });
});

describe("init's default ports", () => {
  it("are picked outside the kernel's ephemeral range, all different, each free when picked", async () => {
    const [lo, hi] = ephemeralPortRange();
    const got = await initCluster({ dir: join(dir, "ports"), peers: 5, mode: "governed" });
    const ports = got.flatMap((p) => {
      const c = JSON.parse(readFileSync(p.config, "utf8")) as { api: { listen: string }; p2p: { listen: string[] } };
      return [Number(c.api.listen.split(":").at(-1)), ...c.p2p.listen.map((a) => Number(a.split("/").at(-1)))];
    });
    expect(ports).toHaveLength(10);
    expect(new Set(ports).size).toBe(10);
    for (const p of ports) expect(p < lo || p > hi, `port ${p} inside the ephemeral range ${lo}–${hi}`).toBe(true);
  });
});
