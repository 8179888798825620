// API tokens from `heddle init` must survive a command line: `--token VALUE` with VALUE starting with `-` is read by
// util.parseArgs as a missing value, so one peer in 64 could not be driven by `heddle … --token "$(cat token)"`.
import { parseArgs } from "node:util";
import { describe, expect, it } from "vitest";
import { newApiToken } from "../src/init.ts";

describe("newApiToken", () => {
  it("never starts with '-': a draw that would is drawn again", () => {
    const draws = [Buffer.alloc(32, 0xf8), Buffer.alloc(32, 0xfb), Buffer.alloc(32, 0x01)]; // '-'…, '-'…, 'A'…
    const seen: number[] = [];
    const token = newApiToken((n) => {
      seen.push(n);
      return draws.shift()!;
    });
    expect(seen).toEqual([32, 32, 32]);
    expect(token).toBe(Buffer.alloc(32, 0x01).toString("base64url"));
    expect(Buffer.alloc(32, 0xf8).toString("base64url").startsWith("-")).toBe(true); // the case the loop exists for
  });

  it("is 43 base64url characters of fresh randomness that a command line passes through intact", () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const t = newApiToken();
      expect(t).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/);
      const { values } = parseArgs({ args: ["--token", t], options: { token: { type: "string" } } });
      expect(values.token).toBe(t);
      tokens.add(t);
    }
    expect(tokens.size).toBe(2000);
  });
});
