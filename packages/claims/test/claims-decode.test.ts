/**
 * `decodeClaims` at the edge of its text bound, and with the `scopeEnded` its caller supplies again (the one
 * option a table's encoding cannot carry). Added for the Stryker survivors of claims-encoding.ts (seventeenth
 * session, helper AG): the bound `MAX_TABLE_TEXT` had no test at its edge, and no test decoded a table with a
 * `scopeEnded`, so dropping it went unseen.
 */
import { describe, expect, it } from "vitest";
import { ClaimsDecodeError, createClaims, decodeClaims, MAX_TABLE_TEXT } from "../src/index.ts";
import { thrown } from "./support/thrown.ts";

/** The ClaimsDecodeError `f` throws; fails the test on anything else. */
function refusal(f: () => unknown): ClaimsDecodeError {
  try {
    f();
  } catch (e) {
    if (e instanceof ClaimsDecodeError) return e;
    throw e;
  }
  throw new Error("expected a ClaimsDecodeError, nothing was thrown");
}

describe("decodeClaims: the table text bound", () => {
  // `repeat` builds the long text lazily; only the decoder's JSON.parse flattens it (≈ 256 MB, a fraction of a
  // second of CPU). A text of exactly the bound is judged on its content — here it is not JSON, so the parse
  // stops at its first character — and one code unit more is refused by length before any parsing.
  it("judges a text of exactly MAX_TABLE_TEXT code units on its content and refuses one more unit by length", () => {
    expect(MAX_TABLE_TEXT).toBe(256 * 1024 * 1024);
    const atBound = "x".repeat(MAX_TABLE_TEXT);
    expect(thrown(() => decodeClaims(atBound))).toBe("ClaimsDecodeError: claims table: not JSON");
    expect(thrown(() => decodeClaims(`${atBound}x`))).toBe(
      "ClaimsDecodeError: claims table: input is longer than 268435456 code units",
    );
    // the refusal by length names its bound, as the slot decoders' do, so a receiver can count it by reason
    expect(refusal(() => decodeClaims(`${atBound}x`)).bound).toBe("text");
    expect(refusal(() => decodeClaims("x")).bound).toBeUndefined();
  }, 120_000);
});

describe("decodeClaims: the caller's scopeEnded", () => {
  function table() {
    const t = createClaims({ roster: ["a", "b"] });
    t.take({ holder: "w1", resources: [{ key: "a", mode: "exclusive" }], scope: "run-1" }, 10);
    t.take({ holder: "w2", resources: [{ key: "b", mode: "exclusive" }], scope: "run-2" }, 11);
    return t;
  }

  it("a table decoded with scopeEnded treats a claim in an ended scope as holding nothing", () => {
    const text = table().encode();
    const ended = new Set(["run-1"]);
    const d = decodeClaims(text, { scopeEnded: (s) => ended.has(s) });
    expect([d.owner("a"), d.owner("b")]).toEqual([undefined, "w2"]);
    expect(d.lapsed().map((l) => [l.key, l.holder, l.why])).toEqual([["a", "w1", "scope-ended"]]);
    expect(d.take({ holder: "w3", resources: [{ key: "b", mode: "exclusive" }], scope: "run-1" }, 12)).toEqual({
      ok: false,
      blocked: [],
      invalid: 'scope "run-1" has ended',
    });
    const granted = d.take({ holder: "w3", resources: [{ key: "a", mode: "exclusive" }] }, 12);
    expect(granted.ok).toBe(true);
    expect(d.owner("a")).toBe("w3");
    // scopeEnded is not part of the encoding: the decoded table encodes as the original did before the take.
    expect(decodeClaims(text, { scopeEnded: (s) => ended.has(s) }).encode()).toBe(text);
  });

  it("without scopeEnded (or with one that ends nothing) every scoped claim still holds", () => {
    const text = table().encode();
    for (const d of [decodeClaims(text), decodeClaims(text, { scopeEnded: () => false })]) {
      expect([d.owner("a"), d.owner("b")]).toEqual(["w1", "w2"]);
      expect(d.lapsed()).toEqual([]);
    }
  });
});
