// `heddle claims …` and `heddle leader …`: --help after the first word lists the subcommands (exit 0), and a
// mistake in a subcommand's options points at that subcommand's help.
import { describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.ts";
import { run } from "./support/fake-daemon.ts";

describe("two-word commands", () => {
  it.each([["claims"], ["leader"]])("%s --help / -h / help list the subcommands, exit 0", async (cmd) => {
    for (const h of ["--help", "-h", "help"]) {
      const r = await run([cmd, h]);
      expect(r.code, `${cmd} ${h}: ${r.err}`).toBe(EXIT.ok);
      expect(r.out).toMatch(new RegExp(`^Usage: heddle ${cmd} <subcommand>`));
    }
    const claims = (await run(["claims", "--help"])).out;
    for (const sub of ["take", "release", "renew", "list", "keeper", "look", "close", "advisory", "holders", "drop", "next"]) expect(claims).toMatch(new RegExp(`^  claims ${sub}\\b`, "m"));
    expect((await run(["leader", "-h"])).out).toMatch(/^  leader transfer PEER_ID\n {6}hand Raft leadership/m);
  });

  it("a bare or unknown subcommand is a usage error naming the subcommands", async () => {
    const bare = await run(["claims"]);
    expect(bare.code).toBe(EXIT.usage);
    expect(bare.err).toMatch(/claims needs one of: take, release, renew, list/);
    const bad = await run(["leader", "elect"]);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.err).toMatch(/leader needs one of: transfer \(not "elect"\)/);
  });

  it("a parse error in a subcommand names the two-word command's help", async () => {
    const r = await run(["claims", "take", "k1", "--holdr", "h1"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toMatch(/^heddle claims take: .*--holdr.*\(heddle claims take --help lists the options\)/);
    const u = await run(["claims", "take", "--url", "http://127.0.0.1:9", "--token", "t"]);
    expect(u.code).toBe(EXIT.usage);
    expect(u.err).toMatch(/^heddle claims take: usage: heddle claims take KEY/);
  });
});
