// The README opens with examples/two-seams.ts (examples/readmes.test.ts keeps the two equal): run it.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

it("the README's example runs and prints what its comments say", () => {
  const out = execFileSync(process.execPath, [fileURLToPath(new URL("../examples/two-seams.ts", import.meta.url))], { encoding: "utf8" });
  // one ledger frame delivered to bob's ledger channel, none to his demand channel
  expect(out).toBe("alice sees: [ 'bob' ]\nledger from alice: hello\n1\n");
});
