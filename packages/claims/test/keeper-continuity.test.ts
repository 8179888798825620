/**
 * Settling counts only time a peer watched (claims.md §3 "Settling": a peer acts only after it has been the keeper
 * *continuously* for SETTLING). A peer suspended without closing wakes with a stale copy of the slots: its first
 * renewal must not bridge the lapse of its own claim, and a gap in its looks longer than ALIVE restarts settling
 * whatever its stale copy says — otherwise it reported `mayAct`/`sure` at once while another peer was settled.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KEEPER_DEFAULTS, keeperState, lookKeeper, receiveKeeperSlot, renewKeeper } from "../src/index.ts";
import type { KeeperRule, KeeperSlot, KeeperState } from "../src/index.ts";

const S = 1_000;
const { aliveMs, settlingMs, renewEveryMs } = KEEPER_DEFAULTS;
const peer = (self: string, rule: KeeperRule): KeeperState => keeperState({ self, epoch: 1, rules: { r: rule } });

/** `a` and `b` running from 0 to `until`, renewing and exchanging slots every renewal period; `a` is where the person is. */
function bothRunning(rule: KeeperRule, until: number): { a: KeeperState; b: KeeperState } {
  let a = peer("a", rule);
  let b = peer("b", rule);
  for (let t = 0; t <= until; t += renewEveryMs) {
    let sa: KeeperSlot, sb: KeeperSlot;
    ({ state: a, slot: sa } = renewKeeper(a, "r", t, t === 0 ? { active: 0, take: true } : {}));
    ({ state: b, slot: sb } = renewKeeper(b, "r", t, t === 0 ? { active: 0 } : {}));
    a = receiveKeeperSlot(a, "b", sb, t).state;
    b = receiveKeeperSlot(b, "a", sa, t).state;
  }
  return { a, b };
}

describe("a peer waking from suspension settles again", () => {
  it("follows-you: a's claim lapsed while it slept and b settled; a's first renewal on waking does not make it act", () => {
    let { a, b } = bothRunning("follows-you", 180 * S);
    expect(lookKeeper(a, "r", 180 * S).view).toMatchObject({ keeper: "a", mayAct: true });
    // a sleeps from 180 s without closing; its claim lapses at 480 s and b, still running, takes over and settles
    for (let t = 181 * S; t <= 700 * S; t += S) {
      if (t % renewEveryMs === 0) b = renewKeeper(b, "r", t).state;
      b = lookKeeper(b, "r", t).state;
    }
    // ... but b is not sure: a never closed its claim, and a machine gone silent may still be acting (heard-from)
    expect(lookKeeper(b, "r", 700 * S).view).toMatchObject({ keeper: "b", mayAct: true, sure: false, unheard: ["a"] });
    // a wakes at 700 s and renews before any frame from b arrives: in its stale copy it is the only claimant
    const woke = renewKeeper(a, "r", 700 * S);
    expect(woke.view).toMatchObject({ keeper: "a", keeperSince: 700 * S, settled: false, mayAct: false, sure: false });
    // ... and it acts only after watching for SETTLING, by which time b's frames have long arrived
    let later = woke.state;
    for (let t = 700 * S + renewEveryMs; t < 700 * S + settlingMs; t += renewEveryMs) later = renewKeeper(later, "r", t).state;
    expect(lookKeeper(later, "r", 700 * S + settlingMs - 1).view.mayAct).toBe(false);
    expect(lookKeeper(later, "r", 700 * S + settlingMs).view.mayAct).toBe(true);
  });

  it("the same when a looks before it renews, and when it was suspended just past its claim's lapse", () => {
    const { a } = bothRunning("follows-you", 180 * S);
    // last renewal 180 s: the claim lapses at 480 s; a wakes at 481 s, a gap of 301 s
    expect(lookKeeper(a, "r", 481 * S).view).toMatchObject({ mayAct: false });
    expect(renewKeeper(a, "r", 481 * S).view).toMatchObject({ keeper: "a", keeperSince: 481 * S, mayAct: false });
  });

  it("a renewal that bridges a lapse inside a gap shorter than ALIVE restarts settling too (the look before the write)", () => {
    let { a } = bothRunning("follows-you", 0);
    a = lookKeeper(a, "r", 299 * S).state; // a looked at 299 s but did not renew since 0: its claim lapses at 300 s
    const woke = renewKeeper(a, "r", 301 * S).view; // gap 2 s, but the claim had lapsed: b kept the part meanwhile
    expect(woke).toMatchObject({ keeper: "a", keeperSince: 301 * S, mayAct: false });
  });

  it("stays-put: b took the part while a slept (a's unclosed claim still holds in a's stale copy); a does not act on waking", () => {
    let { a, b } = bothRunning("stays-put", 180 * S);
    expect(lookKeeper(a, "r", 180 * S).view).toMatchObject({ keeper: "a", mayAct: true });
    b = renewKeeper(b, "r", 200 * S, { take: true }).state;
    for (let t = 201 * S; t <= 700 * S; t += S) b = lookKeeper(b, "r", t).state;
    expect(lookKeeper(b, "r", 700 * S).view).toMatchObject({ keeper: "b", mayAct: true });
    const woke = renewKeeper(a, "r", 700 * S).view;
    expect(woke).toMatchObject({ keeper: "a", keeperSince: 700 * S, mayAct: false, sure: false });
  });

  it("property: a peer that keeps watching keeps its settling (looks ≤ ALIVE/2 apart, its claim renewed before it lapses)", () => {
    const half = aliveMs / 2;
    fc.assert(
      fc.property(fc.array(fc.record({ gap: fc.integer({ min: 1, max: half }), renew: fc.boolean() }), { maxLength: 40 }), (steps) => {
        let a = renewKeeper(peer("a", "follows-you"), "r", 0).state;
        let t = 0;
        let renewedAt = 0;
        for (const { gap, renew } of steps) {
          t += gap; // t - renewedAt < ALIVE: the last renewal was under ALIVE/2 before the previous step
          const mustRenew = renew || t - renewedAt >= half;
          const r = mustRenew ? renewKeeper(a, "r", t) : lookKeeper(a, "r", t);
          a = r.state;
          if (mustRenew) renewedAt = t;
          expect(r.view).toMatchObject({ keeper: "a", keeperSince: 0, mayAct: t >= settlingMs });
        }
      }),
    );
  });

  it("property: after any gap longer than ALIVE, whatever happened before, the next look or renewal starts settling again", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: aliveMs }), { maxLength: 10 }),
        fc.integer({ min: aliveMs + 1, max: 10 * aliveMs }),
        fc.constantFrom<KeeperRule>("follows-you", "stays-put"),
        fc.boolean(),
        (gaps, sleep, rule, renewFirst) => {
          let a = renewKeeper(peer("a", rule), "r", 0, { take: true }).state;
          let t = 0;
          for (const g of gaps) {
            t += g;
            a = renewKeeper(a, "r", t).state;
          }
          t += sleep;
          const view = renewFirst ? renewKeeper(a, "r", t).view : lookKeeper(a, "r", t).view;
          expect(view.mayAct).toBe(false);
          if (view.keeper !== undefined) expect(view.keeperSince).toBe(t);
        },
      ),
    );
  });
});
