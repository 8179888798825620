/**
 * Issue 19, helper G: what the survivors of round 3 in ledger.ts showed untested —
 * the words of the argument errors (a test that checks only the class passes with an emptied message),
 * the closed bounds of a bootstrap mint amount, that a ledger value is frozen, the cheap paths of
 * `join`/`equals`/`fragments` (they answer the very value they were given, without copying or encoding),
 * and when `join` may hand the larger side's topology index to the result: only when the smaller side
 * names no record, mint or slot replica the index lacks — else the result's `groups()`/`replicas()`
 * would be stale.
 */
import { describe, expect, it, vi } from "vitest";
import { LedgerDecodeError } from "../src/errors.ts";
import { MAX as MAX_I64 } from "../src/int64.ts";
import { E, EntitlementLedger, G, link, R, state } from "./arbitraries.ts";

const alice = R("alice");
const root = G("root");
const bad = 5 as unknown as string;

describe("argument errors name the argument and the type received", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["edge()", () => EntitlementLedger.EMPTY.edge(bad as never), /^edge must be a string, got number$/],
    ["childrenOf()", () => EntitlementLedger.EMPTY.childrenOf(bad as never), /^parent must be a string, got number$/],
    ["lifecycle()", () => EntitlementLedger.EMPTY.lifecycle(bad as never), /^edge must be a string, got number$/],
    ["projectEdge()", () => EntitlementLedger.EMPTY.projectEdge(bad as never), /^edge must be a string, got number$/],
    ["bootstrap root", () => EntitlementLedger.bootstrap(bad as never, new Map(), "n"), /^root must be a string, got number$/],
    ["bootstrap nonce", () => EntitlementLedger.bootstrap(root, new Map(), bad), /^nonce must be a string, got number$/],
    ["bootstrap holder", () => EntitlementLedger.bootstrap(root, new Map([[bad as never, 1n]]), "n"), /^holder must be a string, got number$/],
    ["bootstrap amount", () => EntitlementLedger.bootstrap(root, new Map([[alice, 1 as unknown as bigint]]), "n"), /^mint amount must be a bigint, got number$/],
  ];
  it.each(cases)("%s", (_, call, message) => {
    expect(call).toThrow(TypeError);
    expect(call).toThrow(message);
  });
});

describe("bootstrap accepts mint amounts 0 … 2^63−1, both ends included", () => {
  it("0 and 2^63−1 are minted as given", () => {
    const l = EntitlementLedger.bootstrap(root, new Map([[alice, 0n], [R("bob"), MAX_I64]]), "n");
    expect([...l.s.mints.values()].map((m) => [m.holder, m.amount])).toEqual([
      ["alice", 0n],
      ["bob", MAX_I64],
    ]);
    expect(l.mintedTotal()).toBe(MAX_I64);
  });
  it("−1 and 2^63 are refused, naming the amount", () => {
    expect(() => EntitlementLedger.bootstrap(root, new Map([[alice, -1n]]), "n")).toThrow(/^mint amount -1 is outside 0 … 2\^63−1$/);
    const over = () => EntitlementLedger.bootstrap(root, new Map([[alice, MAX_I64 + 1n]]), "n");
    expect(over).toThrow(RangeError);
    expect(over).toThrow(/^mint amount 9223372036854775808 is outside 0 … 2\^63−1$/);
  });
});

describe("decodeBinary refuses bytes after the value", () => {
  it("one extra byte is a LedgerDecodeError saying so", () => {
    const bytes = EntitlementLedger.bootstrap(root, new Map([[alice, 3n]]), "n").encodeBinary();
    const call = () => EntitlementLedger.decodeBinary(new Uint8Array([...bytes, 0]));
    expect(call).toThrow(LedgerDecodeError);
    expect(call).toThrow(/^trailing bytes after the ledger value$/);
  });
});

describe("a ledger value is frozen", () => {
  it("its fields cannot be replaced or added, however it was made", () => {
    const boot = EntitlementLedger.bootstrap(root, new Map([[alice, 3n]]), "n");
    const made = [EntitlementLedger.EMPTY, boot, EntitlementLedger.decode(boot.encode()), boot.join(state({ issued: { e: { alice: 1n } } }))];
    for (const l of made) {
      expect(Object.isFrozen(l)).toBe(true);
      expect(() => {
        (l as unknown as { s: unknown }).s = EntitlementLedger.EMPTY.s;
      }).toThrow(TypeError);
      expect(() => {
        (l as unknown as { extra: number }).extra = 1;
      }).toThrow(TypeError);
    }
  });
});

describe("join's cheap paths answer a given value itself", () => {
  it("x ⊔ x, x ⊔ ⊥ and ⊥ ⊔ x are x (no copy)", () => {
    const x = EntitlementLedger.bootstrap(root, new Map([[alice, 3n]]), "n");
    expect(x.join(x)).toBe(x);
    expect(x.join(EntitlementLedger.EMPTY)).toBe(x);
    expect(EntitlementLedger.EMPTY.join(x)).toBe(x);
    // an empty value that is not EMPTY itself takes the same path
    const empty = EntitlementLedger.decode(EntitlementLedger.EMPTY.encode());
    expect(empty.join(x)).toBe(x);
    expect(x.join(empty)).toBe(x);
  });
});

describe("equals on the value itself does no encoding", () => {
  it("x.equals(x) is true without encoding; a distinct equal value is compared by encoding", () => {
    const x = EntitlementLedger.bootstrap(root, new Map([[alice, 3n]]), "n");
    const y = EntitlementLedger.bootstrap(root, new Map([[alice, 3n]]), "n");
    const spy = vi.spyOn(EntitlementLedger.prototype, "encode");
    try {
      expect(x.equals(x)).toBe(true);
      expect(spy).not.toHaveBeenCalled();
      expect(x.equals(y)).toBe(true);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("fragments of a value that fits is the value itself", () => {
  it("at a budget of exactly its size, and above; one byte less splits it", () => {
    const x = EntitlementLedger.bootstrap(root, new Map([[alice, 3n], [R("bob"), 4n]]), "n");
    const size = x.encodeBinary().length;
    for (const budget of [size, size + 1]) {
      const r = x.fragments(budget);
      expect(r.fragments).toHaveLength(1);
      expect(r.fragments[0]).toBe(x);
      expect(r.oversize).toEqual([]);
    }
    const split = x.fragments(size - 1);
    expect(split.fragments.length).toBe(2);
    for (const f of split.fragments) expect(f).not.toBe(x);
    expect(split.fragments[0]!.join(split.fragments[1]!).equals(x)).toBe(true);
  });
  it("the budget is checked with the given known strings, and with none when none are given", () => {
    // 200 holders: 401 strings, so every further known string pushes one more reference past index 127 (a 2-byte varint)
    const mint = new Map(Array.from({ length: 200 }, (_, i) => [R(`h${String(i).padStart(3, "0")}`), 1n] as const));
    const x = EntitlementLedger.bootstrap(root, mint, "n");
    const size = x.encodeBinary().length;
    expect(x.encodeBinary(["not-in-it"]).length).toBeGreaterThan(size);
    const r = x.fragments(size);
    expect(r.fragments).toEqual([x]);
    expect(r.fragments[0]).toBe(x);
    expect(x.fragments(size, ["not-in-it"]).fragments.length).toBeGreaterThan(1);
    // a known string the value names is not sent, so the value fits a smaller budget
    expect(x.fragments(size - 3, ["root"]).fragments[0]).toBe(x);
  });
});

describe("join reuses the larger side's index only when the smaller side names nothing new to it", () => {
  // Each larger side has its index built (by a read) before the join; `ix` is the value's topology index.
  const reused = (big: EntitlementLedger, small: EntitlementLedger): boolean => {
    big.groups();
    const j = big.join(small);
    expect(j.encode()).toBe(EntitlementLedger.decode(big.encode()).join(EntitlementLedger.decode(small.encode())).encode());
    return j.ix === big.ix;
  };
  const base = (): EntitlementLedger =>
    state({
      records: { e1: [["P", "C1", 1n]] },
      mints: { m: ["P", "alice", 10n] },
      issued: { e1: { alice: 5n } },
      transfers: { "": { alice: { bob: 2n } } },
    });

  it("a counter slot, a known record, a known mint, a transfer between slot-named replicas: reused", () => {
    expect(reused(base(), state({ issued: { e1: { alice: 6n } } }))).toBe(true);
    expect(reused(base(), state({ records: { e1: [["P", "C1", 1n]] } }))).toBe(true);
    expect(reused(base(), state({ mints: { m: ["P", "alice", 10n] } }))).toBe(true);
    expect(reused(base(), state({ transfers: { e1: { bob: { alice: 1n } } } }))).toBe(true);
  });

  it("one of the records of a divergent edge: reused", () => {
    const big = state({
      records: { e1: [["P", "C1", 1n], ["P", "C2", 1n]] },
      issued: { e1: { alice: 5n } },
    });
    expect(reused(big, state({ records: { e1: [["P", "C2", 1n]] } }))).toBe(true);
  });

  it("a new record beside a known one of the same edge: not reused, and the new group is listed", () => {
    const small = state({ records: { e1: [["P", "C1", 1n], ["P", "C9", 1n]] } });
    expect(reused(base(), small)).toBe(false);
    const j = base().join(small);
    expect(j.groups()).toEqual(["C1", "C9", "P"]);
  });

  it("a transfer from a new drawer to a slot-named replica: not reused, and the drawer is listed", () => {
    const small = state({ transfers: { e1: { zed: { alice: 1n } } } });
    expect(reused(base(), small)).toBe(false);
    const big = base();
    big.replicas();
    expect(big.join(small).replicas()).toEqual(["alice", "bob", "zed"]);
  });

  it("a transfer from a slot-named replica to a new one: not reused, and the recipient is listed", () => {
    const small = state({ transfers: { e1: { alice: { newbie: 1n } } } });
    expect(reused(base(), small)).toBe(false);
    const big = base();
    big.replicas();
    expect(big.join(small).replicas()).toEqual(["alice", "bob", "newbie"]);
  });

  it("a join never builds the larger side's index: an unread value's index is not shared", () => {
    const big = base();
    const j = big.join(state({ issued: { e1: { alice: 6n } } }));
    expect(j.ix).not.toBe(big.ix);
    expect(j.groups()).toEqual(["C1", "P"]);
  });
});
