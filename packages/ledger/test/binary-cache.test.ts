// The ledger caches its binary form for the last `known` list it was asked for. Ids may contain U+0000, so the
// cache must tell lists apart by their elements, not by a joined string: ["r\u00001"] and ["r", "1"] are
// different string tables and give different bytes.
import { describe, expect, it } from "vitest";
import { EntitlementLedger } from "../src/index.ts";

const ISSUED = '{"format":"heddle-ledger/1","issued":[["b",[["r2","5"],["r1","7"]]],["a",[["r1","1"]]]]}';

describe("the binary-form cache", () => {
  const lists: (readonly string[])[] = [["r\u00001"], ["r", "1"], ["r\u0000", "1"], ["r", "\u00001"], [], ["r1"]];

  it("answers each known list with that list's own bytes, whatever was asked before", () => {
    const fresh = (known: readonly string[]): number[] => [...EntitlementLedger.decode(ISSUED).encodeBinary(known)];
    const cached = EntitlementLedger.decode(ISSUED);
    for (const first of lists)
      for (const then of lists) {
        cached.encodeBinary(first);
        expect({ first, then, bytes: [...cached.encodeBinary(then)] }).toEqual({ first, then, bytes: fresh(then) });
      }
  });

  it("the bytes decode back with the same list", () => {
    const l = EntitlementLedger.decode(ISSUED);
    for (const known of lists) expect(EntitlementLedger.decodeBinary(l.encodeBinary(known), known).encode()).toBe(l.encode());
  });
});
