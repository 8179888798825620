/**
 * Keeper and advisory slots at their edges (claims.md §3–4, node.md §6): a slot's claims stay sorted by part
 * when a claim is added, and the encoding sorts a caller's own slot, so its text is the canonical one every
 * peer decodes; `keeperClaimsOn` returns one part's claims only; both slot decoders accept a well-formed slot
 * of exactly `MAX_SLOT_TEXT` code units and exactly `MAX_SLOT_CLAIMS` claims, and name a JSON value that is
 * not an object; an exhausted boot counter and a bad close time are refused by name. Stryker survivors of
 * the seventeenth session (helper AF).
 */
import { describe, expect, it } from "vitest";
import {
  closeKeeper,
  closeKeeperClaim,
  decodeAdvisorySlot,
  decodeKeeperSlot,
  encodeKeeperSlot,
  keeperClaimsOn,
  keeperState,
  MAX_SLOT_CLAIMS,
  MAX_SLOT_TEXT,
  nextVersion,
  putKeeperSlot,
  renewKeeper,
  renewKeeperClaim,
  versionAfter,
  writeKeeperClaim,
} from "../src/index.ts";
import type { KeeperSlot, KeeperSlots } from "../src/index.ts";
import { thrown } from "./support/thrown.ts";

const RULES = { reminders: "follows-you", invoices: "stays-put", audit: "stays-put" } as const;

describe("keeper slots keep their claims sorted by part", () => {
  it("a claim on a smaller part is written before the others", () => {
    let st = keeperState({ self: "a", epoch: 0, rules: RULES });
    st = renewKeeper(st, "reminders", 10).state;
    st = renewKeeper(st, "invoices", 20).state;
    const r = renewKeeper(st, "audit", 30);
    expect(r.slot.claims.map((c) => c.part)).toEqual(["audit", "invoices", "reminders"]);
    expect(decodeKeeperSlot(encodeKeeperSlot(r.slot))).toStrictEqual(r.slot);
    const direct = writeKeeperClaim(r.slot, renewKeeperClaim(undefined, "accounts", "a", 40), 0);
    expect(direct.claims.map((c) => c.part)).toEqual(["accounts", "audit", "invoices", "reminders"]);
  });

  it("a caller's slot with its claims in any order encodes to the canonical, decodable text", () => {
    const inv = renewKeeperClaim(undefined, "invoices", "p1", 5, { take: true });
    const rem = renewKeeperClaim(undefined, "reminders", "p1", 7, { wroteUpTo: 3 });
    const aud = closeKeeperClaim(renewKeeperClaim(undefined, "audit", "p1", 1), 2);
    const canonical: KeeperSlot = { peer: "p1", version: 9n, claims: [aud, inv, rem] };
    const text = encodeKeeperSlot(canonical);
    for (const claims of [[rem, inv, aud], [inv, aud, rem], [rem, aud, inv]]) {
      const mine: KeeperSlot = { peer: "p1", version: 9n, claims };
      expect(encodeKeeperSlot(mine)).toBe(text);
      expect(decodeKeeperSlot(encodeKeeperSlot(mine))).toStrictEqual(canonical);
    }
  });
});

describe("keeperClaimsOn", () => {
  it("returns the claims on that part only, in peer order", () => {
    const slot = (peer: string, parts: string[]): KeeperSlot => ({
      peer,
      version: 1n,
      claims: parts.map((part) => renewKeeperClaim(undefined, part, peer, 1)),
    });
    let slots: KeeperSlots = new Map();
    for (const s of [slot("c", ["invoices", "reminders"]), slot("a", ["reminders"]), slot("b", ["invoices"])]) slots = putKeeperSlot(slots, s).slots;
    expect(keeperClaimsOn(slots, "invoices").map((c) => [c.peer, c.part])).toEqual([["b", "invoices"], ["c", "invoices"]]);
    expect(keeperClaimsOn(slots, "reminders").map((c) => [c.peer, c.part])).toEqual([["a", "reminders"], ["c", "reminders"]]);
    expect(keeperClaimsOn(slots, "audit")).toEqual([]);
    // a map the caller built itself, iterating in another order, still gives peer order
    const handMade: KeeperSlots = new Map([...slots].reverse());
    expect(keeperClaimsOn(handMade, "invoices").map((c) => c.peer)).toEqual(["b", "c"]);
    expect(keeperClaimsOn(handMade, "reminders").map((c) => c.peer)).toEqual(["a", "c"]);
  });
});

/** A well-formed slot text of exactly `length` code units: ids of 1024 units, the last one shorter to make up the rest. */
function slotOfLength(format: string, row: (id: string) => unknown[], length: number): string {
  const text = (ids: string[]) => JSON.stringify({ format, peer: "p1", version: "3", claims: ids.map(row) });
  const id = (i: number, pad: number) => String(i).padStart(4, "0") + "x".repeat(pad);
  const cost = (count: number, r: string) => (count > 0 ? 1 : 0) + JSON.stringify(row(r)).length; // comma + row
  const ids: string[] = [];
  let total = text([]).length;
  while (total + cost(ids.length, id(ids.length, 1020)) + cost(1, id(ids.length + 1, 0)) <= length) {
    total += cost(ids.length, id(ids.length, 1020));
    ids.push(id(ids.length, 1020));
  }
  ids.push(id(ids.length, length - total - cost(ids.length, id(ids.length, 0))));
  return text(ids);
}

describe("slot decoders at their bounds", () => {
  const formats = [
    { f: "heddle-keeper/1", decode: decodeKeeperSlot, row: (id: string): unknown[] => [id, 1, 2, 3, null, null, null] },
    { f: "heddle-advisory/1", decode: decodeAdvisorySlot, row: (id: string): unknown[] => [id, 1, 2] },
  ] as const;

  it("accept a well-formed slot of exactly MAX_SLOT_TEXT code units, and refuse one a unit longer", () => {
    for (const { f, decode, row } of formats) {
      const edge = slotOfLength(f, row, MAX_SLOT_TEXT);
      expect(edge.length).toBe(MAX_SLOT_TEXT);
      expect(decode(edge).claims.length).toBeGreaterThan(400);
      const over = slotOfLength(f, row, MAX_SLOT_TEXT + 1);
      expect(over.length).toBe(MAX_SLOT_TEXT + 1);
      expect(thrown(() => decode(over))).toBe(`ClaimsDecodeError: ${f} slot: longer than ${MAX_SLOT_TEXT} code units`);
    }
  });

  it("accept a well-formed slot of exactly MAX_SLOT_CLAIMS claims", () => {
    for (const { f, decode, row } of formats) {
      const ids = Array.from({ length: MAX_SLOT_CLAIMS }, (_, i) => `i${String(i).padStart(5, "0")}`);
      const text = JSON.stringify({ format: f, peer: "p1", version: "3", claims: ids.map(row) });
      expect(decode(text).claims).toHaveLength(MAX_SLOT_CLAIMS);
    }
  });

  it("name a JSON value that is not an object", () => {
    for (const { f, decode } of formats) {
      for (const text of ["5", "true", '"slot"', "null", "[]"]) {
        expect(thrown(() => decode(text)), text).toBe(`ClaimsDecodeError: ${f} slot: not an object`);
      }
    }
  });
});

describe("refusals named exactly", () => {
  it("an exhausted boot counter", () => {
    const E = "RangeError: slot counter exhausted for this boot: restart with a new epoch";
    expect(thrown(() => nextVersion(2n ** 32n - 1n))).toBe(E);
    expect(thrown(() => versionAfter(3n * 2n ** 32n + (2n ** 32n - 1n), 3))).toBe(E);
    expect(nextVersion(2n ** 32n - 2n)).toBe(2n ** 32n - 1n);
  });

  it("a close at a time that is not a number of milliseconds", () => {
    const c = renewKeeperClaim(undefined, "invoices", "p1", 5);
    const E = (v: string) => `RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got ${v}`;
    expect(thrown(() => closeKeeperClaim(c, -1))).toBe(E("-1"));
    expect(thrown(() => closeKeeperClaim(c, Number.NaN))).toBe(E("NaN"));
    const st = renewKeeper(keeperState({ self: "p1", epoch: 0, rules: RULES }), "invoices", 5).state;
    expect(thrown(() => closeKeeper(st, "invoices", -1))).toBe(E("-1"));
  });
});
