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
 * What a known peer without a record of its own holds: nothing acknowledged, nothing to confirm (a peer
 * met with nothing to announce is based at once; a handshake always writes a record), no grant, present.
 */
const UNTOUCHED: Readonly<KnownPeer> = Object.freeze({ acked: 0, based: true, grant: false, absentSince: null, handshake: null, tailAt: 0 });

/**
 * Anti-entropy's bookkeeping (node.md §5.4): the known peers and the membership view. A peer becomes
 * known when it first enters membership; it stays known while absent (pinning the delta buffer) until
 * `peerEvictionMs` passed. Which peer gets the periodic digest, and the handshakes of first contact,
 * re-entry and a peer's restart, are decided by the core from this state.
 *
 * Meeting a peer costs no allocation: the members are the seam's own (immutable) view, held by reference,
 * and a known peer gets a {@link KnownPeer} record only when something is written about it (an ack, a
 * handshake, a delta sent, its departure). A node that meets 999 peers and hears from one of them keeps one
 * record, not 999 — at 1,000 peers that is the difference between 10⁶ objects and 10³ per mesh.
 */
export class PeerDirectory {
  /** Records of known peers that have one: every absent known peer, and members something was written about. */
  readonly #records = new Map<PeerId, KnownPeer>();
  /** Known peers absent from membership (each has a record with `absentSince` set). */
  readonly #absent = new Set<PeerId>();
  #members: ReadonlySet<PeerId> = new Set();
  #sortedMembers: readonly PeerId[] | null = [];
  #sortedKnown: readonly PeerId[] | null = [];

  /** The current membership view (the set the seam published; never modified). */
  get members(): ReadonlySet<PeerId> {
    return this.#members;
  }

  /** Sorted current members (the order every broadcast uses); sorted once per membership change. */
  sortedMembers(): readonly PeerId[] {
    return (this.#sortedMembers ??= [...this.#members].sort());
  }

  /** Known peers, sorted by id; sorted once per change of the known set. */
  sortedKnown(): readonly PeerId[] {
    return (this.#sortedKnown ??= [...this.#members, ...this.#absent].sort());
  }

  /** The record of known peer `p`, created (`tailAt = now`) if it has none; undefined if `p` is not known. */
  get(p: PeerId, now: number): KnownPeer | undefined {
    const r = this.#records.get(p);
    if (r !== undefined) return r;
    if (!this.#members.has(p)) return undefined;
    const k: KnownPeer = { ...UNTOUCHED, tailAt: now };
    this.#records.set(p, k);
    return k;
  }

  /** What is known about `p` without creating a record; undefined if `p` is not known. */
  peek(p: PeerId): Readonly<KnownPeer> | undefined {
    return this.#records.get(p) ?? (this.#members.has(p) ? UNTOUCHED : undefined);
  }

  /**
   * Replaces the membership view with `now` (kept by reference: the caller never modifies it); returns
   * who entered (split into peers met for the first time and known peers re-entering, each in id order)
   * and who left. Costs O(|before| + |now|) lookups and no allocation per unchanged or newly met member.
   */
  setMembers(now: ReadonlySet<PeerId>, at: number): { met: PeerId[]; reentered: PeerId[]; left: PeerId[] } {
    const before = this.#members;
    if (now === before) return { met: [], reentered: [], left: [] };
    const met: PeerId[] = [];
    const reentered: PeerId[] = [];
    for (const p of now) {
      if (before.has(p)) continue;
      if (this.#absent.delete(p)) {
        this.#records.get(p)!.absentSince = null;
        reentered.push(p);
      } else {
        met.push(p);
        this.#sortedKnown = null; // only a peer met changes the known set (leaving and re-entering move one within it)
      }
    }
    const left: PeerId[] = [];
    for (const p of before) {
      if (now.has(p)) continue;
      left.push(p);
      let k = this.#records.get(p);
      if (k === undefined) this.#records.set(p, (k = { ...UNTOUCHED, tailAt: at }));
      k.absentSince = at;
      this.#absent.add(p);
    }
    this.#members = now;
    this.#sortedMembers = null;
    met.sort();
    reentered.sort();
    left.sort();
    return { met, reentered, left };
  }

  /** Forgets known peers absent for `evictionMs` or longer (§5.5). */
  evict(now: number, evictionMs: number): void {
    for (const p of this.#absent) {
      const k = this.#records.get(p)!;
      if (now - k.absentSince! < evictionMs) continue;
      this.#absent.delete(p);
      this.#records.delete(p);
      this.#sortedKnown = null;
    }
  }

  /** The lowest seq acknowledged by every known peer (`seq` itself when none is known). */
  ackedByAll(seq: number): number {
    let min = seq;
    for (const p of this.#members) {
      const k = this.#records.get(p);
      if (k === undefined) return 0;
      min = Math.min(min, k.acked);
    }
    for (const p of this.#absent) {
      min = Math.min(min, this.#records.get(p)!.acked);
    }
    return min;
  }
}
