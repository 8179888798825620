/**
 * Full-state transfers (node.md §5.2 `state`) on their own: one split per (state version, seq), reused
 * while both stay the same, and a new numbered transfer as soon as either changes. A transfer reused after
 * the state changed at the same seq would ship a stale state under a fresh `upThrough` — convergence hides
 * it (the next delta or digest repairs the receiver), so the replica suites cannot (issue 19).
 */
import { describe, expect, it } from "vitest";
import type { EntitlementLedger } from "@heddle/ledger";
import { StateTransfers } from "../src/replication/state-transfer.ts";

describe("state transfers: prepared once per (version, seq)", () => {
  it("reuses the prepared transfer while version and seq are the same, and numbers a new one when either changes", () => {
    const t = new StateTransfers();
    let splits = 0;
    const made: (readonly EntitlementLedger[])[] = [];
    const split = (): readonly EntitlementLedger[] => {
      splits++;
      const fragments: readonly EntitlementLedger[] = [];
      made.push(fragments);
      return fragments;
    };
    const first = t.prepare(1, 5, split);
    expect(first.transfer).toBe(1);
    expect(first.upThrough).toBe(5);
    expect(first.fragments).toBe(made[0]);
    expect(t.prepare(1, 5, split)).toBe(first);
    expect(splits).toBe(1);

    // The state changed, the seq did not (e.g. a merged remote delta): a new split, a new number.
    const second = t.prepare(2, 5, split);
    expect(second).not.toBe(first);
    expect(second).toMatchObject({ transfer: 2, upThrough: 5 });
    expect(second.fragments).toBe(made[1]);
    expect(splits).toBe(2);

    // The seq moved, the version did not: again a new one.
    const third = t.prepare(2, 6, split);
    expect(third).toMatchObject({ transfer: 3, upThrough: 6 });
    expect(splits).toBe(3);
    expect(t.prepare(2, 6, split)).toBe(third);

    // Back to an older pair: only the latest is cached, so it is prepared (and numbered) again.
    expect(t.prepare(1, 5, split)).toMatchObject({ transfer: 4, upThrough: 5 });
    expect(splits).toBe(4);
  });
});
