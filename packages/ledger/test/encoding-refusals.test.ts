/**
 * Each refusal of the canonical decoder (encoding.ts) names its reason and where it is, and the int64 and
 * weight bounds sit exactly where ledger.md §10 puts them. Issue 19 found the messages unpinned (a test that
 * only checks the error class passes with any message, including an empty one) and the edges of the
 * signed range and of the weight check untested.
 */
import { describe, expect, it } from "vitest";
import { EntitlementLedger } from "../src/index.ts";
import { thrown } from "./arbitraries.ts";

const F = '"format":"heddle-ledger/1"';
const decode = (body: string) => () => EntitlementLedger.decode(`{${F}${body === "" ? "" : `,${body}`}}`);
const MIN = "-9223372036854775808";

describe("each refusal names its reason", () => {
  const cases: [string, string][] = [
    ['"x":1', 'unknown top-level key "x"'],
    [F, 'duplicate top-level key "format"'],
    ['"mints":[["m",["g","r","01"]]]', 'mint amount: expected a canonical decimal string, got "01"'],
    ['"mints":[["m",["g","r",1]]]', "mint amount: expected a canonical decimal string, got 1"],
    ['"mints":[["m",["g","r","-1"]]]', "mint amount: -1 is negative"],
    ['"mints":[["m",["g","r","9223372036854775808"]]]', "mint amount: 9223372036854775808 is outside the signed 64-bit range"],
    ['"mints":[["m",["g","r"]]]', "mint: expected 3 elements, got 2"],
    ['"mints":5', "mints: expected a list"],
    ['"mints":[["m",["","r","1"]]]', "mint root: expected a non-empty, well-formed string"],
    ['"lifecycle":[["e","ACTIVE"],["e","ACTIVE"]]', 'lifecycle: duplicate key "e"'],
    ['"issued":[["",[["r","1"]]]]', "issued edge: expected a non-empty, well-formed string"],
    ['"returned":[["e",[["","1"]]]]', "returned replica: expected a non-empty, well-formed string"],
    ['"leafSpent":[["e",[["r","x"]]]]', 'leafSpent value: expected a canonical decimal string, got "x"'],
    ['"transfers":[["",[["d",[["x","-2"]]]]]]', "transfer row value: -2 is negative"],
    ['"records":[["e",[["g","h","x","1"]]]]', 'record e weight numerator: expected a canonical decimal string, got "x"'],
    ['"records":[["e",[["g","h","1","1.0"]]]]', 'record e weight denominator: expected a canonical decimal string, got "1.0"'],
    ['"records":[["e",[["g","h","0","1"]]]]', "record e: weight 0/1 names no positive ratio"],
    ['"records":[["e",[["g","h","-1","1"]]]]', "record e: weight -1/1 names no positive ratio"],
    ['"records":[["e",[["g","h","1","0"]]]]', "record e: weight 1/0 names no positive ratio"],
    ['"records":[["e",[["g","h","1","-1"]]]]', "record e: weight 1/-1 names no positive ratio"],
    [`"records":[["e",[["g","h","${MIN}","-1"]]]]`, `record e: weight ${MIN}/-1 names no positive ratio`],
    [`"records":[["e",[["g","h","-1","${MIN}"]]]]`, `record e: weight -1/${MIN} names no positive ratio`],
    [`"gauges":[["e",["-9223372036854775809","1","0"]]]`, "gauge floor numerator: -9223372036854775809 is outside the signed 64-bit range"],
    [`"gauges":[["e",["${MIN}","1","0"]]]`, `gauge floor ${MIN}/1 is out of range`],
  ];
  for (const [body, reason] of cases) {
    it(reason, () => {
      expect(thrown(decode(body))).toBe(`LedgerDecodeError: ${reason}`);
    });
  }

  it("a text that is not a string is refused as such", () => {
    expect(thrown(() => EntitlementLedger.decode(5 as unknown as string))).toBe("LedgerDecodeError: ledger text must be a string");
  });
});

describe("the bounds themselves are accepted", () => {
  it("−(2^63 − 1) as a gauge floor, 2^63 − 1 as an amount, a weight with both signs negative (repaired)", () => {
    const l = EntitlementLedger.decode(`{${F},"gauges":[["e",["-9223372036854775807","1","9223372036854775807"]]],"records":[["e",[["g","h","-2","-4"]]]]}`);
    expect(l.encode()).toBe(`{${F},"records":[["e",[["g","h","1","2"]]]],"gauges":[["e",["-9223372036854775807","1","9223372036854775807"]]]}`);
  });
});
