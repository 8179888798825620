/**
 * Keeper state at its edges (claims.md §3): a part nobody keeps is never settled and has no `keeperSince`;
 * heard-from counts only the other peers' unclosed claims on this very part, heard within `othersHeardMs`
 * inclusive, listed in peer order whatever order the state's slot map iterates in; a closed entry carries
 * `wroteUpTo` only when the peer said it; `close` closes this part's claim and no other, keeping what the
 * claim said; an unknown part is refused first, by name; a slot mentioning a part without a rule is still
 * accepted. Stryker survivors of the seventeenth session (helper AF).
 */
import { describe, expect, it } from "vitest";
import { closeKeeper, KEEPER_DEFAULTS, keeperState, lookKeeper, receiveKeeperSlot, renewKeeper } from "../src/index.ts";
import type { KeeperSlot, KeeperState } from "../src/index.ts";
import { thrown } from "./support/thrown.ts";

const { settlingMs, othersHeardMs } = KEEPER_DEFAULTS;
const RULES = { reminders: "follows-you", invoices: "stays-put" } as const;
const fresh = (self: string, rules: Record<string, "follows-you" | "stays-put"> = RULES): KeeperState =>
  keeperState({ self, epoch: 1, rules });
/**
 * `state` watched (looked at, and with `renew` its own claim renewed) every `renewEveryMs` from `from` up to and
 * including `to`, as a running node does: settling counts only time a peer watched (a gap past ALIVE restarts it).
 */
function watched(state: KeeperState, part: string, from: number, to: number, renew = false): KeeperState {
  for (let t = from; ; t = Math.min(to, t + KEEPER_DEFAULTS.renewEveryMs)) {
    if (renew) state = renewKeeper(state, part, t).state;
    state = lookKeeper(state, part, t).state;
    if (t === to) return state;
  }
}

describe("settling without a keeper", () => {
  it("a part nobody keeps is never settled, however long it stays unkept, and has no keeperSince", () => {
    const first = lookKeeper(fresh("a"), "invoices", 0);
    expect(first.view).toMatchObject({ keeper: undefined, claim: undefined, settled: false, keeps: false, mayAct: false, sure: false });
    expect(first.view.keeperSince).toBeUndefined();
    const later = lookKeeper(first.state, "invoices", 10 * settlingMs).view;
    expect(later.keeper).toBeUndefined();
    expect(later.settled).toBe(false);
    expect(later.keeperSince).toBeUndefined();
  });

  it("after the only keeper closes, the part is unkept: not settled, no keeperSince", () => {
    let a = renewKeeper(fresh("a"), "reminders", 0).state;
    a = lookKeeper(a, "reminders", settlingMs).state;
    const closed = closeKeeper(a, "reminders", settlingMs + 1);
    expect(closed.view.keeper).toBeUndefined();
    expect(closed.view.keeperSince).toBeUndefined();
    const view = lookKeeper(closed.state, "reminders", 5 * settlingMs).view;
    expect([view.keeper, view.keeperSince, view.settled, view.mayAct]).toEqual([undefined, undefined, false, false]);
  });
});

describe("heard-from", () => {
  /** `a` keeps invoices (taken at 0); `b` renewed invoices at 10 and `a` heard it at 10. */
  function keeperAndOther(): KeeperState {
    const a = renewKeeper(fresh("a"), "invoices", 0, { take: true }).state;
    const rb = renewKeeper(fresh("b"), "invoices", 10);
    return receiveKeeperSlot(a, "b", rb.slot, 10).state;
  }

  it("a peer heard exactly othersHeardMs ago still counts as heard; one millisecond later it does not", () => {
    const a = keeperAndOther();
    expect(lookKeeper(a, "invoices", 10 + othersHeardMs).view).toMatchObject({ mayAct: true, unheard: [], sure: true });
    expect(lookKeeper(a, "invoices", 10 + othersHeardMs + 1).view).toMatchObject({ mayAct: true, unheard: ["b"], sure: false });
  });

  it("a closed claim needs no hearing from: its peer holds nothing", () => {
    let a = renewKeeper(fresh("a"), "invoices", 0, { take: true }).state;
    const b = renewKeeper(fresh("b"), "invoices", 10).state;
    a = receiveKeeperSlot(a, "b", closeKeeper(b, "invoices", 20).slot, 20).state;
    const view = lookKeeper(watched(a, "invoices", 20, 20 + 10 * othersHeardMs), "invoices", 20 + 10 * othersHeardMs).view;
    expect(view).toMatchObject({ keeper: "a", mayAct: true, unheard: [], sure: true });
    expect(view.closed).toStrictEqual([{ peer: "b", closedAt: 20 }]);
  });

  it("a claimant that went silent without closing is waited for until UNCLOSED after its last renewal, whatever the rule", () => {
    const { unclosedMs, aliveMs } = KEEPER_DEFAULTS;
    // stays-put: an unclosed silent claim holds for UNCLOSED after its last renewal (the machine may still be numbering);
    // a keeps renewing its own claim, b went silent at 10
    const a = watched(keeperAndOther(), "invoices", 10, 10 + unclosedMs - 1, true);
    const at = (t: number) => lookKeeper(renewKeeper(a, "invoices", t).state, "invoices", t).view;
    expect(at(10 + unclosedMs - 1)).toMatchObject({ keeper: "a", unheard: ["b"], sure: false });
    expect(at(10 + unclosedMs)).toMatchObject({ keeper: "a", unheard: [], sure: true });
    // follows-you: b's claim stops holding at ALIVE (a keeps the part either way), but b never closed it — it may
    // only have lost the link and still keep the part in its own view — so a is not sure until UNCLOSED either
    let f = renewKeeper(fresh("a"), "reminders", 0, { active: 5 }).state;
    f = receiveKeeperSlot(f, "b", renewKeeper(fresh("b"), "reminders", 10, { active: 0 }).slot, 10).state;
    f = watched(f, "reminders", 10, 10 + unclosedMs - 1, true);
    const seen = (t: number) => lookKeeper(renewKeeper(f, "reminders", t, { active: t }).state, "reminders", t).view;
    expect(seen(10 + aliveMs)).toMatchObject({ keeper: "a", unheard: ["b"], sure: false });
    expect(seen(10 + unclosedMs - 1)).toMatchObject({ keeper: "a", unheard: ["b"], sure: false });
    expect(seen(10 + unclosedMs)).toMatchObject({ keeper: "a", unheard: [], sure: true });
  });

  it("two follows-you peers cut off from each other for longer than ALIVE + SETTLING are never both sure", () => {
    // a and b hear each other at 0; the person is at b. Then the link is cut: each keeps renewing its own claim and
    // looking, neither hears the other. Past ALIVE each sees the other's claim lapse and itself keep the part.
    const { aliveMs, renewEveryMs } = KEEPER_DEFAULTS;
    let a = renewKeeper(fresh("a"), "reminders", 0, { active: 0 });
    let b = renewKeeper(fresh("b"), "reminders", 0, { active: 1 });
    let sa = receiveKeeperSlot(a.state, "b", b.slot, 0).state;
    let sb = receiveKeeperSlot(b.state, "a", a.slot, 0).state;
    for (let t = renewEveryMs; t <= aliveMs + 3 * settlingMs; t += renewEveryMs) {
      a = renewKeeper(sa, "reminders", t);
      b = renewKeeper(sb, "reminders", t, { active: t });
      sa = a.state;
      sb = b.state;
      expect([a.view.sure && b.view.sure, t]).toStrictEqual([false, t]);
    }
    // each may act in its own view (no agreement is promised without hearing), but neither is sure
    expect([a.view.mayAct, b.view.mayAct, a.view.unheard, b.view.unheard]).toStrictEqual([true, true, ["b"], ["a"]]);
  });

  it("peers that settled apart are not sure the moment they hear each other: each waits to hear the other for SETTLING", () => {
    // a and b claim reminders at 0 but cannot hear each other: each keeps the part in its own view and settles
    const { renewEveryMs } = KEEPER_DEFAULTS;
    let a = renewKeeper(fresh("a"), "reminders", 0, { active: 0 });
    let b = renewKeeper(fresh("b"), "reminders", 0, { active: 1 });
    let aBefore = a.slot;
    for (let t = renewEveryMs; t <= 10 * renewEveryMs; t += renewEveryMs) {
      aBefore = a.slot;
      a = renewKeeper(a.state, "reminders", t, t === 10 * renewEveryMs ? { active: t } : {}); // the person comes to a
      b = renewKeeper(b.state, "reminders", t);
    }
    const heal = 10 * renewEveryMs;
    // the link heals: a hears b's latest slot, b hears the copy of a's slot from before the person came to a
    let sa = receiveKeeperSlot(a.state, "b", b.slot, heal).state;
    let sb = receiveKeeperSlot(b.state, "a", aBefore, heal).state;
    const va = lookKeeper(sa, "reminders", heal + 1).view;
    const vb = lookKeeper(sb, "reminders", heal + 1).view;
    // each is keeper in its own view, settled long ago, and has heard the other just now — but neither is sure yet
    expect([va.keeper, va.mayAct, va.unheard, vb.keeper, vb.mayAct, vb.unheard]).toStrictEqual(["a", true, [], "b", true, []]);
    expect([va.sure, vb.sure]).toStrictEqual([false, false]);
    // a's latest slot reaches b; once they have heard each other for SETTLING, only a is sure
    sb = receiveKeeperSlot(sb, "a", a.slot, heal + 2).state;
    sa = receiveKeeperSlot(sa, "b", renewKeeper(b.state, "reminders", heal + renewEveryMs).slot, heal + renewEveryMs).state;
    sb = renewKeeper(sb, "reminders", heal + renewEveryMs).state;
    expect(lookKeeper(sa, "reminders", heal + settlingMs).view).toMatchObject({ keeper: "a", sure: true });
    expect(lookKeeper(sb, "reminders", heal + settlingMs).view).toMatchObject({ keeper: "a", sure: false });
  });

  it("only claims on this part count: a peer claiming another part is not waited for", () => {
    let a = renewKeeper(fresh("a"), "invoices", 0, { take: true }).state;
    const rb = renewKeeper(fresh("b"), "reminders", 10);
    const cb = closeKeeper(rb.state, "reminders", 20, 7);
    a = watched(receiveKeeperSlot(a, "b", rb.slot, 10).state, "invoices", 10, 10 + 10 * othersHeardMs);
    let view = lookKeeper(a, "invoices", 10 + 10 * othersHeardMs).view;
    expect(view).toMatchObject({ keeper: "a", unheard: [], sure: true });
    expect(view.closed).toStrictEqual([]);
    // nor does another part's closed claim appear among this part's closed claims
    a = receiveKeeperSlot(a, "b", cb.slot, 20).state;
    view = lookKeeper(a, "invoices", 30).view;
    expect(view.closed).toStrictEqual([]);
    expect(lookKeeper(a, "reminders", 30).view.closed).toStrictEqual([{ peer: "b", closedAt: 20, wroteUpTo: 7 }]);
  });

  it("lists the unheard in peer order, whatever order the state's slot map iterates in", () => {
    const a = renewKeeper(fresh("a"), "invoices", 0, { take: true }).state;
    const own = a.slots.get("a");
    const sb = renewKeeper(fresh("b"), "invoices", 10).slot;
    const sc = renewKeeper(fresh("c"), "invoices", 10).slot;
    if (own === undefined) throw new Error("renewKeeper wrote no own slot");
    // a caller that keeps the slots itself may hand them back in any order (KeeperState is plain data)
    const handMade: KeeperState = { ...a, slots: new Map<string, KeeperSlot>([["c", sc], ["b", sb], ["a", own]]) };
    expect(lookKeeper(handMade, "invoices", settlingMs).view).toMatchObject({ keeper: "a", unheard: ["b", "c"], sure: false });
  });

  it("lists the closed claims in peer order too, whatever order the state's slot map iterates in", () => {
    const a = renewKeeper(fresh("a"), "invoices", 0, { take: true }).state;
    const own = a.slots.get("a");
    const sb = closeKeeper(fresh("b"), "invoices", 10, 1).slot;
    const sc = closeKeeper(fresh("c"), "invoices", 20, 2).slot;
    if (own === undefined) throw new Error("renewKeeper wrote no own slot");
    const handMade: KeeperState = { ...a, slots: new Map<string, KeeperSlot>([["c", sc], ["b", sb], ["a", own]]) };
    expect(lookKeeper(handMade, "invoices", settlingMs).view.closed).toStrictEqual([
      { peer: "b", closedAt: 10, wroteUpTo: 1 },
      { peer: "c", closedAt: 20, wroteUpTo: 2 },
    ]);
  });
});

describe("close", () => {
  it("closes this part's claim and no other, keeping what the claim said", () => {
    let a = fresh("a");
    a = renewKeeper(a, "invoices", 100, { take: true, active: 90, wroteUpTo: 5 }).state;
    a = renewKeeper(a, "reminders", 110, { active: 105 }).state;
    const c = closeKeeper(a, "reminders", 200);
    expect(c.slot.claims).toStrictEqual([
      { part: "invoices", peer: "a", claimedAt: 100, renewedAt: 100, activeAt: 90, takenAt: 100, wroteUpTo: 5 },
      { part: "reminders", peer: "a", claimedAt: 110, renewedAt: 200, activeAt: 105, closedAt: 200 },
    ]);
    expect(c.view).toMatchObject({ part: "reminders", keeper: undefined, closed: [{ peer: "a", closedAt: 200 }] });
    const d = closeKeeper(c.state, "invoices", 300, 12);
    expect(d.slot.claims[0]).toStrictEqual({
      part: "invoices",
      peer: "a",
      claimedAt: 100,
      renewedAt: 300,
      activeAt: 90,
      takenAt: 100,
      closedAt: 300,
      wroteUpTo: 12,
    });
  });

  it("closing a part never claimed writes a claim closed at once", () => {
    const c = closeKeeper(fresh("a"), "invoices", 50, 3);
    expect(c.slot.claims).toStrictEqual([{ part: "invoices", peer: "a", claimedAt: 50, renewedAt: 50, activeAt: 50, closedAt: 50, wroteUpTo: 3 }]);
  });
});

describe("parts without a rule", () => {
  it("renew, close and look name the unknown part first, whatever else is wrong", () => {
    const a = fresh("a");
    const E = 'RangeError: no rule for part "payroll"';
    expect(thrown(() => lookKeeper(a, "payroll", 0))).toBe(E);
    expect(thrown(() => renewKeeper(a, "payroll", -1))).toBe(E);
    expect(thrown(() => closeKeeper(a, "payroll", -1))).toBe(E);
    expect(thrown(() => renewKeeper(a, "", 0))).toBe('RangeError: no rule for part ""');
    expect(thrown(() => closeKeeper(a, "", 0))).toBe('RangeError: no rule for part ""');
  });

  it("a slot that also claims a part this peer has no rule for is accepted, and its known parts count", () => {
    const b = fresh("b", { invoices: "stays-put", payroll: "stays-put" });
    let rb = renewKeeper(b, "payroll", 5);
    rb = renewKeeper(rb.state, "invoices", 10);
    const received = receiveKeeperSlot(fresh("a"), "b", rb.slot, 10);
    expect(received.accepted).toBe(true);
    expect(received.why).toBeUndefined();
    expect(received.state.slots.get("b")).toBe(rb.slot);
    expect(lookKeeper(received.state, "invoices", 10 + settlingMs).view).toMatchObject({ keeper: "b", keeperSince: 10, settled: true });
  });

  it("an accepted copy says so, a stale one too (it still counts as hearing from its author)", () => {
    const rb = renewKeeper(fresh("b"), "invoices", 10);
    const once = receiveKeeperSlot(fresh("a"), "b", rb.slot, 10);
    expect(once).toStrictEqual({ state: once.state, accepted: true });
    const again = receiveKeeperSlot(once.state, "b", rb.slot, 20);
    expect(again).toStrictEqual({ state: again.state, accepted: true });
    expect(again.state.heard.get("b")).toBe(20);
  });
});
