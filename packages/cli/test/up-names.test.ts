// `heddle up` names each peer by its init folder (peer-<i>), not by its position among the folders that are left.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.ts";
import { run } from "./support/fake-daemon.ts";

const dir = mkdtempSync(join(tmpdir(), "heddle-up-names-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("heddle up", () => {
  it("calls the only peer of a folder without peer-1 'peer-2'", async () => {
    const cluster = join(dir, "c");
    expect((await run(["init", "--peers", "2", "--mode", "static", cluster])).code).toBe(EXIT.ok);
    rmSync(join(cluster, "peer-1"), { recursive: true });
    // without its key, peer-2's start fails at once: up reports it by name and stops
    rmSync(join(cluster, "peer-2", "peer.key"));
    const r = await run(["up", cluster]);
    expect(r.code).not.toBe(EXIT.ok);
    expect(r.err).toMatch(/heddle up: peer-2 could not start/);
    expect(r.err).not.toMatch(/peer-1/);
  }, 60_000);
});
