// `heddle claims release KEY --holder H --fencing-token N` against a one-voter governed daemon (in-process, ephemeral ports):
// the token ends only the grant take gave it; a late retry after a re-take leaves the newer grant and exits 10.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governedSoloDaemon, type SoloDaemon } from "../../daemon/test/support/embedded.ts";
import { EXIT } from "../src/exit-codes.ts";
import { heddleOn } from "./support/cli.ts";

let s: SoloDaemon;

const heddle = (argv: string[]) => heddleOn(s.daemon, argv);

async function takeToken(key: string, holder: string): Promise<number> {
  const r = await heddle(["claims", "take", key, "--holder", holder, "--json"]);
  expect(r.code, r.err).toBe(EXIT.ok);
  return (JSON.parse(r.out) as { claims: { grants: { token: number }[] } }).claims.grants[0]!.token;
}

beforeAll(async () => {
  s = await governedSoloDaemon();
});
afterAll(() => s.close());

describe("heddle claims release --fencing-token", () => {
  it("releases the named grant; a late retry after a re-take leaves the newer grant and exits 10", async () => {
    const a = await takeToken("deploy", "alice");
    const released = await heddle(["claims", "release", "deploy", "--holder", "alice", "--fencing-token", String(a)]);
    expect(released).toMatchObject({ code: EXIT.ok, out: `released deploy (token ${a})\n` });
    const b = await takeToken("deploy", "alice");
    expect(b).toBeGreaterThan(a);
    const late = await heddle(["claims", "release", "deploy", "--holder", "alice", "--fencing-token", String(a)]);
    expect(late.code).toBe(EXIT.notYours);
    expect(late.out).toBe(`alice holds deploy under token ${b}, not ${a}: nothing released (the newer grant stays)\n`);
    const json = await heddle(["claims", "release", "deploy", "--holder", "alice", "--fencing-token", String(a), "--json"]);
    expect(json.code).toBe(EXIT.notYours);
    expect(JSON.parse(json.out)).toMatchObject({ kind: "applied", claims: false, heldToken: b, mode: "granted" });
    expect((await heddle(["claims", "list", "deploy"])).out).toMatch(/^deploy: alice$/m);
    // the right token ends it; once nothing is held, a fenced release has nothing to leave alone: exit 0
    expect((await heddle(["claims", "release", "deploy", "--holder", "alice", "--fencing-token", String(b)])).code).toBe(EXIT.ok);
    expect(await heddle(["claims", "release", "deploy", "--holder", "alice", "--fencing-token", String(b)])).toMatchObject({ code: EXIT.ok, out: "alice did not hold deploy: nothing released\n" });
  });

  it("a token that is not a non-negative safe integer is a usage error, sent nowhere", async () => {
    for (const bad of ["-1", "1.5", "soon", "9007199254740993"]) {
      const r = await heddle(["claims", "release", "deploy", "--holder", "alice", "--fencing-token", bad]);
      expect(r.code, bad).toBe(EXIT.usage);
      expect(r.err, bad).toMatch(/--fencing-token/);
    }
  });
});

describe("heddle claims renew, list, look: exit codes a script can loop on", () => {
  it("renew exits 0 while the holder holds the key and 10 once it does not (a `while heddle claims renew …` loop stops)", async () => {
    await takeToken("lease", "gina");
    expect(await heddle(["claims", "renew", "lease", "--holder", "gina"])).toMatchObject({ code: EXIT.ok, out: "renewed lease\n" });
    const notHeld = await heddle(["claims", "renew", "lease", "--holder", "hank"]);
    expect(notHeld).toMatchObject({ code: EXIT.notYours, out: "hank does not hold lease (or its lease lapsed): take it again\n" });
    const json = await heddle(["claims", "renew", "lease", "--holder", "hank", "--json"]);
    expect(json.code).toBe(EXIT.notYours);
    expect(JSON.parse(json.out)).toMatchObject({ claims: false, mode: "granted" });
  });

  it("--json prints a refusal's answer on stdout too (exit 3), naming the holder", async () => {
    await takeToken("contended", "jack");
    const r = await heddle(["claims", "take", "contended", "--holder", "kate", "--json"]);
    expect(r.code).toBe(EXIT.refused);
    expect(JSON.parse(r.out)).toMatchObject({ error: "refused", refusal: { kind: "blocked", blocked: [{ key: "contended", holders: ["jack"] }] } });
    expect(r.err).toMatch(/^heddle: /);
    // without --json, stdout stays empty: the refusal is told on stderr
    expect((await heddle(["claims", "take", "contended", "--holder", "kate"])).out).toBe("");
  });

  it("list ends with the mode's guarantee line, as every claims table does", async () => {
    await takeToken("listed", "ivy");
    const one = await heddle(["claims", "list", "listed"]);
    expect(one.out).toMatch(/^listed: ivy\ngranted mode: .+\n$/);
    const all = await heddle(["claims", "list"]);
    expect(all.out).toMatch(/\nlisted +ivy +exclusive/);
    expect(all.out).toMatch(/\ngranted mode: .+\n$/);
  });

  it("look --check on a peer with no keeper part configured exits 10 and says so (not 0: there is nothing it may act on)", async () => {
    const r = await heddle(["claims", "look", "--check"]);
    expect(r.code).toBe(EXIT.notYours);
    expect(r.out).toMatch(/^no keeper parts are configured on this peer \(config: claims\.keeper\.parts\)\nkeeper mode: \S.+\n$/);
  });
});
