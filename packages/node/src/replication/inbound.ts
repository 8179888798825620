import type { PeerId } from "@heddle/seam";

/**
 * What this replica knows of one remote sender's delta stream (node.md §5.3): its incarnation, the
 * highest seq below which nothing is missing (`contig`), the seqs received beyond it (`above`), the
 * parts of split deltas still incomplete, whether this incarnation's base was confirmed (a digest
 * match or a full state), and three deadlines: the reorder grace before asking for newly missing seqs,
 * the retry that re-asks for the whole gap, and the coalesced ack.
 */
export interface Cursor {
  inc: number;
  contig: number;
  readonly above: Set<number>;
  readonly partial: Map<number, { parts: number; got: Set<number> }>;
  /**
   * Parts held for this sender: every `got` of `partial` plus the transfer's. Bounded by `maxTrackedSeqs`
   * (node.md §4.2: part tracking counts against it), so a sender announcing 2^53 parts cannot make the
   * receiver remember an unbounded number of part numbers.
   */
  partsHeld: number;
  based: boolean;
  /**
   * Highest seq already asked for, or held above the gap when it was asked, since the gap opened: an arrival
   * only asks for what is newly missing (§5.3 ⟨1.1⟩), never for the seq it follows, which is held.
   */
  requestedTo: number;
  graceAt: number | null;
  retryAt: number | null;
  ackAt: number | null;
  /** The latest full-state transfer being received from this sender. */
  transfer: { inc: number; transfer: number; parts: number; got: Set<number> } | null;
}

/** How a message's incarnation relates to the cursor. */
export type Adoption = "old" | "same" | "first" | "restart";

/** A request the cursors want sent: an ack, or a resend of a span. */
export type CursorAction =
  | { kind: "ack"; to: PeerId; inc: number; seq: number; based: boolean }
  | { kind: "resend"; to: PeerId; inc: number; from: number; to_: number };

/**
 * Every remote sender's cursor, and the gap and ack deadlines derived from them. Pure bookkeeping; the
 * core turns `due()` actions into messages. `due` and `nextDeadline` visit only the cursors with a
 * deadline set (a node hearing from 999 senders, one of them active, looks at one cursor per tick).
 */
export class InboundCursors {
  readonly #cursors = new Map<PeerId, Cursor>();
  /** Cursors that may have a deadline set (a superset: entries leave when `due` finds none). */
  readonly #armed = new Set<PeerId>();
  readonly #maxTracked: number;
  readonly #graceMs: number;
  readonly #retryMs: number;
  readonly #ackDelayMs: number;

  constructor(o: { maxTrackedSeqs: number; reorderGraceMs: number; resendRetryMs: number; ackDelayMs: number }) {
    this.#maxTracked = o.maxTrackedSeqs;
    this.#graceMs = o.reorderGraceMs;
    this.#retryMs = o.resendRetryMs;
    this.#ackDelayMs = o.ackDelayMs;
  }

  /** The cursor of `s` (created on first use, incarnation unknown). */
  of(s: PeerId): Cursor {
    let c = this.#cursors.get(s);
    if (c === undefined) {
      c = { inc: -1, contig: 0, above: new Set(), partial: new Map(), partsHeld: 0, based: false, requestedTo: 0, graceAt: null, retryAt: null, ackAt: null, transfer: null };
      this.#cursors.set(s, c);
    }
    return c;
  }

  /** Compares `inc` with the cursor and adopts it when newer (§5.3 steps 1–2). */
  adopt(s: PeerId, inc: number): Adoption {
    const c = this.of(s);
    if (inc < c.inc) return "old";
    if (inc === c.inc) return "same";
    const first = c.inc < 0;
    c.inc = inc;
    c.contig = 0;
    c.above.clear();
    c.partial.clear();
    c.partsHeld = 0;
    c.based = false;
    c.requestedTo = 0;
    c.graceAt = null;
    c.retryAt = null;
    c.ackAt = null;
    c.transfer = null;
    return first ? "first" : "restart";
  }

  /**
   * Records one part of delta `seq` (current incarnation). Returns "duplicate" for a seq already
   * counted, "partial" while parts are missing, "new" when the whole delta is in.
   */
  receive(s: PeerId, seq: number, part: number, parts: number): "duplicate" | "partial" | "new" {
    const c = this.of(s);
    if (seq <= c.contig || c.above.has(seq)) return "duplicate";
    if (parts > 1) {
      // a delta of more parts than can be tracked is joined but never counted: anti-entropy covers it
      if (parts > this.#maxTracked) return "partial";
      let p = c.partial.get(seq);
      if (p === undefined) {
        if (c.partial.size + c.above.size >= this.#maxTracked) this.#clearPartial(c);
        c.partial.set(seq, (p = { parts, got: new Set() }));
      }
      if (p.parts !== parts || p.got.has(part)) return "partial";
      if (c.partsHeld >= this.#maxTracked) {
        this.#clearPartial(c);
        c.partial.set(seq, (p = { parts, got: new Set() }));
      }
      p.got.add(part);
      c.partsHeld++;
      if (p.got.size < p.parts) return "partial";
      c.partial.delete(seq);
      c.partsHeld -= p.got.size;
    } else {
      // counted whole: an incomplete split copy of the same seq (a sender that split it once and not again)
      // would otherwise hold its parts against maxTrackedSeqs until the next clear, for a seq already counted
      const stale = c.partial.get(seq);
      if (stale !== undefined) {
        c.partial.delete(seq);
        c.partsHeld -= stale.got.size;
      }
    }
    c.above.add(seq);
    this.#advance(c);
    return "new";
  }

  /** Forgets every incomplete split delta (their values were joined already; only the counting is lost). */
  #clearPartial(c: Cursor): void {
    for (const p of c.partial.values()) c.partsHeld -= p.got.size;
    c.partial.clear();
  }

  /**
   * Starts or continues counting the parts of full-state `transfer` from `s`; true once all arrived.
   * Only the latest transfer is tracked, a newer one replaces it, and a transfer of more parts than
   * `maxTrackedSeqs` — or one that would take the parts held past it — is not counted (its values were
   * joined; the cursor resync it would give is left to anti-entropy).
   */
  transferPart(s: PeerId, m: { inc: number; transfer: number; parts: number; part: number }): boolean {
    const c = this.of(s);
    if (c.transfer === null || m.transfer > c.transfer.transfer) {
      if (c.transfer !== null) c.partsHeld -= c.transfer.got.size;
      c.transfer = { inc: m.inc, transfer: m.transfer, parts: m.parts, got: new Set() };
    }
    const t = c.transfer;
    if (t.transfer !== m.transfer || t.parts !== m.parts || t.got.has(m.part)) return false;
    if (m.parts > this.#maxTracked) return false;
    if (c.partsHeld >= this.#maxTracked) this.#clearPartial(c);
    // A defensive guard, unreachable while `partsHeld` counts only `partial` and the transfer: after #clearPartial the parts
    // held are this transfer's own, fewer than its parts (it completes when all are in), and those are ≤ maxTrackedSeqs.
    // Stryker disable next-line BooleanLiteral,ConditionalExpression,EqualityOperator: unreachable (above), so its result is never returned and `false` or `>` changes nothing; this also hides the killed `true` variant
    if (c.partsHeld >= this.#maxTracked) return false;
    t.got.add(m.part);
    c.partsHeld++;
    if (t.got.size < t.parts) return false;
    c.partsHeld -= t.got.size;
    c.transfer = null;
    return true;
  }

  #advance(c: Cursor): void {
    while (c.above.has(c.contig + 1)) {
      c.above.delete(c.contig + 1);
      c.contig++;
    }
  }

  /** Cursor resync to `upThrough` after a matching digest or a complete full state (§5.3). */
  resync(s: PeerId, upThrough: number): void {
    const c = this.of(s);
    c.based = true;
    // Stryker disable next-line EqualityOperator: `>=` adds only u = contig, where nothing can go: every seq held above is > contig + 1 and incomplete split deltas are only of seqs not yet counted (receive drops a counted seq's copy), and the advance is done; this also hides the killed `<=` variant
    if (upThrough > c.contig) {
      c.contig = upThrough;
      for (const q of c.above) if (q <= upThrough) c.above.delete(q);
      for (const [q, p] of c.partial) {
        if (q > upThrough) continue;
        c.partial.delete(q);
        c.partsHeld -= p.got.size;
      }
      this.#advance(c);
    }
  }

  /** Schedules an ack to `s` within the coalescing window (`now` for an immediate one). */
  ackSoon(s: PeerId, now: number, immediate = false): void {
    const c = this.of(s);
    const at = immediate ? now : now + this.#ackDelayMs;
    c.ackAt = c.ackAt === null ? at : Math.min(c.ackAt, at);
    this.#armed.add(s);
  }

  /** The ack owed to `s`, taken now (it rides on a delta going there), or null. */
  takeAck(s: PeerId): { inc: number; seq: number; based: boolean } | null {
    const c = this.#cursors.get(s);
    if (c === undefined || c.ackAt === null) return null;
    c.ackAt = null;
    return { inc: c.inc, seq: c.contig, based: c.based };
  }

  /** Updates the gap deadlines after a change to `s`'s cursor (§5.3 step 6 ⟨1.1⟩). */
  checkGap(s: PeerId, now: number): void {
    const c = this.of(s);
    if (c.above.size + c.partial.size > this.#maxTracked) {
      // Too much to track: keep contig and leave the rest to resends on the next arrival and anti-entropy.
      c.above.clear();
      this.#clearPartial(c);
    }
    if (c.above.size === 0) {
      c.graceAt = null;
      c.retryAt = null;
      c.requestedTo = Math.min(c.requestedTo, c.contig);
      return;
    }
    const top = this.#top(c);
    if (top - 1 > Math.max(c.contig, c.requestedTo)) c.graceAt ??= now + this.#graceMs;
    // nothing below the highest seq held is unasked, and that seq is held: the next arrival asks only beyond it
    else c.requestedTo = Math.max(c.requestedTo, top);
    c.retryAt ??= now + this.#retryMs;
    this.#armed.add(s);
  }

  #top(c: Cursor): number {
    let top = 0;
    // Stryker disable next-line EqualityOperator: on a tie top already equals q; this also hides the killed `<=` variant
    for (const q of c.above) if (q > top) top = q;
    return top;
  }

  /** Earliest deadline over every cursor, or null. */
  nextDeadline(): number | null {
    let t: number | null = null;
    for (const s of this.#armed) {
      const c = this.#cursors.get(s)!;
      // Stryker disable next-line EqualityOperator: on a tie t already equals c.graceAt; this also hides the killed `>=` variant
      if (c.graceAt !== null && (t === null || c.graceAt < t)) t = c.graceAt;
      // Stryker disable next-line EqualityOperator: on a tie t already equals c.retryAt; this also hides the killed `>=` variant
      if (c.retryAt !== null && (t === null || c.retryAt < t)) t = c.retryAt;
      // Stryker disable next-line EqualityOperator: on a tie t already equals c.ackAt; this also hides the killed `>=` variant
      if (c.ackAt !== null && (t === null || c.ackAt < t)) t = c.ackAt;
    }
    return t;
  }

  /** Actions whose deadline passed: acks, newly-missing resends after the grace, whole-gap retries. */
  due(now: number): CursorAction[] {
    const out: CursorAction[] = [];
    for (const s of this.#armed) {
      const c = this.#cursors.get(s)!;
      if (c.ackAt !== null && c.ackAt <= now) {
        c.ackAt = null;
        out.push({ kind: "ack", to: s, inc: c.inc, seq: c.contig, based: c.based });
      }
      if (c.above.size === 0) {
        c.graceAt = null;
        c.retryAt = null;
        // Stryker disable next-line ConditionalExpression,CallExpression: #armed only indexes the cursors that may hold a deadline; keeping one that holds none adds no action and no deadline (cost: one more cursor visited per call); this also hides the killed `true` variant
        if (c.ackAt === null) this.#armed.delete(s);
        continue;
      }
      const top = this.#top(c) - 1;
      if (c.retryAt !== null && c.retryAt <= now) {
        // Stryker disable next-line ConditionalExpression,EqualityOperator: always true: every seq held above is > contig + 1 (#advance), so max(above) − 1 > contig; this also hides the killed `false` and `<=` variants
        if (top > c.contig) {
          out.push({ kind: "resend", to: s, inc: c.inc, from: c.contig + 1, to_: top });
          c.requestedTo = Math.max(c.requestedTo, top + 1);
        }
        c.retryAt = now + this.#retryMs;
        c.graceAt = null;
      } else if (c.graceAt !== null && c.graceAt <= now) {
        const from = Math.max(c.contig, c.requestedTo) + 1;
        // Stryker disable next-line ConditionalExpression: always true: checkGap arms the grace only while max(above) − 1 > max(contig, requestedTo), and that stays so until it fires (requestedTo does not move meanwhile, max(above) does not fall while a seq is held, every held seq is > contig + 1); this also hides the killed `false` variant
        if (top >= from) {
          out.push({ kind: "resend", to: s, inc: c.inc, from, to_: top });
          c.requestedTo = top + 1; // top + 1 = max(above), held
        }
        c.graceAt = null;
      }
    }
    return out;
  }

  /** Per-sender view for diagnostics and tests. */
  snapshot(s: PeerId): Readonly<Cursor> | undefined {
    return this.#cursors.get(s);
  }
}
