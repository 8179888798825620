/**
 * The enrolled roster (governed.md §3.8): the ordered transitions `{index, replica, enrolled}` that applied
 * `enroll` / `depart` acts produced, plus the applied index. Equal log prefixes give equal rosters and identical
 * `enrolledAt` answers on every peer.
 */
import type { ReplicaId } from "@heddle/ledger";
import type { LogIndex } from "../raft/types.ts";

/** One change of the roster, at the log index of the act that made it. */
export interface RosterTransition {
  readonly index: LogIndex;
  readonly replica: ReplicaId;
  readonly enrolled: boolean;
}

/** The roster as a peer's applied prefix sees it (governed.md §2.2). */
export interface RosterView {
  readonly appliedIndex: LogIndex;
  readonly enrolled: ReadonlySet<ReplicaId>;
  /** The enrolled set after every transition with `index ≤ i`; `RangeError` unless `0 ≤ i ≤ appliedIndex`. */
  enrolledAt(index: LogIndex): ReadonlySet<ReplicaId>;
}

/** Thrown when the roster is advanced out of order: a broken apply-loop invariant (the loop halts on it). */
export class RosterOrderError extends Error {
  override readonly name = "RosterOrderError";
}

/** The mutable roster a `ControlState` holds; changed only by the apply step. */
export class Roster implements RosterView {
  #applied: LogIndex = 0;
  readonly #transitions: RosterTransition[] = [];
  readonly #current = new Set<ReplicaId>();

  get appliedIndex(): LogIndex {
    return this.#applied;
  }

  get enrolled(): ReadonlySet<ReplicaId> {
    return new Set(this.#current);
  }

  /** Whether `replica` is enrolled at the applied index. */
  has(replica: ReplicaId): boolean {
    return this.#current.has(replica);
  }

  /** The transitions, in index order. */
  get transitions(): readonly RosterTransition[] {
    return this.#transitions;
  }

  /** Marks `index` applied; it must be exactly the next index (a repeat, gap or regression is an invariant break). */
  advance(index: LogIndex): void {
    if (index !== this.#applied + 1) throw new RosterOrderError(`roster advanced to ${index} after ${this.#applied}`);
    this.#applied = index;
  }

  /** Records an enrollment at the current applied index; false (nothing recorded) when already enrolled. */
  enroll(replica: ReplicaId): boolean {
    if (this.#current.has(replica)) return false;
    this.#current.add(replica);
    this.#transitions.push({ index: this.#applied, replica, enrolled: true });
    return true;
  }

  /** Records a departure at the current applied index; false (nothing recorded) when not enrolled. */
  depart(replica: ReplicaId): boolean {
    if (!this.#current.has(replica)) return false;
    this.#current.delete(replica);
    this.#transitions.push({ index: this.#applied, replica, enrolled: false });
    return true;
  }

  enrolledAt(index: LogIndex): ReadonlySet<ReplicaId> {
    if (typeof index !== "number") throw new TypeError("enrolledAt: index must be a number");
    if (!Number.isSafeInteger(index) || index < 0 || index > this.#applied) {
      throw new RangeError(`enrolledAt: index ${index} is outside 0 … ${this.#applied} (this peer has applied only that far)`);
    }
    const s = new Set<ReplicaId>();
    for (const t of this.#transitions) {
      if (t.index > index) break;
      if (t.enrolled) s.add(t.replica);
      else s.delete(t.replica);
    }
    return s;
  }

  /** Rebuilds a roster from its applied index and transitions (a snapshot); throws on an inconsistent list. */
  static restore(applied: LogIndex, transitions: readonly RosterTransition[]): Roster {
    const r = new Roster();
    let last = 0;
    for (const t of transitions) {
      if (t.index <= last || t.index > applied) throw new RosterOrderError(`roster transition at ${t.index} is out of order`);
      last = t.index;
      r.#applied = t.index;
      const changed = t.enrolled ? r.enroll(t.replica) : r.depart(t.replica);
      if (!changed) throw new RosterOrderError(`roster transition at ${t.index} changes nothing`);
    }
    r.#applied = applied;
    return r;
  }
}
