/**
 * The seeded faulty network the Raft simulations (`simulation.ts`, `claims-simulation.ts`) share: who can reach
 * whom (a two-sided partition plus one-way cuts), and what happens to a frame on a reachable link (dropped,
 * duplicated, each copy delayed by its own draw, so copies reorder). Every delivery draw comes from the one
 * generator the network is given, in a fixed order (drop, duplicate, then one delay per copy), so a seed drives
 * the same deliveries every run. Settling turns loss and duplication off; delays stay.
 */

/** A fault rate profile of the network. */
export interface NetworkFaults {
  readonly dropRate: number;
  readonly dupRate: number;
  /** Inclusive bounds of a copy's delay, in virtual milliseconds. */
  readonly delayMs: readonly [number, number];
}

/** Reachability plus seeded delivery faults between named nodes. */
export class SimNetwork {
  readonly #faults: NetworkFaults;
  readonly #random: () => number;
  /** Side of the partition each node is on; absent means side 0. */
  group = new Map<string, number>();
  /** One-way cuts, as `from>to`. */
  readonly cuts = new Set<string>();
  /** While settling, no frame is dropped or duplicated (liveness is asserted only once every fault is gone). */
  settling = false;

  constructor(faults: NetworkFaults, random: () => number) {
    this.#faults = faults;
    this.#random = random;
  }

  /** Whether a partition or a cut keeps `from`'s frames from reaching `to`. */
  blocked(from: string, to: string): boolean {
    return this.cuts.has(`${from}>${to}`) || (this.group.get(from) ?? 0) !== (this.group.get(to) ?? 0);
  }

  /** Removes every partition and cut. */
  heal(): void {
    this.group = new Map();
    this.cuts.clear();
  }

  /**
   * Splits the nodes: with chance `cutChance` one random one-way cut (none when both ends draw the same node),
   * otherwise a random two-sided partition. Draws from `r`; returns the trace line naming what it did.
   */
  splitOrCut(r: () => number, ids: readonly string[], cutChance: number): string {
    if (r() < cutChance) {
      const a = ids[Math.floor(r() * ids.length)]!;
      const b = ids[Math.floor(r() * ids.length)]!;
      if (a !== b) this.cuts.add(`${a}>${b}`);
      return `CUT ${a}>${b}`;
    }
    this.group = new Map(ids.map((id) => [id, Math.floor(r() * 2)]));
    return `PARTITION ${JSON.stringify([...this.group])}`;
  }

  /**
   * Sends one frame over the link `from`→`to`: nothing when the link is blocked or the frame is dropped, else
   * `schedule(delay)` once per copy. The receiver should check `blocked` again on arrival.
   */
  transmit(from: string, to: string, schedule: (delay: number) => void): void {
    if (this.blocked(from, to)) return;
    const r = this.#random;
    if (r() < (this.settling ? 0 : this.#faults.dropRate)) return;
    const copies = r() < (this.settling ? 0 : this.#faults.dupRate) ? 2 : 1;
    const [lo, hi] = this.#faults.delayMs;
    for (let c = 0; c < copies; c++) schedule(lo + Math.floor(r() * (hi - lo + 1)));
  }
}
