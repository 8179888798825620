// Issue 17: what a start loads. `heddle start` on its own Raft log imported etcd3 (with gRPC and protobufjs, ≈ 160
// CommonJS modules) through `@heddle/governed` at every start without ever using it; loading it on first use cut a
// start's CPU from 2.66 to 1.91 CPU-s (median of 5, the same store). Counted here, in a fresh process: the modules.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const DAEMON = fileURLToPath(new URL("..", import.meta.url));

/** Runs `body` (ESM, top-level await) in a fresh Node process in the daemon package; returns what it prints. */
function inFreshProcess(body: string): string {
  return execFileSync(process.execPath, ["--input-type=module", "-e", body], { cwd: DAEMON, encoding: "utf8", timeout: 60_000 });
}

const COUNT_ETCD = `const { createRequire } = await import("node:module");
const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((k) => /[\\\\/]node_modules[\\\\/](etcd3|@grpc[\\\\/]grpc-js)[\\\\/]/.test(k)).length;`;

describe("a daemon start loads only what it uses", () => {
  it("importing the daemon (and with it @heddle/governed) loads no etcd client; making an etcd log does", () => {
    const out = inFreshProcess(`${COUNT_ETCD}
await import("@heddle/daemon");
const atImport = loaded();
const { etcdControlLog } = await import("@heddle/governed");
const log = etcdControlLog({ id: "p", endpoints: ["http://127.0.0.1:9"], callTimeoutMs: 50 });
const afterEtcdLog = loaded();
await log.close();
console.log(JSON.stringify({ atImport, afterEtcdLog }));`);
    const { atImport, afterEtcdLog } = JSON.parse(out.trim().split("\n").at(-1)!) as { atImport: number; afterEtcdLog: number };
    expect(atImport).toBe(0);
    expect(afterEtcdLog).toBeGreaterThan(10); // the count sees CommonJS modules: the etcd client is loaded on use
  }, 60_000); // a guard for a loaded machine: two module graphs load in a fresh process
});
