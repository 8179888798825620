/**
 * Mutation-score gaps (issue 19, helper B): input checks and the exact refusal/error texts of the
 * mutators (ledger.md §7), the id constructors (§2.2), `bootstrap`, `join`, `equals`, the replica's
 * guards and `Weight.toString`. Each case pins the observable the surviving mutant changed.
 */
import { describe, expect, it } from "vitest";
import { LedgerReplica, MAX } from "../src/index.ts";
import type { AttachmentRecord, GroupId, ReplicaId } from "../src/index.ts";
import { compareIds, GroupId as GroupIdOf, AttachmentId as AttachmentIdOf, MintId as MintIdOf, ReplicaId as ReplicaIdOf } from "../src/ids.ts";
import { apply, E, EntitlementLedger, G, M, ok, R, refused, state, Weight } from "./arbitraries.ts";

const root = G("root");
const alice = R("alice");

describe("refusals carry exact kinds and messages", () => {
  it("a refusal without detail has no detail key at all", () => {
    const r = refused(EntitlementLedger.EMPTY.activate(E("nowhere")));
    expect(Object.keys(r)).toEqual(["kind", "message"]);
    expect("detail" in r).toBe(false);
  });

  it("singleRecord: invalid, unknown and divergent edges", () => {
    const bad = refused(EntitlementLedger.EMPTY.activate("" as never));
    expect(bad).toEqual({ kind: "InvalidArgument", message: "edge must be a non-empty, well-formed id" });
    const unknown = refused(EntitlementLedger.EMPTY.activate(E("nowhere")));
    expect(unknown).toEqual({ kind: "UnknownEdge", message: "edge nowhere has no record" });
    const forked = state({ records: { e: [["root", "A", 1n], ["root", "B", 1n]] } });
    expect(refused(forked.activate(E("e")))).toEqual({ kind: "DivergentRecord", message: "edge e has 2 divergent records" });
  });

  it("mint: the amount bound is inclusive at 2^63−1, and the refusal texts", () => {
    const top = ok(EntitlementLedger.EMPTY.mint(M("m"), root, alice, MAX));
    expect(top.holdings(root, alice)).toBe(MAX);
    expect(refused(EntitlementLedger.EMPTY.mint(M("m"), root, alice, MAX + 1n))).toEqual({
      kind: "InvalidArgument",
      message: "mint needs valid ids and an amount in 0 … 2^63−1",
    });
    const s = apply(EntitlementLedger.EMPTY, EntitlementLedger.EMPTY.mint(M("m"), root, alice, 5n));
    expect(refused(s.mint(M("m"), root, alice, 6n))).toEqual({ kind: "MintIdInUse", message: "mint id m already names another mint" });
    const two = state({ mints: { m1: ["r1", "alice", 1n], m2: ["r2", "alice", 1n] } });
    expect(refused(two.mint(M("m3"), G("r3"), alice, 1n))).toEqual({
      kind: "ForeignRoot",
      message: "the ledger's root is r1, r2, not r3",
    });
  });

  it("prepare refuses null and functions as records (only plain objects are records)", () => {
    const expected = { kind: "InvalidArgument", message: "record needs valid ids, parent ≠ child and a Weight" };
    expect(refused(EntitlementLedger.EMPTY.prepare(null as unknown as AttachmentRecord))).toEqual(expected);
    // A function carrying every field of a valid record is still not a record.
    const fnRecord = Object.assign(() => undefined, { id: E("e"), parent: root, child: G("A"), weight: Weight.ONE });
    expect(refused(EntitlementLedger.EMPTY.prepare(fnRecord as unknown as AttachmentRecord))).toEqual(expected);
    // the same fields on a plain object are accepted
    ok(EntitlementLedger.EMPTY.prepare({ id: E("e"), parent: root, child: G("A"), weight: Weight.ONE }));
  });
});

describe("ids (§2.2)", () => {
  it("the constructors name the kind in their RangeError", () => {
    expect(() => GroupIdOf("")).toThrow(new RangeError("GroupId must be a non-empty, well-formed UTF-16 string"));
    expect(() => AttachmentIdOf("\uD800")).toThrow(new RangeError("AttachmentId must be a non-empty, well-formed UTF-16 string"));
    expect(() => MintIdOf("")).toThrow(new RangeError("MintId must be a non-empty, well-formed UTF-16 string"));
    expect(() => ReplicaIdOf("")).toThrow(new RangeError("ReplicaId must be a non-empty, well-formed UTF-16 string"));
  });

  it("compareIds is UTF-16 code-unit order with 0 only for equal strings", () => {
    expect(compareIds("a", "b")).toBe(-1);
    expect(compareIds("b", "a")).toBe(1);
    expect(compareIds("a", "a")).toBe(0);
    // U+10000 is the surrogate pair D800 DC00, below U+FFFF in code-unit order (not in code-point order)
    expect(compareIds("\u{10000}", "\uFFFF")).toBe(-1);
    expect(compareIds("\uFFFF", "\u{10000}")).toBe(1);
  });
});

describe("EntitlementLedger input errors", () => {
  it("bootstrap names what is wrong", () => {
    expect(() => EntitlementLedger.bootstrap("" as GroupId, new Map(), "n")).toThrow(new RangeError("root must be a non-empty, well-formed id"));
    expect(() => EntitlementLedger.bootstrap(root, new Map(), "\uD800")).toThrow(new RangeError("nonce must be a well-formed string"));
    expect(() => EntitlementLedger.bootstrap(root, {} as ReadonlyMap<ReplicaId, bigint>, "n")).toThrow(
      new TypeError("mint must be a Map of replica → amount"),
    );
    expect(() => EntitlementLedger.bootstrap(root, new Map([["" as ReplicaId, 1n]]), "n")).toThrow(
      new RangeError("holder must be a non-empty, well-formed id"),
    );
  });

  it("join and equals reject non-ledgers with their own message", () => {
    expect(() => EntitlementLedger.EMPTY.join({} as EntitlementLedger)).toThrow(new TypeError("join expects an EntitlementLedger"));
    expect(() => EntitlementLedger.EMPTY.equals({} as EntitlementLedger)).toThrow(new TypeError("equals expects an EntitlementLedger"));
  });

  it("encodeBinary() without known strings is encodeBinary([]) (no string is assumed known), on values and replicas", () => {
    const s = state({ mints: { m: ["root", "alice", 7n] } });
    expect(s.encodeBinary()).toEqual(s.encodeBinary([]));
    expect(EntitlementLedger.decodeBinary(s.encodeBinary()).equals(s)).toBe(true);
    // a replica reads through LedgerReads.encodeBinary, which has its own default
    const rep = new LedgerReplica(s);
    expect(rep.encodeBinary()).toEqual(s.encodeBinary([]));
    expect(EntitlementLedger.decodeBinary(rep.encodeBinary()).equals(s)).toBe(true);
  });
});

describe("LedgerReplica guards", () => {
  it("apply, begin and snapshot refuse with their messages", () => {
    const rep = new LedgerReplica();
    expect(() => rep.apply({} as EntitlementLedger)).toThrow(new TypeError("apply expects an EntitlementLedger"));
    const tx = rep.begin();
    expect(() => rep.begin()).toThrow(new Error("LedgerReplica: a transaction is already open"));
    expect(() => rep.snapshot()).toThrow(new Error("LedgerReplica: no snapshot while a transaction is open"));
    tx.rollback();
    expect(rep.snapshot().equals(EntitlementLedger.EMPTY)).toBe(true);
  });
});

describe("Weight", () => {
  it("toString is num/den", () => {
    expect(Weight.of(3n).toString()).toBe("3/1");
    expect(Weight.of(2n, 4n).toString()).toBe("1/2");
  });
});
