import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EtcdCluster } from "./support/etcd-cluster.ts";

let etcd: EtcdCluster | null = null;
beforeAll(async () => {
  etcd = await EtcdCluster.start(3);
}, 60_000);
afterAll(async () => {
  await etcd?.stop();
});

describe("README example: the control log on etcd", () => {
  it("runs against a 3-member etcd and prints what the README says", () => {
    const out = execFileSync(process.execPath, [join(import.meta.dirname, "fixtures", "etcd-example.ts")], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, HEDDLE_ETCD_ENDPOINTS: etcd!.endpoints.join(",") },
    });
    expect(out).toBe(
      [
        "mint: applied",
        "create: applied, applied",
        "keyed retry: applied, same outcome true",
        "a: minted 350, team via team",
        "b: minted 350, team via team",
        "c: minted 350, team via team",
        "",
      ].join("\n"),
    );
  }, 90_000);
});
