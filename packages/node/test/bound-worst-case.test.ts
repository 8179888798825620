import { describe, expect, it } from "vitest";
import { MemoryNetwork, heddleStatic, memoryStore, seededRandom, type HeddleConfig } from "../src/index.ts";
import { VirtualTimers } from "../src/testing.ts";
import { FLAT, g, r } from "./node-sim.ts";

// node.md §11's configured worst case n·E + q, against §12 ("construction validates every field and throws a
// RangeError naming it") — review s28, finding 5: a static node accepted an E whose bound left int64 for its own
// roster, and boundMetrics() then threw LedgerOverflowError on every call.
const INT64_MAX = (1n << 63n) - 1n;

function start(supply: [string, bigint][], maxHoldingsPerPeer: bigint, quantum = 10n) {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(1) });
  const config: HeddleConfig = { policy: { quantum }, maxHoldingsPerPeer, timers, random: seededRandom(2), store: memoryStore() };
  const make = () =>
    heddleStatic({ seam: net.join("a"), self: r("a"), root: g("root"), supply: new Map(supply.map(([k, v]) => [r(k), v])), topology: supply.length === 0 ? [] : FLAT, config });
  return { timers, net, make };
}

function refusal(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error("heddleStatic accepted the configuration");
}

describe("heddleStatic refuses a maxHoldingsPerPeer whose worst case n·E + q leaves int64 for its roster", () => {
  it("2 roster peers, E = 2^62, q = 10: RangeError naming maxHoldingsPerPeer and the largest value it may take", () => {
    const e = refusal(start([["a", 100n], ["b", 100n]], 1n << 62n).make);
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toMatch(/^HeddleConfig\.maxHoldingsPerPeer is 4611686018427387904: with 2 roster peers/);
    expect(e.message).toContain(`set maxHoldingsPerPeer to at most ${(INT64_MAX - 10n) / 2n}`);
  });

  it("the largest allowed value starts, and its bound is reported exactly", async () => {
    const largest = (INT64_MAX - 10n) / 2n;
    const node = start([["a", 100n], ["b", 100n]], largest).make();
    const m = node.boundMetrics(g("root"));
    expect(m).toMatchObject({ roster: 2, configuredWorstCase: 2n * largest + 10n, isConsistent: true });
    await node.shutdown();
    expect(refusal(start([["a", 100n], ["b", 100n]], largest + 1n).make)).toBeInstanceOf(RangeError);
  });

  it("a quantum that leaves no room for any E is named instead", () => {
    const e = refusal(start([["a", 100n], ["b", 100n], ["c", 0n]], 1n, INT64_MAX - 1n).make);
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toMatch(/^HeddleConfig\.policy\.quantum is 9223372036854775806: with 3 roster peers/);
    expect(e.message).toContain(`set the quantum to at most ${INT64_MAX - 3n}`);
  });
});

describe("boundMetrics once more peers count than the configuration was checked for: saturates, never throws", () => {
  it("a governed start (n = 1 at construction) with the largest E, then a second peer appears", async () => {
    const s = start([], INT64_MAX - 10n);
    const node = s.make();
    expect(node.boundMetrics(g("root"))).toMatchObject({ roster: 1, configuredWorstCase: INT64_MAX, isConsistent: true });
    s.net.join("b"); // b is in a's peers from now on: it counts in R (node.md §11)
    s.timers.advanceBy(10);
    expect(node.boundMetrics(g("root"))).toMatchObject({ roster: 2, configuredWorstCase: INT64_MAX, currentBound: 10n, isConsistent: true });
    node.controlSink().onEnrolled(r("c")); // governed.md enrols a third
    expect(node.boundMetrics(g("root"))).toMatchObject({ roster: 3, configuredWorstCase: INT64_MAX, isConsistent: true });
    await node.shutdown();
  });

  it("a static peer whose roster is met by a stranger on the seam", async () => {
    const largest = INT64_MAX - 10n; // one roster peer: 1·E + q = 2^63 − 1 exactly
    const s = start([["a", 100n]], largest);
    const node = s.make();
    s.net.join("stranger");
    s.timers.advanceBy(10);
    const m = node.boundMetrics(g("root"));
    expect(m).toMatchObject({ roster: 2, configuredWorstCase: INT64_MAX, currentBound: 110n, isConsistent: true });
    await node.shutdown();
  });
});
