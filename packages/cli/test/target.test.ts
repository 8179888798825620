// Which token a command sends: --token, then --token-file, then the environment (HEDDLE_TOKEN, HEDDLE_TOKEN_FILE).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.ts";
import { fakeDaemon, run, type FakeDaemon } from "./support/fake-daemon.ts";

let d: FakeDaemon;
let dir: string;
const saved = { ...process.env };

beforeAll(async () => {
  d = await fakeDaemon();
  d.answer = () => ({ status: 200, body: { bounds: [] } });
  dir = mkdtempSync(join(tmpdir(), "heddle-cli-target-"));
  writeFileSync(join(dir, "token"), "from-file\n");
  writeFileSync(join(dir, "env-token"), "from-env-file\n");
});
afterAll(async () => {
  await d.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  for (const k of ["HEDDLE_TOKEN", "HEDDLE_TOKEN_FILE", "HEDDLE_CONFIG", "HEDDLE_URL"]) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

async function tokenSent(argv: string[], env: Record<string, string>): Promise<string | undefined> {
  for (const k of ["HEDDLE_TOKEN", "HEDDLE_TOKEN_FILE", "HEDDLE_CONFIG"]) delete process.env[k];
  Object.assign(process.env, env);
  const before = d.seen.length;
  const r = await run(["bounds", "--url", d.url, ...argv]);
  expect(r.code, r.err).toBe(EXIT.ok);
  return d.seen[before]?.headers.authorization;
}

describe("the token a command sends", () => {
  it("an explicit --token-file beats HEDDLE_TOKEN in the environment", async () => {
    expect(await tokenSent(["--token-file", join(dir, "token")], { HEDDLE_TOKEN: "wrong" })).toBe("Bearer from-file");
  });
  it("--token beats --token-file, and both beat the environment", async () => {
    expect(await tokenSent(["--token", "flag", "--token-file", join(dir, "token")], { HEDDLE_TOKEN: "wrong" })).toBe("Bearer flag");
    expect(await tokenSent(["--token", "flag"], { HEDDLE_TOKEN_FILE: join(dir, "env-token") })).toBe("Bearer flag");
  });
  it("without flags: HEDDLE_TOKEN, then HEDDLE_TOKEN_FILE", async () => {
    expect(await tokenSent([], { HEDDLE_TOKEN: "env", HEDDLE_TOKEN_FILE: join(dir, "env-token") })).toBe("Bearer env");
    expect(await tokenSent([], { HEDDLE_TOKEN_FILE: join(dir, "env-token") })).toBe("Bearer from-env-file");
  });
  it("an unreadable --token-file is a usage error even when HEDDLE_TOKEN is set", async () => {
    process.env["HEDDLE_TOKEN"] = "env";
    const r = await run(["bounds", "--url", d.url, "--token-file", join(dir, "missing")]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toMatch(/cannot read --token-file/);
  });
});

describe("--timeout", () => {
  it("above 2147483 s (Node's timer limit) is a usage error, not a TimeoutOverflowWarning and an instant timeout", async () => {
    for (const t of ["2147484", "1e10", "0", "soon"]) {
      const r = await run(["bounds", "--url", d.url, "--token", "t", "--timeout", t]);
      expect(r.code, t).toBe(EXIT.usage);
      expect(r.err, t).toMatch(/--timeout must be a positive number of seconds, at most 2147483/);
    }
    expect((await run(["bounds", "--url", d.url, "--token", "t", "--timeout", "2147483"])).code).toBe(EXIT.ok);
  });
});

describe("a bad --url or token", () => {
  it("is a usage error naming where it came from, not an internal error", async () => {
    for (const [argv, env, field] of [
      [["--url", "127.0.0.1:7201", "--token", "t"], {}, "--url / HEDDLE_URL"],
      [["--url", "ftp://127.0.0.1:7201", "--token", "t"], {}, "--url / HEDDLE_URL"],
      [["--token", "two words"], { HEDDLE_URL: d.url }, "--token / --token-file / HEDDLE_TOKEN"],
      [[], { HEDDLE_URL: d.url, HEDDLE_TOKEN: "line\nbreak" }, "--token / --token-file / HEDDLE_TOKEN"],
    ] as const) {
      for (const k of ["HEDDLE_TOKEN", "HEDDLE_TOKEN_FILE", "HEDDLE_CONFIG", "HEDDLE_URL"]) delete process.env[k];
      Object.assign(process.env, env);
      const r = await run(["bounds", ...argv]);
      expect(r.code, r.err).toBe(EXIT.usage);
      expect(r.err).toContain(field);
      expect(r.err).not.toMatch(/internal error/);
    }
  });
  it("a --timeout that is not a whole number of milliseconds is rounded up, not refused by the client", async () => {
    const r = await run(["bounds", "--url", d.url, "--token", "t", "--timeout", "1.2345"]);
    expect(r.code, r.err).toBe(EXIT.ok);
  });
});
