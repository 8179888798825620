// `heddle bounds` on a parent whose children's weights overflow int64: the row says unavailable and why,
// instead of blank cells (the API lists such a parent as { parent, unavailable }).
import { Weight } from "@heddle/ledger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { soloDaemon, type SoloDaemon } from "../../daemon/test/support/embedded.ts";
import { EXIT } from "../src/exit-codes.ts";
import { main } from "../src/main.ts";

let s: SoloDaemon;
beforeAll(async () => {
  // the config refuses such a genesis topology (mode.topology[i].weight); racing governed prepares can still get
  // there, so the weights are set on the checked config
  s = await soloDaemon({ supply: 1_000n, tree: "a=1,b=1,c=1,c>leaf=1" }, (c) =>
    c.mode.kind !== "static" ? c : { ...c, mode: { ...c.mode, topology: c.mode.topology.map((r) => (r.parent === "root" && r.child !== "c" ? { ...r, weight: Weight.of(2n ** 62n, 1n) } : r)) } },
  );
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
