import type { PeerId } from "@heddle/seam";

/**
 * What this replica keeps about one known peer (node.md §5.4–5.5): how far it acknowledged our stream
 * and whether it confirmed our stream's base, its digest grant, when it left membership, the handshake
 * digest being repeated until it answers, and when our unacked tail was last re-offered to it.
 */
export interface KnownPeer {
  acked: number;
  based: boolean;
  grant: boolean;
  absentSince: number | null;
  handshake: { nextAt: number; retries: number } | null;
  /** When our unacked tail was last sent to it (or its acks last moved). */
  tailAt: number;
}

/**
 * Anti-entropy's bookkeeping (node.md §5.4): the known peers and the membership view. A peer becomes
 * known when it first enters membership; it stays known while absent (pinning the delta buffer) until
 * `peerEvictionMs` passed. Which peer gets the periodic digest, and the handshakes of first contact,
 * re-entry and a peer's restart, are decided by the core from this state.
 */
export class PeerDirectory {
  readonly #known = new Map<PeerId, KnownPeer>();
  #members: ReadonlySet<PeerId> = new Set();
  #sorted: readonly PeerId[] = [];

  get members(): ReadonlySet<PeerId> {
    return this.#members;
  }

  /** Sorted current members (the order every broadcast uses). */
  sortedMembers(): readonly PeerId[] {
    return this.#sorted;
  }

  get(p: PeerId): KnownPeer | undefined {
    return this.#known.get(p);
  }

  /** Known peers, sorted by id. */
  sortedKnown(): PeerId[] {
    return [...this.#known.keys()].sort();
  }

  /**
   * Replaces the membership view; returns who entered (split into peers met for the first time and
   * known peers re-entering, each in id order) and who left.
   */
  setMembers(now: ReadonlySet<PeerId>, at: number): { met: PeerId[]; reentered: PeerId[]; left: PeerId[] } {
    const before = this.#members;
    this.#members = new Set(now);
    this.#sorted = [...now].sort();
    const met: PeerId[] = [];
    const reentered: PeerId[] = [];
    for (const p of this.#sorted) {
      if (before.has(p)) continue;
      const k = this.#known.get(p);
      if (k === undefined) {
        this.#known.set(p, { acked: 0, based: false, grant: false, absentSince: null, handshake: null, tailAt: at });
        met.push(p);
      } else {
        k.absentSince = null;
        reentered.push(p);
      }
    }
    const left: PeerId[] = [];
    for (const p of before) {
      if (now.has(p)) continue;
      left.push(p);
      const k = this.#known.get(p);
      if (k !== undefined && k.absentSince === null) k.absentSince = at;
    }
    return { met, reentered, left };
  }

  /** Forgets known peers absent for `evictionMs` or longer (§5.5). */
  evict(now: number, evictionMs: number): void {
    for (const [p, k] of this.#known) if (k.absentSince !== null && now - k.absentSince >= evictionMs) this.#known.delete(p);
  }

  /** The lowest seq acknowledged by every known peer (`seq` itself when none is known). */
  ackedByAll(seq: number): number {
    let min = seq;
    for (const k of this.#known.values()) if (k.acked < min) min = k.acked;
    return min;
  }

  /** Every known peer. */
  entries(): IterableIterator<[PeerId, KnownPeer]> {
    return this.#known.entries();
  }
}
