import { DEMAND_NONE, type Demand } from "@heddle/policy";
import { canonicalBytes } from "./canonical-json.ts";
import type { RejectionCounter } from "./rejection.ts";
import type { PeerId, Seam } from "@heddle/seam";
import type { Timers } from "@heddle/seam";
import {
  amountField, arrayField, exactKeys, idField, literalField, MAX_ID_LENGTH, readEnvelope, readSchema, schemaRequire, type WireRead,
} from "./wire-schema.ts";

/** Demand-board limits (node.md §12). */
export interface DemandBoardConfig {
  demandTtlMs: number;
  maxDemandEntries: number;
  maxFrameBytes: number;
}

/** node.md §12 defaults for the demand board. */
export const DEMAND_BOARD_DEFAULTS: DemandBoardConfig = { demandTtlMs: 30_000, maxDemandEntries: 4_096, maxFrameBytes: 1_048_576 };

/** A demand slot that would break one of the board's limits; the slot is left as it was. */
export class DemandLimitError extends RangeError {
  override readonly name = "DemandLimitError";
  /** The limit the slot would break. */
  readonly limit: "maxDemandEntries" | "maxFrameBytes";
  /** Its value. */
  readonly value: number;
  constructor(limit: "maxDemandEntries" | "maxFrameBytes", value: number, message: string) {
    super(message);
    this.limit = limit;
    this.value = value;
  }
}

/** The `board` message: one peer's whole slot (node.md §6). */
export interface BoardMessage {
  kind: "board";
  replica: string;
  clock: bigint;
  entries: [edge: string, demand: Demand][];
}

interface Slot {
  clock: bigint;
  entries: Map<string, Demand>;
  /** Canonical entries text, for "same entries" comparisons. */
  key: string;
  receivedAt: number;
}

const CLOCK_MAX = (1n << 63n) - 1n;
const COUNTER_LIMIT = 1n << 32n;
const INT64_MAX = (1n << 63n) - 1n;

function entriesKey(entries: readonly [string, Demand][]): string {
  return JSON.stringify(entries.map(([e, d]) => [e, d.targetOutstanding.toString(), d.maximumUsefulGrant.toString()]));
}

/** Reads a demand-channel frame (node.md §4.3): envelope, entry count, schema, authorship. */
export function readBoardMessage(frame: Uint8Array, from: PeerId, maxEntries: number): WireRead<BoardMessage> {
  const env = readEnvelope(frame);
  if (!env.ok) return env;
  const o = env.message;
  if (Array.isArray(o.entries) && o.entries.length > maxEntries) return { ok: false, reason: "too-many-entries" };
  const r = readSchema((): BoardMessage => {
    literalField(o.kind, ["board"] as const);
    exactKeys(o, ["v", "kind", "replica", "clock", "entries"]);
    const entries: [string, Demand][] = [];
    for (const raw of arrayField(o.entries)) {
      const t = arrayField(raw);
      schemaRequire(t.length === 3);
      const edge = idField(t[0]);
      schemaRequire(entries.length === 0 || entries[entries.length - 1]![0] < edge);
      entries.push([edge, { targetOutstanding: amountField(t[1]), maximumUsefulGrant: amountField(t[2]) }]);
    }
    return { kind: "board", replica: idField(o.replica), clock: amountField(o.clock, CLOCK_MAX), entries };
  });
  if (!r.ok) return r;
  if (r.message.replica !== from) return { ok: false, reason: "not-author" };
  return r;
}

/** Canonical bytes of a board message. */
export function encodeBoardMessage(m: BoardMessage): Uint8Array {
  return canonicalBytes({
    v: 1, kind: "board", replica: m.replica, clock: m.clock,
    entries: m.entries.map(([e, d]) => [e, d.targetOutstanding, d.maximumUsefulGrant]),
  });
}

/**
 * The demand board (node.md §6): one slot per peer holding its current demand per edge, ordered by a
 * per-slot clock `epoch × 2^32 + counter`, written only by its author, and aged out by the receiver's
 * own clock after `demandTtlMs`. Advisory only: nothing that spends or checks holdings reads it.
 */
export class DemandBoard {
  readonly #channel: Seam;
  readonly #self: PeerId;
  readonly #epoch: bigint;
  readonly #timers: Timers;
  readonly #config: DemandBoardConfig;
  readonly #rejections: RejectionCounter;
  readonly #slots = new Map<PeerId, Slot>();
  #own = new Map<string, Demand>();
  #counter = 0n;
  #framesIn = 0;
  #framesOut = 0;
  readonly #off: () => void;

  constructor(o: { channel: Seam; epoch: number; timers: Timers; config: DemandBoardConfig; rejections: RejectionCounter }) {
    if (!Number.isInteger(o.epoch) || o.epoch < 0 || o.epoch >= 2 ** 31) throw new RangeError(`epoch must be in 0 … 2^31 − 1, got ${o.epoch}`);
    if (!Number.isInteger(o.config.demandTtlMs) || o.config.demandTtlMs <= 0) throw new RangeError("demandTtlMs must be a positive integer");
    if (!Number.isInteger(o.config.maxDemandEntries) || o.config.maxDemandEntries <= 0) throw new RangeError("maxDemandEntries must be a positive integer");
    this.#channel = o.channel;
    this.#self = o.channel.self;
    this.#epoch = BigInt(o.epoch);
    this.#timers = o.timers;
    this.#config = o.config;
    this.#rejections = o.rejections;
    this.#off = o.channel.onFrame((from, frame) => this.#receive(from, frame));
  }

  /**
   * Sets (or, with `DEMAND_NONE`, removes) this peer's demand for `edge`, bumps the slot clock and
   * broadcasts the whole slot. Best effort: nothing is retried; callers refresh within `demandTtlMs / 2`.
   * A slot that would break a limit throws {@link DemandLimitError} and changes nothing.
   */
  advertise(edge: string, demand: Demand): void {
    this.advertiseMany([[edge, demand]]);
  }

  /**
   * Extension beyond node.md §6: sets several entries at once (later ones win for a repeated edge) with one
   * clock bump and one broadcast. All or nothing: a bad entry throws `TypeError`/`RangeError`, a slot past
   * `maxDemandEntries` or `maxFrameBytes` throws {@link DemandLimitError}, and either way the slot, the
   * clock and the peers' view stay as they were.
   */
  advertiseMany(changes: Iterable<readonly [edge: string, demand: Demand]>): void {
    const next = new Map(this.#own);
    for (const [edge, demand] of changes) {
      if (typeof edge !== "string" || edge.length === 0) throw new TypeError("edge must be a non-empty string");
      if (edge.length > MAX_ID_LENGTH) throw new RangeError(`edge id longer than ${MAX_ID_LENGTH} code units`);
      for (const f of ["targetOutstanding", "maximumUsefulGrant"] as const) {
        const v = demand[f];
        if (typeof v !== "bigint") throw new TypeError(`${f} must be a bigint`);
        if (v < 0n || v > INT64_MAX) throw new RangeError(`${f} must be in 0 … 2^63 − 1, got ${v}`);
      }
      const none = demand.targetOutstanding === DEMAND_NONE.targetOutstanding && demand.maximumUsefulGrant === DEMAND_NONE.maximumUsefulGrant;
      if (none) next.delete(edge);
      else next.set(edge, { targetOutstanding: demand.targetOutstanding, maximumUsefulGrant: demand.maximumUsefulGrant });
    }
    const maxEntries = this.#config.maxDemandEntries;
    if (next.size > maxEntries) throw new DemandLimitError("maxDemandEntries", maxEntries, `a demand slot of ${next.size} entries exceeds maxDemandEntries (${maxEntries})`);
    if (this.#counter + 1n >= COUNTER_LIMIT) throw new RangeError("demand clock counter exhausted for this epoch; restart the node");
    const clock = this.#epoch * COUNTER_LIMIT + this.#counter + 1n;
    const entries = [...next.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const bytes = encodeBoardMessage({ kind: "board", replica: this.#self, clock, entries });
    const maxBytes = Math.min(this.#config.maxFrameBytes, this.#channel.maxFrameBytes);
    if (bytes.length > maxBytes) throw new DemandLimitError("maxFrameBytes", maxBytes, `a demand slot of ${bytes.length} bytes exceeds maxFrameBytes (${maxBytes})`);
    this.#own = next;
    this.#counter++;
    this.#slots.set(this.#self, { clock, entries: new Map(entries), key: entriesKey(entries), receivedAt: this.#timers.now() });
    this.#framesOut++;
    this.#channel.broadcast(bytes);
  }

  /** How many entries this peer's own slot holds now. */
  get ownEntries(): number {
    return this.#own.size;
  }

  /** Folded live demand for `edge`: the per-field maximum over live slots naming it, else `DEMAND_NONE`. */
  fold(edge: string): Demand {
    let t = 0n;
    let g = 0n;
    let named = false;
    const now = this.#timers.now();
    for (const s of this.#slots.values()) {
      if (now - s.receivedAt >= this.#config.demandTtlMs) continue;
      const d = s.entries.get(edge);
      if (d === undefined) continue;
      named = true;
      if (d.targetOutstanding > t) t = d.targetOutstanding;
      if (d.maximumUsefulGrant > g) g = d.maximumUsefulGrant;
    }
    return named ? { targetOutstanding: t, maximumUsefulGrant: g } : DEMAND_NONE;
  }

  /** Peers whose slot is live now (diagnostic). */
  liveAuthors(): PeerId[] {
    const now = this.#timers.now();
    return [...this.#slots].filter(([, s]) => now - s.receivedAt < this.#config.demandTtlMs).map(([p]) => p).sort();
  }

  counters(): { framesIn: number; framesOut: number; slots: number } {
    return { framesIn: this.#framesIn, framesOut: this.#framesOut, slots: this.#slots.size };
  }

  close(): void {
    this.#off();
  }

  #receive(from: PeerId, frame: Uint8Array): void {
    if (frame.length > Math.min(this.#config.maxFrameBytes, this.#channel.maxFrameBytes)) return this.#rejections.reject(from, "demand", "oversize");
    const r = readBoardMessage(frame, from, this.#config.maxDemandEntries);
    if (!r.ok) return this.#rejections.reject(from, "demand", r.reason);
    this.#framesIn++;
    const m = r.message;
    const now = this.#timers.now();
    const key = entriesKey(m.entries);
    const cur = this.#slots.get(m.replica);
    const install = (): void => {
      this.#slots.set(m.replica, { clock: m.clock, entries: new Map(m.entries), key, receivedAt: now });
    };
    if (cur === undefined || m.clock > cur.clock) return install();
    if (m.clock === cur.clock && key === cur.key) return; // an echo is not evidence of life
    // Lower clock, or same clock with other entries: only a restart whose store was lost looks like this.
    if (now - cur.receivedAt >= this.#config.demandTtlMs && key !== cur.key) install();
  }
}
