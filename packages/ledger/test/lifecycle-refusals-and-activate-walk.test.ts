/**
 * Issue 19, helper C: each mutator refusal states its reason in words (a test that checks only the kind
 * passes with an empty message), activate's walk up the live chain stops where ledger.md §7.4 says it
 * stops (at a group seen before, at a group without exactly one live inbound), and the decoder's scan
 * for top-level keys reads only the top-level keys: not values, not keys of nested objects, not text
 * inside strings.
 */
import { describe, expect, it } from "vitest";
import type { MutationResult } from "./arbitraries.ts";
import { apply, E, EntitlementLedger, G, link, M, R, said, state, Weight } from "./arbitraries.ts";

const alice = R("alice");
const root = G("root");

describe("each mutator refusal names its reason", () => {
  const base = (): EntitlementLedger => link(EntitlementLedger.bootstrap(root, new Map([[alice, 10n]]), "n"), E("eA"), root, G("A"));
  const closing = (): EntitlementLedger => apply(base(), base().close(E("eA")));
  const withEX = (): EntitlementLedger => apply(base(), base().prepare({ id: E("eX"), parent: G("B"), child: G("A"), weight: Weight.ONE }));
  const withEP = (): EntitlementLedger => apply(base(), base().prepare({ id: E("eP"), parent: G("A"), child: G("P"), weight: Weight.ONE }));
  const underPQ = (): EntitlementLedger => {
    const u = link(EntitlementLedger.EMPTY, E("pq"), G("p"), G("q"));
    return apply(u, u.prepare({ id: E("qp"), parent: G("q"), child: G("p"), weight: Weight.ONE }));
  };
  const cases: [string, () => MutationResult, string][] = [
    ["mint at a group with an inbound record", () => link(EntitlementLedger.EMPTY, E("eA"), root, G("A")).mint(M("m"), G("A"), alice, 5n), "NotARoot: A has an inbound record"],
    ["prepare parent = child", () => base().prepare({ id: E("x"), parent: G("A"), child: G("A"), weight: Weight.ONE }), "InvalidArgument: record needs valid ids, parent ≠ child and a Weight"],
    ["prepare a known id", () => base().prepare({ id: E("eA"), parent: G("A"), child: G("Q"), weight: Weight.ONE }), "AlreadyKnown: edge eA is already known"],
    ["prepare an edge into the root", () => base().prepare({ id: E("x"), parent: G("A"), child: root, weight: Weight.ONE }), "ChildIsRoot: root is a mint root"],
    ["activate a CLOSING edge", () => closing().activate(E("eA")), "WrongLifecycle: edge eA is CLOSING"],
    ["activate a second inbound", () => withEX().activate(E("eX")), "InboundAlreadyLive: A already has live inbound eA"],
    ["activate q→p under p→q", () => underPQ().activate(E("qp")), "WouldCreateCycle: activating qp would put p above itself"],
    ["close a PREPARED edge", () => withEP().close(E("eP")), "WrongLifecycle: edge eP is PREPARED, not ACTIVE or CLOSING"],
    ["retire an ACTIVE edge", () => base().retire(E("eA")), "WrongLifecycle: edge eA is ACTIVE, not CLOSING or PREPARED"],
  ];
  it.each(cases)("%s", (_, call, message) => {
    expect(said(call())).toBe(message);
  });
});

describe("activate's walk up the live chain (ledger.md §7.4)", () => {
  it("stops at a group seen before: a live cycle above the parent (from a join) does not hang the walk", () => {
    // x→y and y→x both ACTIVE: each replica activated one, the join holds both.
    const s = state({
      records: { xy: [["x", "y", 1n]], yx: [["y", "x", 1n]], xc: [["x", "c", 1n]] },
      lifecycle: { xy: "ACTIVE", yx: "ACTIVE", xc: "PREPARED" },
    });
    const r = s.activate(E("xc"));
    expect(r.ok).toBe(true);
    expect(apply(s, r).lifecycle(E("xc"))).toBe("ACTIVE");
  });

  it("stops at a group with two live inbound edges, even when both come from the child", () => {
    // c→p twice (two ids, both ACTIVE after a join): p has two live inbound, so the walk from p stops
    // there and activating p→c is not a cycle by §7.4's walk.
    const s = state({
      records: { cp1: [["c", "p", 1n]], cp2: [["c", "p", 1n]], pc: [["p", "c", 1n]] },
      lifecycle: { cp1: "ACTIVE", cp2: "ACTIVE", pc: "PREPARED" },
    });
    expect(s.activate(E("pc")).ok).toBe(true);
  });
});

/**
 * The decoder finds duplicate and unknown top-level keys by scanning the text (JSON.parse keeps only the
 * last of a repeated key): only strings at depth 1 in key position count, depth follows every bracket,
 * and an escaped quote does not end a string.
 */
describe("the top-level key scan", () => {
  const thrown = (text: string): string => {
    try {
      EntitlementLedger.decode(text);
    } catch (e) {
      return `${(e as Error).name}: ${(e as Error).message}`;
    }
    return "accepted";
  };
  const F = '"format":"heddle-ledger/1"';

  it("string values at depth 1 are not keys", () => {
    expect(thrown(`{${F}}`)).toBe("accepted");
    expect(EntitlementLedger.decode(`{${F},"lifecycle":[["e","ACTIVE"]]}`).lifecycle(E("e"))).toBe("ACTIVE");
  });

  it("the first key, right after the opening brace, is read", () => {
    expect(thrown(`{"x":1,${F}}`)).toBe('LedgerDecodeError: unknown top-level key "x"');
  });

  it("a closing bracket returns to depth 1: a key after a list value is read", () => {
    expect(thrown(`{${F},"mints":[],"x":1}`)).toBe('LedgerDecodeError: unknown top-level key "x"');
    expect(thrown(`{${F},"lifecycle":[["e","ACTIVE"]],"x":1}`)).toBe('LedgerDecodeError: unknown top-level key "x"');
  });

  it("a closing brace returns to depth 1: a key after an object value is read", () => {
    expect(thrown(`{${F},"mints":{},${F}}`)).toBe('LedgerDecodeError: duplicate top-level key "format"');
    expect(thrown(`{${F},"mints":{"a":{}},"x":1}`)).toBe('LedgerDecodeError: unknown top-level key "x"');
  });

  it("an escaped quote does not end a string: its rest is not read as keys", () => {
    expect(thrown('{"format":"a\\",\\"x"}')).toBe('LedgerDecodeError: wrong format "a\\",\\"x", expected heddle-ledger/1');
  });

  it("keys of nested objects are not top-level keys", () => {
    expect(thrown(`{${F},"mints":{"format":1}}`)).toBe("LedgerDecodeError: mints: expected a list");
  });
});

describe("validate(): OrphanedTransferPath needs a party with both a net transfer and a position", () => {
  it("a party with a position but zero net transfer on the old path does not make it orphaned", () => {
    // old generation of C retired, nw live; a was issued 10 on old, sent 5 to b and got 5 back:
    // tnet(old, a) = tnet(old, b) = 0, pos(old, a) = 10 — nothing was moved that is now stranded.
    const s = state({
      records: { old: [["root", "C", 1n]], nw: [["root", "C", 1n]] },
      lifecycle: { old: "RETIRED", nw: "ACTIVE" },
      mints: { m: ["root", "a", 100n] },
      issued: { old: { a: 10n } },
      transfers: { old: { a: { b: 5n }, b: { a: 5n } } },
    });
    expect(s.validate()).toEqual([{ kind: "ClosureViolation", edge: E("old") }]);
  });
});

describe("join keeps the larger side's index only when the smaller side adds no replica", () => {
  it("a transfer whose drawer is new to the larger side adds that replica", () => {
    const big = EntitlementLedger.bootstrap(root, new Map([[alice, 10n], [R("bob"), 5n]]), "n");
    expect(big.replicas()).toEqual(["alice", "bob"]); // builds big's index
    const small = state({ transfers: { k: { zed: { alice: 1n } } } });
    const joined = big.join(small);
    expect(joined.replicas()).toEqual(["alice", "bob", "zed"]);
    expect(joined.validate()).toEqual(EntitlementLedger.decode(joined.encode()).validate());
  });
});

describe("the binary decoder names a repeated key", () => {
  it("a lifecycle entry whose id repeats the one before it", () => {
    const bytes = state({ lifecycle: { a: "ACTIVE", b: "ACTIVE" } }).encodeBinary();
    // …, ref(a)=0, rank, ref(b)=1, rank: point the second entry at string 0 as well
    expect([...bytes.slice(-4)]).toEqual([0, bytes[bytes.length - 3], 1, bytes[bytes.length - 1]]);
    const dup = bytes.slice();
    dup[dup.length - 2] = 0;
    expect(() => EntitlementLedger.decodeBinary(dup)).toThrow(/^lifecycle: duplicate key "a"$/);
  });
});
