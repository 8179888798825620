/**
 * A holding lists only the fields its claim has: no `scope`, `label` or `expiresAt` key set to `undefined`
 * (callers serialise holdings and test `"scope" in h`). Compared strictly; a Stryker survivor (issue 19).
 */
import { expect, it } from "vitest";
import { createClaims } from "../src/index.ts";

it("open() carries only the fields the claim has", () => {
  const t = createClaims();
  t.take({ holder: "w", resources: [{ key: "a", mode: "shared" }] }, 1);
  t.take({ holder: "v", resources: [{ key: "b", mode: "exclusive" }], scope: "s", label: "L", ttlMs: 10 }, 2);
  expect(t.open()).toStrictEqual([
    { key: "a", holder: "w", mode: "shared", token: 1, since: 1 },
    { key: "b", holder: "v", mode: "exclusive", token: 2, since: 2, scope: "s", label: "L", expiresAt: 12 },
  ]);
});
