/**
 * The binary decoder, round 2 of issue 19 (helper D): the reason each refusal gives (which component,
 * which field), the duplicate-key refusal of every component, the repair of zero slots, and the exact
 * edges of the range checks. The round-trip properties never build these frames (an encoder does not
 * write a repeated key, a zero slot or an edge with no records), so the mutants that dropped or emptied
 * those lines survived. Frames are written by hand from the layout
 * (`u8 format · uvarint #strings · (uvarint len · utf-8)* · uvarint mask · components`); the mask bits
 * are records 1, mints 2, issued 4, returned 8, leafSpent 16, rollupSpent 32, transfers 64,
 * lifecycle 128, gauges 256.
 */
import { describe, expect, it } from "vitest";
import { ByteWriter, EntitlementLedger } from "../src/index.ts";
import { frame, thrown } from "./arbitraries.ts";

const MAX = 2n ** 63n - 1n;

/** The canonical JSON of what `bytes` decodes to. */
const decoded = (bytes: Uint8Array): string => EntitlementLedger.decodeBinary(bytes).encode();
/** The canonical JSON of the ledger written as (possibly non-canonical) JSON `text`. */
const canon = (text: string): string => EntitlementLedger.decode(text).encode();
const EMPTY = '{"format":"heddle-ledger/1"}';

describe("the frame itself", () => {
  const cases: [string, () => Uint8Array, string][] = [
    ["a format byte other than 1", () => Uint8Array.of(2, 0, 0), "unknown binary ledger format"],
    // one string of 5 bytes with 1 byte left: the reader's own "truncated" passes through the UTF-8 catch
    ["a string table entry cut short", () => Uint8Array.of(1, 1, 5, 0x61), "truncated"],
    ["a string table entry that is not UTF-8", () => Uint8Array.of(1, 1, 1, 0xff, 0), "string table entry is not UTF-8"],
    // 9 components: bit 9 (mask 512) names none
    ["a component bit past gauges", () => frame([], 512, () => {}), "unknown component"],
  ];
  for (const [name, bytes, reason] of cases) {
    it(`${name}: "${reason}"`, () => {
      expect(thrown(() => EntitlementLedger.decodeBinary(bytes()))).toBe(`LedgerDecodeError: ${reason}`);
    });
  }

  it("every mask below 512 names only known components (the empty ones decode to the empty ledger)", () => {
    expect(decoded(frame([], 0, () => {}))).toBe(canon(EMPTY));
  });

  it("the empty ledger encodes to the format byte, no strings, mask 0 (and decodes back)", () => {
    const l = EntitlementLedger.decode(EMPTY);
    expect([...l.encodeBinary()]).toEqual([1, 0, 0]);
    expect(decoded(Uint8Array.of(1, 0, 0))).toBe(l.encode());
  });
});

describe("every component refuses a repeated key, naming the component and the key", () => {
  const rec = (w: ByteWriter) => w.uint(0).uint(1).uint(1).uint(2).ubig(1n).ubig(1n);
  const mint = (w: ByteWriter) => w.uint(0).uint(1).uint(2).ubig(5n);
  const slot = (v: bigint) => (w: ByteWriter) => w.uint(0).uint(1).uint(1).ubig(v);
  const cases: [string, () => Uint8Array, string][] = [
    ["records", () => frame(["e", "p", "c"], 1, (w) => (rec(w.uint(2)), rec(w))), 'records: duplicate key "e"'],
    ["mints", () => frame(["m", "g", "r"], 2, (w) => (mint(w.uint(2)), mint(w))), 'mints: duplicate key "m"'],
    ["issued edges", () => frame(["e", "r"], 4, (w) => (slot(5n)(w.uint(2)), slot(6n)(w))), 'issued: duplicate key "e"'],
    ["returned edges", () => frame(["e", "r"], 8, (w) => (slot(5n)(w.uint(2)), slot(6n)(w))), 'returned: duplicate key "e"'],
    ["rollupSpent edges", () => frame(["e", "r"], 32, (w) => (slot(5n)(w.uint(2)), slot(6n)(w))), 'rollupSpent: duplicate key "e"'],
    ["leafSpent slots of one edge", () => frame(["e", "r"], 16, (w) => w.uint(1).uint(0).uint(2).uint(1).ubig(5n).uint(1).ubig(6n)), 'leafSpent: duplicate key "r"'],
    ["transfer keys", () => frame(["k", "d", "x"], 64, (w) => w.uint(2).uint(0).uint(1).uint(1).uint(1).uint(2).ubig(5n).uint(0).uint(1).uint(1).uint(1).uint(2).ubig(6n)), 'transfers: duplicate key "k"'],
    ["transfer donors of one key", () => frame(["k", "d", "x"], 64, (w) => w.uint(1).uint(0).uint(2).uint(1).uint(1).uint(2).ubig(5n).uint(1).uint(1).uint(2).ubig(6n)), 'transfer rows: duplicate key "d"'],
    ["transfer recipients of one row", () => frame(["k", "d", "x"], 64, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(2).uint(2).ubig(5n).uint(2).ubig(6n)), 'transfer row: duplicate key "x"'],
    ["lifecycle", () => frame(["e"], 128, (w) => w.uint(2).uint(0).u8(1).uint(0).u8(2)), 'lifecycle: duplicate key "e"'],
    ["gauges", () => frame(["e"], 256, (w) => w.uint(2).uint(0).zbig(1n).ubig(2n).ubig(0n).uint(0).zbig(1n).ubig(3n).ubig(0n)), 'gauges: duplicate key "e"'],
  ];
  for (const [name, bytes, reason] of cases) {
    it(`${name}: "${reason}"`, () => {
      expect(thrown(() => EntitlementLedger.decodeBinary(bytes()))).toBe(`LedgerDecodeError: ${reason}`);
    });
  }
});

describe("each field names itself when it is refused", () => {
  // string 9 is past every table below: `str(what)` names the field
  const past = (what: string) => `${what}: string index 9 out of range`;
  const big = (what: string) => `${what}: ${MAX + 1n} is outside the signed 64-bit range`;
  const cases: [() => Uint8Array, string][] = [
    [() => frame(["e"], 1, (w) => w.uint(1).uint(0).uint(1).uint(9).uint(0).ubig(1n).ubig(1n)), past("record parent")],
    [() => frame(["e", "p"], 1, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(9).ubig(1n).ubig(1n)), past("record child")],
    [() => frame(["m"], 2, (w) => w.uint(1).uint(9).uint(0).uint(0).ubig(1n)), past("mint id")],
    [() => frame(["m"], 2, (w) => w.uint(1).uint(0).uint(9).uint(0).ubig(1n)), past("mint root")],
    [() => frame(["m", "g"], 2, (w) => w.uint(1).uint(0).uint(1).uint(9).ubig(1n)), past("mint holder")],
    [() => frame(["e"], 4, (w) => w.uint(1).uint(9).uint(0)), past("issued edge")],
    [() => frame(["e"], 8, (w) => w.uint(1).uint(9).uint(0)), past("returned edge")],
    [() => frame(["e"], 16, (w) => w.uint(1).uint(0).uint(1).uint(9).ubig(1n)), past("leafSpent replica")],
    [() => frame(["e", "r"], 32, (w) => w.uint(1).uint(0).uint(1).uint(1).ubig(MAX + 1n)), big("rollupSpent value")],
    [() => frame(["k"], 64, (w) => w.uint(1).uint(0).uint(1).uint(9).uint(0)), past("donor")],
    [() => frame(["k", "d"], 64, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(1).uint(9).ubig(1n)), past("recipient")],
    [() => frame(["k", "d", "x"], 64, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(1).uint(2).ubig(MAX + 1n)), big("transfer value")],
    [() => frame(["e"], 256, (w) => w.uint(1).uint(9).zbig(1n).ubig(1n).ubig(0n)), past("gauge edge")],
    [() => frame(["e"], 256, (w) => w.uint(1).uint(0).zbig(1n).ubig(1n).ubig(MAX + 1n)), big("gauge folded")],
  ];
  for (const [bytes, reason] of cases) {
    it(`"${reason}"`, () => {
      expect(thrown(() => EntitlementLedger.decodeBinary(bytes()))).toBe(`LedgerDecodeError: ${reason}`);
    });
  }
});

describe("record weights: both parts in 1 … 2^63 − 1, checked before Weight.of", () => {
  const weight = (num: bigint, den: bigint) => frame(["e", "p", "c"], 1, (w) => w.uint(1).uint(0).uint(1).uint(1).uint(2).ubig(num).ubig(den));
  it("a zero denominator is the decoder's refusal, not Weight.of's RangeError", () => {
    expect(thrown(() => EntitlementLedger.decodeBinary(weight(1n, 0n)))).toBe("LedgerDecodeError: record e: weight 1/0 names no positive ratio");
  });
  it("a numerator of 2^63 is the decoder's refusal; 2^63 − 1 is a weight", () => {
    expect(thrown(() => EntitlementLedger.decodeBinary(weight(MAX + 1n, 1n)))).toBe(`LedgerDecodeError: record e: weight ${MAX + 1n}/1 names no positive ratio`);
    expect(decoded(weight(MAX, 1n))).toBe(canon(`{"format":"heddle-ledger/1","records":[["e",[["p","c","${MAX}","1"]]]]}`));
  });
});

describe("what the decoder repairs", () => {
  it("an edge listed with no records is no edge", () => {
    expect(decoded(frame(["e"], 1, (w) => w.uint(1).uint(0).uint(0)))).toBe(canon(EMPTY));
  });

  it("zero counter slots are dropped, and an edge left with no slot is dropped", () => {
    // issued: a {r: 0, q: 3}, b {r: 0}
    const bytes = frame(["a", "r", "q", "b"], 4, (w) => w.uint(2).uint(0).uint(2).uint(1).ubig(0n).uint(2).ubig(3n).uint(3).uint(1).uint(1).ubig(0n));
    expect(decoded(bytes)).toBe(canon('{"format":"heddle-ledger/1","issued":[["a",[["q","3"]]]]}'));
  });

  it("zero transfer slots are dropped, then empty rows, then empty keys", () => {
    // transfers: k {d: {x: 0, y: 4}, d2: {x: 0}}, k2 {d: {x: 0}}
    const bytes = frame(["k", "d", "x", "y", "d2", "k2"], 64, (w) =>
      w.uint(2)
        .uint(0).uint(2)
        .uint(1).uint(2).uint(2).ubig(0n).uint(3).ubig(4n)
        .uint(4).uint(1).uint(2).ubig(0n)
        .uint(5).uint(1)
        .uint(1).uint(1).uint(2).ubig(0n),
    );
    expect(decoded(bytes)).toBe(canon('{"format":"heddle-ledger/1","transfers":[["k",[["d",[["y","4"]]]]]]}'));
  });
});

it("a gauge floor of (2^63 − 1)/1 is in range", () => {
  const bytes = frame(["e"], 256, (w) => w.uint(1).uint(0).zbig(MAX).ubig(1n).ubig(0n));
  expect(decoded(bytes)).toBe(canon(`{"format":"heddle-ledger/1","gauges":[["e",["${MAX}","1","0"]]]}`));
});

describe("§10 a key repeated next to an entry that decodes to nothing is refused, as the JSON decoder refuses it", () => {
  // A zero slot or an empty inner list is never stored, so a duplicate check that only looks at what
  // was stored let `[r 0, r 5]` through in binary while JSON refused it: "duplicate keys at any map
  // level" is about the input, not about what survives the repair. Both orders of each pair.
  const F = '"format":"heddle-ledger/1"';
  type W = (w: ByteWriter) => ByteWriter;
  const slot = (r: number, v: bigint): W => (w) => w.uint(r).ubig(v);
  /** One counter edge (string index 0) with the given slots. */
  const edge = (...slots: W[]): W => (w) => slots.reduce((acc, s) => s(acc), w.uint(0).uint(slots.length));
  const rec: W = (w) => w.uint(1).uint(2).ubig(1n).ubig(1n);
  const recEdge = (...recs: W[]): W => (w) => recs.reduce((acc, r) => r(acc), w.uint(0).uint(recs.length));
  /** transfers: one key "k" (index 0), donors and recipients by index. */
  const row = (d: number, ...xs: W[]): W => (w) => xs.reduce((acc, x) => x(acc), w.uint(d).uint(xs.length));
  const tkey = (...rows: W[]): W => (w) => rows.reduce((acc, r) => r(acc), w.uint(0).uint(rows.length));
  const many = (...xs: W[]): ((w: ByteWriter) => void) => (w) => void xs.reduce((acc, x) => x(acc), w.uint(xs.length));
  const cases: [string, Uint8Array, string, string][] = [
    ["issued slots: a zero slot, then the same replica", frame(["e", "r"], 4, many(edge(slot(1, 0n), slot(1, 5n)))), `{${F},"issued":[["e",[["r","0"],["r","5"]]]]}`, 'issued: duplicate key "r"'],
    ["issued slots: a slot, then the same replica at zero", frame(["e", "r"], 4, many(edge(slot(1, 5n), slot(1, 0n)))), `{${F},"issued":[["e",[["r","5"],["r","0"]]]]}`, 'issued: duplicate key "r"'],
    ["returned slots: two zero slots of one replica", frame(["e", "r"], 8, many(edge(slot(1, 0n), slot(1, 0n)))), `{${F},"returned":[["e",[["r","0"],["r","0"]]]]}`, 'returned: duplicate key "r"'],
    ["leafSpent edges: an empty edge, then the same edge", frame(["e", "r"], 16, many(edge(), edge(slot(1, 5n)))), `{${F},"leafSpent":[["e",[]],["e",[["r","5"]]]]}`, 'leafSpent: duplicate key "e"'],
    ["rollupSpent edges: an edge, then the same edge empty", frame(["e", "r"], 32, many(edge(slot(1, 5n)), edge())), `{${F},"rollupSpent":[["e",[["r","5"]]],["e",[]]]}`, 'rollupSpent: duplicate key "e"'],
    ["issued edges: an all-zero edge, then the same edge", frame(["e", "r"], 4, many(edge(slot(1, 0n)), edge(slot(1, 5n)))), `{${F},"issued":[["e",[["r","0"]]],["e",[["r","5"]]]]}`, 'issued: duplicate key "e"'],
    ["records: an empty set, then the same edge", frame(["e", "p", "c"], 1, many(recEdge(), recEdge(rec))), `{${F},"records":[["e",[]],["e",[["p","c","1","1"]]]]}`, 'records: duplicate key "e"'],
    ["records: a set, then the same edge empty", frame(["e", "p", "c"], 1, many(recEdge(rec), recEdge())), `{${F},"records":[["e",[["p","c","1","1"]]],["e",[]]]}`, 'records: duplicate key "e"'],
    ["records: two empty sets", frame(["e", "p", "c"], 1, many(recEdge(), recEdge())), `{${F},"records":[["e",[]],["e",[]]]}`, 'records: duplicate key "e"'],
    ["transfer keys: an empty key, then the same key", frame(["k", "d", "x"], 64, many(tkey(), tkey(row(1, slot(2, 5n))))), `{${F},"transfers":[["k",[]],["k",[["d",[["x","5"]]]]]]}`, 'transfers: duplicate key "k"'],
    ["transfer keys: a key, then the same key with only a zero row", frame(["k", "d", "x"], 64, many(tkey(row(1, slot(2, 5n))), tkey(row(1, slot(2, 0n))))), `{${F},"transfers":[["k",[["d",[["x","5"]]]]],["k",[["d",[["x","0"]]]]]]}`, 'transfers: duplicate key "k"'],
    ["transfer donors: an empty row, then the same donor", frame(["k", "d", "x"], 64, many(tkey(row(1), row(1, slot(2, 5n))))), `{${F},"transfers":[["k",[["d",[]],["d",[["x","5"]]]]]]}`, 'transfer rows: duplicate key "d"'],
    ["transfer donors: a row, then the same donor empty", frame(["k", "d", "x"], 64, many(tkey(row(1, slot(2, 5n)), row(1)))), `{${F},"transfers":[["k",[["d",[["x","5"]]],["d",[]]]]]}`, 'transfer rows: duplicate key "d"'],
    ["transfer recipients: a zero slot, then the same recipient", frame(["k", "d", "x"], 64, many(tkey(row(1, slot(2, 0n), slot(2, 5n))))), `{${F},"transfers":[["k",[["d",[["x","0"],["x","5"]]]]]]}`, 'transfer row: duplicate key "x"'],
    ["transfer recipients: a slot, then the same recipient at zero", frame(["k", "d", "x"], 64, many(tkey(row(1, slot(2, 5n), slot(2, 0n))))), `{${F},"transfers":[["k",[["d",[["x","5"],["x","0"]]]]]]}`, 'transfer row: duplicate key "x"'],
  ];
  for (const [name, bytes, json, reason] of cases) {
    it(`${name}: "${reason}" from both decoders`, () => {
      expect(thrown(() => EntitlementLedger.decode(json))).toBe(`LedgerDecodeError: ${reason}`);
      expect(thrown(() => EntitlementLedger.decodeBinary(bytes))).toBe(`LedgerDecodeError: ${reason}`);
    });
  }

  it("entries that decode to nothing under distinct keys are still dropped, not refused (the repair of §10)", () => {
    const bytes = frame(["e", "r", "s"], 4, many(edge(slot(1, 0n), slot(2, 0n))));
    expect(decoded(bytes)).toBe(canon(`{${F},"issued":[["e",[["r","0"],["s","0"]]]]}`));
    expect(decoded(bytes)).toBe(EMPTY);
  });
});
