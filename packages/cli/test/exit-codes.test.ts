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
    // The daemon answers 200 {outcome: "no-such-reservation"} for an id it has no open reservation under (node.md §8):
    // nothing was charged, and a script must be able to tell that from a charge.
    it.each([
      ["complete", ["complete", "p1/3/7", "5"], "/v1/reservations/complete"],
      ["cancel", ["cancel", "p1/3/7"], "/v1/reservations/cancel"],
    ])("%s of a reservation the daemon does not know exits 11, naming the id and what lists the open ones", async (_verb, argv, path) => {
      d.answer = (req) => (req.url === path ? { status: 200, body: { id: "p1/3/7", charged: "0", outcome: "no-such-reservation" } } : { status: 500, body: {} });
      const r = await run([...argv, "--url", d.url, "--token", "t"]);
      expect(r.code).toBe(EXIT.noSuchReservation);
      expect(r.out).toBe("");
      expect(r.err).toMatch(/^heddle: no open reservation "p1\/3\/7" on this peer .*nothing (charged|cancelled).*heddle reservations lists the open ones/);
      const j = await run([...argv, "--url", d.url, "--token", "t", "--json"]);
      expect(j.code).toBe(EXIT.noSuchReservation);
      expect(JSON.parse(j.out)).toEqual({ id: "p1/3/7", charged: "0", outcome: "no-such-reservation" });
    });
    it("complete of a reservation another peer made exits 11 and names that peer", async () => {
      d.answer = () => ({ status: 200, body: { id: "p9/3/7", charged: "0", outcome: "no-such-reservation", reservedBy: "p9" } });
      const r = await run(["complete", "p9/3/7", "5", "--url", d.url, "--token", "t"]);
      expect(r.code).toBe(EXIT.noSuchReservation);
      expect(r.err).toMatch(/^heddle: reservation "p9\/3\/7" was made on peer p9, not this one: nothing charged here — send it to that peer's API/);
    });
    it.each([
      [["complete", "p1/3/7", "5"], "charged 5\n"],
      [["cancel", "p1/3/7"], "cancelled\n"],
    ])("%j of an open reservation exits 0", async (argv, out) => {
      d.answer = () => ({ status: 200, body: { id: "p1/3/7", charged: argv[0] === "cancel" ? "0" : "5", outcome: "charged" } });
      expect(await run([...argv, "--url", d.url, "--token", "t"])).toEqual({ code: EXIT.ok, out, err: "" });
    });
    it("501 (a node without keeper or advisory claims) is a refusal, not 'outcome unknown'", async () => {
      d.answer = () => ({ status: 501, body: { error: "unavailable", message: "this peer's node has no keeper or advisory claims" } });
      const r = await run(["claims", "advisory", "i1", "--url", d.url, "--token", "t"]);
      expect(r).toMatchObject({ code: EXIT.refused, err: "heddle: this peer's node has no keeper or advisory claims\n" });
    });
  });
});
