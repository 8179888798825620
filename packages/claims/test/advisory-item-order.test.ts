/**
 * Advisory claims in item order when the input is not: `encodeAdvisorySlot` writes the canonical text (claims
 * sorted by item) for a slot that lists its claims in any order, and `advisoryHolders` / `duplicates` answer in
 * item order although the peers' slots, read in peer order, name the items in another. Added for the Stryker
 * survivors of advisory-claims.ts (seventeenth session, helper AG): every earlier test fed these functions input
 * that was already in item order.
 */
import { describe, expect, it } from "vitest";
import {
  advisoryHolders,
  claimAdvisory,
  decodeAdvisorySlot,
  duplicates,
  encodeAdvisorySlot,
  joinAdvisorySlots,
  putAdvisorySlot,
} from "../src/index.ts";
import type { AdvisorySlot, AdvisorySlots } from "../src/index.ts";

describe("encodeAdvisorySlot", () => {
  it("writes a caller's slot with its claims sorted by item, so the text decodes and equals the sorted slot's", () => {
    const claims = [
      { item: "zeta", peer: "p1", claimedAt: 5, expiresAt: 50 },
      { item: "alpha", peer: "p1", claimedAt: 7, expiresAt: 70 },
      { item: "Mid", peer: "p1", claimedAt: 6, expiresAt: 60 },
    ];
    const unsorted: AdvisorySlot = { peer: "p1", version: 3n, claims };
    const sorted: AdvisorySlot = { peer: "p1", version: 3n, claims: [claims[2]!, claims[1]!, claims[0]!] };
    const text = encodeAdvisorySlot(unsorted);
    expect(text).toBe(
      '{"format":"heddle-advisory/1","peer":"p1","version":"3","claims":[["Mid",6,60],["alpha",7,70],["zeta",5,50]]}',
    );
    expect(encodeAdvisorySlot(sorted)).toBe(text);
    expect(decodeAdvisorySlot(text)).toStrictEqual(sorted);
    expect(unsorted.claims.map((c) => c.item)).toEqual(["zeta", "alpha", "Mid"]); // the caller's slot is left as it was
    // The same claims in another order are the same copy: putting one over the other replaces nothing.
    const map: AdvisorySlots = new Map([["p1", sorted]]);
    expect(putAdvisorySlot(map, unsorted).replaced).toBe(false);
  });
});

describe("advisory resolution answers in item order", () => {
  // Read in peer order (p1, p2, p3), the slots name "zeta" before "alpha".
  const p1 = claimAdvisory(undefined, "p1", 0, "zeta", 10, 1000);
  const p2 = claimAdvisory(claimAdvisory(undefined, "p2", 0, "alpha", 11, 1000), "p2", 0, "zeta", 12, 1000);
  const p3 = claimAdvisory(undefined, "p3", 0, "alpha", 13, 1000);
  const slots = [p1, p2, p3].reduce<AdvisorySlots>((m, s) => joinAdvisorySlots(m, new Map([[s.peer, s]])), new Map());

  it("advisoryHolders lists items in code-unit order", () => {
    expect([...slots.keys()]).toEqual(["p1", "p2", "p3"]);
    expect([...advisoryHolders(slots, 20)].map(([item, c]) => [item, c.peer])).toEqual([
      ["alpha", "p2"],
      ["zeta", "p1"],
    ]);
  });

  it("duplicates lists losers by item, then by place in line", () => {
    expect(duplicates(slots, 20).map((d) => [d.item, d.winner.peer, d.loser.peer])).toEqual([
      ["alpha", "p2", "p3"],
      ["zeta", "p1", "p2"],
    ]);
  });
});
