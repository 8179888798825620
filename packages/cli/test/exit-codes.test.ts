// The exit codes main.ts returns for the daemon's HTTP statuses, USAGE's summary and the README's table say the same.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT, HTTP_EXIT, NOT_YOURS_COMMANDS } from "../src/exit-codes.ts";
import { USAGE } from "../src/main.ts";
import { fakeDaemon, run, type FakeDaemon } from "./support/fake-daemon.ts";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** The README's exit-code table: code → its meaning. */
function readmeTable(): Map<number, string> {
  const at = README.indexOf("Exit codes:");
  expect(at).toBeGreaterThan(0);
  const rows = new Map<number, string>();
  for (const line of README.slice(at).split("\n").slice(1)) {
    if (line.trim() === "") {
      if (rows.size > 0) break;
      continue;
    }
    const m = /^\| (\d+) \| (.*) \|$/.exec(line);
    if (m !== null) rows.set(Number(m[1]), m[2]!);
  }
  return rows;
}

describe("exit codes", () => {
  it("the README's table has a row for every code, and no other", () => {
    expect([...readmeTable().keys()].sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });

  it("every HTTP status main.ts maps is named in its code's README row, and every status a row names maps to that code", () => {
    const rows = readmeTable();
    for (const [status, code] of Object.entries(HTTP_EXIT)) expect(rows.get(code), `HTTP ${status} → exit ${code}`).toMatch(new RegExp(`\\b${status}\\b`));
    for (const [code, text] of rows) {
      for (const s of text.match(/\b[45]\d\d\b/g) ?? []) expect(HTTP_EXIT[Number(s)], `README row ${code} names HTTP ${s}`).toBe(code);
    }
  });

  it("USAGE names every code, and every command that exits 10", () => {
    const summary = USAGE.slice(USAGE.indexOf("Exit codes:"));
    for (const code of Object.values(EXIT)) expect(summary).toMatch(new RegExp(`(^|[ ·\\n])${code} [a-z]`));
    const ten = summary.slice(summary.indexOf("10 not yours"));
    const row = readmeTable().get(EXIT.notYours)!;
    for (const c of NOT_YOURS_COMMANDS) {
      expect(ten, c).toContain(c);
      expect(row, c).toContain(c);
    }
  });

  describe("as main.ts returns them", () => {
    let d: FakeDaemon;
    beforeAll(async () => {
      d = await fakeDaemon();
    });
    afterAll(() => d.close());
    it.each([...Object.entries(HTTP_EXIT), ["418", EXIT.internal]])("HTTP %s exits %i", async (status, code) => {
      d.answer = () => ({ status: Number(status), body: { error: "x", message: `answered ${status}` } });
      const r = await run(["claims", "look", "--url", d.url, "--token", "t"]);
      expect(r.code).toBe(code);
      expect(r.err).toMatch(status === "401" ? /refused the token \(answered 401\)/ : new RegExp(`answered ${status}`));
    });
    it("501 (a node without keeper or advisory claims) is a refusal, not 'outcome unknown'", async () => {
      d.answer = () => ({ status: 501, body: { error: "unavailable", message: "this peer's node has no keeper or advisory claims" } });
      const r = await run(["claims", "advisory", "i1", "--url", d.url, "--token", "t"]);
      expect(r).toMatchObject({ code: EXIT.refused, err: "heddle: this peer's node has no keeper or advisory claims\n" });
    });
  });
});
