/**
 * Anti-entropy's peer directory (node.md §5.4–5.5) on its own: who a membership change reports as met,
 * re-entered and left, what a known peer's record holds before and after it leaves, eviction at exactly
 * `peerEvictionMs`, and the lowest ack every known peer holds (what frees the delta buffer). The replica
 * suites reach these only through convergence, which a wrong split or a stale sorted list does not break
 * (issue 19: these were the directory's surviving and uncovered mutants).
 */
import { describe, expect, it } from "vitest";
import { PeerDirectory } from "../src/replication/anti-entropy.ts";

/** A membership view whose iteration order is deliberately not id order. */
const view = (...ids: string[]): ReadonlySet<string> => new Set(ids);

describe("peer directory: membership changes (node.md §5.4)", () => {
  it("a fresh directory has no members and no known peers", () => {
    const d = new PeerDirectory();
    expect(d.members.size).toBe(0);
    expect(d.sortedMembers()).toEqual([]);
    expect(d.sortedKnown()).toEqual([]);
    expect(d.peek("a")).toBeUndefined();
  });

  it("the same view again changes nothing and reports nobody", () => {
    const d = new PeerDirectory();
    const v = view("b", "a");
    d.setMembers(v, 10);
    expect(d.setMembers(v, 20)).toEqual({ met: [], reentered: [], left: [] });
    expect(d.members).toBe(v);
    expect(d.sortedKnown()).toEqual(["a", "b"]);
  });

  it("a new view reports only the peers met, each once, in id order; members and known peers are sorted", () => {
    const d = new PeerDirectory();
    expect(d.setMembers(view("c", "a", "b"), 10)).toEqual({ met: ["a", "b", "c"], reentered: [], left: [] });
    expect(d.sortedMembers()).toEqual(["a", "b", "c"]);
    expect(d.sortedKnown()).toEqual(["a", "b", "c"]);
    // Adding two: the members already there are not met again.
    expect(d.setMembers(view("c", "a", "b", "e", "d"), 20)).toEqual({ met: ["d", "e"], reentered: [], left: [] });
    expect(d.sortedMembers()).toEqual(["a", "b", "c", "d", "e"]);
    expect(d.sortedKnown()).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("peers leaving are reported in id order and stay known, absent since the change", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a", "b", "c", "d"), 10);
    expect(d.setMembers(view("d", "b"), 25)).toEqual({ met: [], reentered: [], left: ["a", "c"] });
    expect(d.sortedMembers()).toEqual(["b", "d"]);
    expect(d.sortedKnown()).toEqual(["a", "b", "c", "d"]);
    expect(d.peek("c")).toEqual({ acked: 0, based: true, grant: false, absentSince: 25, handshake: null, tailAt: 25 });
    expect(d.peek("b")).toEqual({ acked: 0, based: true, grant: false, absentSince: null, handshake: null, tailAt: 0 });
    // An absent peer has no fresh record to give: get returns the one it has.
    expect(d.get("c", 99)).toBe(d.get("c", 100));
    expect(d.get("c", 99)!.absentSince).toBe(25);
  });

  it("peers leaving are reported in id order whatever order the old view held them in", () => {
    const d = new PeerDirectory();
    d.setMembers(view("d", "c", "b", "a"), 0);
    expect(d.setMembers(view("b"), 5)).toEqual({ met: [], reentered: [], left: ["a", "c", "d"] });
  });

  it("a known peer coming back is re-entered, not met, and keeps its record; a stranger in the same change is met", () => {
    const d = new PeerDirectory();
    d.setMembers(view("b", "a"), 10);
    const k = d.get("a", 10)!;
    k.acked = 7;
    k.based = false;
    k.grant = true;
    d.setMembers(view("b"), 20);
    expect(d.peek("a")).toBe(k);
    expect(k.absentSince).toBe(20);
    expect(d.setMembers(view("z", "b", "a", "c"), 30)).toEqual({ met: ["c", "z"], reentered: ["a"], left: [] });
    expect(d.peek("a")).toBe(k);
    expect(k).toEqual({ acked: 7, based: false, grant: true, absentSince: null, handshake: null, tailAt: 10 });
    expect(d.sortedKnown()).toEqual(["a", "b", "c", "z"]);
    // No longer absent: leaving again reports it as left again (and not as a second absence).
    expect(d.setMembers(view("b", "c", "z"), 40)).toEqual({ met: [], reentered: [], left: ["a"] });
    expect(k.absentSince).toBe(40);
  });

  it("several peers re-entering are reported in id order", () => {
    const d = new PeerDirectory();
    d.setMembers(view("q", "p", "r"), 0);
    d.setMembers(view(), 5);
    expect(d.setMembers(view("r", "p", "q"), 6)).toEqual({ met: [], reentered: ["p", "q", "r"], left: [] });
  });

  it("a change that meets one peer and loses another refreshes the known list", () => {
    const d = new PeerDirectory();
    d.setMembers(view("m"), 0);
    expect(d.sortedKnown()).toEqual(["m"]);
    expect(d.setMembers(view("a"), 5)).toEqual({ met: ["a"], reentered: [], left: ["m"] });
    expect(d.sortedKnown()).toEqual(["a", "m"]);
  });

  it("a leaving member's existing record is kept, not replaced", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a"), 0);
    const k = d.get("a", 3)!;
    k.acked = 4;
    d.setMembers(view(), 9);
    expect(d.peek("a")).toBe(k);
    expect(d.peek("a")).toEqual({ acked: 4, based: true, grant: false, absentSince: 9, handshake: null, tailAt: 3 });
  });
});

describe("peer directory: records (node.md §5.4)", () => {
  it("a member without a record peeks as untouched (based, nothing acked, no grant, present); a stranger has nothing", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a"), 0);
    expect(d.peek("a")).toEqual({ acked: 0, based: true, grant: false, absentSince: null, handshake: null, tailAt: 0 });
    expect(d.peek("x")).toBeUndefined();
  });

  it("get writes a record for a member (tailAt = now, otherwise untouched) and returns the same one after; a stranger gets none", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a"), 0);
    const k = d.get("a", 42)!;
    expect(k).toEqual({ acked: 0, based: true, grant: false, absentSince: null, handshake: null, tailAt: 42 });
    expect(d.get("a", 50)).toBe(k);
    expect(d.peek("a")).toBe(k);
    expect(d.get("x", 42)).toBeUndefined();
    expect(d.peek("x")).toBeUndefined();
    // The stranger did not become known by being asked about.
    expect(d.sortedKnown()).toEqual(["a"]);
  });
});

describe("peer directory: eviction (node.md §5.5)", () => {
  it("an absent peer is forgotten once peerEvictionMs passed since it left, not a millisecond before", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a", "b", "c"), 0);
    d.get("b", 0)!.acked = 3;
    d.setMembers(view("a", "c"), 1_000);
    d.setMembers(view("a"), 1_500);
    d.evict(3_999, 3_000);
    expect(d.sortedKnown()).toEqual(["a", "b", "c"]);
    expect(d.peek("b")!.acked).toBe(3);
    expect(d.ackedByAll(9)).toBe(0); // c never acknowledged anything
    d.evict(4_000, 3_000);
    expect(d.peek("b")).toBeUndefined();
    expect(d.get("b", 4_000)).toBeUndefined();
    expect(d.sortedKnown()).toEqual(["a", "c"]);
    expect(d.peek("c")!.absentSince).toBe(1_500);
    d.evict(4_499, 3_000);
    expect(d.sortedKnown()).toEqual(["a", "c"]);
    d.evict(4_500, 3_000);
    expect(d.sortedKnown()).toEqual(["a"]);
    expect(d.peek("c")).toBeUndefined();
    // The forgotten peers no longer pin the buffer: only the member counts.
    d.get("a", 4_500)!.acked = 8;
    expect(d.ackedByAll(9)).toBe(8);
  });

  it("members are never evicted, however long ago they were met", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a"), 0);
    d.get("a", 0)!.acked = 2;
    d.evict(1_000_000, 10);
    expect(d.sortedKnown()).toEqual(["a"]);
    expect(d.peek("a")!.acked).toBe(2);
  });

  it("an evicted peer coming back is met afresh, with a new record", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a"), 0);
    const old = d.get("a", 0)!;
    old.acked = 5;
    old.based = false;
    d.setMembers(view(), 100);
    d.evict(200, 100);
    expect(d.setMembers(view("a"), 300)).toEqual({ met: ["a"], reentered: [], left: [] });
    expect(d.peek("a")).toEqual({ acked: 0, based: true, grant: false, absentSince: null, handshake: null, tailAt: 0 });
    expect(d.sortedKnown()).toEqual(["a"]);
  });
});

describe("peer directory: the lowest ack of every known peer (node.md §5.5)", () => {
  it("is seq itself when no peer is known", () => {
    expect(new PeerDirectory().ackedByAll(17)).toBe(17);
  });

  it("is 0 while a member has no record, else the lowest member ack, capped at seq", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a", "b"), 0);
    d.get("a", 0)!.acked = 6;
    expect(d.ackedByAll(10)).toBe(0);
    d.get("b", 0)!.acked = 9;
    expect(d.ackedByAll(10)).toBe(6);
    expect(d.ackedByAll(4)).toBe(4);
  });

  it("an absent known peer holds it down to its own ack; one above the rest does not raise it", () => {
    const d = new PeerDirectory();
    d.setMembers(view("a", "b", "c"), 0);
    d.get("a", 0)!.acked = 8;
    d.get("b", 0)!.acked = 3;
    d.get("c", 0)!.acked = 9;
    d.setMembers(view("a"), 10);
    expect(d.ackedByAll(12)).toBe(3);
    d.get("b", 10)!.acked = 11;
    expect(d.ackedByAll(12)).toBe(8);
    expect(d.ackedByAll(5)).toBe(5);
  });
});
