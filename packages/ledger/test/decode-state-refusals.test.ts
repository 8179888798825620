/**
 * Issue 19, round 3 (helper F): the canonical decoder's refusals inside `decodeState` name the part of the
 * ledger they are about ("record parent", "gauge edge", …) — a test that checks only the error class passes
 * when that name is emptied. Also the invalid-JSON and not-an-object refusals, the zero gauge denominator
 * (which must be refused as such, not reach `Rational.of`), and the messages and error names of ids.ts,
 * int64.ts and errors.ts.
 */
import { describe, expect, it } from "vitest";
import { EntitlementLedger, GroupId, LedgerOverflowError } from "../src/index.ts";
import { MAX, MIN, chk, requireBigint } from "../src/int64.ts";
import { thrown } from "./arbitraries.ts";

const F = '"format":"heddle-ledger/1"';
const decodeBody = (body: string) => () => EntitlementLedger.decode(`{${F},${body}}`);
const ID = "expected a non-empty, well-formed string";

describe("decodeState: each refusal names the part it is about", () => {
  const cases: [string, string][] = [
    ['"records":5', "records: expected a list"],
    ['"records":[["e",[]],["e",[]]]', 'records: duplicate key "e"'],
    ['"records":[["",[]]]', `record edge: ${ID}`],
    ['"records":[["e",5]]', "record set: expected a list"],
    ['"records":[["e",[["g","h","1"]]]]', "record: expected 4 elements, got 3"],
    ['"records":[["e",[["","h","1","1"]]]]', `record parent: ${ID}`],
    ['"records":[["e",[["g","","1","1"]]]]', `record child: ${ID}`],
    ['"records":[["e",[["g","g","1","1"]]]]', "record e: parent = child"],
    ['"mints":[["",["g","r","1"]]]', `mint id: ${ID}`],
    ['"mints":[["m",["g","","1"]]]', `mint holder: ${ID}`],
    ['"transfers":5', "transfers: expected a list"],
    ['"transfers":[[5,[]]]', `transfer key: ${ID}`],
    ['"transfers":[["",5]]', "transfer rows: expected a list"],
    ['"transfers":[["",[["",[]]]]]', `donor: ${ID}`],
    ['"lifecycle":[["",  "ACTIVE"]]', `lifecycle edge: ${ID}`],
    ['"lifecycle":[["e","LIVE"]]', 'unknown lifecycle "LIVE"'],
    ['"lifecycle":[["e",3]]', "unknown lifecycle 3"],
    ['"gauges":5', "gauges: expected a list"],
    ['"gauges":[["",["1","1","0"]]]', `gauge edge: ${ID}`],
    ['"gauges":[["e",["1","1"]]]', "gauge: expected 3 elements, got 2"],
    ['"gauges":[["e",["1","x","0"]]]', 'gauge floor denominator: expected a canonical decimal string, got "x"'],
    ['"gauges":[["e",["1","0","0"]]]', "gauge floor denominator 0 must be positive"],
    ['"gauges":[["e",["1","-2","0"]]]', "gauge floor denominator -2 must be positive"],
    ['"gauges":[["e",["1","1","-1"]]]', "gauge folded: -1 is negative"],
  ];
  for (const [body, reason] of cases) {
    it(reason, () => {
      expect(thrown(decodeBody(body))).toBe(`LedgerDecodeError: ${reason}`);
    });
  }

  it("text JSON.parse refuses is refused as invalid JSON, with the parser's own reason", () => {
    let parserSays = "";
    try {
      JSON.parse("{");
    } catch (e) {
      parserSays = (e as Error).message;
    }
    expect(parserSays).not.toBe("");
    expect(thrown(() => EntitlementLedger.decode("{"))).toBe(`LedgerDecodeError: invalid JSON: ${parserSays}`);
  });

  it("JSON that is not an object (null, a list, a number, a string) is refused as such", () => {
    for (const text of ["null", "[]", '["format","heddle-ledger/1"]', "5", '"heddle-ledger/1"']) {
      expect(thrown(() => EntitlementLedger.decode(text))).toBe("LedgerDecodeError: a ledger is a JSON object");
    }
  });
});

describe("the top-level key scan reads only the ledger object's own keys", () => {
  it("a key of a nested object is not a top-level key, even when it repeats one", () => {
    expect(thrown(decodeBody('"records":{"format":1}'))).toBe("LedgerDecodeError: records: expected a list");
  });

  it("a string after a comma inside a list is not a top-level key", () => {
    expect(thrown(decodeBody('"lifecycle":[["e","format"]]'))).toBe('LedgerDecodeError: unknown lifecycle "format"');
    const l = EntitlementLedger.decode(`{${F},"mints":[["m",["g","r","1"]]]}`);
    expect(l.encode()).toBe(`{${F},"mints":[["m",["g","r","1"]]]}`);
  });
});

describe("ids.ts, int64.ts, errors.ts name what they refuse", () => {
  it("an id constructor given a non-string says which kind and what it got", () => {
    expect(thrown(() => GroupId(7 as unknown as string))).toBe("TypeError: GroupId must be a string, got number");
  });

  it("chk refuses one past either end of int64 with a LedgerOverflowError that names the value", () => {
    expect(thrown(() => chk(MAX + 1n))).toBe("LedgerOverflowError: value 9223372036854775808 is outside the signed 64-bit range");
    expect(thrown(() => chk(MIN - 1n))).toBe("LedgerOverflowError: value -9223372036854775809 is outside the signed 64-bit range");
    expect(chk(MAX)).toBe(MAX);
    expect(new LedgerOverflowError("x").name).toBe("LedgerOverflowError");
  });

  it("requireBigint names the quantity and the type it got", () => {
    expect(thrown(() => requireBigint(5, "mint amount"))).toBe("TypeError: mint amount must be a bigint, got number");
    expect(requireBigint(5n, "mint amount")).toBe(5n);
  });
});
