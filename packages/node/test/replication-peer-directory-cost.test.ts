/**
 * The peer directory's cost contract (node.md §5.4; issue 19, anti-entropy.ts survivor): members are sorted
 * once per membership change, so the same view published again keeps the sorted list it had — the
 * broadcast order is not rebuilt for a view that did not change.
 */
import { describe, expect, it } from "vitest";
import { PeerDirectory } from "../src/replication/anti-entropy.ts";

describe("PeerDirectory: the same view again (node.md §5.4)", () => {
  it("reports nobody and keeps the sorted members and known peers it had; a new view re-sorts", () => {
    const d = new PeerDirectory();
    const view = new Set(["C", "A", "B"]);
    expect(d.setMembers(view, 0)).toEqual({ met: ["A", "B", "C"], reentered: [], left: [] });
    const members = d.sortedMembers();
    const known = d.sortedKnown();
    expect(members).toEqual(["A", "B", "C"]);
    expect(d.setMembers(view, 5)).toEqual({ met: [], reentered: [], left: [] });
    expect(d.sortedMembers()).toBe(members);
    expect(d.sortedKnown()).toBe(known);
    expect(d.members).toBe(view);
    const next = new Set(["A", "B"]);
    expect(d.setMembers(next, 6)).toEqual({ met: [], reentered: [], left: ["C"] });
    expect(d.sortedMembers()).toEqual(["A", "B"]);
    expect(d.peek("C")!.absentSince).toBe(6);
  });
});
