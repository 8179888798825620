// `heddle bounds` on a parent whose children's weights overflow int64: the row says unavailable and why,
// instead of blank cells (the API lists such a parent as { parent, unavailable }).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { soloDaemon, type SoloDaemon } from "../../daemon/test/support/embedded.ts";
import { EXIT } from "../src/exit-codes.ts";
import { main } from "../src/main.ts";

let s: SoloDaemon;
beforeAll(async () => {
  s = await soloDaemon({ supply: 1_000n, tree: "a=4611686018427387904,b=4611686018427387904,c=1,c>leaf=1" });
  for (const leaf of ["a", "b", "leaf"]) await s.client.demand({ leaf, targetOutstanding: 100, maximumUsefulGrant: 10 });
});
afterAll(() => s.close());

describe("heddle bounds", () => {
  it("marks a parent whose bounds cannot be computed and says why", async () => {
    let out = "";
    let err = "";
    const code = await main(["bounds", "--url", s.daemon.url, "--token", s.daemon.token], { out: (x) => void (out += x), err: (x) => void (err += x), tty: false });
    expect(code, err).toBe(EXIT.ok);
    const rootRow = out.split("\n").find((l) => /^\s*root\b/.test(l))!;
    expect(rootRow).toMatch(/unavailable/);
    expect(out).toMatch(/^root: LedgerOverflowError: .*reshape them with smaller weights$/m);
    expect(out.split("\n").find((l) => /^\s*c\b/.test(l))).toMatch(/true|false/);
  });
});
