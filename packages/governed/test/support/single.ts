// One governed peer on a scripted single-member `StubRaft`, for the control-plane tests that need Raft to
// misbehave on cue (control-acceptance, governed-node-keys-and-gate).
import { expect } from "vitest";
import { heddleStatic, memoryStore, MemoryNetwork, seededRandom } from "@heddle/node";
import type { HeddleNode } from "@heddle/node";
import { VirtualTimers } from "@heddle/seam/testing";
import { heddleGoverned } from "../../src/index.ts";
import type { GovernedHeddleNode } from "../../src/index.ts";
import { g, r, testConfig, yieldTurn } from "./governed-cluster.ts";
import { StubRaft } from "./stub-raft.ts";

/** One governed peer on a `StubRaft`, with a helper static peer `x` on the same network to inject gossip. */
export class Single {
  readonly timers = new VirtualTimers();
  readonly net = new MemoryNetwork({ timers: this.timers, random: seededRandom(7), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 2] } });
  readonly raft: StubRaft;
  readonly gov: GovernedHeddleNode;
  #x: HeddleNode | null = null;

  /**
   * `o.log` runs on the stub before the governed node starts (a log a previous process left: commit entries with
   * `raft.commitRaw`, hold the replay back with `raft.replayTo`); `o.idempotencyWindow` is passed through.
   */
  constructor(incarnation = "inc-A", o: { log?: (raft: StubRaft) => void; idempotencyWindow?: number } = {}) {
    this.raft = new StubRaft("n1", this.timers);
    o.log?.(this.raft);
    this.gov = heddleGoverned({
      seam: this.net.join("n1"),
      self: r("n1"),
      root: g("root"),
      config: testConfig(this.timers, seededRandom(8), memoryStore()),
      raft: this.raft,
      incarnation,
      ...(o.idempotencyWindow === undefined ? {} : { idempotencyWindow: o.idempotencyWindow }),
    });
  }

  /** A static peer (empty genesis, as governed peers have) whose `controlSink().publish` gossips any patch. */
  get x(): HeddleNode {
    this.#x ??= heddleStatic({ seam: this.net.join("x"), self: r("x"), root: g("root"), supply: new Map(), topology: [], config: testConfig(this.timers, seededRandom(9), memoryStore()) });
    return this.#x;
  }

  async run(ms: number): Promise<void> {
    for (let t = 0; t < ms; t++) {
      this.timers.advanceBy(1);
      await yieldTurn();
    }
  }

  async settle<T>(p: Promise<T>, maxMs = 5_000): Promise<T> {
    let done = false;
    const q = p.finally(() => (done = true));
    q.catch(() => {});
    for (let t = 0; t < maxMs && !done; t++) await this.run(1);
    return q;
  }

  async until(cond: () => boolean, maxMs = 5_000): Promise<void> {
    for (let t = 0; t < maxMs && !cond(); t++) await this.run(1);
    expect(cond()).toBe(true);
  }

  async shutdown(): Promise<void> {
    await this.gov.shutdown();
    await this.#x?.shutdown();
  }
}

